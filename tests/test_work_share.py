"""Work shared by xdist workers: each unit done once, results and failures seen by all."""
from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import time
from pathlib import Path

import pytest

from usd_repair_verifier.profiles.case import CaseError, load_case
from usd_repair_verifier.scoring.run import run_grade
from usd_repair_verifier.scoring.session import MEASUREMENT_UNITS, GradingSession
from usd_repair_verifier.scoring.work_share import LocalWork, SharedWork, VerifierFault

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "fixtures" / "cases" / "ant_two_joint_faults"
SUBMISSION = ROOT / "fixtures" / "submissions" / "ant_two_joint_faults_one_repair"


def test_a_unit_is_claimed_once_and_its_result_reaches_the_others(tmp_path):
    first, second = SharedWork(tmp_path), SharedWork(tmp_path)
    assert first.claim("reference") is True
    assert first.claim("reference") is True       # still ours
    assert second.claim("reference") is False     # someone else's
    first.run("reference", lambda: {"bodies": 13})
    assert second.wait("reference") == {"bodies": 13}


@pytest.mark.parametrize("error, raised", [(CaseError("the reference does not open"), CaseError),
                                           (RuntimeError("qhull crashed"), VerifierFault)])
def test_a_failed_unit_fails_every_waiting_worker(tmp_path, error, raised):
    owner, waiter = SharedWork(tmp_path), SharedWork(tmp_path)
    assert owner.claim("submission")

    def compute():
        raise error

    with pytest.raises(type(error)):
        owner.run("submission", compute)
    with pytest.raises(raised, match=str(error)):
        waiter.wait("submission")


def test_a_unit_whose_owner_died_is_a_verifier_fault_not_a_hang(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "reference.claim").write_text(str(dead.pid))
    start = time.monotonic()
    with pytest.raises(VerifierFault, match="ended without a result"):
        SharedWork(tmp_path).wait("reference")
    assert time.monotonic() - start < 5


def test_local_work_runs_everything_itself():
    work = LocalWork()
    assert work.claim("reference")
    assert work.run("reference", lambda: 3) == 3
    assert work.wait("reference") == 3


def _build_shared(folder: str, queue) -> None:
    case = load_case(CASE)
    session = GradingSession(case, SUBMISSION, SharedWork(folder))
    results = {spec.id: session.measure_check(spec).model_dump() for spec in case.profile.checks}
    queue.put((results, session.objective_gate("all_bodies").passed, len(session.measurements.results)))


@pytest.mark.slow
def test_two_processes_sharing_a_folder_measure_what_one_process_measures(tmp_path):
    case = load_case(CASE)
    alone = GradingSession(case, SUBMISSION)
    expected = {spec.id: alone.measure_check(spec).model_dump() for spec in case.profile.checks}
    expected_gate = alone.objective_gate("all_bodies").passed

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    workers = [context.Process(target=_build_shared, args=(str(tmp_path), queue)) for _ in range(2)]
    for w in workers:
        w.start()
    outcomes = [queue.get(timeout=300) for _ in workers]
    for w in workers:
        w.join(60)
        assert w.exitcode == 0

    claims = sorted(p.name for p in tmp_path.glob("*.claim"))
    units = ["reference", "submission"] + [f"measures-{i}" for i in range(MEASUREMENT_UNITS)]
    assert claims == sorted(f"{u}.claim" for u in units)  # every unit claimed exactly once
    assert sorted(p.name for p in tmp_path.glob("*.pickle")) == sorted(f"{u}.pickle" for u in units)
    for results, gate, memo_size in outcomes:
        assert json.dumps(results, sort_keys=True, default=str) == json.dumps(expected, sort_keys=True, default=str)
        assert gate == expected_gate
        assert memo_size > len(case.profile.checks)  # every measurement arrived, not just the checks'


@pytest.mark.slow
def test_a_parallel_selection_finishes(tmp_path):
    """A worker given no test still finishes the unit it claimed: -k under -n 2 never hangs.
    The shared folder goes with the run."""
    temp = tmp_path / "temp"
    temp.mkdir()
    r = run_grade(CASE, SUBMISSION, tmp_path / "out", ("-n", "2", "-k", "f1"), timeout=300, env={"TMPDIR": str(temp)})
    assert r.grade is not None, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.grade["status"] == "partial"
    assert not list(temp.glob("usdgrade-work-*"))


@pytest.mark.slow
def test_a_parallel_run_of_an_invalid_submission_is_invalid_in_every_worker(tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "robot.usda").write_text("#usda 1.0\n(\n  this is not usda\n")
    r = run_grade(CASE, broken, tmp_path / "out", ("-n", "2"), timeout=300)
    assert r.grade is not None, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.grade["status"] == "invalid" and r.reward == {"authored_usd": 0.0}
    assert r.exit_code == 0


def test_a_result_that_cannot_be_published_fails_the_unit_for_everyone(tmp_path):
    """Publishing failed (here: an unpicklable result; a full disk behaves alike): the owner
    raises, and the others get a verifier fault instead of waiting for ever."""
    owner, waiter = SharedWork(tmp_path), SharedWork(tmp_path)
    assert owner.claim("reference")
    with pytest.raises(Exception):
        owner.run("reference", lambda: (lambda: "a lambda does not pickle"))
    with pytest.raises(VerifierFault, match="reference"):
        waiter.wait("reference")


def test_a_worker_that_fails_before_its_claimed_units_fails_them_for_the_others(tmp_path):
    owner, waiter = SharedWork(tmp_path), SharedWork(tmp_path)
    assert owner.claim("submission")   # claimed at configure, then the session could not be built
    owner.abandon("ImportError: no module named pxr")
    with pytest.raises(VerifierFault, match="no module named pxr"):
        waiter.wait("submission")
