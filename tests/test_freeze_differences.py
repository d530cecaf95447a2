"""Freeze finds every fault the grade would see, and nothing it would not.

What freeze calls a difference and what the grade calls damage to a healthy element are read from
one function (gates/differences.py). These tests hold the two to each other on every committed
case, and replay the two edits a case author made by hand on the xarm7 (a mass alone x1000; a
kinematic link beside a disabled joint) that freeze once missed or excused.
"""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from pxr import Sdf, Usd

from tests.grade_in_process import grade, grade_warm, grading_session
from usd_repair_verifier.authoring.detect import detect
from usd_repair_verifier.authoring.freeze import build_profile, freeze
from usd_repair_verifier.gates.names import OBJECTIVE_GATES, PRESERVATION_GATES
from usd_repair_verifier.profiles.case import load_case
from usd_repair_verifier.profiles.families import FAMILIES
from usd_repair_verifier.profiles.result_record import GateFailure
from usd_repair_verifier.profiles.vocabulary import FAULT_KINDS

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CASES = sorted([*FIXTURES.glob("cases/*"), *FIXTURES.glob("robot_cases/*"), *FIXTURES.glob("simready/cases/*")])
XARM = FIXTURES / "robot_cases" / "xarm7_drive_and_units" / "reference"
LINK4 = "/UF_ROBOT/Geometry/world/link_base/link1/link2/link3/link4"
JOINT4 = "/UF_ROBOT/Physics/joint4"
# Measures no gate lists by (family, measure, target): a redundant joint is bounded by joint
# counts (joint_count, all_joints), composition errors by their count (composition_errors,
# composition_complete).
UNGATED = {(f.name, m.name) for f in FAMILIES for m in f.measures if not (m.objective_gate or m.preservation_gate)}


def edited(out: Path, edits: list[tuple[str, str, object]], reference: Path = XARM) -> Path:
    """The reference with `edits` (prim, attribute, value) in a new strongest sublayer."""
    shutil.copytree(reference, out)
    (out / "Layers").mkdir(exist_ok=True)
    root = Sdf.Layer.FindOrOpen(str(next(out.glob("*.usda"))))
    layer = Sdf.Layer.CreateNew(str(out / "Layers" / "hand_edit.usda"))
    root.subLayerPaths.insert(0, "./Layers/hand_edit.usda")
    root.Save()
    stage = Usd.Stage.Open(root.identifier)
    stage.SetEditTarget(layer)
    for path, name, value in edits:
        assert stage.GetPrimAtPath(path).GetAttribute(name).Set(value), (path, name)
    layer.Save()
    return out


def graded_without_faults(case_path: Path) -> set[tuple[str, str, str]]:
    """(family, measure, target) of every failure the preservation and objective gates report for
    the case's input graded as a candidate with no fault declared."""
    case = load_case(case_path)
    blank = dataclasses.replace(case, profile=case.profile.model_copy(update={"faults": (), "checks": ()}))
    session = grading_session(blank, case.paths.input)
    results = [session.preservation_gate(g) for g in PRESERVATION_GATES] + \
              [session.objective_gate(g) for g in OBJECTIVE_GATES]
    for result in results:    # a gate keeps its first failures only; none here has that many
        assert len(result.failures) < 50, result.reason
    return {(f.family, f.measure, f.target) for r in results for f in r.failures
            if isinstance(f, GateFailure) and f.family is not None}


def same_measurement(found: str, declared: str) -> bool:
    """Two kinds the grade cannot tell apart on this input: the same checks (a collider whose
    CollisionAPI is removed and one disabled both leave the body without collision)."""
    return found == declared or FAULT_KINDS[found].checks == FAULT_KINDS[declared].checks


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_freeze_finds_what_the_gates_fail_and_freezes_the_case_again(case):
    profile = load_case(case).profile
    detection = detect(case / "reference", case / "input", tolerances=profile.tolerances,
                       variant_selections=profile.variant_selections)
    found = {(f.family, f.measure, f.target) for f in detection.differences}
    # One definition of "different": freeze's differences are the gates' failures, both ways.
    assert {k for k in found if k[:2] not in UNGATED} == graded_without_faults(case)
    # Each difference is a fault of the case (or the knock-on of one), as the kind it was made with.
    declared = sorted((f.target, f.kind) for f in profile.faults)
    detected = sorted((f.target, f.kind) for f in detection.faults)
    assert [t for t, _ in detected] == [t for t, _ in declared], (detected, declared)
    assert all(same_measurement(a, b) for (_, a), (_, b) in zip(detected, declared)), (detected, declared)
    # Frozen again with its faults, the case's profile is the committed one, byte for byte.
    again = build_profile(profile.id, case / "reference", case / "input", list(profile.faults),
                          tolerances=profile.tolerances, sampling=profile.sampling, limits=profile.limits,
                          version=profile.version, closed_book=profile.closed_book, allowed_urls=profile.allowed_urls,
                          preserved_namespaces=profile.preserved_namespaces,
                          variant_selections=profile.variant_selections)
    assert again.dumps() == (case / "profile.json").read_text()


def test_a_mass_edited_alone_is_a_mass_fault_named_with_its_values(tmp_path):
    stage = Usd.Stage.Open(str(XARM / "xarm7.usda"))
    mass = stage.GetPrimAtPath(LINK4).GetAttribute("physics:mass").Get()
    broken = edited(tmp_path / "input", [(LINK4, "physics:mass", mass * 1000)])
    detection = detect(XARM, broken)
    assert [(f.family, f.measure, f.target) for f in detection.differences] == [("mass", "mass", LINK4)]
    [fault] = detection.faults
    assert (fault.kind, fault.target) == ("mass_changed", LINK4)
    assert "1726.9 kg against the reference's 1.7269 kg" in fault.note


def test_a_disabled_joint_beside_a_kinematic_body_is_a_fault_of_its_own(tmp_path, monkeypatch):
    broken = edited(tmp_path / "input", [(LINK4, "physics:kinematicEnabled", True), (JOINT4, "physics:jointEnabled", False)])
    faults = detect(XARM, broken).faults
    assert sorted((f.kind, f.target) for f in faults) == [("body_state", LINK4), ("joint_state", JOINT4)]
    monkeypatch.setattr("usd_repair_verifier.scoring.run.run_grade", grade_warm)
    freeze("xarm7-kinematic-and-disabled", XARM, broken, tmp_path / "case", faults)
    # The honest repair of either fault alone earns half; neither is capped at 0.99 for free.
    for name, left in (("kinematic_repaired", (JOINT4, "physics:jointEnabled", False)),
                       ("joint_repaired", (LINK4, "physics:kinematicEnabled", True))):
        decision = grade(tmp_path / "case", edited(tmp_path / name, [left]))
        assert decision.status == "graded" and decision.authored_usd == pytest.approx(0.5), (name, decision)


def test_a_refusal_says_what_was_compared():
    detection = detect(XARM, XARM)
    assert detection.faults == [] and detection.differences == []
    assert detection.refusal() == "compared 8 bodies, 8 joints, 8 visible parts, 8 colliders: no difference above tolerance"
