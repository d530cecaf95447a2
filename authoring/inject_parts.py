"""Fault injectors for visible components and colliders (see inject.py for the rules)."""
from __future__ import annotations

import math
import re

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usd_repair_verifier.stage_snapshot.parts import is_visible

from usd_repair_verifier.authoring.inject import InjectionError, _asset_size_units, _own_colliders, set_api_schemas, set_attribute



def _component(stage: Usd.Stage, target: str) -> Usd.Prim:
    prim = stage.GetPrimAtPath(target)
    if not prim or not prim.IsA(UsdGeom.Gprim):
        raise InjectionError(f"{target} is not a visible gprim")
    return prim


def _op_order(prim: Usd.Prim) -> list[str]:
    order_attr = prim.GetAttribute("xformOpOrder")
    return list(order_attr.Get() or []) if order_attr else []


def _existing_op(prim: Usd.Prim, name: str) -> Usd.Attribute | None:
    attr = prim.GetAttribute(name)
    return attr if name in _op_order(prim) and attr and attr.Get() is not None else None


def _add_op(prim: Usd.Prim, name: str, value, type_name, dirty: set) -> None:
    """A plain op (no suffix: an injected input names nothing its reference lacks) at the end of the
    prim's op order (applied first, in its local frame)."""
    set_attribute(prim, name, value, type_name, dirty)
    set_attribute(prim, "xformOpOrder", _op_order(prim) + [name], Sdf.ValueTypeNames.TokenArray, dirty)


def _translate(prim: Usd.Prim, offset: Gf.Vec3d, dirty: set) -> None:
    attr = _existing_op(prim, "xformOp:translate")
    if attr is None:
        _add_op(prim, "xformOp:translate", offset, Sdf.ValueTypeNames.Double3, dirty)
        return
    old = attr.Get()
    set_attribute(prim, attr.GetName(), type(old)(*(old[i] + offset[i] for i in range(3))), attr.GetTypeName(), dirty)


def _stage_uses_op(stage: Usd.Stage, name: str) -> bool:
    return any(name in _op_order(p) for p in stage.Traverse())


def _rotate(prim: Usd.Prim, axis: int, degrees: float, dirty: set) -> None:
    """Turn the prim about one local axis, in the rotation op it already has (or one its stage uses)."""
    orient, euler = _existing_op(prim, "xformOp:orient"), _existing_op(prim, "xformOp:rotateXYZ")
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
        _add_op(prim, "xformOp:orient", Gf.Quatf(turn.GetReal(), Gf.Vec3f(turn.GetImaginary())),
                Sdf.ValueTypeNames.Quatf, dirty)
    else:
        angles = [degrees if i == axis else 0.0 for i in range(3)]
        _add_op(prim, "xformOp:rotateXYZ", Gf.Vec3f(*angles), Sdf.ValueTypeNames.Float3, dirty)


def _scale(prim: Usd.Prim, factors: tuple[float, float, float], dirty: set) -> None:
    attr = _existing_op(prim, "xformOp:scale")
    if attr is None:
        _add_op(prim, "xformOp:scale", Gf.Vec3f(*factors), Sdf.ValueTypeNames.Float3, dirty)
        return
    old = attr.Get()
    set_attribute(prim, attr.GetName(), type(old)(*(old[i] * factors[i] for i in range(3))), attr.GetTypeName(), dirty)


def _random_unit(rng) -> tuple[float, float, float]:
    v = [rng.uniform(-1.0, 1.0) for _ in range(3)]
    n = math.sqrt(sum(c * c for c in v)) or 1.0
    return tuple(c / n for c in v)


def _local_scale(prim: Usd.Prim) -> float:
    """How long one local unit of the prim is in stage units (its world scale)."""
    m = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    return max(Gf.Vec3d(m.GetRow3(i)).GetLength() for i in range(3)) or 1.0


def component_moved(stage, target, rng, dirty) -> str:
    prim = _component(stage, target)
    if rng.random() < 0.5:
        # Added to the prim's own translate op when it has one (in its parent's frame), else applied locally.
        frame = prim.GetParent() if _existing_op(prim, "xformOp:translate") is not None else prim
        distance = 0.1 * _asset_size_units(stage) / _local_scale(frame)
        offset = tuple(distance * c for c in _random_unit(rng))
        _translate(prim, Gf.Vec3d(*offset), dirty)
        return f"translated by {distance:.4g} units"
    axis = rng.randrange(3)
    angles = [0.0, 0.0, 0.0]
    angles[axis] = rng.choice([-1, 1]) * rng.uniform(20.0, 60.0)
    _rotate(prim, axis, angles[axis], dirty)
    return f"rotated by {angles[axis]:.1f} deg about {'XYZ'[axis]}"


def component_reshaped(stage, target, rng, dirty) -> str:
    prim = _component(stage, target)
    points_attr = prim.GetAttribute("points") if prim.IsA(UsdGeom.Mesh) else None
    points = points_attr.Get() if points_attr else None
    if points and len(points) >= 4 and rng.random() < 0.5:
        extent = max((max(p[i] for p in points) - min(p[i] for p in points)) for i in range(3)) or 1.0
        corrupted = list(points)
        for index in sorted(rng.sample(range(len(points)), max(1, len(points) // 4))):
            direction = _random_unit(rng)
            corrupted[index] = Gf.Vec3f(*(points[index][i] + 0.3 * extent * direction[i] for i in range(3)))
        set_attribute(prim, "points", corrupted, Sdf.ValueTypeNames.Point3fArray, dirty)
        return f"{max(1, len(points) // 4)} of {len(points)} points displaced by 30% of the part's extent"
    factors = [1.0, 1.0, 1.0]
    factors[rng.randrange(3)] = rng.choice([0.5, 1.6])
    _scale(prim, tuple(factors), dirty)
    return f"scaled by {factors}"


def _author_local_pose(spec: Sdf.PrimSpec, local: Gf.Matrix4d, had: set[str]) -> None:
    """The pose as the plain ops assets use (a matrix op would stand out): translate, then orient and
    scale only where the pose needs them or the body had them."""
    pose = Gf.Transform(local)
    rotation = pose.GetRotation()
    scale = pose.GetScale()
    values = [("xformOp:translate", Sdf.ValueTypeNames.Double3, Gf.Vec3d(pose.GetTranslation()))]
    if abs(rotation.GetAngle()) > 1e-9 or "xformOp:orient" in had:
        quat = rotation.GetQuat()
        values.append(("xformOp:orient", Sdf.ValueTypeNames.Quatf, Gf.Quatf(quat.GetReal(), Gf.Vec3f(quat.GetImaginary()))))
    if any(abs(c - 1.0) > 1e-9 for c in scale) or "xformOp:scale" in had:
        values.append(("xformOp:scale", Sdf.ValueTypeNames.Float3, Gf.Vec3f(scale)))
    for name, type_name, value in values:
        Sdf.AttributeSpec(spec, name, type_name).default = value
    Sdf.AttributeSpec(spec, "xformOpOrder", Sdf.ValueTypeNames.TokenArray,
                      variability=Sdf.VariabilityUniform).default = [name for name, _, _ in values]


def _unmarked_prototypes(text: str, base: str) -> str:
    """Flatten names instancing prototypes `Flattened_Prototype_N`: name them after the asset instead."""
    n = 0
    while "Flattened_Prototype_" in text:
        start = text.index("Flattened_Prototype_") + len("Flattened_Prototype_")
        number = re.match(r"\d+", text[start:]).group()
        old = f"Flattened_Prototype_{number}"
        n += 1
        while f"{base}_{n}" in text:
            n += 1
        text = re.sub(rf"\b{old}\b", f"{base}_{n}", text)
    return text


def _body_colliders(stage: Usd.Stage, target: str) -> list[Usd.Prim]:
    body = stage.GetPrimAtPath(target)
    if not body or not body.HasAPI(UsdPhysics.RigidBodyAPI):
        raise InjectionError(f"{target} is not a rigid body")
    found = _own_colliders(body)
    if not found:
        raise InjectionError(f"{target} has no collider")
    return found


def collision_removed(stage, target, rng, dirty) -> str:
    prims = _body_colliders(stage, target)
    for prim in prims:
        set_api_schemas(prim, "PhysicsCollisionAPI", None, dirty)
    return f"CollisionAPI removed from {len(prims)} collider(s)"


def collision_disabled(stage, target, rng, dirty) -> str:
    prims = _body_colliders(stage, target)
    for prim in prims:
        set_attribute(prim, "physics:collisionEnabled", False, Sdf.ValueTypeNames.Bool, dirty)
    return f"collisionEnabled = false on {len(prims)} collider(s)"


def collider_shrunk(stage, target, rng, dirty) -> str:
    # Only a collider that is not itself a visible part: shrinking a visible one would reshape the visuals too.
    hidden = [p for p in _body_colliders(stage, target) if not is_visible(p)]
    if not hidden:
        raise InjectionError(f"every collider of {target} is also a visible part")
    bbox = UsdGeom.BBoxCache(Usd.TimeCode.Default(), [UsdGeom.Tokens.default_, UsdGeom.Tokens.guide, UsdGeom.Tokens.proxy, UsdGeom.Tokens.render])
    largest = max(hidden, key=lambda p: bbox.ComputeWorldBound(p).GetVolume())
    _scale(largest, (0.5, 0.5, 0.5), dirty)
    return f"collider {largest.GetPath()} scaled by 0.5"


FILLING_APPROXIMATIONS = ("boundingCube", "convexHull")


def collision_over_approximated(stage, target, rng, dirty) -> str:
    meshes = [p for p in _body_colliders(stage, target) if p.IsA(UsdGeom.Mesh)]
    if not meshes:
        raise InjectionError(f"{target} has no mesh collider to re-approximate")
    prim = meshes[rng.randrange(len(meshes))]
    current = prim.GetAttribute("physics:approximation").Get() if prim.GetAttribute("physics:approximation") else None
    choice = "boundingCube" if current == "convexHull" else rng.choice(FILLING_APPROXIMATIONS)
    if not prim.HasAPI(UsdPhysics.MeshCollisionAPI):
        set_api_schemas(prim, None, "PhysicsMeshCollisionAPI", dirty)
    set_attribute(prim, "physics:approximation", choice, Sdf.ValueTypeNames.Token, dirty)
    return f"{prim.GetPath()} approximation {current or 'none'} -> {choice}"




def body_hierarchy(stage, target, rng, dirty) -> str:
    """Nest a body under another body (world pose kept), or un-nest a nested one.

    Namespace cannot be changed by an opinion, so the package is flattened into its
    root layer first (the note says so); relationship targets are fixed and the
    body's transform is recomputed so that its world pose is unchanged.
    """
    body = stage.GetPrimAtPath(target)
    if not body or not body.HasAPI(UsdPhysics.RigidBodyAPI):
        raise InjectionError(f"{target} is not a rigid body")
    bodies = [p for p in stage.Traverse() if p.HasAPI(UsdPhysics.RigidBodyAPI)]
    inside = {p.GetPath() for p in Usd.PrimRange(body)}
    parent_body = next((a for a in _ancestors(body) if a.HasAPI(UsdPhysics.RigidBodyAPI)), None)
    if parent_body is not None:
        new_parent = parent_body.GetParent()  # un-nest: a sibling of its parent body
    else:
        others = sorted((p for p in bodies if p.GetPath() not in inside), key=lambda p: str(p.GetPath()))
        if not others:
            raise InjectionError("no other body to nest it under")
        new_parent = others[rng.randrange(len(others))]
    xforms = UsdGeom.XformCache()
    world = xforms.GetLocalToWorldTransform(body)
    parent_world = xforms.GetLocalToWorldTransform(new_parent)
    old_path = body.GetPath()
    new_path = new_parent.GetPath().AppendChild(body.GetName())
    if stage.GetPrimAtPath(new_path):
        raise InjectionError(f"{new_path} already exists")

    had_ops = set(_op_order(body))
    root = stage.GetRootLayer()
    flat = stage.Flatten()
    edit = Sdf.BatchNamespaceEdit()
    edit.Add(Sdf.NamespaceEdit.Reparent(old_path, new_parent.GetPath(), -1))
    if not flat.Apply(edit):
        raise InjectionError(f"cannot move {old_path} under {new_parent.GetPath()}")
    _retarget(flat, old_path, new_path)
    spec = flat.GetPrimAtPath(new_path)
    for name in list(spec.attributes.keys()):
        if name.startswith("xformOp:") or name == "xformOpOrder":
            spec.RemoveProperty(spec.attributes[name])
    _author_local_pose(spec, world * parent_world.GetInverse(), had_ops)
    text = _unmarked_prototypes(flat.ExportToString(), stage.GetDefaultPrim().GetName() or "Prototype")
    # Flatten anchors asset paths to absolute ones: make them relative to the root layer again.
    package = root.realPath.rsplit("/", 1)[0]
    documentation = root.documentation
    root.ImportFromString(text.replace("@" + package + "/", "@./"))
    root.documentation = documentation  # Flatten writes the absolute source path there: not reproducible
    root.subLayerPaths.clear()
    dirty.add(root)
    return f"{old_path} moved under {new_parent.GetPath()} (package flattened into its root layer)"


def _ancestors(prim: Usd.Prim):
    parent = prim.GetParent()
    while parent and not parent.IsPseudoRoot():
        yield parent
        parent = parent.GetParent()


def _retarget(layer: Sdf.Layer, old: Sdf.Path, new: Sdf.Path) -> None:
    """Point every relationship target and connection under `old` at `new`."""
    def fix(path):
        spec = layer.GetObjectAtPath(path)
        if isinstance(spec, Sdf.RelationshipSpec):
            items = list(spec.targetPathList.GetAddedOrExplicitItems())
            if any(t.HasPrefix(old) for t in items):
                spec.targetPathList.ClearEditsAndMakeExplicit()
                spec.targetPathList.explicitItems = [t.ReplacePrefix(old, new) if t.HasPrefix(old) else t for t in items]
        elif isinstance(spec, Sdf.AttributeSpec):
            items = list(spec.connectionPathList.GetAddedOrExplicitItems())
            if any(t.HasPrefix(old) for t in items):
                spec.connectionPathList.ClearEditsAndMakeExplicit()
                spec.connectionPathList.explicitItems = [t.ReplacePrefix(old, new) if t.HasPrefix(old) else t for t in items]
    layer.Traverse(Sdf.Path.absoluteRootPath, fix)


PART_INJECTORS = {
    "body_hierarchy": body_hierarchy,
    "component_moved": component_moved,
    "component_reshaped": component_reshaped,
    "collision_removed": collision_removed,
    "collision_disabled": collision_disabled,
    "collider_shrunk": collider_shrunk,
    "collision_over_approximated": collision_over_approximated,
}
