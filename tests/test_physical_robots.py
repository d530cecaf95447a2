"""The physical grade of every fixture robot's reference against itself (the cases of
bench/bench_physical_robots.py, whose table is docs/physical-robots.md): the engine loads it, every
property passes, and a null is only a test that does not apply to the asset (a reason the docs name:
physical/property_results.py NOT_APPLICABLE). The corrections the grade applies before the solver
are the ones each robot needs, recorded for both sides alike. A minute or more per robot on a busy
2-core machine: slow."""
from __future__ import annotations

import pytest

from bench.bench_physical_robots import fixture_cases
from usd_repair_verifier.physical import runtime_server
from usd_repair_verifier.physical.grade import run_physical, session_env
from usd_repair_verifier.physical.property_results import not_applicable

pytestmark = pytest.mark.slow

# the corrections each reference needs (kind -> count); every other case needs none
EXPECTED_CORRECTIONS = {
    "hyq_shape_and_mass": {"planar_mesh_thickened": 2},
    "hyq_filter_owner_inertia": {"planar_mesh_thickened": 2},
    "unbalanced_inertia_limits": {"inertia_balanced": 1},
    "massless_link_mass": {"mass_stand_in": 1},
    # two links MuJoCo takes as they are, on the edge: moments (1, 1, 2)e-6 kg m^2 and ~1e-20 kg m^2
    # (A + B a quarter below C); raised by 2e-11 and 1.4e-20 kg m^2
    "icub_graph_and_parts": {"inertia_balanced": 2},
}
# baxter's two-finger grippers are not sized: their colliders' bounds overlap along the closing axis
GRIPPERS = {"simready_gripper_missing_and_drive", "gripper_hull_and_mass", "kitchen_density_and_redundant"}


@pytest.fixture(scope="module")
def forked_runtime_sessions():
    runtime_server.start_runtime_server(session_env())
    yield
    runtime_server.stop_runtime_server()


@pytest.mark.parametrize("case", fixture_cases(), ids=lambda c: c.name)
def test_every_fixture_reference_passes_its_own_physical_grade(case, tmp_path, forked_runtime_sessions):
    record = run_physical(case, case / "reference", tmp_path / "out")
    assert record["status"] == "graded" and record["reason"] is None, record["reason"]
    properties = [p for props in record["tests"].values() for p in props.values()]
    assert not [p for p in properties if p["passed"] is False], record["summary"]["failed_properties"]
    unexplained = [(p["test"], p["name"], p["reason"]) for p in properties
                   if p["passed"] is None and not not_applicable(p["reason"])]
    assert not unexplained, unexplained
    kinds: dict[str, int] = {}
    for correction in record["corrections"]["reference"]:
        kinds[correction["kind"]] = kinds.get(correction["kind"], 0) + 1
    assert kinds == EXPECTED_CORRECTIONS.get(case.name, {})
    assert record["corrections"]["candidate"] == record["corrections"]["reference"]
    grasp = record["tests"]["grasp_and_lift"]
    if case.name in GRIPPERS:   # the grasp test ran on the gripper: a box was closed on and lifted
        assert all(p["passed"] is True for p in grasp.values()), grasp
        assert grasp["held"]["details"]["opening_m"] > 0.0
    else:
        assert all(p["reason"].startswith("no gripper") for p in grasp.values()), grasp
