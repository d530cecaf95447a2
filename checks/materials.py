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

from usd_repair_verifier.stage_snapshot import spatial
from usd_repair_verifier.stage_snapshot.materials import (
    PREVIEW_SURFACE_DEFAULTS,
    PhysicsMaterial,
    VisualMaterial,
)

from .measurement import Comparison, Component, boolean

VISUAL = "visual"
PHYSICS = "physics"
# The error of a value that cannot be compared (mismatched kinds, a non-finite difference, a
# density set on one side only): far above any tolerance, yet finite so reports stay JSON.
LARGE_ERROR = 50.0
# Surface input names that would collide with a component name (as would any "texture." name):
# reported as "surface.<name>".
_RESERVED = {"bound", "shader"}
# A physics material's components: (unit of the error, unit of the values); friction and
# restitution are dimensionless ("1").
PHYSICS_UNITS = {"bound": ("flag", None), "density": ("log_ratio", "kg/m^3")}


# ---------------------------------------------------------------------------
# comparing two resolved materials: named components ``name -> (error, tolerance)``; a
# component passes when ``error <= tolerance``; 0/1 components have tolerance 0.
# ---------------------------------------------------------------------------

def _finite(err: float) -> float:
    return err if math.isfinite(err) else LARGE_ERROR


def _value_error(ref, cand, color_tolerance: float, scalar_tolerance: float) -> tuple[float, float]:
    if isinstance(ref, tuple) and isinstance(cand, tuple) and len(ref) == len(cand):
        err = max((abs(a - b) for a, b in zip(ref, cand)), default=0.0)
        return (_finite(err), color_tolerance)
    if isinstance(ref, float) and isinstance(cand, float):
        return (_finite(abs(ref - cand)), scalar_tolerance)
    if isinstance(ref, str) and isinstance(cand, str):
        return (0.0 if ref == cand else 1.0, 0.0)
    # mismatched kinds or an input without any known default
    tol = color_tolerance if isinstance(ref, tuple) or isinstance(cand, tuple) else scalar_tolerance
    return (LARGE_ERROR, tol)


def _same_texture(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return False
    if a.startswith("missing:") and b.startswith("missing:"):
        return True                       # both render the fallback
    return a == b


def compare_visual(reference: VisualMaterial | None, candidate: VisualMaterial | None,
                   color_tolerance: float = 0.02, scalar_tolerance: float = 0.02
                   ) -> dict[str, tuple[float, float]]:
    """Path-independent comparison of two resolved visual materials.

    Components: ``bound``; ``shader``; each surface input by name (colours and
    other tuples: max abs channel difference vs ``color_tolerance``; scalars:
    abs difference vs ``scalar_tolerance``; tokens: 0/1); ``texture.<input>``
    (0/1, same content digest; two missing files both render the fallback and
    count as equal).  An input present on one side only compares against the
    UsdPreviewSurface default.  An input textured on either side is compared
    only through ``texture.<input>``.  When either side is unbound only
    ``bound`` is returned.
    """
    if reference is None or candidate is None:
        return {"bound": (0.0 if reference is None and candidate is None else 1.0, 0.0)}
    out: dict[str, tuple[float, float]] = {"bound": (0.0, 0.0)}
    out["shader"] = (0.0 if reference.shader == candidate.shader else 1.0, 0.0)
    textured = set(reference.textures) | set(candidate.textures)
    for name in sorted((set(reference.surface) | set(candidate.surface)) - textured):
        default = PREVIEW_SURFACE_DEFAULTS.get(name)
        r = reference.surface.get(name, default)
        c = candidate.surface.get(name, default)
        key = f"surface.{name}" if name in _RESERVED or name.startswith("texture.") else name
        out[key] = _value_error(r, c, color_tolerance, scalar_tolerance)
    for name in sorted(textured):
        same = _same_texture(reference.textures.get(name), candidate.textures.get(name))
        out[f"texture.{name}"] = (0.0 if same else 1.0, 0.0)
    return out


def compare_physics(reference: PhysicsMaterial | None, candidate: PhysicsMaterial | None,
                    relative_tolerance: float = 0.01, *, absolute_tolerance: float = 0.01
                    ) -> dict[str, tuple[float, float]]:
    """Path-independent comparison of two resolved physics materials.

    Components: ``bound``; ``static_friction``, ``dynamic_friction``,
    ``restitution`` (abs difference vs ``absolute_tolerance``); ``density``
    (|log ratio| vs log(1 + relative_tolerance); both unset (<= 0) -> 0, one
    unset -> LARGE_ERROR).  When either side is unbound only ``bound`` is
    returned.
    """
    if reference is None or candidate is None:
        return {"bound": (0.0 if reference is None and candidate is None else 1.0, 0.0)}
    out: dict[str, tuple[float, float]] = {"bound": (0.0, 0.0)}
    for name in ("static_friction", "dynamic_friction", "restitution"):
        err = abs(getattr(reference, name) - getattr(candidate, name))
        out[name] = (_finite(err), absolute_tolerance)
    a, b = reference.density, candidate.density
    a_set = math.isfinite(a) and a > 0
    b_set = math.isfinite(b) and b > 0
    if not a_set and not b_set:
        err = 0.0
    elif a_set != b_set:
        err = LARGE_ERROR
    else:
        err = abs(math.log(a / b))
    out["density"] = (_finite(err), math.log1p(relative_tolerance))
    return out


# ---------------------------------------------------------------------------
# the family's measures
# ---------------------------------------------------------------------------


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
    return _plain(m.surface.get(key, PREVIEW_SURFACE_DEFAULTS.get(key)))


def visual(cmp: Comparison, target: str):
    ref = cmp.reference.components[target]
    cand_path = cmp.match.components.get(target)
    cand = cmp.candidate.components.get(cand_path) if cand_path else None
    if cand is None:
        return {"matched": boolean(False, ref.path, None)}
    out = {"matched": boolean(True, ref.path, cand.path)}
    # A part the candidate split into several meshes: every piece must look like the part
    # (correspondence.component_group); the worst piece is reported.
    _, pieces = cmp.match.component_group(target)
    for piece in [cand] + [cmp.candidate.components[p] for p in pieces if p != cand.path]:
        compared = compare_visual(
            ref.material, piece.material,
            color_tolerance=cmp.tolerances["material_color"],
            scalar_tolerance=cmp.tolerances["material_scalar"],
        )
        for name, (error, tolerance) in compared.items():
            key = f"visual.{name}"
            if key not in out or error > out[key].error:
                out[key] = Component(error, tolerance, _visual_values(ref.material, name),
                                     _visual_values(piece.material, name), unit="flag" if tolerance == 0.0 else "1")
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
            compared = compare_physics(ref_collider.material, cand.material,
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
                    unit=PHYSICS_UNITS.get(name, ("1", None))[0], value_unit=PHYSICS_UNITS.get(name, ("1", None))[1],
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
