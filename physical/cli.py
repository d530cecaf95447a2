"""`usdgrade physical`: the separate physical grade (runtime tests in Newton)."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from usd_repair_verifier.profiles.errors import ExitCode



def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "physical", help="physical grade: runtime tests of the submission in Newton (MuJoCo solver, CPU)",
        description="Writes OUT/physical.json. Never changes authored_usd. Runs the runtime tests "
                    "(physical/runtime_tests) in their own pytest session.")
    p.add_argument("--setup", action="store_true",
                   help="install the engine's pinned packages into this interpreter (if missing) and exit")
    p.add_argument("--case", help="the case: its reference is tested with the same settings")
    p.add_argument("--submission", metavar="DIR", help="the submission to test (it must pass the validity gate)")
    p.add_argument("--out", help="folder for physical.json (usually the grade's OUT)")
    p.add_argument("--python", default=None,
                   help="the runtime interpreter (default: this one); e.g. a separate venv's python")
    p.set_defaults(run=run)
    return p


def run(args) -> int:
    from .grade import PHYSICAL_FILE, run_physical

    if args.setup:
        from .provision import ensure_engine

        try:
            missing = ensure_engine()
        except RuntimeError as error:
            print(f"usdgrade physical --setup: {error}", file=sys.stderr)
            return ExitCode.REFUSED
        print("installed the engine: " + ", ".join(missing) if missing else "the engine is already installed")
        return ExitCode.DONE
    if not (args.case and args.submission and args.out):
        print("usdgrade physical needs --case, --submission and --out (or --setup)", file=sys.stderr)
        return ExitCode.USAGE
    missing = [f"{option} {value}" for option, value in (("--case", args.case), ("--submission", args.submission))
               if not Path(value).is_dir()]
    if missing:   # a typo is not a grade: nothing is written
        print(f"usdgrade physical: {missing[0]} is not a folder", file=sys.stderr)
        return ExitCode.USAGE
    try:
        record = run_physical(Path(args.case), Path(args.submission), Path(args.out),
                              python=shlex.split(args.python) if args.python else None)
    except ValueError as error:
        print(f"usdgrade physical: {error}", file=sys.stderr)
        return ExitCode.USAGE
    s = record["summary"]
    print(f"physical {record['status']}   passed {s['passed']}  failed {s['failed']}  null {s['null']}"
          + (f"   ({record['reason']})" if record["reason"] else ""))
    for name in s["failed_properties"]:
        print(f"  failed: {name}")
    print(f"wrote {Path(args.out) / PHYSICAL_FILE}")
    return ExitCode.INFRASTRUCTURE_ERROR if record["status"] == "infrastructure_error" else ExitCode.DONE
