"""`usdgrade`: grade, inject, freeze, explain.

    usdgrade grade DIR --case CASE --out OUT [-n N] [-k EXPR]
    usdgrade inject --reference REF --fault KIND[:TARGET] ... --seed S --out DIR
    usdgrade inject --list
    usdgrade freeze --reference REF --input IN --out CASE [--faults F.json] [--id ID]
    usdgrade explain OUT/grade.json
    usdgrade visual --case CASE --submission DIR --grade OUT/grade.json --out OUT [--authorize] ...
    usdgrade physical --case CASE --submission DIR --out OUT [--python PY]
    usdgrade regrade JOB_DIR... --cases CASES [--engine local|ray] [-j N] ...

`grade` runs the very pytest session of `pytest checks ...` in this process:
same outputs, same exit codes.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def grade(args: argparse.Namespace) -> int:
    import pytest

    argv = [str(REPO_ROOT / "checks"), "--rootdir", str(REPO_ROOT), "-p", "no:cacheprovider",
            "--case", args.case, "--submission", args.submission, "--out", args.out, "-q"]
    if args.n:
        argv += ["-n", str(args.n)]
    if args.k:
        argv += ["-k", args.k]
    return int(pytest.main(argv))


def inject_command(args: argparse.Namespace) -> int:
    from profiles.inject import INJECTORS, InjectionError, inject
    from profiles.vocabulary import FAULT_KINDS

    if args.list:
        for name, kind in sorted(FAULT_KINDS.items()):
            marker = "" if name in INJECTORS else "  (no injector)"
            print(f"{name:<28} {kind.target:<9} {kind.summary}{marker}")
        return 0
    if not (args.reference and args.out and args.fault):
        print("inject needs --reference, --out and at least one --fault (or --list)", file=sys.stderr)
        return 2
    faults = []
    for spec in args.fault:
        kind, _, target = spec.partition(":")
        if kind not in FAULT_KINDS:
            print(f"unknown fault kind {kind!r}; see usdgrade inject --list", file=sys.stderr)
            return 2
        if not target and FAULT_KINDS[kind].target != "asset":
            print(f"fault {kind} needs a target: {kind}:/Prim/Path", file=sys.stderr)
            return 2
        faults.append((kind, target or "*"))
    try:
        done = inject(Path(args.reference), Path(args.out), faults, args.seed)
    except InjectionError as error:
        print(f"cannot inject: {error}", file=sys.stderr)
        return 1
    for item in done:
        print(f"{item.kind} {item.target}: {item.note}")
    print(f"wrote {args.out}")
    return 0


def freeze_command(args: argparse.Namespace) -> int:
    from profiles.freeze import FreezeRefused, detect_faults, freeze
    from profiles.schema import Fault

    reference, input_ = Path(args.reference), Path(args.input)
    if args.faults:
        raw = json.loads(Path(args.faults).read_text())
        faults = [Fault(f.get("id", f"f{i + 1}"), f["kind"], f.get("target", "*"), f.get("note", ""))
                  for i, f in enumerate(raw)]
    else:
        faults = detect_faults(reference, input_)
        if not faults:
            print("refusing to freeze: the input does not differ from the reference in anything measured",
                  file=sys.stderr)
            return 1
        for f in faults:
            print(f"found {f.id}: {f.kind} on {f.target} ({f.note})")
    try:
        profile = freeze(args.id or Path(args.out).name, reference, input_, Path(args.out), faults)
    except FreezeRefused as error:
        print(str(error), file=sys.stderr)
        return 1
    print(f"froze {args.out}: {len(profile.faults)} fault(s), {len(profile.checks)} check(s)")
    return 0


def explain_command(args: argparse.Namespace) -> int:
    from .report import explain_lines

    try:
        grade_json = json.loads(Path(args.grade).read_text())
    except (OSError, ValueError) as error:
        print(f"cannot read {args.grade}: {error}", file=sys.stderr)
        return 2
    print("\n".join(explain_lines(grade_json)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="usdgrade", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("grade", help="grade a submission (the pytest session, in process)")
    p.add_argument("submission")
    p.add_argument("--case", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("-n", type=int, default=0, help="pytest-xdist workers")
    p.add_argument("-k", default=None, help="select checks (a partial run: no reward)")
    p.set_defaults(run=grade)

    p = sub.add_parser("inject", help="break a reference package for case authoring")
    p.add_argument("--reference")
    p.add_argument("--fault", action="append", default=[], metavar="KIND[:TARGET]")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out")
    p.add_argument("--list", action="store_true", help="print the fault kinds")
    p.set_defaults(run=inject_command)

    p = sub.add_parser("freeze", help="freeze a case from a reference and a broken input")
    p.add_argument("--reference", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--faults", help="JSON list of {id, kind, target}; found by comparison when absent")
    p.add_argument("--id", help="case id (default: the out folder's name)")
    p.set_defaults(run=freeze_command)

    p = sub.add_parser("explain", help="a readable summary of a grade.json")
    p.add_argument("grade")
    p.set_defaults(run=explain_command)

    from visual.cli import add_parser as add_visual_parser  # the visual grade: separate from the reward

    add_visual_parser(sub)

    from physical.cli import add_parser as add_physical_parser  # the physical grade: separate from the reward

    add_physical_parser(sub)

    from .regrade import add_parser as add_regrade_parser  # re-grading stored submissions at scale

    add_regrade_parser(sub)

    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO_ROOT))
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
