"""Geometry faults: a visible component moved or turned, or reshaped (points displaced or scaled)."""
from __future__ import annotations

import math

from pxr import Gf, Sdf, Usd, UsdGeom

from usd_repair_verifier.authoring.inject.edits import (
    asset_size_units, existing_xform_op, rotate_prim, scale_prim, set_attribute, target_prim, translate_prim,
)


def _component(stage: Usd.Stage, target: str) -> Usd.Prim:
    return target_prim(stage, target, lambda p: p.IsA(UsdGeom.Gprim), "a visible gprim")


def _random_unit(rng) -> tuple[float, float, float]:
    v = [rng.uniform(-1.0, 1.0) for _ in range(3)]
    n = math.sqrt(sum(c * c for c in v)) or 1.0
    return tuple(c / n for c in v)


def _local_scale(prim: Usd.Prim) -> float:
    """How long one local unit of the prim is in stage units (its world scale)."""
    m = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    return max(Gf.Vec3d(m.GetRow3(i)).GetLength() for i in range(3)) or 1.0


def component_moved(stage, target, rng, dirty) -> str:
    prim = _component(stage, target)
    if rng.random() < 0.5:
        # Added to the prim's own translate op when it has one (in its parent's frame), else applied locally.
        frame = prim.GetParent() if existing_xform_op(prim, "xformOp:translate") is not None else prim
        distance = 0.1 * asset_size_units(stage) / _local_scale(frame)
        offset = tuple(distance * c for c in _random_unit(rng))
        translate_prim(prim, Gf.Vec3d(*offset), dirty)
        return f"translated by {distance:.4g} units"
    axis = rng.randrange(3)
    angles = [0.0, 0.0, 0.0]
    angles[axis] = rng.choice([-1, 1]) * rng.uniform(20.0, 60.0)
    rotate_prim(prim, axis, angles[axis], dirty)
    return f"rotated by {angles[axis]:.1f} deg about {'XYZ'[axis]}"


def component_reshaped(stage, target, rng, dirty) -> str:
    prim = _component(stage, target)
    points_attr = prim.GetAttribute("points") if prim.IsA(UsdGeom.Mesh) else None
    points = points_attr.Get() if points_attr else None
    if points and len(points) >= 4 and rng.random() < 0.5:
        extent = max((max(p[i] for p in points) - min(p[i] for p in points)) for i in range(3)) or 1.0
        corrupted = list(points)
        for index in sorted(rng.sample(range(len(points)), max(1, len(points) // 4))):
            direction = _random_unit(rng)
            corrupted[index] = Gf.Vec3f(*(points[index][i] + 0.3 * extent * direction[i] for i in range(3)))
        set_attribute(prim, "points", corrupted, Sdf.ValueTypeNames.Point3fArray, dirty)
        return f"{max(1, len(points) // 4)} of {len(points)} points displaced by 30% of the part's extent"
    factors = [1.0, 1.0, 1.0]
    factors[rng.randrange(3)] = rng.choice([0.5, 1.6])
    scale_prim(prim, tuple(factors), dirty)
    return f"scaled by {factors}"

