"""What a simulator reads besides bodies, joints and parts: scenes and simulator attributes.

- Physics scenes: each `PhysicsScene`'s gravity as the UsdPhysics parser resolves it
  (an unauthored direction is minus the stage's up axis, an unauthored magnitude is
  Earth's gravity in stage units), as one world vector in m/s^2.
- Simulator attributes: every authored attribute in a physics namespace (`physics:`,
  `physx*`, `mjc:`, `newton:`, `drive:`, `limit:`, and any namespace the case's profile
  lists in `preserved_namespaces`) on the prims a simulator reads,
  keyed by the element they belong to. Values are plain and, where the UsdPhysics
  schema gives the attribute a unit, converted to SI, so two stages authored in other
  units compare equal. Attributes the check families already measure in their own
  terms (joint frames and limits, drives, mass, friction, enable flags ...) are left to
  them, so a fault on one of those is graded once, by its checks.

Elements: a rigid body, a joint, a collider and a scene by its own path; a physics
material by the path of the collider bound to it ("material of <collider>"); any other
prim carrying such attributes (a MuJoCo actuator, a tendon ...) by the element its
relationships point at ("<relationship> of <element>"). Keys use reference paths only
through the correspondence (gates/scene_preservation.py), never across stages.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pxr import Gf, Sdf, Usd, UsdPhysics, UsdShade

SIMULATOR_PREFIXES = ("physics:", "physx", "mjc:", "newton:", "drive:", "limit:")

# Measured by the check families (joint frame/range/state, mass, materials, body state,
# collision): compared there, with their own tolerances and semantic progress.
MEASURED_ELSEWHERE = frozenset({
    "physics:localPos0", "physics:localPos1", "physics:localRot0", "physics:localRot1",
    "physics:lowerLimit", "physics:upperLimit", "physics:axis",
    "physics:jointEnabled", "physics:collisionEnabled", "physics:excludeFromArticulation",
    "physics:rigidBodyEnabled", "physics:kinematicEnabled",
    "physics:mass", "physics:density", "physics:centerOfMass", "physics:diagonalInertia",
    "physics:principalAxes", "physics:staticFriction", "physics:dynamicFriction", "physics:restitution",
    "physics:approximation", "physics:gravityDirection", "physics:gravityMagnitude",
})
# Drive and limit APIs are measured by the joint family (drives, limits) in SI.
MEASURED_PREFIXES = ("drive:", "limit:")

# UsdPhysics attributes with a unit, as (metres exponent, kilograms exponent).
SCHEMA_UNITS = {
    "physics:velocity": (1, 0),
    "physics:minDistance": (1, 0),
    "physics:maxDistance": (1, 0),
    "physics:breakForce": (1, 1),
    "physics:breakTorque": (2, 1),
}
# A tolerance on a relative scale for floats (values are read back from float32).
RELATIVE_TOLERANCE = 1e-5


@dataclass(frozen=True)
class PhysicsScene:
    path: str
    gravity: tuple[float, float, float]   # m/s^2, world space


def read_scenes(parsed: dict, mpu: float) -> tuple[PhysicsScene, ...]:
    """Scenes as the UsdPhysics parser resolved them (`parsed`: its result)."""
    entry = parsed.get(UsdPhysics.ObjectType.Scene)
    if not entry:
        return ()
    scenes = []
    for path, desc in zip(*entry):
        direction = Gf.Vec3d(desc.gravityDirection)
        magnitude = float(desc.gravityMagnitude) * mpu
        length = direction.GetLength()
        unit = direction / length if length > 0 else direction
        gravity = tuple(_finite(c * magnitude) for c in unit)
        scenes.append(PhysicsScene(str(path), gravity))
    return tuple(sorted(scenes, key=lambda s: s.path))


def _finite(x: float) -> float:
    return float(x) if math.isfinite(x) else float("nan")


def is_simulator_attribute(name: str, namespaces: tuple[str, ...] = ()) -> bool:
    """In a built-in simulator namespace, or in one of `namespaces` (the profile's extra ones)."""
    return name.startswith(SIMULATOR_PREFIXES) or any(name.startswith(ns + ":") for ns in namespaces)


def compared_here(name: str, namespaces: tuple[str, ...] = ()) -> bool:
    return is_simulator_attribute(name, namespaces) and name not in MEASURED_ELSEWHERE \
        and not name.startswith(MEASURED_PREFIXES)


def plain(value, number=float):
    """A Usd value as plain Python: None, a float (a bool's, or `number` of a number), a string (an
    asset path's path), the str of anything else that is not a sequence, or a sequence's items so
    read, flattened into one tuple."""
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Sdf.AssetPath):
        return value.path
    try:
        items = list(value)
    except TypeError:
        return str(value)
    out = []
    for item in items:
        p = plain(item, number)
        out.extend(p) if isinstance(p, tuple) else out.append(p)
    return tuple(out)


def plain_value(value, name: str, mpu: float, kgpu: float):
    """A comparable plain value: floats (in SI where the schema gives a unit), tuples, strings."""
    metres, kilograms = SCHEMA_UNITS.get(name, (0, 0))
    return plain(value, lambda number: float(number) * mpu ** metres * kgpu ** kilograms)


def prim_attributes(prim: Usd.Prim, mpu: float, kgpu: float, namespaces: tuple[str, ...] = ()) -> dict[str, object]:
    """The prim's authored simulator attributes not measured elsewhere, as plain values."""
    out = {}
    for attr in prim.GetAuthoredAttributes():
        name = attr.GetName()
        if not compared_here(name, namespaces):
            continue
        try:
            value = attr.Get()
        except Exception as error:  # a value USD cannot read back is still an authored difference
            value = f"<unreadable: {type(error).__name__}>"
        out[name] = plain_value(value, name, mpu, kgpu)
    return dict(sorted(out.items()))


def _physics_material_prim(prim: Usd.Prim) -> Usd.Prim | None:
    material, _ = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial("physics")
    if material and material.GetPrim().IsValid() and material.GetPrim().HasAPI(UsdPhysics.MaterialAPI):
        return material.GetPrim()
    return None


def read_simulator_attributes(stage: Usd.Stage, elements: set[str], colliders: set[str], scenes: set[str],
                              mpu: float, kgpu: float, namespaces: tuple[str, ...] = ()) -> dict[str, dict[str, object]]:
    """Element key -> {attribute: value}; see the module docstring for the keys.

    `elements`: body and joint paths; `colliders`: collider paths; `scenes`: scene paths;
    `namespaces`: attribute namespaces read besides the built-in ones (the profile's).
    """
    out: dict[str, dict[str, object]] = {}
    for path in sorted(elements | colliders | scenes):
        prim = stage.GetPrimAtPath(path)
        if prim:
            out[path] = prim_attributes(prim, mpu, kgpu, namespaces)
    for path in sorted(colliders):
        prim = stage.GetPrimAtPath(path)
        material = _physics_material_prim(prim) if prim else None
        if material is not None:
            out[f"material of {path}"] = prim_attributes(material, mpu, kgpu, namespaces)
    known = elements | colliders | scenes
    attached: dict[str, list] = {}
    for prim in Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies()):
        path = str(prim.GetPath())
        # A collision group's attributes are measured by what it filters (the contact family).
        if path in known or prim.HasAPI(UsdPhysics.MaterialAPI) or prim.IsA(UsdPhysics.CollisionGroup):
            continue
        values = prim_attributes(prim, mpu, kgpu, namespaces)
        if not values:
            continue
        for rel in prim.GetRelationships():
            for target in rel.GetForwardedTargets():
                if str(target) in known:
                    attached.setdefault(f"{rel.GetName()} of {target}", []).append(values)
    for key, lists in attached.items():
        out[key] = {"attached": tuple(sorted(repr(v) for v in lists))} if len(lists) > 1 else lists[0]
    return out


def values_equal(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= RELATIVE_TOLERANCE * max(1.0, abs(a), abs(b))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))
    return a == b
