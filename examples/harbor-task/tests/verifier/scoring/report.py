"""grade.json: the decision plus everything a person needs to see why (SPEC section 9)."""
from __future__ import annotations

import os
import platform
import stat

from profiles.digest import tree_digest
from profiles.schema import SCORING_VERSION

from . import VERIFIER_VERSION
from .reward import Decision, TestRecord, results_by_kind

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
            "details": m.get("details") if m else "not run",
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
        "visual": None,
        "physical": None,
    }


def _figure(value) -> str:
    return "-" if value is None else (f"{value:.4f}" if isinstance(value, float) else str(value))


def summary_lines(grade: dict, max_checks: int = 10) -> list[str]:
    """A short, readable summary of grade.json for the terminal."""
    lines = [
        f"status {grade['status']}   authored_usd {_figure(grade['authored_usd'])}   "
        f"F {_figure(grade['targeted_repair_fraction'])}   S {_figure(grade['targeted_semantic_score'])}   "
        f"objective {_figure(grade['objective_success'])}",
    ]
    if grade.get("infrastructure_error"):
        lines.append(f"infrastructure error: {grade['infrastructure_error']}")
    for kind, gates in grade.get("gates", {}).items():
        failed = [name for name, g in gates.items() if not g.get("passed")]
        lines.append(f"{kind:<13} " + (f"FAILED {', '.join(failed)}" if failed else f"all {len(gates)} pass"))
    for reason in grade.get("reasons", [])[:5]:
        lines.append(f"  - {reason}")
    failing = [c for c in grade.get("checks", []) if c.get("passed") is not True]
    for c in failing[:max_checks]:
        lines.append(f"  check {c['id']} ({c['target']}): progress {_figure(c['progress'])}: {c['details']}")
    if len(failing) > max_checks:
        lines.append(f"  ... and {len(failing) - max_checks} more failing checks")
    return lines


def _component_line(name: str, c: dict) -> str:
    return (f"      {name}: {_figure(c.get('error'))} (tolerance {_figure(c.get('tolerance'))}, "
            f"input {_figure(c.get('input_error'))}; reference {c.get('reference')!r}, candidate {c.get('candidate')!r})")


def explain_lines(grade: dict) -> list[str]:
    """A readable account of a grade.json: the reward and how it was reached, the gates,
    then the failing checks, least progress first."""
    lines = [f"status: {grade.get('status')}    authored_usd: {_figure(grade.get('authored_usd'))}"]
    if grade.get("infrastructure_error"):
        lines.append(f"infrastructure error (not a score): {grade['infrastructure_error']}")
    f, s = grade.get("targeted_repair_fraction"), grade.get("targeted_semantic_score")
    if f is not None and s is not None:
        r = 0.5 * f + 0.5 * s
        how = f"R = 0.5 F + 0.5 S = 0.5 x {f:.4f} + 0.5 x {s:.4f} = {r:.4f}"
        if grade.get("status") in ("invalid", "preservation_failed"):
            how += f"; {grade['status']}: reward 0"
        elif grade.get("objective_success") is False:
            how += f"; an objective gate failed: capped at min(R, 0.99) = {min(r, 0.99):.4f}"
        lines.append(how)
    for kind in ("validity", "preservation", "objective"):
        for name, g in ((grade.get("gates") or {}).get(kind) or {}).items():
            lines.append(f"  {kind:<12} {'pass' if g.get('passed') else 'FAIL'}  {name}: {g.get('reason')}")
    checks = sorted((c for c in grade.get("checks", []) if c.get("passed") is not True),
                    key=lambda c: (c.get("progress") if c.get("progress") is not None else -1.0, c.get("id")))
    if checks:
        lines.append("failing checks (least progress first):")
    for c in checks:
        lines.append(f"  {c['id']} on {c['target']}: progress {_figure(c.get('progress'))}")
        for name, comp in (c.get("components") or {}).items():
            if not comp.get("passed"):
                lines.append(_component_line(name, comp))
    passing = [c["id"] for c in grade.get("checks", []) if c.get("passed") is True]
    if passing:
        lines.append("passing checks: " + ", ".join(passing))
    return lines
