"""Scoring: the pytest plugin that turns the test report into reward.json and grade.json."""

VERIFIER_VERSION = "0.1.0"
