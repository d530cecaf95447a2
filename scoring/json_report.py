"""The far side of the pytest-json-report hop: each grade test's typed record, read back.

A check or gate test attaches its result to json-report's report (profiles/result_record.py
`as_metadata`); the plugin reads the finished report here into TestRecords (outcome, crash
message, duration and the typed result) and sorts them by kind once (TestResults), for the
reward's decision and the grade file alike.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from usd_repair_verifier.profiles import result_record
from usd_repair_verifier.profiles.result_record import KINDS, CheckResult, GateResult


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
    stages = [v for k, v in test.items() if isinstance(v, dict) and "outcome" in v and k not in ("metadata",)]
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


def records_from_report(json_report: dict) -> list[TestRecord]:
    """pytest-json-report's tests, each with the typed record its test attached (the other side
    of the hop from profiles/result_record.as_metadata)."""
    records = []
    for test in json_report.get("tests", []):
        metadata = test.get("metadata") or {}
        record = metadata.get("record") or {}
        records.append(TestRecord(
            nodeid=test["nodeid"],
            outcome=test.get("outcome", "error"),
            kind=record.get("kind"),
            id=record.get("id"),
            result=result_record.parse(record.get("kind"), record.get("result")),
            message=_message(test),
            seconds=float((test.get("call") or {}).get("duration") or 0.0),
            timings=metadata.get("timings"),
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
