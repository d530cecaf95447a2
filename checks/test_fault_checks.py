"""Every targeted fault check of the case profile, one parametrized test each.

The measurement is recorded whether it passes or not; scoring reads it from the
JSON report. A failing assertion here means "fault not repaired", never an error.
"""


def test_fault_check(check_spec, grading, record_grade):
    measurement = grading.measure_check(check_spec)
    record_grade("check", check_spec.id, measurement)
    assert measurement.passed, f"{check_spec.id} on {check_spec.target}: {measurement.details}"
