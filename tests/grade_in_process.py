"""Grade a submission in this process: the session and the reward rule, without pytest.

The operator's command runs each check and gate as a pytest test and `decide()` reads
their records; this builds the same records straight from a GradingSession, so tests
that grade hundreds of submissions need no child process per grade. Tests that check
the command itself still use usd_repair_verifier.scoring.run.run_grade.
"""
from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

from usd_repair_verifier.gates.names import OBJECTIVE_GATES, PRESERVATION_GATES, VALIDITY_RULES
from usd_repair_verifier.profiles.case import Case, load_case
from usd_repair_verifier.profiles.jsonable import jsonable
from usd_repair_verifier.scoring.reward import Decision, Expected, TestRecord, decide
from usd_repair_verifier.scoring.session import GradingSession
from usd_repair_verifier.scoring.work_share import LocalWork

_REFERENCES: dict[str, tuple] = {}   # case folder -> (reference snapshot, seconds): read once per process


class _ReferenceOnce(LocalWork):
    """Serial work that reads each case's reference once (snapshots are only read afterwards)."""

    def __init__(self, key: str):
        super().__init__()
        self.key = key
        if key in _REFERENCES:
            self.mine["reference"] = _REFERENCES[key]

    def claim(self, unit: str) -> bool:
        return unit not in self.mine

    def run(self, unit, compute):
        value = super().run(unit, compute)
        if unit == "reference":
            _REFERENCES[self.key] = value
        return value


def _record(kind: str, ident: str, result: dict) -> TestRecord:
    return TestRecord(f"{kind}::{ident}", "passed" if result.get("passed") else "failed", kind, ident, jsonable(result))


def grade(case: Case | Path, submission: Path, validity: Future | None = None) -> Decision:
    """`validity`: the validity gate's (report, seconds) already computed, or None to run it."""
    case = case if isinstance(case, Case) else load_case(case)
    session = GradingSession(case, Path(submission), _ReferenceOnce(str(case.paths.root)), validity)
    records = [_record("check", spec.id, session.measure_check(spec).to_json()) for spec in case.profile.checks]
    records += [_record("validity", r, session.validity_rule(r).to_json()) for r in VALIDITY_RULES]
    records += [_record("preservation", g, session.preservation_gate(g).to_json()) for g in PRESERVATION_GATES]
    records += [_record("objective", g, session.objective_gate(g).to_json()) for g in OBJECTIVE_GATES]
    expected = Expected({
        "check": tuple(c.id for c in case.profile.checks),
        "validity": VALIDITY_RULES,
        "preservation": PRESERVATION_GATES,
        "objective": OBJECTIVE_GATES,
    })
    return decide(records, expected)
