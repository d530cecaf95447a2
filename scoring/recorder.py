"""Each grade test's typed record: attached to the test's report, read back from pytest-json-report.

A grade test (a fault check, a validity rule, a preservation or objective gate) measures, then
records its typed result with the `record_grade` fixture before it asserts: the record rides on
the report's `user_properties` (as pytest's own `record_property` does), which pass from an
xdist worker to the controller with the report and which pytest-json-report writes into its
entry for the test. One GradeRecorder per grading process, registered by the plugin at configure
time, keeps json-report's finished report; scoring/json_report.py reads the records back from it.
"""
from __future__ import annotations

import pytest

from usd_repair_verifier.profiles.result_record import CheckResult, GateResult, as_metadata

from .json_report import RECORD_PROPERTY, TIMINGS_PROPERTY, TestResults


def attach(node: pytest.Item, kind: str, id: str, result: CheckResult | GateResult,
           timings: dict[str, float] | None = None) -> None:
    """Put a grade test's record (and the grading process's stage timings, when given) on its reports."""
    node.user_properties.append((RECORD_PROPERTY, as_metadata(kind, id, result)))
    if timings is not None:
        node.user_properties.append((TIMINGS_PROPERTY, dict(timings)))


def record_of(node_or_report) -> dict | None:
    """The record a test attached so far, or None."""
    for name, value in getattr(node_or_report, "user_properties", ()):
        if name == RECORD_PROPERTY and isinstance(value, dict):
            return value
    return None


class GradeRecorder:
    def __init__(self):
        self.json_report: dict | None = None   # pytest-json-report's report of every test, once complete

    @pytest.hookimpl(optionalhook=True)  # the hook's spec arrives with json-report's configure
    def pytest_json_modifyreport(self, json_report: dict) -> None:
        """json-report calls this in its sessionfinish (tryfirst) once the report is complete:
        before the writer's (trylast) reads it."""
        self.json_report = json_report

    def results(self) -> TestResults:
        """Every test's outcome and typed record (an empty report when json-report made none)."""
        return TestResults.from_report(self.json_report or {})
