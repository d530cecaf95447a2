"""The physical grade of a SimReady case: Newton loads each stage composed with the case's variant
selections (without them the published default has no physics to load)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fixtures.build_simready import CASE_ID, SELECTION
from usd_repair_verifier.physical import runtime_server
from usd_repair_verifier.physical.grade import run_physical, session_env

# Not in the inner loop: the SimReady gripper in the engine: the engine runs in the inner loop on the ant (tests/test_physical_grade.py).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "fixtures" / "simready" / "cases" / CASE_ID


@pytest.fixture(scope="module", autouse=True)
def forked_runtime_sessions():
    runtime_server.start_runtime_server(session_env())
    yield
    runtime_server.stop_runtime_server()


def test_the_engine_loads_the_selected_engines_physics(tmp_path):
    # The reference with the package's own selection moved to Newton: still read under PhysX.
    moved = tmp_path / "moved"
    shutil.copytree(CASE / "reference", moved)
    root = moved / "gripper.usda"
    root.write_text(root.read_text().replace('string Newton = "Disabled"', 'string Newton = "Enabled"'))
    record = run_physical(CASE, moved, tmp_path / "out")
    assert record["status"] == "graded", record["reason"]
    assert record["variant_selections"] == SELECTION
    cook = record["tests"]["load_and_cook"]
    assert cook["bodies"]["value"] == 4 and cook["degrees_of_freedom"]["value"] == 9
    assert record["summary"]["failed"] == 0 and record["summary"]["null"] == 0
    # the gripper's box was closed on and lifted (the grasp test ran, not null)
    assert record["tests"]["grasp_and_lift"]["held"]["details"]["opening_m"] > 0.0
    assert sorted(record["correspondence"]["bodies"]) == ["/Gripper/Base", "/Gripper/Palm",
                                                          "/Gripper/Palm/FingerLeft", "/Gripper/Palm/FingerRight"]


def test_the_input_missing_its_finger_joint_fails_in_the_engine(tmp_path):
    record = run_physical(CASE, CASE / "input", tmp_path / "out")
    assert record["status"] == "graded", record["reason"]
    assert record["tests"]["load_and_cook"]["degrees_of_freedom"]["passed"] is False
    # the grasp test needs both fingers: without the left finger's joint it measures nothing, and says why
    grasp = record["tests"]["grasp_and_lift"]
    assert all(p["passed"] is None and "no joint matching the reference's finger joint" in p["reason"]
               and "FingerLeftSlide" in p["reason"] for p in grasp.values())
