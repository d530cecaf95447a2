"""`usdgrade task`: a complete Harbor task folder (or a dataset of them) from frozen cases.

    TASK/
      task.toml             separate verifier environment, non-root agent, /app as the artifact
      instruction.md        what the agent is asked (no fault is named)
      environment/          the agent's image: Dockerfile and app/ (the broken input), nothing else
      tests/                the verifier's image (its build context): Dockerfile, requirements.txt
                            (exact pins), verifier/ (the grading code, laid out as installed:
                            verifier/usd_repair_verifier/scoring/...), case/ (profile, reference,
                            input) and test.sh
      solution/             the oracle: solve.sh restores reference/ into /app

The agent's container never holds the verifier, the case, the reference or the outputs: Harbor
builds the verifier's container from tests/ and copies only /app across. test.sh is rendered
from one template (`render_test_sh`); the shipped form has fixed paths, and the verifier's own
tests render copies with other paths instead of overriding anything at run time.
"""
from __future__ import annotations

from usd_repair_verifier.profiles.errors import ExitCode

import argparse
import re
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

import usd_repair_verifier
from usd_repair_verifier.closed_book.harbor import TRAJECTORY_FOLDER, collect_block

from usd_repair_verifier.profiles.case import CaseError, load_case
from usd_repair_verifier.profiles.schema import selection_text
from usd_repair_verifier.profiles.errors import Refused

TEMPLATES = Path(__file__).resolve().with_name("task_files")
VERIFIER_ROOT = Path(__file__).resolve().parent.parent
# The grading code copied into tests/verifier: the packages the authored-USD grade imports, under
# the namespace package as an install lays them out (tests/verifier is what test.sh puts on sys.path).
VERIFIER_PACKAGES = ("checks", "closed_book", "gates", "profiles", "scoring", "stage_snapshot")
NAMESPACE_INIT = Path(usd_repair_verifier.__file__).resolve()
VERIFIER_FILE_SUFFIXES = (".py", ".ini", ".json")
# python:3.11-slim, pinned by digest (both images; the verifier's wheels are for CPython 3.11).
BASE_IMAGE = "python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7"
VERIFIER_TIMEOUT_S = 600.0
TIME_LIMIT_S = 540.0
AUTHOR = "usd-repair-verifier"   # task.toml's metadata.author_name: what marks a folder as this command's   # below the verifier timeout: a slow grade still writes its own report
# Closed book: where task.toml's collect hook leaves the agent's trajectory for the grade. The
# grade reads it only when the case's profile says closed_book (tasks are closed book by default).
TRAJECTORY = f"{TRAJECTORY_FOLDER}/trajectory.json"
DETAILS_SCRIPT = "reward_details.py"   # grade.json -> reward-details.json, beside test.sh in tests/
# The verifier image's bytecode tree (tests/Dockerfile compiles it; test.sh only reads it).
PYCACHE = "/opt/usdgrade/pycache"
TASK_ORG = "usdgrade"
TASK_VERSION = "1.0.0"
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?")
TASK_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._-]*/[a-zA-Z0-9][a-zA-Z0-9._-]*")
# Harbor's allowlist entries: a hostname (or *.domain), an IP address or a CIDR range; no URL, port or path.
CLOSED_BOOK_RULE = (
    "\nClosed book: work only from what is in this container. Do not fetch anything from the\n"
    "network (no `curl`, `wget`, `git clone`, `pip download`, web search or fetch tools), and do\n"
    "not write URLs into files or commands: the grade reads every tool call of your run, and any\n"
    "web access or URL scores 0. The container's network is closed to all but the model's endpoint.\n")
# A case with variant selections (a SimReady asset: each engine's physics behind a variant set)
# tells the agent which selection is graded: the package's own selection does not matter.
VARIANT_RULE = (
    "\nVariant selections: the grade composes the package with {selections} (PRIM:SET=SELECTION),\n"
    "authored in the grader's own session layer, stronger than anything in `/app`. Repair the physics\n"
    "those selections bring in; changing a selection in the package changes nothing that is graded,\n"
    "and the package must keep that prim, variant set and variant.\n")
ALLOWED_HOST = re.compile(r"(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*"
                          r"|[0-9a-f:.]+(/\d{1,3})?")


class TaskError(Refused):
    """The task cannot be written (a broken case, an output folder that is not a task's)."""


def render(template: str, **values: str) -> str:
    text = (TEMPLATES / template).read_text()
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    left = re.findall(r"@[A-Z_]+@", text)
    if left:
        raise TaskError(f"{template}: placeholders left unfilled: {sorted(set(left))}")
    return text


def render_test_sh(*, verifier: str = "/opt/usdgrade/verifier", python: str = "/opt/usdgrade/venv/bin/python",
                   case: str = "/tests/case", submission: str = "/app", out: str = "/logs/verifier",
                   time_limit: float = TIME_LIMIT_S, end_processes: bool = True,
                   trajectory: str | None = TRAJECTORY, details: str = f"/tests/{DETAILS_SCRIPT}",
                   pycache: str = PYCACHE) -> str:
    """The shipped test.sh takes the defaults. Tests render copies with their own paths, and
    without the process sweep when they do not run in a PID namespace of their own."""
    sweep = "end_other_processes" if end_processes else "# (this copy does not end other processes)"
    extra = f"--trajectory={_shell_word(trajectory)}" if trajectory else ""
    return render("test.sh.in", VERIFIER=_shell_word(verifier), PYTHON=_shell_word(python), CASE=_shell_word(case),
                  SUBMISSION=_shell_word(submission), OUT=_shell_word(out), TIME_LIMIT=f"{time_limit:g}",
                  BOOTSTRAP=_bootstrap(), PYCACHE=_shell_word(pycache), END_PROCESSES=sweep, GRADE_EXTRA=extra, DETAILS=_shell_word(details),
                  INFRASTRUCTURE_ERROR=str(int(ExitCode.INFRASTRUCTURE_ERROR)))


def _bootstrap() -> str:
    """The sealed grade's bootstrap (scoring/sealed.py), as test.sh and the Dockerfile quote it."""
    from usd_repair_verifier.scoring.sealed import BOOTSTRAP

    if "'" in BOOTSTRAP:
        raise TaskError("the bootstrap cannot be single-quoted in test.sh")
    return BOOTSTRAP


def _shell_word(path: str) -> str:
    if any(c in path for c in " '\"$`\\\n"):
        raise TaskError(f"path {path!r} cannot be written into test.sh as one plain word")
    return path


def _pins() -> dict[str, str]:
    pins = {}
    for line in (TEMPLATES / "requirements.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name] = version
    return pins


def _copy_verifier(dest: Path) -> None:
    package_dest = dest / NAMESPACE_INIT.parent.name
    package_dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(NAMESPACE_INIT, package_dest / NAMESPACE_INIT.name)
    for package in VERIFIER_PACKAGES:
        for path in sorted((VERIFIER_ROOT / package).rglob("*")):
            if path.is_file() and path.suffix in VERIFIER_FILE_SUFFIXES and "__pycache__" not in path.parts:
                target = package_dest / path.relative_to(VERIFIER_ROOT)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)


def _write(path: Path, text: str, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def written_by_task(folder: Path) -> bool:
    """`usdgrade task` wrote this folder: its task.toml carries the author this command writes."""
    import tomllib

    try:
        config = tomllib.loads((Path(folder) / "task.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return config.get("metadata", {}).get("author_name") == AUTHOR


def _dataset_by_task(folder: Path) -> bool:
    return all(p.is_dir() and written_by_task(p) for p in Path(folder).iterdir())


def _prepare_out(out: Path, inputs: list, force: bool, owned=written_by_task) -> None:
    """OUT is new or empty, or (with --force) a folder this command wrote; never anything else
    (scoring/outputs.py)."""
    from usd_repair_verifier.scoring.outputs import claim_folder

    if claim_folder(out, "task", inputs, force=force, owned=owned):   # OutputRefused: nothing written
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class TaskOptions:
    """What a task author chooses beyond the case (the command's options)."""

    base_image: str = BASE_IMAGE
    closed_book: bool = True
    name: str | None = None            # org/name; default usdgrade/<case id>
    version: str = TASK_VERSION        # semantic version (harbor run --diff)
    allowed_hosts: tuple[str, ...] = ()   # closed book: what the agent's container may reach

    def validated(self) -> "TaskOptions":
        if self.name is not None and not TASK_NAME.fullmatch(self.name):
            raise TaskError(f"task name {self.name!r} is not ORG/NAME (letters, digits, '.', '_', '-')")
        if not SEMVER.fullmatch(self.version):
            raise TaskError(f"task version {self.version!r} is not a semantic version (MAJOR.MINOR.PATCH)")
        for host in self.allowed_hosts:
            if not ALLOWED_HOST.fullmatch(host):
                raise TaskError(f"allowed host {host!r} is not a hostname, *.domain, IP address or CIDR range")
        if self.allowed_hosts and not self.closed_book:
            raise TaskError("--allow-host limits a closed-book agent's network: an open-book task has no limit")
        return self


def _agent_network(options: TaskOptions) -> str:
    """Closed book: the agent's phase reaches only the hosts the author allows (Harbor adds the
    inference host of an agent that calls its model from inside the container)."""
    if not options.closed_book:
        return ""
    hosts = ", ".join(f'"{host}"' for host in options.allowed_hosts)
    return ("# Closed book: the agent's phase reaches only these hosts (docs/closed-book.md). Harbor adds the\n"
            "# model endpoint of an agent that calls its model from inside the container.\n"
            f'network_mode = "allowlist"\nallowed_hosts = [{hosts}]\n')


def _write_task_toml(out: Path, case, options: TaskOptions) -> None:
    artifacts = ["/app", TRAJECTORY_FOLDER] if options.closed_book else ["/app"]
    _write(out / "task.toml", render(
        "task.toml.in", TIME_LIMIT=f"{TIME_LIMIT_S:g}", VERIFIER_TIMEOUT=f"{VERIFIER_TIMEOUT_S}",
        ARTIFACTS="[" + ", ".join(f'"{a}"' for a in artifacts) + "]",
        TASK_NAME=options.name or f"{TASK_ORG}/{case.profile.id}", TASK_VERSION=options.version,
        CASE_ID=case.profile.id, CASE_VERSION=str(case.profile.version), AGENT_NETWORK=_agent_network(options),
        COLLECT="\n" + collect_block() if options.closed_book else ""))


def _write_tests(tests: Path, case, options: TaskOptions, instruction: str) -> None:
    _write(tests / "Dockerfile", render("verifier.Dockerfile", BASE_IMAGE=options.base_image, BOOTSTRAP=_bootstrap()))
    shutil.copyfile(TEMPLATES / "requirements.txt", tests / "requirements.txt")
    _write(tests / "test.sh", render_test_sh(trajectory=TRAJECTORY if options.closed_book else None), executable=True)
    shutil.copyfile(TEMPLATES / DETAILS_SCRIPT, tests / DETAILS_SCRIPT)
    (tests / "case").mkdir(parents=True)
    if options.closed_book == case.profile.closed_book:
        shutil.copyfile(case.paths.profile, tests / "case" / "profile.json")
    else:
        profile = case.profile.model_copy(update={
            "closed_book": options.closed_book,
            "allowed_urls": (*case.profile.allowed_urls, instruction) if options.closed_book else ()})
        _write(tests / "case" / "profile.json", profile.dumps())
    shutil.copytree(case.paths.reference, tests / "case" / "reference")
    shutil.copytree(case.paths.input, tests / "case" / "input")
    _copy_verifier(tests / "verifier")


def write_task(case_dir: Path, out: Path, options: TaskOptions = TaskOptions(),
               force: bool = False) -> Path:
    """One task folder. Closed book (the default): the task's profile says so, URLs of the
    instruction are allowed, the trajectory travels to the verifier as an artifact, and the
    agent's phase has only the network the author allows."""
    options = options.validated()
    try:
        case = load_case(case_dir)
    except CaseError as error:
        raise TaskError(f"{case_dir}: {error}") from error
    _prepare_out(out, [("case", case_dir)], force)
    pins = _pins()
    input_files = sorted(p.relative_to(case.paths.input).as_posix() for p in case.paths.input.rglob("*") if p.is_file())
    selections = case.profile.variant_selections
    instruction = render("instruction.md.in", ROOT_LAYER=case.profile.input.root_layer,
                         FILES=", ".join(f"`{f}`" for f in input_files),
                         VARIANTS=VARIANT_RULE.format(selections=f"`{selection_text(selections)}`") if selections else "",
                         CLOSED_BOOK=CLOSED_BOOK_RULE if options.closed_book else "")
    _write_task_toml(out, case, options)
    _write(out / "instruction.md", instruction)
    _write(out / "environment" / "Dockerfile", render("agent.Dockerfile", BASE_IMAGE=options.base_image,
                                                      USD_CORE=pins["usd-core"], NUMPY=pins["numpy"]))
    shutil.copytree(case.paths.input, out / "environment" / "app")
    _write_tests(out / "tests", case, options, instruction)
    _write(out / "solution" / "solve.sh", (TEMPLATES / "solve.sh").read_text(), executable=True)
    shutil.copytree(case.paths.reference, out / "solution" / "reference")
    return out


def write_dataset(cases_dir: Path, out: Path, options: TaskOptions = TaskOptions(),
                  force: bool = False) -> list[Path]:
    """One task per case folder (a folder holding profile.json), named after it."""
    cases = sorted(p.parent for p in cases_dir.glob("*/profile.json"))
    if not cases:
        raise TaskError(f"{cases_dir} holds no case (no */profile.json)")
    if options.name is not None:
        raise TaskError("--task-name names one task: a dataset's tasks are named after their cases")
    _prepare_out(out, [("cases folder", cases_dir)], force, owned=_dataset_by_task)
    return [write_task(case, out / case.name, options, force) for case in cases]


def task_command(args: argparse.Namespace) -> int:
    from usd_repair_verifier.scoring.outputs import OutputRefused

    if args.check:
        from .task_check import check_command

        return check_command(args.check)
    if not args.out:
        print("task needs --out (or --check TASK)", file=sys.stderr)
        return ExitCode.USAGE
    options = TaskOptions(base_image=args.base_image, closed_book=not args.open_book, name=args.task_name,
                          version=args.task_version, allowed_hosts=tuple(args.allow_host or ()))
    try:
        if args.cases:
            written = write_dataset(Path(args.cases), Path(args.out), options, args.force)
        elif args.case:
            written = [write_task(Path(args.case), Path(args.out), options, args.force)]
        else:
            print("task needs a CASE or --cases DIR", file=sys.stderr)
            return ExitCode.USAGE
    except TaskError as error:
        print(f"cannot write the task: {error}", file=sys.stderr)
        return ExitCode.REFUSED
    except OutputRefused as error:
        print(str(error), file=sys.stderr)
        return ExitCode.USAGE
    for path in written:
        print(f"wrote {path}")
    return ExitCode.DONE


def add_parser(sub) -> None:
    p = sub.add_parser("task", help="write a Harbor task folder (or a dataset) from frozen cases")
    p.add_argument("case", nargs="?", help="a frozen case folder")
    p.add_argument("--cases", help="a folder of cases: writes one task per case under --out")
    p.add_argument("--out", metavar="TASK_DIR",
                   help="the task folder to write (with --cases: the dataset folder, one task per case)")
    p.add_argument("--force", action="store_true",
                   help="replace an earlier output of usdgrade task (never a folder it did not write)")
    p.add_argument("--check", metavar="TASK", help="run TASK's test.sh (no Docker) on its oracle solution and its "
                   "untouched input and say in one line whether the task is sound")
    p.add_argument("--base-image", default=BASE_IMAGE,
                   help="both images' base, pinned by digest (default: python:3.11-slim, pinned)")
    p.add_argument("--open-book", action="store_true",
                   help="do not grade the agent's trajectory (tasks are closed book by default: docs/closed-book.md)")
    p.add_argument("--task-name", help=f"the task's ORG/NAME in Harbor (default {TASK_ORG}/<case id>)")
    p.add_argument("--task-version", default=TASK_VERSION,
                   help="its semantic version: patch reuses old trials, minor re-grades them, major reruns them")
    p.add_argument("--allow-host", action="append", metavar="HOST",
                   help="closed book: a host the agent's container may reach (repeat; default none)")
    p.set_defaults(run=task_command)
