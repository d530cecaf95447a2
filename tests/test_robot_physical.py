"""The physical grade of a real robot, fully graded: xArm7 with its position drives (the
joint_drive case's reference, fixtures/robot_cases/xarm7_drive_and_units) against itself, on the
real engine. Every property is measured and passes (none null), and the same bytes graded twice
give the same record (timings and the runtime session aside).

One robot only: a physical grade of a real robot takes seconds of engine time. The grade of every
other robot's reference, and its wall time, is `python -m bench.bench_robots --physical CASE`.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from usd_repair_verifier.physical import runtime_server
from usd_repair_verifier.physical.grade import PHYSICAL_FILE, run_physical, session_env
from usd_repair_verifier.physical.property_results import TESTS
from usd_repair_verifier.physical.record import PhysicalRecord

# Not in the inner loop: the physical grade of real robots: the engine runs in the inner loop on the ant (tests/test_physical_grade.py).
pytestmark = pytest.mark.slow

CASE = Path(__file__).resolve().parent.parent / "fixtures" / "robot_cases" / "xarm7_drive_and_units"


@pytest.fixture(scope="module")
def two_records(tmp_path_factory):
    """The reference graded twice, both forked from this process's runtime server (as a sweep's are)."""
    runtime_server.start_runtime_server(session_env())
    out = tmp_path_factory.mktemp("xarm7_physical")
    records = []
    for run in ("first", "second"):
        records.append(run_physical(CASE, CASE / "reference", out / run))
        PhysicalRecord.model_validate_json((out / run / PHYSICAL_FILE).read_bytes())
    yield records
    runtime_server.stop_runtime_server()   # another module's tests start it again (idempotent)


def _properties(record: dict) -> list[dict]:
    return [p for t in TESTS for p in record["tests"][t].values()]


def _without_run(record: dict) -> dict:
    record = json.loads(json.dumps(record))
    record.pop("timings")
    record.pop("runtime_session", None)
    return record


def test_a_robot_with_drives_is_fully_graded(two_records):
    record = two_records[0]
    assert record["status"] == "graded", record["reason"]
    bad = [(p["test"], p["name"], p["value"], p["reason"]) for p in _properties(record)
           if p["passed"] is not True and not (p["test"] == "grasp_and_lift" and p["reason"].startswith("no gripper"))]
    assert not bad, bad
    # xArm7 as converted has no gripper: only its grasp test is null
    assert record["summary"]["null"] == len(record["tests"]["grasp_and_lift"]) and record["summary"]["failed"] == 0
    # its seven drives were pushed: every revolute joint travelled both ways
    joints = record["tests"]["joint_travel"]["travel"]["details"]["joints"]
    assert len(joints) >= 7


def test_the_same_robot_twice_gives_the_same_record(two_records):
    first, second = two_records
    assert _without_run(second) == _without_run(first)
