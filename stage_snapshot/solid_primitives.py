"""Solids of primitive colliders, exact in the prim's local frame, and the base ``Solid``.

A ``Solid`` is a closed region of world space (metres) that answers "is this point inside, or
within ``margin`` metres of the surface" (``contains``, boundary-inclusive, plus
``CONTAINS_EPS``). Implicit prims are exact: query points are carried back through the inverse
of the full world matrix, so rotation, non-uniform scale and shear are exact (a Sphere under
non-uniform scale is an ellipsoid, a Cube a parallelepiped). The margin of an implicit prim is
the world length of (point - local closest point): exact under rotation + uniform or
axis-aligned scale, an upper bound (a slightly stricter margin) on ellipsoids and sheared
shapes. ``Plane`` is the half-space below the plane (normal +axis), unbounded, infinite volume.
Mesh, hull, surface and union solids are in solid_meshes.py.
"""

from __future__ import annotations

import math

import numpy as np

from .mesh_math import as_points

CONTAINS_EPS = 1e-9  # metres: boundary tolerance of every inside test

# =========================================================================== base


class Solid:
    """A closed region of world space (metres).

    Attributes: ``kind`` (what it is, e.g. ``"cube"``, ``"mesh"``,
    ``"convex_hull(open_mesh)"``), ``approximation`` (the authored mesh approximation
    token, or ``None`` for implicit prims), ``note`` (free text, '' if nothing to say),
    ``volume`` (cubic metres), ``bounds`` ((2, 3) world [min, max]).
    """

    kind: str = "solid"
    approximation: str | None = None
    note: str = ""
    volume: float = 0.0
    bounds: np.ndarray

    def contains(self, points, margin: float = 0.0) -> np.ndarray:
        """(K,) bool: inside or within ``margin`` metres of the surface."""
        pts = as_points(points)
        out = np.zeros(len(pts), dtype=bool)
        if len(pts) == 0:
            return out
        m = max(float(margin), 0.0) + CONTAINS_EPS
        lo, hi = self.bounds[0] - m, self.bounds[1] + m
        near = np.all((pts >= lo) & (pts <= hi), axis=1)
        if near.any():
            out[near] = self._contains(pts[near], m)
        return out

    def _contains(self, pts: np.ndarray, m: float) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} kind={self.kind!r} volume={self.volume:.6g}>"


# =========================================================================== primitives


class _LocalSolid(Solid):
    """A canonical shape (spine +Z) mapped to world by ``w = q @ A + t``."""

    def __init__(self, A: np.ndarray, t: np.ndarray, kind: str):
        self.A = np.asarray(A, dtype=np.float64)
        self.t = np.asarray(t, dtype=np.float64)
        self.A_inv = np.linalg.inv(self.A)
        self.kind = kind
        self.approximation = None
        self.note = ""
        self.volume = self._local_volume() * abs(float(np.linalg.det(self.A)))
        self.bounds = self._world_bounds()

    # shape interface (canonical local frame)
    def _local_inside(self, q):  # pragma: no cover
        raise NotImplementedError

    def _local_closest(self, q):  # closest boundary point, for points outside
        raise NotImplementedError  # pragma: no cover

    def _local_volume(self) -> float:  # pragma: no cover
        raise NotImplementedError

    # helpers for exact world bounds of spheres and discs in the local frame
    def _sphere_bounds(self, centre, r):
        c = np.asarray(centre, float) @ self.A + self.t
        half = r * np.sqrt((self.A ** 2).sum(axis=0))
        return c - half, c + half

    def _disc_bounds(self, z, r):
        c = np.array([0.0, 0.0, z]) @ self.A + self.t
        half = r * np.sqrt(self.A[0] ** 2 + self.A[1] ** 2)
        return c - half, c + half

    def _world_bounds(self):  # pragma: no cover
        raise NotImplementedError

    def _contains(self, pts, m):
        q = (pts - self.t) @ self.A_inv
        inside = self._local_inside(q)
        out = ~inside
        if out.any():
            c = self._local_closest(q[out])
            d = np.linalg.norm((q[out] - c) @ self.A, axis=1)
            inside[out] = d <= m
        return inside


class _Box(_LocalSolid):
    def __init__(self, A, t, half, kind="cube"):
        self.half = np.asarray(half, dtype=np.float64)
        super().__init__(A, t, kind)

    def _local_inside(self, q):
        return np.all(np.abs(q) <= self.half, axis=1)

    def _local_closest(self, q):
        return np.clip(q, -self.half, self.half)

    def _local_volume(self):
        return float(np.prod(2.0 * self.half))

    def _world_bounds(self):
        corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * self.half
        w = corners @ self.A + self.t
        return np.stack([w.min(axis=0), w.max(axis=0)])


class _Ellipsoid(_LocalSolid):
    """A sphere of ``radius`` in the local frame (an ellipsoid under non-uniform scale)."""

    def __init__(self, A, t, radius, kind="sphere"):
        self.radius = float(radius)
        super().__init__(A, t, kind)

    def _local_inside(self, q):
        return np.einsum("ij,ij->i", q, q) <= self.radius ** 2

    def _local_closest(self, q):
        n = np.linalg.norm(q, axis=1, keepdims=True)
        n = np.where(n > 0, n, 1.0)
        return q * (self.radius / n)

    def _local_volume(self):
        return 4.0 / 3.0 * math.pi * self.radius ** 3

    def _world_bounds(self):
        return np.stack(self._sphere_bounds([0, 0, 0], self.radius))


def _radial(q):
    rho = np.sqrt(q[:, 0] ** 2 + q[:, 1] ** 2)
    safe = np.where(rho > 0, rho, 1.0)
    ux = np.where(rho > 0, q[:, 0] / safe, 1.0)
    uy = np.where(rho > 0, q[:, 1] / safe, 0.0)
    return rho, ux, uy


class _RoundCone(_LocalSolid):
    """Convex hull of two spheres on the Z axis: bottom (z = -h/2, radius rb) and top
    (z = +h/2, radius rt). Capsule when rb == rt. Callers ensure h > |rb - rt|."""

    def __init__(self, A, t, rb, rt, h, kind="capsule"):
        self.rb, self.rt, self.h = float(rb), float(rt), float(h)
        self.b = (self.rb - self.rt) / self.h
        self.a = math.sqrt(max(0.0, 1.0 - self.b * self.b))
        super().__init__(A, t, kind)

    def _sdf_parts(self, q):
        rho, ux, uy = _radial(q)
        zz = q[:, 2] + self.h / 2  # relative to the bottom centre
        k = -self.b * rho + self.a * zz
        return rho, ux, uy, zz, k

    def _local_inside(self, q):
        rho, _, _, zz, k = self._sdf_parts(q)
        d_bot = np.hypot(rho, zz) - self.rb
        d_top = np.hypot(rho, zz - self.h) - self.rt
        d_side = self.a * rho + self.b * zz - self.rb
        sdf = np.where(k < 0, d_bot, np.where(k > self.a * self.h, d_top, d_side))
        return sdf <= 0

    def _local_closest(self, q):
        rho, ux, uy, zz, k = self._sdf_parts(q)
        cz = np.where(k < 0, 0.0, np.where(k > self.a * self.h, self.h, np.nan))
        cr = np.where(k < 0, self.rb, self.rt)
        # cap regions: push out from the sphere centre
        dr, dz = rho, zz - np.nan_to_num(cz)
        n = np.hypot(dr, dz)
        n = np.where(n > 0, n, 1.0)
        cap_rho = dr / n * cr
        cap_z = np.nan_to_num(cz) + dz / n * cr
        # side region: project onto the tangent line along its normal (a, b)
        d_side = self.a * rho + self.b * zz - self.rb
        side_rho = rho - d_side * self.a
        side_z = zz - d_side * self.b
        side = np.isnan(cz)
        out_rho = np.where(side, side_rho, cap_rho)
        out_z = np.where(side, side_z, cap_z) - self.h / 2
        return np.stack([out_rho * ux, out_rho * uy, out_z], axis=1)

    def _local_volume(self):
        rb, rt, h, a, b = self.rb, self.rt, self.h, self.a, self.b
        kb, kt = rb * (1 + b), rt * (1 - b)  # cap heights
        caps = math.pi * kb * kb * (3 * rb - kb) / 3 + math.pi * kt * kt * (3 * rt - kt) / 3
        r1, r2, hh = rb * a, rt * a, h * a * a
        return caps + math.pi * hh / 3 * (r1 * r1 + r1 * r2 + r2 * r2)

    def _world_bounds(self):
        lo1, hi1 = self._sphere_bounds([0, 0, -self.h / 2], self.rb)
        lo2, hi2 = self._sphere_bounds([0, 0, self.h / 2], self.rt)
        return np.stack([np.minimum(lo1, lo2), np.maximum(hi1, hi2)])


def _closest_on_segments_2d(px, pz, segs):
    """Closest point on any of the 2D segments [(x0, z0, x1, z1), ...] to each (px, pz)."""
    best_d = np.full(px.shape, np.inf)
    bx, bz = np.zeros_like(px), np.zeros_like(pz)
    for x0, z0, x1, z1 in segs:
        ex, ez = x1 - x0, z1 - z0
        ll = ex * ex + ez * ez
        s = np.zeros_like(px) if ll == 0 else np.clip(((px - x0) * ex + (pz - z0) * ez) / ll, 0.0, 1.0)
        cx, cz = x0 + s * ex, z0 + s * ez
        d = (px - cx) ** 2 + (pz - cz) ** 2
        better = d < best_d
        best_d = np.where(better, d, best_d)
        bx, bz = np.where(better, cx, bx), np.where(better, cz, bz)
    return bx, bz


class _Frustum(_LocalSolid):
    """Solid of revolution of the trapezoid (0,-h/2) (rb,-h/2) (rt,h/2) (0,h/2):
    cylinder (rb == rt), cone (rt == 0), Cylinder_1."""

    def __init__(self, A, t, rb, rt, h, kind="cylinder"):
        self.rb, self.rt, self.h = float(rb), float(rt), float(h)
        super().__init__(A, t, kind)

    def _local_inside(self, q):
        rho = np.sqrt(q[:, 0] ** 2 + q[:, 1] ** 2)
        z = q[:, 2]
        s = (z + self.h / 2) / self.h
        return (np.abs(z) <= self.h / 2) & (rho <= self.rb + (self.rt - self.rb) * s)

    def _local_closest(self, q):
        rho, ux, uy = _radial(q)
        h2 = self.h / 2
        segs = [(0.0, -h2, self.rb, -h2), (self.rb, -h2, self.rt, h2), (self.rt, h2, 0.0, h2)]
        cr, cz = _closest_on_segments_2d(rho, q[:, 2], segs)
        return np.stack([cr * ux, cr * uy, cz], axis=1)

    def _local_volume(self):
        rb, rt = self.rb, self.rt
        return math.pi * self.h / 3 * (rb * rb + rb * rt + rt * rt)

    def _world_bounds(self):
        lo1, hi1 = self._disc_bounds(-self.h / 2, self.rb)
        lo2, hi2 = self._disc_bounds(self.h / 2, self.rt)
        return np.stack([np.minimum(lo1, lo2), np.maximum(hi1, hi2)])


class _HalfSpace(_LocalSolid):
    """Local z <= 0 (a UsdGeom.Plane collider: infinite, normal +axis)."""

    def __init__(self, A, t, kind="plane_halfspace"):
        super().__init__(A, t, kind)
        self.volume = float("inf")

    def _local_inside(self, q):
        return q[:, 2] <= 0

    def _local_closest(self, q):
        c = q.copy()
        c[:, 2] = 0.0
        return c

    def _local_volume(self):
        return 0.0  # replaced by inf

    def plane(self) -> tuple[np.ndarray, float]:
        """The boundary in world space as (unit outward normal n, offset d): n . w = d. Its bounds
        are infinite, so they place it nowhere; this does, whatever in-plane move or spin it has."""
        g = self.A_inv[:, 2]  # inside: w . g <= t . g
        n = g / np.linalg.norm(g)
        return n, float(self.t @ n)

    def _world_bounds(self):
        g = self.A_inv[:, 2]  # inside: w . g <= t . g
        lo, hi = np.full(3, -np.inf), np.full(3, np.inf)
        nz = np.flatnonzero(np.abs(g) > 1e-12 * np.abs(g).max())
        if len(nz) == 1:
            j = nz[0]
            limit = float(self.t @ g) / g[j]
            if g[j] > 0:
                hi[j] = limit
            else:
                lo[j] = limit
        return np.stack([lo, hi])
