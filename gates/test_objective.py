"""Objective gates: every body and joint passes. Any failure caps the reward at 0.99."""
from usd_repair_verifier.profiles.result_record import as_metadata


def test_objective(objective_gate, grading, json_metadata):
    result = grading.objective_gate(objective_gate)
    json_metadata["record"] = as_metadata("objective", objective_gate, result)
    assert result.passed, result.reason
