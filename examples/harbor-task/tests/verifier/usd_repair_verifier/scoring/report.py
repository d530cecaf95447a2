"""grade.json: the decision plus everything a person needs to see why (docs/grade-json.md)."""
from __future__ import annotations

import os
import platform
import stat

from usd_repair_verifier.profiles.digest import tree_digest
from usd_repair_verifier.profiles.schema import SCORING_VERSION

from . import VERIFIER_VERSION
from .reward import (REWARD_CAP, WEIGHT_F, WEIGHT_S, ZEROED, Decision, TestRecord, raw_reward, results_by_kind,
                     reward_from)

# Hashing a hostile submission must stay cheap: beyond this many bytes it is not hashed.
MAX_DIGEST_BYTES = 1 << 30


def candidate_digest(folder) -> dict:
    total = 0
    try:
        for dirpath, _, filenames in os.walk(folder, followlinks=False):
            for name in filenames:
                info = os.lstat(os.path.join(dirpath, name))
                if stat.S_ISREG(info.st_mode):
                    total += info.st_size
        if total > MAX_DIGEST_BYTES:
            return {"digest": None, "reason": f"{total} bytes: too large to hash"}
        if not os.path.isdir(folder):
            return {"digest": None, "reason": "not a folder"}
        return {"digest": tree_digest(folder), "bytes": total}
    except Exception as error:  # an odd submission must not stop the report from being written
        return {"digest": None, "reason": f"cannot hash: {type(error).__name__}: {error}"}


def build(decision: Decision, records: list[TestRecord], state, elapsed: float) -> dict:
    found = results_by_kind(records)
    case = state.case
    closed = getattr(state, "closed_book", None)   # None: the run ended before the rule was applied
    profile = case.profile if case else None
    checks = []
    for spec in profile.checks if profile else ():
        m = found["check"].get(spec.id)
        checks.append({
            "id": spec.id,
            "fault": spec.fault,
            "family": spec.family,
            "measure": spec.measure,
            "target": spec.target,
            "passed": m.get("passed") if m else None,
            "progress": m.get("progress") if m else None,
            "details": m.get("details") if m else NOT_RUN,
            "components": m.get("components") if m else {},
        })
    timings = {"total_s": round(elapsed, 3), "tests_s": round(sum(r.seconds for r in records), 6)}
    for r in found["validity"].values():
        timings.update({f"{k}_s": v for k, v in (r.get("timings") or {}).items()})
        break
    # The grading process's stage timings ride on the validity records; the report keeps
    # them only under "timings", so that everything else is the same for the same bytes.
    found["validity"] = {name: {k: v for k, v in r.items() if k != "timings"} for name, r in found["validity"].items()}
    return {
        "status": decision.status.value,
        "authored_usd": decision.authored_usd,
        "raw_authored_usd": decision.authored_usd if decision.raw_authored_usd is None else decision.raw_authored_usd,
        "network_violations": (closed or {}).get("violations", []),
        "submission_valid": decision.submission_valid,
        "preservation_pass": decision.preservation_pass,
        "targeted_repair_fraction": decision.targeted_repair_fraction,
        "targeted_semantic_score": decision.targeted_semantic_score,
        "objective_success": decision.objective_success,
        "infrastructure_error": decision.infrastructure_error,
        "reasons": decision.reasons,
        "missing_tests": decision.missing,
        "gates": {
            kind: {name: {"passed": r.get("passed"), "reason": r.get("reason")} for name, r in found[kind].items()}
            for kind in ("validity", "preservation", "objective")
        },
        "validity": found["validity"],
        "preservation": found["preservation"],
        "checks": checks,
        "faults": [{"id": f.id, "kind": f.kind, "target": f.target} for f in profile.faults] if profile else [],
        "digests": {
            "candidate": candidate_digest(state.submission),
            "reference": profile.reference.digest if profile else None,
            "input": profile.input.digest if profile else None,
        },
        "profile": {
            "id": profile.id if profile else None,
            "version": profile.version if profile else None,
            "digest": case.profile_digest if case else None,
            "tolerances": profile.tolerances if profile else None,
        },
        "scoring_version": SCORING_VERSION,
        "verifier_version": VERIFIER_VERSION,
        "environment": {"python": platform.python_version()},
        "timings": timings,
        "closed_book": closed,
        "visual": None,
        "physical": None,
    }


def closed_book_lines(grade: dict, max_violations: int | None = None) -> list[str]:
    """The closed-book verdict, zeroed reward and violations first: what a reviewer must see at once."""
    closed = grade.get("closed_book") or {}
    if not closed.get("required"):
        return []
    zeroed = grade.get("status") in ("closed_book_violation", "closed_book_unverified")
    head = (f"CLOSED BOOK {str(closed.get('status')).upper()}: reward 0, the measured reward "
            f"{_figure(grade.get('raw_authored_usd'))} is kept as raw_authored_usd" if zeroed
            else f"closed book: {closed.get('status')}")
    lines = [head, f"  {closed.get('reason')}", f"  trajectory: {closed.get('trajectory')}"]
    violations = closed.get("violations") or []
    for v in violations[:max_violations]:
        what = {"web_tool": "web tool", "network_command": "network client"}.get(v.get("kind"), f"address {v.get('url')}")
        lines.append(f"  step {v.get('step_id')} of {v.get('trajectory')}: {v.get('tool')}: {what}: {v.get('excerpt')}")
    if max_violations is not None and len(violations) > max_violations:
        lines.append(f"  ... and {len(violations) - max_violations} more network violations")
    return lines


def _figure(value) -> str:
    return "-" if value is None else (f"{value:.4f}" if isinstance(value, float) else str(value))


# What a check that left no measurement says in grade.json (its "details").
NOT_RUN = "not run"
# A grade without a reward: F and S were not computed over the whole case, so none is shown.
NO_REWARD_STATUSES = ("partial", "infrastructure_error")


def not_run_by_kind(grade: dict) -> dict[str, list[str]]:
    """The required tests that did not run, by kind ("check", "validity", ...)."""
    found: dict[str, list[str]] = {}
    for item in grade.get("missing_tests") or []:
        kind, _, name = str(item).partition(":")
        found.setdefault(kind, []).append(name)
    return found


def gate_summary(grade: dict, kind: str) -> str:
    """One gate kind in a few words: what failed, what passed, what never ran."""
    gates = (grade.get("gates") or {}).get(kind) or {}
    failed = [name for name, g in gates.items() if g.get("passed") is not True]
    skipped = not_run_by_kind(grade).get(kind, [])
    if not gates:
        return f"not run ({len(skipped)} gates)" if skipped else "not run"
    parts = [f"FAILED {', '.join(failed)}"] if failed else []
    passed = len(gates) - len(failed)
    if passed:
        parts.append(f"{passed} pass" if failed or skipped else f"all {passed} pass")
    if skipped:
        parts.append(f"{len(skipped)} not run")
    return "; ".join(parts)


def headline(grade: dict) -> str:
    status = grade.get("status")
    if status in NO_REWARD_STATUSES:
        why = "partial run" if status == "partial" else "infrastructure error"
        return f"status {status}   authored_usd {_figure(grade.get('authored_usd'))}   no F or S ({why})"
    return (f"status {status}   authored_usd {_figure(grade.get('authored_usd'))}   "
            f"F {_figure(grade.get('targeted_repair_fraction'))}   S {_figure(grade.get('targeted_semantic_score'))}   "
            f"objective {_figure(grade.get('objective_success'))}")


def failing_checks(grade: dict) -> list[dict]:
    """Checks that ran and failed, least progress first (a check that did not run is not failing)."""
    failing = [c for c in grade.get("checks", []) if c.get("passed") is False]
    return sorted(failing, key=lambda c: (c.get("progress") if c.get("progress") is not None else -1.0, c.get("id")))


def checks_not_run(grade: dict) -> list[str]:
    """The checks that left no measurement: deselected (a partial run), never reached, or raised
    instead of measuring (an infrastructure error)."""
    missing = not_run_by_kind(grade).get("check", [])
    recorded_none = [c.get("id") for c in grade.get("checks", [])
                     if c.get("passed") is None and not c.get("components") and c.get("details") == NOT_RUN]
    return missing + [i for i in recorded_none if i not in missing]


def unmeasured_checks(grade: dict) -> list[dict]:
    """Checks that ran but could not measure (passed is null with a result)."""
    not_run = set(checks_not_run(grade))
    return [c for c in grade.get("checks", []) if c.get("passed") is None and c.get("id") not in not_run]


def summary_lines(grade: dict, max_checks: int = 10) -> list[str]:
    """A short, readable summary of grade.json for the terminal."""
    lines = [headline(grade)]
    lines += closed_book_lines(grade, max_violations=5)
    if grade.get("infrastructure_error"):
        lines.append(f"infrastructure error: {grade['infrastructure_error']}")
    for kind in ("validity", "preservation", "objective"):
        lines.append(f"{kind:<13} {gate_summary(grade, kind)}")
    not_run = checks_not_run(grade)
    if grade.get("status") in NO_REWARD_STATUSES and not_run:
        lines.append(f"checks        {len(not_run)} of {len(grade.get('checks', []))} not run: no reward")
    for reason in grade.get("reasons", [])[:5]:
        lines.append(f"  - {reason}")
    failing = failing_checks(grade)
    for c in failing[:max_checks]:
        lines.append(f"  check {c['id']} ({c['target']}): progress {_figure(c['progress'])}: {c['details']}")
    if len(failing) > max_checks:
        lines.append(f"  ... and {len(failing) - max_checks} more failing checks")
    return lines


def _component_line(name: str, c: dict) -> str:
    return (f"      {name}: {_figure(c.get('error'))} (tolerance {_figure(c.get('tolerance'))}, "
            f"input {_figure(c.get('input_error'))}; reference {c.get('reference')!r}, candidate {c.get('candidate')!r})")


def arithmetic(grade: dict) -> str | None:
    """The reward's arithmetic as one line, or None when no reward was computed."""
    status = grade.get("status")
    if status == "partial":
        missing = grade.get("missing_tests") or []
        return f"partial run: {len(missing)} required test(s) not run, so no F, S or reward was computed"
    if status == "infrastructure_error":
        return "infrastructure error: no F, S or reward was computed; reward.json holds the fallback 0 (not a score)"
    f, s = grade.get("targeted_repair_fraction"), grade.get("targeted_semantic_score")
    if f is None or s is None:
        return None
    r = raw_reward(f, s)
    how = f"R = {WEIGHT_F:g} F + {WEIGHT_S:g} S = {WEIGHT_F:g} x {f:.4f} + {WEIGHT_S:g} x {s:.4f} = {r:.4f}"
    objective = grade.get("objective_success")
    value = reward_from(f, s, status, objective)
    if status in ZEROED:
        return how + f"; {status}: reward {value:g}"
    if objective is False:
        if value < r:
            return how + f"; an objective gate failed: capped at {REWARD_CAP:g}"
        return how + f"; an objective gate failed, but R is below the cap {REWARD_CAP:g}: reward R"
    return how


def explain_lines(grade: dict) -> list[str]:
    """A readable account of a grade.json: the reward and how it was reached, the gates,
    then the failing checks, least progress first; what did not run is said so."""
    lines = closed_book_lines(grade)
    lines.append(f"status: {grade.get('status')}    authored_usd: {_figure(grade.get('authored_usd'))}")
    if grade.get("infrastructure_error"):
        lines.append(f"infrastructure error (not a score): {grade['infrastructure_error']}")
    how = arithmetic(grade)
    if how:
        lines.append(how)
    not_run = not_run_by_kind(grade)
    for kind in ("validity", "preservation", "objective"):
        gates = (grade.get("gates") or {}).get(kind) or {}
        for name, g in gates.items():
            lines.append(f"  {kind:<12} {'pass' if g.get('passed') else 'FAIL'}  {name}: {g.get('reason')}")
        for name in not_run.get(kind, []):
            lines.append(f"  {kind:<12} not run  {name}")
        if not gates and not not_run.get(kind):
            lines.append(f"  {kind:<12} not run")
    checks = failing_checks(grade)
    if checks:
        lines.append("failing checks (least progress first):")
    for c in checks:
        lines.append(f"  {c['id']} on {c['target']}: progress {_figure(c.get('progress'))}")
        for name, comp in (c.get("components") or {}).items():
            if not comp.get("passed"):
                lines.append(_component_line(name, comp))
    for c in unmeasured_checks(grade):
        lines.append(f"  {c['id']} on {c['target']}: unmeasured: {c.get('details')}")
    if checks_not_run(grade):
        lines.append("checks not run: " + ", ".join(checks_not_run(grade)))
    passing = [c["id"] for c in grade.get("checks", []) if c.get("passed") is True]
    if passing:
        lines.append("passing checks: " + ", ".join(passing))
    return lines
