"""Objective gates (README, "Reward"): every body and joint, healthy and targeted, must pass.

All must pass to lift the 0.99 cap. Each gate lists what failed.
"""
from __future__ import annotations

from typing import Callable

from usd_repair_verifier.checks import articulation, joints, mass, materials
from usd_repair_verifier.checks.measurement import Comparison, Measurement
from usd_repair_verifier.checks.registry import FAMILIES, measure

from .names import OBJECTIVE_GATES
from .results import GateResult, from_failures

# What `all_bodies` runs, over every target each measure has in the reference.
BODY_FAMILIES = (
    ("body", ("state", "hierarchy")),
    ("geometry", ("placement", "shape")),
    ("collision", ("coverage", "free_space")),
    ("mass", mass.MASS_CHECKS),   # unmeasured where the reference establishes nothing
    ("material", materials.MATERIAL_CHECKS),
)


def measure_all(cmp: Comparison, family: str, names: tuple[str, ...],
                keep: Callable[[str], bool] = lambda target: True) -> list[Measurement]:
    module = FAMILIES[family]
    return [
        measure(cmp, family, name, target)
        for name in names
        for target in module.targets(cmp.reference, name)
        if keep(target)
    ]


def failed(measurements: list[Measurement]) -> list[str]:
    # passed None is unmeasured: the reference does not establish it, so it does not gate.
    return [f"{m.family}.{m.measure} {m.target}: {m.details}" for m in measurements if m.passed is False]


def all_joints(cmp: Comparison) -> GateResult:
    failures = []
    if len(cmp.candidate.joints) != len(cmp.reference.joints):
        failures.append(f"joint count {len(cmp.candidate.joints)} != reference {len(cmp.reference.joints)}")
    failures += failed(measure_all(cmp, "joint", joints.JOINT_CHECKS))
    return from_failures("all_joints", failures, f"all {len(cmp.reference.joints)} joints pass", "joint failures")


def all_bodies(cmp: Comparison) -> GateResult:
    failures = [f"extra body {p}" for p in cmp.match.extra_bodies]
    for family, names in BODY_FAMILIES:
        failures += failed(measure_all(cmp, family, names))
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
assert tuple(GATES) == OBJECTIVE_GATES, "gates/names.py lists the objective gates in test order"
