"""Validity gate: one test per rule (docs/bad-input.md). Any failure makes the reward 0."""
from usd_repair_verifier.profiles.result_record import as_metadata


def test_validity(validity_rule, grading, json_metadata):
    result = grading.validity_rule(validity_rule)
    json_metadata["record"] = as_metadata("validity", validity_rule, result)
    # The grading process's stage timings, for grade.json's "timings" (nothing else reads them).
    json_metadata["timings"] = dict(grading.timings)
    assert result.passed, result.reason
