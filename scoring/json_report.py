"""The far side of the pytest-json-report hop: each grade test's typed record, read back.

A check or gate test attaches its result to its report's `user_properties` (scoring/recorder.py,
the `record_grade` fixture); pytest-json-report writes them into its entry for the test, as a list
of one-key objects. The grade reads the finished report here into TestRecords (outcome, crash
message, duration and the typed result) and sorts them by kind once (TestResults), for the
reward's decision and the grade file alike.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from usd_repair_verifier.profiles import result_record
from usd_repair_verifier.profiles.result_record import KINDS, CheckResult, GateResult

# The names of a grade test's user properties: its typed record, and the grading process's stage
# timings (one validity test carries them, for grade.json's "timings").
RECORD_PROPERTY = "usdgrade_record"
TIMINGS_PROPERTY = "usdgrade_timings"


@dataclass(frozen=True)
class TestRecord:
    __test__ = False  # a record of a test, not a test class

    nodeid: str
    outcome: str                # passed | failed | error | skipped | xfailed ...
    kind: str | None            # one of KINDS, None when the test recorded nothing
    id: str | None              # check id or gate name
    result: CheckResult | GateResult | None   # the typed record the test attached
    message: str = ""           # pytest's crash message, when there is one
    seconds: float = 0.0        # the test's own call (measuring, judging), not its fixtures
    timings: dict | None = None  # the grading process's stage timings (validity tests carry them)


def _message(test: dict) -> str:
    """Why a test did not measure: the first crash message of a stage that did not pass.

    Every key holding a stage counts (xdist files a crashed worker under "???");
    xdist's "[gwN] linux -- Python ..." header lines are not a cause.
    """
    stages = [v for k, v in test.items() if isinstance(v, dict) and "outcome" in v]
    for details in stages:
        if details.get("outcome") == "passed":
            continue
        crash = details.get("crash") or {}
        if crash.get("message"):
            return str(crash["message"])
        lines = [l for l in str(details.get("longrepr") or "").strip().splitlines()
                 if l.strip() and not re.match(r"\[gw\d+\] ", l)]
        if lines:
            return lines[-1]
    return ""


def user_properties(test: dict) -> dict:
    """A test's user properties as json-report writes them (`[{name: value}, ...]`), by name."""
    found = {}
    for entry in test.get("user_properties") or []:
        if isinstance(entry, dict):
            found.update(entry)
    return found


def records_from_report(json_report: dict) -> list[TestRecord]:
    """pytest-json-report's tests, each with the typed record its test attached (the other side
    of the hop from scoring/recorder.py's `attach`)."""
    records = []
    for test in json_report.get("tests", []):
        properties = user_properties(test)
        record = properties.get(RECORD_PROPERTY)
        record = record if isinstance(record, dict) else {}
        records.append(TestRecord(
            nodeid=test["nodeid"],
            outcome=test.get("outcome", "error"),
            kind=record.get("kind"),
            id=record.get("id"),
            result=result_record.parse(record.get("kind"), record.get("result")),
            message=_message(test),
            seconds=float((test.get("call") or {}).get("duration") or 0.0),
            timings=properties.get(TIMINGS_PROPERTY),
        ))
    return records


@dataclass(frozen=True)
class TestResults:
    """A run's test records and their results by kind, sorted once: what decide() and the
    grade file read."""

    __test__ = False

    records: tuple[TestRecord, ...]
    checks: dict[str, CheckResult]
    validity: dict[str, GateResult]
    preservation: dict[str, GateResult]
    objective: dict[str, GateResult]

    @classmethod
    def of(cls, records: list[TestRecord]) -> TestResults:
        found: dict[str, dict] = {k: {} for k in KINDS}
        for r in records:
            if r.kind in found and r.result is not None:
                found[r.kind][r.id] = r.result
        return cls(tuple(records), found["check"], found["validity"], found["preservation"], found["objective"])

    @classmethod
    def from_report(cls, json_report: dict) -> TestResults:
        return cls.of(records_from_report(json_report))

    def by_kind(self, kind: str) -> dict:
        return {"check": self.checks, "validity": self.validity, "preservation": self.preservation,
                "objective": self.objective}[kind]

    @property
    def timings(self) -> dict:
        """The grading process's stage timings, as its first validity test recorded them."""
        return next((r.timings for r in self.records if r.kind == "validity" and r.timings), None) or {}

    @property
    def tests_seconds(self) -> float:
        return sum(r.seconds for r in self.records)


NO_RESULTS = TestResults.of([])
