"""`pytest checks --case ... --submission ... --out ...` end to end, on a real converted
asset (gymnasium's ant through mujoco-usd-converter) and a hand-authored centimetre
cabinet with a prismatic drawer and a revolute door.

Runs with arguments (-k, -n 2) are the operator's exact command in a child process; the others
are its session graded in this process (tests/grade_in_process.py). The determinism test grades
the same bytes once each way.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from pxr import Usd

from fixtures.build_cases import CASE_TABLE, SEED
from usd_repair_verifier.authoring.inject import inject
from usd_repair_verifier.scoring.grade_file import Grade
from usd_repair_verifier.scoring.run import run_grade
from tests import variants
from tests.grade_in_process import grade_warm

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"

E2E = {
    "ant_two_joint_faults": {"ant": "robot", "torso": "trunk", "front_left_leg": "leg_a", "hip_1": "hip_a"},
    "cabinet_drawer_door": {"Cabinet": "Kitchen", "Drawer": "Box", "DoorHinge": "Hinge1", "Joints": "Constraints"},
}
FIGURES = ("status", "authored_usd", "targeted_repair_fraction", "targeted_semantic_score", "objective_success",
           "submission_valid", "preservation_pass")


def figures(grade: dict) -> dict:
    return {k: grade.get(k) for k in FIGURES} | {
        "checks": [(c["id"], c["passed"], c["progress"]) for c in grade["checks"]],
    }


def grade(case_id: str, submission: Path, out: Path, *args: str, fresh: bool = False):
    """In this process (the warm grader) unless the run takes arguments or `fresh` asks for a child."""
    if args or fresh:
        result = run_grade(CASES / case_id, submission, out, tuple(args))
    else:
        result = grade_warm(CASES / case_id, submission, out)
    assert result.grade is not None, result.stdout[-3000:] + result.stderr[-3000:]
    Grade.model_validate_json((out / "grade.json").read_bytes())  # what its model and JSON Schema describe
    return result


@pytest.fixture(params=sorted(E2E))
def case_id(request):
    return request.param


def test_reference_scores_one_with_objective_success(case_id, tmp_path):
    r = grade(case_id, CASES / case_id / "reference", tmp_path / "out")
    assert r.exit_code == 0
    assert r.reward == {"authored_usd": 1.0}
    assert r.grade["status"] == "graded" and r.grade["objective_success"] is True, r.grade["reasons"]


def test_unchanged_input_scores_zero(case_id, tmp_path):
    r = grade(case_id, CASES / case_id / "input", tmp_path / "out")
    assert r.exit_code == 0
    assert r.reward == {"authored_usd": 0.0}
    assert r.grade["targeted_repair_fraction"] == 0.0 and r.grade["targeted_semantic_score"] == 0.0
    assert all(c["passed"] is False for c in r.grade["checks"])


def test_one_of_two_repairs_scores_strictly_between(case_id, tmp_path):
    asset, faults = CASE_TABLE[case_id]
    submission = tmp_path / "one_repair"
    inject(ROOT / "fixtures" / "assets" / asset, submission, [(k, t) for _, k, t in faults[1:]], SEED)
    r = grade(case_id, submission, tmp_path / "out")
    g = r.grade
    assert g["status"] == "graded", g["reasons"]
    assert g["targeted_repair_fraction"] == 0.5
    assert 0.0 < r.reward["authored_usd"] < 1.0
    passed = {c["fault"]: c["passed"] for c in g["checks"]}
    assert passed == {"f1": True, "f2": False}
    assert g["objective_success"] is False  # the other fault still breaks all_joints: capped


def test_renamed_namespace_variant_scores_one(case_id, tmp_path):
    submission = variants.rename_namespace(CASES / case_id / "reference", tmp_path / "renamed", E2E[case_id])
    stage = Usd.Stage.Open(str(next(submission.glob("*.usda"))))
    names = {p.GetName() for p in stage.Traverse()}
    assert not names & set(E2E[case_id]) and set(E2E[case_id].values()) <= names
    r = grade(case_id, submission, tmp_path / "out")
    assert r.reward == {"authored_usd": 1.0}, r.grade["reasons"]


def test_flattened_variant_scores_one(case_id, tmp_path):
    submission = variants.flatten(CASES / case_id / "reference", tmp_path / "flat")
    assert len(list(submission.glob("*.usd*"))) == 1
    r = grade(case_id, submission, tmp_path / "out")
    assert r.reward == {"authored_usd": 1.0}, r.grade["reasons"]


def test_repair_under_a_stronger_broken_opinion_does_not_count(case_id, tmp_path):
    asset, faults = CASE_TABLE[case_id]
    frame_fault = faults[0]
    assert frame_fault[1] == "joint_frame"
    weak = variants.copy_package(CASES / case_id / "input", tmp_path / "weak")
    variants.repair_in_sublayer(weak, CASES / case_id / "reference", frame_fault[2], "physics:localPos1", stronger=False)
    strong = variants.copy_package(CASES / case_id / "input", tmp_path / "strong")
    variants.repair_in_sublayer(strong, CASES / case_id / "reference", frame_fault[2], "physics:localPos1", stronger=True)

    weak_grade = grade(case_id, weak, tmp_path / "out_weak").grade
    strong_grade = grade(case_id, strong, tmp_path / "out_strong").grade
    weak_passed = {c["fault"]: c["passed"] for c in weak_grade["checks"]}
    strong_passed = {c["fault"]: c["passed"] for c in strong_grade["checks"]}
    assert weak_passed["f1"] is False and weak_grade["authored_usd"] == 0.0
    assert strong_passed["f1"] is True and strong_grade["authored_usd"] > 0.0  # the control: placement matters


def test_agent_written_outputs_are_ignored(case_id, tmp_path):
    submission = variants.copy_package(CASES / case_id / "input", tmp_path / "cheat")
    (submission / "reward.json").write_text(json.dumps({"authored_usd": 1.0}))
    (submission / "grade.json").write_text(json.dumps({"status": "graded", "authored_usd": 1.0}))
    r = grade(case_id, submission, tmp_path / "out")
    assert r.reward == {"authored_usd": 0.0}
    assert r.grade["status"] == "graded"


@pytest.mark.parametrize("absolute", [True, False], ids=["absolute", "dotdot"])
def test_dependency_outside_the_package_is_invalid(case_id, tmp_path, absolute):
    submission = variants.copy_package(CASES / case_id / "reference", tmp_path / "pkg")
    outside = tmp_path / "outside.usda"
    outside.write_text("#usda 1.0\n")
    variants.add_outside_sublayer(submission, outside, absolute=absolute)
    r = grade(case_id, submission, tmp_path / "out")
    assert r.exit_code == 0
    assert r.reward == {"authored_usd": 0.0}
    assert r.grade["status"] == "invalid" and r.grade["submission_valid"] is False
    assert "outside.usda" in json.dumps(r.grade["validity"])


@pytest.mark.slow
def test_selection_with_k_writes_no_reward(case_id, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "reward.json").write_text('{"authored_usd": 0.5}')  # stale: must go
    r = grade(case_id, CASES / case_id / "reference", out, "-k", "f1")
    assert not (out / "reward.json").exists()
    assert r.grade["status"] == "partial" and r.grade["authored_usd"] is None
    assert r.exit_code == 0  # pytest's own: the selected check passed


@pytest.mark.slow
def test_parallel_run_gives_the_serial_figures(case_id, tmp_path):
    asset, faults = CASE_TABLE[case_id]
    submission = tmp_path / "one_repair"
    inject(ROOT / "fixtures" / "assets" / asset, submission, [(k, t) for _, k, t in faults[1:]], SEED)
    serial = grade(case_id, submission, tmp_path / "serial")
    parallel = grade(case_id, submission, tmp_path / "parallel", "-n", "2")
    assert parallel.exit_code == serial.exit_code == 0
    assert figures(parallel.grade) == figures(serial.grade)
    assert parallel.reward == serial.reward
    # The workers shared the work (scoring/work_share.py): the whole report is the serial one.
    serial.grade.pop("timings"), parallel.grade.pop("timings")
    assert parallel.grade == serial.grade


@pytest.mark.slow
def test_same_bytes_give_the_same_report(case_id, tmp_path):
    """Determinism: every sampler is seeded from the profile; only timings may differ. One grade
    in a fresh child, one in this process: the same report either way."""
    asset, faults = CASE_TABLE[case_id]
    submission = tmp_path / "one_repair"
    inject(ROOT / "fixtures" / "assets" / asset, submission, [(k, t) for _, k, t in faults[1:]], SEED)
    first = grade(case_id, submission, tmp_path / "first", fresh=True).grade
    second = grade(case_id, submission, tmp_path / "second").grade
    first.pop("timings"), second.pop("timings")
    assert first == second
