"""From test records to a grade: tiny predicates, then ratios, then one outcome.

The input is what pytest-json-report recorded for each test (outcome plus the
`record` metadata a check or gate test attached); nothing here reads the
submission. Steps, each separate:
1. records      -> which tests errored, which expected ones are missing
2. gates        -> validity, preservation, objective pass/fail
3. checks       -> F (strict fraction) and S (mean semantic progress)
4. one Status   -> the reward rule (README, "Reward") and the exit code
5. closed book  -> a closed-book case's trajectory verdict may zero the reward
"""
from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field

from usd_repair_verifier.profiles.result_record import KINDS, CheckResult, GateResult

from .json_report import NO_RESULTS, TestRecord, TestResults
from usd_repair_verifier.profiles.errors import ExitCode

__all__ = ["NO_RESULTS", "TestRecord", "TestResults"]  # the records decide() reads

REWARD_CAP = 0.99
WEIGHT_F = WEIGHT_S = 0.5   # R = WEIGHT_F F + WEIGHT_S S


class Status(str, enum.Enum):
    GRADED = "graded"
    INVALID = "invalid"
    PRESERVATION_FAILED = "preservation_failed"
    PARTIAL = "partial"
    INFRASTRUCTURE_ERROR = "infrastructure_error"
    CLOSED_BOOK_VIOLATION = "closed_book_violation"
    CLOSED_BOOK_UNVERIFIED = "closed_book_unverified"


# What each outcome does with the outputs: write reward.json? which exit code (None: pytest's own)?
OUTCOMES = {
    Status.GRADED: (True, ExitCode.DONE),
    Status.INVALID: (True, ExitCode.DONE),
    Status.PRESERVATION_FAILED: (True, ExitCode.DONE),
    Status.PARTIAL: (False, None),
    Status.INFRASTRUCTURE_ERROR: (True, ExitCode.INFRASTRUCTURE_ERROR),
    # The grade itself worked: the agent's conduct zeroed it.
    Status.CLOSED_BOOK_VIOLATION: (True, ExitCode.DONE),
    Status.CLOSED_BOOK_UNVERIFIED: (True, ExitCode.DONE),
}

@dataclass(frozen=True)
class Expected:
    """The tests a full run must have run, by kind: check ids and gate names."""

    ids: dict[str, tuple[str, ...]]


@dataclass
class Decision:
    status: Status
    authored_usd: float | None
    submission_valid: bool | None = None
    preservation_pass: bool | None = None
    objective_success: bool | None = None
    targeted_repair_fraction: float | None = None
    targeted_semantic_score: float | None = None
    infrastructure_error: str | None = None
    missing: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    raw_authored_usd: float | None = None   # the measured reward, before the closed-book rule


# 1. records ---------------------------------------------------------------

def errored(records: tuple[TestRecord, ...] | list[TestRecord]) -> list[TestRecord]:
    """A test that raised instead of measuring, or failed without a result (a crashed worker)."""
    return [r for r in records if r.outcome == "error" or (r.outcome == "failed" and r.result is None)]


def missing(expected: Expected, results: TestResults) -> list[str]:
    return [f"{kind}:{i}" for kind in KINDS for i in expected.ids.get(kind, ()) if i not in results.by_kind(kind)]


# 2. gates -----------------------------------------------------------------

def all_passed(results: dict[str, GateResult]) -> bool:
    return bool(results) and all(r.passed is True for r in results.values())


def failing_gates(results: dict[str, GateResult]) -> list[str]:
    return [f"{name}: {r.reason}" for name, r in results.items() if r.passed is not True]


# 3. checks ----------------------------------------------------------------

def repair_fraction(checks: dict[str, CheckResult]) -> float:
    return sum(1 for m in checks.values() if m.passed is True) / len(checks) if checks else 0.0


def semantic_score(checks: dict[str, CheckResult]) -> float:
    # An unmeasured targeted check earns nothing: it cannot show a repair.
    return sum(float(m.progress or 0.0) for m in checks.values()) / len(checks) if checks else 0.0


def raw_reward(fraction: float, semantic: float) -> float:
    """R = 0.5 F + 0.5 S: the measured repair, before the gates and the cap."""
    return WEIGHT_F * fraction + WEIGHT_S * semantic


# Statuses whose reward is 0 whatever was measured: a gate or the closed-book rule withholds it.
ZEROED = (Status.INVALID, Status.PRESERVATION_FAILED, Status.CLOSED_BOOK_VIOLATION, Status.CLOSED_BOOK_UNVERIFIED)


def reward_from(fraction: float | None, semantic: float | None, status: Status | str,
                objective_success: bool | None) -> float | None:
    """The reward rule (README, "Reward"): None for a partial run, 0 for an infrastructure error
    (the fallback, not a score) and for a zeroed status, else R, capped at REWARD_CAP unless every
    objective gate passed. `status` may be a Status or its value, as grade.json writes it."""
    if status == Status.PARTIAL:
        return None
    if status == Status.INFRASTRUCTURE_ERROR or status in ZEROED:
        return 0.0
    r = raw_reward(fraction, semantic)
    return r if objective_success else min(r, REWARD_CAP)


# 4. the outcome -----------------------------------------------------------

def decide(results: TestResults, expected: Expected, case_error: str | None = None) -> Decision:
    if case_error:
        return Decision(Status.INFRASTRUCTURE_ERROR, 0.0, infrastructure_error=case_error)
    broken = errored(results.records)
    if broken:
        first = broken[0]
        cause = f"{len(broken)} test(s) errored instead of measuring; first: {first.nodeid}: {first.message or first.outcome}"
        return Decision(Status.INFRASTRUCTURE_ERROR, 0.0, infrastructure_error=cause)

    checks = {i: results.checks[i] for i in expected.ids.get("check", ()) if i in results.checks}
    fraction, semantic = repair_fraction(checks), semantic_score(checks)
    absent = missing(expected, results)
    if absent:
        return Decision(
            Status.PARTIAL, None, targeted_repair_fraction=fraction, targeted_semantic_score=semantic, missing=absent,
            reasons=[f"partial run: {len(absent)} required test(s) not run, no reward written"],
        )

    valid = all_passed(results.validity)
    if not valid:
        return Decision(Status.INVALID, reward_from(fraction, semantic, Status.INVALID, None),
                        submission_valid=False, targeted_repair_fraction=fraction, targeted_semantic_score=semantic,
                        reasons=failing_gates(results.validity))
    preserved = all_passed(results.preservation)
    objective_ok = all_passed(results.objective)
    status = Status.GRADED if preserved else Status.PRESERVATION_FAILED
    if not preserved:
        reasons = failing_gates(results.preservation)
    else:
        reasons = [] if objective_ok else objective_reasons(fraction, semantic, results.objective)
    return Decision(status, reward_from(fraction, semantic, status, objective_ok), True, preserved, objective_ok,
                    fraction, semantic, reasons=reasons)


def objective_reasons(fraction: float, semantic: float, objective: dict[str, GateResult]) -> list[str]:
    """Why the objective failed, and whether that cost anything: the cap binds only above it."""
    raw = raw_reward(fraction, semantic)
    if raw > REWARD_CAP:
        prefix = f"capped at {REWARD_CAP:g} (R {raw:.4f}): objective not met: "
    else:
        prefix = f"objective not met (R {raw:.4f}, cap {REWARD_CAP:g} not reached): "
    return [prefix + r for r in failing_gates(objective)]


# 5. closed book -----------------------------------------------------------

CLOSED_BOOK_STATUS = {"violation": Status.CLOSED_BOOK_VIOLATION, "unverified": Status.CLOSED_BOOK_UNVERIFIED}


def apply_closed_book(decision: Decision, verdict_status: str | None, reason: str = "") -> Decision:
    """A closed-book violation or an unverifiable trajectory zeroes a measured reward; the
    measured one stays in raw_authored_usd, with every other figure. A partial run (no
    reward) and an infrastructure error (not a score) are left as they are."""
    raw = decision.authored_usd if decision.raw_authored_usd is None else decision.raw_authored_usd
    status = CLOSED_BOOK_STATUS.get(verdict_status or "")
    if status is None or decision.status in (Status.PARTIAL, Status.INFRASTRUCTURE_ERROR):
        return dataclasses.replace(decision, raw_authored_usd=raw)
    why = f"{status.value}: reward 0 (measured {raw:.4f}, status {decision.status.value}): {reason}"
    zeroed = reward_from(decision.targeted_repair_fraction, decision.targeted_semantic_score, status,
                         decision.objective_success)
    return dataclasses.replace(decision, status=status, authored_usd=zeroed, raw_authored_usd=raw,
                               reasons=[why, *decision.reasons])
