"""Every knock-on the family table declares is a consequence: injecting its cause alone makes it.

A knock-on excuses a failing check because another fault explains it (profiles/families.py). Each
one is shown here to happen: a fault graded by the cause's measure, injected alone on a fixture
asset, fails the knock-on's measure on the element its relation finds, and fails nothing that is
neither its own check nor a declared knock-on. A failure the cause alone does not make is no
knock-on: freeze calls it a fault of its own and preservation keeps it (a kinematic body leaves its
joints' state alone, so a joint disabled beside it is a second fault).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_family_conformance import measurements
from usd_repair_verifier.authoring.inject import inject
from usd_repair_verifier.authoring.usd_messages import muted
from usd_repair_verifier.gates.differences import every_difference
from usd_repair_verifier.gates.exemptions import _related, knock_on_keys
from usd_repair_verifier.profiles.families import FAMILIES, measure_names
from usd_repair_verifier.profiles.vocabulary import FAULT_KINDS

ASSETS = Path(__file__).resolve().parent.parent / "fixtures" / "assets"
SEED = 0
# (asset, fault kind, target): the knock-ons (cause measure, relation, family, measure) it shows.
WITNESSES = {
    ("gripper_m", "joint_missing", "/Gripper/Joints/FingerLeftSlide"): [
        ("joint.existence", "same", "joint", m) for m in ("graph", "frame", "range", "state")],
    ("gripper_m", "joint_graph", "/Gripper/Joints/FingerLeftSlide"): [("joint.graph", "same", "joint", "frame")],
    ("cabinet_cm", "joint_missing", "/Cabinet/Joints/DrawerSlide"): [("joint.existence", "asset", "articulation", "roots")],
    ("cabinet_cm", "joint_graph", "/Cabinet/Joints/DoorHinge"): [("joint.graph", "asset", "articulation", "roots")],
    ("finger", "joint_state", "/finger/Geometry/proximal/distal/distal_1"): [
        ("joint.state", "asset", "articulation", "roots")],
    ("cabinet_cm", "body_state", "/Cabinet/Drawer"): [("body.state", "asset", "articulation", "roots")],
    ("ball_in_cup", "redundant_constraint", "/tn__ballincup_j97/Geometry/ball/ball_x"): [
        ("joint.redundant", "parallel_joints", "joint", "redundant")],
    ("cabinet_cm", "joint_type", "/Cabinet/Joints/DoorHinge"): [("joint.graph", "same", "joint", "range")],
    ("gripper_m", "joint_type", "/Gripper/Joints/FingerLeftSlide"): [("joint.graph", "same", "joint", "state")],
    ("ball_in_cup", "body_state", "/tn__ballincup_j97/Geometry/ball"): [
        ("body.state", "attached_joints", "joint", "graph")],
    ("gripper_m", "component_moved", "/Gripper/Palm/FingerRight/Mesh"): [
        ("geometry.placement", "owner_body", "collision", "coverage"),
        ("geometry.placement", "collider_owner_body", "collision", "free_space"),
        ("geometry.placement", "owner_body", "mass", "center_of_mass")],
    ("half_cheetah", "component_moved", "/cheetah/Geometry/torso/torso"): [
        ("geometry.placement", "owner_body", "mass", "inertia"),
        ("geometry.placement", "owner_body", "mass", "inertia_orientation")],
    ("gripper_m", "component_reshaped", "/Gripper/Palm/FingerRight/Mesh"): [
        ("geometry.shape", "same", "geometry", "placement"),
        ("geometry.shape", "owner_body", "collision", "coverage"),
        ("geometry.shape", "collider_owner_body", "collision", "free_space"),
        ("geometry.shape", "owner_body", "mass", "center_of_mass"),
        ("geometry.shape", "owner_body", "mass", "inertia"),
        ("geometry.shape", "owner_body", "mass", "inertia_orientation")],
    ("ant", "component_reshaped", "/ant/Geometry/torso/front_left_leg/aux_1_geom"): [
        ("geometry.shape", "owner_body", "mass", "mass")],
    ("ant", "collision_disabled", "/ant/Geometry/torso/front_right_leg/aux_2"): [
        ("collision.coverage", "same", "mass", "mass"), ("collision.coverage", "same", "mass", "inertia_orientation")],
    ("gripper_m", "collision_disabled", "/Gripper/Palm/FingerRight"): [
        ("collision.coverage", "same", "mass", "center_of_mass")],
    ("gripper_m", "collider_shrunk", "/Gripper/Palm"): [("collision.coverage", "same", "mass", "inertia")],
    ("gripper_m", "collision_removed", "/Gripper/Base"): [("collision.coverage", "same", "material", "physics")],
    ("cabinet_cm", "collision_over_approximated", "/Cabinet/Door"): [
        ("collision.free_space", "same", "mass", "mass"), ("collision.free_space", "same", "mass", "inertia_orientation")],
    ("gripper_m", "collision_over_approximated", "/Gripper/Palm/FingerLeft"): [
        ("collision.free_space", "same", "mass", "center_of_mass"), ("collision.free_space", "same", "mass", "inertia")],
    ("cabinet_cm", "density_misplaced", "/Cabinet/Door"): [("mass.mass", "same", "mass", "center_of_mass")],
    ("gripper_m", "mass_changed", "/Gripper/Base"): [("mass.mass", "same", "mass", "inertia")],
    ("gripper_m", "center_of_mass_moved", "/Gripper/Base"): [
        ("mass.center_of_mass", "same", "mass", "inertia"), ("mass.center_of_mass", "same", "mass", "inertia_orientation")],
    ("gripper_m", "inertia_invalid", "/Gripper/Base"): [("mass.inertia", "same", "mass", "inertia_orientation")],
}


def declared() -> set[tuple[str, str, str, str]]:
    return {(f"{f.name}.{m.name}", k.relation, k.family, name)
            for f in FAMILIES for m in f.measures for k in m.knock_on for name in (k.measures or measure_names(k.family))}


def test_every_declared_knock_on_has_a_witness():
    shown = {item for items in WITNESSES.values() for item in items}
    assert declared() == shown, {"declared, never shown": sorted(declared() - shown),
                                 "shown, not declared": sorted(shown - declared())}


@pytest.mark.parametrize(("asset", "kind", "target"), sorted(WITNESSES), ids="-".join)
def test_injecting_the_cause_alone_makes_its_knock_ons_and_nothing_else(asset, kind, target, tmp_path):
    reference = ASSETS / asset
    with muted():
        inject(reference, tmp_path / "input", [(kind, target)], SEED)
    m = measurements(reference, tmp_path / "input")
    failing = {(f.family, f.measure, f.target) for f in every_difference(m)}
    own = {(family, measure, target) for family, measure in FAULT_KINDS[kind].checks}
    for cause, relation, family, measure in WITNESSES[(asset, kind, target)]:
        assert cause in {f"{f}.{n}" for f, n in FAULT_KINDS[kind].checks}, (kind, cause)
        related = _related(m.comparison, relation, target)
        assert any((family, measure, element) in failing for element in related), \
            (f"{kind} on {target} does not fail {family}.{measure} on {related}", sorted(failing))
    assert failing <= own | knock_on_keys(m.comparison, *own), sorted(failing - own - knock_on_keys(m.comparison, *own))


def test_a_knock_on_that_follows_from_a_component_applies_only_where_it_failed(tmp_path):
    """A body made kinematic (not disabled) keeps its joints, the body above it and the
    articulation as they were: its fault excuses none of them."""
    reference = ASSETS / "ant"
    body = "/ant/Geometry/torso/back_leg"
    from tests.test_freeze_differences import edited

    broken = edited(tmp_path / "input", [(body, "physics:kinematicEnabled", True)], reference)
    m = measurements(reference, broken)
    key = ("body", "state", body)
    assert set(m.check(*key).failing()) == {"kinematic"}
    declared = knock_on_keys(m.comparison, key)     # what a disabled body would excuse
    assert ("articulation", "roots", "*") in declared
    assert any(family == "joint" for family, _, _ in declared)
    assert knock_on_keys(m.comparison, key, failed=lambda k: set(m.check(*k).failing())) == set()
