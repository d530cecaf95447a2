"""`--engine ray` on real Ray clusters: one started on the spot, and a standing cluster of several
nodes on this machine (bench/ray_cluster.py), joined with --ray-address and token authentication.

One driver process (tests/ray_cluster_driver.py) runs every phase once for the whole module, and
each test reads what it saw: the clusters' start-up is most of the cost, so it is paid once.
tests/conftest.py puts this module first in the collection so that pytest-xdist hands all of it
to one worker (one cluster, not one per worker).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from usd_repair_verifier.regrade.warm import Item, WarmGrader
from usd_repair_verifier.profiles.errors import ExitCode

# Not in the inner loop: Ray clusters: the regrade command's local engine runs in the inner loop (tests/test_regrade.py).
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "fixtures" / "cases"
SMALL = CASES / "gen_cartpole_1"   # the smallest case: the items cost little beside Ray
DEMO = REPO / "fixtures" / "submissions" / "ant_two_joint_faults_one_repair"
JOB_TRIALS = [("gen_cartpole_1", SMALL / "reference", 1.0), ("gen_cartpole_1", SMALL / "input", 0.0),
              ("ant_two_joint_faults", DEMO, 0.5), ("gen_cartpole_2", CASES / "gen_cartpole_2" / "input", 0.0)]
DEATH_ITEMS = 6   # and one that crashes its worker on every attempt


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the Ray cluster tests", pytrace=False)
    pytest.skip(reason)


def _job(root: Path, trials: list[tuple[str, Path, float]]) -> Path:
    """A Harbor-shaped job folder: trial-N/{result.json, artifacts/app, verifier/reward.json}."""
    for n, (case, package, previous) in enumerate(trials):
        trial = root / f"trial-{n}"
        shutil.copytree(package, trial / "artifacts" / "app")
        (trial / "verifier").mkdir(parents=True)
        (trial / "result.json").write_text(json.dumps({"id": f"id-{n}", "trial_name": trial.name, "task_name": case,
                                                       "config": {"agent": {"model_name": "m"}}}))
        (trial / "verifier" / "reward.json").write_text(json.dumps({"authored_usd": previous}))
    return root


def _need_ray() -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        _unavailable("the ray extra is not installed")


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    from bench.ray_cluster import available

    _need_ray()
    missing = available()
    if missing:
        _unavailable(missing)
    root = tmp_path_factory.mktemp("ray-cluster")
    death = root / "death-job"
    for n in range(DEATH_ITEMS + 1):
        side = "reference" if n % 2 == 0 else "input"
        shutil.copytree(SMALL / side, death / (f"item-{n}" if n < DEATH_ITEMS else f"item-{n}-crash") / "artifacts" / "app")
    setup = {"root": str(root), "cases": str(CASES), "case": str(SMALL), "reference": str(SMALL / "reference"),
             "job": str(_job(root / "job", JOB_TRIALS)),
             "probe_job": str(_job(root / "probe" / "job", JOB_TRIALS[:2])), "death_job": str(death)}
    (root / "setup.json").write_text(json.dumps(setup))
    proc = subprocess.run([sys.executable, str(REPO / "tests" / "ray_cluster_driver.py"), str(root / "setup.json")],
                          cwd=root, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{proc.stderr[-5000:]}\n(the nodes' logs: {root}/cluster/node-*.log)"
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    seen["root"] = root
    return seen


def _without_timings(text: str) -> str:
    grade = json.loads(text)
    grade.pop("timings")
    return json.dumps(grade, sort_keys=True)


def test_an_engine_without_an_address_starts_its_own_cluster_and_stops_all_of_it(outcome):
    """Even with RAY_ADDRESS naming another cluster; an item past its time limit is cancelled as an
    infrastructure error; the engine that started the cluster stops every process of it."""
    spot = outcome["spot"]
    assert spot["joined_standing"] is False and spot["cpus"] == 1
    [(key, exit_code, grade)] = spot["limited"]
    assert key == "spot" and grade["status"] == "infrastructure_error" and exit_code == ExitCode.INFRASTRUCTURE_ERROR, grade
    assert "time limit of 0.05 s exceeded" in grade["infrastructure_error"]
    assert spot["still_up"] is True
    [(key, status, node)] = spot["graded"]
    assert status == "graded" and len(node) == 56
    assert spot["cluster"] >= 4 and spot["left"] == [] and spot["down"] is True
    # its autoscaler monitor already killed when Ray's own stop begins (which gives it a second it always takes)
    assert spot["monitor_at_shutdown"] == [[-9]]


def test_a_standing_cluster_grades_on_every_node_as_the_warm_grader_does(outcome):
    """`usdgrade regrade --ray-address` on a head node and a second node: the grades are the warm
    grader's (which are the fresh command's: tests/test_regrade.py), and both nodes graded."""
    assert sorted(outcome["nodes"]) == ["a", "head"] and outcome["cpus"] == 2
    run = outcome["run"]
    assert run["code"] == 0 and "graded 4 in" in run["stdout"], run
    by_node = {line.split()[1].rstrip(":"): int(line.split()[2]) for line in run["stdout"].splitlines()
               if line.startswith("  node ")}
    assert set(by_node) == set(outcome["nodes"].values()) and sum(by_node.values()) == 4, run["stdout"]
    written = {p.parent.name: _without_timings(p.read_text()) for p in (outcome["root"] / "out").rglob("grade.json")}
    job = outcome["root"] / "job"
    grader = WarmGrader()
    try:
        warm = {f"trial-{n}": _without_timings(grader.grade(Item(f"trial-{n}", str(CASES / case),
                                                                 str(job / f"trial-{n}" / "artifacts" / "app"))).grade_text)
                for n, (case, _, _) in enumerate(JOB_TRIALS)}
    finally:
        grader.close()
    assert written == warm


def test_a_cluster_that_cannot_be_joined_is_one_line(outcome, tmp_path):
    """Nothing listening at --ray-address (Ray itself would retry for many minutes), or a cluster that
    refuses the run's token: exit 3, one line that says what to do, nothing written."""
    import socket

    wrong = outcome["wrong_token"]
    assert wrong["code"] == 3 and wrong["written"] == [], wrong
    assert "refused this run's authentication" in wrong["stderr"] and "RAY_AUTH_MODE=token" in wrong["stderr"]
    assert "Traceback" not in wrong["stderr"]
    with socket.socket() as free:   # a port where nothing listens
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    job = _job(tmp_path / "job", JOB_TRIALS[:1])
    proc = subprocess.run([sys.executable, "-m", "usd_repair_verifier.commands.cli", "regrade", str(job), "--cases",
                           str(CASES), "--out", str(tmp_path / "out"), "--engine", "ray", "--ray-address",
                           f"127.0.0.1:{port}", "--no-progress"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3 and not (tmp_path / "out").exists(), proc.stderr
    [line] = [line for line in proc.stderr.splitlines() if line.startswith("regrade: ")]
    assert line.startswith(f"regrade: no Ray cluster answers at 127.0.0.1:{port} (") and "ray start --head" in line
    assert "Traceback" not in proc.stderr


def test_the_probe_refuses_nodes_without_the_inputs_or_with_another_verifier(outcome):
    """Before anything is graded, one line for each node that cannot grade the run, naming it."""
    ids = outcome["probe_nodes"]
    refused = outcome["refused"]
    assert refused["code"] == 3 and refused["written"] == [], refused
    lines = refused["stderr"].splitlines()
    assert "regrade: 2 of 4 Ray nodes cannot grade this run; nothing was graded:" in lines, lines
    [hidden] = [line for line in lines if ids["c"] in line]
    [other] = [line for line in lines if ids["d"] in line]
    assert "cannot read 2 of 3 input folders" in hidden
    assert "every node mounts at the same path" in hidden
    assert "runs another verifier: verifier_version 0.0.0-not-upgraded-0.1.0 (this driver: 0.1.0)" in other, other
    assert "grading code" in other   # the copy's code differs too (its version line)
    assert not any(ids[name] in refused["stderr"] for name in ("head", "a"))


def test_a_node_that_dies_mid_run_loses_no_grade(outcome):
    """Node a is killed while it grades an item: that item is graded again elsewhere (its second
    attempt); what node a finished before stays its grade, graded once; an item whose worker dies on
    both attempts is an infrastructure error. Every item ends with exactly one result."""
    ids = outcome["nodes"]
    death = outcome["death"]
    results = {r["key"]: r for r in death["results"]}
    assert len(death["results"]) == len(results) == DEATH_ITEMS + 1 and death["killed"] == ids["a"], death
    ledger = {key: [line.split() for line in lines] for key, lines in death["ledger"].items()}
    [stalled] = [key for key, runs in ledger.items() if runs[0][0] == ids["a"] and len(runs) == 2]
    assert ledger[stalled] == [[ids["a"], "1"], [ids["head"], "2"]]
    assert results[stalled]["node"] == ids["head"] and results[stalled]["attempts"] == 2
    reference = int(stalled.split("-")[1]) % 2 == 0   # the items alternate the case's reference and input
    assert results[stalled]["status"] == "graded" and results[stalled]["reward"] == (1.0 if reference else 0.0)
    finished_on_a = [key for key, r in results.items() if r["node"] == ids["a"]]
    assert finished_on_a, "node a graded nothing before it died"
    for key in finished_on_a:
        assert ledger[key] == [[ids["a"], "1"]] and results[key]["status"] == "graded", key
    crash = results[f"item-{DEATH_ITEMS}-crash"]
    assert crash["status"] == "infrastructure_error" and crash["reward"] == 0.0 and crash["attempts"] == 2
    assert "worker process died" in crash["cause"] and len(ledger[crash["key"]]) == 2
    for key, r in results.items():
        if key not in (stalled, crash["key"]):
            assert len(ledger[key]) == 1 and r["status"] == "graded" and r["attempts"] == 1, (key, r, ledger[key])
    assert death["dead_noticed_s"] is not None and sorted(death["alive_after"]) == ["head"], death


def test_a_grade_from_a_node_that_joined_with_another_verifier_is_never_kept():
    """A node that joins after the probe is checked on each result: a grade made by another
    verifier stops the run, naming the node, and is not handed on."""
    import zlib

    from usd_repair_verifier.regrade.ray_engine import NodeRefused, RayEngine, fingerprint

    _need_ray()
    from usd_repair_verifier.regrade.warm import ItemResult

    class Connected:   # what the engine asks of Ray here: the finished task's reply
        get = staticmethod(lambda reply: reply)

    def reply(found: dict) -> bytes:
        result = ItemResult("trial-0", 0, "{}", "{}", 0.1, node="ab12" * 14)
        return zlib.compress(json.dumps({"result": result.to_dict(), "fingerprint": found}).encode())

    item = Item("trial-0", str(SMALL), str(SMALL / "reference"))
    kept = RayEngine._result(Connected, reply(fingerprint()), item, 0.0)
    assert kept.key == "trial-0" and kept.node == "ab12" * 14
    with pytest.raises(NodeRefused, match=f"node {'ab12' * 14} joined the cluster after the probe and runs another "
                                          r"verifier: numpy 0\.0 \(this driver: .*\); its grade of trial-0 was not kept"):
        RayEngine._result(Connected, reply({**fingerprint(), "numpy": "0.0"}), item, 0.0)


def test_the_summary_counts_each_nodes_grades_and_the_items_taken_again():
    from usd_repair_verifier.regrade.command import Outcome, summary_lines

    outcomes = [Outcome("job/t0", "graded", None, 1.0, "h:1", 200.0, "n1"),
                Outcome("job/t1", "graded", None, 0.0, "h:2", 210.0, "n2", attempts=2),
                Outcome("job/t2", "infrastructure_error", None, 0.0, "h:2", 210.0, "n2", attempts=2)]
    lines = summary_lines(outcomes, 6.0)
    assert "2 item(s) taken again after their worker or node was lost (see each grade's status)" in lines
    assert lines[lines.index("graded on 2 Ray node(s):") + 1:][:2] == ["  node n1: 1 grade", "  node n2: 2 grades"]
    assert not any("Ray node" in line for line in summary_lines([Outcome("j/t", "graded", None, 1.0, "h:1", 1.0)], 1.0))
