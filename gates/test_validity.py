"""Validity gate: one test per rule (docs/bad-input.md). Any failure makes the reward 0."""


def test_validity(validity_rule, grading, record_grade):
    result = grading.validity_rule(validity_rule)
    # With the grading process's stage timings, for grade.json's "timings" (nothing else reads them).
    record_grade("validity", validity_rule, result, timings=grading.timings)
    assert result.passed, result.reason
