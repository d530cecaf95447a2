"""Hostile submissions against what preservation now protects beyond bodies and joints.

Each submission starts from a committed case's reference (an otherwise perfect repair:
only the attack can lower its 1.0) or from an honest partial repair, applies one
attack as a stronger opinion in the root layer (or by editing the layer that carries
the value), and is graded in this process (tests/grade_in_process.py: the session and
the reward rule, the same records the operator's command produces). Every attack must
end `preservation_failed` with reward 0 and a reason naming the gate, or score no more
than the honest repair; equivalent layouts must keep their grade.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, Vt

from profiles.inject import root_layer_of
from scoring.reward import Status
from tests import variants
from tests.grade_in_process import grade

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"

ANT = "ant_two_joint_faults"
CABINET = "cabinet_drawer_door"
GRIPPER = "gripper_hull_and_mass"
COMPOSITION = "ant_material_and_composition"
ANT_HIP_1 = "/ant/Geometry/torso/front_left_leg/aux_1/hip_1"
ANT_HIP_3 = "/ant/Geometry/torso/back_leg/aux_3/hip_3"
ANT_TORSO = "/ant/Geometry/torso"
ANT_LEG_GEOM = "/ant/Geometry/torso/back_leg/aux_3/Body/third_ankle_geom"


def submit(tmp_path: Path, case: str, edit, start: str = "reference"):
    """Copy the case's reference (or input), apply `edit(stage)` in its root layer, grade."""
    sub = variants.copy_package(CASES / case / start, tmp_path / "submission")
    stage = Usd.Stage.Open(str(root_layer_of(sub)), Usd.Stage.LoadAll)
    stage.SetEditTarget(stage.GetRootLayer())
    edit(stage)
    stage.GetRootLayer().Save()
    return grade(CASES / case, sub)


def assert_fails(decision, gate: str, *words: str):
    assert decision.status is Status.PRESERVATION_FAILED and decision.authored_usd == 0.0, decision.reasons
    reason = next((r for r in decision.reasons if r.startswith(gate)), None)
    assert reason is not None, decision.reasons
    for word in words:
        assert word in reason, reason


def _scene(stage) -> UsdPhysics.Scene:
    return UsdPhysics.Scene(stage.GetPrimAtPath("/PhysicsScene"))


# --- scene: gravity and up axis ------------------------------------------------------

def test_gravity_zeroed(tmp_path):
    d = submit(tmp_path, ANT, lambda s: _scene(s).CreateGravityMagnitudeAttr(0.0))
    assert_fails(d, "physics_scene", "gravity")


def test_gravity_reversed(tmp_path):
    d = submit(tmp_path, ANT, lambda s: _scene(s).CreateGravityDirectionAttr(Gf.Vec3f(0, 0, 1)))
    assert_fails(d, "physics_scene", "gravity")


def test_gravity_magnitude_in_the_wrong_units(tmp_path):
    # The cabinet is authored in centimetres: 9.81 cm/s^2 is a hundredth of Earth's gravity.
    d = submit(tmp_path, CABINET, lambda s: _scene(s).CreateGravityMagnitudeAttr(9.81))
    assert_fails(d, "physics_scene", "gravity")


def test_gravity_left_to_the_default_of_the_same_direction_keeps_the_grade(tmp_path):
    # Unauthoring an authored Earth gravity along -Z (the up axis) changes nothing resolved.
    def edit(stage):
        _scene(stage).CreateGravityMagnitudeAttr(-float("inf"))
        _scene(stage).CreateGravityDirectionAttr(Gf.Vec3f(0, 0, 0))
    d = submit(tmp_path, ANT, edit)
    assert d.status is Status.GRADED and d.authored_usd == 1.0, d.reasons


def test_extra_physics_scene(tmp_path):
    d = submit(tmp_path, ANT, lambda s: UsdPhysics.Scene.Define(s, "/SecondScene"))
    assert_fails(d, "physics_scene", "2 physics scene(s)")


def test_up_axis_changed(tmp_path):
    d = submit(tmp_path, ANT, lambda s: UsdGeom.SetStageUpAxis(s, UsdGeom.Tokens.y))
    assert_fails(d, "physics_scene", "up axis Y")


def test_scene_payload_deleted_instead_of_repaired(tmp_path):
    """The composition case's fault is a missing scene payload: deleting the arc 'repairs' the error."""
    def edit(stage):
        spec = stage.GetRootLayer().GetPrimAtPath("/PhysicsScene")
        spec.payloadList.ClearEdits()
    d = submit(tmp_path, COMPOSITION, edit)
    assert d.status is Status.PRESERVATION_FAILED and d.authored_usd == 0.0, d.reasons
    assert any(r.startswith(("physics_scene", "simulator_attributes")) for r in d.reasons), d.reasons


# --- static scenery ------------------------------------------------------------------

def test_static_collider_cube_enclosing_the_robot(tmp_path):
    def edit(stage):
        cube = UsdGeom.Cube.Define(stage, "/Cage")
        cube.CreateSizeAttr(3.0)
        cube.CreatePurposeAttr(UsdGeom.Tokens.guide)   # invisible to renders, solid to the simulator
        UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    assert_fails(submit(tmp_path, ANT, edit), "static_scenery", "added static collider /Cage")


def test_visible_meshes_added_above_the_robot(tmp_path):
    def edit(stage):
        for i in range(64):
            cube = UsdGeom.Cube.Define(stage, f"/Clutter/c{i}")
            cube.CreateSizeAttr(0.1)
            UsdGeom.XformCommonAPI(cube).SetTranslate(Gf.Vec3d(0.2 * (i % 8) - 0.7, 0.2 * (i // 8) - 0.7, 2.0))
    assert_fails(submit(tmp_path, ANT, edit), "static_scenery", "added visible part /Clutter/c")


def test_floor_deleted(tmp_path):
    assert_fails(submit(tmp_path, ANT, lambda s: s.GetPrimAtPath("/ant/Geometry/floor").SetActive(False)),
                 "static_scenery", "floor")


def test_floor_raised(tmp_path):
    def edit(stage):
        UsdGeom.Xformable(stage.GetPrimAtPath("/ant/Geometry/floor")).AddTranslateOp(
            UsdGeom.XformOp.PrecisionDouble, "raise").Set(Gf.Vec3d(0, 0, 0.5))
    assert_fails(submit(tmp_path, ANT, edit), "static_scenery", "floor")


def test_floor_collision_disabled(tmp_path):
    def edit(stage):
        UsdPhysics.CollisionAPI(stage.GetPrimAtPath("/ant/Geometry/floor")).CreateCollisionEnabledAttr(False)
    assert_fails(submit(tmp_path, ANT, edit), "static_scenery", "enabled=False")


# --- simulator attributes ------------------------------------------------------------

def test_actuator_gear_zeroed(tmp_path):
    def edit(stage):
        stage.GetPrimAtPath("/ant/Physics/Actuator_0").GetAttribute("mjc:gear").Set(Vt.DoubleArray([0.0] * 6))
    assert_fails(submit(tmp_path, ANT, edit), "simulator_attributes", "mjc:gear")


def test_joint_armature_zeroed_on_a_healthy_joint(tmp_path):
    d = submit(tmp_path, ANT, lambda s: s.GetPrimAtPath(ANT_HIP_3).GetAttribute("newton:armature").Set(0.0))
    assert_fails(d, "simulator_attributes", "newton:armature")


def test_contact_stiffness_zeroed_on_the_physics_material(tmp_path):
    d = submit(tmp_path, ANT, lambda s: s.GetPrimAtPath("/ant/Physics/PhysicsMaterial")
               .GetAttribute("newton:contactStiffness").Set(0.0))
    assert_fails(d, "simulator_attributes", "newton:contactStiffness")


def test_contact_solref_changed_on_a_collider(tmp_path):
    d = submit(tmp_path, ANT, lambda s: s.GetPrimAtPath(ANT_LEG_GEOM).GetAttribute("mjc:solref")
               .Set(Vt.DoubleArray([0.5, 0.1])))
    assert_fails(d, "simulator_attributes", "mjc:solref")


def test_physx_damping_added_to_a_healthy_body(tmp_path):
    def edit(stage):
        stage.GetPrimAtPath(ANT_TORSO).CreateAttribute("physxRigidBody:linearDamping",
                                                       Sdf.ValueTypeNames.Float).Set(50.0)
    assert_fails(submit(tmp_path, ANT, edit), "simulator_attributes", "physxRigidBody:linearDamping", "added")


def test_solver_option_removed_from_the_scene(tmp_path):
    d = submit(tmp_path, ANT, lambda s: s.GetPrimAtPath("/PhysicsScene")
               .GetAttribute("newton:maxSolverIterations").Set(1))
    assert_fails(d, "simulator_attributes", "newton:maxSolverIterations")


def test_simulator_attributes_survive_equivalent_layouts(tmp_path):
    flat = variants.flatten(CASES / ANT / "reference", tmp_path / "flat")
    assert grade(CASES / ANT, flat).authored_usd == 1.0
    renamed = variants.rename_namespace(CASES / ANT / "reference", tmp_path / "renamed",
                                        {"Physics": "Sim", "torso": "body_main"})
    d = grade(CASES / ANT, renamed)
    assert d.status is Status.GRADED and d.authored_usd == 1.0, d.reasons


# --- appearance without a bound material ---------------------------------------------

def _unbound_visible_part(stage) -> Usd.Prim:
    from stage_snapshot import materials
    for prim in stage.Traverse():
        if prim.IsA(UsdGeom.Gprim) and materials.visual_material(prim) is None \
                and UsdGeom.Imageable(prim).ComputeVisibility() != UsdGeom.Tokens.invisible \
                and UsdGeom.Imageable(prim).ComputePurpose() == UsdGeom.Tokens.default_ \
                and not prim.IsA(UsdGeom.Plane):
            return prim
    raise AssertionError("no unbound visible part")


def test_recoloured_unbound_part(tmp_path):
    def edit(stage):
        UsdGeom.Gprim(_unbound_visible_part(stage)).CreateDisplayColorAttr(Vt.Vec3fArray([Gf.Vec3f(1, 0, 1)]))
    assert_fails(submit(tmp_path, ANT, edit), "healthy_materials", "diffuseColor")


def test_translucent_unbound_part(tmp_path):
    def edit(stage):
        UsdGeom.Gprim(_unbound_visible_part(stage)).CreateDisplayOpacityAttr(Vt.FloatArray([0.2]))
    assert_fails(submit(tmp_path, ANT, edit), "healthy_materials", "opacity")


def test_indexed_display_colour_of_the_same_colour_keeps_the_grade(tmp_path):
    """The same colour authored as an indexed primvar is the same surface."""
    def edit(stage):
        prim = _unbound_visible_part(stage)
        primvar = UsdGeom.PrimvarsAPI(prim).GetPrimvar("displayColor")
        colour = primvar.ComputeFlattened()[0]
        primvar.Set(Vt.Vec3fArray([Gf.Vec3f(0, 0, 0), colour]))
        primvar.SetIndices(Vt.IntArray([1]))
        primvar.SetInterpolation(UsdGeom.Tokens.constant)
    d = submit(tmp_path, ANT, edit)
    assert d.status is Status.GRADED and d.authored_usd == 1.0, d.reasons


def test_freeze_finds_a_recoloured_part_as_a_material_fault(tmp_path):
    from profiles.freeze import detect_faults

    reference = CASES / ANT / "reference"
    broken = variants.copy_package(reference, tmp_path / "broken")
    stage = Usd.Stage.Open(str(root_layer_of(broken)), Usd.Stage.LoadAll)
    stage.SetEditTarget(stage.GetRootLayer())
    part = _unbound_visible_part(stage)
    UsdGeom.Gprim(part).CreateDisplayColorAttr(Vt.Vec3fArray([Gf.Vec3f(0.1, 0.9, 0.1)]))
    stage.GetRootLayer().Save()
    faults = detect_faults(reference, broken)
    assert [(f.target, f.kind in ("visual_material", "display_appearance")) for f in faults] == \
        [(str(part.GetPath()), True)]


# --- damage to a targeted element's other properties ---------------------------------

def test_targeted_joint_made_fixed_after_repairing_both_faults(tmp_path):
    def edit(stage):
        stage.GetRootLayer().GetPrimAtPath(ANT_HIP_1) or Sdf.CreatePrimInLayer(stage.GetRootLayer(), ANT_HIP_1)
        stage.GetRootLayer().GetPrimAtPath(ANT_HIP_1).typeName = "PhysicsFixedJoint"
    assert_fails(submit(tmp_path, ANT, edit), "degrees_of_freedom", "hip_1")


def test_collision_disabled_on_the_targeted_finger_instead_of_fixing_its_hull(tmp_path):
    def edit(stage):
        for prim in Usd.PrimRange(stage.GetPrimAtPath("/Gripper/Palm/FingerLeft")):
            if prim.HasAPI(UsdPhysics.CollisionAPI):
                UsdPhysics.CollisionAPI(prim).CreateCollisionEnabledAttr(False)
    assert_fails(submit(tmp_path, GRIPPER, edit), "collision_support", "FingerLeft")


def test_swapped_limits_on_a_targeted_joint_earn_no_progress(tmp_path):
    ankle = "/ant/Geometry/torso/front_right_leg/aux_2/Body/ankle_2"

    def edit(stage):
        joint = stage.GetPrimAtPath(ankle)
        lower, upper = joint.GetAttribute("physics:lowerLimit").Get(), joint.GetAttribute("physics:upperLimit").Get()
        joint.GetAttribute("physics:lowerLimit").Set(upper)
        joint.GetAttribute("physics:upperLimit").Set(lower)
    # Start from the honest one-fault repair (0.5): swapping the unrepaired joint's limits adds nothing.
    sub = variants.copy_package(ROOT / "fixtures" / "submissions" / "ant_two_joint_faults_one_repair",
                                tmp_path / "submission")
    stage = Usd.Stage.Open(str(root_layer_of(sub)), Usd.Stage.LoadAll)
    stage.SetEditTarget(stage.GetRootLayer())
    edit(stage)
    stage.GetRootLayer().Save()
    d = grade(CASES / ANT, sub)
    assert d.authored_usd <= 0.5, (d.authored_usd, d.reasons)
    assert d.targeted_semantic_score <= 0.5


# --- equivalent layouts keep the reference's 1.0 on every hand-authored case ---------

HAND_AUTHORED = sorted(c for c in (p.name for p in CASES.iterdir() if p.is_dir()) if not c.startswith("gen_"))


def _binary(src: Path, dst: Path) -> Path:
    """The flattened stage written as one binary (crate) layer."""
    variants.flatten(src, dst)
    flat = root_layer_of(dst)
    Sdf.Layer.FindOrOpen(str(flat)).Export(str(dst / "binary.usdc"))
    flat.unlink()
    return dst


@pytest.mark.parametrize("layout", ["flattened", "binary"])
@pytest.mark.parametrize("case_id", HAND_AUTHORED)
def test_equivalent_layouts_keep_the_reference_grade(case_id, layout, tmp_path):
    build = {"flattened": variants.flatten, "binary": _binary}[layout]
    submission = build(CASES / case_id / "reference", tmp_path / layout)
    d = grade(CASES / case_id, submission)
    assert d.status is Status.GRADED and d.authored_usd == 1.0, d.reasons
