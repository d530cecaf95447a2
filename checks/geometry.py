"""Component geometry family: each visible component's placement and shape.

Targets are reference visible components (gprim paths); the candidate
component is matched within the matched body (correspondence.part_cost).
A moved part and a reshaped part are told apart by a rigid fit: placement is
what the fit moves (centroid offset, rotation), shape is what it cannot
explain (mean residual distance, area). Samples of identical triangles are
seeded identically (parts.content_seed), so when the triangle counts and area
agree the fit is exact Kabsch on corresponding samples; otherwise it is ICP.
"""
from __future__ import annotations

import math
import numpy as np

from usd_repair_verifier.stage_snapshot import surface_fit
from usd_repair_verifier.stage_snapshot.model import VisualComponent

from .measurement import Comparison, Component, log_ratio

MISSING = math.inf


def _pair(cmp: Comparison, target: str) -> tuple[VisualComponent, VisualComponent | None]:
    ref = cmp.reference.components[target]
    cand_path = cmp.match.components.get(target)
    return ref, cmp.candidate.components.get(cand_path) if cand_path else None


def _corresponding(ref: VisualComponent, cand: VisualComponent) -> bool:
    return (
        ref.triangle_count == cand.triangle_count
        and len(ref.samples) == len(cand.samples)
        and abs(math.log((ref.area + 1e-300) / (cand.area + 1e-300))) < 1e-6
    )


def fit(ref: VisualComponent, cand: VisualComponent, tolerance: float = 0.0, memo: dict | None = None) -> dict:
    """rotation_deg and residual_m of the best rigid fit (memoized per pair in `memo`, the
    comparison's derived values, keyed by the two parts' paths).

    Fast path: identical sampling (same triangles) gives corresponding samples and an
    exact Kabsch fit. When that does not explain the candidate within `tolerance`
    (another triangulation of the same surface samples differently), ICP aligns the
    samples and the residual is measured against the other side's *surface*, so
    sampling and triangulation never read as a change of shape.
    """
    key = ("fit", ref.path, cand.path, tolerance)
    hit = memo.get(key) if memo is not None else None
    if hit is not None:
        return hit
    result = None
    if _corresponding(ref, cand):
        result = surface_fit.fit_corresponding(ref.samples, cand.samples)
    if result is None or result["residual_m"] > tolerance:
        aligned = _surface_fit(ref, cand)
        if result is None or aligned["residual_m"] < result["residual_m"]:
            result = aligned
    if memo is not None:
        memo[key] = result
    return result


def _surface_fit(ref: VisualComponent, cand: VisualComponent) -> dict:
    split = surface_fit.split_placement_and_shape(ref.samples, cand.samples)
    rotation = np.asarray(split["rotation"])
    center = ref.samples.mean(axis=0)
    shift = center + np.asarray(split["translation"]) - rotation @ center   # cand ~ R ref + shift
    result = {"rotation_deg": float(split["rotation_deg"])}
    if ref.surface is None or cand.surface is None:
        result["residual_m"] = float(split["residual"]["mean_distance"])
        return result
    moved_samples = ref.samples @ rotation.T + shift
    moved_vertices = np.asarray(ref.surface[0]) @ rotation.T + shift
    to_cand = surface_fit.surface_distances(moved_samples, *cand.surface)
    to_ref = surface_fit.surface_distances(cand.samples, moved_vertices, ref.surface[1])
    result["residual_m"] = float(0.5 * (to_cand.mean() + to_ref.mean()))
    return result


def placement(cmp: Comparison, target: str):
    ref, cand = _pair(cmp, target)
    tol_m, tol_deg = cmp.tolerances["geometry_position_m"], cmp.tolerances["geometry_angle_deg"]
    if cand is None:
        return {"offset_m": Component(MISSING, tol_m, list(ref.centroid), "missing or hidden", unit="m", value_unit="m"),
                "rotation_deg": Component(MISSING, tol_deg, unit="deg")}
    offset = math.dist(ref.centroid, cand.centroid)
    rotation = fit(ref, cand, cmp.tolerances["geometry_shape_m"], cmp.derived)["rotation_deg"]
    return {
        "offset_m": Component(offset, tol_m, list(ref.centroid), list(cand.centroid), unit="m", value_unit="m"),
        "rotation_deg": Component(rotation, tol_deg, unit="deg"),
    }


def shape(cmp: Comparison, target: str):
    ref, cand = _pair(cmp, target)
    tol_m = cmp.tolerances["geometry_shape_m"]
    tol_area = math.log1p(cmp.tolerances["geometry_area_relative"])
    if cand is None:
        return {"residual_m": Component(MISSING, tol_m, None, "missing or hidden", unit="m"),
                "area": Component(MISSING, tol_area, ref.area, None, unit="log_ratio", value_unit="m^2")}
    return {
        "residual_m": Component(fit(ref, cand, tol_m, cmp.derived)["residual_m"], tol_m, unit="m"),
        "area": Component(log_ratio(ref.area, cand.area), tol_area, ref.area, cand.area, unit="log_ratio",
                          value_unit="m^2"),
    }


MEASURES = {"placement": placement, "shape": shape}


def targets(reference, measure: str | None = None) -> list[str]:
    return list(reference.components)
