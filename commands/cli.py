"""usdgrade: grade OpenUSD asset repairs, author cases, and run benchmarks.

commands:
  grade      grade a submission against a case: OUT/reward.json and OUT/grade.json
  explain    the reward's arithmetic, gates and failing checks of a grade.json (--html: a page)
  inject     break an intact package with faults (--list kinds, --targets where they can go)
  freeze     freeze a case from a reference, a broken input and its faults
  task       write a Harbor task folder (or a dataset) from frozen cases
  visual     the separate visual grade: trusted renders judged against a rubric
  physical   the separate physical grade: runtime tests in Newton
  records    episode records: ingest Harbor jobs, write the results report, show one episode
  regrade    re-grade stored submissions with this verifier (locally or on Ray)
  doctor     check that this installation can grade

Exit codes: {exit_codes}.
No command replaces a folder it did not write.
`usdgrade COMMAND --help` for each; docs/cli.md lists every option.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from usd_repair_verifier.profiles.errors import ExitCode, VerifierError, exit_code_rows

# The commands whose parsers need no other module: `usdgrade grade ...` builds only these, so the
# parent of the sealed grade imports none of the apps (task, visual, physical, records, regrade,
# doctor) before it starts the child (about 0.25 s of every `usdgrade grade`).
CORE_COMMANDS = ("grade", "explain", "inject", "freeze")
FORCE_HELP = "replace an earlier output of this same command (never a folder another command or a person wrote)"


def grade(args: argparse.Namespace) -> int:
    import subprocess

    from usd_repair_verifier.scoring.sealed import command

    if args.n < 0:
        print(f"usdgrade grade: -n {args.n}: the number of workers is 0 (serial) or more", file=sys.stderr)
        return ExitCode.USAGE
    mistake = _grade_path_mistake(args)
    if mistake:   # a path that is not there: a mistake in the command line, nothing written
        print(f"usdgrade grade: {mistake}", file=sys.stderr)
        return ExitCode.USAGE
    # The sealed session (scoring/sealed.py), in an isolated child interpreter: nothing in the
    # submission, the current folder or the environment takes part in the grade.
    argv = command(sys.executable, args.case, args.submission, args.out, workers=args.n, select=args.k,
                   trajectory=args.trajectory)
    return subprocess.run(argv).returncode


def _grade_path_mistake(args: argparse.Namespace) -> str | None:
    """Why a path `usdgrade grade` was given is not there, or None. Only the command's own check:
    `pytest checks` (Harbor's contract) grades a missing submission as invalid and a broken case
    as an infrastructure error."""
    import os

    for label, path in (("submission", args.submission), ("case", args.case)):
        if not os.path.exists(path):
            return f"the {label} {path} is not there: nothing was graded or written"
        if not os.path.isdir(path):
            return f"the {label} {path} is not a folder: nothing was graded or written"
    if args.trajectory and not os.path.lexists(args.trajectory):
        return f"the trajectory {args.trajectory} is not there: nothing was graded or written"
    return None


def inject_command(args: argparse.Namespace) -> int:
    from usd_repair_verifier.authoring.cli import inject_command as run

    return run(args)


def freeze_command(args: argparse.Namespace) -> int:
    from usd_repair_verifier.authoring.cli import freeze_command as run

    return run(args)


def _record_kind(value: dict) -> str | None:
    """What a JSON record is, when it is one of the verifier's separate reports."""
    if "record_version" not in value or "authored_usd" in value:
        return None
    if value.keys() & {"tests", "thresholds", "engine"}:
        return "physical"
    if value.keys() & {"rubric", "verdicts", "renders", "judge"}:
        return "visual"
    return None


def _separate_record(path: str, text: bytes) -> str | None:
    """One line when the file is a visual.json or physical.json: explain reads grade.json."""
    try:
        value = json.loads(text)
    except ValueError:
        return None                      # grade.json's own reader says what is wrong with it
    kind = _record_kind(value) if isinstance(value, dict) else None
    if kind is None:
        return None
    summary = value.get("summary") if kind == "physical" else {"score": value.get("score")}
    return (f"cannot explain {path}: it is a {kind}.json, the separate {kind} grade's record (status "
            f"{value.get('status')}, {summary}; reason: {value.get('reason') or '-'}): explain reads the "
            f"authored-USD grade.json beside it; docs/{kind}-json.md describes this record")


def explain_command(args: argparse.Namespace) -> int:
    from usd_repair_verifier.profiles.errors import NotAGrade
    from usd_repair_verifier.scoring import grade_file
    from usd_repair_verifier.scoring.readable import explain_lines

    try:
        text = Path(args.grade).read_bytes()
    except OSError as error:
        print(f"cannot read {args.grade}: {error.strerror or error}", file=sys.stderr)
        return ExitCode.USAGE
    why_not = _separate_record(args.grade, text)
    if why_not:
        print(why_not, file=sys.stderr)
        return ExitCode.USAGE
    try:
        grade = grade_file.read(text, args.grade)
    except NotAGrade as error:
        print(f"cannot explain {args.grade}: {error}", file=sys.stderr)
        return error.exit_code
    if args.html:
        return explain_page(args, grade)
    print("\n".join(explain_lines(grade)))
    return ExitCode.DONE


def explain_page(args: argparse.Namespace, grade) -> int:
    """The page goes to its own folder (default: explain/ beside grade.json), built aside and
    moved into place: an earlier page is replaced only with --force, anything else never."""
    from usd_repair_verifier.commands.explain_html import write_page
    from usd_repair_verifier.scoring.outputs import OutputRefused, claim_folder, replace_folder, staging_folder

    out = Path(args.out) if args.out else Path(args.grade).parent / "explain"
    inputs = [("grade", args.grade), ("case", args.case), ("submission", args.submission)]
    try:
        claim_folder(out, "explain", inputs, force=args.force)
    except OutputRefused as error:
        print(str(error), file=sys.stderr)
        return ExitCode.USAGE
    staging = staging_folder(out)
    try:
        write_page(grade, staging, Path(args.case) if args.case else None,
                   Path(args.submission) if args.submission else None)
        replace_folder(staging, out, "explain")
    finally:
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
    print(f"wrote {out / 'index.html'}")
    return ExitCode.DONE


def version_line() -> str:
    from usd_repair_verifier.profiles.schema import SCORING_VERSION
    from usd_repair_verifier.scoring import VERIFIER_VERSION

    return f"usdgrade {VERIFIER_VERSION} (usd-repair-verifier; scoring version {SCORING_VERSION})"


def _add_core_parsers(sub) -> None:
    p = sub.add_parser("grade", help="grade a submission against a case (the sealed pytest session)",
                       description="Grade DIR against CASE: OUT/reward.json and OUT/grade.json, exactly as "
                                   "`pytest checks --case CASE --submission DIR --out OUT`, sealed, in a child interpreter.")
    p.add_argument("submission", metavar="DIR", help="the submitted package folder")
    p.add_argument("--case", required=True, help="the frozen case folder (profile.json, reference/, input/)")
    p.add_argument("--out", required=True,
                   help="folder for reward.json and grade.json (only those two are replaced; not inside the "
                        "submission, the case or the verifier)")
    p.add_argument("-n", type=int, default=0, metavar="N", help="pytest-xdist workers (same report as serial)")
    p.add_argument("-k", default=None, metavar="EXPR", help="select checks (a partial run: no reward)")
    p.add_argument("--trajectory", default=None, metavar="T.json",
                   help="the agent's ATIF trajectory.json, for a closed-book case (see docs/closed-book.md)")
    p.set_defaults(run=grade)

    p = sub.add_parser("explain", help="a readable account of a grade.json (--html: an offline page)",
                       description="Print the reward's arithmetic, every gate and the failing checks of a grade.json.")
    p.add_argument("grade", metavar="GRADE_JSON", help="the grade.json to explain (not visual.json or physical.json)")
    p.add_argument("--html", action="store_true", help="write an offline page with bars and highlighted pictures")
    p.add_argument("--out", metavar="PAGE_DIR", help="the page's folder (default: explain/ beside grade.json)")
    p.add_argument("--case", help="the graded case (for the pictures)")
    p.add_argument("--submission", metavar="DIR", help="the graded submission (for the pictures)")
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.set_defaults(run=explain_command)

    p = sub.add_parser("inject", help="break an intact package with faults, for case authoring",
                       description="Copy REF to DIR with the faults injected where they are the effective opinion; "
                                   "DIR.inject.json (beside DIR) records what was done.")
    p.add_argument("--reference", metavar="REF", help="the intact package to break (never changed)")
    p.add_argument("--fault", action="append", default=[], metavar="KIND[:TARGET]",
                   help="a fault to inject (repeatable); with --targets, a kind to list")
    p.add_argument("--seed", type=int, default=0, help="seeds every choice an injector makes (same seed, same bytes)")
    p.add_argument("--out", metavar="DIR", help="the broken package to write (a new folder)")
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.add_argument("--list", action="store_true", help="print the fault kinds")
    p.add_argument("--targets", metavar="REF", help="list where each fault kind (or each --fault KIND) can go in REF")
    p.add_argument("--variant", action="append", metavar="PRIM:SET=SELECTION",
                   help="compose REF with this variant selection first (repeatable; e.g. /Gripper:PhysX=Enabled "
                        "for a SimReady asset: the fault goes into the layer the selected variant brings in)")
    p.set_defaults(run=inject_command)

    p = sub.add_parser("freeze", help="freeze a case from a reference and a broken input",
                       description="Write CASE (profile.json, reference/, input/), refusing unless the reference "
                                   "scores 1.0 with objective success and the input scores 0.")
    p.add_argument("--reference", required=True, metavar="REF", help="the intact package")
    p.add_argument("--input", required=True, metavar="IN", help="the broken package the agent will be given")
    p.add_argument("--out", required=True, metavar="CASE", help="the case folder to write (a new folder)")
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.add_argument("--faults", metavar="F.json",
                   help="the faults: a JSON list of {id, kind, target, note}, or the IN.inject.json inject wrote "
                        "(default: IN.inject.json when it describes IN, else found by comparison)")
    p.add_argument("--id", help="case id (default: the out folder's name)")
    p.add_argument("--closed-book", action="store_true",
                   help="grade against the agent's trajectory too: web access zeroes the reward")
    p.add_argument("--preserve-namespace", action="append", metavar="NS",
                   help="an attribute namespace (e.g. myengine) preserved like physics:, physx*, mjc:, newton: "
                        "on matched elements (repeatable; profile field preserved_namespaces)")
    p.add_argument("--variant", action="append", metavar="PRIM:SET=SELECTION",
                   help="grade every stage with this variant selection in its session layer (repeatable; e.g. "
                        "/Gripper:PhysX=Enabled for a SimReady asset; profile field variant_selections)")
    p.set_defaults(run=freeze_command)


class _VersionAction(argparse.Action):
    """--version, its line made only when asked for (it imports the profile schema)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_line())   # to standard output, as argparse's own version action prints it
        parser.exit()


def build_parser(core_only: bool = False) -> argparse.ArgumentParser:
    """The whole `usdgrade` command line (tools/cli_reference.py writes docs/cli.md from it);
    `core_only`: only CORE_COMMANDS, for a command line that runs one of them."""
    parser = argparse.ArgumentParser(prog="usdgrade", description=description(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_core_parsers(sub)
    if core_only:
        return parser

    from usd_repair_verifier.authoring.task import add_parser as add_task_parser  # Harbor task folders from frozen cases

    add_task_parser(sub)
    from usd_repair_verifier.visual.cli import add_parser as add_visual_parser  # the visual grade: separate from the reward

    add_visual_parser(sub)
    from usd_repair_verifier.physical.cli import add_parser as add_physical_parser  # the physical grade: separate from the reward

    add_physical_parser(sub)
    from usd_repair_verifier.records.cli import add_parser as add_records_parser  # episode records and the results report

    add_records_parser(sub)
    from usd_repair_verifier.regrade.command import add_parser as add_regrade_parser  # re-grading stored submissions at scale

    add_regrade_parser(sub)
    from usd_repair_verifier.commands.doctor import add_parser as add_doctor_parser  # checks this installation

    add_doctor_parser(sub)
    return parser


def description() -> str:
    """The module's text with the exit codes written from profiles/errors.py's ExitCode."""
    import textwrap

    codes = "; ".join(f"{code} {meaning.split(' (')[0].split(';')[0]}" for code, _, meaning in exit_code_rows())
    paragraph = textwrap.fill(f"Exit codes: {codes}.", width=96)
    return __doc__.replace("Exit codes: {exit_codes}.", paragraph)


def _command_word(argv: list[str]) -> str | None:
    """The subcommand a command line names: its first word that is not an option."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(core_only=_command_word(argv) in CORE_COMMANDS).parse_args(argv)
    try:
        return args.run(args)
    except VerifierError as error:   # every command's named reasons to stop: one line, its exit code
        print(f"usdgrade {_command_word(argv)}: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("usdgrade: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:  # `usdgrade ... | head`: the reader left; say nothing more
        import os

        sys.stdout = open(os.devnull, "w")
        return ExitCode.DONE


if __name__ == "__main__":
    sys.exit(main())
