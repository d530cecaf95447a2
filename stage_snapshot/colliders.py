"""Colliders as a simulator sees them: world-space solids, and the collision measures on them.

Building blocks for the "collision" check family (README, "What is measured"): coverage (share
of a body's visible surface within its colliders) and free space (share of the reference's
empty space inside the body's bounds that candidate colliders fill). Metres, world space,
deterministic (seeded ``PCG64``; no set/dict order; single-threaded queries).

``collider_solid(prim, world, meters_per_unit)`` builds one ``Solid`` (``contains(points,
margin)``, ``volume``, ``bounds``, ``kind``, ``approximation``, ``note``):

* Implicit prims are exact in their local frame (solid_primitives.py): ``Cube`` (size),
  ``Sphere`` (radius), ``Capsule`` (radius, height = distance between the cap centres, axis),
  ``Capsule_1`` (radiusBottom at -axis, radiusTop at +axis: the convex hull of the two cap
  spheres, as Hydra tessellates it), ``Cylinder``, ``Cylinder_1`` (frustum), ``Cone`` (apex at
  +height/2), ``Plane`` (the half-space below it, normal +axis, as PhysX and MuJoCo treat
  planes: unbounded bounds, infinite volume).
* Meshes follow ``physics:approximation`` through the one collider model that the mass
  properties use too (collider_model.py: closed mesh, hull, component hulls, bounding cube or
  sphere), carried to world metres (solid_meshes.py). Triangle-mesh colliders on dynamic
  bodies are replaced by convex hulls in PhysX; this module takes the authored approximation at
  its word (``none`` = the mesh) and leaves that policy to the caller. ``collisionEnabled`` and
  which prims are colliders are the caller's call.

``Solid.contains`` is boundary-inclusive: a point counts when it is inside, or within
``margin`` metres (plus ``CONTAINS_EPS``) of the surface. ``Solid.volume`` is exact for
primitives, hulls and closed meshes; a union sums its parts (overlaps are not removed).
``Solid.bounds`` is a (2, 3) enclosing world box (+-inf where a half-space is unbounded).
"""

from __future__ import annotations

import zlib

import numpy as np
from pxr import Gf, Usd, UsdGeom

from .collider_model import ColliderModels, MeshCollider, mesh_approximation, mesh_collider
from .geometry import TriangleSoup, _finite_nonneg, _get, axis_permutation, finite_affine
from .mesh_math import Hull, as_points
from .solid_meshes import _HullSolid, _MeshSolid, _SurfaceSolid, _UnionSolid, inside_any
from .solid_primitives import CONTAINS_EPS, Solid, _Box, _Ellipsoid, _Frustum, _HalfSpace, _RoundCone

__all__ = [
    "CONTAINS_EPS",
    "Solid",
    "collider_solid",
    "model_solid",
    "mesh_solid",
    "hull_solid",
    "union_solid",
    "mesh_approximation",
    "inside_any",
    "coverage",
    "free_space_fill",
    "empty_space_samples",
    "volume_samples",
    "outside_share",
]

_IDENTITY = np.eye(3)


# =========================================================================== mesh solids


def _part_solid(part, A, t, kind, approximation, note) -> Solid:
    if isinstance(part, Hull):
        return _HullSolid(part, A, t, kind, approximation, note)
    return _SurfaceSolid(part.reshape(-1, 3) @ A + t, kind, approximation, note)


def model_solid(model: MeshCollider | None, A, t, scale=(1.0, 1.0, 1.0), meters_per_unit: float = 1.0) -> Solid | None:
    """The world solid (metres) of a mesh collider model, carried by ``w = q @ A + t``. ``scale``
    (the collider's world scale, stage units) and ``meters_per_unit`` place a bounding sphere,
    which stays a sphere in world space."""
    if model is None or model.form == "empty":
        return None
    kind, approx, note = model.kind, model.approximation, model.note
    if model.form == "mesh":
        return _MeshSolid(model.points @ A + t, model.faces, kind, approx, note)
    if model.form == "parts":
        if len(model.parts) == 1:
            return _part_solid(model.parts[0], A, t, kind, approx, note)
        parts = [_part_solid(p, A, t, "convex_hull", approx, "") for p in model.parts]
        return _UnionSolid(parts, kind, approx, note)
    lo, hi = model.points.min(axis=0), model.points.max(axis=0)
    if model.form == "bounding_cube":
        half = 0.5 * (hi - lo)  # a flat mesh gives a zero-thickness box
        if np.all(half <= 0):
            return None
        solid = _Box(A, (0.5 * (lo + hi)) @ A + t, half, kind=kind)
    else:
        scale = np.asarray(scale, dtype=np.float64)
        centre, radius = model.bounding_sphere(scale)
        if radius <= 0 or np.any(scale == 0):
            return None
        solid = _Ellipsoid(_IDENTITY * float(meters_per_unit), (centre / scale) @ A + t, radius, kind=kind)
    solid.approximation = approx
    return solid


def mesh_solid(soup: TriangleSoup, approximation: str = "none") -> Solid | None:
    """The solid a simulator would use for a world-space mesh (see collider_model.py)."""
    if soup is None or len(soup.faces) == 0:
        return None
    return model_solid(mesh_collider(soup.vertices, soup.faces, approximation), _IDENTITY, np.zeros(3))


def hull_solid(points, kind="convex_hull", approximation=None, note="") -> Solid | None:
    """Convex hull of world points (metres). Coplanar points give a zero-volume
    ``surface`` solid (the flat hull polygon); fewer than 3 independent points ``None``."""
    pts = as_points(points)
    model = mesh_collider(pts, np.zeros((0, 3), np.int64), "convexHull")
    if model.form != "parts":
        return None
    part = model.parts[0]
    if isinstance(part, Hull):
        return _HullSolid(part, _IDENTITY, np.zeros(3), kind, approximation, note)
    return _SurfaceSolid(part, "surface(" + kind + ")", approximation,
                         (note + "; " if note else "") + "flat point set: zero volume")


def union_solid(solids, kind="union") -> Solid | None:
    """One solid from several (``None`` skipped)."""
    parts = [s for s in solids if s is not None]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else _UnionSolid(parts, kind)


# =========================================================================== collider prims


def _world_frame(world, meters_per_unit: float):
    """(A, t) in metres, or None for a non-finite or (nearly) singular matrix."""
    frame = finite_affine(world, meters_per_unit)
    if frame is None:
        return None
    A, t = frame
    if not np.isfinite(np.linalg.cond(A)) or np.linalg.cond(A) > 1e12:
        return None
    return A, t


def _primitive_solid(prim: Usd.Prim, A, t, time) -> Solid | None:
    """The exact solid of an implicit prim (Cube ... Plane), None if not one or invalid."""
    if prim.IsA(UsdGeom.Cube):
        size = _get(prim, "size", time, 2.0)
        if not _finite_nonneg(size) or size <= 0:
            return None
        return _Box(A, t, np.full(3, size / 2.0), kind="cube")
    if prim.IsA(UsdGeom.Sphere):
        r = _get(prim, "radius", time, 1.0)
        if not _finite_nonneg(r) or r <= 0:
            return None
        return _Ellipsoid(A, t, r, kind="sphere")

    axis = str(_get(prim, "axis", time, "Z"))
    Ap = axis_permutation(axis) @ A  # canonical (spine +Z) -> world
    if prim.IsA(UsdGeom.Plane):
        return _HalfSpace(Ap, t)
    if prim.IsA(UsdGeom.Capsule) or prim.IsA(UsdGeom.Capsule_1):
        if prim.IsA(UsdGeom.Capsule):
            rb = rt = _get(prim, "radius", time, 0.5)
            kind = "capsule"
        else:
            rt, rb = _get(prim, "radiusTop", time, 0.5), _get(prim, "radiusBottom", time, 0.5)
            kind = "capsule_1"
        h = _get(prim, "height", time, 1.0)
        if not _finite_nonneg(rb, rt, h) or max(rb, rt) <= 0:
            return None
        if h <= abs(rb - rt):  # one cap sphere contains the other (or a plain sphere)
            z = -h / 2 if rb >= rt else h / 2
            s = _Ellipsoid(Ap, np.array([0.0, 0.0, z]) @ Ap + t, max(rb, rt), kind=kind)
            return s
        return _RoundCone(Ap, t, rb, rt, h, kind=kind)
    if prim.IsA(UsdGeom.Cylinder):
        r, h = _get(prim, "radius", time, 1.0), _get(prim, "height", time, 2.0)
        if not _finite_nonneg(r, h) or r <= 0 or h <= 0:
            return None
        return _Frustum(Ap, t, r, r, h, kind="cylinder")
    if prim.IsA(UsdGeom.Cylinder_1):
        rt, rb = _get(prim, "radiusTop", time, 1.0), _get(prim, "radiusBottom", time, 1.0)
        h = _get(prim, "height", time, 2.0)
        if not _finite_nonneg(rt, rb, h) or max(rt, rb) <= 0 or h <= 0:
            return None
        return _Frustum(Ap, t, rb, rt, h, kind="cylinder_1")
    if prim.IsA(UsdGeom.Cone):
        r, h = _get(prim, "radius", time, 1.0), _get(prim, "height", time, 2.0)
        if not _finite_nonneg(r, h) or r <= 0 or h <= 0:
            return None
        return _Frustum(Ap, t, r, 0.0, h, kind="cone")
    return None


def collider_solid(prim: Usd.Prim, world, meters_per_unit: float, time=Usd.TimeCode.Default(),
                   models: ColliderModels | None = None) -> Solid | None:
    """The world-space (metres) solid of a collider prim, or ``None`` for non-geometry,
    malformed data (bad indices, no points, non-positive sizes) or a singular matrix.
    ``models`` is the stage's store of mesh collider models (shared with the mass properties)."""
    if not prim or not prim.IsA(UsdGeom.Gprim):
        return None
    frame = _world_frame(world, meters_per_unit)
    if frame is None:
        return None
    A, t = frame
    if not prim.IsA(UsdGeom.Mesh):
        return _primitive_solid(prim, A, t, time)
    model = (models if models is not None else ColliderModels(time)).mesh(prim)
    scale = Gf.Transform(world).GetScale()
    return model_solid(model, A, t, (scale[0], scale[1], scale[2]), meters_per_unit)


# =========================================================================== measurements


def coverage(surface_points, solids, tolerance: float) -> float:
    """Share of ``surface_points`` inside any solid or within ``tolerance`` metres of one.
    NaN when there are no points (nothing to cover: unmeasured); 0.0 with no solids."""
    pts = as_points(surface_points)
    if len(pts) == 0:
        return float("nan")
    return float(np.count_nonzero(inside_any(pts, solids, tolerance))) / len(pts)


def free_space_fill(reference_empty_points, solids, margin: float = 0.0) -> float:
    """Share of the reference's empty-space samples that ``solids`` fill (inside any,
    boundary within ``margin`` included). NaN when there are no samples."""
    pts = as_points(reference_empty_points)
    if len(pts) == 0:
        return float("nan")
    return float(np.count_nonzero(inside_any(pts, solids, margin))) / len(pts)


def empty_space_samples(body_bounds_min, body_bounds_max, reference_solids, count: int,
                        seed: int, *, clearance: float = 0.0, max_rounds: int = 64) -> np.ndarray:
    """Seeded uniform samples in the world box [min, max] that are not inside (nor within
    ``clearance`` metres of) any reference solid: the reference's empty space inside the
    body's bounds. Returns up to ``count`` points (fewer only when the box is (almost)
    entirely solid: rejection sampling stops after ``max_rounds`` batches)."""
    lo = np.asarray(body_bounds_min, dtype=np.float64).reshape(3)
    hi = np.asarray(body_bounds_max, dtype=np.float64).reshape(3)
    count = int(count)
    if count <= 0 or not (np.isfinite(lo).all() and np.isfinite(hi).all()) or np.any(hi < lo):
        return np.zeros((0, 3))
    return _box_rejection_samples(lo, hi, count, seed, lambda pts: ~inside_any(pts, reference_solids, clearance),
                                  min_batch=1024, max_rounds=max_rounds)


def _box_rejection_samples(lo: np.ndarray, hi: np.ndarray, count: int, seed: int, keep, *, min_batch: int,
                           max_rounds: int) -> np.ndarray:
    """Up to ``count`` seeded uniform samples of the box [lo, hi] for which ``keep(points)`` is
    true, drawn in batches of at least ``min_batch`` until ``count`` are kept or ``max_rounds``
    batches are spent."""
    rng = np.random.Generator(np.random.PCG64(int(seed)))
    batch = max(2 * count, min_batch)
    kept, have = [], 0
    for _ in range(max_rounds):
        pts = lo + rng.random((batch, 3)) * (hi - lo)
        pts = pts[keep(pts)]
        kept.append(pts[: count - have])
        have += len(kept[-1])
        if have >= count:
            break
    return np.concatenate(kept) if kept else np.zeros((0, 3))


def _inside_samples(solid: Solid, count: int, seed: int, max_rounds: int = 64) -> np.ndarray:
    """Up to ``count`` seeded uniform samples inside one bounded solid (rejection in its box)."""
    lo, hi = solid.bounds
    if count <= 0 or not (np.isfinite(lo).all() and np.isfinite(hi).all()) or np.any(hi <= lo):
        return np.zeros((0, 3))
    return _box_rejection_samples(lo, hi, count, seed, lambda pts: solid.contains(pts, 0.0),
                                  min_batch=256, max_rounds=max_rounds)


def volume_samples(solids, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(points (K, 3), weights (K,)): seeded samples inside each bounded solid of positive volume,
    about ``count`` in all, shared by volume (at least 16 a solid), each weighted by its solid's
    volume over its sample count, so a weighted mean is a share of the solids' summed volume.

    A solid's seed comes from its content (kind, volume, bounds), never from its prim's path or
    its place in the list: the same colliders in another order or namespace give the same samples.
    """
    usable = [s for s in solids if s is not None and np.isfinite(s.volume) and s.volume > 0
              and np.isfinite(s.bounds).all()]
    keyed = sorted((f"{s.kind}:{s.volume:.9g}:" + ",".join(f"{b:.9g}" for b in np.asarray(s.bounds).ravel()), i)
                   for i, s in enumerate(usable))
    total = sum(s.volume for s in usable)
    points, weights = [], []
    for key, i in keyed:
        solid = usable[i]
        n = max(16, int(round(count * solid.volume / total)))
        pts = _inside_samples(solid, n, (int(seed) * 7_919 + zlib.crc32(key.encode())) % (2**32))
        if len(pts):
            points.append(pts)
            weights.append(np.full(len(pts), solid.volume / len(pts)))
    if not points:
        return np.zeros((0, 3)), np.zeros(0)
    return np.concatenate(points), np.concatenate(weights)


def outside_share(samples: tuple[np.ndarray, np.ndarray], solids, margin: float) -> float:
    """Weighted share of ``samples`` (``volume_samples``) inside no solid (nor within ``margin``
    metres of one): the part of one set of colliders' volume that another set does not hold.
    NaN without samples."""
    points, weights = samples
    if len(points) == 0:
        return float("nan")
    outside = ~inside_any(points, [s for s in solids if s is not None], margin)
    return float(np.sum(weights[outside]) / np.sum(weights))
