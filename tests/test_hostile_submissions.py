"""Hostile submissions, end to end through the operator's grading session.

Every submission here is built in tmp_path from a copy of a committed case's
reference/ (an otherwise perfect repair: only the attack can lower its 1.0) or
input/ (scores 0), then graded by `tests.grade_in_process.grade_warm`, i.e. the session of
`pytest checks --case ... --submission ... --out ...` with the sealed arguments, run in this
process by the warm grader (its validity gate in a capped child, as in the command). For each:
- the session exits 0 and the status is never `infrastructure_error` (a hostile
  input is the agent's problem, not the verifier's), and no verifier traceback
  appears outside pytest's FAILURES section (failing checks and gates are
  measurements: their assertion output is expected there);
- OUT/reward.json is written by the verifier;
- either the reward is 0.0 with status `invalid` / `preservation_failed` and a
  reason naming the gate or rule and the offending part or file, or (inputs that
  are legitimately gradable) the submission is graded and scores no more than
  the honest repair.

`python -m pytest tests/test_hostile_submissions.py -s` prints a table of every
hostile input and how it ended (per process: under -n the workers' tables are
not shown).
"""
from __future__ import annotations

import json
import math
import os
import random
import re
import resource
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usd_repair_verifier.scoring.run import RunResult
from tests.inner_loop import representatives
from tests.grade_in_process import grade_warm
from tests import variants

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
ANT = CASES / "ant_two_joint_faults"
CABINET = CASES / "cabinet_drawer_door"

# The ant (metres). Bodies: torso, each leg, its aux_N and its Body; joints: a fixed
# joint per leg, hip_N and ankle_N. The faults target hip_1 (frame) and ankle_2
# (limit units); the back leg is healthy throughout.
ANT_HIP_1 = "/ant/Geometry/torso/front_left_leg/aux_1/hip_1"
ANT_TORSO = "/ant/Geometry/torso"
ANT_TIP = "/ant/Geometry/torso/back_leg/aux_3/Body"            # a moving leaf body
ANT_TIP_GEOM = ANT_TIP + "/third_ankle_geom"                     # its visible capsule, also its collider
ANT_HIP_3 = "/ant/Geometry/torso/back_leg/aux_3/hip_3"          # a healthy revolute joint

# The cabinet (centimetres). The faults target the two joints; bodies are healthy.
CAB_SHELF = "/Cabinet/Carcass/Visuals/Shelf"
CAB_TOP = "/Cabinet/Carcass/Visuals/Top"
CAB_PANEL = "/Cabinet/Door/Visuals/Panel"
CAB_DOOR = "/Cabinet/Door"
CAB_DOOR_COLLIDERS = ("/Cabinet/Door/Colliders/Panel", "/Cabinet/Door/Knob")
CAB_DRAWER = "/Cabinet/Drawer"
CAB_DRAWER_COLLIDERS = tuple(f"/Cabinet/Drawer/Colliders/{n}" for n in ("Front", "Bottom", "Left", "Right", "Back")) + (
    "/Cabinet/Drawer/Handle",)

TRACEBACK_MARKERS = ("Traceback (most recent call last)", "INTERNALERROR", "Fatal Python error", "Segmentation fault",
                     "core dumped")


# --- the table of outcomes --------------------------------------------------------

@pytest.fixture(scope="session")
def outcome_table():
    rows: list[tuple[str, str, str, str]] = []
    yield rows
    if not rows:
        return
    width = max(len(r[0]) for r in rows)
    lines = [f"{'hostile input':<{width}}  {'status':<20}  {'reward':<6}  first reason", "-" * (width + 100)]
    for name, status, reward, reason in sorted(rows):
        lines.append(f"{name:<{width}}  {status:<20}  {reward:<6}  {reason}")
    print("\n\nHostile submissions: how each ended\n" + "\n".join(lines))


def first_reason(grade: dict) -> str:
    reasons = grade.get("reasons") or []
    text = reasons[0] if reasons else (grade.get("infrastructure_error") or "")
    text = " ".join(str(text).split())
    return text if len(text) <= 150 else text[:147] + "..."


# --- grading and the common assertions --------------------------------------------

def verifier_tracebacks(r: RunResult) -> list[str]:
    """Traceback markers outside pytest's FAILURES section (which holds failing checks/gates)."""
    kept, in_failures = [], False
    for line in r.stdout.splitlines():
        if re.match(r"^=+ FAILURES =+$", line):
            in_failures = True
            continue
        if in_failures and re.match(r"^=+ .+ =+$", line):
            in_failures = False
        if not in_failures:
            kept.append(line)
    rest = "\n".join(kept) + "\n" + r.stderr
    return [m for m in TRACEBACK_MARKERS if m in rest]


def grade(name: str, case: Path, submission: Path, out: Path, table: list) -> RunResult:
    r = grade_warm(case, submission, out)
    g = r.grade
    if g is not None:
        reward = r.reward.get("authored_usd") if r.reward else None
        table.append((name, str(g.get("status")), "-" if reward is None else f"{reward:.4g}", first_reason(g)))
    else:
        table.append((name, "NO grade.json", "-", f"exit {r.exit_code}"))
    err = r.stderr if len(r.stderr) <= 5000 else r.stderr[:2000] + "\n[...]\n" + r.stderr[-3000:]
    tail = f"\nexit {r.exit_code}\nSTDOUT:\n{r.stdout[-4000:]}\nSTDERR:\n{err}"
    assert g is not None, "no grade.json" + tail
    assert g["status"] != "infrastructure_error", f"infrastructure error on a hostile input: {g.get('infrastructure_error')}" + tail
    assert r.exit_code == 0, tail
    assert not verifier_tracebacks(r), f"verifier traceback in the output: {verifier_tracebacks(r)}" + tail
    assert (out / "reward.json").is_file() and r.reward is not None and set(r.reward) == {"authored_usd"}, tail
    assert r.reward["authored_usd"] == g["authored_usd"]
    return r


def assert_rejected(r: RunResult, status: str, gate: str, words: tuple[str, ...]) -> None:
    g = r.grade
    assert r.reward == {"authored_usd": 0.0}, g.get("reasons")
    assert g["status"] == status, (g["status"], g.get("reasons"))
    if status == "invalid":
        assert g["submission_valid"] is False
        failed = g["validity"][gate]
    else:
        assert g["submission_valid"] is True and g["preservation_pass"] is False
        failed = g["preservation"][gate]
    assert failed["passed"] is False, failed
    # The headline reasons name the failing gate; the gate's report names the offending part/file.
    assert any(reason.startswith(f"{gate}:") for reason in g["reasons"]), g["reasons"]
    said = json.dumps(failed)
    missing = [w for w in words if w not in said]
    assert not missing, f"{gate} does not name {missing}: {said[:3000]}"


def assert_graded_no_better(r: RunResult, ceiling: float = 1.0) -> None:
    g = r.grade
    assert g["status"] == "graded", (g["status"], g.get("reasons"))
    assert 0.0 <= r.reward["authored_usd"] <= ceiling


# --- building blocks ---------------------------------------------------------------

def copy_of(case: Path, side: str, tmp_path: Path, name: str = "pkg") -> Path:
    return variants.copy_package(case / side, tmp_path / name)


def root_of(pkg: Path) -> Path:
    return next(p for p in pkg.iterdir() if p.suffix.lower() in (".usd", ".usda", ".usdc", ".usdz"))


def add_to_root_text(pkg: Path, text: str) -> None:
    """Append prims (usda text) to the root layer."""
    root = root_of(pkg)
    root.write_text(root.read_text() + "\n" + text + "\n")


def add_sublayer(pkg: Path, path: str, strongest: bool = False) -> None:
    layer = Sdf.Layer.FindOrOpen(str(root_of(pkg)))
    paths = list(layer.subLayerPaths)
    paths.insert(0 if strongest else len(paths), path)
    layer.subLayerPaths = paths
    layer.Save()


def in_root(pkg: Path, edit: Callable[[Usd.Stage], None]) -> Path:
    variants.author_in_root_layer(pkg, edit)
    return pkg


def scaled(stage: Usd.Stage, path: str, factor: float) -> None:
    """Multiply the prim's scale op by factor (adding one when it has none)."""
    xf = UsdGeom.Xformable(stage.GetPrimAtPath(path))
    ops = [op for op in xf.GetOrderedXformOps() if op.GetOpType() == UsdGeom.XformOp.TypeScale]
    if ops:
        ops[0].Set(Gf.Vec3f(*(float(c) * factor for c in ops[0].Get())))
    else:
        xf.AddScaleOp().Set(Gf.Vec3f(factor, factor, factor))


# --- attacks on the reference: preservation ----------------------------------------

@dataclass(frozen=True)
class Attack:
    case: Path
    build: Callable[[Path, Path], Path]   # (copy of the case's reference, tmp_path) -> submission
    gate: str                             # the preservation gate that must fail
    words: tuple[str, ...]                # what its report must name


def _delete_body(pkg, tmp):
    variants.remove_prim_everywhere(pkg, ANT_TIP)
    return pkg


def _deactivate_body(pkg, tmp):
    return in_root(pkg, lambda s: s.GetPrimAtPath(ANT_TIP).SetActive(False))


def _hide(path):
    return lambda pkg, tmp: in_root(pkg, lambda s: UsdGeom.Imageable(s.GetPrimAtPath(path)).MakeInvisible())


def _guide(path):
    return lambda pkg, tmp: in_root(
        pkg, lambda s: UsdGeom.Imageable(s.GetPrimAtPath(path)).CreatePurposeAttr().Set(UsdGeom.Tokens.guide))


def _reshape(path, factor=1.5):
    return lambda pkg, tmp: in_root(pkg, lambda s: scaled(s, path, factor))


def _remove_rigid_body(pkg, tmp):
    variants.remove_api_schema(pkg, ANT_TIP, "PhysicsRigidBodyAPI")
    return pkg


def _kinematic(pkg, tmp):
    return in_root(pkg, lambda s: UsdPhysics.RigidBodyAPI(s.GetPrimAtPath(ANT_TIP)).CreateKinematicEnabledAttr().Set(True))


def _disable_body(pkg, tmp):
    return in_root(pkg, lambda s: UsdPhysics.RigidBodyAPI(s.GetPrimAtPath(ANT_TIP)).CreateRigidBodyEnabledAttr().Set(False))


def _collision_disabled(colliders):
    def build(pkg, tmp):
        def edit(stage):
            for path in colliders:
                UsdPhysics.CollisionAPI(stage.GetPrimAtPath(path)).CreateCollisionEnabledAttr().Set(False)
        return in_root(pkg, edit)
    return build


def _collision_api_removed(colliders):
    def build(pkg, tmp):
        for path in colliders:
            variants.remove_api_schema(pkg, path, "PhysicsCollisionAPI")
        return pkg
    return build


def _dummy_body(pkg, tmp):
    def edit(stage):
        body = UsdGeom.Xform.Define(stage, "/ant/Geometry/dummy_body")
        body.AddTranslateOp().Set(Gf.Vec3d(2.0, 0.0, 0.5))
        UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
        cube = UsdGeom.Cube.Define(stage, "/ant/Geometry/dummy_body/box")
        cube.CreateSizeAttr(0.2)
        UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    return in_root(pkg, edit)


def _extra_joint(pkg, tmp):
    def edit(stage):
        joint = UsdPhysics.FixedJoint.Define(stage, "/ant/Geometry/extra_joint")
        joint.CreateBody0Rel().SetTargets([Sdf.Path(ANT_TORSO)])
        joint.CreateBody1Rel().SetTargets([Sdf.Path(ANT_TIP)])
    return in_root(pkg, edit)


def _healthy_limits_in_radians(pkg, tmp):
    def edit(stage):
        joint = UsdPhysics.RevoluteJoint(stage.GetPrimAtPath(ANT_HIP_3))
        for attr in (joint.GetLowerLimitAttr(), joint.GetUpperLimitAttr()):
            attr.Set(math.radians(attr.Get()))
    return in_root(pkg, edit)


def _cabinet_drawer_mass_x100(pkg, tmp):
    return in_root(pkg, lambda s: s.GetPrimAtPath(CAB_DRAWER).GetAttribute("physics:mass").Set(350.0))


def _cabinet_shrink_collider(pkg, tmp):
    return in_root(pkg, lambda s: scaled(s, CAB_DOOR_COLLIDERS[0], 0.5))


def _cabinet_in_metres(pkg, tmp):
    """Units attack: the root layer says metres, nothing rescaled: the cabinet is 100 times too big."""
    layer = Sdf.Layer.FindOrOpen(str(root_of(pkg)))
    layer.pseudoRoot.SetInfo("metersPerUnit", 1.0)
    layer.Save()
    return pkg


PRESERVATION_ATTACKS = {
    # the ant (a real converted asset)
    "ant_delete_body_specs": Attack(ANT, _delete_body, "body_correspondence", (ANT_TIP,)),
    "ant_deactivate_body": Attack(ANT, _deactivate_body, "body_correspondence", (ANT_TIP,)),
    "ant_hide_visible_part": Attack(ANT, _hide(ANT_TIP_GEOM), "retained_visible_components", ("third_ankle_geom",)),
    "ant_visible_part_purpose_guide": Attack(ANT, _guide(ANT_TIP_GEOM), "retained_visible_components",
                                             ("third_ankle_geom",)),
    "ant_remove_rigid_body_api": Attack(ANT, _remove_rigid_body, "body_correspondence", (ANT_TIP,)),
    "ant_body_made_kinematic": Attack(ANT, _kinematic, "healthy_body_properties", (ANT_TIP, "kinematic")),
    "ant_body_disabled": Attack(ANT, _disable_body, "healthy_body_properties", (ANT_TIP, "enabled")),
    "ant_collision_disabled": Attack(ANT, _collision_disabled((ANT_TIP_GEOM,)), "collision_support", (ANT_TIP,)),
    "ant_collision_api_removed": Attack(ANT, _collision_api_removed((ANT_TIP_GEOM,)), "collision_support", (ANT_TIP,)),
    "ant_dummy_rigid_body": Attack(ANT, _dummy_body, "body_correspondence", ("dummy_body",)),
    "ant_extra_joint": Attack(ANT, _extra_joint, "joint_count", ("extra_joint",)),
    "ant_healthy_joint_limits_in_radians": Attack(ANT, _healthy_limits_in_radians, "healthy_joints",
                                                  ("hip_3", "range")),
    "ant_reshape_visible_part": Attack(ANT, _reshape(ANT_TIP_GEOM), "retained_visible_components",
                                       ("third_ankle_geom",)),
    # the cabinet (centimetres): geometry, collision, units
    "cabinet_hide_shelf": Attack(CABINET, _hide(CAB_SHELF), "retained_visible_components", ("Shelf",)),
    "cabinet_top_purpose_guide": Attack(CABINET, _guide(CAB_TOP), "retained_visible_components", ("Top",)),
    "cabinet_reshape_door_panel": Attack(CABINET, _reshape(CAB_PANEL), "retained_visible_components", ("Panel",)),
    "cabinet_door_collision_disabled": Attack(CABINET, _collision_disabled(CAB_DOOR_COLLIDERS), "collision_support",
                                              (CAB_DOOR,)),
    "cabinet_drawer_collision_api_removed": Attack(CABINET, _collision_api_removed(CAB_DRAWER_COLLIDERS),
                                                   "collision_support", (CAB_DRAWER,)),
    "cabinet_door_collider_shrunk": Attack(CABINET, _cabinet_shrink_collider, "collision_support", (CAB_DOOR,)),
    "cabinet_drawer_mass_x100": Attack(CABINET, _cabinet_drawer_mass_x100, "healthy_body_properties",
                                       (CAB_DRAWER, "mass.mass")),
    "cabinet_root_layer_says_metres": Attack(CABINET, _cabinet_in_metres, "body_correspondence",
                                             ("/Cabinet/Carcass", "/Cabinet/Door", "/Cabinet/Drawer")),
}


# The inner loop: the first five attacks (every preservation attack also runs on one asset in
# tests/test_hostile_preservation.py's inner loop); the full suite every one.
@pytest.mark.parametrize("name", representatives(list(PRESERVATION_ATTACKS), list(PRESERVATION_ATTACKS)[:5]))
def test_attack_on_the_reference_fails_preservation(name, tmp_path, outcome_table):
    attack = PRESERVATION_ATTACKS[name]
    submission = attack.build(copy_of(attack.case, "reference", tmp_path), tmp_path)
    r = grade(name, attack.case, submission, tmp_path / "out", outcome_table)
    assert_rejected(r, "preservation_failed", attack.gate, attack.words)


# --- the repair under a stronger broken opinion -------------------------------------

def test_repair_under_a_stronger_broken_opinion_is_graded_unrepaired(tmp_path, outcome_table):
    submission = copy_of(ANT, "input", tmp_path)
    variants.repair_in_sublayer(submission, ANT / "reference", ANT_HIP_1, "physics:localPos1", stronger=False)
    assert (submission / "Payload" / "repairs" / "repair.usda").is_file()
    r = grade("ant_repair_in_weaker_sublayer", ANT, submission, tmp_path / "out", outcome_table)
    assert_graded_no_better(r, 0.0)
    passed = {c["fault"]: c["passed"] for c in r.grade["checks"]}
    assert passed == {"f1": False, "f2": False}
    assert r.grade["targeted_repair_fraction"] == 0.0


# --- paths ----------------------------------------------------------------------------

@dataclass(frozen=True)
class PathAttack:
    case: Path
    side: str
    build: Callable[[Path, Path], Path]
    rule: str
    words: tuple[str, ...]


def _sublayer_the_answer(pkg, tmp):
    # The broken input, with the case's own intact physics layer sublayered on top:
    # if it were followed, both faults would be "repaired".
    add_sublayer(pkg, str(ANT / "reference" / "Payload" / "Physics.usda"), strongest=True)
    return pkg


def _absolute_texture_outside(pkg, tmp):
    outside = tmp / "outside" / "wood.png"
    outside.parent.mkdir()
    shutil.copy2(pkg / "textures" / "wood.png", outside)
    root = pkg / "cabinet.usda"
    root.write_text(root.read_text().replace("@./textures/wood.png@", f"@{outside}@"))
    return pkg


def _dotdot_sublayer_outside(pkg, tmp):
    outside = tmp / "outside" / "Physics.usda"
    outside.parent.mkdir()
    shutil.copy2(pkg / "Payload" / "Physics.usda", outside)
    add_sublayer(pkg, "../outside/Physics.usda")
    return pkg


def _symlinked_file_outside(pkg, tmp):
    # Byte-identical content: only the link escapes the package.
    outside = tmp / "outside" / "Physics.usda"
    outside.parent.mkdir()
    shutil.move(pkg / "Payload" / "Physics.usda", outside)
    os.symlink(outside, pkg / "Payload" / "Physics.usda")
    return pkg


def _symlinked_folder_outside(pkg, tmp):
    outside = tmp / "outside" / "textures"
    outside.parent.mkdir()
    shutil.move(pkg / "textures", outside)
    os.symlink(outside, pkg / "textures", target_is_directory=True)
    return pkg


def _usdz_member_escape(pkg, tmp):
    variants.write_usdz(pkg / "assets" / "parts.usdz", {"parts.usda": '#usda 1.0\ndef Xform "Part"\n{\n}\n'})
    variants.write_file(pkg / "assets" / "secret.usda", '#usda 1.0\ndef Xform "Secret"\n{\n}\n')  # exists, but not in the zip
    add_to_root_text(pkg, 'def Xform "Extra" (\n    prepend references = @./assets/parts.usdz[../secret.usda]@</Secret>\n)\n{\n}')
    return pkg


def _http_reference(pkg, tmp):
    add_to_root_text(pkg, 'def Xform "Remote" (\n    prepend references = @http://example.com/ant.usda@</ant>\n)\n{\n}')
    return pkg


PATH_ATTACKS = {
    "ant_input_sublayers_case_reference_absolute": PathAttack(
        ANT, "input", _sublayer_the_answer, "dependencies_inside", ("absolute", "reference/Payload/Physics.usda")),
    "cabinet_texture_absolute_outside": PathAttack(
        CABINET, "reference", _absolute_texture_outside, "dependencies_inside", ("absolute", "outside/wood.png")),
    "ant_sublayer_dotdot_outside": PathAttack(
        ANT, "reference", _dotdot_sublayer_outside, "dependencies_inside", ("../outside/Physics.usda",)),
    "ant_symlinked_file_outside": PathAttack(
        ANT, "reference", _symlinked_file_outside, "resource_limits", ("Payload/Physics.usda", "symlink")),
    "cabinet_symlinked_folder_outside": PathAttack(
        CABINET, "reference", _symlinked_folder_outside, "resource_limits", ("textures", "symlink")),
    "ant_usdz_member_escape": PathAttack(
        ANT, "reference", _usdz_member_escape, "dependencies_inside", ("parts.usdz", "../secret.usda")),
    "ant_http_reference": PathAttack(
        ANT, "reference", _http_reference, "dependencies_inside", ("http://example.com/ant.usda",)),
}


@pytest.mark.parametrize("name", list(PATH_ATTACKS))
def test_dependency_escape_is_invalid(name, tmp_path, outcome_table):
    attack = PATH_ATTACKS[name]
    submission = attack.build(copy_of(attack.case, attack.side, tmp_path), tmp_path)
    r = grade(name, attack.case, submission, tmp_path / "out", outcome_table)
    assert_rejected(r, "invalid", attack.rule, attack.words)


# --- agent-written result files -------------------------------------------------------

AGENT_FILES = ("reward.json", "grade.json", "Payload/reward.json", "results/grade.json")


def plant_results(pkg: Path, value: float) -> dict[str, bytes]:
    planted = {}
    for rel in AGENT_FILES:
        body = {"authored_usd": value} if rel.endswith("reward.json") else {
            "status": "graded", "authored_usd": value, "objective_success": True}
        planted[rel] = variants.write_file(pkg / rel, json.dumps(body)).read_bytes()
    return planted


@pytest.mark.parametrize("side, planted_value, expected", [("input", 1.0, 0.0), ("reference", 0.3, 1.0)])
def test_agent_written_results_are_never_read(side, planted_value, expected, tmp_path, outcome_table):
    submission = copy_of(ANT, side, tmp_path)
    planted = plant_results(submission, planted_value)
    out = tmp_path / "out"
    r = grade(f"ant_{side}_with_own_reward_{planted_value}", ANT, submission, out, outcome_table)
    assert r.grade["status"] == "graded", r.grade["reasons"]
    assert r.reward == {"authored_usd": expected}
    assert json.loads((out / "reward.json").read_text()) == {"authored_usd": expected}
    assert r.grade["authored_usd"] == expected and "digests" in r.grade and "checks" in r.grade
    for rel, data in planted.items():  # untouched, and the submission's files are not the outputs
        assert (submission / rel).read_bytes() == data
        assert not (submission / rel).samefile(out / Path(rel).name)


# --- package structure ----------------------------------------------------------------

@dataclass(frozen=True)
class Structure:
    build: Callable[[Path], Path]   # tmp_path -> submission
    rule: str
    words: tuple[str, ...]


def ant_copy_edited(edit: Callable[[Path], None]) -> Callable[[Path], Path]:
    """A submission builder (tmp_path -> submission): the ant case's reference copied into
    tmp_path, then edit(package)."""
    def build(tmp: Path) -> Path:
        pkg = copy_of(ANT, "reference", tmp)
        edit(pkg)
        return pkg
    return build


@ant_copy_edited
def _no_root(pkg):
    (pkg / "root").mkdir()
    shutil.move(pkg / "ant.usda", pkg / "root" / "ant.usda")


def _empty_folder(tmp):
    (tmp / "empty").mkdir()
    return tmp / "empty"


def _does_not_exist(tmp):
    return tmp / "no_such_submission"


@ant_copy_edited
def _malformed_root(pkg):
    text = (pkg / "ant.usda").read_text()
    (pkg / "ant.usda").write_text(text[: len(text) // 2])  # cut in the middle of a prim


@ant_copy_edited
def _random_bytes_usdc(pkg):
    (pkg / "ant.usda").unlink()
    variants.write_file(pkg / "root.usdc", random.Random(4).randbytes(4096))


@ant_copy_edited
def _billion_points_crate(pkg):
    (pkg / "geo").mkdir()
    variants.crate_claiming_points(pkg / "geo" / "hull.usdc", 5000, 1_000_000_000)
    assert (pkg / "geo" / "hull.usdc").stat().st_size < 10_000
    add_to_root_text(pkg, 'def "Hull" (\n    prepend references = @./geo/hull.usdc@</M>\n)\n{\n}')


@ant_copy_edited
def _sparse_2gb(pkg):
    with open(pkg / "Payload" / "cache.bin", "wb") as fh:
        fh.truncate(2 * 1024**3)


@ant_copy_edited
def _fifo(pkg):
    # Named and sublayered like a layer: opening it would block USD forever.
    os.mkfifo(pkg / "Payload" / "pipe.usda")
    add_sublayer(pkg, "./Payload/pipe.usda")


def _nested_prims(depth: int):
    @ant_copy_edited
    def build(pkg):
        text = "#usda 1.0\n" + "".join('def "N" {\n' for _ in range(depth)) + "}\n" * depth
        variants.write_file(pkg / "deep" / "nest.usda", text)
        add_sublayer(pkg, "./deep/nest.usda")
    return build


STRUCTURES = {
    "two_root_layers": Structure(ant_copy_edited(lambda pkg: shutil.copy2(pkg / "ant.usda", pkg / "ant_fixed.usda")),
                                 "single_root_layer", ("ant.usda", "ant_fixed.usda")),
    "no_root_layer_only_a_subfolder": Structure(_no_root, "single_root_layer", ("no root layer",)),
    "empty_folder": Structure(_empty_folder, "single_root_layer", ("empty",)),
    "submission_does_not_exist": Structure(_does_not_exist, "local_package", ("no_such_submission", "does not exist")),
    "malformed_root_usda": Structure(_malformed_root, "layers_parse", ("ant.usda",)),
    "random_bytes_root_usdc": Structure(_random_bytes_usdc, "layers_parse", ("root.usdc",)),
    "empty_root_usda": Structure(ant_copy_edited(lambda pkg: (pkg / "ant.usda").write_text("")), "layers_parse",
                                 ("ant.usda", "does not parse")),
    "root_sublayers_itself": Structure(ant_copy_edited(lambda pkg: add_sublayer(pkg, "./ant.usda")), "layers_parse",
                                       ("ant.usda", "sublayers itself")),
    "usdz_root_not_a_zip": Structure(ant_copy_edited(lambda pkg: shutil.move(pkg / "ant.usda", pkg / "ant.usdz")),
                                     "layers_parse", ("ant.usdz", "zip")),
    "crate_claims_a_billion_points": Structure(_billion_points_crate, "layers_parse", ("geo/hull.usdc", "points")),
    "sparse_2gb_file": Structure(_sparse_2gb, "resource_limits", ("Payload/cache.bin",)),
    "fifo_sublayered": Structure(_fifo, "resource_limits", ("Payload/pipe.usda", "FIFO")),
    "20000_nested_prims": Structure(_nested_prims(20_000), "layers_parse", ("deep/nest.usda",)),
}


@pytest.mark.parametrize("name", list(STRUCTURES))
def test_broken_package_structure_is_invalid(name, tmp_path, outcome_table):
    structure = STRUCTURES[name]
    submission = structure.build(tmp_path)
    r = grade(name, ANT, submission, tmp_path / "out", outcome_table)
    assert_rejected(r, "invalid", structure.rule, structure.words)


def test_moderately_nested_prims_are_graded(tmp_path, outcome_table):
    """500 nested empty prims parse and compose: legitimately gradable, and no better than the repair."""
    submission = _nested_prims(500)(tmp_path)
    r = grade("500_nested_prims", ANT, submission, tmp_path / "out", outcome_table)
    assert_graded_no_better(r, 1.0)


# --- profile limits ----------------------------------------------------------------------

LOW_LIMITS = {"max_points": 10, "max_prims": 200}   # the ant reference: 94 prim specs, 0 points


@pytest.fixture
def low_limit_case(tmp_path) -> Path:
    case = tmp_path / "case"
    shutil.copytree(ANT, case, symlinks=True)
    profile = json.loads((case / "profile.json").read_text())
    profile["limits"] = dict(LOW_LIMITS)
    (case / "profile.json").write_text(json.dumps(profile, indent=2, sort_keys=True))
    return case


def test_lowered_limits_still_let_the_reference_score_one(low_limit_case, tmp_path, outcome_table):
    submission = copy_of(low_limit_case, "reference", tmp_path)
    r = grade("low_limits_control_reference", low_limit_case, submission, tmp_path / "out", outcome_table)
    assert r.grade["status"] == "graded" and r.reward == {"authored_usd": 1.0}, r.grade["reasons"]
    assert "limits: 200 prims, 10 points" in r.grade["validity"]["resource_limits"]["reason"]


def _mesh_points(pkg: Path) -> None:
    points = ", ".join(f"({i * 0.01}, 0, 2)" for i in range(50))
    add_to_root_text(pkg, f'def Mesh "Extra"\n{{\n    point3f[] points = [{points}]\n}}')


def _many_prims(pkg: Path) -> None:
    add_to_root_text(pkg, "\n".join(f'def Xform "Extra_{i}"\n{{\n}}' for i in range(150)))


@pytest.mark.parametrize("name, build, words", [
    ("mesh_past_max_points", _mesh_points, ("max_points=10", "ant.usda", "Extra")),
    ("prims_past_max_prims", _many_prims, ("more than 200 prim specs", "max_prims=200")),
])
def test_past_the_profile_limits_is_invalid(name, build, words, low_limit_case, tmp_path, outcome_table):
    submission = copy_of(low_limit_case, "reference", tmp_path)
    build(submission)
    r = grade(name, low_limit_case, submission, tmp_path / "out", outcome_table)
    assert_rejected(r, "invalid", "resource_limits", words)


# --- hostile inputs the verifier once mishandled (found by this suite, now fixed) -----------

def _stage_metres_per_unit(value: float):
    def build(pkg, tmp):
        layer = Sdf.Layer.FindOrOpen(str(root_of(pkg)))
        layer.pseudoRoot.SetInfo("metersPerUnit", value)
        layer.Save()
        return pkg
    return build


@pytest.mark.parametrize("name, value", [
    pytest.param("cabinet_metres_per_unit_0", 0.0),
    pytest.param("cabinet_metres_per_unit_negative", -0.01),
    pytest.param("cabinet_metres_per_unit_1e300", 1e300),
])
def test_non_physical_stage_units_are_not_an_infrastructure_error(name, value, tmp_path, outcome_table):
    """A units attack that no honest repair would make: rejected or preservation-failed, reward 0, never a crash."""
    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, hard))  # a crash leaves no core file
    submission = _stage_metres_per_unit(value)(copy_of(CABINET, "reference", tmp_path), tmp_path)
    r = grade(name, CABINET, submission, tmp_path / "out", outcome_table)
    assert r.reward == {"authored_usd": 0.0}
    assert r.grade["status"] in ("invalid", "preservation_failed") and r.grade["reasons"], r.grade["reasons"]


def test_file_name_that_is_not_utf8(tmp_path, outcome_table):
    submission = copy_of(ANT, "reference", tmp_path)
    with open(os.path.join(os.fsencode(submission), b"notes_\xff\xfe.txt"), "wb") as fh:
        fh.write(b"agent notes")
    r = grade("ant_reference_plus_non_utf8_file_name", ANT, submission, tmp_path / "out", outcome_table)
    # A stray file is harmless: graded as the repair it holds (or, if the verifier chooses, invalid).
    assert r.grade["status"] in ("graded", "invalid")
    assert r.reward["authored_usd"] in (0.0, 1.0)


def test_healthy_joint_rotation_nan_fails_preservation(tmp_path, outcome_table):
    submission = in_root(copy_of(ANT, "reference", tmp_path), lambda s: s.GetPrimAtPath(ANT_HIP_3).GetAttribute(
        "physics:localRot0").Set(Gf.Quatf(float("nan"), 0.0, 0.0, 0.0)))
    r = grade("ant_healthy_joint_rotation_nan", ANT, submission, tmp_path / "out", outcome_table)
    assert_rejected(r, "preservation_failed", "healthy_joints", ("hip_3",))


# --- once mishandled: a NaN on a targeted joint displaced a healthy joint's match (fixed) -------

ANT_ANKLE_2 = "/ant/Geometry/torso/front_right_leg/aux_2/Body/ankle_2"   # targeted by f2 (limit units)


def test_targeted_joint_rotation_nan_costs_preservation_of_that_joint_only(tmp_path, outcome_table):
    """The reference with the f2 joint's frame rotation made NaN: f1 is repaired, no healthy joint moved.

    f2 targets the joint's range, not its frame: the frame is preserved like a healthy one's,
    so the NaN fails preservation, naming that joint alone (its match displaced no other).
    """
    submission = in_root(copy_of(ANT, "reference", tmp_path), lambda s: s.GetPrimAtPath(ANT_ANKLE_2).GetAttribute(
        "physics:localRot0").Set(Gf.Quatf(float("nan"), 0.0, 0.0, 0.0)))
    r = grade("ant_targeted_joint_rotation_nan", ANT, submission, tmp_path / "out", outcome_table)
    g = r.grade
    assert g["status"] == "preservation_failed" and r.reward == {"authored_usd": 0.0}, g["reasons"]
    assert {c["fault"]: c["passed"] for c in g["checks"]}["f1"] is True
    failures = g["preservation"]["healthy_joints"]["failures"]
    assert failures and all(f["target"].endswith("ankle_2") and "ankle_2" in f["reason"] for f in failures), failures


def test_body_flood_is_refused_before_matching(tmp_path, outcome_table):
    """Hundreds of dummy bodies: refused as invalid at once, never a quadratic match that times out."""
    submission = copy_of(ANT, "reference", tmp_path)
    root = root_of(submission)
    extra = "".join(
        f'\ndef Xform "Dummy{i:04d}" (\n    prepend apiSchemas = ["PhysicsRigidBodyAPI"]\n)\n{{\n}}\n' for i in range(500)
    )
    root.write_text(root.read_text() + extra)
    r = grade("ant_500_dummy_bodies", ANT, submission, tmp_path / "out", outcome_table)
    assert_rejected(r, "invalid", "stage_reads", ("rigid bodies", "beyond any repair"))
