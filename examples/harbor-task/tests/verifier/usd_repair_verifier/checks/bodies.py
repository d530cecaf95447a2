"""Body family: correspondence, rigid-body state and hierarchy (which body is nested in which)."""
from __future__ import annotations

from .measurement import Comparison, boolean


def _pair(cmp: Comparison, target: str):
    ref = cmp.reference.bodies[target]
    cand_path = cmp.match.bodies.get(target)
    return ref, cmp.candidate.bodies.get(cand_path) if cand_path else None


def state(cmp: Comparison, target: str):
    ref, cand = _pair(cmp, target)
    if cand is None:
        return {
            "matched": boolean(False, ref.path, None),
            "enabled": boolean(False, ref.enabled, None),
            "kinematic": boolean(False, ref.kinematic, None),
        }
    return {
        "matched": boolean(True, ref.path, cand.path),
        "enabled": boolean(ref.enabled == cand.enabled, ref.enabled, cand.enabled),
        "kinematic": boolean(ref.kinematic == cand.kinematic, ref.kinematic, cand.kinematic),
    }


def hierarchy(cmp: Comparison, target: str):
    ref, cand = _pair(cmp, target)
    wanted = cmp.match.candidate_body(ref.parent_body)
    if cand is None:
        return {"parent": boolean(False, ref.parent_body, None)}
    return {"parent": boolean(cand.parent_body == wanted, ref.parent_body, cand.parent_body)}


MEASURES = {"state": state, "hierarchy": hierarchy}


def targets(reference, measure: str | None = None) -> list[str]:
    return list(reference.bodies)
