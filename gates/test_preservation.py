"""Preservation gates: healthy content survives. Any failure makes the reward 0."""


def test_preservation(preservation_gate, grading, record_grade):
    result = grading.preservation_gate(preservation_gate)
    record_grade("preservation", preservation_gate, result)
    assert result.passed, result.reason
