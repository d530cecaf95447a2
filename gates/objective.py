"""Objective gates (README, "Reward"): every body and joint, healthy and targeted, must pass.

All must pass to lift the 0.99 cap. Each gate lists what failed.
"""
from __future__ import annotations

from typing import Callable

from usd_repair_verifier.checks.measurement import Comparison
from usd_repair_verifier.checks.registry import FAMILIES, measure
from usd_repair_verifier.checks.result_record import CheckResult, GateFailure, GateResult
from usd_repair_verifier.profiles.families import gated_measures

from .names import OBJECTIVE_GATES



def measure_all(cmp: Comparison, family: str, names: tuple[str, ...],
                keep: Callable[[str], bool] = lambda target: True) -> list[CheckResult]:
    module = FAMILIES[family]
    return [
        measure(cmp, family, name, target)
        for name in names
        for target in module.targets(cmp.reference, name)
        if keep(target)
    ]


def failed(measurements: list[CheckResult]) -> list[GateFailure]:
    # passed None is unmeasured: the reference does not establish it, so it does not gate.
    return [GateFailure(reason=f"{m.family}.{m.measure} {m.target}: {m.details}", family=m.family, measure=m.measure,
                        target=m.target, components=m.failing())
            for m in measurements if m.passed is False]


def gated_failures(cmp: Comparison, gate: str) -> list[GateFailure | str]:
    """Every failing measurement of the measures the family table puts under this gate."""
    return [failure for family, name in gated_measures(gate) for failure in failed(measure_all(cmp, family, (name,)))]


def all_joints(cmp: Comparison) -> GateResult:
    failures = []
    if len(cmp.candidate.joints) != len(cmp.reference.joints):
        failures.append(f"joint count {len(cmp.candidate.joints)} != reference {len(cmp.reference.joints)}")
    failures += gated_failures(cmp, "all_joints")
    return GateResult.from_failures("all_joints", failures, f"all {len(cmp.reference.joints)} joints pass", "joint failures")


def all_bodies(cmp: Comparison) -> GateResult:
    failures = [f"extra body {p}" for p in cmp.match.extra_bodies]
    failures += gated_failures(cmp, "all_bodies")
    return GateResult.from_failures("all_bodies", failures, f"all {len(cmp.reference.bodies)} bodies pass", "body failures")


def articulation_preserved(cmp: Comparison) -> GateResult:
    failures = gated_failures(cmp, "articulation_preserved")
    n = len(cmp.reference.articulation_roots)
    return GateResult.from_failures("articulation_preserved", failures, f"{n} articulation root(s), all valid", "articulation failures")


def composition_complete(cmp: Comparison) -> GateResult:
    return GateResult.from_failures(
        "composition_complete", list(cmp.candidate.composition_errors), "no composition errors", "composition errors"
    )


GATES = {
    "all_joints": all_joints,
    "all_bodies": all_bodies,
    "articulation_preserved": articulation_preserved,
    "composition_complete": composition_complete,
}
assert tuple(GATES) == OBJECTIVE_GATES, "gates/names.py lists the objective gates in test order"
