"""`usdgrade`: grade, inject, freeze, explain.

    usdgrade grade DIR --case CASE --out OUT [-n N] [-k EXPR] [--trajectory T.json]
    usdgrade inject --reference REF --fault KIND[:TARGET] ... --seed S --out DIR
    usdgrade inject --list
    usdgrade inject --targets REF [--fault KIND ...]
    usdgrade freeze --reference REF --input IN --out CASE [--faults F.json] [--id ID] [--closed-book]
                    [--preserve-namespace NS ...]
    usdgrade explain OUT/grade.json [--html [--out PAGE_DIR] --case CASE --submission DIR]
    usdgrade visual --case CASE --submission DIR --grade OUT/grade.json --out OUT [--authorize] ...
    usdgrade physical --case CASE --submission DIR --out OUT [--python PY]
    usdgrade doctor [--case CASE --submission DIR --expect R]
    usdgrade records ingest JOB_DIR... [--db URL] | report [--db URL] --out DIR | show EPISODE
    usdgrade task CASE --out TASK_DIR | usdgrade task --cases DIR --out DATASET
    usdgrade regrade JOB_DIR... --cases CASES [--engine local|ray] [-j N] ...

`grade` runs the pytest session of `pytest checks ...` sealed (scoring/sealed.py) in an
isolated child interpreter: same outputs, same exit codes.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from usd_repair_verifier import IMPORT_ROOT

from usd_repair_verifier.authoring.cli import freeze_command, inject_command


def grade(args: argparse.Namespace) -> int:
    import subprocess

    from usd_repair_verifier.scoring.sealed import command

    # The sealed session (scoring/sealed.py), in an isolated child interpreter: nothing in the
    # submission, the current folder or the environment takes part in the grade.
    argv = command(sys.executable, args.case, args.submission, args.out, workers=args.n, select=args.k,
                   trajectory=args.trajectory)
    return subprocess.run(argv).returncode


def explain_command(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from usd_repair_verifier.scoring import grade_file
    from usd_repair_verifier.scoring.readable import explain_lines

    try:
        text = Path(args.grade).read_bytes()
    except OSError as error:
        print(f"cannot read {args.grade}: {error}", file=sys.stderr)
        return 2
    try:
        grade = grade_file.read(text)
    except ValidationError as error:
        first = error.errors()[0] if error.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ())) or "the file"
        print(f"cannot explain {args.grade}: not a usdgrade grade.json ({error.error_count()} problem(s); "
              f"first: {where}: {first.get('msg', error)})", file=sys.stderr)
        return 2
    if args.html:
        from usd_repair_verifier.commands.explain_html import write_page

        page = write_page(grade, Path(args.out) if args.out else Path(args.grade).parent / "explain",
                          Path(args.case) if args.case else None, Path(args.submission) if args.submission else None)
        print(f"wrote {page}")
        return 0
    print("\n".join(explain_lines(grade)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="usdgrade", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("grade", help="grade a submission (the sealed pytest session)")
    p.add_argument("submission")
    p.add_argument("--case", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("-n", type=int, default=0, help="pytest-xdist workers")
    p.add_argument("-k", default=None, help="select checks (a partial run: no reward)")
    p.add_argument("--trajectory", default=None,
                   help="the agent's ATIF trajectory.json, for a closed-book case (see docs/closed-book.md)")
    p.set_defaults(run=grade)

    p = sub.add_parser("inject", help="break a reference package for case authoring")
    p.add_argument("--reference")
    p.add_argument("--fault", action="append", default=[], metavar="KIND[:TARGET]")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out")
    p.add_argument("--list", action="store_true", help="print the fault kinds")
    p.add_argument("--targets", metavar="REF", help="list where each fault kind (or each --fault KIND) can go in REF")
    p.set_defaults(run=inject_command)

    p = sub.add_parser("freeze", help="freeze a case from a reference and a broken input")
    p.add_argument("--reference", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--faults", help="JSON list of {id, kind, target}; found by comparison when absent")
    p.add_argument("--id", help="case id (default: the out folder's name)")
    p.add_argument("--closed-book", action="store_true",
                   help="grade against the agent's trajectory too: web access zeroes the reward")
    p.add_argument("--preserve-namespace", action="append", metavar="NS",
                   help="an attribute namespace (e.g. myengine) preserved like physics:, physx*, mjc:, newton: "
                        "on matched elements (repeatable; profile field preserved_namespaces)")
    p.set_defaults(run=freeze_command)

    p = sub.add_parser("explain", help="a readable summary of a grade.json")
    p.add_argument("grade")
    p.add_argument("--html", action="store_true", help="write an offline page with bars and highlighted pictures")
    p.add_argument("--out", help="the page's folder (default: explain/ beside grade.json)")
    p.add_argument("--case", help="the graded case (for the pictures)")
    p.add_argument("--submission", help="the graded submission (for the pictures)")
    p.set_defaults(run=explain_command)

    from usd_repair_verifier.visual.cli import add_parser as add_visual_parser  # the visual grade: separate from the reward

    add_visual_parser(sub)

    from usd_repair_verifier.physical.cli import add_parser as add_physical_parser  # the physical grade: separate from the reward

    add_physical_parser(sub)

    from usd_repair_verifier.commands.doctor import add_parser as add_doctor_parser  # checks this installation

    add_doctor_parser(sub)
    from usd_repair_verifier.records.cli import add_parser as add_records_parser  # episode records and the results report

    add_records_parser(sub)
    from usd_repair_verifier.authoring.task import add_parser as add_task_parser  # Harbor task folders from frozen cases

    add_task_parser(sub)
    from usd_repair_verifier.regrade.command import add_parser as add_regrade_parser  # re-grading stored submissions at scale

    add_regrade_parser(sub)

    args = parser.parse_args(argv)
    sys.path.insert(0, str(IMPORT_ROOT))
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
