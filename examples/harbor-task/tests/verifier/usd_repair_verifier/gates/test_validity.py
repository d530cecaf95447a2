"""Validity gate: one test per rule (docs/bad-input.md). Any failure makes the reward 0."""
from usd_repair_verifier.profiles.jsonable import jsonable


def test_validity(validity_rule, grading, json_metadata):
    result = grading.validity_rule(validity_rule)
    record = result.to_json() | {"timings": grading.timings}
    json_metadata["record"] = {"kind": "validity", "id": validity_rule, "result": jsonable(record)}
    assert result.passed, result.reason
