"""Faults in the client, under real Harbor: each ends as docs/harbor-task.md promises (reward 0
with a reason, or an infrastructure error Harbor records), never a reward above the honest one,
never a hung trial. Every variant is the ant task (closed book) run by Harbor's oracle agent,
with one change to its solution or its verifier."""
from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time

import pytest

from harbor_client import harbor_run

VARIANTS = ("sparse", "no-app", "time-limit", "timeout", "killed")
SLOW = "sleep 3600   # (fault test: a grade that never ends)\n"


def _solution_appends(task, line: str) -> None:
    solve = task / "solution" / "solve.sh"
    solve.write_text(solve.read_text() + line)


def _before_grade(task, line: str) -> None:
    script = task / "tests" / "test.sh"
    text = script.read_text()
    anchor = "# 4. The grade:"
    assert anchor in text
    script.write_text(text.replace(anchor, line + anchor, 1))


def make_variant(source, dest, name: str):
    shutil.copytree(source, dest)
    toml = dest / "task.toml"
    text = re.sub(r'^name = "usdgrade/[^"]+"$', f'name = "usdgrade/fault-{name}"', toml.read_text(), flags=re.M)
    if name == "timeout":   # Harbor's own verifier timeout, below test.sh's time limit
        text = text.replace("timeout_sec = 600.0", "timeout_sec = 40.0")
    toml.write_text(text)
    if name == "sparse":    # the oracle's repair, plus a 2 GB sparse file in the submission
        _solution_appends(dest, "truncate -s 2G /app/huge.bin\n")
    elif name == "no-app":  # nothing at /app when the artifacts are collected
        _solution_appends(dest, "rm -rf /app\n")
    elif name == "time-limit":   # test.sh's own time limit passes during the grade
        script = dest / "tests" / "test.sh"
        script.write_text(re.sub(r"^TIME_LIMIT=\S+$", "TIME_LIMIT=0.5", script.read_text(), flags=re.M))
    elif name in ("timeout", "killed"):
        _before_grade(dest, SLOW)
    return dest


def kill_verifier_when_grading(stop: threading.Event, killed: list) -> None:
    """Kill the `killed` variant's verifier container once its test.sh runs (Harbor names the
    compose project after the task folder: killed__<id>__verifier__trial)."""
    while not stop.is_set():
        names = subprocess.run(["docker", "ps", "--format", "{{.Names}}"], capture_output=True, text=True).stdout.split()
        for name in names:
            if name.startswith("killed__") and "verifier" in name and name.endswith("-main-1"):
                top = subprocess.run(["docker", "top", name], capture_output=True, text=True).stdout
                if "test.sh" in top and "sleep 3600" in top:
                    subprocess.run(["docker", "kill", name], capture_output=True)
                    killed.append(name)
                    return
        time.sleep(0.5)


@pytest.fixture(scope="module")
def fault_job(harbor_stack, dataset, jobs, work, oracle_job):
    folder = work / "faults"
    for name in VARIANTS:
        make_variant(dataset / "ant_two_joint_faults", folder / name, name)
    stop, killed = threading.Event(), []
    watcher = threading.Thread(target=kill_verifier_when_grading, args=(stop, killed), daemon=True)
    watcher.start()
    try:
        job = harbor_run(harbor_stack, folder, "oracle", jobs, "faults")
    finally:
        stop.set()
        watcher.join(timeout=10)
    return job, killed


def trial(fault_job, name: str):
    return fault_job[0].by_task()[f"usdgrade/fault-{name}"]


def test_a_2_gb_sparse_file_is_refused_at_zero(fault_job):
    t = trial(fault_job, "sparse")
    assert t.exception is None and t.rewards == {"authored_usd": 0.0}, t.describe()
    assert t.grade["status"] == "invalid" and t.grade["reasons"], t.describe()


def test_a_missing_app_is_an_empty_package_at_zero(fault_job):
    t = trial(fault_job, "no-app")
    assert t.rewards in (None, {"authored_usd": 0.0}), t.describe()
    if t.rewards is not None:
        assert t.grade["status"] == "invalid", t.describe()


def test_a_grade_past_test_sh_time_limit_is_a_visible_infrastructure_error(fault_job):
    t = trial(fault_job, "time-limit")
    assert t.exception is None and t.rewards == {"authored_usd": 0.0}, t.describe()
    assert t.grade["status"] == "infrastructure_error" and "time limit" in t.grade["infrastructure_error"]
    assert t.verifier_file("reward-details.json")["authored_usd"]["kind"] == "infrastructure_error"
    assert "a fallback, not a measured repair" in t.log()


def test_a_grade_past_harbors_verifier_timeout_is_a_trial_exception(fault_job):
    t = trial(fault_job, "timeout")
    assert t.rewards is None and t.exception is not None, t.describe()
    assert "Timeout" in t.exception["exception_type"], t.describe()


def test_a_verifier_container_killed_mid_grade_is_a_trial_exception(fault_job):
    job, killed = fault_job
    assert killed, "the verifier's container was never seen grading"
    t = trial(fault_job, "killed")
    assert t.rewards is None and t.exception is not None, t.describe()


def test_no_fault_hangs_the_job(fault_job):
    job, _ = fault_job
    # Five trials, two at a time, the slowest bounded by the 40 s verifier timeout.
    assert job.seconds < 900, job.seconds
