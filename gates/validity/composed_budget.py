"""Budgets on the *composed* stage, measured inside the validity gate's capped worker.

Prim and point budgets on authored specs do not bound composition: 22 prim specs
that reference each other in a binary tree compose 2^21 prims, and one 100k-triangle
mesh referenced 256 times composes 25M triangles. Grading such a stage would exhaust
the grading process long before any check runs. So the worker composes the stage
first and counts what the grade would walk:

* ``prims``: composed prims, instance proxies expanded (the snapshot traverses them);
* ``instances``: instanceable composed prims (each one multiplies its prototype);
* ``points``: the length of every point-based prim's ``points`` (default value, else
  the earliest time sample: what the snapshot reads), instances expanded;
* ``triangles``: the triangles of every mesh's faces (a face of n vertices: n - 2).

Prims are counted by a Pcp walk, one prim index at a time, that stops as soon as the
budget is crossed: a stage of 2^21 prims costs the budget's worth of work, never its
full composition. Only a stage within the prim budget is opened as a ``Usd.Stage``
to count geometry (again stopping at the budget).

A budget is sized from the reference, like the correspondence's flood rule, and
bounded absolutely (the resource limits' ``max_composed_*`` fields, which a profile
may lower or raise):

    budget = min(absolute, FACTOR x reference count + SLACK)

The worker (worker.py) runs this after every layer parsed and every dependency was found
inside the package; pxr is imported only inside the counting functions.
"""
from __future__ import annotations

from dataclasses import dataclass

# what -> (factor, slack): a repair may restructure an asset, never multiply it.
SIZING = {
    "prims": (10, 1_000),
    "instances": (10, 100),
    "points": (4, 100_000),
    "triangles": (4, 100_000),
}
COUNTED = tuple(SIZING)


@dataclass
class Counts:
    prims: int = 0
    instances: int = 0
    points: int = 0
    triangles: int = 0
    over: str | None = None     # the first budget crossed, if any
    layers: list | None = None  # the files the composed stage uses (None: not composed to the end)

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in COUNTED}


def budgets(reference: dict | None, absolute: dict) -> dict:
    """The candidate's budgets: sized from the reference's counts when known, never above `absolute`."""
    found = {}
    for name, (factor, slack) in SIZING.items():
        cap = int(absolute[name])
        found[name] = cap if reference is None else min(cap, factor * int(reference[name]) + slack)
    return found


def count(root_layer: str, limits: dict, selections: dict | None = None) -> Counts:
    """Compose `root_layer` (with the case's variant `selections` in its session layer, as the
    grade composes it) and count, stopping at the first of `limits` crossed."""
    counts = Counts()
    _count_prims(root_layer, limits, counts, selections or {})
    if counts.over is None:
        _count_geometry(root_layer, limits, counts, selections or {})
    return counts


def _count_prims(root_layer: str, limits: dict, counts: Counts, selections: dict) -> None:
    from pxr import Pcp, Sdf

    from usd_repair_verifier.stage_snapshot.variant_selections import session_layer

    layer = Sdf.Layer.FindOrOpen(root_layer)
    stack = (Pcp.LayerStackIdentifier(layer, session_layer(selections)) if selections
             else Pcp.LayerStackIdentifier(layer))
    cache = Pcp.Cache(stack, "usd", True)
    stack = [Sdf.Path.absoluteRootPath]
    while stack:
        path = stack.pop()
        index, _ = cache.ComputePrimIndex(path)
        if index.hasAnyPayloads and not cache.IsPayloadIncluded(path):
            # The grade opens the stage with every payload loaded: so does this walk.
            cache.RequestPayloads([path], [])
            index, _ = cache.ComputePrimIndex(path)
        if path != Sdf.Path.absoluteRootPath:
            counts.prims += 1
            counts.instances += bool(index.IsInstanceable())
            for name in ("prims", "instances"):
                if getattr(counts, name) > limits[name]:
                    counts.over = name
                    return
        names, _ = index.ComputePrimChildNames()
        stack.extend(path.AppendChild(name) for name in reversed(names))


def _count_geometry(root_layer: str, limits: dict, counts: Counts, selections: dict) -> None:
    from pxr import Usd, UsdGeom

    from usd_repair_verifier.stage_snapshot.variant_selections import open_selected, used_layer_paths

    stage = open_selected(root_layer, selections)
    counts.layers = used_layer_paths(stage)
    for prim in Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies()):
        if not prim.IsA(UsdGeom.PointBased):
            continue
        counts.points += _length(_value(UsdGeom.PointBased(prim).GetPointsAttr()))
        if prim.IsA(UsdGeom.Mesh):
            counts.triangles += _triangles(_value(UsdGeom.Mesh(prim).GetFaceVertexCountsAttr()))
        for name in ("points", "triangles"):
            if getattr(counts, name) > limits[name]:
                counts.over = name
                return


def _value(attr):
    """What the snapshot reads: the default, else the earliest time sample."""
    from pxr import Usd

    if not attr:
        return None
    value = attr.Get()
    return value if value is not None else attr.Get(Usd.TimeCode.EarliestTime())


def _length(value) -> int:
    try:
        return len(value)
    except TypeError:  # a wrong-typed points attribute: nothing the grade would tessellate
        return 0


def _triangles(face_counts) -> int:
    import numpy as np

    try:
        faces = np.asarray(face_counts, dtype=np.int64).ravel()
    except (TypeError, ValueError):  # wrong-typed: the grade tessellates nothing from it
        return 0
    return int(np.clip(faces - 2, 0, None).sum())


def refusal(counts: Counts, limits: dict, reference: dict | None) -> str:
    """Why a stage that crossed a budget is refused, with the counts."""
    name = counts.over
    factor, slack = SIZING[name]
    sized = (f"{factor} x the reference's {reference[name]} + {slack}" if reference is not None
             else "the absolute limit")
    seen = ", ".join(f"{counts.as_dict()[n]} {n}" for n in COUNTED)
    return (f"the composed stage has more than {limits[name]} {name} (budget: {sized}, at most the absolute "
            f"limit max_composed_{name}); counted so far: {seen}; refused before the grade composes it")
