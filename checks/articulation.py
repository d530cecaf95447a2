"""Articulation family: how many articulation roots there are and whether each sits at a valid location.

Validity is relative to the reference, which defines healthy: a candidate root is valid when it
corresponds to a reference root (the same kind of location on the matched body or joint, or,
above bodies, articulating the matched reference bodies) and has no location problem that
root lacks (see usd_repair_verifier.stage_snapshot.read: on a body, on a world-attached joint, or
above bodies; not nested in another root; articulating some body). A converter that puts a root
on a sensor link welded to the world (the parser articulates nothing from it) writes a reference
whose roots are all valid against itself; a candidate that adds such a root where the reference
has none is invalid.
"""
from __future__ import annotations

import re

from usd_repair_verifier.stage_snapshot.model import ArticulationRoot

from .measurement import Comparison, Component

WHOLE_ASSET = "*"


def corresponds(cmp: Comparison, ref: ArticulationRoot, cand: ArticulationRoot) -> bool:
    if ref.kind != cand.kind:
        return False
    if ref.kind == "body":
        return cmp.match.bodies.get(ref.path) == cand.path
    if ref.kind == "joint":
        return cmp.match.joints.get(ref.path) == cand.path
    if not ref.bodies:   # a reference root that articulates nothing: the same kind of location
        return not cand.bodies
    mapped = {cmp.match.bodies.get(b) for b in ref.bodies}
    return mapped <= set(cand.bodies)


def problem_kind(problem: str) -> str:
    """A location problem without the prim paths it names (paths differ between the stages)."""
    return re.sub(r"/[^\s;,]*", "<path>", problem)


def _new_problems(ref: ArticulationRoot, cand: ArticulationRoot) -> list[str]:
    known = {problem_kind(p) for p in ref.problems}
    return [p for p in cand.problems if problem_kind(p) not in known]


def roots(cmp: Comparison, target: str):
    ref_roots, cand_roots = cmp.reference.articulation_roots, cmp.candidate.articulation_roots
    invalid = []
    for cand in cand_roots:
        where = [ref for ref in ref_roots if corresponds(cmp, ref, cand)]
        if not where:
            why = "; ".join(cand.problems) or "no reference articulation root at this location"
            invalid.append(f"{cand.path}: {why}")
            continue
        problems = min((_new_problems(ref, cand) for ref in where), key=len)
        if problems:
            invalid.append(f"{cand.path}: {'; '.join(problems)}")
    uncovered = [ref.path for ref in ref_roots if not any(corresponds(cmp, ref, c) for c in cand_roots)]
    return {
        "root_count": Component(float(abs(len(cand_roots) - len(ref_roots))), 0.0, len(ref_roots), len(cand_roots),
                                unit="count", value_unit="count"),
        "invalid_roots": Component(float(len(invalid)), 0.0, [], invalid, unit="count"),
        "uncovered_reference_roots": Component(float(len(uncovered)), 0.0, [], uncovered, unit="count"),
    }


MEASURES = {"roots": roots}


def targets(reference, measure: str | None = None) -> list[str]:
    return [WHOLE_ASSET]
