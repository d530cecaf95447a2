"""The Ray driver of tests/test_regrade_cluster.py, in a process of its own (Ray's connection, its
threads and the clusters it starts never enter the test session): `python ray_cluster_driver.py
SETUP.json` runs every phase below and prints what it saw as one JSON line.

1. standing cluster: a head node, then three more nodes (bench/ray_cluster.py: each its own
   process, folder, environment and PID namespace, token authentication): node a, node c, which
   does not mount the probe job's folder, and node d, which runs another verifier (a copy with
   another version); meanwhile a driver with a token that is not the cluster's is refused;
2. on the spot (while the nodes start): `--engine ray` without an address starts a one-node
   cluster of its own (even with RAY_ADDRESS naming the standing one), grades, cancels an item
   past its time limit and stops all of its cluster when its run ends;
3. probe: `usdgrade regrade --ray-address` refuses the run, naming c and d; they leave;
4. `usdgrade regrade --ray-address` grades a job on the head and node a;
5. node death: node a is killed (its every process at once) while it grades an item.
Each phase's items are small cases, so that the phases cost Ray's start-up and little else.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# The clusters' token, before Ray is imported (it reads its authentication settings once): every
# cluster this driver starts or joins uses it, and ~/.ray/auth_token is never read or written.
os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))

import ray  # noqa: E402

from bench.ray_cluster import LocalCluster  # noqa: E402
from usd_repair_verifier.commands.cli import main  # noqa: E402
from usd_repair_verifier.regrade.ray_engine import RayEngine  # noqa: E402
from usd_repair_verifier.regrade.warm import Item  # noqa: E402

CODE_FOLDERS = ("usd_repair_verifier", "authoring", "checks", "closed_book", "commands", "gates", "physical",
                "profiles", "records", "regrade", "scoring", "stage_snapshot", "visual")


def command(*args: str) -> dict:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["regrade", *args, "--no-progress"])
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def children() -> set[int]:
    me = os.getpid()
    return {int(pid) for task in os.listdir(f"/proc/{me}/task")
            for pid in open(f"/proc/{me}/task/{task}/children").read().split()}


def on_the_spot(setup: dict, standing: str) -> dict:
    """Phase 2: the engine starts its own cluster (never the one RAY_ADDRESS names) and stops it."""
    item = Item("spot", setup["case"], setup["reference"])
    before = children()
    os.environ["RAY_ADDRESS"] = standing   # what a plain ray.init() would join
    try:
        starter = RayEngine(1, 60.0)
        starter._start()
    finally:
        del os.environ["RAY_ADDRESS"]
    cluster = children() - before
    joined_standing = any(r.startswith("usdgrade_node_") for r in ray.cluster_resources())
    # An engine that finds the cluster up grades on it and leaves it running.
    graded = [(r.key, json.loads(r.grade_text)["status"], r.node) for r in RayEngine(1, 60.0).run([item])]
    still_up = ray.is_initialized()
    # The engine that started it: its item past the time limit is cancelled, then it stops the cluster.
    starter.time_limit = 0.05
    monitor = [info.process for info in ray._private.worker._global_node.all_processes.get("monitor", [])]
    shutdown, at_shutdown = ray.shutdown, []
    ray.shutdown = lambda: at_shutdown.append([process.poll() for process in monitor]) or shutdown()
    try:
        limited = [(r.key, r.exit_code, json.loads(r.grade_text)) for r in starter.run([item])]
    finally:
        ray.shutdown = shutdown
    return {"joined_standing": joined_standing, "cpus": starter.cluster_cpus, "limited": limited,
            "still_up": still_up, "graded": graded, "cluster": len(cluster), "down": not ray.is_initialized(),
            "left": sorted(pid for pid in cluster if os.path.exists(f"/proc/{pid}")), "monitor_at_shutdown": at_shutdown}


def node_ids() -> dict[str, str]:
    """Node name (bench/ray_cluster.py's resource) -> Ray node id, of the nodes alive now."""
    found = {}
    for node in ray.nodes():
        for resource in node["Resources"] if node["Alive"] else ():
            if resource.startswith("usdgrade_node_"):
                found[resource[len("usdgrade_node_"):]] = node["NodeID"]
    return found


def other_verifier(root: Path) -> Path:
    """A copy of this verifier's code whose version is another: what a node not yet upgraded runs."""
    for folder in CODE_FOLDERS:
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    init = root / "scoring" / "__init__.py"
    text = init.read_text()
    assert 'VERIFIER_VERSION = "' in text
    init.write_text(text.replace('VERIFIER_VERSION = "', 'VERIFIER_VERSION = "0.0.0-not-upgraded-', 1))
    return root


def node_death(cluster: LocalCluster, setup: dict) -> dict:
    """Phase 4: node a dies while it grades an item; every item still ends with exactly one result."""
    from regrade_workers import ray_ledger_task

    job = Path(setup["death_job"])
    items = [Item(t.name, setup["case"], str(t / "artifacts" / "app")) for t in sorted(job.iterdir()) if t.is_dir()]
    engine = RayEngine(2, 300.0, address=cluster.address)
    engine.task_function = ray_ledger_task
    killed = {}

    def kill_when_stalled() -> None:
        marker = job / "stalled"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not (marker.is_file() and marker.read_text()):
            time.sleep(0.05)
        killed["node"] = marker.read_text() if marker.is_file() else None
        killed["at"] = time.monotonic()
        cluster.kill("a")

    watcher = threading.Thread(target=kill_when_stalled, daemon=True)
    watcher.start()
    started = time.monotonic()
    results = []
    for r in engine.run(items):
        grade = json.loads(r.grade_text)
        results.append({"key": r.key, "node": r.node, "attempts": r.attempts, "status": grade["status"],
                        "reward": grade["authored_usd"], "cause": grade.get("infrastructure_error"),
                        "at": time.monotonic() - started})
    watcher.join(timeout=5)
    # The cluster's own view: node a marked dead (by its health checks: a few seconds here).
    noticed = None
    while noticed is None and time.monotonic() - killed.get("at", started) < 60:
        if "a" not in node_ids():
            noticed = round(time.monotonic() - killed.get("at", started), 1)
        else:
            time.sleep(0.2)
    ledger = {t.name: (t / "artifacts" / "ledger").read_text().split("\n")[:-1] if (t / "artifacts" / "ledger").is_file()
              else [] for t in job.iterdir() if t.is_dir()}
    return {"results": results, "killed": killed.get("node"), "killed_at": killed.get("at", started) - started,
            "ledger": ledger, "alive_after": sorted(node_ids()), "dead_noticed_s": noticed}


def run(setup: dict) -> dict:
    """The phases, overlapped where they do not meet: the nodes start while the cluster started on
    the spot is tested and a driver with the wrong token is refused."""
    root = Path(setup["root"])
    outcome = {}
    started, timeline = time.monotonic(), {}
    outcome["seconds"] = timeline

    def mark(what: str) -> None:
        timeline[what] = round(time.monotonic() - started, 1)

    with LocalCluster(root / "cluster", token=os.environ["RAY_AUTH_TOKEN"]) as cluster:
        cluster.start_head(cpus=1)
        mark("head up")
        address = cluster.address
        wrong_token = subprocess.Popen(
            [sys.executable, "-m", "usd_repair_verifier.commands.cli", "regrade", setup["probe_job"], "--cases",
             setup["cases"], "--out", str(root / "wrong-token"), "--engine", "ray", "--ray-address", address,
             "--no-progress"], env={**os.environ, "RAY_AUTH_TOKEN": secrets.token_hex(32)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        cluster.join("a", env={"USDGRADE_TEST_VICTIM": "1"})
        cluster.join("c", hide=(Path(setup["probe_job"]).parent,))
        cluster.join("d", env={"PYTHONPATH": str(other_verifier(root / "other-verifier"))})
        outcome["spot"] = on_the_spot(setup, address)
        mark("on the spot")
        cluster.wait("a", "c", "d")
        mark("nodes a, c, d up")
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
        outcome["probe_nodes"] = node_ids()
        outcome["refused"] = command(setup["probe_job"], "--cases", setup["cases"], "--out", str(root / "refused"),
                                     "--engine", "ray", "--ray-address", address, "-j", "2")
        outcome["refused"]["written"] = sorted(str(p) for p in (root / "refused").rglob("*.json"))
        cluster.remove("c", "d")
        deadline = time.monotonic() + 60
        while {"c", "d"} & set(node_ids()) and time.monotonic() < deadline:   # the cluster's view follows
            time.sleep(0.1)
        mark("probe refused; c and d gone")
        outcome["nodes"] = node_ids()
        outcome["cpus"] = ray.cluster_resources().get("CPU")
        outcome["run"] = command(setup["job"], "--cases", setup["cases"], "--out", str(root / "out"),
                                 "--engine", "ray", "--ray-address", address, "-j", "2")
        mark("command")
        outcome["death"] = node_death(cluster, setup)
        mark("node death")
        stderr = wrong_token.communicate(timeout=300)[1]
        outcome["wrong_token"] = {"code": wrong_token.returncode, "stderr": stderr,
                                  "written": sorted(str(p) for p in (root / "wrong-token").rglob("*.json"))}
        ray.shutdown()
    mark("stopped")
    return outcome


if __name__ == "__main__":
    print(json.dumps(run(json.loads(Path(sys.argv[1]).read_text()))))
