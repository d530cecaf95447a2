"""Body and articulation faults: the articulation root removed or moved, a body disabled or made
kinematic, a body nested under another (or un-nested)."""
from __future__ import annotations

import re

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usd_repair_verifier.authoring.inject.edits import (
    InjectionError, rigid_bodies, rigid_body, set_api_schemas, set_attribute, xform_op_order,
)


def articulation_root(stage, target, rng, dirty) -> str:
    roots = [p for p in stage.Traverse() if p.HasAPI(UsdPhysics.ArticulationRootAPI)]
    if not roots:
        raise InjectionError("the asset has no articulation root")
    root = roots[0]
    choice = rng.choice(["remove", "move"])
    set_api_schemas(root, "PhysicsArticulationRootAPI", None, dirty)
    if choice == "move":
        leaves = [b for b in rigid_bodies(stage) if b.GetPath() != root.GetPath() and not any(
            c.HasAPI(UsdPhysics.RigidBodyAPI) for c in Usd.PrimRange(b) if c != b)]
        if leaves:
            leaf = leaves[rng.randrange(len(leaves))]
            set_api_schemas(leaf, None, "PhysicsArticulationRootAPI", dirty)
            return f"articulation root moved from {root.GetPath()} to leaf body {leaf.GetPath()}"
    return f"articulation root removed from {root.GetPath()}"


def body_state(stage, target, rng, dirty) -> str:
    prim = rigid_body(stage, target)
    if rng.random() < 0.5:
        set_attribute(prim, "physics:rigidBodyEnabled", False, Sdf.ValueTypeNames.Bool, dirty)
        return "rigid body disabled"
    set_attribute(prim, "physics:kinematicEnabled", True, Sdf.ValueTypeNames.Bool, dirty)
    return "rigid body made kinematic"


def body_hierarchy(stage, target, rng, dirty) -> str:
    """Nest a body under another body (world pose kept), or un-nest a nested one.

    Namespace cannot be changed by an opinion, so the package is flattened into its
    root layer first (the note says so); relationship targets are fixed and the
    body's transform is recomputed so that its world pose is unchanged.
    """
    body = rigid_body(stage, target)
    bodies = rigid_bodies(stage)
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

    had_ops = set(xform_op_order(body))
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
    text = unmarked_prototypes(flat.ExportToString(), stage.GetDefaultPrim().GetName() or "Prototype")
    # Flatten anchors asset paths to absolute ones: make them relative to the root layer again.
    package = root.realPath.rsplit("/", 1)[0]
    documentation = root.documentation
    root.ImportFromString(text.replace("@" + package + "/", "@./"))
    root.documentation = documentation  # Flatten writes the absolute source path there: not reproducible
    root.subLayerPaths.clear()
    dirty.add(root)
    return f"{old_path} moved under {new_parent.GetPath()} (package flattened into its root layer)"


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


FLATTENED_PROTOTYPE = re.compile(r"\bFlattened_Prototype_\d+\b")
ROOT_PRIM_LINE = re.compile(r"^(?:def|over|class)\b", re.M)


def _root_prims(text: str) -> tuple[str, list[tuple[str, str, str]]]:
    """An exported layer's header and its root prims in order: (name, text through the closing brace, blank lines)."""
    starts = [m.start() for m in ROOT_PRIM_LINE.finditer(text)]
    prims = []
    for a, b in zip(starts, starts[1:] + [len(text)]):
        body = text[a:b].rstrip("\n") + "\n"
        prims.append((re.search(r'"([^"]+)"', body).group(1), body, text[a + len(body):b]))
    return text[: starts[0] if starts else len(text)], prims


def unmarked_prototypes(text: str, base: str) -> str:
    """Flatten's instancing prototypes `Flattened_Prototype_N`, named after the asset instead, in a fixed order.

    Flatten numbers prototypes in the order the stage happened to make them, which differs
    from run to run. Here they are numbered in the order the rest of the layer first refers
    to them (a prototype only another prototype refers to, after that one), and written in
    that order, so the same package gives the same text.
    """
    if not FLATTENED_PROTOTYPE.search(text):
        return text
    header, prims = _root_prims(text)
    prototypes = {name: body for name, body, _ in prims if FLATTENED_PROTOTYPE.fullmatch(name)}
    order: list[str] = []
    queue = [body for name, body, _ in prims if name not in prototypes]
    for body in queue:  # grows as prototypes are reached
        for name in FLATTENED_PROTOTYPE.findall(body):
            if name in prototypes and name not in order:
                order.append(name)
                queue.append(prototypes[name])
    # Prototypes nothing refers to (not expected): by their text, their own names left out.
    order += sorted(set(prototypes) - set(order), key=lambda name: FLATTENED_PROTOTYPE.sub("", prototypes[name]))
    # And any other mention, so that no name points at the flattening (Flatten writes prototypes at the root).
    order += [name for name in dict.fromkeys(FLATTENED_PROTOTYPE.findall(text)) if name not in order]
    names, n = {}, 0
    for old in order:
        n += 1
        while f"{base}_{n}" in text:
            n += 1
        names[old] = f"{base}_{n}"
    renamed = iter(prototypes[old] for old in order if old in prototypes)
    out = [header]
    for name, body, gap in prims:
        out += [next(renamed) if name in prototypes else body, gap]
    return FLATTENED_PROTOTYPE.sub(lambda m: names[m.group()], "".join(out))


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

