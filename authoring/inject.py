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
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt

from usd_repair_verifier.checks.materials import compare_visual
from usd_repair_verifier.stage_snapshot import mass as mass_properties
from usd_repair_verifier.stage_snapshot import materials as material_props

from usd_repair_verifier.profiles.vocabulary import FAULT_KINDS


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
    # A plain numbered sibling name (no word that names the fault).
    n = 1
    while spec.layer.GetPrimAtPath(parent.AppendChild(f"{spec.name}_{n}")) or \
            stage.GetPrimAtPath(prim.GetPath().GetParentPath().AppendChild(f"{spec.name}_{n}")):
        n += 1
    name = f"{spec.name}_{n}"
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


# --- body faults: mass, materials, composition ---------------------------------
#
# Mass faults are checked against what the UsdPhysics rules yield (usd_repair_verifier.stage_snapshot.mass):
# each injector refuses a body whose reference does not establish the property it
# breaks (the check would be unmeasured), and verifies the composed effect.

MASS_UNIT_FACTOR = 1000.0   # grams authored where kilograms are meant
DENSITY_CHANGE = math.log(1.1)  # a misplaced density must move the mass by at least 10%


def _rigid_body(stage: Usd.Stage, target: str) -> Usd.Prim:
    prim = stage.GetPrimAtPath(target)
    if not prim or not prim.HasAPI(UsdPhysics.RigidBodyAPI):
        raise InjectionError(f"{target} is not a rigid body")
    return prim


def _established_mass(stage: Usd.Stage, target: str, prop: str):
    props = mass_properties.body_mass_properties(stage, target)
    if props is None:
        raise InjectionError(f"{target} has no mass properties")
    if not props.established.get(prop):
        raise InjectionError(
            f"the reference does not establish the {prop.replace('_', ' ')} of {target} "
            f"(source: {props.source}): the mass checks would be unmeasured"
        )
    return props


def _writable(prim: Usd.Prim) -> Usd.Prim:
    if prim.IsInstanceProxy():
        raise InjectionError(f"{prim.GetPath()} is an instance proxy: editing it would change every instance")
    return prim


def _ensure_api(prim: Usd.Prim, schema: str, api, dirty: set) -> None:
    if not prim.HasAPI(api):
        set_api_schemas(prim, None, schema, dirty)


def _authored(prim: Usd.Prim, name: str):
    attr = prim.GetAttribute(name)
    return attr.Get() if attr and attr.HasAuthoredValue() else None


def _scale_authored(prim: Usd.Prim, name: str, factor: float, dirty: set) -> bool:
    """Multiply an authored float or vector attribute by factor (in its strongest spec)."""
    attr = prim.GetAttribute(name)
    value = _authored(prim, name)
    if value is None:
        return False
    if isinstance(value, (int, float)):
        scaled = float(value) * factor
    else:
        if not any(abs(float(c)) > 1e-12 for c in value):
            return False  # (0, 0, 0) is "unset" for the API: nothing to scale
        scaled = type(value)(*(float(c) * factor for c in value))
    set_attribute(_writable(prim), name, scaled, attr.GetTypeName(), dirty)
    return True


def _log_ratio(a: float, b: float) -> float:
    if a <= 0 or b <= 0 or not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(math.log(a / b))


def mass_unit_factor(stage, target, rng, dirty) -> str:
    """The body's mass authored in grams for kilograms: every mass-bearing value x1000.

    Where the mass comes from decides what is scaled: an authored body mass; else
    the colliders' own masses / densities when every collider has one; else a body
    mass of 1000 x the computed mass is authored. Authored diagonal inertias (mass
    x length^2) are scaled too, so the inertia is x1000 like the mass.
    """
    prim = _writable(_rigid_body(stage, target))
    before = _established_mass(stage, target, "mass")
    kpu = UsdPhysics.GetStageKilogramsPerUnit(stage)
    scaled = []
    if before.source == "body mass":
        _scale_authored(prim, "physics:mass", MASS_UNIT_FACTOR, dirty)
        scaled.append("body physics:mass")
    elif before.collider_sources and all(
        s in ("collider mass", "collider density") for s in before.collider_sources.values()
    ):
        for path, source in sorted(before.collider_sources.items()):
            collider = stage.GetPrimAtPath(path)
            name = "physics:mass" if source == "collider mass" else "physics:density"
            _scale_authored(collider, name, MASS_UNIT_FACTOR, dirty)
            scaled.append(f"{name} of {collider.GetName()}")
            if _scale_authored(collider, "physics:diagonalInertia", MASS_UNIT_FACTOR, dirty):
                scaled.append(f"physics:diagonalInertia of {collider.GetName()}")
    else:
        _ensure_api(prim, "PhysicsMassAPI", UsdPhysics.MassAPI, dirty)
        set_attribute(prim, "physics:mass", float(before.mass / kpu * MASS_UNIT_FACTOR), Sdf.ValueTypeNames.Float, dirty)
        scaled.append(f"body physics:mass authored (was {before.source})")
    if prim.HasAPI(UsdPhysics.MassAPI) and _scale_authored(prim, "physics:diagonalInertia", MASS_UNIT_FACTOR, dirty):
        scaled.append("body physics:diagonalInertia")
    after = mass_properties.body_mass_properties(stage, target)
    if after is None or abs(_log_ratio(after.mass, before.mass) - math.log(MASS_UNIT_FACTOR)) > 1e-3:
        raise InjectionError(f"scaling {', '.join(scaled)} did not multiply the mass of {target} by {MASS_UNIT_FACTOR:g}")
    return f"mass x{MASS_UNIT_FACTOR:g} ({before.mass:.6g} -> {after.mass:.6g} kg): " + ", ".join(scaled)


def density_misplaced(stage, target, rng, dirty) -> str:
    """The colliders' densities authored once on the body instead (blocked on the colliders).

    Body density ranks below collider mass/density but above material density, so
    the body's mass changes wherever the colliders differed; when it would change
    by less than 10%, the moved density is also scaled x10 (said in the note).
    """
    prim = _writable(_rigid_body(stage, target))
    before = _established_mass(stage, target, "mass")
    if before.source == "body mass":
        raise InjectionError(f"the mass of {target} is its authored body mass: a density cannot change it")
    dense = sorted(p for p, s in before.collider_sources.items() if s == "collider density")
    if not dense:
        raise InjectionError(f"no collider of {target} has an authored density to misplace")
    chosen = rng.choice(dense)
    value = float(stage.GetPrimAtPath(chosen).GetAttribute("physics:density").Get())
    for path in dense:
        set_attribute(_writable(stage.GetPrimAtPath(path)), "physics:density", Sdf.ValueBlock(),
                      Sdf.ValueTypeNames.Float, dirty)
    _ensure_api(prim, "PhysicsMassAPI", UsdPhysics.MassAPI, dirty)
    set_attribute(prim, "physics:density", value, Sdf.ValueTypeNames.Float, dirty)
    after = mass_properties.body_mass_properties(stage, target)
    note = f"density {value:g} of {Sdf.Path(chosen).name} moved to the body ({len(dense)} collider densities blocked)"
    if _log_ratio(after.mass, before.mass) < DENSITY_CHANGE:
        set_attribute(prim, "physics:density", value * 10.0, Sdf.ValueTypeNames.Float, dirty)
        after = mass_properties.body_mass_properties(stage, target)
        note += "; scaled x10 because moving it alone would not change the mass"
        if _log_ratio(after.mass, before.mass) < DENSITY_CHANGE:
            raise InjectionError(f"moving the density of {target} does not change its mass")
    return note + f" (mass {before.mass:.6g} -> {after.mass:.6g} kg)"


def inertia_invalid(stage, target, rng, dirty) -> str:
    """An invalid diagonal inertia on the body: (0, -1, 0) x the current moments (one zero, one negative)."""
    prim = _writable(_rigid_body(stage, target))
    before = _established_mass(stage, target, "inertia")
    # The effective moments (stage units), not an authored value: the API ignores tiny authored
    # inertias (reacher's target authors 1e-7 and simulates a 0.1 m sphere's).
    si = UsdPhysics.GetStageKilogramsPerUnit(stage) * UsdGeom.GetStageMetersPerUnit(stage) ** 2
    current = [float(c) / si for c in before.principal_inertia]
    invalid = Gf.Vec3f(0.0, -current[1], 0.0)
    _ensure_api(prim, "PhysicsMassAPI", UsdPhysics.MassAPI, dirty)
    set_attribute(prim, "physics:diagonalInertia", invalid, Sdf.ValueTypeNames.Float3, dirty)
    after = mass_properties.body_mass_properties(stage, target)
    if after is None or min(after.principal_inertia) > 0:
        raise InjectionError(f"the authored inertia of {target} did not take effect")
    return f"physics:diagonalInertia = ({invalid[0]:g}, {invalid[1]:.6g}, {invalid[2]:g}) stage units"


def _own_size_units(stage: Usd.Stage, prim: Usd.Prim) -> float:
    """Largest world extent (stage units) of the body's own gprims, nested bodies excluded."""
    cache = UsdGeom.BBoxCache(Usd.TimeCode.Default(), [UsdGeom.Tokens.default_, UsdGeom.Tokens.render,
                                                      UsdGeom.Tokens.proxy, UsdGeom.Tokens.guide])
    box = Gf.Range3d()
    for p in own_prims(prim):
        if p.IsA(UsdGeom.Gprim):
            box = Gf.Range3d.GetUnion(box, cache.ComputeWorldBound(p).ComputeAlignedRange())
    size = max(box.GetSize()) if not box.IsEmpty() else 0.0
    return size if size > 0 else _asset_size_units(stage)


def center_of_mass_moved(stage, target, rng, dirty) -> str:
    """physics:centerOfMass authored on the body, 20% of the body's size away from where it was."""
    prim = _writable(_rigid_body(stage, target))
    before = _established_mass(stage, target, "center_of_mass")
    mpu = UsdGeom.GetStageMetersPerUnit(stage)
    size = _own_size_units(stage, prim)
    direction = [rng.uniform(-1, 1) for _ in range(3)]
    norm = math.sqrt(sum(c * c for c in direction)) or 1.0
    offset = [0.2 * size * c / norm for c in direction]
    com = Gf.Vec3d(*(c / mpu for c in before.center_of_mass))
    wanted = com + Gf.Vec3d(*offset)
    world = UsdGeom.XformCache(Usd.TimeCode.Default()).GetLocalToWorldTransform(prim)
    local = world.GetInverse().Transform(wanted)
    _ensure_api(prim, "PhysicsMassAPI", UsdPhysics.MassAPI, dirty)
    set_attribute(prim, "physics:centerOfMass", Gf.Vec3f(*local), Sdf.ValueTypeNames.Point3f, dirty)
    after = mass_properties.body_mass_properties(stage, target)
    moved = math.dist(after.center_of_mass, before.center_of_mass) / mpu
    if not math.isfinite(moved) or moved < 0.1 * size:
        raise InjectionError(f"the authored centre of mass of {target} did not take effect")
    return f"centre of mass moved by {moved:.4g} stage units (20% of the body's size {size:.4g})"


def _visual_of(prim: Usd.Prim):
    return material_props.visual_material(prim) or material_props.display_surface(prim)


def _visual_differs(a, b) -> bool:
    return any(not (err <= tol) for err, tol in compare_visual(a, b).values())


def _binding_name(prim: Usd.Prim) -> str:
    _, rel = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial(material_props.VISUAL_PURPOSE)
    name = rel.GetName() if rel else ""
    return name if name.startswith("material:binding") and "collection" not in name.split(":") else "material:binding"


def _visual_if_bound(stage: Usd.Stage, prim: Usd.Prim, rel_name: str, material: Usd.Prim):
    """The visual material the prim would get with a direct binding to `material` (session layer, undone)."""
    session = stage.GetSessionLayer()
    try:
        with Usd.EditContext(stage, session):
            UsdShade.MaterialBindingAPI.Apply(prim)
            prim.CreateRelationship(rel_name).SetTargets([material.GetPath()])
        return _visual_of(prim)
    finally:
        session.Clear()


def visual_material(stage, target, rng, dirty) -> str:
    """A component's visual material removed (empty binding) or swapped for another of the stage's materials."""
    prim = stage.GetPrimAtPath(target)
    if not prim or not prim.IsA(UsdGeom.Gprim):
        raise InjectionError(f"{target} is not a visible component (gprim)")
    _writable(prim)
    current = _visual_of(prim)
    bound, rel = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial(material_props.VISUAL_PURPOSE)
    rel_name = _binding_name(prim)
    options = []
    if bound and rel and rel.GetPrim() == prim:
        options.append("unbind")
    others = []
    for other in stage.Traverse():
        if not other.IsA(UsdShade.Material) or other.HasAPI(UsdPhysics.MaterialAPI):
            continue
        if bound and other.GetPath() == bound.GetPath():
            continue
        result = _visual_if_bound(stage, prim, rel_name, other)
        if result is not None and result.shader and _visual_differs(current, result):
            others.append(other)
    if others:
        options.append("rebind")
    if not options and not bound:
        options.append("display_color")  # nothing to unbind or bind to: recolour the unbound gprim
    if not options:
        raise InjectionError(f"{target}: no binding to remove and no other material that looks different")
    choice = rng.choice(options)
    if choice == "display_color":
        colour = current.surface.get("diffuseColor", material_props.PREVIEW_SURFACE_DEFAULTS["diffuseColor"])
        inverted = Gf.Vec3f(*(1.0 - float(c) if abs(1.0 - 2.0 * float(c)) > 0.2 else (float(c) + 0.5) % 1.0
                              for c in colour))
        set_attribute(prim, "primvars:displayColor", Vt.Vec3fArray([inverted]), Sdf.ValueTypeNames.Color3fArray, dirty)
        note = f"primvars:displayColor {tuple(round(float(c), 3) for c in colour)} -> {tuple(round(c, 3) for c in inverted)}"
    elif choice == "unbind":
        set_targets(prim, rel.GetName(), [], dirty)
        note = f"{rel.GetName()} emptied (was {bound.GetPath()})"
    else:
        other = rng.choice(others)
        _ensure_api(prim, "MaterialBindingAPI", UsdShade.MaterialBindingAPI, dirty)
        set_targets(prim, rel_name, [other.GetPath()], dirty)
        note = f"{rel_name} -> {other.GetPath()} (was {bound.GetPath() if bound else 'unbound'})"
    if not _visual_differs(current, _visual_of(prim)):
        raise InjectionError(f"{target}: the binding edit did not change the resolved material")
    return note


def own_prims(body: Usd.Prim):
    """The body prim and its descendants, not descending into nested rigid bodies."""
    it = iter(Usd.PrimRange(body, Usd.TraverseInstanceProxies()))
    for p in it:
        if p != body and p.HasAPI(UsdPhysics.RigidBodyAPI):
            it.PruneChildren()
            continue
        yield p


def _own_colliders(body: Usd.Prim) -> list[Usd.Prim]:
    return [p for p in own_prims(body) if p.HasAPI(UsdPhysics.CollisionAPI)]


def _physics_binding(prim: Usd.Prim) -> Usd.Prim | None:
    material, _ = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial("physics")
    return material.GetPrim() if material and material.GetPrim().IsValid() else None


def _changed_physics_values(mprim: Usd.Prim | None, choice: str) -> dict[str, float]:
    def value(name, default=0.0):
        v = mprim.GetAttribute(name).Get() if mprim and mprim.GetAttribute(name) else None
        return float(v) if v is not None else default

    if choice == "friction":
        static, dynamic = value("physics:staticFriction"), value("physics:dynamicFriction")
        return {"physics:staticFriction": static * 3.0 if static > 0 else 0.6,
                "physics:dynamicFriction": dynamic * 3.0 if dynamic > 0 else 0.5}
    restitution = value("physics:restitution")
    return {"physics:restitution": 0.9 if abs(restitution - 0.9) > 0.1 else 0.1}


def _new_prim_spec(stage: Usd.Stage, sibling_of: Usd.Prim, name: str) -> tuple[Sdf.PrimSpec, Sdf.Path]:
    """A new `def` prim spec next to `sibling_of`, in the layer of its strongest local spec."""
    spec = _strongest_prim_spec(sibling_of)
    parent_stage = sibling_of.GetPath().GetParentPath()
    base, n = name, 1
    while stage.GetPrimAtPath(parent_stage.AppendChild(name)):
        n += 1
        name = f"{base}_{n}"
    new_spec = Sdf.CreatePrimInLayer(spec.layer, spec.path.GetParentPath().AppendChild(name))
    new_spec.specifier = Sdf.SpecifierDef
    return new_spec, parent_stage.AppendChild(name)


def physics_material(stage, target, rng, dirty) -> str:
    """The friction (x3) or restitution (0.9) of the physics material of the body's colliders changed.

    A material no other body's collider uses is edited in place; a shared one is
    copied (every authored attribute, changed values) next to the original and bound
    with purpose physics to this body's colliders only, so healthy bodies keep theirs.
    """
    body = _rigid_body(stage, target)
    colliders = [_writable(c) for c in _own_colliders(body)]
    if not colliders:
        raise InjectionError(f"{target} has no colliders")
    own = {c.GetPath() for c in colliders}
    users: dict = {}
    for prim in Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies()):
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            m = _physics_binding(prim)
            users.setdefault(m.GetPath() if m else None, set()).add(prim.GetPath())
    choice = rng.choice(["friction", "restitution"])
    groups: dict = {}
    for c in colliders:
        m = _physics_binding(c)
        groups.setdefault(m.GetPath() if m else None, []).append(c)
    notes = []
    for mpath, members in sorted(groups.items(), key=lambda kv: str(kv[0])):
        mprim = stage.GetPrimAtPath(mpath) if mpath else None
        if mprim is not None and not mprim.HasAPI(UsdPhysics.MaterialAPI):
            mprim = None  # a render material: the colliders simulate with no physics material
        values = _changed_physics_values(mprim, choice)
        shared = bool(users.get(mpath, set()) - own)
        if mprim is not None and not shared and not mprim.IsInstanceProxy():
            for name, v in values.items():
                set_attribute(mprim, name, v, Sdf.ValueTypeNames.Float, dirty)
            notes.append(f"{mpath} edited in place: " + ", ".join(f"{n}={v:g}" for n, v in values.items()))
            continue
        anchor = mprim if mprim is not None else body
        # Named from words the package already has: the name must not point at the fault.
        new_spec, new_path = _new_prim_spec(stage, anchor, f"{mprim.GetName()}_{body.GetName()}"
                                            if mprim is not None else f"{body.GetName()}_material")
        new_spec.typeName = "Material"
        schemas = list(mprim.GetAppliedSchemas()) if mprim is not None else []
        if "PhysicsMaterialAPI" not in schemas:
            schemas.append("PhysicsMaterialAPI")
        new_spec.SetInfo("apiSchemas", Sdf.TokenListOp.Create(prependedItems=schemas))
        copied = {}
        if mprim is not None:
            for attr in mprim.GetAttributes():
                if attr.HasAuthoredValue() and not attr.GetConnections():
                    copied[attr.GetName()] = (attr.Get(), attr.GetTypeName(), attr.GetVariability())
        for name, v in values.items():
            copied[name] = (float(v), Sdf.ValueTypeNames.Float, Sdf.VariabilityVarying)
        for name, (v, type_name, variability) in sorted(copied.items()):
            Sdf.AttributeSpec(new_spec, name, type_name, variability).default = v
        _dirty(dirty, new_spec.layer)
        for c in members:
            _ensure_api(c, "MaterialBindingAPI", UsdShade.MaterialBindingAPI, dirty)
            set_targets(c, "material:binding:physics", [new_path], dirty)
        notes.append(f"{mpath or 'no material'} shared with other bodies: copy {new_path} bound to "
                     f"{len(members)} collider(s): " + ", ".join(f"{n}={v:g}" for n, v in values.items()))
    for c in colliders:
        m = _physics_binding(c)
        if m is None or not m.HasAPI(UsdPhysics.MaterialAPI):
            raise InjectionError(f"{c.GetPath()}: the physics binding did not take effect")
    return "; ".join(notes)


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
    """(physics prims, gprims, prims) of the composed stage: what a broken arc may lose."""
    physics = gprims = prims = 0
    for p in Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies()):
        prims += 1
        if (p.HasAPI(UsdPhysics.RigidBodyAPI) or p.HasAPI(UsdPhysics.CollisionAPI) or p.IsA(UsdPhysics.Joint)
                or p.IsA(UsdPhysics.Scene) or p.HasAPI(UsdPhysics.MassAPI) or p.HasAPI(UsdPhysics.MaterialAPI)):
            physics += 1
        if p.IsA(UsdGeom.Gprim):
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
    _dirty(dirty, layer)
    where = f" on {arc[1]}" if arc[1] else ""
    return (f"{arc[0]} @{arc[4]}@{where} in {rel} -> @{missing}@ "
            f"({loss[0]} physics prim(s), {loss[1]} gprim(s), {loss[2]} prim(s) lost)")


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
    "mass_unit_factor": mass_unit_factor,
    "density_misplaced": density_misplaced,
    "inertia_invalid": inertia_invalid,
    "center_of_mass_moved": center_of_mass_moved,
    "visual_material": visual_material,
    "physics_material": physics_material,
    "broken_asset_path": broken_asset_path,
}


def inject(reference: Path, out: Path, faults: list[tuple[str, str]], seed: int) -> list[Injected]:
    """Copy `reference` to `out` and inject each (kind, target) fault in order.

    The work happens in a fresh folder beside `out`, renamed onto it only when every
    fault took: a fault that cannot be injected leaves `out` as it was (nothing written)."""
    reference, out = Path(reference), Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.inject-", dir=out.parent))
    try:
        package = work / "package"
        shutil.copytree(reference, package, symlinks=True)
        done = _inject_in_place(package, faults, seed)
        if out.exists():
            shutil.rmtree(out)
        package.rename(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return done


def _inject_in_place(package: Path, faults: list[tuple[str, str]], seed: int) -> list[Injected]:
    root = root_layer_of(package)
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


# Component and collider injectors live in their own module (it imports the helpers above).
from usd_repair_verifier.authoring.inject_parts import PART_INJECTORS  # noqa: E402

INJECTORS.update(PART_INJECTORS)
from usd_repair_verifier.authoring.inject_appearance import APPEARANCE_INJECTORS  # noqa: E402

INJECTORS.update(APPEARANCE_INJECTORS)
