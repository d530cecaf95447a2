"""Joint faults: a joint's frame, limits, bodies, type, state or drive broken, the joint deleted or duplicated."""
from __future__ import annotations

import math

from pxr import Sdf, Usd, UsdPhysics

from usd_repair_verifier.authoring.inject.edits import (
    InjectionError, asset_size_units, remove_prim, rigid_bodies, set_attribute, set_targets, strongest_prim_spec,
    target_prim,
)


def _joint_prim(stage: Usd.Stage, target: str) -> Usd.Prim:
    return target_prim(stage, target, lambda p: p.IsA(UsdPhysics.Joint), "a joint")


def joint_frame(stage, target, rng, dirty) -> str:
    prim = _joint_prim(stage, target)
    joint = UsdPhysics.Joint(prim)
    offset = 0.05 * asset_size_units(stage)
    direction = [rng.uniform(-1, 1) for _ in range(3)]
    norm = math.sqrt(sum(c * c for c in direction)) or 1.0
    current = joint.GetLocalPos1Attr().Get() or (0.0, 0.0, 0.0)
    moved = tuple(float(c) + offset * d / norm for c, d in zip(current, direction))
    set_attribute(prim, "physics:localPos1", moved, Sdf.ValueTypeNames.Point3f, dirty)
    return f"localPos1 moved by {offset:.4g} stage units"


def joint_limit_units(stage, target, rng, dirty) -> str:
    prim = _joint_prim(stage, target)
    if not prim.IsA(UsdPhysics.RevoluteJoint):
        raise InjectionError(f"{target} is not a revolute joint")
    joint = UsdPhysics.RevoluteJoint(prim)
    lower, upper = joint.GetLowerLimitAttr().Get(), joint.GetUpperLimitAttr().Get()
    if lower is None or upper is None or not (math.isfinite(lower) and math.isfinite(upper)) or lower == upper == 0:
        raise InjectionError(f"{target} has no finite limits to convert")
    set_attribute(prim, "physics:lowerLimit", math.radians(lower), Sdf.ValueTypeNames.Float, dirty)
    set_attribute(prim, "physics:upperLimit", math.radians(upper), Sdf.ValueTypeNames.Float, dirty)
    return f"limits [{lower}, {upper}] deg authored as radians"


def joint_limits(stage, target, rng, dirty) -> str:
    prim = _joint_prim(stage, target)
    lower_attr, upper_attr = prim.GetAttribute("physics:lowerLimit"), prim.GetAttribute("physics:upperLimit")
    lower = lower_attr.Get() if lower_attr else None
    upper = upper_attr.Get() if upper_attr else None
    if lower is None or upper is None or not (math.isfinite(lower) and math.isfinite(upper)) or lower == upper:
        raise InjectionError(f"{target} has no finite limits to change")
    set_attribute(prim, "physics:lowerLimit", float(upper), Sdf.ValueTypeNames.Float, dirty)
    set_attribute(prim, "physics:upperLimit", float(lower), Sdf.ValueTypeNames.Float, dirty)
    return f"limits swapped to [{upper}, {lower}]"


def joint_graph(stage, target, rng, dirty) -> str:
    prim = _joint_prim(stage, target)
    joint = UsdPhysics.Joint(prim)
    current = set(joint.GetBody0Rel().GetTargets()) | set(joint.GetBody1Rel().GetTargets())
    others = sorted(str(p.GetPath()) for p in rigid_bodies(stage) if p.GetPath() not in current)
    if not others:
        raise InjectionError("no other body to attach the joint to")
    wrong = rng.choice(others)
    set_targets(prim, "physics:body1", [Sdf.Path(wrong)], dirty)
    return f"body1 retargeted to {wrong}"


JOINT_TYPE_SWAP = {"PhysicsRevoluteJoint": "PhysicsPrismaticJoint", "PhysicsPrismaticJoint": "PhysicsRevoluteJoint",
                   "PhysicsFixedJoint": "PhysicsRevoluteJoint", "PhysicsSphericalJoint": "PhysicsFixedJoint"}


def joint_type(stage, target, rng, dirty) -> str:
    prim = _joint_prim(stage, target)
    old_type = str(prim.GetTypeName())
    new_type = JOINT_TYPE_SWAP.get(old_type)
    if new_type is None:
        raise InjectionError(f"no type swap for {old_type}")
    for spec in prim.GetPrimStack():
        if not spec.layer.anonymous and spec.typeName:
            spec.typeName = new_type
            dirty.add(spec.layer)
            break
    return f"type {old_type} -> {new_type}"


def joint_state(stage, target, rng, dirty) -> str:
    prim = _joint_prim(stage, target)
    joint = UsdPhysics.Joint(prim)
    choice = rng.choice(["jointEnabled", "collisionEnabled", "excludeFromArticulation"])
    current = {
        "jointEnabled": joint.GetJointEnabledAttr().Get(),
        "collisionEnabled": joint.GetCollisionEnabledAttr().Get(),
        "excludeFromArticulation": joint.GetExcludeFromArticulationAttr().Get(),
    }[choice]
    value = not bool(current if current is not None else choice == "jointEnabled")
    type_name = Sdf.ValueTypeNames.Bool
    set_attribute(prim, f"physics:{choice}", value, type_name, dirty)
    return f"physics:{choice} set to {value}"


def joint_drive(stage, target, rng, dirty) -> str:
    prim = _joint_prim(stage, target)
    drives = [s for s in prim.GetAppliedSchemas() if s.startswith("PhysicsDriveAPI")]
    if not drives:
        raise InjectionError(f"{target} has no drive")
    instance = drives[0].split(":", 1)[1]
    attr = prim.GetAttribute(f"drive:{instance}:physics:stiffness")
    value = attr.Get() if attr else None
    if not value:
        raise InjectionError(f"{target} drive {instance} has no stiffness to change")
    set_attribute(prim, f"drive:{instance}:physics:stiffness", float(value) * 10.0, Sdf.ValueTypeNames.Float, dirty)
    return f"drive {instance} stiffness x10"


def joint_missing(stage, target, rng, dirty) -> str:
    remove_prim(_joint_prim(stage, target), dirty)
    return "joint deleted"


def redundant_constraint(stage, target, rng, dirty) -> str:
    prim = _joint_prim(stage, target)
    spec = strongest_prim_spec(prim)
    # Copy the defining spec (the one with a type) so the copy composes as a full joint.
    for s in prim.GetPrimStack():
        if not s.layer.anonymous and s.typeName:
            spec = s
            break
    parent = spec.path.GetParentPath()
    # A plain numbered sibling name (no word that names the fault).
    n = 1
    while spec.layer.GetPrimAtPath(parent.AppendChild(f"{spec.name}_{n}")) or \
            stage.GetPrimAtPath(prim.GetPath().GetParentPath().AppendChild(f"{spec.name}_{n}")):
        n += 1
    name = f"{spec.name}_{n}"
    Sdf.CopySpec(spec.layer, spec.path, spec.layer, parent.AppendChild(name))
    dirty.add(spec.layer)
    copied = stage.GetPrimAtPath(prim.GetPath().GetParentPath().AppendChild(name))
    # Relationships may have been authored in other layers: author them on the copy too.
    joint = UsdPhysics.Joint(prim)
    if copied:
        for rel_name, rel in (("physics:body0", joint.GetBody0Rel()), ("physics:body1", joint.GetBody1Rel())):
            set_targets(copied, rel_name, list(rel.GetTargets()), dirty)
    return f"duplicate joint {name} added"

