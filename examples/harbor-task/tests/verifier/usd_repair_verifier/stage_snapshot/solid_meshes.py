"""Solids of mesh colliders (world metres): closed meshes, convex hulls, flat surfaces, unions.

* A closed mesh answers by ray parity along +Z with an xy grid and simulation-of-simplicity
  tie-breaking (the ray is nudged by an infinitesimal (e, e^2) in xy, decided exactly from
  canonically ordered edge functions), so a ray through a shared edge or vertex is counted
  once, consistently. Its volume is the divergence-theorem volume.
* A convex hull answers with its plane equations up to ``_HULL_PLANE_LIMIT`` facets and as a
  closed mesh beyond (ray parity scales better). PhysX caps hull vertices (64 by default), so
  its hull can be slightly smaller.
* A flat point set is a zero-volume surface: points within the margin count.
* A union sums its parts' volumes (overlaps are not removed).

The margin test is an exact Euclidean distance to the triangles (mesh_math.TriangleProximity).
"""

from __future__ import annotations

import math

import numpy as np

from .mesh_math import Hull, TriangleProximity, as_points
from .solid_primitives import CONTAINS_EPS, Solid

_PAIR_CHUNK = 1_000_000  # ray-triangle pairs evaluated per numpy batch
_HULL_PLANE_LIMIT = 512  # facets; larger hulls use the mesh (ray parity) test


class _MeshSolid(Solid):
    """A closed triangle mesh (world metres): ray-parity inside test + exact margin."""

    def __init__(self, vertices, faces, kind="mesh", approximation=None, note="", volume=None):
        self.vertices = np.ascontiguousarray(vertices, dtype=np.float64)
        self.faces = np.ascontiguousarray(faces, dtype=np.int64)
        self.kind, self.approximation, self.note = kind, approximation, note
        self.bounds = np.stack([self.vertices.min(axis=0), self.vertices.max(axis=0)])
        tris = self.vertices[self.faces]
        self._prox = TriangleProximity(tris)
        self._build_grid(tris)
        if volume is None:
            volume = abs(float(np.einsum("ij,ij->i", tris[:, 0], np.cross(tris[:, 1], tris[:, 2])).sum() / 6.0))
        self.volume = float(volume)

    # ---- ray parity along +Z
    def _build_grid(self, tris):
        xy = tris[:, :, :2]
        area2 = ((xy[:, 1, 0] - xy[:, 0, 0]) * (xy[:, 2, 1] - xy[:, 0, 1])
                 - (xy[:, 1, 1] - xy[:, 0, 1]) * (xy[:, 2, 0] - xy[:, 0, 0]))
        keep = np.flatnonzero(area2 != 0)  # vertical triangles never meet a perturbed ray
        self._tri = tris[keep]
        self._sign = np.sign(area2[keep])
        m = len(keep)
        self._g = g = int(min(256, max(32, math.ceil(math.sqrt(max(m, 1))))))
        if m:
            self._tri_lo = self._tri.min(axis=1)  # (m, 3) per-triangle boxes for culling
            self._tri_hi = self._tri.max(axis=1)
        self._x0 = self.bounds[0, :2]
        ext = self.bounds[1, :2] - self._x0
        self._cell = np.where(ext > 0, ext / g, 1.0)
        if m == 0:
            self._cell_start = np.zeros(g * g + 1, dtype=np.int64)
            self._cell_tris = np.zeros(0, dtype=np.int64)
            return
        lo = self._cells(self._tri[:, :, :2].min(axis=1))
        hi = self._cells(self._tri[:, :, :2].max(axis=1))
        w = hi[:, 0] - lo[:, 0] + 1
        n = w * (hi[:, 1] - lo[:, 1] + 1)
        rep = np.repeat(np.arange(m), n)
        k = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        cx = lo[rep, 0] + k % w[rep]
        cy = lo[rep, 1] + k // w[rep]
        cell = cy * g + cx
        order = np.argsort(cell, kind="stable")
        self._cell_tris = rep[order]
        self._cell_start = np.searchsorted(cell[order], np.arange(g * g + 1))

    def _cells(self, xy):
        c = np.floor((xy - self._x0) / self._cell).astype(np.int64)
        return np.clip(c, 0, self._g - 1)

    def _inside(self, pts):
        """Ray parity (+Z) with symbolic perturbation of the ray's xy by (eps, eps^2)."""
        inside = np.zeros(len(pts), dtype=bool)
        if len(self._tri) == 0 or len(pts) == 0:
            return inside
        bl, bh = self.bounds
        cand = np.flatnonzero(np.all((pts >= bl) & (pts <= bh), axis=1))
        if len(cand) == 0:
            return inside
        c = self._cells(pts[cand, :2])
        cell = c[:, 1] * self._g + c[:, 0]
        start = self._cell_start[cell]
        cnt = self._cell_start[cell + 1] - start
        crossings = np.zeros(len(cand), dtype=np.int64)
        # chunk the points so that each batch holds at most _PAIR_CHUNK pairs
        csum = np.cumsum(cnt)
        s0 = 0
        while s0 < len(cand):
            base = csum[s0 - 1] if s0 else 0
            s1 = int(np.searchsorted(csum, base + _PAIR_CHUNK, side="right"))
            s1 = max(s1, s0 + 1)
            sl = slice(s0, s1)
            n = cnt[sl]
            total = int(n.sum())
            if total:
                local = np.repeat(np.arange(s0, s1), n)
                k = np.arange(total) - np.repeat(np.cumsum(n) - n, n)
                ti = self._cell_tris[start[local] + k]
                hit = self._ray_hits(pts[cand[local]], ti)
                crossings += np.bincount(local[hit], minlength=len(cand))
            s0 = s1
        inside[cand] = (crossings % 2) == 1
        return inside

    def _ray_hits(self, p, ti):
        # cull on the triangle's xy box (closed: a superset of the exact test) and on
        # its top (the ray goes up)
        lo, hi = self._tri_lo[ti], self._tri_hi[ti]
        keep = ((p[:, 0] >= lo[:, 0]) & (p[:, 0] <= hi[:, 0]) & (p[:, 1] >= lo[:, 1])
                & (p[:, 1] <= hi[:, 1]) & (p[:, 2] < hi[:, 2]))
        out = np.zeros(len(p), dtype=bool)
        sel = np.flatnonzero(keep)
        if len(sel):
            out[sel] = self._ray_hits_exact(p[sel], ti[sel])
        return out

    def _ray_hits_exact(self, p, ti):
        tri = self._tri[ti]
        s = self._sign[ti]
        px, py = p[:, 0], p[:, 1]
        ok = np.ones(len(p), dtype=bool)
        e_vals = []
        for i0, i1 in ((1, 2), (2, 0), (0, 1)):  # edge opposite vertex 0, 1, 2
            u, v = tri[:, i0, :2], tri[:, i1, :2]
            swap = (u[:, 0] > v[:, 0]) | ((u[:, 0] == v[:, 0]) & (u[:, 1] > v[:, 1]))
            lo = np.where(swap[:, None], v, u)
            hi = np.where(swap[:, None], u, v)
            e = (hi[:, 0] - lo[:, 0]) * (py - lo[:, 1]) - (hi[:, 1] - lo[:, 1]) * (px - lo[:, 0])
            e = np.where(swap, -e, e)
            dx, dy = v[:, 0] - u[:, 0], v[:, 1] - u[:, 1]
            tie = np.where(dy != 0, -np.sign(dy), np.sign(dx))
            ok &= (s * e > 0) | ((e == 0) & (s * tie > 0))
            e_vals.append(e)
        e0, e1, e2 = e_vals
        tot = e0 + e1 + e2
        tot = np.where(tot != 0, tot, 1.0)
        z = (e0 * tri[:, 0, 2] + e1 * tri[:, 1, 2] + e2 * tri[:, 2, 2]) / tot
        return ok & (z > p[:, 2])

    def _contains(self, pts, m):
        inside = self._inside(pts)
        rest = np.flatnonzero(~inside)
        if len(rest):
            inside[rest] = self._prox.within(pts[rest], m)
        return inside


class _HullSolid(Solid):
    """A convex polytope: a ``mesh_math.Hull`` carried to world metres by ``w = q @ A + t``
    (an affine map keeps a hull a hull: same facets, planes mapped exactly). Up to
    ``_HULL_PLANE_LIMIT`` facets the inside test uses the plane equations; larger hulls are
    tested as closed triangle meshes (ray parity), which scales better."""

    def __init__(self, hull: Hull, A, t, kind="convex_hull", approximation=None, note=""):
        self.kind, self.approximation, self.note = kind, approximation, note
        A, t = np.asarray(A, dtype=np.float64), np.asarray(t, dtype=np.float64)
        used, inverse = np.unique(hull.simplices, return_inverse=True)
        self._points = hull.points[used] @ A + t
        self._faces = inverse.reshape(-1, 3)
        self.bounds = np.stack([self._points.min(axis=0), self._points.max(axis=0)])
        self.volume = float(hull.volume) * abs(float(np.linalg.det(A)))
        self.n_facets = len(hull.simplices)
        # The inside-test structures are built on first use: a snapshot reads every
        # collider, but only some of them are ever asked about points.
        self._local = (hull.equations, A, t)
        self._prox = self._mesh = self.equations = None

    def _prepare(self):
        if self.n_facets <= _HULL_PLANE_LIMIT:
            local, A, t = self._local
            normals = local[:, :3] @ np.linalg.inv(A).T  # plane n.q + d <= 0 in world terms
            offsets = local[:, 3] - normals @ t
            length = np.linalg.norm(normals, axis=1)
            self.equations = np.ascontiguousarray(np.c_[normals, offsets] / length[:, None])
            self._prox = TriangleProximity(self._points[self._faces])
        else:
            self._mesh = _MeshSolid(self._points, self._faces, self.kind, self.approximation, self.note,
                                    volume=self.volume)
        self._local = None

    def _contains(self, pts, m):
        if self._local is not None:
            self._prepare()
        if self._mesh is not None:
            return self._mesh._contains(pts, m)
        d = pts @ self.equations[:, :3].T + self.equations[:, 3]
        worst = d.max(axis=1)
        inside = worst <= CONTAINS_EPS
        maybe = np.flatnonzero(~inside & (worst <= m))
        if len(maybe):
            inside[maybe] = self._prox.within(pts[maybe], m)
        return inside


class _SurfaceSolid(Solid):
    """Zero-volume set of triangles: a point counts when within the margin."""

    def __init__(self, tris, kind="surface", approximation=None, note=""):
        self.kind, self.approximation, self.note = kind, approximation, note
        tris = np.asarray(tris, dtype=np.float64).reshape(-1, 3, 3)
        flat = tris.reshape(-1, 3)
        self.bounds = np.stack([flat.min(axis=0), flat.max(axis=0)])
        self.volume = 0.0
        self._prox = TriangleProximity(tris)

    def _contains(self, pts, m):
        return self._prox.within(pts, m)


class _UnionSolid(Solid):
    def __init__(self, parts, kind="union", approximation=None, note=""):
        self.parts = list(parts)
        self.kind, self.approximation, self.note = kind, approximation, note
        self.volume = float(sum(p.volume for p in self.parts))
        self.bounds = np.stack([np.min([p.bounds[0] for p in self.parts], axis=0),
                                np.max([p.bounds[1] for p in self.parts], axis=0)])

    def contains(self, points, margin: float = 0.0) -> np.ndarray:
        return inside_any(points, self.parts, margin)


def inside_any(points, solids, margin: float = 0.0) -> np.ndarray:
    """(K,) bool: inside (or within ``margin`` of) any of ``solids`` (``None`` skipped).
    Each solid only sees the points not yet claimed and within its bounds."""
    pts = as_points(points)
    hit = np.zeros(len(pts), dtype=bool)
    for s in solids:
        if s is None:
            continue
        rest = np.flatnonzero(~hit)
        if len(rest) == 0:
            break
        hit[rest] = s.contains(pts[rest], margin)
    return hit
