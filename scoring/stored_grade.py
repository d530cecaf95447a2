"""A grade.json from any run, as the readers of stored grades use it: `usdgrade records ingest`
(records/) and `usdgrade regrade`'s sources (regrade/sources.py).

A benchmark's history holds grade.json files written by earlier verifier versions, and, where the
verifier left none, the few fields the task's test.sh writes itself. They must be ingested and
re-graded, never refused. So `stored` reads a file of this version's format as `Grade`
(grade_file.read) and takes every field from its attributes; any other file goes through the one
tolerant path, `_earlier`: field by field, a field of the wrong type null, an unknown field ignored
(records keep the whole file as written). docs/grade-json.md says why. Both paths give the same
`StoredGrade` for a file of this version's format (tests/test_stored_grade.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from usd_repair_verifier.profiles.errors import NotAGrade

from .grade_file import Grade, read
from .reward import Status

# Statuses only the closed-book rule gives, and the rule's outcome each one stands for.
CLOSED_BOOK_STATUSES = {Status.CLOSED_BOOK_VIOLATION.value: "violation",
                        Status.CLOSED_BOOK_UNVERIFIED.value: "unverified"}


@dataclass(frozen=True)
class StoredCheck:
    id: str
    fault: str | None
    fault_kind: str | None          # looked up in the grade's faults
    family: str | None
    measure: str | None
    target: str | None
    passed: bool | None
    progress: float | None


@dataclass(frozen=True)
class StoredGrade:
    """What a stored grade says. `current`: read as this version's `Grade`; False: an earlier
    format, read by the tolerant path."""

    current: bool
    scoring_version: str | None
    verifier_version: str | None
    status: str | None
    authored_usd: float | None
    raw_authored_usd: float | None
    targeted_repair_fraction: float | None
    targeted_semantic_score: float | None
    objective_success: bool | None
    submission_valid: bool | None
    preservation_pass: bool | None
    infrastructure_error: str | None
    network_violations: list | None
    closed_book: str | None         # the rule's outcome (clean, violation, unverified); None: open book
    closed_book_required: bool      # the grade applied the closed-book rule
    case_id: str | None
    profile_digest: str | None
    candidate_digest: str | None
    checks: tuple[StoredCheck, ...]


def stored(data: Any) -> StoredGrade:
    """A parsed grade.json of any version (ValueError when it is not even a JSON object)."""
    if not isinstance(data, dict):
        raise ValueError("grade.json is not a JSON object")
    try:
        grade = read(data)
    except NotAGrade:
        return _earlier(data)
    return _current(grade)


def _current(grade: Grade) -> StoredGrade:
    status = grade.status.value
    block = grade.closed_book
    outcome = CLOSED_BOOK_STATUSES.get(status) or (block.status if block is not None and block.required else None)
    kinds = {f.id: f.kind for f in grade.faults}
    checks, seen = [], set()
    for c in grade.checks:
        if c.id in seen or len(c.id) > 300:   # the key must stay unique and bounded
            continue
        seen.add(c.id)
        checks.append(StoredCheck(c.id, c.fault, kinds.get(c.fault), c.family, c.measure, c.target, c.passed,
                                  number(c.progress)))
    return StoredGrade(
        current=True, scoring_version=_version(grade.scoring_version),
        verifier_version=_version(grade.verifier_version), status=status,
        authored_usd=grade.authored_usd, raw_authored_usd=grade.raw_authored_usd,
        targeted_repair_fraction=grade.targeted_repair_fraction,
        targeted_semantic_score=grade.targeted_semantic_score, objective_success=grade.objective_success,
        submission_valid=grade.submission_valid, preservation_pass=grade.preservation_pass,
        infrastructure_error=grade.infrastructure_error,
        network_violations=[v.model_dump() for v in grade.network_violations],
        closed_book=outcome,
        closed_book_required=(block is not None and block.required) or status in CLOSED_BOOK_STATUSES,
        case_id=grade.profile.id, profile_digest=grade.profile.digest,
        candidate_digest=grade.digests.candidate.digest, checks=tuple(checks))


# The tolerant path: the only reader of a grade.json that is not this version's `Grade`. Its field
# readers also read the separate grades' records (records/grades.py).

def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:             # an integer too large for a float
        return None
    return value if math.isfinite(value) else None


def flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _object(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _version(value: Any) -> str | None:
    """A version key: a string (a number as its text) of 1 to 64 characters, else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    return value if isinstance(value, str) and 0 < len(value) <= 64 else None


def _earlier(grade: dict) -> StoredGrade:
    status = text(grade.get("status"))
    block = grade.get("closed_book")               # {"required": false} on an open-book case
    outcome = CLOSED_BOOK_STATUSES.get(status)
    if outcome is None and isinstance(block, dict) and block.get("required") is not False:
        outcome = text(block.get("status"))       # clean, violation, unverified
    kinds = {}
    for fault in grade.get("faults") or []:
        if isinstance(fault, dict) and isinstance(fault.get("id"), str):
            kinds[fault["id"]] = text(fault.get("kind"))
    checks, seen = [], set()
    for check in grade.get("checks") or []:
        if not isinstance(check, dict) or not isinstance(check.get("id"), str):
            continue
        if check["id"] in seen or len(check["id"]) > 300:
            continue
        seen.add(check["id"])
        fault = text(check.get("fault"))
        checks.append(StoredCheck(check["id"], fault, kinds.get(fault), text(check.get("family")),
                                  text(check.get("measure")), text(check.get("target")),
                                  flag(check.get("passed")), number(check.get("progress"))))
    profile = _object(grade.get("profile"))
    violations = grade.get("network_violations")
    return StoredGrade(
        current=False, scoring_version=_version(grade.get("scoring_version")),
        verifier_version=_version(grade.get("verifier_version")), status=status,
        authored_usd=number(grade.get("authored_usd")), raw_authored_usd=number(grade.get("raw_authored_usd")),
        targeted_repair_fraction=number(grade.get("targeted_repair_fraction")),
        targeted_semantic_score=number(grade.get("targeted_semantic_score")),
        objective_success=flag(grade.get("objective_success")),
        submission_valid=flag(grade.get("submission_valid")),
        preservation_pass=flag(grade.get("preservation_pass")),
        infrastructure_error=text(grade.get("infrastructure_error")),
        network_violations=violations if isinstance(violations, list) else None,
        closed_book=outcome,
        closed_book_required=(isinstance(block, dict) and block.get("required") is True)
        or status in CLOSED_BOOK_STATUSES,
        case_id=text(profile.get("id")), profile_digest=text(profile.get("digest")),
        candidate_digest=text(_object(_object(grade.get("digests")).get("candidate")).get("digest")),
        checks=tuple(checks))
