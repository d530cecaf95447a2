"""A grade for a person: the terminal summary of `pytest checks`, `usdgrade explain`'s account,
and the pieces the HTML page shares with them. Everything is read from the Grade model's fields
(scoring/grade_file.py), and every number is shown with its unit: a log-ratio as the two values
and their ratio, a flag as agrees or differs.
"""
from __future__ import annotations

from usd_repair_verifier.profiles.result_record import component_text
from usd_repair_verifier.profiles.schema import selection_text

from .grade_file import NOT_RUN, CheckEntry, Grade
from .reward import REWARD_CAP, WEIGHT_F, WEIGHT_S, ZEROED, raw_reward, reward_from

# A grade without a reward: F and S were not computed over the whole case, so none is shown.
NO_REWARD_STATUSES = ("partial", "infrastructure_error")
GATE_KINDS = ("validity", "preservation", "objective")


def figure(value) -> str:
    return "-" if value is None else (f"{value:.4f}" if isinstance(value, float) else str(value))


def _status(grade: Grade) -> str:
    return grade.status.value


def check_failures(check: CheckEntry) -> str:
    """What a failing check got wrong, from its components (its `details` if it recorded none)."""
    failing = check.failing()
    if not failing:
        return check.details
    return "; ".join(component_text(name, c) for name, c in failing.items())


# --- what ran and what did not ------------------------------------------------------------------

def not_run_by_kind(grade: Grade) -> dict[str, list[str]]:
    """The required tests that did not run, by kind ("check", "validity", ...)."""
    found: dict[str, list[str]] = {}
    for item in grade.missing_tests:
        kind, _, name = str(item).partition(":")
        found.setdefault(kind, []).append(name)
    return found


def gates_of(grade: Grade, kind: str) -> dict:
    return getattr(grade.gates, kind)


def gate_summary(grade: Grade, kind: str) -> str:
    """One gate kind in a few words: what failed, what passed, what never ran."""
    gates = gates_of(grade, kind)
    failed = [name for name, g in gates.items() if g.passed is not True]
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


def failing_checks(grade: Grade) -> list[CheckEntry]:
    return grade.failing_checks()


def checks_not_run(grade: Grade) -> list[str]:
    """The checks that left no measurement: deselected (a partial run), never reached, or raised
    instead of measuring (an infrastructure error)."""
    missing = not_run_by_kind(grade).get("check", [])
    recorded_none = [c.id for c in grade.checks if c.passed is None and not c.components and c.details == NOT_RUN]
    return missing + [i for i in recorded_none if i not in missing]


def unmeasured_checks(grade: Grade) -> list[CheckEntry]:
    """Checks that ran but could not measure (passed is null with a result)."""
    not_run = set(checks_not_run(grade))
    return [c for c in grade.checks if c.passed is None and c.id not in not_run]


# --- the summary and the account -----------------------------------------------------------------

def closed_book_lines(grade: Grade, max_violations: int | None = None) -> list[str]:
    """The closed-book verdict, zeroed reward and violations first: what a reviewer must see at once."""
    closed = grade.closed_book
    if closed is None or not closed.required:
        return []
    zeroed = _status(grade) in ("closed_book_violation", "closed_book_unverified")
    head = (f"CLOSED BOOK {str(closed.status).upper()}: reward 0, the measured reward "
            f"{figure(grade.raw_authored_usd)} is kept as raw_authored_usd" if zeroed
            else f"closed book: {closed.status}")
    lines = [head, f"  {closed.reason}", f"  trajectory: {closed.trajectory}"]
    violations = closed.violations or []
    for v in violations[:max_violations]:
        what = {"web_tool": "web tool", "network_command": "network client"}.get(v.kind, f"address {v.url}")
        lines.append(f"  step {v.step_id} of {v.trajectory}: {v.tool}: {what}: {v.excerpt}")
    if max_violations is not None and len(violations) > max_violations:
        lines.append(f"  ... and {len(violations) - max_violations} more network violations")
    return lines


def headline(grade: Grade) -> str:
    status = _status(grade)
    if status in NO_REWARD_STATUSES:
        why = "partial run" if status == "partial" else "infrastructure error"
        return f"status {status}   authored_usd {figure(grade.authored_usd)}   no F or S ({why})"
    return (f"status {status}   authored_usd {figure(grade.authored_usd)}   "
            f"F {figure(grade.targeted_repair_fraction)}   S {figure(grade.targeted_semantic_score)}   "
            f"objective {figure(grade.objective_success)}")


def _check_line(c: CheckEntry) -> str:
    kind = f" ({c.fault_kind})" if c.fault_kind else ""
    return f"check {c.id}{kind} on {c.target}: progress {figure(c.progress)}"


def summary_lines(grade: Grade, max_checks: int = 10) -> list[str]:
    """A short, readable summary of grade.json for the terminal."""
    lines = [headline(grade)]
    if grade.variant_selections:   # a SimReady case: the engine it grades
        lines.append(f"{'variants':<13} {selection_text(grade.variant_selections)} (the case's, composed in the "
                     f"session layer of every stage)")
    lines += closed_book_lines(grade, max_violations=5)
    if grade.infrastructure_error:
        lines.append(f"infrastructure error: {grade.infrastructure_error}")
    for kind in GATE_KINDS:
        lines.append(f"{kind:<13} {gate_summary(grade, kind)}")
    not_run = checks_not_run(grade)
    if _status(grade) in NO_REWARD_STATUSES and not_run:
        lines.append(f"checks        {len(not_run)} of {len(grade.checks)} not run: no reward")
    for reason in grade.reasons[:5]:
        lines.append(f"  - {reason}")
    failing = failing_checks(grade)
    for c in failing[:max_checks]:
        lines.append(f"  {_check_line(c)}: {check_failures(c)}")
    if len(failing) > max_checks:
        lines.append(f"  ... and {len(failing) - max_checks} more failing checks")
    return lines


def arithmetic(grade: Grade) -> str | None:
    """The reward's arithmetic as one line, or None when no reward was computed."""
    status = _status(grade)
    if status == "partial":
        return f"partial run: {len(grade.missing_tests)} required test(s) not run, so no F, S or reward was computed"
    if status == "infrastructure_error":
        return "infrastructure error: no F, S or reward was computed; reward.json holds the fallback 0 (not a score)"
    f, s = grade.targeted_repair_fraction, grade.targeted_semantic_score
    if f is None or s is None:
        return None
    r = raw_reward(f, s)
    how = f"R = {WEIGHT_F:g} F + {WEIGHT_S:g} S = {WEIGHT_F:g} x {f:.4f} + {WEIGHT_S:g} x {s:.4f} = {r:.4f}"
    objective = grade.objective_success
    value = reward_from(f, s, status, objective)
    if status in ZEROED:
        return how + f"; {status}: reward {value:g}"
    if objective is False:
        if value < r:
            return how + f"; an objective gate failed: capped at {REWARD_CAP:g}"
        return how + f"; an objective gate failed, but R is below the cap {REWARD_CAP:g}: reward R"
    return how


def _gate_lines(grade: Grade) -> list[str]:
    lines, not_run = [], not_run_by_kind(grade)
    for kind in GATE_KINDS:
        gates = gates_of(grade, kind)
        for name, g in gates.items():
            lines.append(f"  {kind:<12} {'pass' if g.passed else 'FAIL'}  {name}: {g.reason}")
        for name in not_run.get(kind, []):
            lines.append(f"  {kind:<12} not run  {name}")
        if not gates and not not_run.get(kind):
            lines.append(f"  {kind:<12} not run")
    return lines


def explain_lines(grade: Grade) -> list[str]:
    """A readable account of a grade.json: the reward and how it was reached, the gates, then the
    failing checks least progress first (each failing component in its units, against the input's
    error, with the check's fault kind); what did not run is said so."""
    lines = closed_book_lines(grade)
    lines.append(f"status: {_status(grade)}    authored_usd: {figure(grade.authored_usd)}")
    if grade.variant_selections:
        lines.append(f"variant selections: {selection_text(grade.variant_selections)} (the case's, composed in the "
                     f"session layer of reference, input and candidate)")
    if grade.infrastructure_error:
        lines.append(f"infrastructure error (not a score): {grade.infrastructure_error}")
    how = arithmetic(grade)
    if how:
        lines.append(how)
    lines += _gate_lines(grade)
    checks = failing_checks(grade)
    if checks:
        lines.append("failing checks (least progress first):")
    for c in checks:
        lines.append(f"  {c.id} on {c.target}: fault {c.fault} ({c.fault_kind or 'kind not recorded'}), "
                     f"{c.family}.{c.measure}, progress {figure(c.progress)}")
        for name, comp in c.failing().items():
            lines.append(f"      {component_text(name, comp, input_error=True)}")
    for c in unmeasured_checks(grade):
        lines.append(f"  {c.id} on {c.target}: unmeasured: {c.details}")
    if checks_not_run(grade):
        lines.append("checks not run: " + ", ".join(checks_not_run(grade)))
    passing = [c.id for c in grade.checks if c.passed is True]
    if passing:
        lines.append("passing checks: " + ", ".join(passing))
    return lines
