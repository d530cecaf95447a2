"""freeze's self-check (authoring/freeze.py verify_case) reads the two grades it runs as `Grade`s:
the reasons it refuses a case come from their attributes, and a run that left no grade, or a file
that is not a grade, is said as such instead of scoring `None`."""
from __future__ import annotations

import json
from pathlib import Path

from usd_repair_verifier.authoring import freeze
from usd_repair_verifier.scoring import run as run_module
from usd_repair_verifier.scoring.run import RunResult

CURRENT = Path(__file__).resolve().parent.parent / "fixtures" / "harbor_jobs" / "plain_grades" / "ant_demo" / "grade.json"


def _grade(**changes) -> dict:
    grade = json.loads(CURRENT.read_text())     # graded, 0.5, one of its two checks failing
    grade.update(changes)
    return grade


def _self_check(monkeypatch, reference: dict | None, input_: dict | None) -> list[str]:
    grades = {"reference": reference, "input": input_}

    def run_grade(case, submission, out, *args, **kwargs):
        return RunResult(0 if grades[submission.name] else 3, grades[submission.name], None, "", "")

    monkeypatch.setattr(run_module, "run_grade", run_grade)
    return freeze.verify_case(Path("/case"))


def test_a_sound_case_gives_no_problem(monkeypatch) -> None:
    reference = _grade(authored_usd=1.0, objective_success=True)
    input_ = _grade(authored_usd=0.0)
    input_["checks"] = [dict(c, passed=False) for c in input_["checks"]]
    assert _self_check(monkeypatch, reference, input_) == []


def test_the_reasons_come_from_the_grades(monkeypatch) -> None:
    reasons = ["r1", "r2", "r3", "r4", "r5"]
    problems = _self_check(monkeypatch, _grade(reasons=reasons), _grade(status="invalid", reasons=["bad layer"]))
    assert problems[0] == "the reference scores 0.5 (status graded, objective False): r1; r2; r3; and 2 more"
    assert problems[1] == "the unchanged input scores 0.5 (status invalid), not 0"
    assert problems[2] == "the unchanged input is invalid, not graded: bad layer"
    passing = [c["id"] for c in _grade()["checks"] if c["passed"] is not False]
    assert problems[3:] == [f"targeted check {i} does not fail on the input (within tolerance)" for i in passing]


def test_no_grade_and_not_a_grade_are_said_as_such(monkeypatch) -> None:
    problems = _self_check(monkeypatch, None, {"status": "graded"})
    assert problems[0] == "the reference left no grade.json (exit 3)"
    assert problems[1].startswith("the input's grade.json: not a usdgrade grade.json (")
    assert len(problems) == 2
