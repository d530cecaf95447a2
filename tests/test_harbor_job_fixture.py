"""Every committed fixture trial is consistent with itself (fixtures/build_harbor_jobs.py writes them).

Each stored grade is derived again here from what its trial folder holds, by the verifier's own
code rather than the generator's: the candidate digest from the stored submission, the profile
digest from the case the task graded with (the committed case for an open-book task; for the
closed-book task, the profile `usdgrade task` writes into the task's `tests/case/`), and the
closed-book verdict from the trial's own trajectory, so a recorded violation is one its
trajectory shows.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from usd_repair_verifier import closed_book
from usd_repair_verifier.authoring.task import TaskOptions, write_task
from usd_repair_verifier.profiles.digest import file_digest, tree_digest

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
JOB = ROOT / "fixtures" / "harbor_jobs" / "repair-bench-fixture"
TRIALS = sorted(p for p in JOB.iterdir() if (p / "verifier" / "grade.json").is_file())


def read(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def closed_book_profiles(tmp_path_factory) -> dict[str, Path]:
    """Each case's profile as a closed-book task made by `usdgrade task` holds it."""
    folder = tmp_path_factory.mktemp("tasks")
    made = {}
    for case in sorted({read(t / "verifier" / "grade.json")["profile"]["id"] for t in TRIALS}):
        task = write_task(CASES / case, folder / case, TaskOptions(closed_book=True))
        made[case] = task / "tests" / "case" / "profile.json"
    return made


def test_the_job_has_graded_trials_of_both_kinds():
    grades = [read(t / "verifier" / "grade.json") for t in TRIALS]
    assert len(grades) == 26
    assert {g["closed_book"]["required"] for g in grades} == {True, False}
    assert [g["status"] for g in grades].count("closed_book_violation") == 1


@pytest.mark.parametrize("trial", TRIALS, ids=lambda p: p.name)
def test_each_digest_is_its_own_submissions_and_its_own_cases(trial, closed_book_profiles):
    grade = read(trial / "verifier" / "grade.json")
    app = trial / "artifacts" / "app"
    size = sum(p.stat().st_size for p in app.rglob("*") if p.is_file())
    assert grade["digests"]["candidate"] == {"digest": tree_digest(app), "bytes": size}
    case = grade["profile"]["id"]
    profile = closed_book_profiles[case] if grade["closed_book"]["required"] else CASES / case / "profile.json"
    assert grade["profile"]["digest"] == file_digest(profile)
    frozen = read(profile)
    assert (grade["digests"]["reference"], grade["digests"]["input"]) == (frozen["reference"]["digest"],
                                                                          frozen["input"]["digest"])
    assert [f["id"] for f in grade["faults"]] == [f["id"] for f in frozen["faults"]]
    assert [c["id"] for c in grade["checks"]] == [c["id"] for c in frozen["checks"]]
    assert frozen["closed_book"] is grade["closed_book"]["required"]
    assert read(trial / "verifier" / "reward.json") == {"authored_usd": grade["authored_usd"]}
    assert read(trial / "result.json")["verifier_result"] == {"rewards": {"authored_usd": grade["authored_usd"]}}


@pytest.mark.parametrize("trial", TRIALS, ids=lambda p: p.name)
def test_each_closed_book_verdict_is_its_own_trajectorys(trial, closed_book_profiles):
    grade = read(trial / "verifier" / "grade.json")
    recorded = grade["closed_book"]
    if not recorded["required"]:
        assert recorded == {"required": False} and grade["network_violations"] == []
        assert grade["status"] not in ("closed_book_violation", "closed_book_unverified")
        return
    profile = read(closed_book_profiles[grade["profile"]["id"]])
    verdict = closed_book.evaluate(trial / "agent" / "trajectory.json", CASES / profile["id"] / "input",
                                   tuple(profile["allowed_urls"])).to_json()
    assert {k: v for k, v in verdict.items() if k != "trajectory"} == \
        {k: v for k, v in recorded.items() if k != "trajectory"}
    assert grade["network_violations"] == verdict["violations"]
    zeroed = {"violation": "closed_book_violation", "unverified": "closed_book_unverified"}.get(verdict["status"])
    if zeroed:
        assert (grade["status"], grade["authored_usd"]) == (zeroed, 0.0)
    else:
        assert grade["status"] not in ("closed_book_violation", "closed_book_unverified")
