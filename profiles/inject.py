"""Fault injection for case authoring: copy a reference package and break it.

Each fault is authored in the package's own layers *where it is the effective
opinion*: the strongest existing spec of the property (found through the
composed stage's property stack), so the composed stage really shows the
fault; everything else in the package is left byte for byte. Choices (which
offset, which other body) come from a seeded generator, so the same seed gives
the same bytes.
"""
from __future__ import annotations

import math
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from .vocabulary import FAULT_KINDS


class InjectionError(Exception):
    """The fault cannot be injected on this target (wrong kind of prim, nothing to break)."""


@dataclass(frozen=True)
class Injected:
    kind: str
    target: str        # reference prim path, or "*"
    note: str


def root_layer_of(package: Path) -> Path:
    layers = sorted(p for p in package.iterdir() if p.suffix.lower() in (".usd", ".usda", ".usdc", ".usdz"))
    if len(layers) != 1:
        raise InjectionError(f"{package} must hold exactly one root layer, found {[p.name for p in layers]}")
    return layers[0]


# --- authoring in the strongest local layer -----------------------------------

def _map_path(stage_path: Sdf.Path, stage_prim_path: Sdf.Path, spec_prim_path: Sdf.Path) -> Sdf.Path:
    """Translate a stage path into the namespace of a layer whose spec of stage_prim_path sits at spec_prim_path."""
    stage_parts, spec_parts = stage_prim_path.pathString.split("/"), spec_prim_path.pathString.split("/")
    common = 0
    while common < min(len(stage_parts), len(spec_parts)) - 1 and stage_parts[-1 - common] == spec_parts[-1 - common]:
        common += 1
    stage_root = "/".join(stage_parts[: len(stage_parts) - common]) or "/"
    spec_root = "/".join(spec_parts[: len(spec_parts) - common]) or "/"
    if stage_path.HasPrefix(Sdf.Path(stage_root)):
        return stage_path.ReplacePrefix(Sdf.Path(stage_root), Sdf.Path(spec_root))
    return stage_path


def _strongest_prim_spec(prim: Usd.Prim) -> Sdf.PrimSpec:
    for spec in prim.GetPrimStack():
        if not spec.layer.anonymous:
            return spec
    raise InjectionError(f"{prim.GetPath()} has no spec in a file layer")


def _dirty(layers: set, layer: Sdf.Layer) -> None:
    layers.add(layer)


def set_attribute(prim: Usd.Prim, name: str, value, type_name, dirty: set) -> None:
    attr = prim.GetAttribute(name)
    stack = [s for s in (attr.GetPropertyStack() if attr else []) if not s.layer.anonymous]
    if stack:
        spec = stack[0]
        spec.default = value
        _dirty(dirty, spec.layer)
        return
    prim_spec = _strongest_prim_spec(prim)
    spec = Sdf.AttributeSpec(prim_spec, name, type_name)
    spec.default = value
    _dirty(dirty, prim_spec.layer)


def set_targets(prim: Usd.Prim, name: str, targets: list[Sdf.Path], dirty: set) -> None:
    rel = prim.GetRelationship(name)
    stack = [s for s in (rel.GetPropertyStack() if rel else []) if not s.layer.anonymous]
    if stack:
        spec = stack[0]
    else:
        prim_spec = _strongest_prim_spec(prim)
        spec = Sdf.RelationshipSpec(prim_spec, name)
    owner = spec.layer.GetPrimAtPath(spec.path.GetPrimPath())
    mapped = [_map_path(t, prim.GetPath(), owner.path) for t in targets]
    spec.targetPathList.ClearEditsAndMakeExplicit()
    spec.targetPathList.explicitItems = mapped
    _dirty(dirty, spec.layer)


def remove_prim(prim: Usd.Prim, dirty: set) -> None:
    """Delete every spec of the prim in the package's layers."""
    for spec in list(prim.GetPrimStack()):
        if spec.layer.anonymous:
            continue
        layer = spec.layer
        parent = spec.nameParent if spec.nameParent else layer.pseudoRoot
        del parent.nameChildren[spec.name]
        _dirty(dirty, layer)


def set_api_schemas(prim: Usd.Prim, remove: str | None, add: str | None, dirty: set) -> None:
    """Remove or add an applied API schema with an edit in the strongest local spec.

    A deletion in the strongest list op removes the schema whatever weaker
    layers prepend (list-op composition), so no other layer is touched.
    """
    spec = _strongest_prim_spec(prim)
    op = spec.GetInfo("apiSchemas") if spec.HasInfo("apiSchemas") else Sdf.TokenListOp()
    if remove:
        if op.isExplicit:
            op.explicitItems = [t for t in op.explicitItems if t != remove]
        else:
            op.prependedItems = [t for t in op.prependedItems if t != remove]
            op.appendedItems = [t for t in op.appendedItems if t != remove]
            op.deletedItems = list(op.deletedItems) + [remove]
    if add:
        if op.isExplicit:
            op.explicitItems = list(op.explicitItems) + [add]
        else:
            op.deletedItems = [t for t in op.deletedItems if t != add]
            op.prependedItems = list(op.prependedItems) + [add]
    spec.SetInfo("apiSchemas", op)
    _dirty(dirty, spec.layer)


# --- the faults ---------------------------------------------------------------

def _joint_prim(stage: Usd.Stage, target: str) -> Usd.Prim:
    prim = stage.GetPrimAtPath(target)
    if not prim or not prim.IsA(UsdPhysics.Joint):
        raise InjectionError(f"{target} is not a joint")
    return prim


def _bodies(stage: Usd.Stage) -> list[Usd.Prim]:
    return [p for p in stage.Traverse() if p.HasAPI(UsdPhysics.RigidBodyAPI)]


def _asset_size_units(stage: Usd.Stage) -> float:
    """The size of the articulated part (rigid bodies only: a ground plane would dwarf it)."""
    bbox = UsdGeom.BBoxCache(Usd.TimeCode.Default(), [UsdGeom.Tokens.default_, UsdGeom.Tokens.render, UsdGeom.Tokens.guide])
    box = Gf.Range3d()
    for body in _bodies(stage):
        box = Gf.Range3d.GetUnion(box, bbox.ComputeWorldBound(body).ComputeAlignedRange())
    return max(box.GetSize()) if not box.IsEmpty() else 1.0


def joint_frame(stage, target, rng, dirty) -> str:
    prim = _joint_prim(stage, target)
    joint = UsdPhysics.Joint(prim)
    offset = 0.05 * _asset_size_units(stage)
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
    others = sorted(str(p.GetPath()) for p in _bodies(stage) if p.GetPath() not in current)
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
            _dirty(dirty, spec.layer)
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
    spec = _strongest_prim_spec(prim)
    # Copy the defining spec (the one with a type) so the copy composes as a full joint.
    for s in prim.GetPrimStack():
        if not s.layer.anonymous and s.typeName:
            spec = s
            break
    parent = spec.path.GetParentPath()
    name = f"{spec.name}_redundant"
    Sdf.CopySpec(spec.layer, spec.path, spec.layer, parent.AppendChild(name))
    _dirty(dirty, spec.layer)
    copied = stage.GetPrimAtPath(prim.GetPath().GetParentPath().AppendChild(name))
    # Relationships may have been authored in other layers: author them on the copy too.
    joint = UsdPhysics.Joint(prim)
    if copied:
        for rel_name, rel in (("physics:body0", joint.GetBody0Rel()), ("physics:body1", joint.GetBody1Rel())):
            set_targets(copied, rel_name, list(rel.GetTargets()), dirty)
    return f"duplicate joint {name} added"


def articulation_root(stage, target, rng, dirty) -> str:
    roots = [p for p in stage.Traverse() if p.HasAPI(UsdPhysics.ArticulationRootAPI)]
    if not roots:
        raise InjectionError("the asset has no articulation root")
    root = roots[0]
    choice = rng.choice(["remove", "move"])
    set_api_schemas(root, "PhysicsArticulationRootAPI", None, dirty)
    if choice == "move":
        leaves = [b for b in _bodies(stage) if b.GetPath() != root.GetPath() and not any(
            c.HasAPI(UsdPhysics.RigidBodyAPI) for c in Usd.PrimRange(b) if c != b)]
        if leaves:
            leaf = leaves[rng.randrange(len(leaves))]
            set_api_schemas(leaf, None, "PhysicsArticulationRootAPI", dirty)
            return f"articulation root moved from {root.GetPath()} to leaf body {leaf.GetPath()}"
    return f"articulation root removed from {root.GetPath()}"


def body_state(stage, target, rng, dirty) -> str:
    prim = stage.GetPrimAtPath(target)
    if not prim or not prim.HasAPI(UsdPhysics.RigidBodyAPI):
        raise InjectionError(f"{target} is not a rigid body")
    if rng.random() < 0.5:
        set_attribute(prim, "physics:rigidBodyEnabled", False, Sdf.ValueTypeNames.Bool, dirty)
        return "rigid body disabled"
    set_attribute(prim, "physics:kinematicEnabled", True, Sdf.ValueTypeNames.Bool, dirty)
    return "rigid body made kinematic"


INJECTORS = {
    "joint_frame": joint_frame,
    "joint_limit_units": joint_limit_units,
    "joint_limits": joint_limits,
    "joint_graph": joint_graph,
    "joint_type": joint_type,
    "joint_state": joint_state,
    "joint_drive": joint_drive,
    "joint_missing": joint_missing,
    "redundant_constraint": redundant_constraint,
    "articulation_root": articulation_root,
    "body_state": body_state,
}


def inject(reference: Path, out: Path, faults: list[tuple[str, str]], seed: int) -> list[Injected]:
    """Copy `reference` to `out` and inject each (kind, target) fault in order."""
    reference, out = Path(reference), Path(out)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(reference, out, symlinks=True)
    root = root_layer_of(out)
    done = []
    for kind, target in faults:
        # One generator per fault, seeded by the fault itself: injecting a subset of
        # the faults reproduces each of them exactly (a partial repair is the others).
        rng = random.Random(f"{seed}:{kind}:{target}")
        if kind not in INJECTORS:
            raise InjectionError(f"unknown fault kind {kind} (known: {', '.join(sorted(INJECTORS))})")
        if FAULT_KINDS[kind].target == "asset":
            target = "*"
        stage = Usd.Stage.Open(str(root), Usd.Stage.LoadAll)
        dirty: set = set()
        note = INJECTORS[kind](stage, target, rng, dirty)
        for layer in sorted(dirty, key=lambda l: l.identifier):
            layer.Save()
        done.append(Injected(kind, target, note))
        # Layers are cached by the registry: drop our edits' stage so the next fault re-reads.
        del stage
    return done
