"""Re-grading a real Harbor job: `usdgrade regrade JOB` against Harbor's own `harbor job regrade JOB`.

    python -m bench.bench_harbor_regrade [--attempts 4] [-j 2] [--keep DIR]

Needs the real stack (tools/harbor_stack.py: dockerd, the registry, the base image, Harbor 0.26.0);
it reads USDGRADE_HARBOR and USDGRADE_BASE_IMAGE when set, else runs the stack script with
--no-install. Then:
  1. writes three tasks with `usdgrade task` (the Harbor end-to-end set: textures, closed book, a
     mass and collision fault) and runs one Harbor job over them with two agents, oracle and nop,
     ATTEMPTS times each: 3 x 2 x ATTEMPTS trials (24 by default), real containers (not timed for
     the ratio, reported);
  2. `harbor job regrade JOB -n J`: Harbor starts one verifier container per trial and runs the
     task's test.sh on the trial's stored artifacts;
  3. `usdgrade regrade JOB --cases TASKS -j J` (the local engine): warm workers grade the same
     stored submissions (each trial's artifacts/app) against the same frozen cases, no containers;
and prints the wall time of each (seconds), the ratio, and whether every trial got the same
rewards from all three (the job's own, Harbor's regrade, usdgrade's). The figures go to
bench/results/harbor-regrade-<date>.md with the machine's load at the start: these machines are
shared, so only the ratio of one run is a figure to read.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
from tests_harbor.harbor_client import HARBOR_ENV, TASKS, Stack, write_task  # noqa: E402

AGENTS = ("oracle", "nop")


def stack() -> Stack:
    harbor, base = os.environ.get("USDGRADE_HARBOR"), os.environ.get("USDGRADE_BASE_IMAGE")
    if not (harbor and base):
        r = subprocess.run([sys.executable, str(ROOT / "tools" / "harbor_stack.py"), "--no-install"],
                           capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            raise SystemExit(f"the Harbor stack is not up: {r.stderr.strip()[-800:]}")
        values = dict(line.removeprefix("export ").split("=", 1) for line in r.stdout.splitlines() if "=" in line)
        harbor, base = values["USDGRADE_HARBOR"], values["USDGRADE_BASE_IMAGE"]
    return Stack(Path(harbor), base)


def harbor(stack_: Stack, *args: str) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    r = subprocess.run([str(stack_.harbor), *args], capture_output=True, text=True, timeout=5400,
                       env=dict(os.environ, **HARBOR_ENV))
    return time.perf_counter() - start, r


def job_config(stack_: Stack, dataset: Path, jobs: Path, attempts: int, workers: int, path: Path) -> Path:
    """Harbor's JobConfig for the source job, as `harbor run` resolves it, with both agents."""
    _, r = harbor(stack_, "run", "-p", str(dataset), "-a", AGENTS[0], "-e", "docker", "-o", str(jobs),
                  "--job-name", "source", "-k", str(attempts), "-n", str(workers), "-y", "--print-config")
    if r.returncode != 0:
        raise SystemExit(f"harbor run --print-config failed: {r.stderr[-800:]}")
    config = json.loads(r.stdout)
    config["agents"] = [dict(config["agents"][0], name=name) for name in AGENTS]
    path.write_text(json.dumps(config, indent=1))
    return path


def trial_rewards(job: Path) -> dict[str, dict | None]:
    """trial folder name -> rewards (None for a trial that ended in an exception)."""
    out = {}
    for result in sorted(job.glob("*/result.json")):
        data = json.loads(result.read_text())
        out[result.parent.name] = (data.get("verifier_result") or {}).get("rewards")
    return out


def harbor_regrade_rewards(regrade: Path) -> dict[str, dict | None]:
    """source trial folder name -> rewards Harbor's regrade gave it."""
    out = {}
    for result in sorted(regrade.glob("*/result.json")):
        data = json.loads(result.read_text())
        source = Path(data["config"]["source_trial"]["path"]).name
        out[source] = (data.get("verifier_result") or {}).get("rewards")
    return out


def usdgrade_rewards(out: Path, job: str) -> dict[str, dict | None]:
    found = {}
    for reward in out.glob(f"*/{job}/*/reward.json"):
        found[reward.parent.name] = json.loads(reward.read_text())
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=4, help="attempts per task and agent (default 4: 24 trials)")
    parser.add_argument("-j", type=int, default=2, help="parallelism of both re-graders (default 2)")
    parser.add_argument("--keep", type=Path, help="keep the tasks and jobs in this folder")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    stack_ = stack()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-harbor-regrade-"))
    work.mkdir(parents=True, exist_ok=True)
    dataset, jobs = work / "dataset", work / "jobs"
    try:
        for case, options in TASKS.items():
            if not (dataset / case).exists():
                write_task(case, dataset / case, stack_.base_image, *options)
        config = job_config(stack_, dataset, jobs, args.attempts, args.j, work / "source-config.json")
        run_s, r = harbor(stack_, "run", "-c", str(config), "-y")
        source = trial_rewards(jobs / "source")
        if len(source) != len(TASKS) * len(AGENTS) * args.attempts:
            raise SystemExit(f"harbor run left {len(source)} trials ({r.returncode}): {(r.stdout + r.stderr)[-2000:]}")
        harbor_s, r = harbor(stack_, "job", "regrade", str(jobs / "source"), "-p", str(dataset), "-o", str(jobs),
                             "--job-name", "harbor-regrade", "-n", str(args.j), "-y")
        by_harbor = harbor_regrade_rewards(jobs / "harbor-regrade")
        if r.returncode != 0 and not by_harbor:
            raise SystemExit(f"harbor job regrade failed: {(r.stdout + r.stderr)[-2000:]}")
        start = time.perf_counter()
        u = subprocess.run([sys.executable, "-m", "usd_repair_verifier.commands.cli", "regrade", str(jobs / "source"),
                            "--cases", str(dataset), "--out", str(work / "usdgrade-regrade"), "-j", str(args.j),
                            "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=5400)
        usdgrade_s = time.perf_counter() - start
        if u.returncode != 0:
            raise SystemExit(f"usdgrade regrade failed: {(u.stdout + u.stderr)[-2000:]}")
        by_usdgrade = usdgrade_rewards(work / "usdgrade-regrade", "source")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    exceptions = sum(1 for rewards in source.values() if rewards is None)
    same_harbor = sum(by_harbor.get(t) == rw for t, rw in source.items())
    same_usdgrade = sum(by_usdgrade.get(t) == rw for t, rw in source.items())
    rewards = sorted({json.dumps(rw, sort_keys=True) for rw in source.values()})
    n = len(source)
    lines = [
        f"job: {n} trials ({len(TASKS)} tasks x {', '.join(AGENTS)} x {args.attempts} attempts), "
        f"{exceptions} trial exceptions, rewards seen {', '.join(rewards)}; harbor run {run_s:.1f} s",
        "",
        "| re-grader | parallelism | wall (s) | s per trial | same rewards as the job |",
        "| --- | --- | --- | --- | --- |",
        f"| harbor job regrade | -n {args.j} | {harbor_s:.1f} | {harbor_s / n:.2f} | {same_harbor}/{n} |",
        f"| usdgrade regrade (local) | -j {args.j} | {usdgrade_s:.1f} | {usdgrade_s / n:.2f} | {same_usdgrade}/{n} |",
        "",
        f"ratio harbor job regrade / usdgrade regrade wall time = {harbor_s / usdgrade_s:.2f}x",
        f"identical rewards job vs harbor regrade vs usdgrade regrade: {'yes' if same_harbor == same_usdgrade == n else 'no'}",
    ]
    print("\n".join(lines))
    today = datetime.date.today().isoformat()
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"harbor-regrade-{today}.md"
    header = (f"# Re-grading a real Harbor job, {today}\n\n`python -m bench.bench_harbor_regrade --attempts "
              f"{args.attempts} -j {args.j}`; load average at the start {load:.1f} on {os.cpu_count()} cores "
              "(a shared machine: read the ratio, not the seconds).\n\n")
    path.write_text(header + "\n".join(lines) + "\n")
    print(f"written to {path.relative_to(ROOT)}")
    return 0 if same_harbor == same_usdgrade == n and not exceptions else 1


if __name__ == "__main__":
    raise SystemExit(main())
