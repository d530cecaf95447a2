"""Packages that are the same asset as their source: another namespace, layer layout, file format,
unit of length or prim order. The verifier grades on composed opinions, by structure, pose and
shape, in SI, so each must grade exactly as its source (tests/test_family_conformance.py).
"""
from __future__ import annotations

import re
from pathlib import Path

from pxr import Gf, Sdf, Usd, UsdGeom

from usd_repair_verifier.authoring.inject import root_layer_of

from tests import variants


def flattened(src: Path, dst: Path) -> Path:
    """Every layer in one."""
    return variants.flatten(src, dst)


def renamed_namespace(src: Path, dst: Path) -> Path:
    """One layer, the top prim and every prim below it one level down renamed."""
    stage = Usd.Stage.Open(str(root_layer_of(src)), Usd.Stage.LoadAll)
    top = stage.GetDefaultPrim() or next(iter(stage.GetPseudoRoot().GetChildren()))
    renames = {top.GetName(): f"Renamed{top.GetName().capitalize()}"}
    renames |= {child.GetName(): f"{child.GetName()}_renamed" for child in top.GetChildren()}
    del stage
    return variants.rename_namespace(src, dst, renames)


def binary_layer(src: Path, dst: Path) -> Path:
    """One layer, in the binary crate format (.usdc)."""
    variants.flatten(src, dst)
    flat = root_layer_of(dst)
    layer = Sdf.Layer.FindOrOpen(str(flat))
    layer.Export(str(flat.with_suffix(".usdc")))
    flat.unlink()
    return dst


def reordered_prims(src: Path, dst: Path) -> Path:
    """One layer, every prim's children (and the top-level prims) in the reverse order."""
    variants.flatten(src, dst)
    layer = Sdf.Layer.FindOrOpen(str(root_layer_of(dst)))

    def reverse(path: Sdf.Path) -> None:
        spec = layer.GetPrimAtPath(path) if path.IsPrimPath() else None
        if spec is not None and len(spec.nameChildren) > 1:
            spec.SetInfo("primOrder", [child.name for child in reversed(spec.nameChildren)])

    layer.Traverse(Sdf.Path.absoluteRootPath, reverse)
    layer.rootPrimOrder = [p.name for p in reversed(layer.rootPrims)]
    layer.Save()
    return dst


# Each attribute with a length in it, as the power of the length unit it carries. Only values the
# stage stores in its own units are scaled: degrees, kilograms and dimensionless numbers are not.
LENGTH_POWER = {
    "points": 1, "extent": 1, "radius": 1, "radius1": 1, "radius2": 1, "height": 1, "size": 1, "width": 1,
    "length": 1, "positions": 1, "physics:localPos0": 1, "physics:localPos1": 1, "physics:centerOfMass": 1,
    "physics:density": -3, "physics:diagonalInertia": 2, "physics:velocity": 1, "physics:gravityMagnitude": 1,
    "physics:minDistance": 1, "physics:maxDistance": 1, "physics:breakForce": 1, "physics:breakTorque": 2,
}
# Drives: (linear, angular) powers. A linear stiffness is force per length (the length cancels);
# an angular one is torque per degree.
DRIVE_POWER = {"targetPosition": (1, 0), "targetVelocity": (1, 0), "stiffness": (0, 2), "damping": (0, 2),
               "maxForce": (1, 2)}
LINEAR_AXES = ("linear", "transX", "transY", "transZ", "distance")


def _power(prim: Sdf.PrimSpec, name: str) -> int:
    if name in LENGTH_POWER:
        return LENGTH_POWER[name]
    if name.startswith("xformOp:translate") or name.startswith("xformOp:pivot"):
        return 1
    if name in ("physics:lowerLimit", "physics:upperLimit"):
        return 1 if prim.typeName == "PhysicsPrismaticJoint" else 0
    found = re.fullmatch(r"limit:(\w+):physics:(low|high)", name)
    if found:
        return 1 if found.group(1) in LINEAR_AXES else 0
    found = re.fullmatch(r"drive:(\w+):physics:(\w+)", name)
    if found and found.group(2) in DRIVE_POWER:
        linear = found.group(1) in LINEAR_AXES or (found.group(1) == "linear")
        return DRIVE_POWER[found.group(2)][0 if linear else 1]
    return 0


def _scaled(value, factor: float):
    if isinstance(value, Sdf.ValueBlock) or value is None:
        return value
    if isinstance(value, (Gf.Matrix4d, Gf.Matrix4f)):
        out = type(value)(value)
        out.SetTranslateOnly(value.ExtractTranslation() * factor)
        return out
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return type(value)(value * factor) if isinstance(value, float) else value * factor
    if hasattr(value, "__len__") and not isinstance(value, str):
        try:
            return type(value)([_scaled(v, factor) for v in value])
        except TypeError:
            return value * factor
    return value * factor


def other_units(src: Path, dst: Path, meters_per_unit: float | None = None) -> Path:
    """One layer, every length in another unit: metersPerUnit 0.01 (or 1 for a stage already in
    centimetres), each length-valued attribute scaled to keep the same asset in SI."""
    variants.flatten(src, dst)
    layer = Sdf.Layer.FindOrOpen(str(root_layer_of(dst)))
    stage = Usd.Stage.Open(layer)
    before = UsdGeom.GetStageMetersPerUnit(stage)
    after = meters_per_unit or (1.0 if abs(before - 0.01) < 1e-12 else 0.01)
    factor = before / after

    def scale(path: Sdf.Path) -> None:
        if not path.IsPrimPath():
            return
        prim = layer.GetPrimAtPath(path)
        for attribute in prim.attributes:
            power = _power(prim, attribute.name)
            if power == 0:
                continue
            k = factor ** power
            if attribute.HasDefaultValue():
                attribute.default = _scaled(attribute.default, k)
            for time in layer.ListTimeSamplesForPath(attribute.path):
                layer.SetTimeSample(attribute.path, time, _scaled(layer.QueryTimeSample(attribute.path, time), k))

    layer.Traverse(Sdf.Path.absoluteRootPath, scale)
    UsdGeom.SetStageMetersPerUnit(stage, after)
    layer.Save()
    return dst


EQUIVALENT = {
    "renamed_namespace": renamed_namespace,
    "flattened": flattened,
    "binary_layer": binary_layer,
    "other_units": other_units,
    "reordered_prims": reordered_prims,
}
