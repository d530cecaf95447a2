"""Objective gates: every body and joint passes. Any failure caps the reward at 0.99."""
from usd_repair_verifier.profiles.jsonable import jsonable


def test_objective(objective_gate, grading, json_metadata):
    result = grading.objective_gate(objective_gate)
    json_metadata["record"] = {"kind": "objective", "id": objective_gate, "result": jsonable(result.to_json())}
    assert result.passed, result.reason
