"""Fault injector for the appearance of a part no material is bound to.

Models converted from MuJoCo colour most parts with `primvars:displayColor` and bind
no visual material: a renderer draws them with their display colour and opacity. The
fault recolours such a part, or makes it translucent, by authoring the primvar on the
part itself (constant interpolation, no indices), where the reference authored it.
"""
from __future__ import annotations

from pxr import Gf, Sdf, UsdGeom, Vt

from usd_repair_verifier.stage_snapshot import materials

from usd_repair_verifier.authoring.inject import InjectionError, _visual_differs, _visual_of, _writable, set_attribute

OPACITY = 0.25   # far from any authored opacity of an opaque part


def _shifted(colour) -> Gf.Vec3f:
    """A colour every channel of which moves by at least 0.2 (inverted, or rotated near grey)."""
    return Gf.Vec3f(*(1.0 - float(c) if abs(1.0 - 2.0 * float(c)) > 0.2 else (float(c) + 0.5) % 1.0
                      for c in colour))


def display_appearance(stage, target, rng, dirty) -> str:
    """An unbound part's display colour changed, or its display opacity lowered."""
    prim = stage.GetPrimAtPath(target)
    if not prim or not prim.IsA(UsdGeom.Gprim):
        raise InjectionError(f"{target} is not a visible component (gprim)")
    if materials.visual_material(prim) is not None:
        raise InjectionError(f"{target} has a bound material: its display primvars are not what renders")
    _writable(prim)
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


APPEARANCE_INJECTORS = {"display_appearance": display_appearance}
