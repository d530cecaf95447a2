"""Articulation family: how many articulation roots there are and whether each sits at a valid location.

A candidate root is valid when it has no location problem of its own (see
usd_repair_verifier.stage_snapshot.read: on a body, on a world-attached joint, or above bodies; not
nested in another root) and it corresponds to a reference root: the same kind
of location on the matched body or joint, or, above bodies, articulating the
matched reference bodies.
"""
from __future__ import annotations

from usd_repair_verifier.stage_snapshot.model import ArticulationRoot

from .measurement import Comparison, Component

WHOLE_ASSET = "*"


def _corresponds(cmp: Comparison, ref: ArticulationRoot, cand: ArticulationRoot) -> bool:
    if ref.kind != cand.kind:
        return False
    if ref.kind == "body":
        return cmp.match.bodies.get(ref.path) == cand.path
    if ref.kind == "joint":
        return cmp.match.joints.get(ref.path) == cand.path
    mapped = {cmp.match.bodies.get(b) for b in ref.bodies}
    return bool(mapped) and mapped <= set(cand.bodies)


def roots(cmp: Comparison, target: str):
    ref_roots, cand_roots = cmp.reference.articulation_roots, cmp.candidate.articulation_roots
    invalid = []
    for cand in cand_roots:
        if cand.problems:
            invalid.append(f"{cand.path}: {'; '.join(cand.problems)}")
        elif not any(_corresponds(cmp, ref, cand) for ref in ref_roots):
            invalid.append(f"{cand.path}: no reference articulation root at this location")
    uncovered = [ref.path for ref in ref_roots if not any(_corresponds(cmp, ref, c) for c in cand_roots)]
    return {
        "root_count": Component(float(abs(len(cand_roots) - len(ref_roots))), 0.0, len(ref_roots), len(cand_roots),
                                unit="count", value_unit="count"),
        "invalid_roots": Component(float(len(invalid)), 0.0, [], invalid, unit="count"),
        "uncovered_reference_roots": Component(float(len(uncovered)), 0.0, [], uncovered, unit="count"),
    }


MEASURES = {"roots": roots}


def targets(reference, measure: str | None = None) -> list[str]:
    return [WHOLE_ASSET]
