"""The sealed grade: a pytest session in which only the verifier's own code and settings run.

A submission is hostile. Pointed at it the ordinary way (`pytest checks --case ...` from a
checkout), pytest would read a `pytest.ini` found above the paths it is given, import any
`conftest.py` beside them, autoload every installed `pytest11` plugin and honour `PYTEST_*`
and `PYTHON*` variables. The sealed session closes each of those doors:

- the interpreter runs isolated (`-I -B`: no PYTHON* variables, no user site, no current folder
  on sys.path, no bytecode written), with every PYTEST*/PYTHON* variable removed from the
  environment it hands to pytest and to xdist's workers;
- the folder that holds the verifier's package (a checkout, site-packages, a task's verifier
  folder) is put first on sys.path, so its modules are the ones imported;
- `--config-file` names the verifier's own ini and `--rootdir` its own folder: no other ini;
- `--noconftest`: no conftest.py from anywhere (the plugin is loaded with `-p` instead);
- `--disable-plugin-autoload`: only the plugins named here (the grade's, json-report, xdist);
- every value is passed as `--option=value`, so pytest's early parse never mistakes the
  case, the submission or the output folder for a test path;
- `--assert=plain`: no assertion rewriting (the grade's failure lines are its asserts' own
  messages), so no module is recompiled for it.

`command()` is the argv a caller runs (usdgrade grade, the Harbor task's test.sh);
`main()` is what that argv executes inside the isolated interpreter.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import usd_repair_verifier

# The folder holding checks/, gates/, scoring/...: the grade's tests, pytest's rootdir.
VERIFIER_ROOT = Path(__file__).resolve().parent.parent
# The folder holding the usd_repair_verifier package: what goes on sys.path (the same folder as
# VERIFIER_ROOT in a checkout; its parent when installed or copied into a Harbor task).
IMPORT_ROOT = usd_repair_verifier.IMPORT_ROOT
GRADE_INI = Path(__file__).resolve().with_name("grade.ini")

# Run by `python -I -B -c BOOTSTRAP IMPORT_ROOT ARGS...`: the verifier's folder goes first on
# sys.path before anything of it is imported (an editable install elsewhere cannot shadow it).
BOOTSTRAP = "import sys; sys.path.insert(0, sys.argv[1]); from usd_repair_verifier.scoring.sealed import main; sys.exit(main(sys.argv[2:]))"

SCRUBBED_PREFIXES = ("PYTHON", "PYTEST")


def command(python: str | Path, case: Path | str, submission: Path | str, out: Path | str, *,
            verifier_root: Path | str = IMPORT_ROOT, time_limit: float | None = None, workers: int = 0,
            select: str | None = None, trajectory: Path | str | None = None) -> list[str]:
    argv = [str(python), "-I", "-B", "-c", BOOTSTRAP, str(verifier_root),
            f"--case={case}", f"--submission={submission}", f"--out={out}"]
    if time_limit:
        argv.append(f"--time-limit={time_limit:g}")
    if workers:
        argv.append(f"--workers={workers}")
    if select:
        argv.append(f"--select={select}")
    if trajectory:
        argv.append(f"--trajectory={trajectory}")
    return argv


def scrubbed_environment(environ: dict[str, str]) -> dict[str, str]:
    """The environment without any variable that steers Python or pytest."""
    return {k: v for k, v in environ.items() if not k.upper().startswith(SCRUBBED_PREFIXES)}


def pytest_argv(case: str, submission: str, out: str, *, time_limit: float | None = None, workers: int = 0,
                select: str | None = None, trajectory: str | None = None, closed_book: bool = False) -> list[str]:
    argv = [
        str(VERIFIER_ROOT / "checks"),
        f"--config-file={GRADE_INI}", f"--rootdir={VERIFIER_ROOT}", "--noconftest", "--disable-plugin-autoload",
        "-p", "usd_repair_verifier.scoring.plugin", "-p", "pytest_jsonreport.plugin", "-p", "no:cacheprovider",
        # The grade's asserts carry their own message (the check, its target, each failing component),
        # the first line of which is all a report keeps: pytest's rewriting of them would only recompile
        # the grading tests and the plugin in every grade (-B keeps no rewritten bytecode).
        "--assert=plain",
        f"--case={case}", f"--submission={submission}", f"--out={out}", "-q",
    ]
    if time_limit:
        argv.append(f"--time-limit={time_limit:g}")
    if workers:
        argv += ["-p", "xdist.plugin", f"--numprocesses={workers}"]
    if select:
        argv += ["-k", select]  # a core option: its value is never taken for a path
    if trajectory:
        argv.append(f"--trajectory={trajectory}")
    if closed_book:
        argv.append("--closed-book")
    return argv


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="usdgrade-sealed", description="the sealed grade (see scoring/sealed.py)")
    parser.add_argument("--case", required=True)
    parser.add_argument("--submission", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--time-limit", type=float, default=None)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--select", default=None)
    parser.add_argument("--trajectory", default=None)
    args = parser.parse_args(argv)
    # Absolute paths first: the session runs from the verifier's own folder.
    case, submission, out = (os.path.abspath(p) for p in (args.case, args.submission, args.out))
    trajectory = os.path.abspath(args.trajectory) if args.trajectory else None
    clean = scrubbed_environment(dict(os.environ))
    os.environ.clear()
    os.environ.update(clean)
    if str(IMPORT_ROOT) not in sys.path[:1]:
        sys.path.insert(0, str(IMPORT_ROOT))
    os.chdir(VERIFIER_ROOT)

    import pytest

    return int(pytest.main(pytest_argv(case, submission, out, time_limit=args.time_limit, workers=args.workers,
                                       select=args.select, trajectory=trajectory)))
