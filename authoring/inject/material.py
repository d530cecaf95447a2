"""Material faults: a component's visual material unbound or swapped, an unbound part's display
colour or opacity changed, a body's physics material given other friction or restitution.

Models converted from MuJoCo colour most parts with `primvars:displayColor` and bind no visual
material: a renderer draws them with their display colour and opacity. `display_appearance`
recolours such a part, or makes it translucent, by authoring the primvar on the part itself
(constant interpolation, no indices), where the reference authored it.
"""
from __future__ import annotations

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt

from usd_repair_verifier.checks.materials import compare_visual
from usd_repair_verifier.stage_snapshot import materials as material_props

from usd_repair_verifier.authoring.inject.edits import (
    InjectionError, ensure_api, own_colliders, rigid_body, set_attribute, set_targets, strongest_prim_spec,
    target_prim, writable,
)


def _visual_of(prim: Usd.Prim):
    return material_props.visual_material(prim) or material_props.display_surface(prim)


def _visual_differs(a, b) -> bool:
    return any(not (err <= tol) for err, tol in compare_visual(a, b).values())


def _shifted(colour) -> Gf.Vec3f:
    """A colour every channel of which moves by at least 0.2 (inverted, or rotated near grey)."""
    return Gf.Vec3f(*(1.0 - float(c) if abs(1.0 - 2.0 * float(c)) > 0.2 else (float(c) + 0.5) % 1.0
                      for c in colour))


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
    prim = target_prim(stage, target, lambda p: p.IsA(UsdGeom.Gprim), "a visible component (gprim)")
    writable(prim)
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
        inverted = _shifted(colour)
        set_attribute(prim, "primvars:displayColor", Vt.Vec3fArray([inverted]), Sdf.ValueTypeNames.Color3fArray, dirty)
        note = f"primvars:displayColor {tuple(round(float(c), 3) for c in colour)} -> {tuple(round(c, 3) for c in inverted)}"
    elif choice == "unbind":
        set_targets(prim, rel.GetName(), [], dirty)
        note = f"{rel.GetName()} emptied (was {bound.GetPath()})"
    else:
        other = rng.choice(others)
        ensure_api(prim, "MaterialBindingAPI", UsdShade.MaterialBindingAPI, dirty)
        set_targets(prim, rel_name, [other.GetPath()], dirty)
        note = f"{rel_name} -> {other.GetPath()} (was {bound.GetPath() if bound else 'unbound'})"
    if not _visual_differs(current, _visual_of(prim)):
        raise InjectionError(f"{target}: the binding edit did not change the resolved material")
    return note


OPACITY = 0.25   # far from any authored opacity of an opaque part


def display_appearance(stage, target, rng, dirty) -> str:
    """An unbound part's display colour changed, or its display opacity lowered."""
    prim = target_prim(stage, target, lambda p: p.IsA(UsdGeom.Gprim), "a visible component (gprim)")
    if material_props.visual_material(prim) is not None:
        raise InjectionError(f"{target} has a bound material: its display primvars are not what renders")
    writable(prim)
    current = _visual_of(prim)
    colour = current.surface.get("diffuseColor")
    opacity = current.surface.get("opacity")
    options = []
    if isinstance(colour, tuple) and len(colour) == 3:
        options.append("colour")
    if isinstance(opacity, float) and abs(opacity - OPACITY) > 0.2:
        options.append("opacity")
    if not options:
        raise InjectionError(f"{target}: its display colour varies over the surface (not a single colour)")
    choice = rng.choice(options)
    if choice == "colour":
        new = _shifted(colour)
        set_attribute(prim, "primvars:displayColor", Vt.Vec3fArray([new]), Sdf.ValueTypeNames.Color3fArray, dirty)
        note = f"primvars:displayColor {tuple(round(c, 3) for c in colour)} -> {tuple(round(c, 3) for c in new)}"
    else:
        set_attribute(prim, "primvars:displayOpacity", Vt.FloatArray([OPACITY]), Sdf.ValueTypeNames.FloatArray, dirty)
        note = f"primvars:displayOpacity {opacity:.3g} -> {OPACITY}"
    if not _visual_differs(current, _visual_of(prim)):
        raise InjectionError(f"{target}: the display primvar edit did not change what renders")
    return note


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
    spec = strongest_prim_spec(sibling_of)
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
    body = rigid_body(stage, target)
    colliders = [writable(c) for c in own_colliders(body)]
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
        dirty.add(new_spec.layer)
        for c in members:
            ensure_api(c, "MaterialBindingAPI", UsdShade.MaterialBindingAPI, dirty)
            set_targets(c, "material:binding:physics", [new_path], dirty)
        notes.append(f"{mpath or 'no material'} shared with other bodies: copy {new_path} bound to "
                     f"{len(members)} collider(s): " + ", ".join(f"{n}={v:g}" for n, v in values.items()))
    for c in colliders:
        m = _physics_binding(c)
        if m is None or not m.HasAPI(UsdPhysics.MaterialAPI):
            raise InjectionError(f"{c.GetPath()}: the physics binding did not take effect")
    return "; ".join(notes)

