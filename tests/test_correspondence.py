"""Body and joint correspondence (usd_repair_verifier.stage_snapshot.correspondence.correspond) on real snapshots.

Reference snapshots come from the committed packages in fixtures/assets/; every
candidate is a real package built in tmp_path (flattened, renamed, re-parented,
edited), read back with read_snapshot, so the reader and the matcher are tested
together on what an agent could submit.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usd_repair_verifier.authoring.inject import inject, root_layer_of
from usd_repair_verifier.stage_snapshot.correspondence import correspond
from usd_repair_verifier.stage_snapshot.read import read_snapshot
from tests import variants

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "fixtures" / "assets"

ANT = "/ant/Geometry/torso"
ANT_FL = f"{ANT}/front_left_leg"
ANT_FR = f"{ANT}/front_right_leg"
ANT_HIP_1 = f"{ANT_FL}/aux_1/hip_1"
ANT_BODIES = 13
ANT_JOINTS = 12

_SNAPSHOTS: dict[str, object] = {}


def reference(asset: str):
    """The committed package's snapshot (read once per test process: snapshots are immutable)."""
    if asset not in _SNAPSHOTS:
        _SNAPSHOTS[asset] = read_snapshot(root_layer_of(ASSETS / asset))
    return _SNAPSHOTS[asset]


def flat_layer(asset: str, dst: Path) -> Path:
    """A one-layer copy of a committed package; returns its root layer."""
    variants.flatten(ASSETS / asset, dst)
    return root_layer_of(dst)


def rename_everywhere(text: str, old_prefix: str, new_prefix: str) -> str:
    """Rewrite every path that starts with old_prefix (whole components) in usda text."""
    return re.sub(re.escape(old_prefix) + r"(?=[/>.\]\s\"])", new_prefix, text)


def assert_identity(match, snap):
    assert match.bodies == {p: p for p in snap.bodies}
    assert match.joints == {p: p for p in snap.joints}
    assert match.extra_bodies == () and match.extra_joints == ()


# --- the reference against itself ---------------------------------------------------------

@pytest.mark.parametrize("asset", ["ant", "hopper", "cabinet_cm", "gripper_m"])
def test_reference_against_itself_is_the_identity_at_zero_cost(asset):
    snap = reference(asset)
    assert snap.bodies and snap.joints
    match = correspond(snap, snap)
    assert_identity(match, snap)
    assert set(match.body_costs) == set(snap.bodies) and set(match.joint_costs) == set(snap.joints)
    assert all(c == pytest.approx(0.0, abs=1e-9) for c in match.body_costs.values()), match.body_costs
    assert all(c == pytest.approx(0.0, abs=1e-9) for c in match.joint_costs.values()), match.joint_costs


@pytest.mark.parametrize("asset", ["ant", "cabinet_cm", "gripper_m"])
def test_a_fresh_read_of_a_flattened_copy_is_the_identity(asset, tmp_path):
    # Same composed stage, other layer layout: same prim paths, so the match must be the identity.
    snap = reference(asset)
    cand = read_snapshot(flat_layer(asset, tmp_path / "flat"))
    match = correspond(snap, cand)
    assert_identity(match, snap)
    assert max(match.body_costs.values()) < 1e-3 and max(match.joint_costs.values()) < 1e-3


# --- renamed namespace ---------------------------------------------------------------------

ANT_RENAMES = {"ant": "robot", "torso": "trunk", "front_left_leg": "leg_a", "aux_1": "thigh_a", "hip_1": "hip_a",
               "ankle_2": "ankle_b", "Body": "Shin", "PhysicsFixedJoint": "Weld", "Geometry": "Parts"}


def renamed_path(path: str, renames: dict[str, str]) -> str:
    return "/".join(renames.get(part, part) for part in path.split("/"))


def test_renamed_namespace_maps_every_element_to_its_renamed_counterpart(tmp_path):
    snap = reference("ant")
    pkg = variants.rename_namespace(ASSETS / "ant", tmp_path / "renamed", ANT_RENAMES)
    cand = read_snapshot(root_layer_of(pkg))
    # The variant really renamed things (else this test proves nothing).
    assert not set(cand.bodies) & set(snap.bodies)
    assert not set(cand.joints) & set(snap.joints)
    assert len(cand.bodies) == ANT_BODIES and len(cand.joints) == ANT_JOINTS

    match = correspond(snap, cand)
    assert match.bodies == {p: renamed_path(p, ANT_RENAMES) for p in snap.bodies}
    assert match.joints == {p: renamed_path(p, ANT_RENAMES) for p in snap.joints}
    assert match.extra_bodies == () and match.extra_joints == ()
    # Only the name tie-breaker separates the costs from the identity's.
    assert max(match.body_costs.values()) <= 0.011
    assert max(match.joint_costs.values()) <= 0.011


def test_same_asset_in_centimetres_is_the_identity(tmp_path):
    # metersPerUnit 0.01 and the whole asset scaled x100: the same world in SI, other stage units.
    snap = reference("ant")
    layer_path = flat_layer("ant", tmp_path / "pkg")
    stage = Usd.Stage.Open(str(layer_path))
    UsdGeom.SetStageMetersPerUnit(stage, 0.01)
    UsdGeom.Xformable(stage.GetPrimAtPath("/ant")).AddScaleOp(opSuffix="units").Set(Gf.Vec3f(100.0, 100.0, 100.0))
    stage.GetRootLayer().Save()
    cand = read_snapshot(layer_path)
    assert cand.meters_per_unit == pytest.approx(0.01)
    for path, body in snap.bodies.items():
        assert math.dist(cand.bodies[path].pose.position, body.pose.position) < 1e-6
        assert cand.bodies[path].shape.extents == pytest.approx(body.shape.extents, abs=1e-6)
    match = correspond(snap, cand)
    assert_identity(match, snap)
    assert max(match.body_costs.values()) < 1e-3 and max(match.joint_costs.values()) < 1e-3


# --- re-parented, world poses kept -----------------------------------------------------------

def test_reparented_under_an_extra_xform_with_world_poses_kept(tmp_path):
    snap = reference("ant")
    layer_path = flat_layer("ant", tmp_path / "pkg")
    layer = Sdf.Layer.FindOrOpen(str(layer_path))
    # An extra level between /ant/Geometry and the torso: it carries half the torso's height,
    # the torso keeps the rest, so every world pose is unchanged.
    extra = Sdf.PrimSpec(layer.GetPrimAtPath("/ant/Geometry"), "Extra", Sdf.SpecifierDef, "Xform")
    translate = Sdf.AttributeSpec(extra, "xformOp:translate", Sdf.ValueTypeNames.Double3)
    translate.default = Gf.Vec3d(0.0, 0.0, 0.5)
    order = Sdf.AttributeSpec(extra, "xformOpOrder", Sdf.ValueTypeNames.TokenArray, variability=Sdf.VariabilityUniform)
    order.default = ["xformOp:translate"]
    # A non-body prim moves too: the floor leaves /ant/Geometry for a new /ant/Scenery scope.
    Sdf.PrimSpec(layer.GetPrimAtPath("/ant"), "Scenery", Sdf.SpecifierDef, "Scope")
    edit = Sdf.BatchNamespaceEdit()
    edit.Add(Sdf.NamespaceEdit.Reparent("/ant/Geometry/torso", "/ant/Geometry/Extra", 0))
    edit.Add(Sdf.NamespaceEdit.Reparent("/ant/Geometry/floor", "/ant/Scenery", 0))
    assert layer.Apply(edit)
    layer.GetAttributeAtPath("/ant/Geometry/Extra/torso.xformOp:translate").default = Gf.Vec3d(0.0, 0.0, 0.25)
    # Sdf moves specs but not the paths that name them: rewrite relationship targets.
    text = rename_everywhere(layer.ExportToString(), "/ant/Geometry/torso", "/ant/Geometry/Extra/torso")
    text = rename_everywhere(text, "/ant/Geometry/floor", "/ant/Scenery/floor")
    assert layer.ImportFromString(text) and layer.Save()  # through the layer: the registry holds it open

    cand = read_snapshot(layer_path)
    moved = lambda p: p.replace("/ant/Geometry/torso", "/ant/Geometry/Extra/torso")  # noqa: E731
    assert set(cand.bodies) == {moved(p) for p in snap.bodies}
    assert set(cand.joints) == {moved(p) for p in snap.joints}
    assert not cand.composition_errors
    for path, body in snap.bodies.items():  # the edit kept every world pose
        got = cand.bodies[moved(path)].pose.position
        assert math.dist(got, body.pose.position) < 1e-6, path

    match = correspond(snap, cand)
    assert match.bodies == {p: moved(p) for p in snap.bodies}
    assert match.joints == {p: moved(p) for p in snap.joints}
    assert match.extra_bodies == () and match.extra_joints == ()
    assert all(cand.joints[moved(p)].problems == () for p in snap.joints)


# --- symmetric parts --------------------------------------------------------------------------

LEG_SWAP = [("front_left_leg", "front_right_leg"), ("aux_1", "aux_2"), ("hip_1", "hip_2"), ("ankle_1", "ankle_2")]


def swap_names(text: str, pairs) -> str:
    for i, (a, b) in enumerate(pairs):
        token = f"zzswap{i}"
        for old, new in ((a, token), (b, a), (token, b)):
            text = re.sub(rf'(?<=[/"]){re.escape(old)}(?=[/">\]\s])', new, text)
    return text


def test_symmetric_legs_with_swapped_names_match_by_geometry(tmp_path):
    snap = reference("ant")
    layer_path = flat_layer("ant", tmp_path / "pkg")
    layer_path.write_text(swap_names(layer_path.read_text(), LEG_SWAP))
    cand = read_snapshot(layer_path)
    assert set(cand.bodies) == set(snap.bodies)  # same names, on the other legs
    # The prim now called front_right_leg has the geometry the reference's front_left_leg had.
    assert math.dist(cand.bodies[ANT_FR].shape.center, snap.bodies[ANT_FL].shape.center) < 1e-6

    def swapped(path: str) -> str:
        return "/".join(dict(LEG_SWAP + [(b, a) for a, b in LEG_SWAP]).get(part, part) for part in path.split("/"))

    match = correspond(snap, cand)
    assert match.bodies[ANT_FL] == ANT_FR
    assert match.bodies[ANT_FR] == ANT_FL
    assert match.bodies == {p: swapped(p) for p in snap.bodies}
    assert match.joints[ANT_HIP_1] == f"{ANT_FR}/aux_2/hip_2"
    assert match.joints == {p: swapped(p) for p in snap.joints}
    assert match.extra_bodies == () and match.extra_joints == ()


# --- added, deleted and duplicated elements ------------------------------------------------

def test_dummy_body_is_reported_as_extra(tmp_path):
    snap = reference("ant")
    layer_path = flat_layer("ant", tmp_path / "pkg")
    stage = Usd.Stage.Open(str(layer_path))
    dummy = UsdGeom.Xform.Define(stage, "/ant/Geometry/dummy")
    dummy.AddTranslateOp().Set(Gf.Vec3d(2.0, -1.5, 0.3))
    UsdPhysics.RigidBodyAPI.Apply(dummy.GetPrim())
    cube = UsdGeom.Cube.Define(stage, "/ant/Geometry/dummy/box")
    cube.GetSizeAttr().Set(0.2)
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    stage.GetRootLayer().Save()

    cand = read_snapshot(layer_path)
    assert "/ant/Geometry/dummy" in cand.bodies
    match = correspond(snap, cand)
    assert match.extra_bodies == ("/ant/Geometry/dummy",)
    assert match.bodies == {p: p for p in snap.bodies}
    assert match.joints == {p: p for p in snap.joints} and match.extra_joints == ()


def test_a_dummy_body_identical_to_a_real_one_does_not_take_its_match(tmp_path):
    # A copy of a leg's lower body, placed where the real one is: the name breaks the tie.
    snap = reference("ant")
    layer_path = flat_layer("ant", tmp_path / "pkg")
    layer = Sdf.Layer.FindOrOpen(str(layer_path))
    body = f"{ANT_FL}/aux_1/Body"
    assert Sdf.CopySpec(layer, body, layer, f"{ANT_FL}/aux_1/Body_copy")
    del layer.GetPrimAtPath(f"{ANT_FL}/aux_1/Body_copy").nameChildren["ankle_1"]  # bodies only
    layer.Save()
    cand = read_snapshot(layer_path)
    match = correspond(snap, cand)
    assert match.bodies[body] == body
    assert match.extra_bodies == (f"{ANT_FL}/aux_1/Body_copy",)


def test_deleted_body_maps_to_none(tmp_path):
    snap = reference("ant")
    layer_path = flat_layer("ant", tmp_path / "pkg")
    layer = Sdf.Layer.FindOrOpen(str(layer_path))
    leaf = f"{ANT}/back_leg/aux_3/Body"          # the lower leg; its ankle joint lives under it
    del layer.GetPrimAtPath(f"{ANT}/back_leg/aux_3").nameChildren["Body"]
    layer.Save()
    cand = read_snapshot(layer_path)
    assert leaf not in cand.bodies and len(cand.bodies) == ANT_BODIES - 1

    match = correspond(snap, cand)
    assert match.bodies[leaf] is None and match.body_costs[leaf] == math.inf
    assert match.candidate_body(leaf) not in cand.bodies
    assert {p: c for p, c in match.bodies.items() if p != leaf} == {p: p for p in snap.bodies if p != leaf}
    assert match.joints[f"{leaf}/ankle_3"] is None
    assert match.extra_bodies == () and match.extra_joints == ()


def test_deleted_joint_maps_to_none(tmp_path):
    snap = reference("ant")
    layer_path = flat_layer("ant", tmp_path / "pkg")
    layer = Sdf.Layer.FindOrOpen(str(layer_path))
    del layer.GetPrimAtPath(f"{ANT_FL}/aux_1").nameChildren["hip_1"]
    layer.Save()
    cand = read_snapshot(layer_path)
    assert ANT_HIP_1 not in cand.joints

    match = correspond(snap, cand)
    assert match.joints[ANT_HIP_1] is None and match.joint_costs[ANT_HIP_1] == math.inf
    assert {p: c for p, c in match.joints.items() if p != ANT_HIP_1} == {p: p for p in snap.joints if p != ANT_HIP_1}
    assert match.bodies == {p: p for p in snap.bodies}
    assert match.extra_bodies == () and match.extra_joints == ()


def test_duplicate_joint_is_extra_and_the_original_keeps_its_match(tmp_path):
    snap = reference("ant")
    pkg = tmp_path / "dup"
    inject(ASSETS / "ant", pkg, [("redundant_constraint", ANT_HIP_1)], seed=7)
    cand = read_snapshot(root_layer_of(pkg))
    duplicate = f"{ANT_HIP_1}_1"   # the injector names a copy from words the package has
    assert duplicate in cand.joints and len(cand.joints) == ANT_JOINTS + 1

    match = correspond(snap, cand)
    assert match.joints[ANT_HIP_1] == ANT_HIP_1          # the name breaks the tie
    assert match.joints == {p: p for p in snap.joints}
    assert match.extra_joints == (duplicate,)
    assert match.extra_bodies == ()


def test_duplicate_joint_tie_is_broken_by_name_in_either_listing_order(tmp_path):
    # The duplicate sorts *before* the original: the name still decides.
    snap = reference("ant")
    layer_path = flat_layer("ant", tmp_path / "pkg")
    layer = Sdf.Layer.FindOrOpen(str(layer_path))
    assert Sdf.CopySpec(layer, ANT_HIP_1, layer, f"{ANT_FL}/aux_1/a_hip_copy")
    layer.Save()
    cand = read_snapshot(layer_path)
    assert list(cand.joints).index(f"{ANT_FL}/aux_1/a_hip_copy") < list(cand.joints).index(ANT_HIP_1)
    match = correspond(snap, cand)
    assert match.joints[ANT_HIP_1] == ANT_HIP_1
    assert match.extra_joints == (f"{ANT_FL}/aux_1/a_hip_copy",)


# --- several single-axis joints between the same bodies ------------------------------------

HOPPER_ROOT = "/hopper/Geometry/torso"
HOPPER_RENAMES = {"rootx": "j_c", "rooty": "j_a", "rootz": "j_b"}


def test_hopper_root_joints_match_by_axis_and_type_not_name(tmp_path):
    snap = reference("hopper")
    for name, (type_, axis) in {"rootx": ("prismatic", "X"), "rooty": ("revolute", "Y"), "rootz": ("prismatic", "Z")}.items():
        joint = snap.joints[f"{HOPPER_ROOT}/{name}"]
        assert (joint.type, joint.axis, joint.body0, joint.body1) == (type_, axis, None, HOPPER_ROOT)

    pkg = variants.rename_namespace(ASSETS / "hopper", tmp_path / "renamed", HOPPER_RENAMES)
    cand = read_snapshot(root_layer_of(pkg))
    assert {f"{HOPPER_ROOT}/{n}" for n in HOPPER_RENAMES.values()} <= set(cand.joints)

    match = correspond(snap, cand)
    for old, new in HOPPER_RENAMES.items():
        assert match.joints[f"{HOPPER_ROOT}/{old}"] == f"{HOPPER_ROOT}/{new}", (old, match.joints)
    assert match.extra_joints == ()


def test_hopper_root_joints_with_names_permuted_follow_axis_and_type(tmp_path):
    # Worse than new names: each joint carries the name of another one. Names are only a tie-breaker.
    snap = reference("hopper")
    layer_path = flat_layer("hopper", tmp_path / "pkg")
    layer_path.write_text(swap_names(layer_path.read_text(), [("rootx", "rootz")]))
    cand = read_snapshot(layer_path)
    assert cand.joints[f"{HOPPER_ROOT}/rootx"].axis == "Z" and cand.joints[f"{HOPPER_ROOT}/rootz"].axis == "X"
    match = correspond(snap, cand)
    assert match.joints[f"{HOPPER_ROOT}/rootx"] == f"{HOPPER_ROOT}/rootz"
    assert match.joints[f"{HOPPER_ROOT}/rootz"] == f"{HOPPER_ROOT}/rootx"
    assert match.joints[f"{HOPPER_ROOT}/rooty"] == f"{HOPPER_ROOT}/rooty"


# --- faults keep the match ---------------------------------------------------------------------

@pytest.mark.parametrize("asset, target", [
    ("ant", ANT_HIP_1),
    ("cabinet_cm", "/Cabinet/Joints/DrawerSlide"),
    ("gripper_m", "/Gripper/Joints/Wrist"),
])
def test_joint_frame_fault_keeps_the_joint_matched(asset, target, tmp_path):
    snap = reference(asset)
    pkg = tmp_path / "broken"
    inject(ASSETS / asset, pkg, [("joint_frame", target)], seed=7)
    cand = read_snapshot(root_layer_of(pkg))
    moved = math.dist(cand.joints[target].frame1.position, snap.joints[target].frame1.position)
    assert moved > 1e-3  # the fault is real
    match = correspond(snap, cand)
    assert match.joints == {p: p for p in snap.joints}
    assert match.bodies == {p: p for p in snap.bodies}
    assert match.extra_joints == ()


@pytest.mark.parametrize("kind, target", [
    ("joint_graph", "/hopper/Geometry/torso/thigh/leg/foot/foot_joint"),
    ("joint_limit_units", "/hopper/Geometry/torso/thigh/leg/leg_joint"),
    ("joint_state", "/hopper/Geometry/torso/thigh/leg/leg_joint"),
])
def test_other_joint_faults_keep_the_joint_matched(kind, target, tmp_path):
    snap = reference("hopper")
    pkg = tmp_path / "broken"
    inject(ASSETS / "hopper", pkg, [(kind, target)], seed=7)
    cand = read_snapshot(root_layer_of(pkg))
    match = correspond(snap, cand)
    assert match.joints == {p: p for p in snap.joints}
    assert match.bodies == {p: p for p in snap.bodies}


# --- a moved part -------------------------------------------------------------------------------

@pytest.mark.parametrize("offset", [0.05, 0.1])
def test_a_moved_part_keeps_its_match(tmp_path, offset):
    # The lower front-left leg (a leaf body) translated by 6 % / 12 % of the asset's size; nothing
    # else is near where it went, so the only sensible match is still itself.
    snap = reference("ant")
    leaf = f"{ANT_FL}/aux_1/Body"
    layer_path = flat_layer("ant", tmp_path / "pkg")
    stage = Usd.Stage.Open(str(layer_path))
    translate = stage.GetPrimAtPath(leaf).GetAttribute("xformOp:translate")
    translate.Set(translate.Get() + Gf.Vec3d(0.0, 0.0, offset))
    stage.GetRootLayer().Save()
    cand = read_snapshot(layer_path)
    assert math.dist(cand.bodies[leaf].pose.position, snap.bodies[leaf].pose.position) == pytest.approx(offset, rel=1e-5)

    match = correspond(snap, cand)
    assert match.bodies[leaf] == leaf, match.body_costs[leaf]
    assert match.extra_bodies == ()


def test_a_slightly_moved_part_keeps_its_match(tmp_path):
    # The control for the test above: 2 cm (2.5 % of the asset) is tolerated.
    snap = reference("ant")
    leaf = f"{ANT_FL}/aux_1/Body"
    layer_path = flat_layer("ant", tmp_path / "pkg")
    stage = Usd.Stage.Open(str(layer_path))
    translate = stage.GetPrimAtPath(leaf).GetAttribute("xformOp:translate")
    translate.Set(translate.Get() + Gf.Vec3d(0.0, 0.0, 0.02))
    stage.GetRootLayer().Save()
    match = correspond(snap, read_snapshot(layer_path))
    assert match.bodies[leaf] == leaf and match.extra_bodies == ()


def _solver_assign(cost, bound):
    """_assign's matching as the solver gives it, without the obvious-case shortcut."""
    from scipy.optimize import linear_sum_assignment

    n, m = cost.shape
    never = 2.0 * bound + 1.0
    real = np.where(np.isfinite(cost) & (cost <= bound), cost, never)
    padded = np.full((n + m, m + n), never)
    padded[:n, :m] = real
    padded[:n, m:][np.diag_indices(n)] = bound
    padded[n:, :m][np.diag_indices(m)] = bound
    padded[n:, m:] = 0.0
    rows, cols = linear_sum_assignment(padded)
    return sorted((int(r), int(c)) for r, c in zip(rows, cols) if r < n and c < m and real[r, c] <= bound)


def test_the_obvious_matching_shortcut_agrees_with_the_solver():
    """Near-identity costs (a repair) take the shortcut; crowded ones fall back to the solver."""
    from usd_repair_verifier.stage_snapshot.correspondence import _assign, _unique_best

    rng = np.random.Generator(np.random.PCG64(7))
    shortcut_taken = 0
    for trial in range(400):
        n, m = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        cost = rng.random((n, m)) * 2.0
        if trial % 2:  # a repair: each row has one clearly cheapest column
            for r in range(min(n, m)):
                cost[r, r] = rng.random() * 0.05
        if trial % 7 == 0:
            cost[0, 0] = np.nan
        if trial % 5 == 0 and m > 1:
            cost[:, 1] = cost[:, 0]  # ties: never decided by the shortcut
        shortcut_taken += _unique_best(np.where(np.isfinite(cost) & (cost <= 1.25), cost, 3.5), 1.25) is not None
        assert sorted(_assign(cost, 1.25)) == _solver_assign(cost, 1.25), cost
    assert 50 < shortcut_taken < 400  # both paths were exercised
