"""Component geometry: world-space triangle soups and seeded surface samples.

Pure, deterministic numeric building blocks for the "component geometry" check family
(README, "What is measured"). Everything here is in SI metres and world space: a prim's points are
taken through its full local-to-world matrix (rotation, non-uniform scale, shear,
translation) and then multiplied by the stage's metersPerUnit.

Determinism: the same inputs give bit-identical outputs; nothing depends on set/dict
iteration order. Seeded surface samples: surface_sampling.py.

Tessellation of implicit prims (fixed constants, so reference and candidate are
tessellated identically):

* ``SEGMENTS = 48`` vertices around every surface of revolution (sphere, capsule,
  cylinder, cone and their ``_1`` variants). Chord sag 1 - cos(pi/48) = 0.21 % of the
  radius; cap-disc area error (1 - sin(2pi/48)/(2pi/48)) = 0.29 %.
* ``RINGS_PER_HALF_TURN = 24`` latitude steps over a half circle of arc: a sphere gets
  24 rings (pole to pole), each hemispherical capsule cap 12; caps of a tapered
  ``Capsule_1`` get a share proportional to their arc (at least 2).
* A sphere is then 48 x 24 = 2,208 triangles, its area 0.43 % below 4 pi r^2; a capsule
  or cylinder is within 0.3 %; a ``Cube`` and a ``Plane`` are exact (12 and 2 triangles).

Mesh conventions: ``faceVertexCounts``/``faceVertexIndices`` are fan-triangulated (as
Hydra does; a non-convex polygon is therefore triangulated the way a renderer shows it),
faces with fewer than 3 vertices are skipped, ``holeIndices`` and subdivision are
ignored (the control cage is the surface). ``orientation = leftHanded`` and mirroring
world matrices flip the winding so that the soup's triangles keep the authored
outward side. Malformed meshes (index out of range, counts not matching indices,
no points, non-finite referenced points) give ``None``; nothing here raises on bad data.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
import math

import numpy as np

from pxr import Usd, UsdGeom

from . import typed_read



__all__ = [
    "SEGMENTS",
    "RINGS_PER_HALF_TURN",
    "TriangleSoup",
    "matrix_to_numpy",
    "fan_triangulate",
    "read_mesh",
    "prim_triangles",
    "concatenate_soups",
]

SEGMENTS = 48
RINGS_PER_HALF_TURN = 24

_EMPTY_POINTS = np.zeros((0, 3), dtype=np.float64)


# --------------------------------------------------------------------------- soup


@dataclass(frozen=True, eq=False)
class TriangleSoup:
    """World-space triangles in metres.

    ``vertices``: (N, 3) float64; ``faces``: (M, 3) int64 indices into ``vertices``.
    Only vertices referenced by a face are kept by :func:`prim_triangles`.
    """

    vertices: np.ndarray
    faces: np.ndarray

    @cached_property
    def triangle_areas(self) -> np.ndarray:
        """(M,) float64 area of each triangle (degenerate triangles have 0)."""
        if len(self.faces) == 0:
            return np.zeros(0, dtype=np.float64)
        tri = self.vertices[self.faces]
        cross = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        return 0.5 * np.sqrt(np.einsum("ij,ij->i", cross, cross))

    @property
    def area(self) -> float:
        """Total surface area in square metres."""
        return float(self.triangle_areas.sum())

    @property
    def bounds(self) -> np.ndarray:
        """(2, 3) world axis-aligned bounds [min, max]; NaN for an empty soup."""
        if len(self.vertices) == 0:
            return np.full((2, 3), np.nan)
        return np.stack([self.vertices.min(axis=0), self.vertices.max(axis=0)])

    @property
    def triangles(self) -> np.ndarray:
        """(M, 3, 3) corner coordinates."""
        return self.vertices[self.faces]

    @property
    def signed_volume(self) -> float:
        """Divergence-theorem volume; meaningful only for a closed, consistently
        oriented soup (positive when triangles face outwards)."""
        if len(self.faces) == 0:
            return 0.0
        tri = self.vertices[self.faces]
        return float(np.einsum("ij,ij->i", tri[:, 0], np.cross(tri[:, 1], tri[:, 2])).sum() / 6.0)


def concatenate_soups(soups) -> TriangleSoup | None:
    """One soup from several (``None`` entries skipped); ``None`` if nothing is left."""
    parts = [s for s in soups if s is not None and len(s.faces)]
    if not parts:
        return None
    verts, faces, offset = [], [], 0
    for s in parts:
        verts.append(s.vertices)
        faces.append(s.faces + offset)
        offset += len(s.vertices)
    return TriangleSoup(np.concatenate(verts).astype(np.float64, copy=False),
                        np.concatenate(faces).astype(np.int64, copy=False))


# --------------------------------------------------------------------------- transforms


def matrix_to_numpy(world) -> np.ndarray:
    """(4, 4) float64 from a ``Gf.Matrix4d`` (or anything array-like). Row-vector
    convention as in Gf: ``world_point = [x, y, z, 1] @ M``."""
    m = np.array(world, dtype=np.float64)
    if m.shape != (4, 4):
        raise ValueError(f"expected a 4x4 matrix, got shape {m.shape}")
    return m


def _affine(world, meters_per_unit: float) -> tuple[np.ndarray, np.ndarray]:
    """(A, t) in metres with ``world_m = local @ A + t``."""
    m = matrix_to_numpy(world)
    s = float(meters_per_unit)
    return m[:3, :3] * s, m[3, :3] * s


# Cyclic permutations (handedness preserved) that put a canonical +Z spine on the prim's
# axis: actual = canonical @ P.
_AXIS_PERMUTATION = {
    "X": np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]),
    "Y": np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
    "Z": np.eye(3),
}



def finite_affine(world, meters_per_unit: float) -> tuple[np.ndarray, np.ndarray] | None:
    """`_affine`'s (A, t) in metres, or None for a matrix that is not one or not finite."""
    try:
        A, t = _affine(world, meters_per_unit)
    except ValueError:
        return None
    if not (np.isfinite(A).all() and np.isfinite(t).all()):
        return None
    return A, t

def has_surface(soup: TriangleSoup) -> bool:
    """Finite vertices and a positive, finite area: something a renderer draws and a sampler can sample."""
    area = soup.area
    return bool(np.isfinite(soup.vertices).all() and math.isfinite(area) and area > 0.0)


def axis_permutation(axis) -> np.ndarray:
    """3x3 matrix P with ``actual = canonical @ P`` (canonical spine is +Z)."""
    return _AXIS_PERMUTATION.get(str(axis) if axis is not None else "Z", _AXIS_PERMUTATION["Z"])


def _get(prim: Usd.Prim, name: str, time, default=None):
    """A size or axis through the typed reader: `default` when unauthored, None when unusable."""
    attr = prim.GetAttribute(name)
    if not attr:
        return default
    value, problem = typed_read.read(attr, "token" if name == "axis" else "real", time)
    if problem:
        return None
    return default if value is None else value


def _finite_nonneg(*values) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in values)


# --------------------------------------------------------------------------- meshes


def fan_triangulate(counts: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Vectorized fan triangulation: face with n >= 3 vertices -> n - 2 triangles."""
    starts = np.cumsum(counts) - counts
    keep = counts >= 3
    ntri = counts[keep] - 2
    total = int(ntri.sum())
    if total == 0:
        return np.zeros((0, 3), dtype=np.int64)
    first = np.repeat(starts[keep], ntri)
    k = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(ntri) - ntri, ntri)
    return np.stack([indices[first], indices[first + k + 1], indices[first + k + 2]], axis=1)


def read_mesh(prim: Usd.Prim, time=Usd.TimeCode.Default()) -> tuple[np.ndarray, np.ndarray] | None:
    """A ``UsdGeom.Mesh``'s local points (float64, only those referenced) and fan
    triangles (int64, winding flipped for ``leftHanded``). ``None`` if malformed or empty."""
    if not prim or not prim.IsA(UsdGeom.Mesh):
        return None
    mesh = UsdGeom.Mesh(prim)
    pts = typed_read.value(mesh.GetPointsAttr(), "points", time=time)
    counts = typed_read.value(mesh.GetFaceVertexCountsAttr(), "ints", time=time)
    idx = typed_read.value(mesh.GetFaceVertexIndicesAttr(), "ints", time=time)
    if pts is None or counts is None or idx is None or len(pts) == 0 or len(counts) == 0:
        return None
    points = np.asarray(pts, dtype=np.float64).reshape(-1, 3)
    counts = np.asarray(counts, dtype=np.int64).reshape(-1)
    idx = np.asarray(idx, dtype=np.int64).reshape(-1)
    if (counts < 0).any() or int(counts.sum()) != len(idx) or len(idx) == 0:
        return None
    if idx.min() < 0 or idx.max() >= len(points):
        return None
    faces = fan_triangulate(counts, idx)
    if len(faces) == 0:
        return None
    used, inverse = np.unique(faces, return_inverse=True)
    faces = inverse.reshape(-1, 3).astype(np.int64)
    points = points[used]
    if not np.isfinite(points).all():
        return None
    if typed_read.value(mesh.GetOrientationAttr(), "token", time=time) == "leftHanded":
        faces = faces[:, [0, 2, 1]]
    return points, faces


# --------------------------------------------------------------------------- implicit prims


def _lathe(profile: list[tuple[float, float]], segments: int = SEGMENTS) -> tuple[np.ndarray, np.ndarray]:
    """Surface of revolution about +Z of a (rho, z) profile, ordered so that the surface
    faces outwards (bottom pole -> outwards -> up -> inwards to the top pole). Profile
    points with rho == 0 become single pole vertices."""
    prof = []
    for p in profile:
        if not prof or (p[0] != prof[-1][0] or p[1] != prof[-1][1]):
            prof.append((float(p[0]), float(p[1])))
    ct, st = _ring_directions(segments)
    verts = [np.array([[0.0, 0.0, z]]) if rho == 0.0 else np.stack([rho * ct, rho * st, np.full(segments, z)], axis=1)
             for rho, z in prof]
    # The faces depend only on which profile points are poles: every capsule, sphere and cone
    # of a stage shares a handful of them.
    faces = _lathe_faces(tuple(rho == 0.0 for rho, _ in prof), segments)
    return np.concatenate(verts).astype(np.float64), faces.copy()


@lru_cache(maxsize=None)
def _ring_directions(segments: int) -> tuple[np.ndarray, np.ndarray]:
    theta = 2.0 * np.pi * np.arange(segments) / segments
    ct, st = np.cos(theta), np.sin(theta)
    ct.flags.writeable = st.flags.writeable = False   # shared by every call
    return ct, st


@lru_cache(maxsize=256)
def _lathe_faces(poles: tuple[bool, ...], segments: int) -> np.ndarray:
    """_lathe's faces for a profile whose points are poles (True) or rings (False)."""
    ring_index, n = [], 0  # ring_index[i]: int (pole) or array of S ints
    for pole in poles:
        ring_index.append(n if pole else np.arange(n, n + segments))
        n += 1 if pole else segments
    faces = []
    for i in range(len(poles) - 1):
        lo, hi = ring_index[i], ring_index[i + 1]
        if poles[i] and poles[i + 1]:
            continue
        if poles[i]:
            c, d = np.roll(hi, -1), hi
            faces.append(np.stack([np.full(segments, lo), c, d], axis=1))
        elif poles[i + 1]:
            a, b = lo, np.roll(lo, -1)
            faces.append(np.stack([a, b, np.full(segments, hi)], axis=1))
        else:
            a, b, c, d = lo, np.roll(lo, -1), np.roll(hi, -1), hi
            faces.append(np.stack([a, b, c], axis=1))
            faces.append(np.stack([a, c, d], axis=1))
    return np.concatenate(faces).astype(np.int64) if faces else np.zeros((0, 3), np.int64)


def _arc(center_z: float, radius: float, a0: float, a1: float, steps: int) -> list[tuple[float, float]]:
    """Profile points on a circle (centre on the axis) from latitude a0 to a1 (radians)."""
    out = []
    for k in range(steps + 1):
        a = a0 + (a1 - a0) * k / steps
        if (k == 0 and a0 == -math.pi / 2) or (k == steps and a1 == math.pi / 2):
            out.append((0.0, center_z + (radius if k else -radius)))  # exact pole
            continue
        out.append((max(radius * math.cos(a), 0.0), center_z + radius * math.sin(a)))
    return out


def _arc_steps(arc: float) -> int:
    return max(2, int(math.ceil(arc / math.pi * RINGS_PER_HALF_TURN - 1e-9)))


def round_cone_profile(radius_bottom: float, radius_top: float, height: float) -> list[tuple[float, float]]:
    """(rho, z) profile of the convex hull of two spheres on the axis: bottom sphere at
    z = -height/2, top at +height/2 (the Capsule / Capsule_1 shape, as Hydra tessellates it)."""
    rb, rt, h = radius_bottom, radius_top, height
    if h <= abs(rb - rt):  # one sphere swallows the other (also h == 0 with equal radii)
        if rb >= rt:
            return _arc(-h / 2, rb, -math.pi / 2, math.pi / 2, RINGS_PER_HALF_TURN)
        return _arc(h / 2, rt, -math.pi / 2, math.pi / 2, RINGS_PER_HALF_TURN)
    lat = math.asin((rb - rt) / h)  # latitude of the tangent circle on both spheres
    bottom = _arc(-h / 2, rb, -math.pi / 2, lat, _arc_steps(lat + math.pi / 2))
    top = _arc(h / 2, rt, lat, math.pi / 2, _arc_steps(math.pi / 2 - lat))
    return bottom + top


def _implicit_local(prim: Usd.Prim, time) -> tuple[np.ndarray, np.ndarray] | None:
    """Local-space tessellation (points, faces) of an implicit prim, or None."""
    if prim.IsA(UsdGeom.Cube):
        size = _get(prim, "size", time, 2.0)
        if not _finite_nonneg(size) or size <= 0:
            return None
        h = size / 2.0
        v = np.array([[x, y, z] for x in (-h, h) for y in (-h, h) for z in (-h, h)], dtype=np.float64)
        # corner index = 4*ix + 2*iy + iz; outward CCW quads
        quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
        f = np.array([[q[0], q[1], q[2]] for q in quads] + [[q[0], q[2], q[3]] for q in quads], np.int64)
        return v, f
    if prim.IsA(UsdGeom.Sphere):
        r = _get(prim, "radius", time, 1.0)
        if not _finite_nonneg(r) or r <= 0:
            return None
        return _lathe(_arc(0.0, r, -math.pi / 2, math.pi / 2, RINGS_PER_HALF_TURN))
    if prim.IsA(UsdGeom.Plane):
        w, l = _get(prim, "width", time, 2.0), _get(prim, "length", time, 2.0)
        if not _finite_nonneg(w, l) or w <= 0 or l <= 0:
            return None
        axis = str(_get(prim, "axis", time, "Z"))
        # width/length directions per UsdGeomPlane (verified against ComputeExtent):
        # X: width along Z, length along Y; Y: width along X, length along Z; Z: X and Y.
        wdir, ldir, ndir = {"X": (2, 1, 0), "Y": (0, 2, 1)}.get(axis, (0, 1, 2))
        v = np.zeros((4, 3))
        for k, (sw, sl) in enumerate([(-1, -1), (1, -1), (1, 1), (-1, 1)]):
            v[k, wdir] = sw * w / 2
            v[k, ldir] = sl * l / 2
        f = np.array([[0, 1, 2], [0, 2, 3]], np.int64)
        e1, e2 = v[1] - v[0], v[2] - v[0]
        if np.cross(e1, e2)[ndir] < 0:  # face the +axis side
            f = f[:, [0, 2, 1]]
        return v, f
    profile = _revolution_profile(prim, time)
    if profile is None:
        return None
    prof, axis = profile
    v, f = _lathe(prof)
    return v @ axis_permutation(axis), f


def _revolution_profile(prim: Usd.Prim, time):
    """((rho, z) profile, axis) for capsules, cylinders, cones; None if not one / invalid."""
    axis = str(_get(prim, "axis", time, "Z"))
    if prim.IsA(UsdGeom.Capsule):
        r, h = _get(prim, "radius", time, 0.5), _get(prim, "height", time, 1.0)
        if not _finite_nonneg(r, h) or r <= 0:
            return None
        return round_cone_profile(r, r, h), axis
    if prim.IsA(UsdGeom.Capsule_1):
        rt, rb = _get(prim, "radiusTop", time, 0.5), _get(prim, "radiusBottom", time, 0.5)
        h = _get(prim, "height", time, 1.0)
        if not _finite_nonneg(rt, rb, h) or max(rt, rb) <= 0:
            return None
        return round_cone_profile(rb, rt, h), axis
    if prim.IsA(UsdGeom.Cylinder):
        r, h = _get(prim, "radius", time, 1.0), _get(prim, "height", time, 2.0)
        if not _finite_nonneg(r, h) or r <= 0 or h <= 0:
            return None
        return [(0.0, -h / 2), (r, -h / 2), (r, h / 2), (0.0, h / 2)], axis
    if prim.IsA(UsdGeom.Cylinder_1):
        rt, rb = _get(prim, "radiusTop", time, 1.0), _get(prim, "radiusBottom", time, 1.0)
        h = _get(prim, "height", time, 2.0)
        if not _finite_nonneg(rt, rb, h) or max(rt, rb) <= 0 or h <= 0:
            return None
        return [(0.0, -h / 2), (rb, -h / 2), (rt, h / 2), (0.0, h / 2)], axis
    if prim.IsA(UsdGeom.Cone):
        r, h = _get(prim, "radius", time, 1.0), _get(prim, "height", time, 2.0)
        if not _finite_nonneg(r, h) or r <= 0 or h <= 0:
            return None
        return [(0.0, -h / 2), (r, -h / 2), (0.0, h / 2)], axis
    return None


def prim_triangles(prim: Usd.Prim, world, meters_per_unit: float,
                   time=Usd.TimeCode.Default()) -> TriangleSoup | None:
    """World-space (metres) triangles of a geometric prim.

    ``world`` is the prim's local-to-world ``Gf.Matrix4d`` (e.g. from
    ``UsdGeom.XformCache.GetLocalToWorldTransform``); it is applied in full (scale,
    shear, rotation, translation), then everything is multiplied by ``meters_per_unit``.
    Supports Mesh, Cube, Sphere, Capsule, Capsule_1, Cylinder, Cylinder_1, Cone, Plane.
    Returns ``None`` for anything else, for malformed or degenerate data (non-positive
    sizes, bad indices, no points) and for non-finite matrices.
    """
    if not prim:
        return None
    if prim.IsA(UsdGeom.Mesh):
        local = read_mesh(prim, time)
    elif prim.IsA(UsdGeom.Gprim):
        local = _implicit_local(prim, time)
    else:
        return None
    if local is None:
        return None
    points, faces = local
    frame = finite_affine(world, meters_per_unit)
    if frame is None:
        return None
    A, t = frame
    verts = points @ A + t
    if np.linalg.det(A) < 0:
        faces = faces[:, [0, 2, 1]]
    return TriangleSoup(np.ascontiguousarray(verts, dtype=np.float64),
                        np.ascontiguousarray(faces, dtype=np.int64))
