"""What a check measures, and how a measurement becomes pass/fail and progress.

A family's measure function returns named *components*, each an error on the
scale that suits the quantity (metres, degrees, a log-ratio for positive
magnitudes, 0/1 for booleans) with its strict tolerance. Everything else is
shared here so that every family grades the same way (README, "Reward"):

- passed: every component's error is within its tolerance;
- progress: per component, 1 at or within tolerance, 0 at the input's frozen
  error (or within a ten-thousandth of it, SAME_AS_INPUT_RELATIVE: other builds' last bits), linear in between;
  averaged over the components that were broken in the input or are broken now
  (so an unchanged input scores 0, and breaking a healthy component while fixing
  another costs progress); 0 for the whole check while a component that marks a
  value invalid in itself fails (`voids_progress`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from usd_repair_verifier.profiles.jsonable import jsonable
from usd_repair_verifier.stage_snapshot.correspondence import Correspondence
from usd_repair_verifier.stage_snapshot.model import StageSnapshot

from usd_repair_verifier.profiles.result_record import (STAGE_POWERS, CheckResult, ComponentResult, StageUnitValues,
                                                       component_text)

# Log-ratio errors are capped so that a zero against a positive value stays finite.
MAX_LOG_RATIO = 50.0

# An error within this fraction of the input's frozen error is the input's error: the same
# broken geometry measured with other builds of numpy or scipy differs in its last bits (seen:
# 0.009148486447648832 against a frozen 0.009148486447648839), and a surface fit whose ICP takes
# another path by a rounding differs by a few millionths of itself (seen: a residual of
# 0.010679006652 m against a frozen 0.010679054640 m, 4.5e-6 of it). Neither is a repair; a
# real one moves the error by far more than a ten-thousandth.
SAME_AS_INPUT_RELATIVE = 1e-4


@dataclass(frozen=True)
class Component:
    error: float
    tolerance: float
    reference: Any = None
    candidate: Any = None
    # A value invalid in itself (inverted limits, a joint between a body and itself): while
    # it fails, the whole check earns no semantic progress, whatever its other components do.
    voids_progress: bool = False
    unit: str = ""                   # of error and tolerance (result_record.UNITS)
    value_unit: str | None = None     # of reference and candidate, when they are quantities


@dataclass(frozen=True)
class Unmeasured:
    """The property cannot be established (from the reference) or measured."""

    reason: str


class UndeclaredTolerance(KeyError):
    """A measure read a tolerance its entry in profiles/families.py does not declare."""


class DeclaredTolerances(dict):
    """The tolerances one measure declares in the family table, and only those: reading any other
    raises UndeclaredTolerance naming the measure. It records what was read, so that a test can
    check that each measure reads exactly what it declares."""

    def __init__(self, tolerances: Mapping[str, float], declared: tuple[str, ...], owner: str):
        super().__init__({k: tolerances[k] for k in declared if k in tolerances})
        self.owner = owner
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> float:
        if key not in self:
            raise UndeclaredTolerance(f"{self.owner} reads tolerance {key!r}, which its entry in "
                                      "profiles/families.py does not declare (or the profile lacks)")
        self.read.add(key)
        return super().__getitem__(key)


class DerivedValues(dict):
    """Values several measures of one comparison derive from the same elements (the rigid fit of
    a component pair, which placement and shape both read), keyed by what they are derived from:
    their kind and the elements' paths. The grading session that builds the comparison owns it."""


@dataclass(frozen=True)
class Comparison:
    """Everything a measure function may look at: two snapshots, their match, tolerances."""

    reference: StageSnapshot
    candidate: StageSnapshot
    match: Correspondence
    tolerances: Mapping[str, float]
    derived: DerivedValues = field(default_factory=DerivedValues, compare=False, repr=False)

    def for_measure(self, owner: str, declared: tuple[str, ...]) -> Comparison:
        """The comparison as one measure sees it: only the tolerances it declares."""
        return replace(self, tolerances=DeclaredTolerances(self.tolerances, declared, owner))


def _within(error: float, tolerance: float) -> bool:
    return error <= tolerance  # nan compares False: never a silent pass


def failing_text(name: str, c: ComponentResult) -> str:
    """One failing component as the check's details (and a gate's reason) say it: in its units."""
    return component_text(name, c, compact=True)


def component_progress(error: float, tolerance: float, input_error: float | None) -> float:
    if _within(error, tolerance):
        return 1.0
    if input_error is None or _within(input_error, tolerance) or not math.isfinite(input_error):
        return 0.0
    if not math.isfinite(error) or input_error - error <= SAME_AS_INPUT_RELATIVE * input_error:
        return 0.0
    return max(0.0, min(1.0, (input_error - error) / (input_error - tolerance)))


# (metersPerUnit, kilogramsPerUnit) of the reference's stage and of the candidate's.
StageScales = tuple[tuple[float, float], tuple[float, float]]


def _divided(value, scale: float):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value / scale
    if isinstance(value, list):
        return [_divided(v, scale) for v in value]
    if isinstance(value, dict) and "value" in value:   # a physics material's {"collider", "value"}
        return {**value, "value": _divided(value["value"], scale)}
    return value


def in_stage_units(reference: Any, candidate: Any, value_unit: str | None,
                   scales: StageScales | None) -> StageUnitValues | None:
    """The two values in their stages' own units, when either stage's unit of them is not SI."""
    powers = STAGE_POWERS.get(value_unit or "")
    if powers is None or scales is None:
        return None
    m, k = powers
    ref_scale = scales[0][0] ** m * scales[0][1] ** k
    cand_scale = scales[1][0] ** m * scales[1][1] ** k
    if ref_scale == 1.0 and cand_scale == 1.0:
        return None
    return StageUnitValues(reference=_divided(reference, ref_scale), candidate=_divided(candidate, cand_scale),
                           reference_unit=f"{ref_scale:g} {value_unit}", candidate_unit=f"{cand_scale:g} {value_unit}")


def grade(
    check: str,
    family: str,
    measure: str,
    target: str,
    result: dict[str, Component] | Unmeasured,
    input_errors: dict[str, float] | None,
    scales: StageScales | None = None,
) -> CheckResult:
    """Turn a measure function's result into the check's typed record.

    `input_errors` is the profile's frozen error of the broken input for a
    targeted check; None for checks that only gate (objective, preservation).
    `scales` are the two stages' units, for the values in their own units.
    """
    if isinstance(result, Unmeasured):
        return CheckResult(check=check, family=family, measure=measure, target=target, passed=None, progress=None,
                           details=f"unmeasured: {result.reason}")
    components = {}
    progresses = []
    for name, c in result.items():
        before = None if input_errors is None else input_errors.get(name)
        p = component_progress(c.error, c.tolerance, before)
        broken_before = before is not None and not _within(before, c.tolerance)
        if input_errors is not None and (broken_before or not _within(c.error, c.tolerance)):
            progresses.append(p)
        reference, candidate = jsonable(c.reference), jsonable(c.candidate)
        components[name] = ComponentResult(
            error=c.error, tolerance=c.tolerance, input_error=before, passed=_within(c.error, c.tolerance),
            reference=reference, candidate=candidate, unit=c.unit, value_unit=c.value_unit,
            in_stage_units=in_stage_units(reference, candidate, c.value_unit, scales),
            voids_progress=True if c.voids_progress else None,
        )
    passed = all(c.passed for c in components.values())
    invalid = any(c.voids_progress and not c.passed for c in components.values())
    if input_errors is None:
        progress = None
    elif invalid:
        progress = 0.0
    else:
        progress = sum(progresses) / len(progresses) if progresses else 1.0
    details = "within tolerance" if passed else "; ".join(failing_text(n, c) for n, c in components.items()
                                                          if not c.passed)
    return CheckResult(check=check, family=family, measure=measure, target=target, passed=passed,
                       progress=progress, components=components, details=details)


def log_ratio(a: float, b: float) -> float:
    """|log(a/b)| for positive magnitudes; a sign change or a zero against non-zero is the cap."""
    if a == b:
        return 0.0
    if a <= 0.0 or b <= 0.0 or not (math.isfinite(a) and math.isfinite(b)):
        if math.isinf(a) and math.isinf(b) and (a > 0) == (b > 0):
            return 0.0
        return MAX_LOG_RATIO
    return min(MAX_LOG_RATIO, abs(math.log(a / b)))


def boolean(ok: bool, reference: Any = None, candidate: Any = None) -> Component:
    return Component(0.0 if ok else 1.0, 0.0, reference, candidate, unit="flag")
