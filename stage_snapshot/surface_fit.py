"""Placement and shape of a visible part: the best rigid motion from the reference's surface to
the candidate's, and what it leaves unexplained (metres and degrees, world space).

A ``Surface`` is a part's world-space triangles in canonical form (surface_sampling.py) with its
seeded samples, digest and exact moments. ``rigid_fit(reference, candidate)``:

1. The same triangles (equal digests: any order of points and faces, any corner order, a mesh
   split into two or merged from two, an instance made a plain mesh): rotation 0, residual 0.
2. The same surface at the identity, once the centroids are aligned (another triangulation of
   the same polygons, coordinates that differ in their last bits after a baked scale or another
   unit): the residual is the symmetric mean distance from each side's samples to the other's
   *surface* (surface_index.py: exact near the surface), which is 0 to rounding; at most
   ``IDENTICAL_M`` (1 micrometre, a thousandth of the shape tolerance) it is taken as unrotated.
   A rotation that moves a surface by less than that on average turns a part smaller than
   about 0.3 mm by more than 0.5 degrees: nothing a renderer shows.
3. Otherwise a fit: starts at the identity and at the 24 alignments of the two surfaces'
   principal axes (exact area moments, every axis order and sign, which also covers parts whose
   moments are degenerate), the best few refined by symmetric point-to-plane ICP against the
   other side's surface, the residual evaluated with exact distances. A moved but unchanged
   part converges to its exact motion (residual 0 to rounding, rotation exact to about 1e-6
   degrees), so neither sampling nor triangulation can read as a change of shape.

Symmetry: a rotation that maps the surface onto itself is no error. Among the fits (and the
identity) whose residual exceeds the best one's by at most ``SYMMETRY_SLOPE`` x (the angle
between the fit and the nearest of the best fits, radians; the best fits are those within
``IDENTICAL_M`` of the lowest residual: the best up to the part's symmetries) x (the surface's
rms radius), the smallest rotation is reported: turning
an asymmetric part by an angle moves its surface by about a third of angle x radius or more, a
tessellated sphere or cylinder turned about its axis by far less (its facets' sag). A sphere
rotated by 179 degrees therefore reports 0, an ellipsoid rotated by 0.6 degrees 0.6. The shape
residual reported is the best fit's.

Deterministic: single-threaded queries, sums in a fixed order, ties broken by index.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .content_cache import CACHE
from .geometry import TriangleSoup, concatenate_soups
from .surface_index import SurfaceIndex
from .surface_sampling import area_and_centroid, canonical_soup, second_moments, surface_digest

__all__ = ["Surface", "rigid_fit", "same_surface", "rotation_angle_deg", "IDENTICAL_M", "SYMMETRY_SLOPE"]

IDENTICAL_M = 1e-6
SYMMETRY_SLOPE = 0.1
_QUICK_POINTS = 64       # per side, to rank the starts
_ICP_POINTS = 256        # per side, for the ICP iterations
_KEPT_STARTS = 3         # principal-axis starts refined (besides the identity)
_ITERATIONS = 30
_STEP_DONE = 1e-7        # radians (and metres / rms radius) of an ICP step that ends it
_PLATEAU = 1e-3          # an ICP iteration that improves the mean distance by less ends it


@dataclass(eq=False)
class Surface:
    """A part's world triangles in canonical order (``vertices`` (N, 3), ``faces`` (M, 3)) with
    their seeded ``samples``, ``digest`` (equal exactly for equal triangle sets), ``area`` (m^2),
    area ``centroid`` and second ``moments`` about it. The nearest-point index is built when a
    fit first needs it and is not pickled."""

    vertices: np.ndarray
    faces: np.ndarray
    samples: np.ndarray
    digest: str
    area: float
    centroid: np.ndarray
    _moments: np.ndarray | None = field(default=None, repr=False)
    _index: SurfaceIndex | None = field(default=None, repr=False)

    @classmethod
    def of(cls, soup: TriangleSoup, samples: np.ndarray) -> "Surface":
        """From a canonical soup (surface_sampling.canonical_soup) and its samples."""
        area, centroid = area_and_centroid(soup)
        return cls(soup.vertices, soup.faces, samples, surface_digest(soup), area, centroid)

    @property
    def moments(self) -> np.ndarray:
        """Second moment about the centroid (m^4), computed when a fit first needs it."""
        if self._moments is None:
            self._moments = second_moments(TriangleSoup(self.vertices, self.faces))[2]
        return self._moments

    @classmethod
    def union(cls, surfaces: list["Surface"]) -> "Surface":
        """Several parts as one surface (a mesh split in two is compared with its whole)."""
        if len(surfaces) == 1:
            return surfaces[0]
        surfaces = sorted(surfaces, key=lambda s: s.digest)   # by content: names do not matter
        soup = canonical_soup(concatenate_soups([TriangleSoup(s.vertices, s.faces) for s in surfaces]))
        return cls.of(soup, np.concatenate([s.samples for s in surfaces]))

    @property
    def index(self) -> SurfaceIndex:
        # Built from the triangles alone, and kept in the content cache by their bytes: a surface
        # is a fresh copy every time a snapshot reads it (content_cache.py), and a candidate's
        # unchanged part met again gets the index built before (a capsule's: 0.18 s against
        # a 14 ms copy, measured).
        if self._index is None:
            vertices, faces = self.vertices, self.faces
            self._index = CACHE.get_or_compute("surface_index", (vertices, faces),
                                               lambda: SurfaceIndex(vertices[faces]))
        return self._index

    @property
    def rms_radius(self) -> float:
        return math.sqrt(max(float(np.trace(self.moments)), 0.0) / self.area) if self.area > 0 else 0.0

    def __getstate__(self):
        return {**self.__dict__, "_index": None}   # rebuilt where it is needed


def rotation_angle_deg(rotation: np.ndarray) -> float:
    """Angle (degrees, 0..180) of a 3x3 rotation matrix."""
    c = (float(np.trace(rotation)) - 1.0) / 2.0
    return float(math.degrees(math.acos(min(1.0, max(-1.0, c)))))


def _rodrigues(w: np.ndarray) -> np.ndarray:
    theta = float(np.linalg.norm(w))
    if theta == 0.0:
        return np.eye(3)
    k = w / theta
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + math.sin(theta) * kx + (1.0 - math.cos(theta)) * (kx @ kx)


def _residual(ref: Surface, cand: Surface, r, t, n: int | None = None, exact_within=None) -> float:
    """Symmetric mean distance (m): reference samples moved onto the candidate's surface, and the
    candidate's samples moved back onto the reference's."""
    kw = {} if exact_within is None else {"exact_within": exact_within}
    a = ref.samples[:n] @ r.T + t
    b = (cand.samples[:n] - t) @ r
    d1 = cand.index.closest(a, **kw)[0]
    d2 = ref.index.closest(b, **kw)[0]
    return 0.5 * (float(d1.mean()) + float(d2.mean()))


def _icp(ref: Surface, cand: Surface, r, t, n: int, iterations: int):
    """Symmetric point-to-plane ICP from (r, t), rotations about the moved centroid."""
    scale = max(ref.rms_radius, 1e-12)
    previous = math.inf
    for _ in range(iterations):
        x = ref.samples[:n] @ r.T + t
        d1, y1, n1 = cand.index.closest(x, exact_within=0.0)
        q = (cand.samples[:n] - t) @ r
        d2, w, m = ref.index.closest(q, exact_within=0.0)
        score = float(d1.mean()) + float(d2.mean())
        if not score < previous * (1.0 - _PLATEAU):
            break   # no longer improving: a surface that differs (an unchanged one goes to 0)
        previous = score
        p = np.concatenate([x, w @ r.T + t])
        y = np.concatenate([y1, cand.samples[:n]])
        nn = np.concatenate([n1, m @ r.T])
        ok = np.isfinite(y).all(axis=1)
        p, y, nn = p[ok], y[ok], nn[ok]
        if len(p) < 6:
            break
        mu = r @ ref.centroid + t
        a = np.concatenate([np.cross(p - mu, nn) / scale, nn], axis=1)
        b = np.einsum("ij,ij->i", nn, y - p)
        ata = np.einsum("ni,nj->ij", a, a)
        atb = np.einsum("ni,n->i", a, b)
        step = np.linalg.solve(ata + 1e-12 * (np.trace(ata) + 1e-300) * np.eye(6), atb)
        rot = _rodrigues(step[:3] / scale)
        r, t = rot @ r, rot @ (t - mu) + mu + step[3:]
        if float(np.abs(step).max()) < _STEP_DONE * scale:
            break
    return r, t


def _starts(ref: Surface, cand: Surface) -> list[np.ndarray]:
    """The identity and the 24 proper alignments of the principal axes (fixed order)."""
    def axes(m):
        _, vecs = np.linalg.eigh(m)
        e = vecs[:, ::-1].copy()
        if np.linalg.det(e) < 0:
            e[:, 2] = -e[:, 2]
        return e

    e_r, e_c = axes(ref.moments), axes(cand.moments)
    out = [np.eye(3)]
    for p in ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)):
        for signs in ((1, 1, 1), (1, -1, -1), (-1, 1, -1), (-1, -1, 1), (1, 1, -1), (1, -1, 1), (-1, 1, 1), (-1, -1, -1)):
            g = np.zeros((3, 3))
            for row, (col, s) in enumerate(zip(p, signs)):
                g[row, col] = s
            if np.linalg.det(g) > 0:
                out.append(e_c @ g @ e_r.T)
    return out


def same_surface(ref: Surface, cand: Surface, residual_m: float) -> dict:
    """The fit of two surfaces already known to lie on each other at the identity (every sample
    of each within a micrometre of the other's surface), `residual_m` their symmetric mean
    distance there: what ``rigid_fit`` would find at its second step, without measuring again."""
    return {"rotation_deg": 0.0, "residual_m": float(residual_m), "rotation": np.eye(3),
            "translation": cand.centroid - ref.centroid, "how": "same surface"}


def rigid_fit(ref: Surface, cand: Surface) -> dict:
    """{"rotation_deg", "residual_m", "rotation" (3x3), "translation" (3,), "how"} of the best
    rigid motion candidate ~ R reference + t (module docstring)."""
    t0 = cand.centroid - ref.centroid
    if ref.digest == cand.digest:
        return {"rotation_deg": 0.0, "residual_m": 0.0, "rotation": np.eye(3), "translation": t0,
                "how": "same triangles"}
    if len(ref.samples) == 0 or len(cand.samples) == 0:
        return {"rotation_deg": math.inf, "residual_m": math.inf, "rotation": np.eye(3), "translation": t0,
                "how": "no surface to compare"}
    # The fit is a function of the two surfaces (their digests) and their samples alone, and costs
    # a few tenths of a second whatever the part's size: the same pair met again (a part the
    # submissions of a case leave as the input had it) is taken from the content cache.
    return CACHE.get_or_compute("rigid_fit", (ref.digest, cand.digest, ref.samples, cand.samples),
                                lambda: _fit(ref, cand, t0), min_bytes=0)


def _fit(ref: Surface, cand: Surface, t0: np.ndarray) -> dict:
    identity = _residual(ref, cand, np.eye(3), t0)
    if identity <= IDENTICAL_M:
        return {"rotation_deg": 0.0, "residual_m": identity, "rotation": np.eye(3), "translation": t0,
                "how": "same surface"}
    starts = _starts(ref, cand)
    quick = [(_residual(ref, cand, r0, cand.centroid - r0 @ ref.centroid, _QUICK_POINTS, 0.0), k)
             for k, r0 in enumerate(starts)]
    kept = [0] + [k for _, k in sorted(quick[1:])[:_KEPT_STARTS]]
    fits = [(np.eye(3), t0, identity)]
    for k in kept:
        r, t = _icp(ref, cand, starts[k], cand.centroid - starts[k] @ ref.centroid, _ICP_POINTS, _ITERATIONS)
        r, t = _icp(ref, cand, r, t, len(ref.samples), 8)
        fits.append((r, t, _residual(ref, cand, r, t)))
    best = min(f[2] for f in fits)
    radius = ref.rms_radius
    # The fits within IDENTICAL_M of the best are the best up to the part's symmetries (a box
    # turned by 180 degrees lies on itself), and which of them is lowest is rounding: a fit's angle
    # is measured to the nearest of them. Measured to one of them, the identity could be 180
    # degrees from it, and its allowance so large that a box turned 30 degrees read as unturned.
    bests = [f[0] for f in fits if f[2] <= best + IDENTICAL_M]

    def equivalent(fit) -> bool:
        gap = min(math.radians(rotation_angle_deg(fit[0] @ b.T)) for b in bests)
        return fit[2] <= best + max(IDENTICAL_M, SYMMETRY_SLOPE * gap * radius)

    chosen = min((f for f in fits if equivalent(f)), key=lambda f: rotation_angle_deg(f[0]))
    return {"rotation_deg": rotation_angle_deg(chosen[0]), "residual_m": best, "rotation": chosen[0],
            "translation": chosen[1], "how": "rigid fit"}
