"""Objective gates: every body and joint passes. Any failure caps the reward at 0.99."""


def test_objective(objective_gate, grading, record_grade):
    result = grading.objective_gate(objective_gate)
    record_grade("objective", objective_gate, result)
    assert result.passed, result.reason
