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
    def edit(stage, layer):
        for path, name, value in edits:
            assert stage.GetPrimAtPath(path).GetAttribute(name).Set(value), (path, name)
    return rewritten(out, reference, edit)


def graded_without_faults(case_path: Path, candidate: Path | None = None) -> tuple[set[tuple[str, str, str]], set[str]]:
    """What the preservation and objective gates fail for the case's input (or `candidate`) graded
    with no fault declared: (family, measure, target) of each failing measurement, and each
    preservation gate's other failures as "gate: sentence"."""
    case = load_case(case_path)
    blank = dataclasses.replace(case, profile=case.profile.model_copy(update={"faults": (), "checks": ()}))
    session = grading_session(blank, candidate or case.paths.input)
    preservation = {g: session.preservation_gate(g) for g in PRESERVATION_GATES}
    results = [*preservation.values(), *(session.objective_gate(g) for g in OBJECTIVE_GATES)]
    for result in results:    # a gate keeps its first failures only; none here has that many
        assert len(result.failures) < 50, result.reason
    measured = {(f.family, f.measure, f.target) for r in results for f in r.failures
                if isinstance(f, GateFailure) and f.family is not None}
    sentences = {f"{gate}: {f.reason}" for gate, r in preservation.items() for f in r.failures if f.family is None}
    return measured, sentences


def found_by_freeze(detection) -> tuple[set[tuple[str, str, str]], set[str]]:
    """The same two sets as freeze's comparison found them (measures no gate lists left out)."""
    return ({(f.family, f.measure, f.target) for f in detection.differences
             if f.family is not None and (f.family, f.measure) not in UNGATED},
            {f.reason for f in detection.differences if f.family is None})


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
    # One definition of "different": freeze's differences are the gates' failures, both ways.
    assert found_by_freeze(detection) == graded_without_faults(case)
    assert detection.unnamed == [], detection.refusal()
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


@pytest.mark.slow
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
    assert detection.refusal() == ("the input does not differ from the reference in anything measured (compared "
                                   "8 bodies, 8 joints, 8 visible parts, 8 colliders: no difference above tolerance)")


# What the preservation gates see that is no measure on a target: each edit alone, on the ant
# (a floor that is a static collider, one physics scene) or the xarm7. Each is a difference to
# freeze, as the gate states it; no fault kind names it, so freeze refuses and says which.
ANT_CASE = FIXTURES / "cases" / "ant_filter_and_owner"
ANT = ANT_CASE / "reference"
TORSO = "/ant/Geometry/torso"
HIP = "/ant/Geometry/torso/front_left_leg/aux_1/hip_1"


def _gravity(stage, layer):
    stage.GetPrimAtPath("/PhysicsScene").CreateAttribute("physics:gravityMagnitude", Sdf.ValueTypeNames.Float).Set(1.62)


def _floor_moved(stage, layer):
    from pxr import Gf, UsdGeom
    UsdGeom.Xformable(stage.GetPrimAtPath("/ant/Geometry/floor")).AddTranslateOp(
        UsdGeom.XformOp.PrecisionDouble, "moved").Set(Gf.Vec3d(0, 0, 0.5))


def _floor_disabled(stage, layer):
    stage.GetPrimAtPath("/ant/Geometry/floor").GetAttribute("physics:collisionEnabled").Set(False)


def _damping_added(stage, layer):
    stage.GetPrimAtPath(TORSO).CreateAttribute("newton:angularDamping", Sdf.ValueTypeNames.Float).Set(0.5)


def _bodies_swapped(stage, layer):
    joint = stage.GetPrimAtPath(HIP)
    names = [("physics:body0", "physics:body1")]
    b0, b1 = (joint.GetRelationship(n).GetTargets() for n in names[0])
    joint.GetRelationship("physics:body0").SetTargets(b1)
    joint.GetRelationship("physics:body1").SetTargets(b0)
    for a, b in (("physics:localPos0", "physics:localPos1"), ("physics:localRot0", "physics:localRot1")):
        va, vb = joint.GetAttribute(a).Get(), joint.GetAttribute(b).Get()
        joint.GetAttribute(a).Set(vb)
        joint.GetAttribute(b).Set(va)


def _body_added(stage, layer):
    from pxr import UsdGeom, UsdPhysics
    extra = UsdGeom.Cube.Define(stage, "/ant/Geometry/extra_block")
    extra.GetSizeAttr().Set(0.1)
    UsdPhysics.RigidBodyAPI.Apply(extra.GetPrim())
    UsdPhysics.CollisionAPI.Apply(extra.GetPrim())
    UsdPhysics.MassAPI.Apply(extra.GetPrim()).GetMassAttr().Set(1.0)


def rewritten(out: Path, reference: Path, edit) -> Path:
    """The reference with `edit(stage, layer)` in a new strongest sublayer."""
    shutil.copytree(reference, out)
    (out / "Layers").mkdir(exist_ok=True)
    root = Sdf.Layer.FindOrOpen(str(next(out.glob("*.usda"))))
    layer = Sdf.Layer.CreateNew(str(out / "Layers" / "hand_edit.usda"))
    root.subLayerPaths.insert(0, "./Layers/hand_edit.usda")
    root.Save()
    stage = Usd.Stage.Open(root.identifier)
    stage.SetEditTarget(layer)
    edit(stage, layer)
    layer.Save()
    return out


@pytest.mark.parametrize("edit, gate, says", [
    (_gravity, "physics_scene", "gravity (0, 0, -1.62) m/s^2"),
    (_floor_disabled, "static_scenery", "static collider /ant/Geometry/floor: Plane enabled=True approximation=None "
                                        "became Plane enabled=False"),
    (_damping_added, "simulator_attributes", f"{TORSO}: newton:angularDamping = 0.5 added"),
    (_bodies_swapped, "joint_body_order", f"joint {HIP}: body0 and body1 swapped"),
    (_body_added, "body_correspondence", "extra candidate body /ant/Geometry/extra_block"),
], ids=lambda v: v if isinstance(v, str) and "_" in v and " " not in v else None)
def test_a_difference_no_measure_sees_is_found_and_named_in_the_refusal(edit, gate, says, tmp_path):
    broken = rewritten(tmp_path / "input", ANT, edit)
    detection = detect(ANT, broken)
    assert found_by_freeze(detection) == graded_without_faults(ANT_CASE, broken)
    sentences = [f.reason for f in detection.differences if f.family is None]
    said = [s for s in sentences if s.startswith(f"{gate}: ") and says in s]
    assert said and said[0] in [f.reason for f in detection.unnamed], sentences
    refusal = detection.refusal()
    assert refusal.startswith(f"the input differs from the reference in {len(detection.unnamed)} way(s) that no "
                              f"fault kind names (compared 13 bodies, 12 joints, ") and says in refusal, refusal


def test_a_named_fault_beside_an_unnamed_difference_is_refused(tmp_path, capfd):
    from usd_repair_verifier.commands.cli import main
    from usd_repair_verifier.profiles.errors import ExitCode

    stage = Usd.Stage.Open(str(XARM / "xarm7.usda"))
    mass = stage.GetPrimAtPath(LINK4).GetAttribute("physics:mass").Get()
    broken = edited(tmp_path / "input", [(LINK4, "physics:mass", mass * 1000), ("/PhysicsScene", "physics:gravityMagnitude", 1.62)])
    detection = detect(XARM, broken)
    assert [(f.kind, f.target) for f in detection.faults] == [("mass_changed", LINK4)]
    assert [f.reason.split(":")[0] for f in detection.unnamed] == ["physics_scene"]
    code = main(["freeze", "--reference", str(XARM), "--input", str(broken), "--out", str(tmp_path / "case")])
    out, err = capfd.readouterr()
    assert f"found f1: mass_changed on {LINK4}" in out and "differs, but no fault kind names it: physics_scene" in out, out
    assert code == ExitCode.REFUSED and not (tmp_path / "case").exists()
    assert "refusing to freeze: the input differs from the reference in 1 way(s) that no fault kind names" in err, err
    assert "physics_scene: scene /PhysicsScene: gravity" in err, err


def test_a_static_part_moved_with_its_collider_is_one_fault(tmp_path):
    """The floor is a visible part and a collider on one prim: moved, its collider moves with it,
    which is the moved part's fault, not a difference of its own."""
    broken = rewritten(tmp_path / "input", ANT, _floor_moved)
    detection = detect(ANT, broken)
    assert [(f.kind, f.target) for f in detection.faults] == [("component_moved", "/ant/Geometry/floor")]
    assert detection.unnamed == [], detection.refusal()
