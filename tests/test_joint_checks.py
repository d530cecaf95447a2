"""Joint and articulation checks (usd_repair_verifier.checks.registry.measure) on real snapshots.

Every comparison starts from a committed package in fixtures/assets/. Candidates
are either the reference snapshot with one Joint/StageSnapshot field replaced
(dataclasses.replace: the exact change and nothing else) or a real package
edited in tmp_path and read back (the reader and the check together).
"""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usd_repair_verifier.checks import joints
from usd_repair_verifier.checks.measurement import Comparison
from usd_repair_verifier.checks.registry import measure
from usd_repair_verifier.authoring.inject import inject, root_layer_of
from usd_repair_verifier.profiles.families import gated_measures, measure_names
from usd_repair_verifier.profiles.vocabulary import DEFAULT_TOLERANCES
from usd_repair_verifier.stage_snapshot import spatial
from usd_repair_verifier.stage_snapshot.correspondence import correspond
from usd_repair_verifier.stage_snapshot.model import Limit, Pose
from usd_repair_verifier.stage_snapshot.read import read_snapshot
from tests import variants

# What all_joints runs on every joint, of the joint family (another family may join the gate).
JOINT_CHECKS = tuple(name for family, name in gated_measures("all_joints") if family == "joint")

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "fixtures" / "assets"
ALL_ASSETS = sorted(p.name for p in ASSETS.iterdir() if p.is_dir())

ANT = "/ant/Geometry/torso"
ANT_FL = f"{ANT}/front_left_leg"
HIP_1 = f"{ANT_FL}/aux_1/hip_1"                  # revolute Z, limits -30..30 (symmetric)
ANKLE_1 = f"{ANT_FL}/aux_1/Body/ankle_1"         # revolute X, limits 30..70 (asymmetric)
ANKLE_2 = f"{ANT}/front_right_leg/aux_2/Body/ankle_2"   # revolute X, limits -70..-30
DRAWER = "/Cabinet/Joints/DrawerSlide"           # prismatic X, 0..40 cm, linear drive
DOOR = "/Cabinet/Joints/DoorHinge"
WRIST = "/Gripper/Joints/Wrist"                  # revolute Z, -170..170 deg, angular drive

TOL = dict(DEFAULT_TOLERANCES)
_SNAPSHOTS: dict[str, object] = {}


def reference(asset: str):
    if asset not in _SNAPSHOTS:
        _SNAPSHOTS[asset] = read_snapshot(root_layer_of(ASSETS / asset))
    return _SNAPSHOTS[asset]


def compare(ref, cand) -> Comparison:
    return Comparison(ref, cand, correspond(ref, cand), dict(TOL))


def with_joint(snap, path: str, **changes):
    return replace(snap, joints={**snap.joints, path: replace(snap.joints[path], **changes)})


def run(cmp, name: str, target: str, input_errors=None, family: str = "joint"):
    return measure(cmp, family, name, target, input_errors=input_errors)


def failing(m) -> set[str]:
    return {name for name, c in m.components.items() if not c.passed}


def quat_about(axis: str, degrees: float):
    half = math.radians(degrees) / 2.0
    v = spatial.AXIS_VECTORS[axis]
    return (math.cos(half), *(math.sin(half) * c for c in v))


def turned(pose: Pose, axis: str, degrees: float) -> Pose:
    """The same origin, the frame turned about one of its own axes."""
    return Pose(pose.position, spatial.normalized(spatial.multiply(pose.rotation, quat_about(axis, degrees))))


def edited_package(asset: str, dst: Path) -> tuple[Path, Usd.Stage]:
    """A copy of a committed package and its stage; edits go to the root layer (the strongest)."""
    variants.copy_package(ASSETS / asset, dst)
    root = root_layer_of(dst)
    return root, Usd.Stage.Open(str(root), Usd.Stage.LoadAll)


def save_and_read(root: Path, stage: Usd.Stage):
    stage.GetRootLayer().Save()
    return read_snapshot(root)


# --- no false failures on real assets -------------------------------------------------------

@pytest.mark.parametrize("asset", ALL_ASSETS)
def test_every_joint_check_passes_reference_against_reference(asset):
    snap = reference(asset)
    assert snap.joints, asset
    cmp = compare(snap, snap)
    for target in joints.targets(snap):
        for name in measure_names("joint"):
            m = run(cmp, name, target)
            assert m.passed is True, f"{asset} {name} {target}: {m.details}"
    m = run(cmp, "roots", "*", family="articulation")
    assert m.passed is True, f"{asset}: {m.details}"


@pytest.mark.parametrize("asset", ALL_ASSETS)
def test_every_joint_check_passes_on_a_flattened_copy(asset, tmp_path):
    # Another layer layout, read afresh: the same composed stage must measure the same.
    snap = reference(asset)
    cand = read_snapshot(root_layer_of(variants.flatten(ASSETS / asset, tmp_path / "flat")))
    cmp = compare(snap, cand)
    for target in joints.targets(snap):
        for name in measure_names("joint"):
            m = run(cmp, name, target)
            assert m.passed is True, f"{asset} {name} {target}: {m.details}"


# --- frame ------------------------------------------------------------------------------------

def test_moved_local_pos1_fails_position_and_sides_position():
    ref = reference("ant")
    j = ref.joints[HIP_1]
    moved = Pose(tuple(c + d for c, d in zip(j.frame1.position, (0.03, -0.02, 0.01))), j.frame1.rotation)
    m = run(compare(ref, with_joint(ref, HIP_1, frame1=moved)), "frame", HIP_1)
    assert m.passed is False
    assert failing(m) == {"position_m", "sides_position_m"}
    offset = math.sqrt(0.03**2 + 0.02**2 + 0.01**2)
    assert m.components["position_m"].error == pytest.approx(offset, rel=1e-6)
    assert m.components["sides_position_m"].error == pytest.approx(offset, rel=1e-3)


def test_moved_local_pos1_by_injection_fails_frame(tmp_path):
    ref = reference("ant")
    (done,) = inject(ASSETS / "ant", tmp_path / "broken", [("joint_frame", HIP_1)], seed=7)
    offset = float(done.note.split(" by ")[1].split()[0])  # "localPos1 moved by X stage units" (metres here)
    m = run(compare(ref, read_snapshot(root_layer_of(tmp_path / "broken"))), "frame", HIP_1)
    assert failing(m) == {"position_m", "sides_position_m"}
    assert m.components["position_m"].error == pytest.approx(offset, rel=1e-3)


@pytest.mark.parametrize("target, axis, other", [(HIP_1, "Z", "X"), (ANKLE_1, "X", "Y"), (DRAWER, "X", "Z")])
def test_frame_turned_about_the_joint_axis_is_the_same_joint(target, axis, other):
    asset = "cabinet_cm" if target == DRAWER else "ant"
    ref = reference(asset)
    j = ref.joints[target]
    assert j.axis == axis
    same = with_joint(ref, target, frame0=turned(j.frame0, axis, 90.0), frame1=turned(j.frame1, axis, 90.0))
    m = run(compare(ref, same), "frame", target)
    assert m.passed is True, m.details

    tilted = with_joint(ref, target, frame0=turned(j.frame0, other, 10.0), frame1=turned(j.frame1, other, 10.0))
    m = run(compare(ref, tilted), "frame", target)
    assert failing(m) == {"axis_deg"}
    assert m.components["axis_deg"].error == pytest.approx(10.0, abs=1e-4)


def test_one_side_turned_fails_the_sides_angle():
    ref = reference("ant")
    j = ref.joints[HIP_1]
    m = run(compare(ref, with_joint(ref, HIP_1, frame1=turned(j.frame1, "Z", 20.0))), "frame", HIP_1)
    assert failing(m) == {"sides_angle_deg"}
    assert m.components["sides_angle_deg"].error == pytest.approx(20.0, abs=1e-4)


def test_fixed_joint_rotation_is_compared_whole():
    ref = reference("ant")
    fixed = f"{ANT_FL}/PhysicsFixedJoint"
    j = ref.joints[fixed]
    assert j.type == "fixed"
    cand = with_joint(ref, fixed, frame0=turned(j.frame0, "Z", 30.0), frame1=turned(j.frame1, "Z", 30.0))
    m = run(compare(ref, cand), "frame", fixed)
    assert failing(m) == {"rotation_deg"}
    assert m.components["rotation_deg"].error == pytest.approx(30.0, abs=1e-4)


# --- range ------------------------------------------------------------------------------------

def test_limits_in_radians_fail_with_the_degree_error():
    ref = reference("ant")
    (limit,) = ref.joints[ANKLE_2].limits
    assert (limit.lower, limit.upper) == pytest.approx((-70.0, -30.0))
    radians = Limit(limit.dof, math.radians(limit.lower), math.radians(limit.upper))
    m = run(compare(ref, with_joint(ref, ANKLE_2, limits=(radians,))), "range", ANKLE_2)
    assert failing(m) == {"travel.lower", "travel.upper"}
    lower, upper = m.components["travel.lower"], m.components["travel.upper"]
    assert lower.error == pytest.approx(70.0 - math.radians(70.0), rel=1e-6)
    assert upper.error == pytest.approx(30.0 - math.radians(30.0), rel=1e-6)
    assert lower.reference == pytest.approx(-70.0) and lower.candidate == pytest.approx(math.radians(-70.0))
    assert lower.tolerance == TOL["limit_angle_deg"]


def test_limits_in_radians_by_injection(tmp_path):
    ref = reference("ant")
    inject(ASSETS / "ant", tmp_path / "broken", [("joint_limit_units", ANKLE_2)], seed=7)
    m = run(compare(ref, read_snapshot(root_layer_of(tmp_path / "broken"))), "range", ANKLE_2)
    assert failing(m) == {"travel.lower", "travel.upper"}
    assert m.components["travel.lower"].error == pytest.approx(70.0 - math.radians(70.0), rel=1e-5)
    # progress: half way back in degrees is half the credit
    # progress: the lower limit half way back (in degrees), the upper one still in radians
    e_lower, e_upper = 70.0 - math.radians(70.0), 30.0 - math.radians(30.0)
    half = Limit("angular", -70.0 + e_lower / 2, math.radians(-30.0))
    m = run(compare(ref, with_joint(ref, ANKLE_2, limits=(half,))), "range", ANKLE_2,
            input_errors={"travel.lower": e_lower, "travel.upper": e_upper})
    assert m.passed is False
    tol = TOL["limit_angle_deg"]
    assert m.progress == pytest.approx(((e_lower / 2) / (e_lower - tol) + 0.0) / 2)


def swapped_sides(joint, limits):
    return dict(body0=joint.body1, body1=joint.body0, targets0=joint.targets1, targets1=joint.targets0,
                frame0=joint.frame1, frame1=joint.frame0, limits=limits)


@pytest.mark.parametrize("target", [ANKLE_1, HIP_1])
def test_swapped_bodies_with_negated_limits_pass_range(target):
    ref = reference("ant")
    j = ref.joints[target]
    (limit,) = j.limits
    negated = (Limit(limit.dof, -limit.upper, -limit.lower),)
    cmp = compare(ref, with_joint(ref, target, **swapped_sides(j, negated)))
    assert cmp.match.joints[target] == target
    for name in ("range", "frame", "graph", "state"):
        m = run(cmp, name, target)
        assert m.passed is True, f"{name}: {m.details}"


def test_swapped_bodies_with_unchanged_asymmetric_limits_fail_range():
    ref = reference("ant")
    j = ref.joints[ANKLE_1]
    m = run(compare(ref, with_joint(ref, ANKLE_1, **swapped_sides(j, j.limits))), "range", ANKLE_1)
    assert failing(m) == {"travel.lower", "travel.upper"}
    assert m.components["travel.lower"].candidate == pytest.approx(-70.0)


def reversed_axis(joint, perpendicular: str, limits):
    return dict(frame0=turned(joint.frame0, perpendicular, 180.0), frame1=turned(joint.frame1, perpendicular, 180.0),
                limits=limits)


def test_reversed_axis_with_negated_limits_passes_range_and_frame():
    ref = reference("ant")
    j = ref.joints[ANKLE_1]
    (limit,) = j.limits
    negated = (Limit(limit.dof, -limit.upper, -limit.lower),)
    cmp = compare(ref, with_joint(ref, ANKLE_1, **reversed_axis(j, "Y", negated)))
    world = spatial.world_axis(cmp.candidate.joints[ANKLE_1].frame0, "X")
    assert spatial.vector_angle_deg(world, spatial.world_axis(j.frame0, "X")) == pytest.approx(180.0)
    for name in ("range", "frame"):
        m = run(cmp, name, ANKLE_1)
        assert m.passed is True, f"{name}: {m.details}"


def test_reversed_axis_with_unchanged_limits():
    ref = reference("ant")
    asymmetric = ref.joints[ANKLE_1]
    m = run(compare(ref, with_joint(ref, ANKLE_1, **reversed_axis(asymmetric, "Z", asymmetric.limits))), "range", ANKLE_1)
    assert failing(m) == {"travel.lower", "travel.upper"}
    assert m.components["travel.lower"].error == pytest.approx(100.0)  # 30 against -70
    # Symmetric limits are their own negation: a reversed axis changes nothing (the control).
    symmetric = ref.joints[HIP_1]
    m = run(compare(ref, with_joint(ref, HIP_1, **reversed_axis(symmetric, "X", symmetric.limits))), "range", HIP_1)
    assert m.passed is True, m.details


def test_prismatic_limits_in_a_centimetre_stage_are_metres():
    ref = reference("cabinet_cm")
    assert ref.meters_per_unit == pytest.approx(0.01)
    drawer = ref.joints[DRAWER]
    assert drawer.type == "prismatic"
    ((dof, lower, upper),) = [(l.dof, l.lower, l.upper) for l in drawer.limits]
    assert dof == "linear" and lower == pytest.approx(0.0) and upper == pytest.approx(0.4)
    (hinge,) = ref.joints[DOOR].limits   # revolute: degrees, not scaled by metersPerUnit
    assert (hinge.lower, hinge.upper) == pytest.approx((0.0, 110.0))


def test_metres_authored_in_a_centimetre_stage_fail_range(tmp_path):
    ref = reference("cabinet_cm")
    root, stage = edited_package("cabinet_cm", tmp_path / "pkg")
    stage.GetPrimAtPath(DRAWER).GetAttribute("physics:upperLimit").Set(0.4)
    cand = save_and_read(root, stage)
    assert cand.joints[DRAWER].limits[0].upper == pytest.approx(0.004)
    m = run(compare(ref, cand), "range", DRAWER)
    assert failing(m) == {"travel.upper"}
    assert m.components["travel.upper"].error == pytest.approx(0.396, rel=1e-4)
    assert m.components["travel.upper"].tolerance == TOL["limit_linear_m"]


def test_limit_removed_and_limit_added_fail_range():
    ref = reference("ant")
    m = run(compare(ref, with_joint(ref, HIP_1, limits=())), "range", HIP_1)
    assert failing(m) == {"travel.lower", "travel.upper"}
    fixed = f"{ANT_FL}/PhysicsFixedJoint"
    m = run(compare(ref, with_joint(ref, fixed, limits=(Limit("cone", -10.0, 10.0),))), "range", fixed)
    assert m.passed is False


# --- state ------------------------------------------------------------------------------------

@pytest.mark.parametrize("field, component", [
    ("enabled", "enabled"),
    ("collision_enabled", "collision_enabled"),
    ("exclude_from_articulation", "exclude_from_articulation"),
])
@pytest.mark.parametrize("asset, target", [("ant", HIP_1), ("gripper_m", WRIST), ("cabinet_cm", DRAWER)])
def test_flipped_joint_flag_fails_its_component(asset, target, field, component):
    ref = reference(asset)
    j = ref.joints[target]
    m = run(compare(ref, with_joint(ref, target, **{field: not getattr(j, field)})), "state", target)
    assert failing(m) == {component}
    assert m.components[component].reference == getattr(j, field)


def test_joint_flags_authored_in_the_package_fail_state(tmp_path):
    ref = reference("gripper_m")
    root, stage = edited_package("gripper_m", tmp_path / "pkg")
    joint = UsdPhysics.Joint(stage.GetPrimAtPath(WRIST))
    joint.CreateJointEnabledAttr().Set(False)
    joint.CreateCollisionEnabledAttr().Set(True)
    joint.CreateExcludeFromArticulationAttr().Set(True)
    m = run(compare(ref, save_and_read(root, stage)), "state", WRIST)
    assert failing(m) == {"enabled", "collision_enabled", "exclude_from_articulation"}


@pytest.mark.parametrize("asset, target", [("gripper_m", WRIST), ("cabinet_cm", DRAWER)])
def test_drive_removed_fails_presence(asset, target):
    ref = reference(asset)
    assert len(ref.joints[target].drives) == 1
    m = run(compare(ref, with_joint(ref, target, drives=())), "state", target)
    assert failing(m) == {"drive.travel.present"}


@pytest.mark.parametrize("asset, target", [("gripper_m", WRIST), ("cabinet_cm", DRAWER)])
def test_drive_stiffness_times_ten_fails_stiffness_and_halfway_is_half_progress(asset, target):
    ref = reference(asset)
    j = ref.joints[target]
    (drive,) = j.drives
    ten = with_joint(ref, target, drives=(replace(drive, stiffness=drive.stiffness * 10.0),))
    m = run(compare(ref, ten), "state", target)
    assert failing(m) == {"drive.travel.stiffness"}
    assert m.components["drive.travel.stiffness"].error == pytest.approx(math.log(10.0))
    input_errors = {name: c.error for name, c in m.components.items()}

    unchanged = run(compare(ref, ten), "state", target, input_errors=input_errors)
    assert unchanged.progress == 0.0
    halfway = with_joint(ref, target, drives=(replace(drive, stiffness=drive.stiffness * math.sqrt(10.0)),))
    m = run(compare(ref, halfway), "state", target, input_errors=input_errors)
    assert m.passed is False
    tol = math.log1p(TOL["drive_relative"])
    assert m.progress == pytest.approx((math.log(10.0) - math.log(10.0) / 2) / (math.log(10.0) - tol))
    assert m.progress == pytest.approx(0.5, abs=0.01)
    repaired = run(compare(ref, ref), "state", target, input_errors=input_errors)
    assert repaired.passed is True and repaired.progress == 1.0


def test_drive_stiffness_by_injection_in_the_package(tmp_path):
    ref = reference("gripper_m")
    inject(ASSETS / "gripper_m", tmp_path / "broken", [("joint_drive", WRIST)], seed=7)
    m = run(compare(ref, read_snapshot(root_layer_of(tmp_path / "broken"))), "state", WRIST)
    assert failing(m) == {"drive.travel.stiffness"}
    assert m.components["drive.travel.stiffness"].error == pytest.approx(math.log(10.0), rel=1e-5)


def test_drive_target_follows_swapped_bodies():
    ref = reference("gripper_m")
    j = ref.joints[WRIST]
    (drive,) = j.drives
    (limit,) = j.limits
    target = replace(drive, target_position=25.0)
    ref_with_target = with_joint(ref, WRIST, drives=(target,))
    negated = replace(drive, target_position=-25.0)
    cand = with_joint(ref, WRIST, drives=(negated,), **swapped_sides(j, (Limit(limit.dof, -limit.upper, -limit.lower),)))
    m = run(compare(ref_with_target, cand), "state", WRIST)
    assert m.passed is True, m.details
    m = run(compare(ref_with_target, with_joint(ref, WRIST, drives=(negated,))), "state", WRIST)
    assert failing(m) == {"drive.travel.target_position"}


# --- graph ------------------------------------------------------------------------------------

def test_body1_retargeted_fails_bodies():
    ref = reference("ant")
    other = f"{ANT}/back_leg/aux_3"
    cmp = compare(ref, with_joint(ref, HIP_1, body1=other, targets1=(other,)))
    assert cmp.match.joints[HIP_1] == HIP_1
    m = run(cmp, "graph", HIP_1)
    assert failing(m) == {"bodies"}


def test_body1_retargeted_by_injection_fails_bodies(tmp_path):
    ref = reference("hopper")
    target = "/hopper/Geometry/torso/thigh/leg/foot/foot_joint"
    inject(ASSETS / "hopper", tmp_path / "broken", [("joint_graph", target)], seed=7)
    m = run(compare(ref, read_snapshot(root_layer_of(tmp_path / "broken"))), "graph", target)
    assert failing(m) == {"bodies"}


def test_type_changed_fails_type(tmp_path):
    ref = reference("ant")
    m = run(compare(ref, with_joint(ref, HIP_1, type="prismatic")), "graph", HIP_1)
    assert failing(m) == {"type"}
    inject(ASSETS / "ant", tmp_path / "broken", [("joint_type", HIP_1)], seed=7)
    cand = read_snapshot(root_layer_of(tmp_path / "broken"))
    assert cand.joints[HIP_1].type == "prismatic"
    m = run(compare(ref, cand), "graph", HIP_1)
    assert failing(m) == {"type"}
    assert (m.components["type"].reference, m.components["type"].candidate) == ("revolute", "prismatic")


def test_relationship_to_a_missing_prim_fails_relationships(tmp_path):
    ref = reference("ant")
    root, stage = edited_package("ant", tmp_path / "pkg")
    UsdPhysics.Joint(stage.GetPrimAtPath(HIP_1)).GetBody1Rel().SetTargets([Sdf.Path(f"{ANT_FL}/aux_1_gone")])
    cand = save_and_read(root, stage)
    assert any("does not exist" in p for p in cand.joints[HIP_1].problems), cand.joints[HIP_1].problems
    cmp = compare(ref, cand)
    assert cmp.match.joints[HIP_1] == HIP_1
    m = run(cmp, "graph", HIP_1)
    assert "relationships" in failing(m)
    assert "bodies" in failing(m)  # the parser reads the missing body as the world


def test_body0_equal_to_body1_fails_graph(tmp_path):
    ref = reference("ant")
    root, stage = edited_package("ant", tmp_path / "pkg")
    UsdPhysics.Joint(stage.GetPrimAtPath(HIP_1)).GetBody0Rel().SetTargets([Sdf.Path(f"{ANT_FL}/aux_1")])
    cand = save_and_read(root, stage)
    j = cand.joints[HIP_1]
    assert j.body0 == j.body1 == f"{ANT_FL}/aux_1"
    assert any("same body" in p for p in j.problems), j.problems
    m = run(compare(ref, cand), "graph", HIP_1)
    assert {"bodies", "relationships"} <= failing(m)


def test_missing_joint_fails_every_check():
    ref = reference("ant")
    cand = replace(ref, joints={p: j for p, j in ref.joints.items() if p != HIP_1})
    cmp = compare(ref, cand)
    assert cmp.match.joints[HIP_1] is None
    for name in JOINT_CHECKS:
        m = run(cmp, name, HIP_1)
        assert m.passed is False, name


# --- redundant constraints ----------------------------------------------------------------

def test_added_duplicate_joint_counts_one_extra(tmp_path):
    ref = reference("ant")
    inject(ASSETS / "ant", tmp_path / "broken", [("redundant_constraint", HIP_1)], seed=7)
    cmp = compare(ref, read_snapshot(root_layer_of(tmp_path / "broken")))
    m = run(cmp, "redundant", HIP_1)
    assert failing(m) == {"extra_joints"}
    assert m.components["extra_joints"].error == 1.0
    assert m.components["extra_joints"].candidate == [f"{HIP_1}_1"]
    # Only the joint between the same two bodies sees it.
    assert run(cmp, "redundant", f"{ANT}/front_right_leg/aux_2/hip_2").passed is True
    assert run(cmp, "redundant", ANKLE_1).passed is True
    assert run(cmp, "existence", HIP_1).passed is True


def test_duplicate_with_bodies_reversed_is_still_redundant():
    ref = reference("ant")
    j = ref.joints[HIP_1]
    dup = replace(j, path=f"{HIP_1}_dup", name="hip_1_dup", **swapped_sides(j, j.limits))
    cmp = compare(ref, replace(ref, joints={**ref.joints, dup.path: dup}))
    assert cmp.match.joints[HIP_1] == HIP_1
    m = run(cmp, "redundant", HIP_1)
    assert m.components["extra_joints"].error == 1.0


# --- articulation roots ------------------------------------------------------------------------

def roots_of(cand, asset: str = "ant"):
    m = run(compare(reference(asset), cand), "roots", "*", family="articulation")
    return m, {name: c.error for name, c in m.components.items()}


def test_removed_articulation_root(tmp_path):
    root, stage = edited_package("ant", tmp_path / "pkg")
    assert stage.GetPrimAtPath(ANT).RemoveAPI(UsdPhysics.ArticulationRootAPI)
    cand = save_and_read(root, stage)
    assert cand.articulation_roots == ()
    m, errors = roots_of(cand)
    assert m.passed is False
    assert errors["root_count"] == 1.0 and errors["invalid_roots"] == 0.0


def test_articulation_root_moved_to_a_leaf_body(tmp_path):
    root, stage = edited_package("ant", tmp_path / "pkg")
    leaf = f"{ANT_FL}/aux_1/Body"
    assert stage.GetPrimAtPath(ANT).RemoveAPI(UsdPhysics.ArticulationRootAPI)
    UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath(leaf))
    cand = save_and_read(root, stage)
    assert [r.path for r in cand.articulation_roots] == [leaf]
    m, errors = roots_of(cand)
    assert m.passed is False
    assert errors["root_count"] == 0.0 and errors["invalid_roots"] == 1.0
    assert leaf in m.components["invalid_roots"].candidate[0]


def test_articulation_root_moved_by_injection(tmp_path):
    inject(ASSETS / "ant", tmp_path / "broken", [("articulation_root", "*")], seed=7)
    m, errors = roots_of(read_snapshot(root_layer_of(tmp_path / "broken")))
    assert m.passed is False
    assert errors["root_count"] + errors["invalid_roots"] >= 1.0


def test_second_root_nested_under_the_first(tmp_path):
    root, stage = edited_package("ant", tmp_path / "pkg")
    UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath(ANT_FL))
    cand = save_and_read(root, stage)
    assert sorted(r.path for r in cand.articulation_roots) == [ANT, ANT_FL]
    m, errors = roots_of(cand)
    assert m.passed is False
    assert errors["root_count"] == 1.0 and errors["invalid_roots"] >= 1.0
    assert any(ANT_FL in entry and "nested" in entry for entry in m.components["invalid_roots"].candidate)


def test_cabinet_root_on_an_ancestor_renamed_still_valid(tmp_path):
    ref = reference("cabinet_cm")
    renames = {"Cabinet": "Kitchen", "Drawer": "Box", "Joints": "Constraints"}
    cand = read_snapshot(root_layer_of(variants.rename_namespace(ASSETS / "cabinet_cm", tmp_path / "r", renames)))
    m, errors = roots_of(cand, "cabinet_cm")
    assert m.passed is True, m.details
    cmp = compare(ref, cand)
    for target in joints.targets(ref):
        for name in JOINT_CHECKS:
            assert run(cmp, name, target).passed is True, (name, target)


# --- the same joint authored the other way round, in a real package ---------------------------

def _joint_api(prim):
    for schema in (UsdPhysics.RevoluteJoint, UsdPhysics.PrismaticJoint):
        if prim.IsA(schema):
            return schema(prim)
    return UsdPhysics.Joint(prim)


@pytest.mark.parametrize("asset, target", [
    ("cabinet_cm", DOOR), ("cabinet_cm", DRAWER), ("cabinet_cm", "/Cabinet/Joints/CarcassAnchor"),
    ("gripper_m", "/Gripper/Joints/FingerLeftSlide"), ("gripper_m", WRIST),
    ("ant", ANKLE_1), ("hopper", "/hopper/Geometry/torso/rooty"),
])
def test_bodies_swapped_in_the_package_is_the_same_joint(asset, target, tmp_path):
    root, stage = edited_package(asset, tmp_path / "pkg")
    j = _joint_api(stage.GetPrimAtPath(target))
    b0, b1 = j.GetBody0Rel().GetTargets(), j.GetBody1Rel().GetTargets()
    p0, p1 = j.GetLocalPos0Attr().Get(), j.GetLocalPos1Attr().Get()
    r0, r1 = j.GetLocalRot0Attr().Get(), j.GetLocalRot1Attr().Get()
    j.GetBody0Rel().SetTargets(b1)
    j.GetBody1Rel().SetTargets(b0)
    j.GetLocalPos0Attr().Set(p1)
    j.GetLocalPos1Attr().Set(p0)
    j.GetLocalRot0Attr().Set(r1)
    j.GetLocalRot1Attr().Set(r0)
    if hasattr(j, "GetLowerLimitAttr") and j.GetLowerLimitAttr().Get() is not None:
        lower, upper = j.GetLowerLimitAttr().Get(), j.GetUpperLimitAttr().Get()
        j.GetLowerLimitAttr().Set(-upper)
        j.GetUpperLimitAttr().Set(-lower)
    cand = save_and_read(root, stage)
    ref = reference(asset)
    assert (cand.joints[target].body0, cand.joints[target].body1) == (ref.joints[target].body1, ref.joints[target].body0)
    cmp = compare(ref, cand)
    assert cmp.match.joints[target] == target
    for name in JOINT_CHECKS:
        m = run(cmp, name, target)
        assert m.passed is True, f"{name}: {m.details}"


@pytest.mark.parametrize("negate", [True, False])
def test_axis_reversed_in_the_package(tmp_path, negate):
    # Both local frames turned 180 deg about X: the hinge axis (Z) now points the other way.
    root, stage = edited_package("cabinet_cm", tmp_path / "pkg")
    j = UsdPhysics.RevoluteJoint(stage.GetPrimAtPath(DOOR))
    flip = Gf.Quatf(0.0, 1.0, 0.0, 0.0)
    j.GetLocalRot0Attr().Set(j.GetLocalRot0Attr().Get() * flip)
    j.GetLocalRot1Attr().Set(j.GetLocalRot1Attr().Get() * flip)
    if negate:
        lower, upper = j.GetLowerLimitAttr().Get(), j.GetUpperLimitAttr().Get()
        j.GetLowerLimitAttr().Set(-upper)
        j.GetUpperLimitAttr().Set(-lower)
    cmp = compare(reference("cabinet_cm"), save_and_read(root, stage))
    assert run(cmp, "frame", DOOR).passed is True
    m = run(cmp, "range", DOOR)
    if negate:
        assert m.passed is True, m.details
    else:  # 0..110 is not its own negation
        assert failing(m) == {"travel.lower", "travel.upper"}


# --- joint types the fixtures do not carry: spherical, distance, D6 ---------------------------

def _cabinet_with(tmp_path: Path, name: str, define, swapped: bool = False):
    """The cabinet package with one more joint between the carcass and the drawer, read back."""
    root, stage = edited_package("cabinet_cm", tmp_path / name)
    bodies = ["/Cabinet/Carcass", "/Cabinet/Drawer"]
    joint = define(stage)
    joint.CreateBody0Rel().SetTargets([bodies[1] if swapped else bodies[0]])
    joint.CreateBody1Rel().SetTargets([bodies[0] if swapped else bodies[1]])
    # The drawer's origin seen from each side (the drawer is at rest): the sides agree.
    carcass = UsdGeom.Xformable(stage.GetPrimAtPath(bodies[0])).ComputeLocalToWorldTransform(0)
    drawer = UsdGeom.Xformable(stage.GetPrimAtPath(bodies[1])).ComputeLocalToWorldTransform(0)
    in_carcass = (drawer * carcass.GetInverse()).ExtractTranslation()
    local = [Gf.Vec3f(in_carcass), Gf.Vec3f(0.0)]
    joint.CreateLocalPos0Attr().Set(local[1] if swapped else local[0])
    joint.CreateLocalPos1Attr().Set(local[0] if swapped else local[1])
    return save_and_read(root, stage)


def test_d6_joint_limits_and_drives_are_read_in_si(tmp_path):
    def define(stage):
        joint = UsdPhysics.Joint.Define(stage, "/Cabinet/Joints/Generic")
        for dof, low, high in (("transX", 0.0, 40.0), ("rotZ", -10.0, 10.0)):
            limit = UsdPhysics.LimitAPI.Apply(joint.GetPrim(), dof)
            limit.CreateLowAttr(low)
            limit.CreateHighAttr(high)
        drive = UsdPhysics.DriveAPI.Apply(joint.GetPrim(), "transX")
        drive.CreateStiffnessAttr(50.0)
        drive.CreateTargetPositionAttr(10.0)
        return joint

    snap = _cabinet_with(tmp_path, "d6", define)
    joint = snap.joints["/Cabinet/Joints/Generic"]
    assert joint.type == "d6"
    limits = {l.dof: (l.lower, l.upper) for l in joint.limits}
    assert limits["TransX"] == pytest.approx((0.0, 0.4))      # centimetres -> metres
    assert limits["RotZ"] == pytest.approx((-10.0, 10.0))     # degrees stay degrees
    (drive,) = joint.drives
    assert drive.dof == "TransX" and drive.target_position == pytest.approx(0.1)


def test_distance_joint_limits_are_read_and_checked(tmp_path):
    def define(max_distance):
        def make(stage):
            joint = UsdPhysics.DistanceJoint.Define(stage, "/Cabinet/Joints/Tether")
            joint.CreateMinDistanceAttr(10.0)
            joint.CreateMaxDistanceAttr(max_distance)
            return joint
        return make

    ref = _cabinet_with(tmp_path, "ref", define(50.0))
    limits = ref.joints["/Cabinet/Joints/Tether"].limits
    assert [(l.lower, l.upper) for l in limits] == [pytest.approx((0.1, 0.5))]
    cand = _cabinet_with(tmp_path, "cand", define(80.0))
    m = run(compare(ref, cand), "range", "/Cabinet/Joints/Tether")
    assert m.passed is False


def _spherical(stage):
    joint = UsdPhysics.SphericalJoint.Define(stage, "/Cabinet/Joints/Ball")
    joint.CreateAxisAttr("X")
    joint.CreateConeAngle0LimitAttr(30.0)
    joint.CreateConeAngle1LimitAttr(20.0)
    return joint


def test_spherical_joint_reference_against_itself(tmp_path):
    ref = _cabinet_with(tmp_path, "ref", _spherical)
    assert ref.joints["/Cabinet/Joints/Ball"].type == "spherical"
    cmp = compare(ref, ref)
    for name in JOINT_CHECKS:
        assert run(cmp, name, "/Cabinet/Joints/Ball").passed is True, name


def test_spherical_joint_with_bodies_swapped_passes_range(tmp_path):
    ref = _cabinet_with(tmp_path, "ref", _spherical)
    cand = _cabinet_with(tmp_path, "cand", _spherical, swapped=True)
    cmp = compare(ref, cand)
    assert cmp.match.joints["/Cabinet/Joints/Ball"] == "/Cabinet/Joints/Ball"
    assert run(cmp, "frame", "/Cabinet/Joints/Ball").passed is True
    m = run(cmp, "range", "/Cabinet/Joints/Ball")
    assert m.passed is True, m.details
