"""A stored grade is re-graded against the very case it recorded, and closed book stays closed book.

The case found by id must carry the profile digest the earlier grade recorded: a case frozen again
under the same id (other faults, tolerances, limits, or open book where the task was closed book)
is skipped with its reason unless the operator names the change (`--accept-profile-change`); a
trial graded closed book has its trajectory read again whatever case grades it (a missing one is
`closed_book_unverified`). `--refreeze` still re-freezes the recorded case. The README's own
command on the bundled job: tests/test_readme.py.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests import command_runner
from usd_repair_verifier.profiles.digest import file_digest

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
JOB = ROOT / "fixtures" / "harbor_jobs" / "repair-bench-fixture"
VIOLATION_TRIAL = "hopper_body_and_com__b5b6239"      # graded closed book; its trajectory fetched a page
CLEAN_TRIAL = "hopper_body_and_com__29631fb"          # graded closed book, clean, a full repair


def usdgrade(*args: str):
    return command_runner.usdgrade(*args, timeout=600)


def regrade(*args: str):
    return usdgrade("regrade", *args, "-j", "1", "--no-progress")


def grades(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.rglob("grade.json")}


def job_of(tmp_path: Path, *trials: str) -> Path:
    job = tmp_path / "job"
    for trial in trials:
        shutil.copytree(JOB / trial, job / trial)
    return job


def test_a_case_of_another_digest_is_skipped_with_both_digests(tmp_path):
    job = job_of(tmp_path, VIOLATION_TRIAL)
    recorded = json.loads((job / VIOLATION_TRIAL / "verifier" / "grade.json").read_text())["profile"]["digest"]
    r = regrade(str(job), "--cases", str(CASES), "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert "0 to grade" in r.stderr and "1 cannot be graded" in r.stderr
    found = file_digest(CASES / "hopper_body_and_com" / "profile.json")
    assert found != recorded
    assert (f"skipped job/{VIOLATION_TRIAL}: {CASES}/hopper_body_and_com is profile {found}, "
            f"the trial was graded against {recorded}") in r.stderr
    assert grades(tmp_path / "out") == {}


@pytest.mark.slow
def test_an_accepted_change_still_grades_a_closed_book_trial_closed_book(tmp_path):
    """The open-book case found by id grades the trial, and its trajectory is read again: the fetch
    it recorded zeroes the reward as before, never 1.0."""
    job = job_of(tmp_path, VIOLATION_TRIAL, CLEAN_TRIAL)
    r = regrade(str(job), "--cases", str(CASES), "--out", str(tmp_path / "out"), "--accept-profile-change")
    assert r.returncode == 0, r.stderr
    new = grades(tmp_path / "out")
    violation, clean = new[VIOLATION_TRIAL], new[CLEAN_TRIAL]
    assert (violation["status"], violation["authored_usd"], violation["raw_authored_usd"]) == \
        ("closed_book_violation", 0.0, 1.0)
    assert [v["url"] for v in violation["network_violations"]] == ["https://pypi.org/simple/"]
    assert violation["profile"]["digest"] == file_digest(CASES / "hopper_body_and_com" / "profile.json")
    assert (clean["status"], clean["authored_usd"], clean["closed_book"]["status"]) == ("graded", 1.0, "clean")


@pytest.mark.slow
def test_a_closed_book_trial_whose_trajectory_is_gone_is_unverified(tmp_path):
    job = job_of(tmp_path, CLEAN_TRIAL)
    (job / CLEAN_TRIAL / "agent" / "trajectory.json").unlink()
    r = regrade(str(job), "--cases", str(CASES), "--out", str(tmp_path / "out"), "--accept-profile-change")
    assert r.returncode == 0, r.stderr
    grade = grades(tmp_path / "out")[CLEAN_TRIAL]
    assert (grade["status"], grade["authored_usd"]) == ("closed_book_unverified", 0.0)
    assert f"no trajectory at {job / CLEAN_TRIAL / 'agent' / 'trajectory.json'}" in grade["closed_book"]["reason"]


@pytest.mark.slow
def test_the_recorded_case_under_a_task_folder_is_found_and_graded_closed_book(tmp_path):
    """`usdgrade task` made the hopper task closed book: its tests/case/ is the case the trials recorded."""
    cases = tmp_path / "tasks"
    r = usdgrade("task", str(CASES / "hopper_body_and_com"), "--out", str(cases / "hopper_body_and_com"))
    assert r.returncode == 0, r.stderr
    job = job_of(tmp_path, VIOLATION_TRIAL)
    r = regrade(str(job), "--cases", str(cases), "--out", str(tmp_path / "out"))
    assert r.returncode == 0 and "1 to grade" in r.stderr, r.stderr
    grade = grades(tmp_path / "out")[VIOLATION_TRIAL]
    assert (grade["status"], grade["authored_usd"]) == ("closed_book_violation", 0.0)
    recorded = json.loads((job / VIOLATION_TRIAL / "verifier" / "grade.json").read_text())["profile"]["digest"]
    assert grade["profile"]["digest"] == recorded


@pytest.mark.slow
def test_the_store_checks_the_digest_and_keeps_closed_book(tmp_path):
    store_module = pytest.importorskip("usd_repair_verifier.records.store")
    from usd_repair_verifier.records.ingest import ingest

    job = job_of(tmp_path, VIOLATION_TRIAL)
    url = f"sqlite:///{tmp_path / 'records.sqlite'}"
    store = store_module.open_store(url)
    with store:
        ingest(store, [job])
    r = regrade("--db", url, "--cases", str(CASES), "--out", str(tmp_path / "out"))
    assert r.returncode == 0 and "0 to grade" in r.stderr and "is profile sha256:" in r.stderr, r.stderr
    r = regrade("--db", url, "--cases", str(CASES), "--out", str(tmp_path / "out"), "--accept-profile-change")
    assert r.returncode == 0 and "1 to grade" in r.stderr, r.stderr
    store = store_module.open_store(url)
    with store:
        [episode] = list(store.iter_episodes())
        [new] = [g for g in store.grades(episode.episode_id) if g["origin"] == "regrade"]
    assert (new["status"], new["authored_usd"], new["closed_book"]) == ("closed_book_violation", 0.0, "violation")


@pytest.mark.slow
def test_refreeze_re_freezes_the_case_the_grade_recorded(tmp_path):
    """A case of an older scoring version whose digest the earlier grade recorded passes the check,
    is re-frozen, and grades; without --refreeze it grades as an infrastructure error (as before)."""
    cases = tmp_path / "cases"
    shutil.copytree(CASES / "gen_cartpole_1", cases / "gen_cartpole_1")
    profile_path = cases / "gen_cartpole_1" / "profile.json"
    profile_path.write_text(json.dumps(dict(json.loads(profile_path.read_text()), scoring_version="0")))
    trial = tmp_path / "job" / "trial-0"
    shutil.copytree(CASES / "gen_cartpole_1" / "reference", trial / "artifacts" / "app")
    (trial / "verifier").mkdir()
    (trial / "result.json").write_text(json.dumps({"id": "t0", "trial_name": "trial-0", "task_name": "gen_cartpole_1"}))
    earlier = {"status": "graded", "authored_usd": 1.0, "scoring_version": "0", "verifier_version": "0.0.1",
               "profile": {"id": "gen_cartpole_1", "version": "1", "digest": file_digest(profile_path)},
               "closed_book": {"required": False}}
    (trial / "verifier" / "grade.json").write_text(json.dumps(earlier))
    r = regrade(str(trial.parent), "--cases", str(cases), "--out", str(tmp_path / "out"), "--refreeze")
    assert r.returncode == 0 and "1 to grade" in r.stderr, r.stderr
    grade = grades(tmp_path / "out")["trial-0"]
    assert (grade["status"], grade["authored_usd"]) == ("graded", 1.0)
    assert grade["profile"]["version"].startswith("1+scoring-")
    other = dict(earlier, profile=dict(earlier["profile"], digest="sha256:" + "0" * 64))
    (trial / "verifier" / "grade.json").write_text(json.dumps(other))
    r = regrade(str(trial.parent), "--cases", str(cases), "--out", str(tmp_path / "out2"), "--refreeze")
    assert r.returncode == 0 and "1 cannot be graded" in r.stderr and "is profile sha256:" in r.stderr, r.stderr
