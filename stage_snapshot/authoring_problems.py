"""Authoring errors in the values the snapshot reads: wrong types, shapes, non-finite
numbers, and properties whose default and start-time value disagree.

`problems(stage)` walks the composed stage once (instance proxies included) and, for
every authored attribute the snapshot reads (`KINDS_BY_NAME`, plus drive and limit
attributes by suffix), runs the typed reader (`typed_read.read`). It also records:

* ambiguous time samples (or a spline): a physics or geometry property whose default (what the
  UsdPhysics parser and Newton's importer read) and whose value at the stage's start
  time code (what anything that evaluates the stage at a time sees) disagree. A repair
  authored as a default under broken time samples is such a property;
* a prim transform that is not finite, or that differs between default and start time.

The result maps a prim path to ((attribute, reason), ...). `usd_repair_verifier.checks.authoring_errors` turns the
candidate's problems into a failing component of every check that reads the property.
"""
from __future__ import annotations

import numpy as np
from pxr import Usd, UsdGeom

from .typed_read import read

TRANSFORM = "xformOp"   # the attribute name recorded for a prim's local transform

KINDS_BY_NAME = {
    # mass
    "physics:mass": "real", "physics:density": "real", "physics:centerOfMass": "vec3",
    "physics:diagonalInertia": "vec3", "physics:principalAxes": "quat",
    # bodies
    "physics:rigidBodyEnabled": "bool", "physics:kinematicEnabled": "bool",
    "physics:velocity": "vec3", "physics:angularVelocity": "vec3",
    # colliders
    "physics:collisionEnabled": "bool", "physics:approximation": "token",
    # joints
    "physics:localPos0": "vec3", "physics:localPos1": "vec3", "physics:localRot0": "quat",
    "physics:localRot1": "quat", "physics:axis": "token", "physics:lowerLimit": "bound",
    "physics:upperLimit": "bound", "physics:jointEnabled": "bool", "physics:excludeFromArticulation": "bool",
    "physics:breakForce": "bound", "physics:breakTorque": "bound", "physics:minDistance": "real",
    "physics:maxDistance": "real",
    # physics materials
    "physics:staticFriction": "real", "physics:dynamicFriction": "real", "physics:restitution": "real",
    # geometry
    "points": "points", "faceVertexCounts": "ints", "faceVertexIndices": "ints", "radius": "real",
    "radiusTop": "real", "radiusBottom": "real", "height": "real", "size": "real", "width": "real",
    "length": "real", "axis": "token", "visibility": "token", "purpose": "token",
    # physics scenes: an unauthored magnitude is -inf (the schema's "Earth's gravity")
    "physics:gravityDirection": "vec3", "physics:gravityMagnitude": "bound",
    # appearance of a part no material is bound to
    "primvars:displayColor": "colors", "primvars:displayOpacity": "reals",
    "primvars:displayColor:indices": "ints", "primvars:displayOpacity:indices": "ints",
}
# Indexed primvars whose indices must point into their values.
INDEXED = ("primvars:displayColor", "primvars:displayOpacity")
# Multiple-apply drive and limit APIs: drive:<dof>:physics:<name>, limit:<dof>:physics:<name>.
KINDS_BY_SUFFIX = {
    ":physics:targetPosition": "real", ":physics:targetVelocity": "real", ":physics:stiffness": "real",
    ":physics:damping": "real", ":physics:maxForce": "bound", ":physics:low": "bound", ":physics:high": "bound",
    ":physics:type": "token",
}


def kind_of(name: str) -> str | None:
    kind = KINDS_BY_NAME.get(name)
    if kind is None and name.startswith(("drive:", "limit:")):
        kind = next((k for suffix, k in KINDS_BY_SUFFIX.items() if name.endswith(suffix)), None)
    return kind


def problems(stage: Usd.Stage) -> dict[str, tuple[tuple[str, str], ...]]:
    start = Usd.TimeCode(stage.GetStartTimeCode())
    found: dict[str, list[tuple[str, str]]] = {}
    for prim in Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies()):
        mine = _attribute_problems(prim, start)
        if prim.IsA(UsdGeom.Xformable):
            mine += _transform_problems(prim, start)
        if mine:
            found[str(prim.GetPath())] = mine
    return {path: tuple(sorted(items)) for path, items in sorted(found.items())}


def _attribute_problems(prim: Usd.Prim, start: Usd.TimeCode) -> list[tuple[str, str]]:
    found = _index_problems(prim)
    flagged = {name for name, _ in found}
    for attr in prim.GetAuthoredAttributes():
        name = attr.GetName()
        kind = kind_of(name)
        if kind is None or name in flagged:
            continue
        default, why = read(attr, kind)
        if why:
            found.append((name, why))
            continue
        if not _timed(attr):
            continue
        timed, why = read(attr, kind, start)
        if why:
            found.append((name, f"at the start time {start.GetValue():g}: {why}"))
        elif not _same(default, timed):
            found.append((name, _disagree(default, timed, start)))
    return found


def _index_problems(prim: Usd.Prim) -> list[tuple[str, str]]:
    """An indexed display primvar whose indices fall outside its values (USD drops the value)."""
    found = []
    for name in INDEXED:
        values_attr, indices_attr = prim.GetAttribute(name), prim.GetAttribute(name + ":indices")
        if not (values_attr and indices_attr and indices_attr.HasAuthoredValue()):
            continue
        values, _ = read(values_attr, kind_of(name))
        indices, _ = read(indices_attr, "ints")
        if values is None or indices is None or not len(indices):
            continue              # a wrong type is the reader's problem, reported on its own
        if int(indices.min()) < 0 or int(indices.max()) >= len(values):
            found.append((name + ":indices", f"indices {int(indices.min())} to {int(indices.max())} do not all point "
                                             f"into the {len(values)} authored values"))
    return found


def _transform_problems(prim: Usd.Prim, start: Usd.TimeCode) -> list[tuple[str, str]]:
    xformable = UsdGeom.Xformable(prim)
    try:
        default = np.array(xformable.GetLocalTransformation(Usd.TimeCode.Default()), dtype=float)
    except Exception as error:  # a wrong-typed op makes USD refuse the transform
        return [(TRANSFORM, f"the local transform cannot be computed ({type(error).__name__})")]
    if not np.isfinite(default).all():
        return [(TRANSFORM, "the local transform is not finite")]
    # Even one time sample counts (USD calls that "not time varying"): it may disagree with the default.
    if not any(_timed(op.GetAttr()) for op in xformable.GetOrderedXformOps()):
        return []
    timed = np.array(xformable.GetLocalTransformation(start), dtype=float)
    if not np.allclose(default, timed, rtol=1e-6, atol=1e-9):
        return [(TRANSFORM, f"ambiguous time samples: the default local transform and the one at the start "
                            f"time {start.GetValue():g} disagree")]
    return []


def _timed(attr: Usd.Attribute) -> bool:
    """Time samples or a spline: a value at a time that may differ from the default."""
    return bool(attr.GetNumTimeSamples() or attr.HasSpline())


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-6, atol=1e-9))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and bool(np.allclose(a, b, rtol=1e-6, atol=1e-9))
    if isinstance(a, float) and isinstance(b, float):
        return bool(np.isclose(a, b, rtol=1e-6, atol=1e-9))
    return a == b


def _short(value) -> str:
    text = f"{len(value)} values" if isinstance(value, np.ndarray) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _disagree(default, timed, start: Usd.TimeCode) -> str:
    return (f"ambiguous time samples: default {_short(default)} but {_short(timed)} at the start time "
            f"{start.GetValue():g} (a simulator reading either sees a different asset)")
