"""Validity is relative to the reference: what the reference itself has is healthy.

A URDF converter welds sensor links to the world and gives each its own articulation root, which
the UsdPhysics parser articulates nothing from; baxter has two. Such a reference must freeze and
grade 1.0 against itself, while a candidate that adds such a root where the reference has none
is still wrong. The same holds for the other rules that used to be absolute: a joint's
relationship problems, inverted limits, and authoring errors (found through the correspondence,
so a renamed namespace keeps them).
"""
from __future__ import annotations

from pathlib import Path

import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usd_repair_verifier.authoring.freeze import freeze
from usd_repair_verifier.authoring.inject import inject
from usd_repair_verifier.profiles.schema import Fault
from tests import mesh_assets, mesh_variants, variants
from tests.grade_in_process import grade
from tests.test_mesh_invariance import JOINT, make_case

ROBOTS = Path(__file__).resolve().parent.parent / "fixtures" / "robots"
ROBOT_CASES = Path(__file__).resolve().parent.parent / "fixtures" / "robot_cases"


def _edit(package: Path, edit) -> Path:
    """Edit the package's content layer (layers/robot.usda of a generated package) in place."""
    stage = Usd.Stage.Open(str(package / "layers" / "robot.usda"))
    edit(stage)
    stage.GetRootLayer().Save()
    return package


def _sensor(stage, name: str = "Sensor", root: bool = True) -> None:
    """A small body welded to the world with its own articulation root (as the converter writes)."""
    body = UsdGeom.Xform.Define(stage, f"/Robot/{name}")
    body.AddTranslateOp().Set(Gf.Vec3d(0.0, 0.3, 0.1))
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    UsdPhysics.MassAPI.Apply(body.GetPrim()).CreateMassAttr(0.01)
    if root:
        UsdPhysics.ArticulationRootAPI.Apply(body.GetPrim())
    UsdGeom.Sphere.Define(stage, f"/Robot/{name}/Shape").CreateRadiusAttr(0.01)
    weld = UsdPhysics.FixedJoint.Define(stage, f"/Robot/{name}Weld")
    weld.CreateBody1Rel().SetTargets([Sdf.Path(f"/Robot/{name}")])
    weld.CreateLocalPos0Attr(Gf.Vec3f(0.0, 0.3, 0.1))


def _package(out: Path, *edits) -> Path:
    pts, faces = mesh_assets.box_mesh()
    package = mesh_assets.two_body_package(out, pts, faces)
    for edit in edits:
        _edit(package, edit)
    return package


@pytest.mark.slow
def test_the_repro_a_welded_sensor_with_its_own_root_freezes(tmp_path):
    """Any fixture reference with a "sensor" body, its own ArticulationRootAPI and a fixed joint
    to the world: `freeze` refused it (the reference scored 0.5 against itself, invalid_roots 2)."""
    ref = _package(tmp_path / "ref", _sensor)
    inject(ref, tmp_path / "input", [("joint_limits", JOINT)], seed=7)
    freeze("sensor", ref, tmp_path / "input", tmp_path / "case", [Fault(id="f1", kind="joint_limits", target=JOINT)])
    assert grade(tmp_path / "case", ref).authored_usd == 1.0


def test_roots_are_valid_where_the_reference_has_them_and_nowhere_else(tmp_path):
    with_sensor = _package(tmp_path / "with", _sensor)
    without = _package(tmp_path / "without", lambda s: _sensor(s, root=False))
    case_with, case_without = make_case(with_sensor, tmp_path / "cw"), make_case(without, tmp_path / "cwo")
    assert grade(case_with, with_sensor).authored_usd == 1.0
    assert grade(case_without, without).authored_usd == 1.0
    added = grade(case_without, with_sensor)            # a root where the reference has none
    assert added.objective_success is False and "invalid_roots" in " ".join(added.reasons)
    dropped = grade(case_with, without)                 # the reference's sensor root removed
    assert dropped.objective_success is False and "root_count" in " ".join(dropped.reasons)
    two = grade(case_with, _package(tmp_path / "two", _sensor, lambda s: _sensor(s, "Sensor2")))
    assert two.objective_success is False


@pytest.mark.slow
def test_baxter_grades_against_itself_and_another_sensor_root_does_not(tmp_path):
    """baxter's two sensor roots (collision_head_link_1 and _2) are its own (its committed case's
    reference grades 1.0: tests/test_robot_cases.py); a third root put on another welded sensor
    link is not."""
    extra = variants.copy_package(ROBOTS / "baxter", tmp_path / "extra")
    variants.author_in_root_layer(extra, lambda stage: UsdPhysics.ArticulationRootAPI.Apply(
        stage.GetPrimAtPath("/baxter/Geometry/base/torso/head/head_camera_link")))
    decision = grade(ROBOT_CASES / "baxter_roots_and_arm", extra)
    assert decision.objective_success is False and "invalid_roots" in " ".join(decision.reasons)


def _dangling_joint(stage) -> None:
    joint = UsdPhysics.FixedJoint.Define(stage, "/Robot/Dangling")
    joint.CreateBody0Rel().SetTargets([Sdf.Path("/Robot/Base")])
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Robot/NoSuchPrim")])


def _inverted(stage) -> None:
    joint = UsdPhysics.RevoluteJoint(stage.GetPrimAtPath(JOINT))
    joint.GetLowerLimitAttr().Set(40.0)
    joint.GetUpperLimitAttr().Set(-40.0)


def _ambiguous_mass(stage) -> None:
    attr = UsdPhysics.MassAPI(stage.GetPrimAtPath("/Robot/Link")).GetMassAttr()
    attr.Set(0.7, Usd.TimeCode(0.0))   # the default says 0.5: an ambiguous authored value


def _invalid_inertia(stage) -> None:
    """A dummy link's inertia as a URDF converter writes it: a zero and a negative moment."""
    UsdPhysics.MassAPI(stage.GetPrimAtPath("/Robot/Link")).GetDiagonalInertiaAttr().Set(Gf.Vec3f(0.0, -0.002, 0.003))


@pytest.mark.parametrize("edit, rule", [(_dangling_joint, "relationships"), (_inverted, "ordered"),
                                        (_ambiguous_mass, "authoring"), (_invalid_inertia, "inertia")],
                         ids=["joint relationship to a missing prim", "inverted limits", "ambiguous mass",
                              "invalid inertia"])
def test_what_the_reference_has_is_its_own(edit, rule, tmp_path):
    """Each reference grades 1.0 against itself, its renamed namespace and its copy in
    centimetres; a candidate
    that brings the same problem into a reference without it fails (the rule still holds)."""
    ref = _package(tmp_path / "ref", edit)
    case = make_case(ref, tmp_path / "c")
    assert grade(case, ref).authored_usd == 1.0, grade(case, ref).reasons
    renamed = variants.rename_namespace(ref, tmp_path / "renamed", {"Link": "Forearm", "Base": "Shoulder"})
    decision = grade(case, renamed)
    assert decision.authored_usd == 1.0, decision.reasons
    decision = grade(case, mesh_variants.centimetres(ref, tmp_path / "cm"))   # the values' last bits move
    assert decision.authored_usd == 1.0, decision.reasons
    healthy = _package(tmp_path / "healthy")
    brought = grade(make_case(healthy, tmp_path / "hc"), ref)
    assert brought.authored_usd < 1.0
