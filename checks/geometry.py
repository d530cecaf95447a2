"""Component geometry family: each visible component's placement and shape.

Targets are reference visible components (gprim paths); the candidate side is what the
correspondence matched within the matched body: usually one component, several when the
candidate split the part into meshes that lie on its surface, and the reference side is
several when the candidate merged parts (correspondence.component_group). Placement is what a
rigid fit moves (centroid offset, rotation), shape what it cannot explain (mean residual
distance, area). The fit (stage_snapshot/surface_fit.py) is exact for the same triangles in any
order, split or merged, for another triangulation of the same surface and for a part only
moved, and a rotation that maps a symmetric part onto itself is no error: sampling and
triangulation never read as a change of shape. A pair the correspondence proved the same surface
(each part's samples on the other's surface) is not fitted again: rotation 0, its measured distance.
"""
from __future__ import annotations

import math

from usd_repair_verifier.stage_snapshot import surface_fit

from .measurement import Comparison, Component, log_ratio

MISSING = math.inf


def _sides(cmp: Comparison, target: str):
    """(reference surface, candidate surface or None): the target's group on each side."""
    refs, cands = cmp.match.component_group(target)
    ref_surfaces = [cmp.reference.components[p].surface for p in refs]
    cand_surfaces = [cmp.candidate.components[p].surface for p in cands]
    ref = surface_fit.Surface.union(ref_surfaces)
    return ref, surface_fit.Surface.union(cand_surfaces) if cand_surfaces else None


def fit(cmp: Comparison, target: str) -> dict | None:
    """The rigid fit of the target's group (memoized in the comparison's derived values, which the
    session that built it owns, keyed by the group's paths); None when nothing matched."""
    key = ("fit", cmp.match.component_group(target))
    if key not in cmp.derived:
        ref, cand = _sides(cmp, target)
        same = cmp.match.same_surface.get(target)
        if cand is None:
            cmp.derived[key] = None
        elif same is not None:   # each lies wholly on the other at the identity: nothing to fit
            cmp.derived[key] = (ref, cand, surface_fit.same_surface(ref, cand, same))
        else:
            cmp.derived[key] = (ref, cand, surface_fit.rigid_fit(ref, cand))
    return cmp.derived[key]


def placement(cmp: Comparison, target: str):
    tol_m, tol_deg = cmp.tolerances["geometry_position_m"], cmp.tolerances["geometry_angle_deg"]
    found = fit(cmp, target)
    if found is None:
        ref = cmp.reference.components[target]
        return {"offset_m": Component(MISSING, tol_m, list(ref.centroid), "missing or hidden", unit="m", value_unit="m"),
                "rotation_deg": Component(MISSING, tol_deg, unit="deg")}
    ref, cand, result = found
    r_c, c_c = [float(c) for c in ref.centroid], [float(c) for c in cand.centroid]
    return {
        "offset_m": Component(math.dist(r_c, c_c), tol_m, r_c, c_c, unit="m", value_unit="m"),
        "rotation_deg": Component(result["rotation_deg"], tol_deg, unit="deg"),
    }


def shape(cmp: Comparison, target: str):
    tol_m = cmp.tolerances["geometry_shape_m"]
    tol_area = math.log1p(cmp.tolerances["geometry_area_relative"])
    found = fit(cmp, target)
    if found is None:
        ref = cmp.reference.components[target]
        return {"residual_m": Component(MISSING, tol_m, None, "missing or hidden", unit="m"),
                "area": Component(MISSING, tol_area, ref.area, None, unit="log_ratio", value_unit="m^2")}
    ref, cand, result = found
    return {
        "residual_m": Component(result["residual_m"], tol_m, unit="m"),
        "area": Component(log_ratio(ref.area, cand.area), tol_area, ref.area, cand.area, unit="log_ratio",
                          value_unit="m^2"),
    }


MEASURES = {"placement": placement, "shape": shape}


def targets(reference, measure: str | None = None) -> list[str]:
    return list(reference.components)
