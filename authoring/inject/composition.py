"""Composition fault: a sublayer, reference or payload of the package pointed at a file that does not exist."""
from __future__ import annotations

from pathlib import Path

from pxr import Sdf, Usd, UsdGeom, UsdPhysics

from usd_repair_verifier.profiles.families import InjectionError


def _package_layers(stage: Usd.Stage, package: Path) -> list[tuple[str, Sdf.Layer]]:
    out = []
    for layer in stage.GetUsedLayers():
        if layer.anonymous or not layer.realPath:
            continue
        try:
            rel = Path(layer.realPath).resolve().relative_to(package)
        except ValueError:
            continue
        # A strong reference: breaking an arc releases the layers only it brought in, and
        # a released layer's handle expires before the edit is undone.
        out.append((rel.as_posix(), Sdf.Layer.FindOrOpen(layer.identifier)))
    return sorted(out, key=lambda t: t[0])


def _arcs(layer: Sdf.Layer) -> list[tuple]:
    """(kind, where, list name, index, asset path) of every asset-valued composition arc of a layer."""
    arcs = [("sublayer", "", "subLayerPaths", i, p) for i, p in enumerate(layer.subLayerPaths)]
    paths = []
    layer.Traverse(Sdf.Path.absoluteRootPath,
                   lambda p: paths.append(p) if (p.IsPrimPath() or p.IsPrimVariantSelectionPath()) else None)
    for path in sorted(paths, key=str):
        spec = layer.GetObjectAtPath(path)
        if spec is None:
            continue
        for kind, proxy in (("reference", spec.referenceList), ("payload", spec.payloadList)):
            for which in ("explicitItems", "prependedItems", "appendedItems"):
                for i, item in enumerate(getattr(proxy, which)):
                    if item.assetPath:
                        arcs.append((kind, str(path), which, i, item.assetPath))
    return arcs


def _set_arc(layer: Sdf.Layer, arc: tuple, asset: str) -> None:
    kind, where, which, index, _ = arc
    if kind == "sublayer":
        paths = list(layer.subLayerPaths)
        paths[index] = asset
        layer.subLayerPaths = paths
        return
    spec = layer.GetObjectAtPath(Sdf.Path(where))
    proxy = spec.referenceList if kind == "reference" else spec.payloadList
    items = list(getattr(proxy, which))
    old = items[index]
    if kind == "reference":
        items[index] = Sdf.Reference(asset, old.primPath, old.layerOffset, old.customData)
    else:
        items[index] = Sdf.Payload(asset, old.primPath, old.layerOffset)
    setattr(proxy, which, items)


def _census(stage: Usd.Stage) -> tuple[int, int, int]:
    """(physics prims, gprims with geometry, prims) of the composed stage: what a broken arc may lose."""
    physics = gprims = prims = 0
    for p in Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies()):
        prims += 1
        if (p.HasAPI(UsdPhysics.RigidBodyAPI) or p.HasAPI(UsdPhysics.CollisionAPI) or p.IsA(UsdPhysics.Joint)
                or p.IsA(UsdPhysics.Scene) or p.HasAPI(UsdPhysics.MassAPI) or p.HasAPI(UsdPhysics.MaterialAPI)):
            physics += 1
        # A mesh whose points came through the broken arc keeps its prim but draws nothing: lost.
        if p.IsA(UsdGeom.Gprim) and (not p.IsA(UsdGeom.Mesh) or p.GetAttribute("points").HasAuthoredValue()):
            gprims += 1
    return physics, gprims, prims


def broken_asset_path(stage, target, rng, dirty) -> str:
    """One sublayer, reference or payload of a package layer pointed at a file that does not exist.

    Every arc is tried on the open stage (and undone); those that add a composition
    error qualify, and the choice (seeded) is among those that lose the fewest
    physics prims (bodies, colliders, joints, scenes, mass and physics-material
    prims), then gprims, then prims of any kind: the fault is a composition error,
    not a deleted asset. Textures are not composition arcs (a missing texture is no
    Pcp error): a package without any arc cannot take this fault.
    """
    root = Path(stage.GetRootLayer().realPath).resolve()
    package = root.parent
    base_errors = len(stage.GetCompositionErrors())
    base = _census(stage)
    candidates = []
    for rel, layer in _package_layers(stage, package):
        for arc in _arcs(layer):
            old = arc[4]
            stem = Path(old.split("[", 1)[0]).name or "asset"
            # A path to nothing made of the arc's own words (the file's folder repeated): no "missing_".
            folder = Path(old.split("[", 1)[0]).parent.name or Path(stem).stem
            missing, n = f"./{folder}/{stem}", 1
            while (Path(layer.realPath).parent / missing).exists() or missing == old:
                n += 1
                missing = "./" + "/".join([folder] * n + [stem])
            _set_arc(layer, arc, missing)
            try:
                errors = len(stage.GetCompositionErrors())
                after = _census(stage)
            finally:
                _set_arc(layer, arc, old)
            if errors > base_errors:
                loss = tuple(b - a for b, a in zip(base, after))
                candidates.append((loss, rel, layer, arc, missing))
    if not candidates:
        raise InjectionError("no sublayer, reference or payload in the package to break "
                             "(a missing texture is not a composition error)")
    least = min(c[0] for c in candidates)
    pool = [c for c in candidates if c[0] == least]
    loss, rel, layer, arc, missing = pool[rng.randrange(len(pool))]
    _set_arc(layer, arc, missing)
    dirty.add(layer)
    where = f" on {arc[1]}" if arc[1] else ""
    return (f"{arc[0]} @{arc[4]}@{where} in {rel} -> @{missing}@ "
            f"({loss[0]} physics prim(s), {loss[1]} gprim(s), {loss[2]} prim(s) lost)")

