"""Objective gates (SPEC section 6): every body and joint, healthy and targeted, must pass.

All must pass to lift the 0.99 cap. Each gate lists what failed.
"""
from __future__ import annotations

from checks import articulation, bodies, joints
from checks.measurement import Comparison, Measurement
from checks.registry import measure

from .results import GateResult, from_failures

OBJECTIVE_GATES = ("all_joints", "all_bodies", "articulation_preserved", "composition_complete")


def measure_all(cmp: Comparison, family: str, names: tuple[str, ...], targets: list[str]) -> list[Measurement]:
    return [measure(cmp, family, name, target) for target in targets for name in names]


def failed(measurements: list[Measurement]) -> list[str]:
    # passed None is unmeasured: the reference does not establish it, so it does not gate.
    return [f"{m.family}.{m.measure} {m.target}: {m.details}" for m in measurements if m.passed is False]


def all_joints(cmp: Comparison) -> GateResult:
    failures = []
    if len(cmp.candidate.joints) != len(cmp.reference.joints):
        failures.append(f"joint count {len(cmp.candidate.joints)} != reference {len(cmp.reference.joints)}")
    failures += failed(measure_all(cmp, "joint", joints.JOINT_CHECKS, joints.targets(cmp.reference)))
    return from_failures("all_joints", failures, f"all {len(cmp.reference.joints)} joints pass", "joint failures")


def all_bodies(cmp: Comparison) -> GateResult:
    failures = [f"extra body {p}" for p in cmp.match.extra_bodies]
    failures += failed(measure_all(cmp, "body", bodies.BODY_CHECKS, bodies.targets(cmp.reference)))
    return from_failures("all_bodies", failures, f"all {len(cmp.reference.bodies)} bodies pass", "body failures")


def articulation_preserved(cmp: Comparison) -> GateResult:
    failures = failed([measure(cmp, "articulation", "roots", articulation.WHOLE_ASSET)])
    n = len(cmp.reference.articulation_roots)
    return from_failures("articulation_preserved", failures, f"{n} articulation root(s), all valid", "articulation failures")


def composition_complete(cmp: Comparison) -> GateResult:
    return from_failures(
        "composition_complete", list(cmp.candidate.composition_errors), "no composition errors", "composition errors"
    )


GATES = {
    "all_joints": all_joints,
    "all_bodies": all_bodies,
    "articulation_preserved": articulation_preserved,
    "composition_complete": composition_complete,
}
