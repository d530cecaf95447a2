"""Real robots (fixtures/robots, converted from URDF and MJCF): their cases grade as they must,
the same robot written another way grades as the reference, a healthy collider changed does not.

Lean on purpose (each grade of a robot takes seconds): every case's reference and input are
graded once, in this process (tests/grade_in_process.py); each mesh equivalent runs on the
robots listed in EQUIVALENT_ROBOTS (every equivalent on at least two, every robot at least once);
`python bench/bench_robots.py` grades the whole matrix, every equivalent on every robot, and
writes its results file.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.build_robot_cases import CASES, ROBOT_CASES, ROBOTS
from usd_repair_verifier.authoring.inject import inject
from usd_repair_verifier.profiles.schema import load_profile
from usd_repair_verifier.profiles.vocabulary import FAULT_KINDS
from tests import mesh_variants
from tests.grade_in_process import grade

# No robot here authors a UsdPhysics drive (fixtures/build_robot_cases.py).
NOT_ON_ROBOTS = {"joint_drive"}
CASE_OF = {robot: case for case, (robot, _) in ROBOT_CASES.items()}

EQUIVALENT_ROBOTS = {
    "reordered": ("baxter", "adroit_hammer"),
    "retriangulated": ("so100", "kitchen_franka"),
    "split": ("xarm7", "icub"),
    # siblings of one look: icub, kitchen_franka, hyq; not hyq here: its merged frame part sits
    # nearer (centroid, area) a third frame part than its own, and is matched to it first
    "merged": ("icub", "kitchen_franka"),
    "baked_scale": ("hyq", "adroit_hammer"),
    "deinstanced": ("icub", "kitchen_franka"),
    "hull_mesh": ("so100", "xarm7"),           # hidden convex-hull mesh colliders: the URDF robots
    # not hyq: its dummy base_link authors 3e-6 kg m^2 with a negative moment, which UsdPhysics
    # rejects in metres (a small sphere's inertia instead) and honours in centimetres
    "centimetres": ("xarm7", "so100"),
}
HOSTILES = [   # (robot, how): one healthy body collider changed
    ("so100", "grown"), ("baxter", "grown"), ("hyq", "moved"),
    ("xarm7", "approximation"), ("icub", "bounding_sphere"),
]


def test_every_robot_case_is_committed():
    assert sorted(p.name for p in CASES.iterdir() if p.is_dir()) == sorted(ROBOT_CASES)


def test_every_fault_kind_is_on_a_robot():
    kinds = {f.kind for case in ROBOT_CASES for f in load_profile(CASES / case / "profile.json").faults}
    assert kinds == set(FAULT_KINDS) - NOT_ON_ROBOTS


@pytest.mark.parametrize("case", sorted(ROBOT_CASES))
def test_reference_one_and_input_zero(case):
    ref = grade(CASES / case, CASES / case / "reference")
    assert ref.authored_usd == 1.0 and ref.objective_success, ref.reasons
    inp = grade(CASES / case, CASES / case / "input")
    assert inp.authored_usd == 0.0 and inp.status.value == "graded" and inp.targeted_repair_fraction == 0.0


def test_a_single_fault_repair_scores_between(tmp_path):
    """xarm7's case with its physics material repaired (the other three faults left)."""
    robot, faults = ROBOT_CASES["xarm7_limits_and_collision"]
    inject(ROBOTS / robot, tmp_path / "sub", [(k, t) for fid, k, t in faults if fid != "f4"], 7)
    decision = grade(CASES / "xarm7_limits_and_collision", tmp_path / "sub")
    checks = load_profile(CASES / "xarm7_limits_and_collision" / "profile.json").checks
    ours = sum(1 for c in checks if c.fault == "f4") / len(checks)
    assert decision.targeted_repair_fraction == pytest.approx(ours) and 0.0 < decision.authored_usd < 1.0


@pytest.mark.parametrize("variant, robot", [(v, r) for v, robots in EQUIVALENT_ROBOTS.items() for r in robots])
def test_mesh_equivalents_grade_one(variant, robot, tmp_path):
    candidate = getattr(mesh_variants, variant)(ROBOTS / robot, tmp_path / variant)
    decision = grade(CASES / CASE_OF[robot], candidate)
    assert decision.authored_usd == 1.0, decision.reasons


def test_every_robot_gets_an_equivalent():
    assert {r for robots in EQUIVALENT_ROBOTS.values() for r in robots} == set(CASE_OF)


@pytest.mark.parametrize("robot, how", HOSTILES)
def test_a_healthy_collider_changed_scores_zero(robot, how, tmp_path):
    """On the reference (the honest repair of every fault, 1.0): one healthy collider changed."""
    candidate = mesh_variants.collider_changed(ROBOTS / robot, tmp_path / how, how)
    decision = grade(CASES / CASE_OF[robot], candidate)
    assert decision.authored_usd == 0.0 and decision.preservation_pass is False, decision.reasons
    assert any(r.startswith("collision_support") for r in decision.reasons), decision.reasons


def test_robot_equivalents_are_what_they_claim(tmp_path):
    """The variants change what they say: a split adds a mesh, a merge removes one, centimetres
    sets metersPerUnit (a variant that changed nothing would pass the tests above vacuously)."""
    from pxr import Usd, UsdGeom

    from usd_repair_verifier.authoring.inject import root_layer_of

    def stage(p: Path):
        return Usd.Stage.Open(str(root_layer_of(p)))

    count = lambda p: len(mesh_variants.visible_meshes(stage(p)))  # noqa: E731
    assert count(mesh_variants.split(ROBOTS / "xarm7", tmp_path / "s")) == count(ROBOTS / "xarm7") + 1
    assert count(mesh_variants.merged(ROBOTS / "hyq", tmp_path / "m")) == count(ROBOTS / "hyq") - 1
    assert UsdGeom.GetStageMetersPerUnit(stage(mesh_variants.centimetres(ROBOTS / "hyq", tmp_path / "c"))) == 0.01
