"""Unit-density mass information of one collider shape, in its shape frame with scale baked in.

Shape rules follow UsdPhysics' own parser (``UsdPhysicsLoadStageFromPrimRange``): scale is the
collider's world ``Gf.Transform`` scale, baked into the shape (sphere radius * max|s|; cube half
extents * |s|; capsule/cylinder/cone radius * max of the two off-axis |s|, height * |s_axis|;
mesh points * s). Capsule_1 / Cylinder_1 with equal radii are analytic, with unequal radii a
tessellated convex hull (noted). Mesh colliders use the collider model that collision uses too
(collider_model.py: closed mesh, hull, component hulls, bounding cube or sphere), integrated by
``mesh_math.triangles_mass``. Values are read as the mass API sees them: the default, else the
earliest time sample.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pxr import Usd, UsdGeom

from . import typed_read
from .collider_model import MeshCollider
from .mesh_math import Hull, convex_hull, triangles_mass

@dataclass(frozen=True)
class ShapeMass:
    volume: float
    com: tuple[float, float, float]
    inertia: tuple[tuple[float, float, float], ...]  # 3x3 about com, shape axes
    note: str | None = None


ZERO_SHAPE = ShapeMass(0.0, (0.0, 0.0, 0.0), ((0.0,) * 3,) * 3)
_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}


def _diag_shape(volume, moments, com=(0.0, 0.0, 0.0), note=None) -> ShapeMass:
    m = np.diag(np.asarray(moments, dtype=float))
    return ShapeMass(float(volume), tuple(float(c) for c in com), tuple(map(tuple, m)), note)


def _axial_shape(axis: str, volume, i_axis, i_perp, com_along=0.0, note=None) -> ShapeMass:
    k = _AXIS_INDEX.get(str(axis), 2)
    moments = [i_perp] * 3
    moments[k] = i_axis
    com = [0.0, 0.0, 0.0]
    com[k] = com_along
    return _diag_shape(volume, moments, com, note)


def _off_axis_max(scale, axis: str) -> float:
    k = _AXIS_INDEX.get(str(axis), 2)
    return max(abs(scale[i]) for i in range(3) if i != k)


def _box(half) -> ShapeMass:
    a, b, c = (abs(float(x)) for x in half)
    v = 8.0 * a * b * c
    return _diag_shape(v, (v * (b * b + c * c) / 3.0, v * (a * a + c * c) / 3.0, v * (a * a + b * b) / 3.0))


def _sphere(r: float, center=(0.0, 0.0, 0.0)) -> ShapeMass:
    v = 4.0 / 3.0 * math.pi * r**3
    i = 0.4 * v * r * r
    return _diag_shape(v, (i, i, i), center)


def _cylinder(r: float, h: float, axis: str) -> ShapeMass:
    """Solid cylinder, radius r, total height h."""
    v = math.pi * r * r * h
    return _axial_shape(axis, v, 0.5 * v * r * r, v * (3.0 * r * r + h * h) / 12.0)


def _cone(r: float, h: float, axis: str) -> ShapeMass:
    """UsdGeom.Cone: centred on the origin, apex towards +axis; centroid at -h/4."""
    v = math.pi * r * r * h / 3.0
    return _axial_shape(
        axis, v, 0.3 * v * r * r, v * (3.0 * r * r / 20.0 + 3.0 * h * h / 80.0), com_along=-h / 4.0
    )


def _capsule(r: float, h: float, axis: str) -> ShapeMass:
    """Capsule, radius r, cylindrical part of length h (UsdGeom.Capsule.height)."""
    vc = math.pi * r * r * h
    vs = 4.0 / 3.0 * math.pi * r**3
    i_axis = 0.5 * vc * r * r + 0.4 * vs * r * r
    i_perp = vc * (h * h / 12.0 + r * r / 4.0) + vs * (0.4 * r * r + h * h / 4.0 + 3.0 * h * r / 8.0)
    return _axial_shape(axis, vc + vs, i_axis, i_perp)


def _tapered(r_top: float, r_bottom: float, h: float, axis: str, capsule: bool) -> ShapeMass:
    """Capsule_1 / Cylinder_1 with unequal radii: convex hull of a fine tessellation."""
    if capsule:
        # hull of two spheres (top at +h/2, bottom at -h/2)
        u = _fibonacci_sphere(1500)
        pts = np.concatenate([u * r_top + [0, 0, h / 2.0], u * r_bottom - [0, 0, h / 2.0]])
    else:
        n = 512
        ang = np.linspace(0.0, 2.0 * math.pi, n, endpoint=False)
        circle = np.stack([np.cos(ang), np.sin(ang), np.zeros(n)], axis=1)
        pts = np.concatenate([circle * r_top + [0, 0, h / 2.0], circle * r_bottom - [0, 0, h / 2.0]])
    k = _AXIS_INDEX.get(str(axis), 2)
    # local w axis -> shape axis k (cyclic permutation keeps handedness)
    perm = [(k + 1) % 3, (k + 2) % 3, k]
    shape_pts = np.zeros_like(pts)
    shape_pts[:, perm[0]] = pts[:, 0]
    shape_pts[:, perm[1]] = pts[:, 1]
    shape_pts[:, perm[2]] = pts[:, 2]
    sm = _triangles_shape(_hull_triangles(convex_hull(shape_pts), np.ones(3)))
    return ShapeMass(sm.volume, sm.com, sm.inertia, "tapered shape: tessellated convex hull")


def _fibonacci_sphere(n: int) -> np.ndarray:
    i = np.arange(n) + 0.5
    phi = np.arccos(1.0 - 2.0 * i / n)
    theta = math.pi * (1.0 + 5.0**0.5) * i
    return np.stack([np.cos(theta) * np.sin(phi), np.sin(theta) * np.sin(phi), np.cos(phi)], axis=1)


def _get(attr, kind: str):
    """The typed value (typed_read): the default, else the earliest time sample; None if unusable."""
    if not attr:
        return None
    val = typed_read.value(attr, kind)
    if val is None and attr.GetNumTimeSamples():
        val = typed_read.value(attr, kind, time=Usd.TimeCode.EarliestTime())
    return val


def _length(attr) -> float:
    """A size, radius or height: 0 (no volume) when it is unusable."""
    return _get(attr, "real") or 0.0


def _hull_triangles(hull: Hull | None, scale: np.ndarray) -> np.ndarray:
    if hull is None:
        return np.zeros((0, 3, 3))
    return (hull.points * scale)[hull.simplices]


def _triangles_shape(tris: np.ndarray, note: str | None = None) -> ShapeMass:
    vol, com, inertia = triangles_mass(tris)
    return ShapeMass(vol, tuple(map(float, com)), tuple(map(tuple, inertia)), note or None)


def model_mass(model: MeshCollider | None, scale) -> ShapeMass:
    """Mass information of a mesh collider model with the world scale ``scale`` baked in."""
    if model is None:
        return ShapeMass(0.0, ZERO_SHAPE.com, ZERO_SHAPE.inertia, "mesh without usable points or faces")
    s = np.asarray(scale, dtype=np.float64)
    note = model.note or None
    if model.form == "bounding_cube":
        pts = model.points * s
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        b = _box((hi - lo) / 2.0)
        return ShapeMass(b.volume, tuple(map(float, (hi + lo) / 2.0)), b.inertia, note)
    if model.form == "bounding_sphere":
        centre, radius = model.bounding_sphere(s)
        return _sphere(float(radius), tuple(map(float, centre)))
    if model.form == "mesh":
        return _triangles_shape((model.points * s)[model.faces], note)
    hulls = [p for p in model.parts if isinstance(p, Hull)]
    if not hulls:
        return ShapeMass(0.0, ZERO_SHAPE.com, ZERO_SHAPE.inertia, note)
    return _triangles_shape(np.concatenate([_hull_triangles(h, s) for h in hulls]), note)


def _read_axis(g) -> str:
    return _get(g.GetAxisAttr(), "token") or "Z"


def primitive_mass(prim: Usd.Prim, a: np.ndarray) -> ShapeMass | None:
    """Mass information of an implicit prim under the absolute world scale ``a``; None if not one."""
    if prim.IsA(UsdGeom.Cube):
        return _box(a * _length(UsdGeom.Cube(prim).GetSizeAttr()) / 2.0)
    if prim.IsA(UsdGeom.Sphere):
        return _sphere(_length(UsdGeom.Sphere(prim).GetRadiusAttr()) * float(a.max()))
    for cls, fn in ((UsdGeom.Capsule, _capsule), (UsdGeom.Cylinder, _cylinder), (UsdGeom.Cone, _cone)):
        if prim.IsA(cls):
            g = cls(prim)
            axis = _read_axis(g)
            r = _length(g.GetRadiusAttr()) * _off_axis_max(a, axis)
            h = _length(g.GetHeightAttr()) * float(a[_AXIS_INDEX.get(axis, 2)])
            return fn(r, h, axis)
    for cls, capsule in ((UsdGeom.Capsule_1, True), (UsdGeom.Cylinder_1, False)):
        if prim.IsA(cls):
            g = cls(prim)
            axis = _read_axis(g)
            m = _off_axis_max(a, axis)
            rt = _length(g.GetRadiusTopAttr()) * m
            rb = _length(g.GetRadiusBottomAttr()) * m
            h = _length(g.GetHeightAttr()) * float(a[_AXIS_INDEX.get(axis, 2)])
            if abs(rt - rb) <= 1e-12 * max(rt, rb, 1e-30):
                return (_capsule if capsule else _cylinder)(rt, h, axis)
            return _tapered(rt, rb, h, axis, capsule)
    return None
