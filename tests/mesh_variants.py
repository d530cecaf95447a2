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


def _split_triangles(prim, points, indices) -> None:
    """_retriangulate_one for a mesh of triangles only, vectorized (real robots' meshes)."""
    m = len(indices) // 3
    corner = np.arange(3 * m).reshape(m, 3)
    tri = indices.reshape(m, 3)
    new_index = len(points) + np.arange(m)
    k, k1 = np.arange(3), (np.arange(3) + 1) % 3
    faces = np.stack([tri[:, k], tri[:, k1], np.repeat(new_index[:, None], 3, axis=1)], axis=2).reshape(-1, 3)
    corner_i = np.zeros((m, 3, 3, 3), dtype=np.int64)     # face, sub-triangle, its corner, sources
    corner_w = np.zeros((m, 3, 3, 3))
    corner_i[:, :, 0, 0], corner_i[:, :, 1, 0] = corner[:, k], corner[:, k1]
    corner_w[:, :, 0, 0] = corner_w[:, :, 1, 0] = 1.0
    corner_i[:, :, 2, :] = corner[:, None, :]
    corner_w[:, :, 2, :] = 1.0 / 3.0
    point_i = np.concatenate([np.stack([np.arange(len(points))] * 3, axis=1), tri])
    point_w = np.concatenate([np.tile([1.0, 0.0, 0.0], (len(points), 1)), np.full((m, 3), 1.0 / 3.0)])
    _write_mesh(prim, np.concatenate([points, points[tri].mean(axis=1)]), np.full(3 * m, 3), faces.reshape(-1),
                {"point": (point_w, point_i), "face": np.repeat(np.arange(m), 3),
                 "corner": (corner_w.reshape(-1, 3), corner_i.reshape(-1, 3))})


def _retriangulate_one(prim) -> None:
    """Triangles split at their centroid; other polygons fanned from their second corner."""
    _, points, counts, indices = _topology(prim)
    if len(counts) and (counts == 3).all():
        return _split_triangles(prim, points, indices)
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


# --------------------------------------------------------------------------- prims split, merged


def _copy_prim(stage: Usd.Stage, prim: Usd.Prim, path: Sdf.Path) -> Usd.Prim:
    """A new prim of the same type with the same composed attributes, relationships and schemas."""
    new = stage.DefinePrim(path, prim.GetTypeName())
    schemas = prim.GetPrimTypeInfo().GetAppliedAPISchemas()
    if schemas:
        new.SetMetadata("apiSchemas", Sdf.TokenListOp.CreateExplicit(list(schemas)))
    for attr in prim.GetAttributes():
        if attr.HasAuthoredValue():
            new.CreateAttribute(attr.GetName(), attr.GetTypeName(), attr.IsCustom(), attr.GetVariability()).Set(attr.Get())
    for rel in prim.GetRelationships():
        if rel.HasAuthoredTargets():
            new.CreateRelationship(rel.GetName(), rel.IsCustom()).SetTargets(rel.GetTargets())
    return new


def _keep_faces(prim: Usd.Prim, keep: np.ndarray) -> None:
    _, points, counts, indices = _topology(prim)
    starts = np.cumsum(counts) - counts
    corners = np.concatenate([np.arange(starts[f], starts[f] + counts[f]) for f in keep])
    _write_mesh(prim, points, counts[keep], indices[corners],
                {"point": np.arange(len(points)), "face": keep, "corner": corners})


def split(src: Path, dst: Path, count: int = 1) -> Path:
    """The `count` largest visible meshes (not colliders) each split into two of the same body."""
    stage = _open_with_edits(src, dst)
    meshes = sorted(visible_meshes(stage), key=lambda p: -len(UsdGeom.Mesh(p).GetFaceVertexCountsAttr().Get()))
    for path in [p.GetPath() for p in meshes[:count]]:
        prim = stage.GetPrimAtPath(path)
        faces = len(UsdGeom.Mesh(prim).GetFaceVertexCountsAttr().Get())
        other = _copy_prim(stage, prim, path.GetParentPath().AppendChild(path.name + "_part2"))
        _keep_faces(other, np.arange(faces // 2, faces))
        _keep_faces(stage.GetPrimAtPath(path), np.arange(faces // 2))   # defining a sibling expired `prim`
    _save(stage)
    return dst


def _binding(prim) -> str:
    material, _ = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial()
    return str(material.GetPath()) if material else ""


def mergeable_pairs(stage: Usd.Stage) -> list[tuple[Usd.Prim, Usd.Prim]]:
    """Sibling visible meshes (not colliders) with the same material, purpose and primvars (the
    constant ones, such as an unbound part's display colour, equal)."""
    by_parent: dict = {}
    for prim in visible_meshes(stage):
        # the same look: the same bound material, and the same constant primvars (an unbound
        # part's display colour and opacity are what a renderer draws it with)
        constants = tuple(sorted((a.GetName(), str(v)) for a, i, v, _ in _primvars(prim) if i == "constant"))
        key = (str(prim.GetParent().GetPath()), _binding(prim), UsdGeom.Imageable(prim).ComputePurpose(),
               tuple(sorted((a.GetName(), i) for a, i, _, _ in _primvars(prim))), constants)
        by_parent.setdefault(key, []).append(prim)
    return [(group[0], group[1]) for group in by_parent.values() if len(group) >= 2]


def merged(src: Path, dst: Path, count: int = 1) -> Path:
    """`count` pairs of sibling meshes merged: the second's points carried into the first's frame,
    its faces and primvars appended, the second deactivated."""
    stage = _open_with_edits(src, dst)
    pairs = mergeable_pairs(stage)[:count]
    if not pairs:
        raise LookupError(f"{src}: no two sibling meshes share a material")
    cache = UsdGeom.XformCache()
    for keep, gone in pairs:
        to_keep = cache.GetLocalToWorldTransform(gone) * cache.GetLocalToWorldTransform(keep).GetInverse()
        m = np.array(to_keep)
        _, p1, c1, i1 = _topology(keep)
        _, p2, c2, i2 = _topology(gone)
        carried = p2 @ m[:3, :3] + m[3, :3]
        values = {a.GetName(): (v, i) for a, _, v, i in _primvars(gone)}
        saved = _primvars(keep)
        mesh = UsdGeom.Mesh(keep)
        mesh.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(np.concatenate([p1, carried]).astype(np.float32)))
        mesh.GetFaceVertexCountsAttr().Set(Vt.IntArray(np.concatenate([c1, c2]).tolist()))
        mesh.GetFaceVertexIndicesAttr().Set(Vt.IntArray(np.concatenate([i1, i2 + len(p1)]).tolist()))
        for attr, interpolation, v1, idx1 in saved:
            v2, idx2 = values[attr.GetName()]
            if interpolation == "constant":
                continue
            flat1 = np.asarray(v1)[np.asarray(idx1)] if idx1 is not None else np.asarray(v1)
            flat2 = np.asarray(v2)[np.asarray(idx2)] if idx2 is not None else np.asarray(v2)
            if attr.GetName() in ("normals", "primvars:normals"):
                flat2 = flat2 @ np.linalg.inv(m[:3, :3]).T
            _set_values(attr, v1, np.concatenate([flat1, flat2]))
            if idx1 is not None:
                UsdGeom.Primvar(attr).BlockIndices()
        gone.SetActive(False)
    _save(stage)
    return dst


# --------------------------------------------------------------------------- transforms, instances, hulls


def baked_scale(src: Path, dst: Path) -> Path:
    stage = _open_with_edits(src, dst)
    for prim in visible_meshes(stage, colliders=True):
        xf = UsdGeom.Xformable(prim)
        ops = [op for op in xf.GetOrderedXformOps() if op.GetOpType() == UsdGeom.XformOp.TypeScale]
        points = np.asarray(UsdGeom.Mesh(prim).GetPointsAttr().Get(), dtype=np.float64)
        if ops and ops[-1] == xf.GetOrderedXformOps()[-1]:
            scale = np.asarray(ops[-1].Get(), dtype=np.float64)
            UsdGeom.Mesh(prim).GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy((points * scale).astype(np.float32)))
            ops[-1].Set(Gf.Vec3f(1.0, 1.0, 1.0))
        elif not ops:
            UsdGeom.Mesh(prim).GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy((points * 2.0).astype(np.float32)))
            xf.AddScaleOp(opSuffix="unbaked").Set(Gf.Vec3f(0.5, 0.5, 0.5))
    _save(stage)
    return dst


def deinstanced(src: Path, dst: Path) -> Path:
    stage = _open_with_edits(src, dst)
    found = [p for p in Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies()) if p.IsInstance()]
    for prim in found:
        prim.SetInstanceable(False)
    _save(stage)
    return dst


def hull_mesh(src: Path, dst: Path) -> Path:
    """Hidden convex-hull mesh colliders replaced by an explicit mesh of their hull (the same
    solid, the approximation token kept)."""
    from scipy.spatial import ConvexHull, QhullError

    stage = _open_with_edits(src, dst)
    done = 0
    for prim in Usd.PrimRange.Stage(stage):
        if not (prim.IsA(UsdGeom.Mesh) and prim.HasAPI(UsdPhysics.CollisionAPI) and not is_visible(prim)):
            continue
        if prim.GetAttribute("physics:approximation").Get() != "convexHull":
            continue
        mesh = UsdGeom.Mesh(prim)
        points = np.asarray(mesh.GetPointsAttr().Get(), dtype=np.float64)
        try:
            hull = ConvexHull(points)
        except QhullError:   # a flat collider (hyq's frame plates) has no hull mesh to write
            continue
        used, faces = np.unique(hull.simplices, return_inverse=True)
        for primvar in UsdGeom.PrimvarsAPI(prim).GetPrimvarsWithAuthoredValues():   # sized for the old mesh
            primvar.GetAttr().Block()
            if primvar.IsIndexed():
                primvar.BlockIndices()
        mesh.GetNormalsAttr().Block()
        mesh.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(points[used].astype(np.float32)))
        mesh.GetFaceVertexCountsAttr().Set(Vt.IntArray([3] * len(hull.simplices)))
        mesh.GetFaceVertexIndicesAttr().Set(Vt.IntArray(faces.reshape(-1).tolist()))
        done += 1
    if not done:
        raise LookupError(f"{src}: no hidden convexHull mesh collider")
    _save(stage)
    return dst


# --------------------------------------------------------------------------- hostile: healthy colliders changed


def body_colliders(stage: Usd.Stage) -> list[Usd.Prim]:
    """Colliders of rigid bodies (not static ones), by path."""
    out = []
    for prim in Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies()):
        if prim.HasAPI(UsdPhysics.CollisionAPI) and not prim.IsInstanceProxy():
            parent = prim
            while parent and not parent.HasAPI(UsdPhysics.RigidBodyAPI):
                parent = parent.GetParent()
            if parent:
                out.append(prim)
    return out


def collider_changed(src: Path, dst: Path, how: str, pick=lambda colliders: colliders[0]) -> Path:
    """One healthy body collider (the first, unless `pick` says) `how`: "grown" (x1.5 about its
    own origin), "moved" (by a fifth of its size), "approximation" (convexHull -> boundingCube) or
    "bounding_sphere"."""
    stage = _open_with_edits(src, dst)
    candidates = body_colliders(stage)
    if how in ("approximation", "bounding_sphere"):
        candidates = [p for p in candidates if p.IsA(UsdGeom.Mesh)]
    if not candidates:
        raise LookupError(f"{src}: no {'mesh ' if how in ('approximation', 'bounding_sphere') else ''}collider on a body")
    prim = pick(candidates)
    xf = UsdGeom.Xformable(prim)
    if how == "grown":
        xf.AddScaleOp(opSuffix="grown").Set(Gf.Vec3f(1.5, 1.5, 1.5))
    elif how == "moved":   # by a fifth of its largest world size, in its parent's frame
        box = UsdGeom.BBoxCache(Usd.TimeCode.Default(), ["default", "render", "proxy", "guide"]).ComputeWorldBound(prim)
        size = box.ComputeAlignedRange().GetSize()
        ops = xf.GetOrderedXformOps()
        op = xf.AddTranslateOp(opSuffix="moved")
        op.Set(Gf.Vec3d(0.2 * max(size), 0.0, 0.0))
        xf.SetXformOpOrder([op] + ops)
    else:
        UsdPhysics.MeshCollisionAPI.Apply(prim).CreateApproximationAttr(
            "boundingCube" if how == "approximation" else "boundingSphere")
    _save(stage)
    return dst


# --------------------------------------------------------------------------- units


GPRIM_LENGTHS = ("radius", "height", "size", "width", "length", "radiusTop", "radiusBottom")
LENGTHS = ("physics:localPos0", "physics:localPos1", "physics:centerOfMass", "points", "extent", "extentsHint")


def _in_centimetres(prim: Usd.Prim, attr: Usd.Attribute, value):
    name = attr.GetName()
    if name.startswith("xformOp:translate") or name in LENGTHS or (prim.IsA(UsdGeom.Gprim) and name in GPRIM_LENGTHS):
        if name == "extentsHint":   # FLT_MAX sentinels mark empty purposes: kept as they are
            a = np.asarray(value)
            with np.errstate(over="ignore"):
                return type(value).FromNumpy(np.where(np.abs(a) < 1e30, a * 100.0, a).astype(a.dtype))
        if hasattr(type(value), "FromNumpy"):   # a Vt array
            return type(value).FromNumpy(np.ascontiguousarray(np.asarray(value) * 100.0, dtype=np.asarray(value).dtype))
        return value * 100.0
    if name.startswith("xformOp:transform"):
        m = Gf.Matrix4d(value)
        m.SetTranslateOnly(m.ExtractTranslation() * 100.0)
        return m
    if name == "physics:diagonalInertia":
        return value * 1e4
    if name == "physics:density":
        return value * 1e-6
    if name == "physics:gravityMagnitude":
        return value * 100.0
    if name in ("physics:lowerLimit", "physics:upperLimit") and prim.IsA(UsdPhysics.PrismaticJoint):
        return value * 100.0
    if name.startswith(("drive:linear:physics:targetPosition", "limit:trans")) and "Limit" not in name:
        return value * 100.0
    return None


def centimetres(src: Path, dst: Path) -> Path:
    """A flattened copy of the package (one .usdc root layer, the same non-USD files) authored in
    centimetres: every length the verifier reads (points, extents, translations, primitive sizes,
    joint frames, prismatic limits, centres of mass) x100, inertia x1e4, density x1e-6, gravity
    x100. Simulator attributes of other namespaces (`newton:`, `mjc:`, `urdf:`) are kept as they
    are: their units are their simulators' business, and the verifier compares them as authored."""
    root = root_layer_of(src)
    stage = Usd.Stage.Open(str(root), Usd.Stage.LoadAll)
    flat = stage.Flatten()
    prefix = str(src.resolve()) + "/"
    UsdUtils.ModifyAssetPaths(flat, lambda path: "./" + path[len(prefix):] if path.startswith(prefix) else path)
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    for path in src.rglob("*"):
        if path.is_file() and path.suffix.lower() not in (".usd", ".usda", ".usdc", ".usdz"):
            (dst / path.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dst / path.relative_to(src))
    out = dst / (root.stem + ".usdc")
    flat.Export(str(out))
    cm = Usd.Stage.Open(str(out), Usd.Stage.LoadAll)
    for prim in cm.TraverseAll():
        for attr in prim.GetAttributes():
            if attr.HasAuthoredValue():
                new = _in_centimetres(prim, attr, attr.Get())
                if new is not None:
                    attr.Set(new)
    UsdGeom.SetStageMetersPerUnit(cm, 0.01)
    cm.GetRootLayer().Save()
    return dst
