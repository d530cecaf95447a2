"""Real robots (fixtures/robots, converted from URDF and MJCF): their cases grade as they must,
the same robot written another way grades as the reference, a healthy collider changed does not.

Lean on purpose (each grade of a robot takes seconds): every case's reference and input are
graded once, in this process (tests/grade_in_process.py); each mesh equivalent runs on the
robots listed in EQUIVALENT_ROBOTS (every equivalent on at least two, every robot at least once,
and each robot a former grade got wrong: so100 split, hyq merged, baxter and hyq in centimetres);
`python -m bench.bench_robots` grades the whole matrix, every equivalent and hostile on every
robot, and writes its results file.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.build_robot_cases import CASES, REFERENCE_LAYERS, ROBOT_CASES, ROBOTS
from usd_repair_verifier.authoring.inject import inject
from usd_repair_verifier.profiles.schema import load_profile
from usd_repair_verifier.profiles.vocabulary import FAULT_KINDS
from tests import mesh_variants
from tests.grade_in_process import grade
from tests.inner_loop import representatives

# Each robot's case whose reference is the robot as converted: variants are built from it.
CASE_OF: dict[str, str] = {}
for _case, (_robot, _) in ROBOT_CASES.items():
    if _case not in REFERENCE_LAYERS:
        CASE_OF.setdefault(_robot, _case)

EQUIVALENT_ROBOTS = {
    "reordered": ("adroit_hammer", "icub"),
    "retriangulated": ("so100", "hyq"),
    "split": ("so100", "xarm7"),               # so100: its Base beside Base_Motor, whose surface it meets
    "merged": ("hyq", "icub"),                 # hyq: two frame plates lying flat on the frame
    "baked_scale": ("hyq", "adroit_hammer"),
    "deinstanced": ("icub", "kitchen_franka"),
    "hull_mesh": ("so100", "xarm7"),           # hidden convex-hull mesh colliders: the URDF robots
    # baxter's sensor links and hyq's dummy links author inertias UsdPhysics reads differently
    # in metres and in centimetres (stage_snapshot/mass.py)
    "centimetres": ("baxter", "hyq"),
}
HOSTILES = [   # (robot, how): one healthy body collider changed
    ("so100", "grown"), ("hyq", "moved"), ("xarm7", "approximation"), ("icub", "bounding_sphere"),
    # hyq's first mesh collider is lf_upperleg's, whose visible part its case reshapes: the
    # collider is healthy all the same (graded 0.99 when the fault exempted its free space)
    ("hyq", "approximation"),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(variant, robot) -> the variant of the robot's case reference, built once per module."""
    root, made = tmp_path_factory.mktemp("robot_variants"), {}

    def get(variant: str, robot: str) -> Path:
        if (variant, robot) not in made:
            source, out = CASES / CASE_OF[robot] / "reference", root / f"{robot}_{variant}"
            made[variant, robot] = (getattr(mesh_variants, variant)(source, out) if variant in EQUIVALENT_ROBOTS
                                    else mesh_variants.collider_changed(source, out, variant))
        return made[variant, robot]
    return get


def test_every_robot_case_is_committed():
    assert sorted(p.name for p in CASES.iterdir() if p.is_dir()) == sorted(ROBOT_CASES)


# Kinds no committed robot case holds yet: tests/test_freeze_finds_injected.py injects each on the
# xarm7 robot and freezes it (a mass edited alone, the mass family's general kind).
ON_A_ROBOT_BY_INJECTION = {"mass_changed"}


def test_every_fault_kind_is_on_a_robot():
    kinds = {f.kind for case in ROBOT_CASES for f in load_profile(CASES / case / "profile.json").faults}
    assert kinds | ON_A_ROBOT_BY_INJECTION == set(FAULT_KINDS) and not kinds & ON_A_ROBOT_BY_INJECTION


# The inner loop grades one robot's case; the full suite every one.
@pytest.mark.parametrize("case", representatives(sorted(ROBOT_CASES), ["so100_units_and_hull"]))
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


def _does_what_it_claims(variant: str, robot: str, candidate: Path) -> None:
    """A split adds a mesh, a merge removes one, centimetres sets metersPerUnit: a variant that
    changed nothing would pass vacuously."""
    from pxr import Usd, UsdGeom

    from usd_repair_verifier.authoring.inject import root_layer_of

    def stage(p: Path):
        return Usd.Stage.Open(str(root_layer_of(p)))

    if variant in ("split", "merged"):
        count = len(mesh_variants.visible_meshes(stage(candidate))) - len(mesh_variants.visible_meshes(stage(ROBOTS / robot)))
        assert count == (1 if variant == "split" else -1)
    if variant == "centimetres":
        assert UsdGeom.GetStageMetersPerUnit(stage(candidate)) == 0.01


EQUIVALENTS = [(v, r) for v, robots in EQUIVALENT_ROBOTS.items() for r in robots]


# The inner loop: one equivalent mesh layout (a retriangulated robot); the full suite every one.
@pytest.mark.parametrize("variant, robot", representatives(EQUIVALENTS, [("retriangulated", "so100")],
                                                           ids=[f"{v}-{r}" for v, r in EQUIVALENTS]))
def test_mesh_equivalents_grade_one(variant, robot, built):
    candidate = built(variant, robot)
    _does_what_it_claims(variant, robot, candidate)
    decision = grade(CASES / CASE_OF[robot], candidate)
    assert decision.authored_usd == 1.0, decision.reasons


def test_every_robot_gets_an_equivalent():
    assert {r for robots in EQUIVALENT_ROBOTS.values() for r in robots} == set(CASE_OF)
    assert all(len(robots) >= 2 for robots in EQUIVALENT_ROBOTS.values())


@pytest.mark.parametrize("robot, how", representatives(HOSTILES, [("so100", "grown")],
                                                       ids=[f"{r}-{h}" for r, h in HOSTILES]))
def test_a_healthy_collider_changed_scores_zero(robot, how, built):
    """On the reference (the honest repair of every fault, 1.0): one healthy collider changed."""
    decision = grade(CASES / CASE_OF[robot], built(how, robot))
    assert decision.authored_usd == 0.0 and decision.preservation_pass is False, decision.reasons
    assert any(r.startswith("collision_support") for r in decision.reasons), decision.reasons
