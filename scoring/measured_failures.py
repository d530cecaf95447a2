"""A failing check is a measurement, not an error: pytest shows it as one line, not a traceback.

A grading test (a fault check, a validity rule, a preservation or objective gate) that measured
and found the repair short fails its assertion after recording its result. Its report keeps the
assertion's own line (check, target, each failing component's error against its tolerance) and
the check's progress, instead of a traceback with the session's object reprs; and pytest's
FAILURES section and short summary leave such reports out, since the grade's own summary (the
"usdgrade" section) lists every failing gate and check once. A test that raised (a verifier
fault, an infrastructure error) keeps its full traceback. The reports' outcome is unchanged:
pytest-json-report, the grade and the exit code see a failed test.
"""
from __future__ import annotations

import pytest

from .recorder import record_of

MEASURED = ("usdgrade", "measured failure")


def one_line(message: str, record: dict) -> str:
    """The assertion's first line (the rest is assertion rewriting's repr of the objects), with
    the check's progress when it has one."""
    line = message.strip().splitlines()[0] if message.strip() else record.get("id", "")
    result = record.get("result") if isinstance(record.get("result"), dict) else {}
    progress = result.get("progress")
    if record.get("kind") == "check" and isinstance(progress, (int, float)):
        line += f"; progress {progress:.4f}"
    return line


class MeasuredFailures:
    """Registered by the grading plugin in every process of a grading run (workers make the
    reports, the controller prints them)."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report = yield
        if call.when != "call" or not report.failed or call.excinfo is None \
                or not call.excinfo.errisinstance(AssertionError):
            return report
        record = record_of(item)
        if record is not None and record.get("result") is not None:   # it measured, then failed
            report.longrepr = one_line(str(call.excinfo.value), record)
            report.user_properties.append(MEASURED)
        return report

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter):
        """pytest's failure listings run inside this wrapper without the measured failures; they
        are put back before pytest counts the outcomes on its last line."""
        failed = terminalreporter.stats.get("failed")
        if failed:
            terminalreporter.stats["failed"] = [r for r in failed if MEASURED not in getattr(r, "user_properties", ())]
            if not terminalreporter.stats["failed"]:
                del terminalreporter.stats["failed"]
        try:
            return (yield)
        finally:
            if failed:
                terminalreporter.stats["failed"] = failed
