"""Owner family: which physics scene simulates each body and its colliders.

Under UsdPhysics an object's `physics:simulationOwner` names the one scene that simulates it;
none means the default scene. Owners are compared through the scene correspondence (the scenes
paired as the physics_scene gate pairs them), in one reading for both stages:
- no owner, or an owner that is the stage's only scene: the default scene;
- an owner that is a scene of the stage: that scene, mapped to the candidate's;
- an owner that is no scene: no scene at all (an engine that honours owners leaves the object
  unsimulated), whatever path it names.
So an explicit owner naming the only scene measures like none, and a missing or different
owner does not.
"""
from __future__ import annotations

from .measurement import Comparison, Component

DEFAULT = "the default scene"
NO_SCENE = "no scene"


def scene_map(cmp: Comparison) -> dict[str, str]:
    """Reference scene path -> candidate scene path: paired by path order when the counts agree
    (unequal counts fail the physics_scene gate)."""
    ref = [s.path for s in cmp.reference.scenes]
    cand = [s.path for s in cmp.candidate.scenes]
    return dict(zip(ref, cand)) if len(ref) == len(cand) else {}


def reading(snapshot, owners: tuple[str, ...], rename: dict[str, str] | None = None) -> tuple[str, ...]:
    """What the owners mean (see the module docstring); `rename` maps a scene to the other stage's."""
    scenes = [s.path for s in snapshot.scenes]
    if not owners or (len(scenes) == 1 and owners == (scenes[0],)):
        return (DEFAULT,)
    out = set()
    for owner in owners:
        if owner in scenes:
            out.add(DEFAULT if len(scenes) == 1 else (rename or {}).get(owner, owner))
        else:
            out.add(NO_SCENE)
    return tuple(sorted(out))


def owner_difference(cmp: Comparison, ref_path: str, cand_path: str | None) -> str:
    """"" when the element's owners read the same in both stages, else what differs."""
    if cand_path is None:
        return ""
    ref_owners = cmp.reference.simulation_owners.get(ref_path, ())
    cand_owners = cmp.candidate.simulation_owners.get(cand_path, ())
    expected = reading(cmp.reference, ref_owners, scene_map(cmp))
    got = reading(cmp.candidate, cand_owners)
    if expected == got:
        return ""
    shown = lambda owners: ", ".join(owners) or "none"
    return (f"simulated by {', '.join(got)} (physics:simulationOwner {shown(cand_owners)}), "
            f"the reference's by {', '.join(expected)} ({shown(ref_owners)})")


def owners(cmp: Comparison, target: str):
    cand_body = cmp.match.bodies.get(target)
    body_problem = owner_difference(cmp, target, cand_body) if cand_body else "no matched body"
    colliders = [c for c in cmp.reference.bodies[target].colliders if c in cmp.reference.colliders]
    differing = [c for c in colliders if owner_difference(cmp, c, cmp.match.colliders.get(c))]
    return {
        "body": Component(1.0 if body_problem else 0.0, 0.0, None, body_problem or None, unit="flag"),
        "colliders": Component(float(len(differing)), 0.0, None, differing or None, unit="count"),
    }


MEASURES = {"owners": owners}


def targets(reference, measure: str | None = None) -> list[str]:
    return list(reference.bodies)
