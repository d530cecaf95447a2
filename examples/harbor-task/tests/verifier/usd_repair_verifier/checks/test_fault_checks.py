"""Every targeted fault check of the case profile, one parametrized test each.

The measurement is recorded whether it passes or not; scoring reads it from the
JSON report. A failing assertion here means "fault not repaired", never an error.
"""
from usd_repair_verifier.profiles.jsonable import jsonable


def test_fault_check(check_spec, grading, json_metadata):
    measurement = grading.measure_check(check_spec)
    json_metadata["record"] = {"kind": "check", "id": check_spec.id, "result": jsonable(measurement.to_json())}
    assert measurement.passed, f"{check_spec.id} on {check_spec.target}: {measurement.details}"
