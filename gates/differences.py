"""One definition of "different": a measurement that fails against the reference.

The preservation gates (on the targets no fault exempts), the objective gates (on every target)
and `usdgrade freeze` (which finds a broken input's faults by comparing it with its reference)
all read their failures from `failing_measurements`, so what freeze calls a fault and what the
grade calls damage to a healthy element are the same measurements with the same tolerances.
Freeze reads `every_difference`: each measure of the family table on each reference target, as
the gates would report the input graded with no fault declared.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from usd_repair_verifier.checks.registry import Measurements
from usd_repair_verifier.profiles.families import FAMILIES
from usd_repair_verifier.profiles.result_record import CheckResult, GateFailure


def failed(measurements: Iterable[CheckResult]) -> list[GateFailure]:
    """The failing checks as gate failures (family, measure, target and failing components)."""
    # passed None is unmeasured: the reference does not establish it, so it does not gate.
    return [GateFailure(reason=f"{m.family}.{m.measure} {m.target}: {m.details}", family=m.family, measure=m.measure,
                        target=m.target, components=m.failing())
            for m in measurements if m.passed is False]


def failing_measurements(measurements: Measurements, pairs: Iterable[tuple[str, str]],
                         keep: Callable[[str, str, str], bool] = lambda family, name, target: True) -> list[GateFailure]:
    """Every failing check of these (family, measure) pairs on every reference target `keep` accepts."""
    return [failure for family, name in pairs
            for failure in failed(measurements.every(family, (name,), lambda target: keep(family, name, target)))]


def every_difference(measurements: Measurements) -> list[GateFailure]:
    """Every measure of every family that fails on any reference target, in table order."""
    return failing_measurements(measurements, ((f.name, m.name) for f in FAMILIES for m in f.measures))
