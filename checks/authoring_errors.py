"""Authoring errors of the candidate as a failing component of the checks they feed.

The snapshot records values it could not use or that are ambiguous
(`StageSnapshot.authoring_problems`: a wrong type, shape or non-finite value; a
default that disagrees with the value at the stage's start time). Reading such a
value as "not authored" would let damage pass, so every check that reads the
property gets an extra component `authoring` (error inf, tolerance 0) naming it:
a targeted check fails, a healthy property fails preservation.

Which checks read which property comes from the family table (profiles/families.py):
- by attribute: each family's `reads` patterns; the most specific pattern that matches an
  attribute (an exact name, else the longest prefix, "*" last) decides which families it
  feeds (a scene's gravity feeds none: the `physics_scene` preservation gate reads it);
- by prim: the element the check is about (found through the correspondence by the measure's
  target kind) and any prim above it (a transform moves everything below), plus the family's
  `scope`: the prims a body owns, the transforms above a joint's bodies, or (instead) the
  materials bound to the part or to the body's colliders.

A problem the reference itself has on the same element (found through the correspondence, so
renamed namespaces keep it) is not the candidate's.
"""
from __future__ import annotations

import functools
import math

from usd_repair_verifier.profiles import families as table
from usd_repair_verifier.stage_snapshot.authoring_problems import TRANSFORM
from usd_repair_verifier.stage_snapshot.parts import owner_body

from .measurement import Comparison, Component

MAX_SHOWN = 4


def _matches(pattern: str, attribute: str) -> bool:
    return attribute.startswith(pattern[:-1]) if pattern.endswith("*") else attribute == pattern


def _specificity(pattern: str) -> tuple[int, int]:
    return (1, 0) if not pattern.endswith("*") else (0, len(pattern) - 1)


@functools.cache
def families_of(attribute: str) -> frozenset[str]:
    """The check families that read an attribute: those whose most specific matching pattern is
    the most specific of all."""
    claims = [(_specificity(p), family.name) for family in table.FAMILIES for p in family.reads if _matches(p, attribute)]
    claims += [(_specificity(p), None) for p in table.UNCHECKED_ATTRIBUTES if _matches(p, attribute)]
    if not claims:
        return frozenset()
    best = max(level for level, _ in claims)
    return frozenset(name for level, name in claims if level == best and name is not None)


def candidate_element(cmp: Comparison, measure: table.Measure, target: str) -> str | None:
    """The candidate element a check on `target` is about, by the measure's target kind."""
    match = {"joint": cmp.match.joints, "body": cmp.match.bodies, "component": cmp.match.components}
    found = match.get(measure.target_kind)
    return found.get(target) if found is not None else None


def _ancestor_or_self(prim: str, element: str) -> bool:
    return element == prim or element.startswith(prim.rstrip("/") + "/")


def _relevant_prim(side, scope: str, element: str, prim: str, attribute: str) -> bool:
    """Does an authoring problem at `prim` feed a check of `element` on `side` (a snapshot),
    given the family's scope?"""
    if scope == "bound_materials":
        return _material_prim(side, element, prim)
    if _ancestor_or_self(prim, element):
        return True
    if scope == "body_prims":
        return owner_body(prim, set(side.bodies)) == element
    if scope == "joint_bodies" and attribute == TRANSFORM:  # a joint's frames follow its bodies
        joint = side.joints.get(element)
        return joint is not None and any(b is not None and _ancestor_or_self(prim, b) for b in (joint.body0, joint.body1))
    return False


def _material_prim(side, element: str, prim: str) -> bool:
    """A part (or a prim above it: inherited primvars) and its bound material; a body's
    colliders and their physics materials."""
    part = side.components.get(element)
    if part is not None:
        material = getattr(part.material, "path", None)
        return _ancestor_or_self(prim, element) or (material is not None and _ancestor_or_self(material, prim))
    for collider in side.body_colliders(element):
        material = getattr(collider.material, "path", None)
        if _ancestor_or_self(prim, collider.path) or (material is not None and _ancestor_or_self(material, prim)):
            return True
    return False


def problems_for(cmp: Comparison, family: table.Family, measure: table.Measure, target: str) -> list[str]:
    element = candidate_element(cmp, measure, target)
    if element is None:
        return []
    # The reference's own problems on the same element (through the correspondence, not by path)
    # are not the candidate's: the reference defines healthy.
    own = {(attribute, why) for prim, items in cmp.reference.authoring_problems.items() for attribute, why in items
           if family.name in families_of(attribute) and _relevant_prim(cmp.reference, family.scope, target, prim,
                                                                         attribute)}
    found = []
    for prim, items in cmp.candidate.authoring_problems.items():
        for attribute, why in items:
            if family.name not in families_of(attribute) or (attribute, why) in own:
                continue
            if _relevant_prim(cmp.candidate, family.scope, element, prim, attribute):
                found.append(f"{prim}.{attribute}: {why}")
    return found


def component(cmp: Comparison, family: table.Family, measure: table.Measure, target: str) -> Component | None:
    """The failing `authoring` component for this check, or None when nothing it reads is in error."""
    found = problems_for(cmp, family, measure, target)
    if not found:
        return None
    shown = "; ".join(found[:MAX_SHOWN]) + (f"; and {len(found) - MAX_SHOWN} more" if len(found) > MAX_SHOWN else "")
    # An unusable or ambiguous value earns no progress, however close the check's other components are.
    return Component(math.inf, 0.0, None, f"authoring error: {shown}", voids_progress=True, unit="flag")
