"""Mesh-equivalent and hostile variants of any package, for the mesh and real-robot tests.

Each variant copies the package and authors its edits in one new layer, `./variant/edits.usdc`,
the root layer's strongest sublayer (heavy meshes stay binary; the package's own layers are
kept). Equivalents change how the same surfaces and solids are written, never what a renderer or
simulator sees:
- `reordered`: every visible mesh's points and faces in another order, each face's corners
  rotated (winding kept), every primvar (and normals) permuted to match;
- `retriangulated`: every triangle split at its centroid into three, quads by the other diagonal
  (primvars interpolated: exact for the linear interpolation a renderer uses);
- `split`: a visible mesh split into two meshes of the same body (the same transform, material
  and primvars); `merged`: two sibling meshes of one body with the same material made one;
- `baked_scale`: every visible mesh's scale op baked into its points (or, where it has none,
  points doubled under a new 0.5 scale op);
- `deinstanced`: every instance made a plain prim; `hull_mesh`: every hidden convex-hull mesh
  collider's points and faces replaced by its convex hull's (the same solid);
- `centimetres`: `centimetres(src, dst)` rewrites a flattened copy in centimetres.
Hostiles change a healthy collider: `collider_grown`, `collider_moved`, `approximation_changed`
(convexHull -> boundingCube) and `bounding_sphere`.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, UsdUtils, Vt

from usd_repair_verifier.authoring.inject import root_layer_of
from usd_repair_verifier.stage_snapshot.parts import is_visible

EDITS = "./variant/edits.usdc"


def _open_with_edits(src: Path, dst: Path) -> Usd.Stage:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=True)
    (dst / "variant").mkdir()
    Sdf.Layer.CreateNew(str(dst / "variant" / "edits.usdc")).Save()
    root = Sdf.Layer.FindOrOpen(str(root_layer_of(dst)))
    root.subLayerPaths.insert(0, EDITS)
    root.Save()
    stage = Usd.Stage.Open(str(root_layer_of(dst)), Usd.Stage.LoadAll)
    stage.SetEditTarget(Usd.EditTarget(Sdf.Layer.FindOrOpen(str(dst / "variant" / "edits.usdc"))))
    return stage


def _save(stage: Usd.Stage) -> None:
    stage.GetEditTarget().GetLayer().Save()


def visible_meshes(stage: Usd.Stage, colliders: bool = False) -> list[Usd.Prim]:
    """Visible meshes (not colliders unless asked), by path, instance proxies included."""
    return [p for p in Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies())
            if p.IsA(UsdGeom.Mesh) and not p.IsInstanceProxy() and is_visible(p)
            and (colliders or not p.HasAPI(UsdPhysics.CollisionAPI))]


# --------------------------------------------------------------------------- topology edits


def _primvars(prim: Usd.Prim) -> list[tuple[Usd.Attribute, str, object, object]]:
    """(attribute, interpolation, values, indices or None) of every authored primvar and of
    `normals`; indices are edited instead of values where a primvar has them."""
    out = []
    for pv in UsdGeom.PrimvarsAPI(prim).GetPrimvarsWithAuthoredValues():
        indices = pv.GetIndices() if pv.IsIndexed() else None
        out.append((pv.GetAttr(), pv.GetInterpolation(), pv.Get(), indices))
    normals = UsdGeom.Mesh(prim).GetNormalsAttr()
    if normals.HasAuthoredValue():
        out.append((normals, UsdGeom.Mesh(prim).GetNormalsInterpolation(), normals.Get(), None))
    return out


def _set_values(attr, old, new) -> None:
    attr.Set(type(old).FromNumpy(np.ascontiguousarray(new, dtype=np.asarray(old).dtype)))


def _set_primvar(prim, attr, interpolation, values, indices, pick) -> None:
    """Rebuild one primvar for new topology: `pick[kind]` maps new elements to old ones
    ("point", "face", "corner": arrays of old indices, or (weights (n, k), indices (n, k)) for
    interpolated ones)."""
    kind = {"vertex": "point", "varying": "point", "uniform": "face", "faceVarying": "corner"}.get(interpolation)
    if kind is None or kind not in pick:
        return
    chosen = pick[kind]
    primvar = UsdGeom.Primvar(attr) if UsdGeom.Primvar.IsPrimvar(attr) else None
    if isinstance(chosen, tuple):   # interpolated: written out flat
        flat = np.asarray(values)[np.asarray(indices)] if indices is not None else np.asarray(values)
        weights, idx = chosen
        _set_values(attr, values, np.einsum("nk,nk...->n...", weights, flat[idx]))
        if indices is not None:
            primvar.BlockIndices()
    elif indices is not None:
        primvar.SetIndices(Vt.IntArray(np.asarray(indices)[np.asarray(chosen)].tolist()))
    else:
        _set_values(attr, values, np.asarray(values)[np.asarray(chosen)])


def _topology(prim):
    mesh = UsdGeom.Mesh(prim)
    counts = np.asarray(mesh.GetFaceVertexCountsAttr().Get(), dtype=np.int64)
    indices = np.asarray(mesh.GetFaceVertexIndicesAttr().Get(), dtype=np.int64)
    return mesh, np.asarray(mesh.GetPointsAttr().Get(), dtype=np.float64), counts, indices


def _write_mesh(prim, points, counts, indices, pick) -> None:
    saved = _primvars(prim)
    mesh = UsdGeom.Mesh(prim)
    mesh.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(np.asarray(points, dtype=np.float32)))
    mesh.GetFaceVertexCountsAttr().Set(Vt.IntArray(np.asarray(counts).tolist()))
    mesh.GetFaceVertexIndicesAttr().Set(Vt.IntArray(np.asarray(indices).tolist()))
    for attr, interpolation, values, idx in saved:
        _set_primvar(prim, attr, interpolation, values, idx, pick)


def _reorder_one(prim, rng) -> None:
    _, points, counts, indices = _topology(prim)
    starts = np.cumsum(counts) - counts
    point_order = rng.permutation(len(points))            # new point i is old point_order[i]
    new_of_old = np.argsort(point_order)
    face_order = rng.permutation(len(counts))
    corners = []
    for f in face_order:
        shift = int(rng.integers(counts[f])) if counts[f] else 0
        corners.extend(starts[f] + (np.arange(counts[f]) + shift) % counts[f])
    corners = np.asarray(corners, dtype=np.int64)
    _write_mesh(prim, points[point_order], counts[face_order], new_of_old[indices[corners]],
                {"point": point_order, "face": face_order, "corner": corners})


def _retriangulate_one(prim) -> None:
    """Triangles split at their centroid; other polygons fanned from their second corner."""
    _, points, counts, indices = _topology(prim)
    starts = np.cumsum(counts) - counts
    new_points, faces, corners, point_src, face_src = [points], [], [], [], []
    extra = len(points)
    for f, (s, n) in enumerate(zip(starts, counts)):
        if n == 3:
            c = np.arange(s, s + 3)
            point_src.append(indices[c])
            new_points.append(points[indices[c]].mean(axis=0)[None])
            for k in range(3):
                faces.append((indices[c[k]], indices[c[(k + 1) % 3]], extra))
                corners.append(((c[k],), (c[(k + 1) % 3],), tuple(c)))
                face_src.append(f)
            extra += 1
        elif n > 3:
            order = np.roll(np.arange(s, s + n), -1)
            for k in range(1, n - 1):
                faces.append((indices[order[0]], indices[order[k]], indices[order[k + 1]]))
                corners.append(((order[0],), (order[k],), (order[k + 1],)))
                face_src.append(f)
    m = len(faces)
    corner_w, corner_i = np.zeros((3 * m, 3)), np.zeros((3 * m, 3), dtype=np.int64)
    for row, triple in enumerate(c for face in corners for c in face):
        corner_w[row, :len(triple)] = 1.0 / len(triple)
        corner_i[row, :len(triple)] = triple
    point_w = np.zeros((extra, 3))
    point_i = np.zeros((extra, 3), dtype=np.int64)
    point_w[:len(points), 0] = 1.0
    point_i[:len(points), 0] = np.arange(len(points))
    if point_src:
        point_w[len(points):] = 1.0 / 3.0
        point_i[len(points):] = np.asarray(point_src)
    _write_mesh(prim, np.concatenate(new_points), np.full(m, 3), np.asarray(faces).reshape(-1),
                {"point": (point_w, point_i), "face": np.asarray(face_src), "corner": (corner_w, corner_i)})


def reordered(src: Path, dst: Path, seed: int = 11) -> Path:
    stage = _open_with_edits(src, dst)
    rng = np.random.default_rng(seed)
    for prim in visible_meshes(stage, colliders=True):
        _reorder_one(prim, rng)
    _save(stage)
    return dst


def retriangulated(src: Path, dst: Path) -> Path:
    stage = _open_with_edits(src, dst)
    for prim in visible_meshes(stage, colliders=True):
        _retriangulate_one(prim)
    _save(stage)
    return dst
