"""Colliders as a simulator sees them: world-space solids that answer "is this point inside".

Building blocks for the "collision" check family (README, "What is measured"): coverage (share of a
body's visible surface within its colliders) and free space (share of the reference's
empty space inside the body's bounds that candidate colliders fill). Metres, world
space, deterministic (seeded ``PCG64``; no set/dict order; single-threaded queries).

Solids
------
``collider_solid(prim, world, meters_per_unit)`` builds one :class:`Solid`:

* Implicit prims are exact. The inside test runs in the prim's local frame: query points
  are carried back through the inverse of the full world matrix (metres), so rotation,
  non-uniform scale and shear are exact (a Sphere under non-uniform scale is an
  ellipsoid, a Cube a parallelepiped). ``Cube`` (size), ``Sphere`` (radius),
  ``Capsule`` (radius, height = distance between the cap centres, axis),
  ``Capsule_1`` (radiusBottom at -axis, radiusTop at +axis: the convex hull of the two
  cap spheres, as Hydra tessellates it), ``Cylinder``, ``Cylinder_1`` (frustum), ``Cone``
  (apex at +height/2). ``Plane`` is an infinite half-space below the plane (normal
  +axis), as PhysX and MuJoCo treat planes: unbounded bounds, infinite volume.
* Meshes follow ``physics:approximation`` (``UsdPhysics.MeshCollisionAPI``; unauthored
  means ``none``):

  ==================== ==========================================================
  none, meshSimplif.,  the mesh itself if it is closed (every edge used an even
  sdf                  number of times, after merging coincident vertices); an open
                       mesh falls back to its convex hull (kind says so)
  convexHull           exact convex hull of the points (scipy ConvexHull; plane test
                       up to 512 facets, ray parity beyond). PhysX caps hull vertices
                       (64 by default), so its hull can be slightly smaller
  convexDecomposition  the mesh itself if closed (we cannot run V-HACD; the
                       simulator's decomposition fits the mesh closely), else the
                       union of the convex hulls of its connected components
  boundingCube         the axis-aligned box of the points in the prim's local frame
  boundingSphere       a sphere in the local frame: centre = local box centre,
                       radius = farthest point (not the minimal sphere)
  unknown token        like ``none``; ``note`` says so
  ==================== ==========================================================

  Triangle-mesh colliders on dynamic bodies are replaced by convex hulls in PhysX;
  this module takes the authored approximation at its word (``none`` = the mesh) and leaves that policy to
  the caller. ``collisionEnabled`` and which prims are colliders are the caller's call.

* Flat point sets (coplanar hull) become a zero-volume ``surface`` solid (points within
  the margin of the flat hull count); collinear or singular ones give ``None``.

``Solid.contains(points, margin=0.0)`` is boundary-inclusive: a point counts when it is
inside, or within ``margin`` metres (plus ``CONTAINS_EPS``) of the surface. For meshes and
hulls the margin is an exact Euclidean distance to the triangles; for implicit prims it
is the world length of (point - local closest point), exact under rotation + uniform or
axis-aligned scale, and an upper bound (so a slightly stricter margin) on ellipsoids and
sheared shapes. Inside test for closed meshes: ray parity along +Z with an xy grid and
simulation-of-simplicity tie-breaking (the ray is nudged by an infinitesimal (e, e^2) in
xy, decided exactly from canonically ordered edge functions), so a ray through a shared
edge or vertex is counted once, consistently. The margin test cuts large triangles by
longest-edge bisection (same surface) and searches a cKDTree of piece centroids.

``Solid.volume`` is exact for primitives and hulls; for closed meshes it is the
divergence-theorem volume when consistently oriented, else a seeded Monte-Carlo
estimate; a union sums its parts (overlaps are not removed). ``Solid.bounds`` is a (2, 3)
enclosing world box (exact for primitives, +-inf where a half-space is unbounded).
"""

from __future__ import annotations

import math

import numpy as np

from pxr import Usd, UsdGeom, UsdPhysics

from . import typed_read

from .geometry import (
    TriangleSoup,
    _affine,
    _get,
    _kd_tree,
    _finite_nonneg,
    axis_permutation,
    read_mesh,
)

__all__ = [
    "CONTAINS_EPS",
    "Solid",
    "collider_solid",
    "mesh_solid",
    "hull_solid",
    "union_solid",
    "mesh_approximation",
    "inside_any",
    "coverage",
    "free_space_fill",
    "empty_space_samples",
]

CONTAINS_EPS = 1e-9  # metres: boundary tolerance of every inside test
_PAIR_CHUNK = 1_000_000  # point-triangle pairs evaluated per numpy batch
_BRUTE_TRIANGLES = 32  # margin test: meshes this small are tested against every point
_NEAREST_FIRST = 4  # margin test: triangles with the nearest centroids are tried first
_MC_VOLUME_SAMPLES = 50_000
_HULL_PLANE_LIMIT = 512  # facets; larger hulls use the mesh (ray parity) test


def _points(p) -> np.ndarray:
    a = np.asarray(p, dtype=np.float64)
    if a.size == 0:
        return np.zeros((0, 3))
    return a.reshape(-1, 3)


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
        pts = _points(points)
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


# =========================================================================== triangle helpers


def _point_triangle_distance(p, a, b, c):
    """Exact Euclidean distance from p[i] to triangle (a[i], b[i], c[i]); robust to
    degenerate triangles (falls back to the edges)."""
    def seg(p, u, v):
        e = v - u
        ll = np.einsum("ij,ij->i", e, e)
        s = np.einsum("ij,ij->i", p - u, e) / np.where(ll > 0, ll, 1.0)
        s = np.clip(np.where(ll > 0, s, 0.0), 0.0, 1.0)
        d = p - (u + s[:, None] * e)
        return np.einsum("ij,ij->i", d, d)

    d2 = np.minimum(np.minimum(seg(p, a, b), seg(p, b, c)), seg(p, c, a))
    n = np.cross(b - a, c - a)
    nn = np.einsum("ij,ij->i", n, n)
    ok = nn > 0
    if ok.any():
        p_, a_, b_, c_, n_ = p[ok], a[ok], b[ok], c[ok], n[ok]
        s = np.einsum("ij,ij->i", p_ - a_, n_) / nn[ok]
        proj = p_ - s[:, None] * n_
        inside = (
            (np.einsum("ij,ij->i", np.cross(b_ - a_, proj - a_), n_) >= 0)
            & (np.einsum("ij,ij->i", np.cross(c_ - b_, proj - b_), n_) >= 0)
            & (np.einsum("ij,ij->i", np.cross(a_ - c_, proj - c_), n_) >= 0)
        )
        face = s * s * nn[ok]
        sub = d2[ok]
        sub = np.where(inside, np.minimum(sub, face), sub)
        d2[ok] = sub
    return np.sqrt(d2)


def _triangle_radius(tris: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cen = tris.mean(axis=1)
    return cen, np.sqrt(((tris - cen[:, None, :]) ** 2).sum(axis=2)).max(axis=1)


def _subdivide(tris: np.ndarray, target: float, max_pieces: int) -> np.ndarray:
    """Longest-edge bisection until every piece's radius (about its centroid) is at most
    ``target``. The pieces cover exactly the same points, so distances are unchanged."""
    done = []
    work = tris
    for _ in range(64):
        _, rad = _triangle_radius(work)
        big = rad > target
        done.append(work[~big])
        work = work[big]
        if len(work) == 0 or sum(len(d) for d in done) + 2 * len(work) > max_pieces:
            break
        e = np.stack([work[:, 1] - work[:, 0], work[:, 2] - work[:, 1], work[:, 0] - work[:, 2]], axis=1)
        k = np.argmax(np.einsum("nij,nij->ni", e, e), axis=1)  # longest edge: k -> k+1
        n = np.arange(len(work))
        a, b, c = work[n, k], work[n, (k + 1) % 3], work[n, (k + 2) % 3]
        mid = 0.5 * (a + b)
        work = np.concatenate([np.stack([a, mid, c], axis=1), np.stack([mid, b, c], axis=1)])
    done.append(work)
    return np.concatenate(done)


class _TriangleProximity:
    """Answers "is any triangle within distance m of this point" exactly.

    Meshes of up to ``_BRUTE_TRIANGLES`` triangles are tested against every point.
    Larger ones are cut (longest-edge bisection, same surface) into pieces no bigger
    than about twice the median triangle and 1/32 of the mesh's diagonal, whose
    centroids go into a cKDTree: a point is compared with the pieces whose centroids lie
    within m + the largest piece radius (the few nearest first).
    """

    def __init__(self, tris: np.ndarray):
        tris = np.ascontiguousarray(tris, dtype=np.float64).reshape(-1, 3, 3)
        self.tree = None
        self.r_small = 0.0
        if len(tris) > _BRUTE_TRIANGLES:
            _, rad = _triangle_radius(tris)
            flat = tris.reshape(-1, 3)
            diag = float(np.linalg.norm(flat.max(axis=0) - flat.min(axis=0)))
            target = max(min(2.0 * float(np.median(rad)), diag / 32.0), 1e-12)
            tris = _subdivide(tris, target, max_pieces=max(8 * len(tris), 200_000))
            cen, rad = _triangle_radius(tris)
            self.r_small = float(rad.max())
            self.tree = _kd_tree(cen)
        self.tris = tris

    def _pairs_within(self, pts, pi, ti, m, hit):
        for s in range(0, len(pi), _PAIR_CHUNK):
            a, b = pi[s:s + _PAIR_CHUNK], ti[s:s + _PAIR_CHUNK]
            live = ~hit[a]
            a, b = a[live], b[live]
            if len(a) == 0:
                continue
            t = self.tris[b]
            d = _point_triangle_distance(pts[a], t[:, 0], t[:, 1], t[:, 2])
            hit[a[d <= m]] = True

    def within(self, pts: np.ndarray, m: float) -> np.ndarray:
        hit = np.zeros(len(pts), dtype=bool)
        if len(pts) == 0 or len(self.tris) == 0:
            return hit
        if self.tree is None:  # few triangles: every pair
            nt = len(self.tris)
            step = max(1, _PAIR_CHUNK // nt)
            for s in range(0, len(pts), step):
                idx = np.arange(s, min(len(pts), s + step))
                self._pairs_within(pts, np.repeat(idx, nt), np.tile(np.arange(nt), len(idx)), m, hit)
            return hit
        # cheap first pass: the few pieces with the nearest centroids
        k = min(_NEAREST_FIRST, len(self.tris))
        _, j = self.tree.query(pts, k=k, workers=1)
        j = np.asarray(j).reshape(len(pts), k)
        self._pairs_within(pts, np.repeat(np.arange(len(pts)), k), j.reshape(-1), m, hit)
        rest = np.flatnonzero(~hit)
        if len(rest):
            qt = _kd_tree(pts[rest])
            sdm = qt.sparse_distance_matrix(self.tree, m + self.r_small, output_type="ndarray")
            if len(sdm):
                order = np.lexsort((sdm["j"], sdm["i"]))
                pi = rest[sdm["i"][order].astype(np.int64)]
                ti = sdm["j"][order].astype(np.int64)
                self._pairs_within(pts, pi, ti, m, hit)
        return hit


# =========================================================================== meshes


def _merge_vertices(vertices: np.ndarray, faces: np.ndarray):
    uniq, inv = np.unique(vertices, axis=0, return_inverse=True)
    return uniq, inv.reshape(-1)[faces]


def _edge_keys(faces: np.ndarray, n: int):
    u = faces.reshape(-1)
    v = faces[:, [1, 2, 0]].reshape(-1)
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    return lo.astype(np.int64) * n + hi, np.where(u < v, 1, -1)


def _closed_and_oriented(faces: np.ndarray, n: int) -> tuple[bool, bool]:
    """(every undirected edge used an even number of times, every edge used equally often
    in both directions). Degenerate faces (repeated vertex) are ignored."""
    good = (faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])
    f = faces[good]
    if len(f) == 0:
        return False, False
    keys, sign = _edge_keys(f, n)
    uk, inv, counts = np.unique(keys, return_inverse=True, return_counts=True)
    closed = bool(np.all(counts % 2 == 0))
    balance = np.bincount(inv.reshape(-1), weights=sign, minlength=len(uk))
    return closed, closed and bool(np.all(balance == 0))


class _MeshSolid(Solid):
    """A closed triangle mesh (world metres): ray-parity inside test + exact margin."""

    def __init__(self, vertices, faces, kind="mesh", approximation=None, note="", oriented=None,
                 volume=None):
        self.vertices = np.ascontiguousarray(vertices, dtype=np.float64)
        self.faces = np.ascontiguousarray(faces, dtype=np.int64)
        self.kind, self.approximation, self.note = kind, approximation, note
        self.bounds = np.stack([self.vertices.min(axis=0), self.vertices.max(axis=0)])
        tris = self.vertices[self.faces]
        self._prox = _TriangleProximity(tris)
        self._build_grid(tris)
        if volume is not None:
            self.volume = float(volume)
            return
        if oriented is None:
            _, oriented = _closed_and_oriented(self.faces, len(self.vertices))
        if oriented:
            vol = np.einsum("ij,ij->i", tris[:, 0], np.cross(tris[:, 1], tris[:, 2])).sum() / 6.0
            self.volume = abs(float(vol))
        else:
            self.volume = self._monte_carlo_volume()

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

    def _monte_carlo_volume(self) -> float:
        lo, hi = self.bounds
        box = float(np.prod(hi - lo))
        if box <= 0:
            return 0.0
        rng = np.random.Generator(np.random.PCG64(0))
        pts = lo + rng.random((_MC_VOLUME_SAMPLES, 3)) * (hi - lo)
        return box * float(np.count_nonzero(self._inside(pts))) / _MC_VOLUME_SAMPLES


class _HullSolid(Solid):
    """A convex polytope from scipy's ConvexHull (world metres). Up to
    ``_HULL_PLANE_LIMIT`` facets the inside test uses the hull's plane equations; larger
    hulls are tested as closed triangle meshes (ray parity), which scales better."""

    def __init__(self, hull: ConvexHull, kind="convex_hull", approximation=None, note=""):
        self.kind, self.approximation, self.note = kind, approximation, note
        pts = hull.points[hull.vertices]
        self.bounds = np.stack([pts.min(axis=0), pts.max(axis=0)])
        self.volume = float(hull.volume)
        self.n_facets = len(hull.simplices)
        # The inside-test structures are built on first use: a snapshot reads every
        # collider, but only some of them are ever asked about points.
        self._hull = hull
        self._prox = self._mesh = self.equations = None

    def _prepare(self):
        hull = self._hull
        if self.n_facets <= _HULL_PLANE_LIMIT:
            self.equations = np.ascontiguousarray(hull.equations, dtype=np.float64)
            self._prox = _TriangleProximity(hull.points[hull.simplices])
        else:
            used, inv = np.unique(hull.simplices, return_inverse=True)
            self._mesh = _MeshSolid(hull.points[used], inv.reshape(-1, 3), self.kind, self.approximation,
                                    self.note, volume=self.volume)
        self._hull = None

    def _contains(self, pts, m):
        if self._hull is not None:
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
        self._prox = _TriangleProximity(tris)

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


# =========================================================================== constructors


def hull_solid(points, kind="convex_hull", approximation=None, note="") -> Solid | None:
    """Convex hull of world points (metres). Coplanar points give a zero-volume
    ``surface`` solid (the flat hull polygon); fewer than 3 independent points ``None``."""
    from scipy.spatial import ConvexHull, QhullError  # on first use: see geometry._kd_tree

    pts = np.unique(_points(points), axis=0)
    if len(pts) < 3 or not np.isfinite(pts).all():
        return None
    try:
        if len(pts) >= 4:
            return _HullSolid(ConvexHull(pts), kind, approximation, note)
    except QhullError:
        pass
    # flat (or 3 points): hull polygon in the best-fit plane
    c = pts.mean(axis=0)
    _, sv, vt = np.linalg.svd(pts - c, full_matrices=False)
    if sv[1] <= 1e-12 * max(sv[0], 1e-300):
        return None
    uv = (pts - c) @ vt[:2].T
    try:
        h2 = ConvexHull(uv)
    except QhullError:
        return None
    ring = pts[h2.vertices]
    tris = np.stack([np.repeat(ring[:1], len(ring) - 2, axis=0), ring[1:-1], ring[2:]], axis=1)
    return _SurfaceSolid(tris, kind="surface(" + kind + ")", approximation=approximation,
                         note=(note + "; " if note else "") + "flat point set: zero volume")


def mesh_solid(soup: TriangleSoup, approximation: str = "none") -> Solid | None:
    """The solid a simulator would use for a world-space mesh (see module docstring)."""
    if soup is None or len(soup.faces) == 0:
        return None
    if approximation == "convexHull":
        return hull_solid(soup.vertices, "convex_hull", approximation)
    verts, faces = _merge_vertices(soup.vertices, soup.faces)
    closed, oriented = _closed_and_oriented(faces, len(verts))
    known = {"none", "meshSimplification", "sdf", "convexDecomposition"}
    note = "" if approximation in known else f"unknown approximation {approximation!r}: used as 'none'"
    if closed:
        kind = "mesh" if approximation != "convexDecomposition" else "mesh(convexDecomposition)"
        return _MeshSolid(verts, faces, kind, approximation, note, oriented)
    if approximation == "convexDecomposition":
        n = len(verts)
        u = faces.reshape(-1)
        v = faces[:, [1, 2, 0]].reshape(-1)
        from scipy.sparse import coo_matrix  # only open decomposed meshes need the graph code
        from scipy.sparse.csgraph import connected_components

        graph = coo_matrix((np.ones(len(u)), (u, v)), shape=(n, n))
        ncomp, labels = connected_components(graph, directed=False)
        parts = []
        for k in range(ncomp):
            sol = hull_solid(verts[labels == k], "convex_hull", approximation)
            if sol is not None:
                parts.append(sol)
        if not parts:
            return None
        if len(parts) == 1:
            parts[0].kind = "component_hulls"
            parts[0].note = "open mesh: convex hull of its single component"
            return parts[0]
        return _UnionSolid(parts, "component_hulls", approximation,
                           f"open mesh: convex hulls of {len(parts)} connected components")
    return hull_solid(soup.vertices, "convex_hull(open_mesh)", approximation,
                      (note + "; " if note else "") + "mesh not closed: convex hull used")


def union_solid(solids, kind="union") -> Solid | None:
    """One solid from several (``None`` skipped)."""
    parts = [s for s in solids if s is not None]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else _UnionSolid(parts, kind)


def mesh_approximation(prim: Usd.Prim, time=Usd.TimeCode.Default()) -> str:
    """The effective ``physics:approximation`` token of a mesh ('none' when unauthored)."""
    value = typed_read.value(prim.GetAttribute("physics:approximation"), "token", time=time)
    return value or "none"


def collider_solid(prim: Usd.Prim, world, meters_per_unit: float,
                   time=Usd.TimeCode.Default()) -> Solid | None:
    """The world-space (metres) solid of a collider prim, or ``None`` for non-geometry,
    malformed data (bad indices, no points, non-positive sizes) or a singular matrix."""
    if not prim or not prim.IsA(UsdGeom.Gprim):
        return None
    try:
        A, t = _affine(world, meters_per_unit)
    except ValueError:
        return None
    if not (np.isfinite(A).all() and np.isfinite(t).all()):
        return None
    if not np.isfinite(np.linalg.cond(A)) or np.linalg.cond(A) > 1e12:
        return None

    if prim.IsA(UsdGeom.Mesh):
        from .geometry import prim_triangles

        approx = mesh_approximation(prim, time)
        if approx in ("boundingCube", "boundingSphere"):
            local = read_mesh(prim, time)
            if local is None:
                return None
            pts = local[0]
            lo, hi = pts.min(axis=0), pts.max(axis=0)
            centre = 0.5 * (lo + hi)
            tc = centre @ A + t
            if approx == "boundingCube":
                half = 0.5 * (hi - lo)  # a flat mesh gives a zero-thickness box
                if np.all(half <= 0):
                    return None
                s = _Box(A, tc, half, kind="bounding_cube")
            else:
                r = float(np.sqrt(((pts - centre) ** 2).sum(axis=1)).max())
                if r <= 0:
                    return None
                s = _Ellipsoid(A, tc, r, kind="bounding_sphere")
            s.approximation = approx
            return s
        soup = prim_triangles(prim, world, meters_per_unit, time)
        return mesh_solid(soup, approx)

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


# =========================================================================== measurements


def inside_any(points, solids, margin: float = 0.0) -> np.ndarray:
    """(K,) bool: inside (or within ``margin`` of) any of ``solids`` (``None`` skipped).
    Each solid only sees the points not yet claimed and within its bounds."""
    pts = _points(points)
    hit = np.zeros(len(pts), dtype=bool)
    for s in solids:
        if s is None:
            continue
        rest = np.flatnonzero(~hit)
        if len(rest) == 0:
            break
        hit[rest] = s.contains(pts[rest], margin)
    return hit


def coverage(surface_points, solids, tolerance: float) -> float:
    """Share of ``surface_points`` inside any solid or within ``tolerance`` metres of one.
    NaN when there are no points (nothing to cover: unmeasured); 0.0 with no solids."""
    pts = _points(surface_points)
    if len(pts) == 0:
        return float("nan")
    return float(np.count_nonzero(inside_any(pts, solids, tolerance))) / len(pts)


def free_space_fill(reference_empty_points, solids, margin: float = 0.0) -> float:
    """Share of the reference's empty-space samples that ``solids`` fill (inside any,
    boundary within ``margin`` included). NaN when there are no samples."""
    pts = _points(reference_empty_points)
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
    rng = np.random.Generator(np.random.PCG64(int(seed)))
    batch = max(2 * count, 1024)
    kept, have = [], 0
    for _ in range(max_rounds):
        pts = lo + rng.random((batch, 3)) * (hi - lo)
        free = pts[~inside_any(pts, reference_solids, clearance)]
        kept.append(free[: count - have])
        have += len(kept[-1])
        if have >= count:
            break
    return np.concatenate(kept) if kept else np.zeros((0, 3))
