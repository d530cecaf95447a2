"""Every targeted fault check of the case profile, one parametrized test each.

The measurement is recorded whether it passes or not; scoring reads it from the
JSON report. A failing assertion here means "fault not repaired", never an error.
"""
from usd_repair_verifier.profiles.result_record import as_metadata


def test_fault_check(check_spec, grading, json_metadata):
    measurement = grading.measure_check(check_spec)
    json_metadata["record"] = as_metadata("check", check_spec.id, measurement)
    assert measurement.passed, f"{check_spec.id} on {check_spec.target}: {measurement.details}"
