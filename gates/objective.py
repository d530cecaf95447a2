"""Objective gates (README, "Reward"): every body and joint, healthy and targeted, must pass.

All must pass to lift the 0.99 cap. Each gate lists what failed.
"""
from __future__ import annotations

from usd_repair_verifier.checks.registry import Measurements
from usd_repair_verifier.profiles.result_record import GateFailure, GateResult
from usd_repair_verifier.profiles.families import gated_measures
from usd_repair_verifier.profiles.schema import Profile

from .differences import failing_measurements


def gated_failures(measurements: Measurements, gate: str) -> list[GateFailure | str]:
    """Every failing measurement of the measures the family table puts under this gate."""
    return failing_measurements(measurements, gated_measures(gate))


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
