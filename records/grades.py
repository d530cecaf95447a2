"""From the graders' files to table columns: grade.json, visual.json, physical.json.

A grade.json is read by scoring/stored_grade.py: this version's format as `Grade`, a file written
by an earlier verifier version by its one tolerant path (a benchmark's history holds both, and
must be ingested, never refused; an unknown field is kept in the stored JSON and ignored here, a
field of the wrong type becomes null). Only the key of a grade (its ``scoring_version`` and
``verifier_version``) is required. The separate grades' records are read the same way: this
version's format as its model (`VisualRecord`, `PhysicalRecord`), an earlier one field by field.
"""
from __future__ import annotations

from usd_repair_verifier.scoring.stored_grade import StoredGrade, number, stored, text


def is_solved(status: str | None, objective_success: bool | None, f: float | None) -> bool:
    """A full repair: graded, objective success, every targeted check passed."""
    return status == "graded" and objective_success is True and f is not None and f >= 1.0


def _key(grade: StoredGrade, data: dict, name: str) -> str:
    value = getattr(grade, name)
    if value is None:
        raise ValueError(f"the grade has no usable {name} (got {data.get(name)!r})")
    return value


def grade_columns(data: dict) -> dict:
    """The `grades` columns of a parsed grade.json (the episode and origin aside)."""
    grade = stored(data)
    f = grade.targeted_repair_fraction
    return {
        "scoring_version": _key(grade, data, "scoring_version"),
        "verifier_version": _key(grade, data, "verifier_version"),
        "status": grade.status,
        "authored_usd": grade.authored_usd,
        "raw_authored_usd": grade.raw_authored_usd,
        "f": f,
        "s": grade.targeted_semantic_score,
        "objective_success": grade.objective_success,
        "submission_valid": grade.submission_valid,
        "preservation_pass": grade.preservation_pass,
        "closed_book": grade.closed_book,
        "network_violations": grade.network_violations,
        "infrastructure_error": grade.infrastructure_error,
        "solved": is_solved(grade.status, grade.objective_success, f),
        "case_id": grade.case_id,
        "profile_digest": grade.profile_digest,
        "candidate_digest": grade.candidate_digest,
    }


def check_rows(data: dict) -> list[dict]:
    """One `checks` row per check of the grade, the fault's kind looked up in its `faults`."""
    return [{"check_id": c.id, "fault_id": c.fault, "fault_kind": c.fault_kind, "family": c.family,
             "measure": c.measure, "target": c.target, "passed": c.passed, "progress": c.progress}
            for c in stored(data).checks]


def grader_version(record: dict) -> str:
    """The separate grade's version key: its verifier_version, else its record_version."""
    version = record.get("verifier_version")
    if isinstance(version, str) and version and len(version) <= 64:
        return version
    return f"record-{record.get('record_version')}"[:64]


# Earlier visual grades named the verifier's own failure `error`; every grader's file now says
# `infrastructure_error` for it (the same meaning: only the word changed), and so does the store.
EARLIER_STATUSES = {"visual": {"error": "infrastructure_error"}}
# A count outside this range is not stored (the column is a 32-bit integer).
COUNT_LIMIT = 2 ** 31


def separate_columns(kind: str, record: dict) -> dict:
    """The `visual` or `physical` columns of a parsed record (the episode aside). A record of this
    version's format is read as its model (VisualRecord, PhysicalRecord); any other field by
    field, as stored grades are: a store holds records of earlier versions (the committed Harbor
    job's are record_version 1, which today's models refuse). Both read a current record alike."""
    if not isinstance(record, dict):
        raise ValueError(f"{kind}.json is not a JSON object")
    typed = current_record(kind, record)
    if typed is None:
        return _earlier_record_columns(kind, record)
    columns = {"grader_version": grader_version(record), "status": typed.status, "reason": typed.reason}
    if kind == "visual":
        judge = typed.judge
        model = (judge.models_answered[0] if judge.models_answered else judge.model_requested) if judge else None
        columns.update(score=number(typed.score), model=model,
                       rubric_digest=typed.rubric.digest if typed.rubric else None)
    else:
        summary, engine = typed.summary, typed.engine

        def count(value: int) -> int | None:
            return value if 0 <= value < COUNT_LIMIT else None

        columns.update(measured=count(summary.measured), passed=count(summary.passed), failed=count(summary.failed),
                       unmeasured=count(summary.null), engine_versions=engine.versions if engine else None)
    return columns


def current_record(kind: str, record: dict):
    """The record as its grader's model, or None when it is not of this version's format."""
    from pydantic import ValidationError

    from usd_repair_verifier.physical.record import PhysicalRecord
    from usd_repair_verifier.visual.record import VisualRecord

    try:
        return {"visual": VisualRecord, "physical": PhysicalRecord}[kind].model_validate(record)
    except ValidationError:
        return None


def _earlier_record_columns(kind: str, record: dict) -> dict:
    """The tolerant path for the separate grades' records: a field of the wrong type null."""
    status = text(record.get("status"))
    columns = {"grader_version": grader_version(record),
               "status": EARLIER_STATUSES.get(kind, {}).get(status, status),
               "reason": text(record.get("reason"))}
    if kind == "visual":
        judge = record.get("judge") if isinstance(record.get("judge"), dict) else {}
        answered = judge.get("models_answered")
        model = answered[0] if isinstance(answered, list) and answered else judge.get("model_requested")
        rubric = record.get("rubric") if isinstance(record.get("rubric"), dict) else {}
        columns.update(score=number(record.get("score")), model=text(model),
                       rubric_digest=text(rubric.get("digest")))
    else:
        summary = record.get("summary") if isinstance(record.get("summary"), dict) else {}
        engine = record.get("engine") if isinstance(record.get("engine"), dict) else {}
        versions = engine.get("versions")

        def count(name):
            value = summary.get(name)
            ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < COUNT_LIMIT
            return value if ok else None

        columns.update(measured=count("measured"), passed=count("passed"), failed=count("failed"),
                       unmeasured=count("null"), engine_versions=versions if isinstance(versions, dict) else None)
    return columns
