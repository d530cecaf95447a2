"""Authoring errors of the candidate as a failing component of the checks they feed.

The snapshot records values it could not use or that are ambiguous
(`StageSnapshot.authoring_problems`: a wrong type, shape or non-finite value; a
default that disagrees with the value at the stage's start time). Reading such a
value as "not authored" would let damage pass, so every check that reads the
property gets an extra component `authoring` (error inf, tolerance 0) naming it:
a targeted check fails, a healthy property fails preservation.

Which checks read which property:
- by attribute: mass attributes feed the `mass` family, joint attributes the `joint`
  family, body attributes the `body` family, collider attributes `collision` and
  `mass`, friction and restitution and the display primvars the `material` family,
  geometry and transforms every family that reads shape or placement; a scene's gravity
  feeds no check (the `physics_scene` preservation gate reads it, gates/scene_preservation.py);
- by prim: the element's own prim, any prim above it (a transform moves everything
  below), for the body families (mass, collision, body) the prims the body owns, and for
  `material` the material bound to the part (visual) or to the body's colliders (physics).

A problem the reference itself has on the same element (found through the correspondence, so
renamed namespaces keep it) is not the candidate's.
"""
from __future__ import annotations

import math

from usd_repair_verifier.stage_snapshot.authoring import TRANSFORM
from usd_repair_verifier.stage_snapshot.parts import owner_body

from .measurement import Comparison, Component

MASS = {"physics:mass", "physics:density", "physics:centerOfMass", "physics:diagonalInertia", "physics:principalAxes"}
BODY = {"physics:rigidBodyEnabled", "physics:kinematicEnabled", "physics:velocity", "physics:angularVelocity"}
COLLIDER = {"physics:collisionEnabled", "physics:approximation"}
JOINT_PREFIXES = ("physics:localPos", "physics:localRot", "physics:lowerLimit", "physics:upperLimit", "physics:axis",
                  "physics:jointEnabled", "physics:excludeFromArticulation", "physics:break", "physics:minDistance",
                  "physics:maxDistance", "drive:", "limit:")
SCENE = {"physics:gravityDirection", "physics:gravityMagnitude"}
DISPLAY_PREFIX = "primvars:display"
SHAPE_FAMILIES = frozenset({"geometry", "collision", "mass", "joint"})
BODY_FAMILIES = ("mass", "collision", "body")
MAX_SHOWN = 4


def families_of(attribute: str) -> frozenset[str]:
    """The check families that read an attribute."""
    if attribute in MASS:
        return frozenset({"mass"})
    if attribute in BODY:
        return frozenset({"body"})
    if attribute in COLLIDER:
        return frozenset({"collision", "mass"})
    if attribute in SCENE:
        return frozenset()
    if attribute.startswith(DISPLAY_PREFIX):
        return frozenset({"material"})
    if attribute.startswith(JOINT_PREFIXES):
        return frozenset({"joint"})
    if attribute.startswith("physics:"):  # friction, restitution: the material family's
        return frozenset({"material"})
    return SHAPE_FAMILIES  # points, sizes, visibility, transforms


def candidate_element(cmp: Comparison, family: str, target: str) -> str | None:
    if family == "joint":
        return cmp.match.joints.get(target)
    if family in BODY_FAMILIES:
        return cmp.match.bodies.get(target)
    if family == "geometry":
        return cmp.match.components.get(target)
    if family == "material":  # visual: a part; physics: a body
        table = cmp.match.components if target in cmp.reference.components else cmp.match.bodies
        return table.get(target)
    return None


def _ancestor_or_self(prim: str, element: str) -> bool:
    return element == prim or element.startswith(prim.rstrip("/") + "/")


def _relevant_prim(side, family: str, element: str, prim: str, attribute: str) -> bool:
    """Does an authoring problem at `prim` feed `family`'s check of `element` on `side` (a snapshot)?"""
    if family == "material":
        return _material_prim(side, element, prim)
    if _ancestor_or_self(prim, element):
        return True
    if family in BODY_FAMILIES:
        return owner_body(prim, set(side.bodies)) == element
    if family == "joint" and attribute == TRANSFORM:  # a joint's frames follow its bodies
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


def problems_for(cmp: Comparison, family: str, target: str) -> list[str]:
    element = candidate_element(cmp, family, target)
    if element is None:
        return []
    # The reference's own problems on the same element (through the correspondence, not by path)
    # are not the candidate's: the reference defines healthy.
    own = {(attribute, why) for prim, items in cmp.reference.authoring_problems.items() for attribute, why in items
           if family in families_of(attribute) and _relevant_prim(cmp.reference, family, target, prim, attribute)}
    found = []
    for prim, items in cmp.candidate.authoring_problems.items():
        for attribute, why in items:
            if family not in families_of(attribute) or (attribute, why) in own:
                continue
            if _relevant_prim(cmp.candidate, family, element, prim, attribute):
                found.append(f"{prim}.{attribute}: {why}")
    return found


def component(cmp: Comparison, family: str, target: str) -> Component | None:
    """The failing `authoring` component for this check, or None when nothing it reads is in error."""
    found = problems_for(cmp, family, target)
    if not found:
        return None
    shown = "; ".join(found[:MAX_SHOWN]) + (f"; and {len(found) - MAX_SHOWN} more" if len(found) > MAX_SHOWN else "")
    # An unusable or ambiguous value earns no progress, however close the check's other components are.
    return Component(math.inf, 0.0, None, f"authoring error: {shown}", voids_progress=True)
