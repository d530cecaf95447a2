"""The verifier's own test suite: where its time goes, and the least it could take on these cores.

    python -m bench.bench_suite [--workers 2] [--target 240] [--no-record] [-- PYTEST ARGS]

Runs the README's test command (`pytest tests -n WORKERS -q`, or the pytest arguments after `--`)
once, with bench/suite_timing.py recording each test's wall time and CPU, while a thread samples
the machine's CPU (/proc/stat, every 0.5 s). Prints:
  wall         the run's seconds, start to end
  cpu          the CPU seconds (user + sys) of the whole process tree: pytest, its workers and
               every child they reaped (a daemon that outlives its parent, as Ray's may, is not in it)
  idle         core-seconds no process used while tests ran (from /proc/stat: other load on the
               machine counts as busy)
  floor        cpu / cores: the run's wall time if no core were ever idle; no scheduling gets
               below it, only less work does
  ratios       wall / floor (how much of the time the cores wait) and floor / target (how much
               work would have to go for the suite to take TARGET seconds)
then the test files and the tests with the most wall time (test seconds, summed over workers).
Writes bench/results/suite-<date>.md (not with --no-record or a selection after `--`).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
from bench.suite_timing import FOLDER_ENV  # noqa: E402

RESULTS = REPO / "bench" / "results"
SAMPLE_S = 0.5


def _busy_and_total() -> tuple[int, int] | None:
    """The machine's busy and total jiffies so far (all cores), or None off Linux."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)   # idle + iowait
    return sum(fields) - idle, sum(fields)


class CpuSampler(threading.Thread):
    """(time, busy, total) of /proc/stat every SAMPLE_S seconds until stopped."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples: list[tuple[float, int, int]] = []
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            reading = _busy_and_total()
            if reading is not None:
                self.samples.append((time.time(), *reading))
            self.done.wait(SAMPLE_S)


def idle_core_seconds(samples: list[tuple[float, int, int]], start: float, end: float, cores: int) -> float | None:
    """Core-seconds nothing ran between start and end (the sample intervals wholly inside)."""
    idle, seen = 0.0, False
    for (t0, b0, s0), (t1, b1, s1) in zip(samples, samples[1:]):
        if t0 >= start and t1 <= end and s1 > s0:
            idle += (t1 - t0) * cores * (1.0 - (b1 - b0) / (s1 - s0))
            seen = True
    return idle if seen else None


def read_records(folder: Path) -> list[dict]:
    return [json.loads(line) for path in sorted(folder.glob("tests-*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def by_file(records: list[dict]) -> list[tuple[str, float, float, float, int]]:
    """(file, test seconds, worker CPU s, reaped children's CPU s, tests), most test seconds first."""
    sums: dict[str, list] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for r in records:
        row = sums[r["id"].split("::", 1)[0]]
        row[0] += r["wall_s"]
        row[1] += r["self_cpu_s"]
        row[2] += r["children_cpu_s"]
        row[3] += 1
    return sorted(((name, *row) for name, row in sums.items()), key=lambda row: (-row[1], row[0]))


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    argv = list(sys.argv[1:] if argv is None else argv)
    selection = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (-n; default 2)")
    parser.add_argument("--target", type=float, default=240.0, help="the suite's target, seconds (default 240)")
    parser.add_argument("--top", type=int, default=15, help="files and tests listed (default 15)")
    parser.add_argument("--no-record", action="store_true", help="do not write bench/results/")
    return parser.parse_args(argv), selection


def main(argv: list[str] | None = None) -> int:
    args, selection = parse_args(argv)
    pytest_args = selection or ["tests", "-q"]
    command = [sys.executable, "-m", "pytest", *pytest_args, "-n", str(args.workers), "-p", "no:cacheprovider",
               "-p", "bench.suite_timing"]
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="usdgrade-suite-") as folder:
        sampler = CpuSampler()
        sampler.start()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.time()
        done = subprocess.run(command, cwd=REPO, env={**os.environ, FOLDER_ENV: folder}, capture_output=True, text=True)
        ended = time.time()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        sampler.done.set()
        sampler.join()
        records = read_records(Path(folder))
    last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    if done.returncode != 0 or not records:
        print(done.stdout[-3000:] + done.stderr[-2000:])
        print(f"the suite did not pass (exit {done.returncode}): {last}")
        return 1
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    wall, cpu = ended - started, user + system
    first = min(r["end"] - r["wall_s"] for r in records)
    idle = idle_core_seconds(sampler.samples, first, max(r["end"] for r in records), cores)
    floor = cpu / cores
    lines = [
        f"command      {' '.join(['pytest', *pytest_args, '-n', str(args.workers)])}: {last}",
        f"wall         {wall:.0f} s ({first - started:.0f} s before the first test began)",
        f"cpu          {cpu:.1f} s (user {user:.1f} s, sys {system:.1f} s) on {cores} cores",
        f"idle         {'unmeasured (no /proc/stat)' if idle is None else f'{idle:.0f} core-s'} while tests ran",
        f"floor        {floor:.0f} s (cpu / {cores} cores)",
        f"ratio wall / floor = {wall / floor:.2f}x; floor / target = {floor / args.target:.2f}x "
        f"(target {args.target:.0f} s)",
        "",
        "| file | test s | worker cpu s | children cpu s | tests |",
        "| --- | --- | --- | --- | --- |",
        *(f"| {name} | {w:.1f} | {s:.1f} | {c:.1f} | {n} |" for name, w, s, c, n in by_file(records)[:args.top]),
        "",
        "| test | wall s | worker cpu s | children cpu s |",
        "| --- | --- | --- | --- |",
        *(f"| {r['id']} | {r['wall_s']:.1f} | {r['self_cpu_s']:.1f} | {r['children_cpu_s']:.1f} |"
          for r in sorted(records, key=lambda r: (-r["wall_s"], r["id"]))[:args.top]),
    ]
    print("\n".join(lines))
    if not args.no_record and not selection:
        RESULTS.mkdir(exist_ok=True)
        now = datetime.now(timezone.utc)
        path = RESULTS / f"suite-{now:%Y-%m-%d}.md"
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        entry = (f"## {now:%Y-%m-%d %H:%M} UTC\n\n`python -m bench.bench_suite {' '.join(sys.argv[1:])}`".rstrip()
                 + f"; load average at the end {load}\n\n" + "\n".join(lines) + "\n\n")
        header = "" if path.is_file() else (
            f"# The test suite's time, {now:%Y-%m-%d}\n\nWritten by bench/bench_suite.py. Test seconds are "
            "summed over the workers; a child's CPU is charged to the test that reaped it.\n\n")
        with path.open("a", encoding="utf-8") as out:
            out.write(header + entry)
        print(f"appended the results to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
