"""One definition of "different": what the grade's gates fail against the reference.

The preservation gates (on the targets no fault exempts), the objective gates (on every target)
and `usdgrade freeze` (which finds a broken input's faults by comparing it with its reference)
all read their failures from `failing_measurements`, so what freeze calls a fault and what the
grade calls damage to a healthy element are the same measurements with the same tolerances.
Freeze reads `every_difference`: each measure of the family table on each reference target, as
the gates would report the input graded with no fault declared; and `gate_sentences`: what the
preservation gates find that is no measure on a target (a body with no match, a gravity, a
static collider, a simulator attribute or relationship, two bodies of a joint swapped), read by
running those gates themselves.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from usd_repair_verifier.checks.registry import Measurements
from usd_repair_verifier.profiles.families import FAMILIES
from usd_repair_verifier.profiles.result_record import CheckResult, GateFailure
from usd_repair_verifier.profiles.schema import CheckSpec, Fault, Profile


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


def declaring(faults: Iterable[Fault], checks: Iterable[CheckSpec], input_state: dict,
              variant_selections: dict) -> Profile:
    """What the gates read of a case's profile (its faults, their checks with the input's errors,
    the input's counts and the case's selections) for an input not yet frozen into a case.

    Built without validation: a profile with no fault is refused by design (a case needs a
    check), but "graded with no fault declared" is exactly what freeze compares with. The gates
    read no other field."""
    return Profile.model_construct(faults=tuple(faults), checks=tuple(checks), input_state=dict(input_state),
                                   variant_selections=dict(variant_selections))


def gate_sentences(measurements: Measurements, profile: Profile) -> list[GateFailure]:
    """The preservation gates' failures that are no measurement on a target, each led by its
    gate's name ("physics_scene: scene /World/PhysicsScene: gravity ..."); a gate lists at most
    MAX_LISTED of its failures (its reason counts them all)."""
    from usd_repair_verifier.gates.names import PRESERVATION_GATES, evaluator   # the gates import this module

    return [GateFailure(reason=f"{gate}: {failure.reason}")
            for gate in PRESERVATION_GATES for failure in evaluator("preservation", gate)(measurements, profile).failures
            if failure.family is None]
