"""One model of a mesh collider, shared by collision (world solids) and mass (shape-frame integrals).

A mesh collider is read once, in the mesh's own frame (stage units), and resolved into the
solid a simulator builds from it by ``physics:approximation`` (``UsdPhysics.MeshCollisionAPI``;
unauthored means ``none``):

==================== ==========================================================
none, meshSimplif.,  the mesh itself if it is watertight with consistent winding
sdf, unknown token   (trimesh's definitions, after merging coincident vertices);
                     otherwise its convex hull (kind and note say so). An unknown
                     token is used as ``none`` (note says so)
convexHull           the convex hull of the points
convexDecomposition  the mesh itself if watertight and consistently wound (we cannot
                     run V-HACD; the simulator's decomposition fits the mesh
                     closely), else the union of the convex hulls of its connected
                     components
boundingCube         the axis-aligned box of the points in the mesh's frame
boundingSphere       the smallest sphere around the points with the collider's world
                     scale applied (a sphere in world space, as a simulator builds it)
==================== ==========================================================

Coplanar points make a zero-volume flat solid; collinear or too few points none at all.
Each hull is computed once per mesh (per prototype for instances): an affine map carries a
hull to any frame (the world for collision, the scaled shape frame for mass), so the hull of
the local points serves both. ``ColliderModels`` keeps the models of one stage read.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pxr import Usd, UsdGeom

from . import typed_read
from .geometry import read_mesh
from .mesh_math import (Hull, connected_components, convex_hull, flat_hull_triangles, minimal_sphere,
                        watertight_and_consistent)

KNOWN_APPROXIMATIONS = ("none", "meshSimplification", "sdf", "convexHull", "convexDecomposition",
                        "boundingCube", "boundingSphere")


@dataclass(frozen=True, eq=False)
class MeshCollider:
    """A mesh collider's solid in the mesh's frame.

    ``form``: ``mesh`` (``points``/``faces``, watertight, coincident vertices merged), ``parts``
    (the union of ``parts``, each a ``mesh_math.Hull`` or a flat (K, 3, 3) triangle fan of zero
    volume: one for a convex hull, one per component for an open decomposition),
    ``bounding_cube`` or ``bounding_sphere`` (from ``points``), ``empty`` (nothing usable).
    ``kind`` and ``note`` say what was built and why, for reports.
    """

    approximation: str
    form: str
    kind: str
    note: str
    points: np.ndarray
    faces: np.ndarray
    parts: tuple = ()
    _spheres: dict = field(default_factory=dict, repr=False)

    def bounding_sphere(self, scale) -> tuple[np.ndarray, float]:
        """Centre and radius of the smallest sphere around the points scaled by ``scale``
        (the collider's world scale), in that scaled frame."""
        key = tuple(float(s) for s in np.round(np.asarray(scale, dtype=np.float64), 12))
        if key not in self._spheres:
            self._spheres[key] = minimal_sphere(self.points * np.asarray(key))
        return self._spheres[key]


_NO_FACES = np.zeros((0, 3), np.int64)


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _convex_part(points) -> Hull | np.ndarray | None:
    """The convex hull of the points, or the flat fan of coplanar ones, or None."""
    hull = convex_hull(points)
    return hull if hull is not None else flat_hull_triangles(points)


def _hulled(points, approximation: str, kind: str, note: str) -> MeshCollider:
    part = _convex_part(points)
    if part is None:
        return MeshCollider(approximation, "empty", kind, _join(note, "degenerate point set: no volume"),
                            points, _NO_FACES)
    if not isinstance(part, Hull):
        kind, note = "surface(" + kind + ")", _join(note, "flat point set: zero volume")
    return MeshCollider(approximation, "parts", kind, note, points, _NO_FACES, (part,))


def _component_hulls(points, faces, approximation: str) -> MeshCollider:
    labels = connected_components(faces, len(points))
    parts = tuple(p for p in (_convex_part(points[labels == k]) for k in range(int(labels.max()) + 1))
                  if p is not None)
    if not parts:
        return MeshCollider(approximation, "empty", "component_hulls", "open mesh: no component has a volume",
                            points, faces)
    if len(parts) == 1:
        note = "open mesh: convex hull of its single component"
    else:
        note = f"open mesh: convex hulls of {len(parts)} connected components"
    return MeshCollider(approximation, "parts", "component_hulls", note, points, faces, parts)


def mesh_collider(points, faces, approximation: str = "none") -> MeshCollider:
    """The collider a simulator builds from a mesh (points (N, 3), fan triangles (M, 3)) by its
    approximation token, in the points' frame (see the module docstring)."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    faces = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    approximation = str(approximation or "none")
    if approximation == "boundingCube":
        return MeshCollider(approximation, "bounding_cube", "bounding_cube", "", points, faces)
    if approximation == "boundingSphere":
        return MeshCollider(approximation, "bounding_sphere", "bounding_sphere", "", points, faces)
    if approximation == "convexHull":
        return _hulled(points, approximation, "convex_hull", "")
    note = "" if approximation in KNOWN_APPROXIMATIONS else f"unknown approximation {approximation!r}: used as 'none'"
    merged, inverse = np.unique(points, axis=0, return_inverse=True)
    merged_faces = inverse.reshape(-1)[faces]
    watertight, consistent = watertight_and_consistent(merged, merged_faces)
    if watertight and consistent:
        kind = "mesh(convexDecomposition)" if approximation == "convexDecomposition" else "mesh"
        return MeshCollider(approximation, "mesh", kind, note, merged, merged_faces)
    if approximation == "convexDecomposition":
        return _component_hulls(merged, merged_faces, approximation)
    why = "mesh not closed (not watertight)" if not watertight else "mesh winding inconsistent"
    return _hulled(points, approximation, "convex_hull(open_mesh)", _join(note, why + ": convex hull used"))


def mesh_approximation(prim: Usd.Prim, time=Usd.TimeCode.Default()) -> str:
    """The effective ``physics:approximation`` token of a mesh ('none' when unauthored)."""
    value = typed_read.value(prim.GetAttribute("physics:approximation"), "token", time=time)
    return value or "none"


def _local_mesh(prim: Usd.Prim, time):
    """The mesh's points and triangles at ``time``; a mesh authored only as time samples is read
    at its earliest sample (as the mass API's callers see it)."""
    local = read_mesh(prim, time)
    if local is None and time == Usd.TimeCode.Default() and UsdGeom.Mesh(prim).GetPointsAttr().GetNumTimeSamples():
        local = read_mesh(prim, Usd.TimeCode.EarliestTime())
    return local


class ColliderModels:
    """The mesh colliders of one stage read, each built once: an instance proxy shares its
    prototype's model; collision and mass ask the same store."""

    def __init__(self, time=Usd.TimeCode.Default()):
        self.time = time
        self._models: dict[tuple[str, str], MeshCollider | None] = {}

    def mesh(self, prim: Usd.Prim) -> MeshCollider | None:
        """The model of a mesh collider prim, None when its data is malformed or empty."""
        approximation = mesh_approximation(prim, self.time)
        source = prim.GetPrimInPrototype() if prim.IsInstanceProxy() else prim
        key = (str(source.GetPath()), approximation)
        if key not in self._models:
            local = _local_mesh(source, self.time)
            self._models[key] = None if local is None else mesh_collider(local[0], local[1], approximation)
        return self._models[key]
