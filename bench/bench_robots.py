"""What grading the real-robot fixtures costs, and the whole matrix of their mesh equivalents.

    python -m bench.bench_robots            # every robot; writes bench/results/robots-<date>.md
    python -m bench.bench_robots --quick    # costs only (no matrix, no freeze): robots-<date>-quick.md
    python -m bench.bench_robots --physical CASE   # also: its reference's physical grade, twice

For every robot of fixtures/robots (its case in fixtures/robot_cases):
  grade    the operator's command, `python -m pytest checks --case CASE --submission REF --out OUT`
           on the case's reference, in a child: wall time, peak resident memory of the whole
           grade (/usr/bin/time), and from grade.json "timings" the reference's snapshot and the
           checks' calls
  freeze   `usd_repair_verifier.authoring.freeze.freeze` of the robot's case (inject, measure, and the self-check's two
           grades), in a child, for the largest robot (every robot with --freeze-all)
  matrix   every mesh equivalent of tests/mesh_variants.py that applies to the robot graded in
           this process against the robot's case (must be 1.0), and every hostile collider change
           (must be 0), each built from the case's reference (the robot as converted)
  physical with --physical CASE: `usdgrade physical` of the case's reference against itself, twice
           in fresh processes: the wall time of each, the properties measured, and whether the two
           physical.json records are the same apart from "timings" and "runtime_session"
The load average is written beside the figures: these machines are shared, so the ratios between
rows of one run mean more than the seconds.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from fixtures.build_robot_cases import CASES, REFERENCE_LAYERS, ROBOT_CASES  # noqa: E402

RESULTS = ROOT / "bench" / "results"
EQUIVALENTS = ("reordered", "retriangulated", "split", "merged", "baked_scale", "deinstanced", "hull_mesh",
               "centimetres")
HOSTILES = ("grown", "moved", "approximation", "bounding_sphere")


def timed_child(argv: list[str], env: dict | None = None) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, peak resident MB, process) of a child run under /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        start = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", report.name, *argv], capture_output=True,
                              text=True, cwd=ROOT, env=env)
        wall = time.perf_counter() - start
        lines = [line for line in Path(report.name).read_text().splitlines() if line.strip().isdigit()]
    return wall, (int(lines[-1]) / 1024 if lines else float("nan")), proc


def grade_cost(case: str, out: Path) -> dict:
    wall, peak, proc = timed_child([sys.executable, "-m", "pytest", "checks", f"--case={CASES / case}",
                                    f"--submission={CASES / case / 'reference'}", f"--out={out}", "-q"])
    grade = json.loads((out / "grade.json").read_text())
    timings = grade.get("timings", {})
    return {"wall_s": wall, "peak_mb": peak, "reward": grade.get("authored_usd"), "timings": timings}


def freeze_cost(case: str, out: Path) -> float:
    code = ("import sys, tempfile; from pathlib import Path;"  # run in the checkout: its folder heads sys.path
            
            "import fixtures.build_robot_cases as b; b.CASES = Path(sys.argv[1]); b.build_case(sys.argv[2])")
    wall, _, proc = timed_child([sys.executable, "-c", code, str(out), case])
    if proc.returncode != 0:
        raise SystemExit(f"freezing {case} failed: {proc.stderr[-800:]}")
    return wall


def physical_twice(case: str, work: Path) -> list[str]:
    """Lines for the results file: the case's reference graded physically against itself twice."""
    records, lines = [], []
    for run in (1, 2):
        out = work / f"physical_{run}"
        wall, peak, proc = timed_child([str(Path(sys.executable).parent / "usdgrade"), "physical",
                                        f"--case={CASES / case}", f"--submission={CASES / case / 'reference'}",
                                        f"--out={out}"])
        if proc.returncode != 0:
            raise SystemExit(f"usdgrade physical on {case} exited {proc.returncode}: {proc.stderr[-800:]}")
        record = json.loads((out / "physical.json").read_text())
        counts = record.get("summary", {})
        lines.append(f"| {case} | {run} | {wall:.1f} | {peak:.0f} | {record.get('status')} | {counts.get('passed')} | "
                     f"{counts.get('failed')} | {counts.get('null')} |")
        print(lines[-1], flush=True)
        records.append({k: v for k, v in record.items() if k not in ("timings", "runtime_session")})
    same = "the same" if records[0] == records[1] else "DIFFERENT"
    return ["", f"Physical grade of `{case}`'s reference against itself, twice (fresh processes): the two "
            f"records are {same} apart from timings and runtime_session.", "",
            "| case | run | wall (s) | peak (MB) | status | passed | failed | null |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"] + lines


def matrix(robot: str, case: str, work: Path) -> dict:
    from tests import mesh_variants
    from tests.grade_in_process import grade

    out, source = {}, CASES / case / "reference"
    for name in EQUIVALENTS + HOSTILES:
        try:
            candidate = (getattr(mesh_variants, name)(source, work / name) if name in EQUIVALENTS
                         else mesh_variants.collider_changed(source, work / name, name))
        except LookupError as why:   # the robot has nothing the variant changes ("SRC: what is missing")
            out[name] = f"n/a ({str(why).split(': ', 1)[-1]})"
            continue
        decision = grade(CASES / case, candidate)
        out[name] = decision.authored_usd
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--freeze-all", action="store_true")
    parser.add_argument("--physical", metavar="CASE", choices=sorted(ROBOT_CASES))
    args = parser.parse_args(argv)
    args.started = datetime.date.today().isoformat()   # one file, even for a run past midnight
    case_of: dict[str, str] = {}
    for case, (robot, _) in ROBOT_CASES.items():
        if case not in REFERENCE_LAYERS:   # the robot as converted
            case_of.setdefault(robot, case)
    robots = sorted(case_of, key=lambda r: -sum(p.stat().st_size for p in (CASES / case_of[r] / "reference").rglob("*")
                                                 if p.is_file()))
    lines = [f"# Real-robot fixtures: cost and equivalents, {args.started}", "",
             f"`python -m bench.bench_robots{' --quick' if args.quick else ''}`; load average at the start "
             f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.", "",
             "| robot | grade (s) | peak (MB) | reference snapshot (s) | tests (s) | reward | freeze (s) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, robot in enumerate(robots):
            cost = grade_cost(case_of[robot], Path(tmp) / f"grade_{robot}")
            t = cost["timings"]
            frozen = (f"{freeze_cost(case_of[robot], Path(tmp) / 'frozen'):.1f}"
                      if not args.quick and (i == 0 or args.freeze_all) else "")
            snap, checks = t.get("reference_snapshot_s", ""), t.get("tests_s", "")
            lines.append(f"| {robot} | {cost['wall_s']:.2f} | {cost['peak_mb']:.0f} | {snap} | {checks} | "
                         f"{cost['reward']} | {frozen} |")
            print(lines[-1], flush=True)
            if not args.quick:
                rows[robot] = matrix(robot, case_of[robot], Path(tmp) / f"m_{robot}")
                print(robot, rows[robot], flush=True)
            write(args, lines, rows, robots)   # after every robot: a run cut short keeps what it measured
        if args.physical:
            write(args, lines, rows, robots, physical_twice(args.physical, Path(tmp)))
    return 0


def write(args, lines: list[str], rows: dict, robots: list[str], after: list[str] = ()) -> None:
    lines = list(lines)
    if rows:
        names = EQUIVALENTS + HOSTILES
        lines += ["", "Every equivalent must grade 1.0 and every hostile (a healthy collider changed on the "
                  "reference) 0; n/a where the robot has nothing the variant changes.", "",
                  "| robot | " + " | ".join(names) + " |", "|" + " --- |" * (len(names) + 1)]
        lines += [f"| {r} | " + " | ".join(str(rows[r][n]) for n in names) + " |" for r in robots if r in rows]
    lines += list(after)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"robots-{args.started}{'-quick' if args.quick else ''}.md"
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
