"""Editing primitives of the fault injectors: author an opinion where it is the effective one.

An edit goes into the package's own layers, in the strongest existing spec of the property
(found through the composed stage's property stack), so the composed stage really shows it;
every layer an edit touches is added to the caller's `dirty` set, to be saved. Also the
lookups the injectors share: the package's root layer, its rigid bodies and their own
colliders, the articulated part's size, and a prim's xform ops.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usd_repair_verifier.profiles.families import InjectionError


def root_layer_of(package: Path) -> Path:
    layers = sorted(p for p in package.iterdir() if p.suffix.lower() in (".usd", ".usda", ".usdc", ".usdz"))
    if len(layers) != 1:
        raise InjectionError(f"{package} must hold exactly one root layer, found {[p.name for p in layers]}")
    return layers[0]


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


def strongest_prim_spec(prim: Usd.Prim) -> Sdf.PrimSpec:
    for spec in prim.GetPrimStack():
        if not spec.layer.anonymous:
            return spec
    raise InjectionError(f"{prim.GetPath()} has no spec in a file layer")


def set_attribute(prim: Usd.Prim, name: str, value, type_name, dirty: set) -> None:
    """The attribute's default value, in its strongest file-layer spec (else a new spec on the prim's strongest)."""
    attr = prim.GetAttribute(name)
    stack = [s for s in (attr.GetPropertyStack() if attr else []) if not s.layer.anonymous]
    # A spec reached through a reference lives at another path: a library prim that other prims
    # reference too (a converter's GeometryLibrary mesh shared by four legs). Editing it would break
    # them all, so the value goes on the prim's own strongest spec, which wins over the reference.
    if stack and stack[0].path.GetPrimPath() == prim.GetPath():
        spec = stack[0]
        spec.default = value
        dirty.add(spec.layer)
        return
    prim_spec = strongest_prim_spec(prim)
    spec = Sdf.AttributeSpec(prim_spec, name, type_name)
    spec.default = value
    dirty.add(prim_spec.layer)


def set_targets(prim: Usd.Prim, name: str, targets: list[Sdf.Path], dirty: set) -> None:
    """The relationship's explicit targets (stage paths, mapped into the namespace of the layer that holds it)."""
    rel = prim.GetRelationship(name)
    stack = [s for s in (rel.GetPropertyStack() if rel else []) if not s.layer.anonymous]
    if stack:
        spec = stack[0]
    else:
        prim_spec = strongest_prim_spec(prim)
        spec = Sdf.RelationshipSpec(prim_spec, name)
    owner = spec.layer.GetPrimAtPath(spec.path.GetPrimPath())
    mapped = [_map_path(t, prim.GetPath(), owner.path) for t in targets]
    spec.targetPathList.ClearEditsAndMakeExplicit()
    spec.targetPathList.explicitItems = mapped
    dirty.add(spec.layer)


def remove_prim(prim: Usd.Prim, dirty: set) -> None:
    """Delete every spec of the prim in the package's layers."""
    for spec in list(prim.GetPrimStack()):
        if spec.layer.anonymous:
            continue
        layer = spec.layer
        parent = spec.nameParent if spec.nameParent else layer.pseudoRoot
        del parent.nameChildren[spec.name]
        dirty.add(layer)


def set_api_schemas(prim: Usd.Prim, remove: str | None, add: str | None, dirty: set) -> None:
    """Remove or add an applied API schema with an edit in the strongest local spec.

    A deletion in the strongest list op removes the schema whatever weaker
    layers prepend (list-op composition), so no other layer is touched.
    """
    spec = strongest_prim_spec(prim)
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
    dirty.add(spec.layer)


def writable(prim: Usd.Prim) -> Usd.Prim:
    """The prim itself, refused when it is an instance proxy."""
    if prim.IsInstanceProxy():
        raise InjectionError(f"{prim.GetPath()} is an instance proxy: editing it would change every instance")
    return prim


def ensure_api(prim: Usd.Prim, schema: str, api, dirty: set) -> None:
    if not prim.HasAPI(api):
        set_api_schemas(prim, None, schema, dirty)


def target_prim(stage: Usd.Stage, target: str, is_kind: Callable[[Usd.Prim], bool], what: str) -> Usd.Prim:
    """The target prim, refused ("TARGET is not WHAT") unless it exists and is_kind(prim)."""
    prim = stage.GetPrimAtPath(target)
    if not prim or not is_kind(prim):
        raise InjectionError(f"{target} is not {what}")
    return prim


def rigid_body(stage: Usd.Stage, target: str) -> Usd.Prim:
    """The target prim, refused unless it is a rigid body."""
    return target_prim(stage, target, lambda p: p.HasAPI(UsdPhysics.RigidBodyAPI), "a rigid body")


def rigid_bodies(stage: Usd.Stage) -> list[Usd.Prim]:
    return [p for p in stage.Traverse() if p.HasAPI(UsdPhysics.RigidBodyAPI)]


def asset_size_units(stage: Usd.Stage) -> float:
    """The size of the articulated part (rigid bodies only: a ground plane would dwarf it)."""
    bbox = UsdGeom.BBoxCache(Usd.TimeCode.Default(), [UsdGeom.Tokens.default_, UsdGeom.Tokens.render, UsdGeom.Tokens.guide])
    box = Gf.Range3d()
    for body in rigid_bodies(stage):
        box = Gf.Range3d.GetUnion(box, bbox.ComputeWorldBound(body).ComputeAlignedRange())
    return max(box.GetSize()) if not box.IsEmpty() else 1.0


def own_prims(body: Usd.Prim):
    """The body prim and its descendants, not descending into nested rigid bodies."""
    it = iter(Usd.PrimRange(body, Usd.TraverseInstanceProxies()))
    for p in it:
        if p != body and p.HasAPI(UsdPhysics.RigidBodyAPI):
            it.PruneChildren()
            continue
        yield p


def own_colliders(body: Usd.Prim) -> list[Usd.Prim]:
    return [p for p in own_prims(body) if p.HasAPI(UsdPhysics.CollisionAPI)]


def xform_op_order(prim: Usd.Prim) -> list[str]:
    order_attr = prim.GetAttribute("xformOpOrder")
    return list(order_attr.Get() or []) if order_attr else []


def existing_xform_op(prim: Usd.Prim, name: str) -> Usd.Attribute | None:
    attr = prim.GetAttribute(name)
    return attr if name in xform_op_order(prim) and attr and attr.Get() is not None else None


def _add_xform_op(prim: Usd.Prim, name: str, value, type_name, dirty: set, before: str | None = None) -> None:
    """A plain op (no suffix: an injected input names nothing its reference lacks) at the end of the
    prim's op order (applied first, in its local frame), or just before the op `before` names."""
    set_attribute(prim, name, value, type_name, dirty)
    order = xform_op_order(prim)
    at = next((i for i, op in enumerate(order) if op.startswith(before)), len(order)) if before else len(order)
    set_attribute(prim, "xformOpOrder", order[:at] + [name] + order[at:], Sdf.ValueTypeNames.TokenArray, dirty)


def translate_prim(prim: Usd.Prim, offset: Gf.Vec3d, dirty: set) -> None:
    """Add the offset to the prim's translate op (in its parent's frame), or add one (in its local frame)."""
    attr = existing_xform_op(prim, "xformOp:translate")
    if attr is None:
        _add_xform_op(prim, "xformOp:translate", offset, Sdf.ValueTypeNames.Double3, dirty)
        return
    old = attr.Get()
    set_attribute(prim, attr.GetName(), type(old)(*(old[i] + offset[i] for i in range(3))), attr.GetTypeName(), dirty)


def _stage_uses_op(stage: Usd.Stage, name: str) -> bool:
    return any(name in xform_op_order(p) for p in stage.Traverse())


def rotate_prim(prim: Usd.Prim, axis: int, degrees: float, dirty: set) -> None:
    """Turn the prim about one local axis, in the rotation op it already has (or one its stage uses)."""
    orient, euler = existing_xform_op(prim, "xformOp:orient"), existing_xform_op(prim, "xformOp:rotateXYZ")
    unit = [Gf.Vec3d.XAxis(), Gf.Vec3d.YAxis(), Gf.Vec3d.ZAxis()][axis]
    turn = Gf.Rotation(unit, degrees).GetQuat()
    if orient is not None:
        old = orient.Get()
        quat_type, vec_type = (Gf.Quatf, Gf.Vec3f) if isinstance(old, Gf.Quatf) else (Gf.Quatd, Gf.Vec3d)
        new = Gf.Quatd(old.GetReal(), Gf.Vec3d(old.GetImaginary())) * turn
        value = quat_type(new.GetReal(), vec_type(new.GetImaginary()))
        set_attribute(prim, orient.GetName(), value, orient.GetTypeName(), dirty)
    elif euler is not None:
        old = euler.Get()
        angles = [old[i] + (degrees if i == axis else 0.0) for i in range(3)]
        set_attribute(prim, euler.GetName(), type(old)(*angles), euler.GetTypeName(), dirty)
    elif _stage_uses_op(prim.GetStage(), "xformOp:orient"):
        _add_xform_op(prim, "xformOp:orient", Gf.Quatf(turn.GetReal(), Gf.Vec3f(turn.GetImaginary())),
                      Sdf.ValueTypeNames.Quatf, dirty, before="xformOp:scale")
    else:
        angles = [degrees if i == axis else 0.0 for i in range(3)]
        # Before a scale op: a part stretched by its scale turns rigidly, not sheared.
        _add_xform_op(prim, "xformOp:rotateXYZ", Gf.Vec3f(*angles), Sdf.ValueTypeNames.Float3, dirty,
                      before="xformOp:scale")


def scale_prim(prim: Usd.Prim, factors: tuple[float, float, float], dirty: set) -> None:
    """Multiply the prim's scale op by the factors, or add one."""
    attr = existing_xform_op(prim, "xformOp:scale")
    if attr is None:
        _add_xform_op(prim, "xformOp:scale", Gf.Vec3f(*factors), Sdf.ValueTypeNames.Float3, dirty)
        return
    old = attr.Get()
    set_attribute(prim, attr.GetName(), type(old)(*(old[i] * factors[i] for i in range(3))), attr.GetTypeName(), dirty)

