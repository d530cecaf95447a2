"""Preservation gates: healthy content survives. Any failure makes the reward 0."""
from usd_repair_verifier.profiles.jsonable import jsonable


def test_preservation(preservation_gate, grading, json_metadata):
    result = grading.preservation_gate(preservation_gate)
    json_metadata["record"] = {"kind": "preservation", "id": preservation_gate, "result": jsonable(result.to_json())}
    assert result.passed, result.reason
