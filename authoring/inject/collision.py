"""Collision faults: a body's colliders removed, disabled, shrunk or over-approximated."""
from __future__ import annotations

from pxr import Sdf, Usd, UsdGeom, UsdPhysics

from usd_repair_verifier.stage_snapshot.parts import is_visible

from usd_repair_verifier.authoring.inject.edits import (
    InjectionError, own_colliders, rigid_body, scale_prim, set_api_schemas, set_attribute,
)


def _body_colliders(stage: Usd.Stage, target: str) -> list[Usd.Prim]:
    found = own_colliders(rigid_body(stage, target))
    if not found:
        raise InjectionError(f"{target} has no collider")
    return found


def collision_removed(stage, target, rng, dirty) -> str:
    prims = _body_colliders(stage, target)
    for prim in prims:
        set_api_schemas(prim, "PhysicsCollisionAPI", None, dirty)
    return f"CollisionAPI removed from {len(prims)} collider(s)"


def collision_disabled(stage, target, rng, dirty) -> str:
    prims = _body_colliders(stage, target)
    for prim in prims:
        set_attribute(prim, "physics:collisionEnabled", False, Sdf.ValueTypeNames.Bool, dirty)
    return f"collisionEnabled = false on {len(prims)} collider(s)"


def collider_shrunk(stage, target, rng, dirty) -> str:
    # Only a collider that is not itself a visible part: shrinking a visible one would reshape the visuals too.
    hidden = [p for p in _body_colliders(stage, target) if not is_visible(p)]
    if not hidden:
        raise InjectionError(f"every collider of {target} is also a visible part")
    bbox = UsdGeom.BBoxCache(Usd.TimeCode.Default(), [UsdGeom.Tokens.default_, UsdGeom.Tokens.guide, UsdGeom.Tokens.proxy, UsdGeom.Tokens.render])
    largest = max(hidden, key=lambda p: bbox.ComputeWorldBound(p).GetVolume())
    scale_prim(largest, (0.5, 0.5, 0.5), dirty)
    return f"collider {largest.GetPath()} scaled by 0.5"


FILLING_APPROXIMATIONS = ("boundingCube", "convexHull")


def collision_over_approximated(stage, target, rng, dirty) -> str:
    meshes = [p for p in _body_colliders(stage, target) if p.IsA(UsdGeom.Mesh)]
    if not meshes:
        raise InjectionError(f"{target} has no mesh collider to re-approximate")
    prim = meshes[rng.randrange(len(meshes))]
    current = prim.GetAttribute("physics:approximation").Get() if prim.GetAttribute("physics:approximation") else None
    choice = "boundingCube" if current == "convexHull" else rng.choice(FILLING_APPROXIMATIONS)
    if not prim.HasAPI(UsdPhysics.MeshCollisionAPI):
        set_api_schemas(prim, None, "PhysicsMeshCollisionAPI", dirty)
    set_attribute(prim, "physics:approximation", choice, Sdf.ValueTypeNames.Token, dirty)
    return f"{prim.GetPath()} approximation {current or 'none'} -> {choice}"

