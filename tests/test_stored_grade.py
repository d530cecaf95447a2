"""Stored grades (scoring/stored_grade.py): this version's grade.json is read as `Grade`, an earlier
one by the one tolerant path, and both paths say the same of a grade of this version's format.
`grade_file.load` refuses a file that is not a grade with a named error that says which file."""
from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest

from usd_repair_verifier.profiles.errors import ExitCode, NotAGrade
from usd_repair_verifier.scoring import grade_file, stored_grade
from usd_repair_verifier.scoring.grade_file import GradeInputs, infrastructure_grade

ROOT = Path(__file__).resolve().parent.parent
JOBS = ROOT / "fixtures" / "harbor_jobs"
HARBOR_GRADES = sorted((JOBS / "repair-bench-fixture").glob("*/verifier/grade.json"))
CURRENT = JOBS / "plain_grades" / "ant_demo" / "grade.json"


def _closed_book_violation() -> dict:
    grade = json.loads(CURRENT.read_text())
    violation = {"trajectory": "trajectory.json", "step_id": 3, "tool_call_id": "call-1", "tool": "bash",
                 "kind": "url", "url": "https://example.com/x.usd", "excerpt": "curl https://example.com/x.usd"}
    grade.update(status="closed_book_violation", authored_usd=0.0, network_violations=[violation],
                 closed_book={"required": True, "status": "violation", "reason": "a URL", "trajectory":
                              "trajectory.json", "run": {"agent": "a"}, "violations": [violation]})
    return grade


def _infrastructure_error(tmp_path) -> dict:
    return infrastructure_grade("time limit of 1 s reached", GradeInputs(None, tmp_path), 1.0).to_json()


def test_the_committed_harbor_job_is_an_earlier_format_read_tolerantly() -> None:
    """The committed Harbor job was graded by verifier 0.0.9: today's `Grade` refuses every one of
    its grades (no `missing_tests`, ...), so the tolerant path is what ingests and re-grades it."""
    assert len(HARBOR_GRADES) == 26
    for path in HARBOR_GRADES:
        data = json.loads(path.read_text())
        with pytest.raises(NotAGrade, match="not a usdgrade grade.json"):
            grade_file.read(data)
        read = stored_grade.stored(data)
        assert not read.current
        assert (read.verifier_version, read.status, read.authored_usd) == \
               (data["verifier_version"], data["status"], data["authored_usd"])
        assert read.case_id == data["profile"]["id"] and read.checks


@pytest.mark.parametrize("make", ["plain", "closed_book", "infrastructure"])
def test_both_paths_read_a_current_grade_alike(make, tmp_path) -> None:
    """A grade of this version's format is read as `Grade`; the tolerant path would say the same
    of it, so a store's columns do not depend on which path read a file."""
    data = {"plain": lambda: json.loads(CURRENT.read_text()), "closed_book": _closed_book_violation,
            "infrastructure": lambda: _infrastructure_error(tmp_path)}[make]()
    grade_file.read(data)      # a current grade
    typed = stored_grade.stored(data)
    assert typed.current
    assert replace(typed, current=False) == stored_grade._earlier(copy.deepcopy(data))


def test_the_closed_book_outcome_is_read_from_the_typed_grade() -> None:
    read = stored_grade.stored(_closed_book_violation())
    assert (read.current, read.closed_book, read.closed_book_required) == (True, "violation", True)
    assert read.network_violations[0]["url"] == "https://example.com/x.usd"
    plain = stored_grade.stored(json.loads(CURRENT.read_text()))
    assert (plain.closed_book, plain.closed_book_required) == (None, False)


def test_a_grade_that_does_not_validate_is_read_not_dropped() -> None:
    """One field of today's format missing, one of the wrong type: the rest is still read."""
    data = json.loads(CURRENT.read_text())
    del data["missing_tests"]
    data["objective_success"] = "yes"
    read = stored_grade.stored(data)
    assert not read.current
    assert (read.status, read.authored_usd, read.objective_success) == ("graded", 0.5, None)
    assert [c.id for c in read.checks] == [c["id"] for c in data["checks"]]


def test_not_a_json_object_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not a JSON object"):
        stored_grade.stored(["graded"])


def test_load_names_the_file_that_is_not_a_grade(tmp_path) -> None:
    assert grade_file.load(CURRENT).status == "graded"
    missing = tmp_path / "nothing.json"
    with pytest.raises(NotAGrade, match="cannot read it") as caught:
        grade_file.load(missing)
    assert caught.value.site == str(missing) and caught.value.exit_code == ExitCode.USAGE
    other = tmp_path / "grade.json"
    other.write_text(json.dumps({"status": "graded"}))
    with pytest.raises(NotAGrade, match=r"not a usdgrade grade.json \(\d+ problem\(s\); first: ") as caught:
        grade_file.load(other)
    assert caught.value.site == str(other)


def test_every_grader_stores_the_same_word_for_its_own_failure() -> None:
    """grade.json, visual.json and physical.json say `infrastructure_error` for a verifier fault
    (their models), and the store says it too for an earlier visual grade that wrote `error`."""
    from typing import get_args

    from usd_repair_verifier.physical.record import PhysicalRecord
    from usd_repair_verifier.records.grades import separate_columns
    from usd_repair_verifier.scoring.reward import Status
    from usd_repair_verifier.visual.record import VisualRecord

    for model in (VisualRecord, PhysicalRecord):
        statuses = get_args(model.model_fields["status"].annotation)
        assert "infrastructure_error" in statuses and "error" not in statuses
    assert Status.INFRASTRUCTURE_ERROR.value == "infrastructure_error"
    earlier = {"record_version": "2", "status": "error", "reason": "render failed", "score": None}
    assert separate_columns("visual", earlier)["status"] == "infrastructure_error"
    assert separate_columns("physical", {"record_version": "1", "status": "not_run"})["status"] == "not_run"


def test_the_committed_separate_records_are_earlier_ones_read_tolerantly() -> None:
    """The committed Harbor job's visual.json and physical.json are record_version 1, which today's
    VisualRecord and PhysicalRecord refuse: the store reads them field by field."""
    from usd_repair_verifier.records.grades import current_record, separate_columns

    found = 0
    for kind in ("visual", "physical"):
        for path in sorted((JOBS / "repair-bench-fixture").glob(f"*/verifier/{kind}.json")):
            record = json.loads(path.read_text())
            assert current_record(kind, record) is None
            columns = separate_columns(kind, record)
            assert (columns["grader_version"], columns["status"]) == ("record-1", record["status"])
            found += 1
    assert found == 5
