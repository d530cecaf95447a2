"""Run the physical grade on every case's input (and optionally its reference) and tabulate.

    python -m usd_repair_verifier.physical.sweep fixtures/cases OUTDIR [--reference] [-j 2]

Prints, per case, its fault kinds and which runtime properties failed (with figures): the table
of which runtime tests detect which fault kinds. With -j 1 and this interpreter, the sessions fork
from one runtime server (physical/runtime_server.py: the engine imported once); a server runs one
session at a time, so with -j N each grade starts its own interpreter.
"""
from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from usd_repair_verifier.scoring.progress import progress

from . import runtime_server
from .grade import run_physical, session_env
from usd_repair_verifier.profiles.errors import ExitCode


def _one(case: Path, out_root: Path, role: str, python) -> dict:
    out = out_root / f"{case.name}-{role}"
    record = run_physical(case, case / role, out, python=python)
    profile = json.loads((case / "profile.json").read_text())
    return {"case": case.name, "role": role, "faults": [f["kind"] for f in profile["faults"]], "record": record}


def figure(p: dict) -> str:
    v = p["value"]
    if isinstance(v, float):
        v = f"{v:.3g}"
    t = p["threshold"]
    if isinstance(t, float):
        t = f"{t:.3g}"
    return f"{p['test']}.{p['name']}={v} (>{t})" if p["passed"] is False else f"{p['test']}.{p['name']}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("out")
    ap.add_argument("--reference", action="store_true", help="grade each reference as its own candidate too")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--python", default=None)
    args = ap.parse_args(argv)
    cases = sorted(p for p in Path(args.cases).iterdir() if (p / "profile.json").is_file())
    roles = ["input"] + (["reference"] if args.reference else [])
    jobs = [(c, r) for c in cases for r in roles]
    python = args.python.split() if args.python else None
    if python is None and args.j == 1:
        runtime_server.start_runtime_server(session_env())
    try:
        with ThreadPoolExecutor(args.j) as pool:
            rows = list(progress(pool.map(lambda job: _one(job[0], Path(args.out), job[1], python), jobs),
                                 "physical grades", "grade", total=len(jobs)))
    finally:
        runtime_server.stop_runtime_server()
    table = []
    for row in rows:
        rec = row["record"]
        failed = [p for t in rec["tests"].values() for p in t.values() if p and p["passed"] is False]
        nulls = sorted({p["reason"] for t in rec["tests"].values() for p in t.values() if p and p["passed"] is None})
        table.append({"case": row["case"], "role": row["role"], "faults": row["faults"], "status": rec["status"],
                      "failed": [figure(p) for p in failed], "null_reasons": nulls,
                      "time_s": rec["timings"].get("total_s")})
        print(f"{row['case']:<34} {row['role']:<9} {','.join(row['faults']):<60} {rec['status']:<9} "
              f"{rec['timings'].get('total_s')}s  FAIL: {'; '.join(figure(p) for p in failed) or '-'}"
              + (f"  NULL: {' | '.join(nulls)}" if nulls else ""), flush=True)
    (Path(args.out) / "sweep.json").write_text(json.dumps(table, indent=1))
    return ExitCode.DONE


if __name__ == "__main__":
    sys.exit(main())
