"""A visible part's surface in a canonical form: the same triangles give the same samples and the
same digest, whatever the order of the points, of the faces and of the corners in each face.

A re-export lists a mesh's points and faces in another order, and a split mesh or a merged one
lists the same triangles in other prims: the surface a renderer draws is unchanged, so nothing
measured on it may change either. ``canonical_soup`` orders the soup by content alone: every
vertex gets its rank among the distinct coordinates (lexicographic x, y, z), each triangle lists
its corners by rank, and the triangles are sorted by their three ranks. ``sample_surface`` draws
area-weighted samples over that order with barycentric weights on those corners, so two soups
with the same set of triangles get bit-identical samples (as sets: and in the same order), and
``surface_digest`` is equal exactly when the triangle sets are.

Winding is not part of the canonical form: a visible part's surface is compared as a set of
points (the material and collision families read orientation where it matters).
"""
from __future__ import annotations

import hashlib
import math

import numpy as np

from .geometry import TriangleSoup

__all__ = ["canonical_soup", "sample_surface", "surface_digest", "area_and_centroid", "second_moments"]

_EMPTY_POINTS = np.zeros((0, 3), dtype=np.float64)


def canonical_soup(soup: TriangleSoup) -> TriangleSoup:
    """The same triangles, vertices sorted and merged by coordinates, faces by content.

    Deterministic in the set of triangles alone (as unordered corner triples): a triangle listed
    twice stays twice, a point listed twice (with equal coordinates) becomes one vertex."""
    if len(soup.faces) == 0:
        return soup
    # Only referenced points count: prim_triangles keeps no others (and a point nothing
    # references is dropped by the ranks below only if it is a duplicate, so check).
    referenced = np.zeros(len(soup.vertices), dtype=bool)
    referenced[soup.faces.reshape(-1)] = True
    used = np.flatnonzero(referenced)
    points = soup.vertices[used] + 0.0      # + 0.0 turns -0.0 into 0.0: equal coordinates, equal bytes
    order = np.lexsort((points[:, 2], points[:, 1], points[:, 0]))
    ranked = points[order]
    first = np.ones(len(ranked), dtype=bool)
    first[1:] = np.any(ranked[1:] != ranked[:-1], axis=1)
    rank = np.empty(len(points), dtype=np.int64)
    rank[order] = np.cumsum(first) - 1
    lookup = np.full(int(soup.faces.max()) + 1, -1, dtype=np.int64)
    lookup[used] = rank
    vertices = ranked[first]
    faces = np.sort(lookup[soup.faces], axis=1)
    order = np.lexsort((faces[:, 2], faces[:, 1], faces[:, 0]))
    return TriangleSoup(np.ascontiguousarray(vertices, dtype=np.float64),
                        np.ascontiguousarray(faces[order], dtype=np.int64))


def surface_digest(soup: TriangleSoup) -> str:
    """sha256 of a canonical soup (its sorted distinct vertices as float64 bytes, then its sorted
    faces): equal for equal triangle sets, whatever the prims, order or corner order they came in."""
    digest = hashlib.sha256(np.ascontiguousarray(soup.vertices, dtype="<f8").tobytes())
    digest.update(np.ascontiguousarray(soup.faces, dtype="<i8").tobytes())
    return digest.hexdigest()


def sample_surface(soup: TriangleSoup | None, count: int, seed: int) -> np.ndarray:
    """(count, 3) area-weighted uniform samples on the soup's surface.

    Bit-identical for the same (triangles, count, seed); pass a canonical soup
    (``canonical_soup``) for samples that do not depend on the order of points and faces. An
    empty, zero-area or missing soup, or count <= 0, gives a (0, 3) array. Zero-area
    triangles are never chosen."""
    count = int(count)
    if soup is None or count <= 0 or len(soup.faces) == 0:
        return _EMPTY_POINTS.copy()
    areas = soup.triangle_areas
    cdf = np.cumsum(areas)
    total = float(cdf[-1])
    if not (total > 0.0 and math.isfinite(total)):
        return _EMPTY_POINTS.copy()
    rng = np.random.Generator(np.random.PCG64(int(seed)))
    r = rng.random(count) * total
    idx = np.minimum(np.searchsorted(cdf, r, side="right"), len(cdf) - 1)
    uv = rng.random((2, count))
    su = np.sqrt(uv[0])
    w1 = su * (1.0 - uv[1])
    w2 = su * uv[1]
    w0 = 1.0 - su
    f = soup.faces[idx]
    v = soup.vertices
    return w0[:, None] * v[f[:, 0]] + w1[:, None] * v[f[:, 1]] + w2[:, None] * v[f[:, 2]]


def area_and_centroid(soup: TriangleSoup) -> tuple[float, np.ndarray]:
    """(area m^2, area centroid (3,)); (0, origin) for a soup without area."""
    areas = soup.triangle_areas
    total = float(areas.sum())
    if not (total > 0.0 and math.isfinite(total)):
        return 0.0, np.zeros(3)
    return total, (soup.vertices[soup.faces].mean(axis=1) * areas[:, None]).sum(axis=0) / total


def second_moments(soup: TriangleSoup) -> tuple[float, np.ndarray, np.ndarray]:
    """(area m^2, area centroid (3,), second moment of the surface about its centroid (3, 3),
    m^4): exact integrals over the triangles, so principal axes depend on the surface only."""
    tri = soup.vertices[soup.faces]
    areas = soup.triangle_areas
    total = float(areas.sum())
    if not (total > 0.0 and math.isfinite(total)):
        return 0.0, np.zeros(3), np.zeros((3, 3))
    centroid = (tri.mean(axis=1) * areas[:, None]).sum(axis=0) / total
    local = tri - centroid
    s = local.sum(axis=1)
    # the integral of x x^T over a triangle is A/12 (sum of its corners' outer products + s s^T);
    # entry by entry with numpy's own (pairwise, single-threaded) sums, no BLAS
    moments = np.zeros((3, 3))
    for i in range(3):
        for j in range(i, 3):
            per_triangle = (local[:, :, i] * local[:, :, j]).sum(axis=1) + s[:, i] * s[:, j]
            moments[i, j] = moments[j, i] = float((areas * per_triangle).sum()) / 12.0
    return total, centroid, moments
