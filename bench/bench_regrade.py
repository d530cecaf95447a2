"""Re-grading throughput: fresh processes against the warm engines, at equal parallelism.

    python -m bench.bench_regrade [--quick] [--count N] [-j 2] [--no-ray] [--keep DIR]

Builds one Harbor-shaped job folder of N stored submissions (default 200; --quick 24) over four
fixture cases, rotating through each case's reference, its input, the demo's one-fault repair
and partial repairs (the reference with one of the case's faults injected), then grades them all:
  (a) fresh      one `python -m pytest checks ...` process per submission, J at a time, with the
                 verifier's plugins only (--disable-plugin-autoload, as the warm engines' sessions)
  (b) local      `usdgrade regrade --engine local -j J`
  (c) ray        `usdgrade regrade --engine ray -j J` with a one-node cluster of J CPUs started on the
                 spot (its start timed): reported, not a target
  (d) ray-up     the same on a standing cluster, `--ray-address`: a head node of J CPUs started with
                 `ray start` before the run, as a team's cluster is (its start not timed). The Ray
                 target: at most 1.3x the local engine's wall time
  (e) ray-nodes  the same on a standing cluster of J + 1 nodes on this machine (a head node that takes
                 no work, J nodes of one CPU each; bench/ray_cluster.py): Ray across nodes, reported
and prints wall time (start-up included), grades per minute, CPU seconds per grade (all processes,
where they can be seen: not Ray's), peak memory per worker process, the speed-ups, the Ray ratios,
and whether all of them wrote identical grades (grade.json without "timings").
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CASES = ["ant_two_joint_faults", "cabinet_drawer_door", "gripper_hull_and_mass", "hopper_body_and_com"]
DEMO = ("ant_two_joint_faults", REPO / "fixtures" / "submissions" / "ant_two_joint_faults_one_repair")
VERSION_GLOB = "scoring-*_verifier-*"


def _variants(case: str, scratch: Path) -> list[tuple[str, Path]]:
    """(label, package) submissions for one case: reference, input, partial repairs."""
    from usd_repair_verifier.profiles.case import load_case
    from usd_repair_verifier.authoring.inject import InjectionError, inject

    folder = REPO / "fixtures" / "cases" / case
    out = [("reference", folder / "reference"), ("input", folder / "input")]
    if case == DEMO[0]:
        out.append(("one_repair", DEMO[1]))
    profile = load_case(folder).profile
    for fault in profile.faults if len(profile.faults) > 1 else ():
        target = scratch / f"{case}-{fault.id}"
        try:
            inject(folder / "reference", target, [(fault.kind, fault.target)], seed=0)
        except InjectionError:
            continue
        out.append((f"only_{fault.id}", target))
    return out


def build_job(root: Path, count: int, cases: list[str] = CASES) -> Path:
    """A Harbor-shaped job folder of `count` trials: result.json, artifacts/app, verifier/reward.json."""
    job = root / "job"
    scratch = root / "variants"
    scratch.mkdir(parents=True, exist_ok=True)
    pool = [(case, label, package) for case in cases for label, package in _variants(case, scratch)]
    for n in range(count):
        case, label, package = pool[n % len(pool)]
        trial = job / f"trial-{n:04d}"
        shutil.copytree(package, trial / "artifacts" / "app", symlinks=True)
        (trial / "verifier").mkdir(parents=True)
        (trial / "result.json").write_text(json.dumps({
            "id": f"trial-{n:04d}", "task_name": case, "trial_name": trial.name,
            "config": {"agent": {"name": "bench", "model_name": f"model-{label}"}},
        }))
        (trial / "verifier" / "reward.json").write_text(json.dumps({"authored_usd": 0.5}))
    (job / "result.json").write_text("{}")
    return job


def _trials(job: Path) -> list[Path]:
    return sorted(p for p in job.iterdir() if p.is_dir())


def run_fresh(job: Path, out: Path, jobs: int) -> float:
    """(a): the operator's command once per submission, `jobs` at a time."""
    def one(trial: Path) -> None:
        case = REPO / "fixtures" / "cases" / json.loads((trial / "result.json").read_text())["task_name"]
        target = out / "fresh" / job.name / trial.name
        # The plugins the warm engines' sealed sessions load, no others: a plugin installed beside
        # the verifier (hypothesis in a development venv: about 0.8 s) would slow the fresh grades only.
        subprocess.run([sys.executable, "-m", "pytest", "checks", "--case", str(case), "--submission",
                        str(trial / "artifacts" / "app"), "--out", str(target), "-q", "-p", "no:cacheprovider",
                        "--disable-plugin-autoload", "-p", "pytest_jsonreport.plugin"],
                       cwd=REPO, capture_output=True, check=False)

    start, cpu = time.perf_counter(), _children_cpu()
    pool = ThreadPoolExecutor(jobs)
    try:
        list(pool.map(one, _trials(job)))
    finally:  # an interrupted bench stops after the grades already running
        pool.shutdown(wait=True, cancel_futures=True)
    return time.perf_counter() - start, _children_cpu() - cpu


def _children_cpu() -> float:
    """CPU seconds of every finished child process and the descendants they waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_engine(engine: str, job: Path, out: Path, jobs: int, label: str | None = None, extra: tuple[str, ...] = (),
               env: dict | None = None) -> tuple[float, float, str]:
    """`usdgrade regrade --engine ENGINE` into out/LABEL (default: the engine's name)."""
    label = label or engine
    start, cpu = time.perf_counter(), _children_cpu()
    proc = subprocess.run([sys.executable, "-m", "usd_repair_verifier.commands.cli", "regrade", str(job), "--cases", str(REPO / "fixtures" / "cases"),
                           "--out", str(out / label), "--engine", engine, "-j", str(jobs), "--no-progress", *extra],
                          cwd=REPO, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{label} engine failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}")
    return seconds, _children_cpu() - cpu, proc.stdout


def run_on_standing_cluster(job: Path, out: Path, jobs: int, label: str, nodes: int) -> tuple[float, float, str]:
    """(d), (e): `--engine ray --ray-address` on a cluster started (untimed) before the run and
    stopped after it: one head node of `jobs` CPUs, or a head that takes no work and `nodes` nodes
    of one CPU each. Its own `ray start` processes, token and temporary folder: no other cluster
    on the machine is joined or stopped."""
    from bench.ray_cluster import LocalCluster

    folder = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=out.parent))
    with LocalCluster(folder, namespaces=False, health_checks={}) as cluster:   # Ray's own settings, as a team's
        if nodes == 1:
            cluster.start_head(cpus=jobs)
        else:
            cluster.start_head(cpus=0)
            for n in range(nodes):   # one after another: nodes starting at once on 2 cores can starve the head
                cluster.add_node(f"n{n}", cpus=1)
        return run_engine("ray", job, out, jobs, label=label, extra=("--ray-address", cluster.address),
                          env=cluster.driver_env())


def _grades(folder: Path) -> dict[str, dict]:
    found = {}
    for path in sorted(folder.rglob("grade.json")):
        grade = json.loads(path.read_text())
        grade.pop("timings", None)
        found[path.parent.name] = grade
    return found


RAY_TARGET = 1.3   # the standing cluster's wall time over the local engine's, at most


def ray_ratio_lines(seconds: dict[str, float], jobs: int) -> list[str]:
    """The Ray rows against the local engine: the standing cluster's is the target."""
    local = seconds["local"]
    up = seconds["ray-up"] / local
    return [f"ray / local wall time on a standing cluster = {up:.2f}x (target: at most {RAY_TARGET}x: "
            f"{'met' if up <= RAY_TARGET else 'NOT met'})",
            f"ray / local wall time with a cluster started on the spot = {seconds['ray'] / local:.2f}x "
            "(reported, not a target)",
            f"ray / local wall time on a standing cluster of {jobs + 1} nodes on this machine = "
            f"{seconds['ray-nodes'] / local:.2f}x (reported, not a target)"]


def _peak_worker_mb(stdout: str) -> str:
    for line in stdout.splitlines():
        if line.startswith("peak memory per worker:"):
            return line.split(":", 1)[1].split("MB")[0].strip()
    return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="24 submissions (about a minute or two)")
    parser.add_argument("--count", type=int, default=None)
    parser.add_argument("-j", type=int, default=2, help="parallelism of every engine (default 2)")
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--keep", help="build and grade in this folder and keep it")
    parser.add_argument("--record", action=argparse.BooleanOptionalAction, default=None,
                        help="append the results to docs/performance.md (default: yes for a full run)")
    args = parser.parse_args(argv)
    from bench.performance_log import recorded

    full = not (args.quick or args.count)
    with recorded("bench/bench_regrade.py", args.record if args.record is not None else full):
        return run(args)


def run(args: argparse.Namespace) -> int:
    count = args.count or (24 if args.quick else 200)
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="usdgrade-bench-regrade-"))
    try:
        job = build_job(root, count)
        print(f"{count} submissions over {len(CASES)} cases in {job}; parallelism {args.j}")
        rows = []
        fresh_s, fresh_cpu = run_fresh(job, root / "out", args.j)
        fresh_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
        rows.append(("fresh", fresh_s, fresh_cpu, f"{fresh_peak:.0f}"))
        engines = ["local"] + ([] if args.no_ray else ["ray", "ray-up", "ray-nodes"])
        for engine in engines:
            if engine in ("ray-up", "ray-nodes"):
                seconds, cpu, stdout = run_on_standing_cluster(job, root / "out", args.j, engine,
                                                               1 if engine == "ray-up" else args.j)
            else:
                seconds, cpu, stdout = run_engine(engine, job, root / "out", args.j)
            # Ray's workers are the cluster's processes, not this one's children: their CPU is not seen.
            rows.append((engine, seconds, cpu if engine == "local" else None, _peak_worker_mb(stdout)))
        print(f"{'engine':<10}{'wall s':>10}{'grades/min':>12}{'CPU s/grade':>13}{'peak MB/worker':>16}{'vs fresh':>10}")
        for name, seconds, cpu, peak in rows:
            per = f"{cpu / count:.2f}" if cpu is not None else "n/a"
            print(f"{name:<10}{seconds:>10.1f}{60 * count / seconds:>12.1f}{per:>13}{peak:>16}{fresh_s / seconds:>9.2f}x")
        if "ray" in engines:
            for line in ray_ratio_lines({name: seconds for name, seconds, _, _ in rows}, args.j):
                print(line)
        reference = _grades(root / "out" / "fresh")
        same = len(reference) == count
        for engine in engines:
            graded = _grades(root / "out" / engine)
            differ = sorted(k for k in reference if graded.get(k) != reference[k])
            same = same and not differ and len(graded) == count
            print(f"identical grades fresh vs {engine}: {len(reference) - len(differ)}/{count}"
                  + (f" (differ: {', '.join(differ[:5])})" if differ else ""))
        rewards = sorted({round(g["authored_usd"], 4) for g in reference.values()})
        print(f"rewards seen: {rewards}")
        print("identical grades across engines: " + ("yes" if same else "NO"))
        return 0 if same else 1
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
