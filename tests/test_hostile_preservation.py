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

from usd_repair_verifier.authoring.inject import root_layer_of
from usd_repair_verifier.scoring.reward import Status
from tests import variants
from tests.grade_in_process import grade
from tests.inner_loop import representatives

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
    # The plane collider itself, not only its visible surface: a half-space has no centre to move.
    assert_fails(submit(tmp_path, ANT, edit), "static_scenery",
                 "static collider /ant/Geometry/floor: plane (0, 0, 1) . x = 0.5 m", "moved 0.5 m along its normal")


def test_floor_tilted(tmp_path):
    def edit(stage):
        UsdGeom.Xformable(stage.GetPrimAtPath("/ant/Geometry/floor")).AddRotateXOp(
            UsdGeom.XformOp.PrecisionDouble, "tilt").Set(3.0)
    assert_fails(submit(tmp_path, ANT, edit), "static_scenery", "static collider /ant/Geometry/floor", "tilted 3 degrees")


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
    from usd_repair_verifier.stage_snapshot import materials
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
    from usd_repair_verifier.authoring.freeze import detect_faults

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


LAYOUTS = ["flattened", "binary", "regrouped", "physics_in_a_sublayer"]
LAYOUT_RUNS = [(case_id, layout) for case_id in HAND_AUTHORED for layout in LAYOUTS]


# The inner loop: every layout, on one case.
@pytest.mark.parametrize("case_id, layout", representatives(
    LAYOUT_RUNS, [r for r in LAYOUT_RUNS if r[0] == "ant_two_joint_faults"], ids=[f"{c}-{l}" for c, l in LAYOUT_RUNS]))
def test_equivalent_layouts_keep_the_reference_grade(case_id, layout, tmp_path):
    build = {"flattened": variants.flatten, "binary": _binary, "regrouped": variants.regroup,
             "physics_in_a_sublayer": variants.split_physics_layer}[layout]
    submission = build(CASES / case_id / "reference", tmp_path / layout)
    d = grade(CASES / case_id, submission)
    assert d.status is Status.GRADED and d.authored_usd == 1.0, d.reasons


# --- visible parts added to a body ------------------------------------------------------

def _clutter(parent: str, count: int = 64, size: float = 0.02):
    """`count` small visible cubes under `parent`, on a grid, in the root layer."""
    def edit(stage):
        for i in range(count):
            cube = UsdGeom.Cube.Define(stage, f"{parent}/Clutter_{i}")
            cube.CreateSizeAttr(size)
            UsdGeom.XformCommonAPI(cube).SetTranslate(Gf.Vec3d(2 * size * (i % 8), 2 * size * (i // 8), 0.0))
    return edit


def test_visible_meshes_added_to_a_healthy_body(tmp_path):
    d = submit(tmp_path, ANT, _clutter(ANT_TORSO))
    assert_fails(d, "retained_visible_components", "added visible part", "on body /ant/Geometry/torso")


def test_one_visible_part_added_to_a_targeted_body_is_still_an_addition(tmp_path):
    """A fault on a body grades its state or mass, not an extra part nobody asked for."""
    d = submit(tmp_path, "hopper_body_and_com", _clutter("/hopper/Geometry/torso/thigh/leg", count=1))
    assert_fails(d, "retained_visible_components", "added visible part", "Clutter_0")


@pytest.mark.slow
def test_a_moved_targeted_part_left_broken_is_not_an_addition(tmp_path):
    """The input of a case whose fault moves a part: the moved part matches nothing, and that is
    its fault's (graded by its checks), so the honest unrepaired input still grades."""
    for case_id in ("cheetah_visual_and_shape", "cabinet_hierarchy_and_visual"):
        d = grade(CASES / case_id, CASES / case_id / "input")
        assert d.status is Status.GRADED, (case_id, d.reasons)


# --- the same attacks on other converted assets ------------------------------------------

OTHER_ASSETS = {
    # case: (a healthy body, a healthy joint and one of its simulator attributes, the floor)
    "hopper_body_and_com": ("/hopper/Geometry/torso", "/hopper/Geometry/torso/thigh/leg/foot/foot_joint",
                            "newton:armature", "/hopper/Geometry/floor"),
    "gen_half_cheetah_1": ("/cheetah/Geometry/torso", "/cheetah/Geometry/torso/bthigh/bthigh_1",
                           "mjc:stiffness", "/cheetah/Geometry/floor"),
    "gen_cartpole_1": ("/tn__cartpole_bC/Geometry/cart", "/tn__cartpole_bC/Geometry/cart/slider",
                       "newton:damping", "/tn__cartpole_bC/Geometry/floor"),
}


def _first_prim(stage, predicate) -> Usd.Prim:
    prim = next((p for p in stage.Traverse() if predicate(p)), None)
    assert prim is not None, "the asset has no such prim"
    return prim


def _material_stiffness_zeroed(stage):
    material = _first_prim(stage, lambda p: p.HasAPI(UsdPhysics.MaterialAPI) and p.HasAttribute("newton:contactStiffness"))
    material.GetAttribute("newton:contactStiffness").Set(0.0)


def _actuator_range_widened(stage):
    actuator = _first_prim(stage, lambda p: p.HasAttribute("mjc:ctrlRange:max"))
    actuator.GetAttribute("mjc:ctrlRange:max").Set(100.0)


def _recolour_a_visible_part(stage):
    """Magenta: the bound material's diffuse colour when one is bound, else the display colour."""
    from pxr import UsdShade

    from usd_repair_verifier.stage_snapshot import materials
    part = _first_prim(stage, lambda p: p.IsA(UsdGeom.Gprim) and not p.IsA(UsdGeom.Plane)
                       and UsdGeom.Imageable(p).ComputePurpose() == UsdGeom.Tokens.default_
                       and UsdGeom.Imageable(p).ComputeVisibility() != UsdGeom.Tokens.invisible)
    if materials.visual_material(part) is None:
        UsdGeom.Gprim(part).CreateDisplayColorAttr(Vt.Vec3fArray([Gf.Vec3f(1, 0, 1)]))
        return
    material, _ = UsdShade.MaterialBindingAPI(part).ComputeBoundMaterial()
    shader, _, _ = material.ComputeSurfaceSource()
    # The attribute that gives the colour: the shader's input, or the material interface input
    # it is connected to (a converted asset's materials use one).
    source = shader.GetInput("diffuseColor")
    producers = source.GetValueProducingAttributes() if source else []
    path = producers[0].GetPath() if producers else shader.GetPath().AppendProperty("inputs:diffuseColor")
    # Those materials may sit inside an instance: open it up first (the same composed values),
    # since an instance proxy cannot be edited.
    ancestor = stage.GetPrimAtPath(path.GetPrimPath())
    while ancestor and not ancestor.IsInstance():
        ancestor = ancestor.GetParent()
    if ancestor:
        ancestor.SetInstanceable(False)
    stage.GetPrimAtPath(path.GetPrimPath()).CreateAttribute(path.name, Sdf.ValueTypeNames.Color3f) \
        .Set(Gf.Vec3f(1, 0, 1))


def _cage(stage):
    cube = UsdGeom.Cube.Define(stage, "/Cage")
    cube.CreateSizeAttr(4.0)
    cube.CreatePurposeAttr(UsdGeom.Tokens.guide)
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())


def _floor_raised(floor):
    def edit(stage):
        UsdGeom.Xformable(stage.GetPrimAtPath(floor)).AddTranslateOp(
            UsdGeom.XformOp.PrecisionDouble, "raise").Set(Gf.Vec3d(0, 0, 0.3))
    return edit


def _joint_value_changed(joint, attribute):
    def edit(stage):
        attr = stage.GetPrimAtPath(joint).GetAttribute(attribute)
        attr.Set(attr.Get() * 3.0 + 1.0)
    return edit


def _physx_added(body):
    def edit(stage):
        stage.GetPrimAtPath(body).CreateAttribute("physxRigidBody:linearDamping", Sdf.ValueTypeNames.Float).Set(50.0)
    return edit


def _attacks(case_id):
    body, joint, attribute, floor = OTHER_ASSETS[case_id]
    return {
        "gravity_zeroed": (lambda s: _scene(s).CreateGravityMagnitudeAttr(0.0), "physics_scene", "gravity"),
        "gravity_reversed": (lambda s: _scene(s).CreateGravityDirectionAttr(Gf.Vec3f(0, 0, 1)), "physics_scene",
                             "gravity"),
        "up_axis_changed": (lambda s: UsdGeom.SetStageUpAxis(s, UsdGeom.Tokens.y), "physics_scene", "up axis Y"),
        "extra_scene": (lambda s: UsdPhysics.Scene.Define(s, "/SecondScene"), "physics_scene", "2 physics scene(s)"),
        "static_clutter_above": (_clutter("/Clutter", size=0.05), "static_scenery", "added visible part /Clutter/"),
        "clutter_on_a_body": (_clutter(body), "retained_visible_components", "added visible part"),
        "static_collider_cage": (_cage, "static_scenery", "added static collider /Cage"),
        "floor_raised": (_floor_raised(floor), "static_scenery", floor.rsplit("/", 1)[-1]),
        "joint_attribute_changed": (_joint_value_changed(joint, attribute), "simulator_attributes", attribute),
        "physx_damping_added": (_physx_added(body), "simulator_attributes", "physxRigidBody:linearDamping", "added"),
        "material_stiffness_zeroed": (_material_stiffness_zeroed, "simulator_attributes", "newton:contactStiffness"),
        "actuator_range_widened": (_actuator_range_widened, "simulator_attributes", "mjc:ctrlRange:max"),
        "visible_part_recoloured": (_recolour_a_visible_part, "healthy_materials", "diffuseColor"),
    }


ATTACK_RUNS = [(case_id, attack) for case_id in OTHER_ASSETS for attack in _attacks("hopper_body_and_com")]


# The inner loop: every attack, on one asset.
@pytest.mark.parametrize("case_id, attack", representatives(
    ATTACK_RUNS, [r for r in ATTACK_RUNS if r[0] == "hopper_body_and_com"], ids=[f"{c}-{a}" for c, a in ATTACK_RUNS]))
def test_preservation_attacks_on_other_assets(case_id, attack, tmp_path):
    edit, gate, *words = _attacks(case_id)[attack]
    assert_fails(submit(tmp_path, case_id, edit), gate, *words)


# --- namespaces the profile adds to the preserved ones -----------------------------------

HOPPER = "hopper_body_and_com"
HOPPER_TORSO = "/hopper/Geometry/torso"
HOPPER_FOOT_JOINT = "/hopper/Geometry/torso/thigh/leg/foot/foot_joint"
HOPPER_LEG_JOINT = "/hopper/Geometry/torso/thigh/leg/leg_joint"


def _case_with_engine_attributes(tmp_path: Path, namespaces: list[str] | None) -> Path:
    """The hopper case, its reference carrying `myengine:` attributes on a body and a joint,
    the profile listing `namespaces` as preserved (absent when None)."""
    import json
    import shutil

    from usd_repair_verifier.profiles.digest import tree_digest

    case = tmp_path / "case"
    shutil.copytree(CASES / HOPPER, case)

    def edit(stage):
        stage.GetPrimAtPath(HOPPER_TORSO).CreateAttribute("myengine:solverIterations", Sdf.ValueTypeNames.Int).Set(8)
        stage.GetPrimAtPath(HOPPER_FOOT_JOINT).CreateAttribute("myengine:compliance",
                                                               Sdf.ValueTypeNames.Double).Set(0.25)
    variants.author_in_root_layer(case / "reference", edit)
    profile = json.loads((case / "profile.json").read_text())
    profile["reference"]["digest"] = tree_digest(case / "reference")
    if namespaces is not None:
        profile["preserved_namespaces"] = namespaces
    (case / "profile.json").write_text(json.dumps(profile, indent=2, sort_keys=True) + "\n")
    return case


def _submit_to(case: Path, tmp_path: Path, edit) -> object:
    sub = variants.copy_package(case / "reference", tmp_path / "submission")
    variants.author_in_root_layer(sub, edit)
    return grade(case, sub)


def _set(path, name, value, type_name=Sdf.ValueTypeNames.Double):
    def edit(stage):
        stage.GetPrimAtPath(path).CreateAttribute(name, type_name).Set(value)
    return edit


def test_a_profile_namespace_is_preserved_like_the_built_in_ones(tmp_path):
    case = _case_with_engine_attributes(tmp_path, ["myengine"])
    d = grade(case, case / "reference")
    assert d.status is Status.GRADED and d.authored_usd == 1.0, d.reasons
    changed = _submit_to(case, tmp_path / "changed", _set(HOPPER_FOOT_JOINT, "myengine:compliance", 0.9))
    assert_fails(changed, "simulator_attributes", "myengine:compliance = 0.9", "0.25")
    fewer = _submit_to(case, tmp_path / "fewer", _set(HOPPER_TORSO, "myengine:solverIterations", 1,
                                                       Sdf.ValueTypeNames.Int))
    assert_fails(fewer, "simulator_attributes", "myengine:solverIterations")


def test_a_profile_namespace_reports_what_the_candidate_adds_and_loses(tmp_path):
    case = _case_with_engine_attributes(tmp_path, ["myengine"])
    added = _submit_to(case, tmp_path / "added", _set(HOPPER_LEG_JOINT, "myengine:compliance", 0.25))
    assert_fails(added, "simulator_attributes", "leg_joint", "myengine:compliance", "added")

    def remove(stage):
        stage.GetPrimAtPath(HOPPER_TORSO).RemoveProperty("myengine:solverIterations")
    lost = _submit_to(case, tmp_path / "lost", remove)
    assert_fails(lost, "simulator_attributes", "myengine:solverIterations", "lost")


def test_a_namespace_the_profile_does_not_list_is_not_compared(tmp_path):
    """The same change under a profile without the field: `myengine:` is nobody's namespace."""
    case = _case_with_engine_attributes(tmp_path, None)
    d = _submit_to(case, tmp_path / "changed", _set(HOPPER_FOOT_JOINT, "myengine:compliance", 0.9))
    assert d.status is Status.GRADED and d.authored_usd == 1.0, d.reasons


def test_a_profile_namespace_is_compared_through_equivalent_layouts(tmp_path):
    case = _case_with_engine_attributes(tmp_path, ["myengine"])
    flat = variants.flatten(case / "reference", tmp_path / "flat")
    assert grade(case, flat).authored_usd == 1.0
    binary = _binary(case / "reference", tmp_path / "binary")
    assert grade(case, binary).authored_usd == 1.0
    renamed = variants.rename_namespace(case / "reference", tmp_path / "renamed", {"torso": "trunk"})
    d = grade(case, renamed)
    assert d.status is Status.GRADED and d.authored_usd == 1.0, d.reasons
    # and the changed value still fails once flattened
    flat_changed = variants.flatten(case / "reference", tmp_path / "flat_changed")
    variants.author_in_root_layer(flat_changed, _set(HOPPER_FOOT_JOINT, "myengine:compliance", 0.9))
    assert_fails(grade(case, flat_changed), "simulator_attributes", "myengine:compliance")
