"""Faults in the client, under real Harbor: each ends as docs/harbor-task.md promises (reward 0
with a reason, or an infrastructure error Harbor records), never a reward above the honest one
(the oracle's repair: 1.0), never a hung trial. Every variant is the ant task (closed book) run by
Harbor's oracle agent, with one change to its solution or its verifier (tests_harbor/faults.py);
the job runs in conftest.py's second wave."""
from __future__ import annotations

from datetime import datetime

from tests_harbor.faults import verifier_container


def trial(fault_job, name: str):
    return fault_job[0].by_task()[f"usdgrade/fault-{name}"]


def test_a_2_gb_sparse_file_is_refused_at_zero(fault_job):
    t = trial(fault_job, "sparse")
    assert t.exception is None and t.rewards == {"authored_usd": 0.0}, t.describe()
    assert t.grade["status"] == "invalid", t.describe()
    assert "huge.bin: 2.1 GB (2147483648 bytes) exceeds max_file_bytes" in " ".join(t.grade["reasons"]), t.describe()


def test_a_missing_app_is_an_empty_package_at_zero(fault_job):
    t = trial(fault_job, "no-app")
    assert t.exception is None and t.rewards == {"authored_usd": 0.0}, t.describe()
    assert t.grade["status"] == "invalid", t.describe()
    assert any("package folder is empty" in reason for reason in t.grade["reasons"]), t.describe()


def test_a_grade_past_test_sh_time_limit_is_a_visible_infrastructure_error(fault_job):
    t = trial(fault_job, "time-limit")
    assert t.exception is None and t.rewards == {"authored_usd": 0.0}, t.describe()
    assert t.grade["status"] == "infrastructure_error" and "time limit" in t.grade["infrastructure_error"]
    assert t.verifier_file("reward-details.json")["authored_usd"]["kind"] == "infrastructure_error"
    assert "a fallback, not a measured repair" in t.log()


def test_a_grade_past_harbors_verifier_timeout_is_a_trial_exception(fault_job):
    t = trial(fault_job, "timeout")
    assert t.rewards is None and t.exception is not None, t.describe()
    assert t.exception["exception_type"] == "VerifierTimeoutError", t.describe()


def test_a_verifier_container_killed_mid_grade_is_a_trial_exception(fault_job):
    job, killed = fault_job
    assert killed, "the verifier's container was never seen grading"
    t = trial(fault_job, "killed")
    assert killed == [verifier_container(t.folder.name)]
    assert t.rewards is None and t.exception is not None, t.describe()
    assert t.exception["exception_type"] == "RewardFileNotFoundError", t.describe()


def _seconds(phase: dict) -> float:
    return (datetime.fromisoformat(phase["finished_at"]) - datetime.fromisoformat(phase["started_at"])).total_seconds()


def test_no_fault_hangs_the_job(fault_job):
    job, _ = fault_job
    trials = job.by_task()
    assert len(trials) == 5 and all(t.result.get("finished_at") for t in trials.values())
    # The two grades that never end (a 3600 s sleep) are ended by the client: Harbor's 40 s
    # verifier timeout (the phase also starts the verifier's container), and the kill, before
    # that trial's own 600 s timeout.
    assert _seconds(trials["usdgrade/fault-timeout"].result["verifier"]) < 300
    assert _seconds(trials["usdgrade/fault-killed"].result["verifier"]) < 600
    assert job.seconds < 1200, job.seconds
