"""Contact and owner faults: a filter that keeps apart what touches in the reference, an object
handed to a scene that does not simulate it."""
from __future__ import annotations

from pxr import Sdf, UsdPhysics

from usd_repair_verifier.authoring.inject.edits import (
    InjectionError, ensure_api, own_colliders, rigid_bodies, rigid_body, set_targets, writable,
)



def collision_filter(stage, target, rng, dirty) -> str:
    """A dynamic body's physics:filteredPairs names what it touches in the reference: the static
    colliders, else another body it is not jointed to."""
    bodies = [b for b in rigid_bodies(stage) if own_colliders(b)]
    colliders = sorted(str(p.GetPath()) for p in stage.Traverse() if p.HasAPI(UsdPhysics.CollisionAPI))
    in_body = {str(c.GetPath()) for b in bodies for c in own_colliders(b)}
    static = [c for c in colliders if c not in in_body and not any(c.startswith(str(b.GetPath()) + "/")
                                                                     for b in rigid_bodies(stage))]
    if not bodies:
        raise InjectionError("the asset has no rigid body with a collider")
    body = bodies[rng.randrange(len(bodies))]
    if static:
        names = static
    else:
        jointed = _jointed(stage, str(body.GetPath()))
        others = [str(b.GetPath()) for b in bodies if b != body and str(b.GetPath()) not in jointed]
        if not others:
            raise InjectionError("no static collider and no unjointed body to filter against")
        names = [others[rng.randrange(len(others))]]
    prim = writable(body)
    ensure_api(prim, "PhysicsFilteredPairsAPI", UsdPhysics.FilteredPairsAPI, dirty)
    set_targets(prim, "physics:filteredPairs", [Sdf.Path(n) for n in names], dirty)
    return f"physics:filteredPairs on {body.GetPath()} = {', '.join(names)}"


def _jointed(stage, body: str) -> set[str]:
    out = set()
    for prim in stage.Traverse():
        if prim.IsA(UsdPhysics.Joint):
            joint = UsdPhysics.Joint(prim)
            ends = {str(t) for rel in (joint.GetBody0Rel(), joint.GetBody1Rel()) for t in rel.GetTargets()}
            if body in ends:
                out |= ends
    return out


def simulation_owner(stage, target, rng, dirty) -> str:
    """The body's physics:simulationOwner set to the asset's root prim, which is no scene: an engine
    that honours owners simulates the body in no scene. (A prim that exists, so the input carries no
    name its reference lacks, which would point an agent at the fault.)"""
    prim = writable(rigid_body(stage, target))
    owner = stage.GetPrimAtPath(prim.GetPath().GetPrefixes()[0])
    if owner.IsA(UsdPhysics.Scene):
        raise InjectionError(f"{owner.GetPath()} is a physics scene")
    set_targets(prim, "physics:simulationOwner", [owner.GetPath()], dirty)
    return f"physics:simulationOwner on {target} = {owner.GetPath()} (no scene there)"
