"""From the graders' files to table columns: grade.json, visual.json, physical.json.

Tolerant by design: a benchmark's history holds files written by other verifier versions, so they
are not loaded as this version's `Grade` (which would refuse them): an unknown field is kept in the
stored JSON and ignored here, a field of the wrong type becomes null (never a crash, never a
guess). Only the key of a grade (its ``scoring_version`` and ``verifier_version``) is required.
"""
from __future__ import annotations

import math
from typing import Any

# Statuses the closed-book grading writes: the reward is withheld (violation) or the run could not
# prove the agent had no network (unverified). Stored as the grade's `closed_book` outcome.
CLOSED_BOOK_STATUSES = {"closed_book_violation": "violation", "closed_book_unverified": "unverified"}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:             # an integer too large for a float
        return None
    return value if math.isfinite(value) else None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _version(grade: dict, name: str) -> str:
    value = grade.get(name)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value or len(value) > 64:
        raise ValueError(f"the grade has no usable {name} (got {value!r})")
    return value


def _closed_book(grade: dict) -> str | None:
    status = grade.get("status")
    if status in CLOSED_BOOK_STATUSES:
        return CLOSED_BOOK_STATUSES[status]
    block = grade.get("closed_book")               # {"required": false} on an open-book case
    if isinstance(block, dict) and block.get("required") is not False:
        outcome = block.get("status")               # clean, violation, unverified
        return outcome if isinstance(outcome, str) else None
    return None


def is_solved(status: str | None, objective_success: bool | None, f: float | None) -> bool:
    """A full repair: graded, objective success, every targeted check passed."""
    return status == "graded" and objective_success is True and f is not None and f >= 1.0


def grade_columns(grade: dict) -> dict:
    """The `grades` columns of a parsed grade.json (the episode and origin aside)."""
    if not isinstance(grade, dict):
        raise ValueError("grade.json is not a JSON object")
    status = _text(grade.get("status"))
    f = _number(grade.get("targeted_repair_fraction"))
    objective = _flag(grade.get("objective_success"))
    digests = grade.get("digests") if isinstance(grade.get("digests"), dict) else {}
    candidate = digests.get("candidate") if isinstance(digests.get("candidate"), dict) else {}
    profile = grade.get("profile") if isinstance(grade.get("profile"), dict) else {}
    violations = grade.get("network_violations")
    return {
        "scoring_version": _version(grade, "scoring_version"),
        "verifier_version": _version(grade, "verifier_version"),
        "status": status,
        "authored_usd": _number(grade.get("authored_usd")),
        "raw_authored_usd": _number(grade.get("raw_authored_usd")),
        "f": f,
        "s": _number(grade.get("targeted_semantic_score")),
        "objective_success": objective,
        "submission_valid": _flag(grade.get("submission_valid")),
        "preservation_pass": _flag(grade.get("preservation_pass")),
        "closed_book": _closed_book(grade),
        "network_violations": violations if isinstance(violations, list) else None,
        "infrastructure_error": _text(grade.get("infrastructure_error")),
        "solved": is_solved(status, objective, f),
        "case_id": _text(profile.get("id")),
        "profile_digest": _text(profile.get("digest")),
        "candidate_digest": _text(candidate.get("digest")),
    }


def check_rows(grade: dict) -> list[dict]:
    """One `checks` row per check of the grade, the fault's kind looked up in its `faults`."""
    kinds = {}
    for fault in grade.get("faults") or []:
        if isinstance(fault, dict) and isinstance(fault.get("id"), str):
            kinds[fault["id"]] = _text(fault.get("kind"))
    rows, seen = [], set()
    for check in grade.get("checks") or []:
        if not isinstance(check, dict) or not isinstance(check.get("id"), str):
            continue
        if check["id"] in seen or len(check["id"]) > 300:   # the key must stay unique and bounded
            continue
        seen.add(check["id"])
        fault = _text(check.get("fault"))
        rows.append({
            "check_id": check["id"], "fault_id": fault, "fault_kind": kinds.get(fault),
            "family": _text(check.get("family")), "measure": _text(check.get("measure")),
            "target": _text(check.get("target")), "passed": _flag(check.get("passed")),
            "progress": _number(check.get("progress")),
        })
    return rows


def grader_version(record: dict) -> str:
    """The separate grade's version key: its verifier_version, else its record_version."""
    version = record.get("verifier_version")
    if isinstance(version, str) and version and len(version) <= 64:
        return version
    return f"record-{record.get('record_version')}"[:64]


def separate_columns(kind: str, record: dict) -> dict:
    """The `visual` or `physical` columns of a parsed record (the episode aside)."""
    if not isinstance(record, dict):
        raise ValueError(f"{kind}.json is not a JSON object")
    columns = {"grader_version": grader_version(record), "status": _text(record.get("status")),
               "reason": _text(record.get("reason"))}
    if kind == "visual":
        judge = record.get("judge") if isinstance(record.get("judge"), dict) else {}
        answered = judge.get("models_answered")
        model = answered[0] if isinstance(answered, list) and answered else judge.get("model_requested")
        rubric = record.get("rubric") if isinstance(record.get("rubric"), dict) else {}
        columns.update(score=_number(record.get("score")), model=_text(model),
                       rubric_digest=_text(rubric.get("digest")))
    else:
        summary = record.get("summary") if isinstance(record.get("summary"), dict) else {}
        engine = record.get("engine") if isinstance(record.get("engine"), dict) else {}
        versions = engine.get("versions")

        def count(name):
            value = summary.get(name)
            ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2 ** 31
            return value if ok else None

        columns.update(measured=count("measured"), passed=count("passed"), failed=count("failed"),
                       unmeasured=count("null"), engine_versions=versions if isinstance(versions, dict) else None)
    return columns
