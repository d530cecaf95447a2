"""Material family: the resolved visual material of each visible component and the
resolved physics material of each collider, compared by what they do (surface
parameters and texture content; friction, restitution, density), never by path.

Two measures with different targets (`targets(reference, measure)`):

- "visual": a reference visible component path. The candidate component is
  found through the correspondence (cmp.match.components). An unbound gprim is
  drawn with its display colour, so that is what is compared there.
- "physics": a reference rigid body that has colliders. Every reference
  collider of the body is compared with its candidate collider; when the
  candidate decomposes the body's collision differently (the direct match is
  None), with the candidate collider of the matched body whose centroid is
  nearest. Components are aggregated per name as the worst collider.
"""
from __future__ import annotations

import math

from usd_repair_verifier.stage_snapshot import materials as mat
from usd_repair_verifier.stage_snapshot import spatial

from .measurement import Comparison, Component, boolean

VISUAL = "visual"
PHYSICS = "physics"


def _plain(value):
    """A JSON-friendly copy of a material value (tuples become lists)."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _visual_values(m, name: str):
    if m is None:
        return None
    if name == "bound":
        return m.path if m.path is not None else m.shader
    if name == "shader":
        return m.shader
    if name.startswith("texture."):
        return m.textures.get(name[len("texture."):])
    key = name[len("surface."):] if name.startswith("surface.") else name
    return _plain(m.surface.get(key, mat.PREVIEW_SURFACE_DEFAULTS.get(key)))


def visual(cmp: Comparison, target: str):
    ref = cmp.reference.components[target]
    cand_path = cmp.match.components.get(target)
    cand = cmp.candidate.components.get(cand_path) if cand_path else None
    if cand is None:
        return {"matched": boolean(False, ref.path, None)}
    out = {"matched": boolean(True, ref.path, cand.path)}
    compared = mat.compare_visual(
        ref.material, cand.material,
        color_tolerance=cmp.tolerances["material_color"],
        scalar_tolerance=cmp.tolerances["material_scalar"],
    )
    for name, (error, tolerance) in compared.items():
        out[f"visual.{name}"] = Component(
            error, tolerance, _visual_values(ref.material, name), _visual_values(cand.material, name)
        )
    return out


def _physics_value(m, name: str):
    if m is None:
        return None
    if name == "bound":
        return m.path
    return getattr(m, name, None)


def _candidate_collider(cmp: Comparison, ref_collider, cand_body: str | None):
    """The matched candidate collider, else the nearest one (by centroid) of the matched body."""
    cand_path = cmp.match.colliders.get(ref_collider.path)
    cand = cmp.candidate.colliders.get(cand_path) if cand_path else None
    if cand is not None:
        return cand
    if cand_body is None:
        return None
    pool = cmp.candidate.body_colliders(cand_body)
    if not pool:
        return None
    return min(pool, key=lambda c: (_distance(ref_collider.centroid, c.centroid), c.path))


def _distance(a, b) -> float:
    d = spatial.distance(a, b)
    return d if math.isfinite(d) else math.inf


def physics(cmp: Comparison, target: str):
    ref_body = cmp.reference.bodies[target]
    cand_body = cmp.match.bodies.get(target)
    relative = cmp.tolerances["density_relative"]
    absolute = cmp.tolerances["friction_abs"]
    out: dict[str, Component] = {}
    for ref_collider in sorted(cmp.reference.body_colliders(ref_body.path), key=lambda c: c.path):
        cand = _candidate_collider(cmp, ref_collider, cand_body)
        if cand is None:
            compared = {"bound": (1.0, 0.0)}
            cand_material = None
        else:
            compared = mat.compare_physics(ref_collider.material, cand.material,
                                           relative_tolerance=relative, absolute_tolerance=absolute)
            cand_material = cand.material
        for name, (error, tolerance) in compared.items():
            key = f"physics.{name}"
            worst = out.get(key)
            if worst is None or not (error <= worst.error):  # nan replaces anything
                out[key] = Component(
                    error, tolerance,
                    {"collider": ref_collider.path, "value": _physics_value(ref_collider.material, name)},
                    {"collider": cand.path if cand is not None else None,
                     "value": _physics_value(cand_material, name)},
                )
    return out or {"physics.bound": boolean(True, "no colliders", None)}


MEASURES = {VISUAL: visual, PHYSICS: physics}


def physics_targets(reference) -> list[str]:
    """Reference bodies that own at least one collider."""
    owners = {c.body for c in reference.colliders.values() if c.body is not None}
    return [b for b in reference.bodies if b in owners]


def targets(reference, measure: str | None = None) -> list[str]:
    """Visible component paths for "visual" (and by default), bodies with colliders for "physics"."""
    if measure == PHYSICS:
        return physics_targets(reference)
    return list(reference.components)
