"""Preservation gates: healthy content survives. Any failure makes the reward 0."""
from usd_repair_verifier.profiles.result_record import as_metadata


def test_preservation(preservation_gate, grading, json_metadata):
    result = grading.preservation_gate(preservation_gate)
    json_metadata["record"] = as_metadata("preservation", preservation_gate, result)
    assert result.passed, result.reason
