"""Objective gates (README, "Reward"): every body and joint, healthy and targeted, must pass.

All must pass to lift the 0.99 cap. Each gate lists what failed.
"""
from __future__ import annotations

from usd_repair_verifier.checks.registry import Measurements
from usd_repair_verifier.profiles.result_record import CheckResult, GateFailure, GateResult
from usd_repair_verifier.profiles.families import gated_measures
from usd_repair_verifier.profiles.schema import Profile


def failed(measurements: list[CheckResult]) -> list[GateFailure]:
    # passed None is unmeasured: the reference does not establish it, so it does not gate.
    return [GateFailure(reason=f"{m.family}.{m.measure} {m.target}: {m.details}", family=m.family, measure=m.measure,
                        target=m.target, components=m.failing())
            for m in measurements if m.passed is False]


def gated_failures(measurements: Measurements, gate: str) -> list[GateFailure | str]:
    """Every failing measurement of the measures the family table puts under this gate."""
    return [failure for family, name in gated_measures(gate) for failure in failed(measurements.every(family, (name,)))]


def all_joints(measurements: Measurements, profile: Profile) -> GateResult:
    cmp = measurements.comparison
    failures = []
    if len(cmp.candidate.joints) != len(cmp.reference.joints):
        failures.append(f"joint count {len(cmp.candidate.joints)} != reference {len(cmp.reference.joints)}")
    failures += gated_failures(measurements, "all_joints")
    return GateResult.from_failures("all_joints", failures, f"all {len(cmp.reference.joints)} joints pass", "joint failures")


def all_bodies(measurements: Measurements, profile: Profile) -> GateResult:
    cmp = measurements.comparison
    failures = [f"extra body {p}" for p in cmp.match.extra_bodies]
    failures += gated_failures(measurements, "all_bodies")
    return GateResult.from_failures("all_bodies", failures, f"all {len(cmp.reference.bodies)} bodies pass", "body failures")


def articulation_preserved(measurements: Measurements, profile: Profile) -> GateResult:
    cmp = measurements.comparison
    failures = gated_failures(measurements, "articulation_preserved")
    n = len(cmp.reference.articulation_roots)
    return GateResult.from_failures("articulation_preserved", failures, f"{n} articulation root(s), all valid", "articulation failures")


def composition_complete(measurements: Measurements, profile: Profile) -> GateResult:
    cmp = measurements.comparison
    return GateResult.from_failures(
        "composition_complete", list(cmp.candidate.composition_errors), "no composition errors", "composition errors"
    )
