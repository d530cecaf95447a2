"""Resolved visual and physics materials as plain, comparable data.

Two materials are "the same" when what they do is the same: the surface a
renderer shades with (UsdPreviewSurface parameters and texture *content*), or
the friction / restitution / density a physics engine uses.  Prim paths are
kept for reports only and never compared: a repaired asset may name, nest or
reference its materials differently.

Binding rules (measured on usd-core 26.11, pinned by tests/test_materials.py)
----------------------------------------------------------------------------
Visual (``visual_material``)
  ``UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial(purpose)`` with
  ``purpose="preview"`` by default: Hydra's default material-binding purpose
  (``HdRenderDelegate::GetMaterialBindingPurpose``, used by Storm / usdview and
  most delegates; HdPrman asks for ``"full"``).  UsdShade falls back to the
  all-purpose binding when there is no binding of that purpose anywhere up the
  namespace; it handles bindings inherited from ancestors, collection-based
  bindings and ``bindMaterialAs = strongerThanDescendants``.  A binding whose
  target is missing or is not a ``Material`` resolves to *no* material (it does
  not fall back to a weaker binding), which renderers draw with their default:
  reported as ``None``.  Bindings authored on prims without MaterialBindingAPI
  applied are still honoured (with a UsdShade warning), exactly as the
  renderers' binding resolution does.
  Surface shader: like Storm, the ``glslfx`` then ``mtlx`` render-context
  surface outputs first, then the universal ``outputs:surface``, then any other
  context (``mdl``, ``ri``, ...; alphabetical).

Physics (``physics_material``): the rule of ``UsdPhysics``'s own parser
  (``UsdPhysicsLoadStageFromPrimRange`` -> shape descriptor ``materials``):
  * the collider prim itself must have MaterialBindingAPI applied, otherwise
    the collider has *no* physics material, even if an ancestor binds one
    (``UsdPhysicsRigidBodyAPI.ComputeMassProperties`` differs here: it does use
    the inherited material's density; pass ``require_binding_api=False`` for
    that rule);
  * then ``ComputeBoundMaterial("physics")``: the physics-purpose binding found
    anywhere up the namespace (strength rules as above) wins over any
    all-purpose binding, even one authored on the collider itself; only when
    there is no physics-purpose binding at all does the all-purpose one count;
  * the resulting prim must have ``PhysicsMaterialAPI`` applied, otherwise
    there is no physics material.  There is no further fallback: a
    physics-purpose binding to a render-only material hides an all-purpose
    physics material (the parser and ComputeMassProperties both ignore it).
  Unauthored friction / restitution / density read as the schema defaults (0).

Texture-valued inputs are read as content digests (texture_digest.py); the
comparison of two resolved materials is measuring, in checks/materials.py.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from pxr import Sdf, Usd, UsdGeom, UsdPhysics, UsdShade

from .scene import plain
from .texture_digest import texture_digest

__all__ = [
    "VisualMaterial",
    "PhysicsMaterial",
    "visual_material",
    "physics_material",
    "display_surface",
    "PREVIEW_SURFACE_DEFAULTS",
    "VISUAL_PURPOSE",
]

VISUAL_PURPOSE = "preview"

# UsdPreviewSurface inputs and defaults (UsdPreviewSurface specification 2.6;
# the Sdr definition shipped with usd-core agrees, up to float32 rounding).
PREVIEW_SURFACE_DEFAULTS: dict[str, object] = {
    "diffuseColor": (0.18, 0.18, 0.18),
    "emissiveColor": (0.0, 0.0, 0.0),
    "useSpecularWorkflow": 0.0,
    "specularColor": (0.0, 0.0, 0.0),
    "metallic": 0.0,
    "roughness": 0.5,
    "clearcoat": 0.0,
    "clearcoatRoughness": 0.01,
    "opacity": 1.0,
    "opacityMode": "transparent",
    "opacityThreshold": 0.0,
    "ior": 1.5,
    "normal": (0.0, 0.0, 1.0),
    "displacement": 0.0,
    "occlusion": 1.0,
}

_PREVIEW_SURFACE_IDS = {"UsdPreviewSurface", "ND_UsdPreviewSurface_surfaceshader"}
_TEXTURE_ID_PREFIXES = ("UsdUVTexture", "ND_UsdUVTexture", "ND_image_", "ND_tiledimage_")
_PRIMVAR_READER_PREFIXES = ("UsdPrimvarReader", "ND_UsdPrimvarReader", "ND_geompropvalue")
_PASS_THROUGH = {"ND_constant_": "value", "ND_dot_": "in"}
_STORM_CONTEXTS = ("glslfx", "mtlx")


@dataclass(frozen=True)
class VisualMaterial:
    """The surface a renderer shades a gprim with.

    ``surface``: every input of the surface shader as a plain value (floats,
    tuples of floats, strings for tokens), authored or default; inputs driven
    by a texture (or by a non-constant primvar / unknown node) are absent here
    and listed in ``textures`` instead.
    ``textures``: input name -> ``"sha256:<hex>"`` of the texture bytes (UDIM:
    a digest over every tile), ``"missing:<authored path>"``,
    ``"too_large:<bytes>"``, ``"primvar:sha256:<hex>"`` (a varying primvar's
    values) or ``"node:<shader id>.<output>"`` (an unrecognised upstream node).
    """

    path: str | None
    surface: dict[str, object]
    textures: dict[str, str]
    shader: str


@dataclass(frozen=True)
class PhysicsMaterial:
    """A collider's resolved physics material, in SI units (density kg/m^3)."""

    path: str | None
    static_friction: float
    dynamic_friction: float
    restitution: float
    density: float


# ---------------------------------------------------------------------------
# plain values
# ---------------------------------------------------------------------------

def _plain(value):
    """A Usd value as plain Python: float, str or a tuple of floats (a one-element array, as a
    constant primvar is: its element; a sequence of anything but numbers: its str)."""
    if type(value).__module__.startswith("pxr.Vt") and hasattr(value, "__len__") and not isinstance(value, tuple):
        try:
            items = list(value)
        except TypeError:
            items = None
        if items is not None and len(items) == 1:
            return _plain(items[0])
    flat = plain(value)
    if isinstance(flat, tuple) and not all(isinstance(p, float) for p in flat):
        return str(value)
    return flat


def _shader_id(shader: UsdShade.Shader) -> str:
    try:
        sid = shader.GetShaderId()
    except Exception:  # pragma: no cover - defensive
        sid = None
    if sid:
        return str(sid)
    try:
        for source_type in shader.GetSourceTypes() or []:
            sub = shader.GetSourceAssetSubIdentifier(source_type)
            asset = shader.GetSourceAsset(source_type)
            name = str(sub) if sub else (os.path.basename(asset.path) if asset and asset.path else "")
            if name:
                return f"{source_type}:{name}"
    except Exception:  # pragma: no cover - defensive
        pass
    return ""


def _shader_defaults(sid: str) -> dict[str, object]:
    if sid in _PREVIEW_SURFACE_IDS:
        return dict(PREVIEW_SURFACE_DEFAULTS)
    if not sid:
        return {}
    try:
        from pxr import Sdr

        node = Sdr.Registry().GetShaderNodeByIdentifier(sid)
        if not node:
            return {}
        out = {}
        for name in node.GetShaderInputNames():
            v = _plain(node.GetShaderInput(name).GetDefaultValue())
            if v is not None and not (isinstance(v, str) and not v):
                out[str(name)] = v
        return out
    except Exception:  # pragma: no cover - Sdr unavailable
        return {}


# ---------------------------------------------------------------------------
# visual material
# ---------------------------------------------------------------------------

def _surface_shader(material: UsdShade.Material) -> UsdShade.Shader | None:
    def source(ctx: str):
        shader, _, _ = material.ComputeSurfaceSource(ctx)
        return shader if shader and shader.GetPrim().IsValid() else None

    for ctx in _STORM_CONTEXTS:
        out = material.GetSurfaceOutput(ctx)
        if out and out.HasConnectedSource():
            s = source(ctx)
            if s:
                return s
    s = source("")
    if s:
        return s
    contexts = []
    for out in material.GetSurfaceOutputs():
        name = out.GetBaseName()            # "<ctx>:surface" or "surface"
        if ":" in name:
            contexts.append(name.rsplit(":", 1)[0])
    for ctx in sorted(set(contexts)):
        s = source(ctx)
        if s:
            return s
    return None


def _primvar_value(gprim: Usd.Prim, varname: str):
    """('value', v) for a single-valued primvar, ('digest', d) for a varying one, None if absent."""
    if not gprim or not varname:
        return None
    try:
        pv = UsdGeom.PrimvarsAPI(gprim).FindPrimvarWithInheritance(varname)
    except Exception:  # pragma: no cover - defensive
        return None
    if not pv or not pv.HasValue():
        return None
    try:
        value = pv.ComputeFlattened()
    except Exception:  # indices USD cannot apply: not drawn; the authoring audit names the attribute
        return None
    if value is None:
        return None
    try:
        n = len(value)
    except TypeError:
        return ("value", _plain(value))
    if n == 1 or pv.GetInterpolation() == UsdGeom.Tokens.constant:
        return ("value", _plain(value[0] if n else value))
    flat = _plain(value)
    text = repr(tuple(round(x, 5) for x in flat)) if isinstance(flat, tuple) else repr(flat)
    # The same values spread per vertex or per face draw differently: the interpolation is content.
    text = f"{pv.GetInterpolation()}:{text}"
    return ("digest", "primvar:sha256:" + hashlib.sha256(text.encode()).hexdigest())


def _input_value_attr(inp: UsdShade.Input):
    attrs = inp.GetValueProducingAttributes(False)
    return attrs[0] if attrs else None


def _resolve(attr: Usd.Attribute | None, gprim: Usd.Prim, depth: int = 0):
    """Follow a value-producing attribute to ('value', v) | ('texture', s) | None (default)."""
    if attr is None or depth > 16:
        return None
    if UsdShade.Output.IsOutput(attr):
        node = UsdShade.Shader(attr.GetPrim())
        sid = _shader_id(node)
        out_name = UsdShade.Output(attr).GetBaseName()
        if sid.startswith(_TEXTURE_ID_PREFIXES):
            file_in = node.GetInput("file")
            file_attr = _input_value_attr(file_in) if file_in else None
            return ("texture", texture_digest(file_attr) if file_attr else "missing:")
        if sid.startswith(_PRIMVAR_READER_PREFIXES):
            name_in = node.GetInput("varname") or node.GetInput("geomprop")
            name_attr = _input_value_attr(name_in) if name_in else None
            varname = _plain(name_attr.Get()) if name_attr else None
            got = _primvar_value(gprim, str(varname) if varname else "")
            if got is not None:
                kind, v = got
                return ("value", v) if kind == "value" else ("texture", v)
            fb = node.GetInput("fallback") or node.GetInput("default")
            fb_val = _resolve(_input_value_attr(fb), gprim, depth + 1) if fb else None
            return fb_val if fb_val is not None else ("value", None)
        for prefix, name in _PASS_THROUGH.items():
            if sid.startswith(prefix):
                inner = node.GetInput(name)
                return _resolve(_input_value_attr(inner), gprim, depth + 1) if inner else None
        return ("texture", f"node:{sid}.{out_name}")
    value = attr.Get()
    if value is None:
        return None
    if isinstance(value, Sdf.AssetPath):
        return ("texture", texture_digest(attr))
    return ("value", _plain(value))


def visual_material(prim: Usd.Prim, purpose: str = VISUAL_PURPOSE) -> VisualMaterial | None:
    """The resolved visual material of a gprim, or None when nothing is bound."""
    material, _ = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial(purpose)
    if not material or not material.GetPrim().IsValid():
        return None
    path = str(material.GetPath())
    shader = _surface_shader(material)
    if shader is None:
        return VisualMaterial(path=path, surface={}, textures={}, shader="")
    sid = _shader_id(shader)
    surface = _shader_defaults(sid)
    textures: dict[str, str] = {}
    for inp in shader.GetInputs():
        name = inp.GetBaseName()
        got = _resolve(_input_value_attr(inp), prim)
        if got is None:
            continue                       # unauthored: the default stands
        kind, v = got
        if kind == "texture":
            textures[name] = v
            surface.pop(name, None)
        elif v is not None:
            surface[name] = v
    return VisualMaterial(path=path, surface=dict(sorted(surface.items())),
                          textures=dict(sorted(textures.items())), shader=sid)


def display_surface(prim: Usd.Prim) -> VisualMaterial:
    """What a renderer draws an *unbound* gprim with: its display primvars.

    Not part of ``visual_material`` (which reports ``None`` when nothing is
    bound); converted MuJoCo models leave most geoms unbound and colour them
    with ``primvars:displayColor``, so a caller comparing unbound gprims can
    compare these instead.  ``shader`` is ``"displayColor"``; ``diffuseColor``
    and ``opacity`` come from ``displayColor`` / ``displayOpacity`` (inherited
    constant primvars included; a varying primvar goes to ``textures`` as a
    ``primvar:sha256:`` digest); unauthored -> the UsdPreviewSurface defaults.
    """
    surface: dict[str, object] = {"diffuseColor": PREVIEW_SURFACE_DEFAULTS["diffuseColor"],
                                  "opacity": PREVIEW_SURFACE_DEFAULTS["opacity"]}
    textures: dict[str, str] = {}
    for name, primvar in (("diffuseColor", "displayColor"), ("opacity", "displayOpacity")):
        got = _primvar_value(prim, primvar)
        if got is None:
            continue
        kind, v = got
        if kind == "value" and v is not None:
            surface[name] = v
        elif kind == "digest":
            textures[name] = v
            surface.pop(name, None)
    return VisualMaterial(path=None, surface=surface, textures=textures, shader="displayColor")


# ---------------------------------------------------------------------------
# physics material
# ---------------------------------------------------------------------------

def _float(attr: Usd.Attribute, default: float = 0.0) -> float:
    from .typed_read import value  # wrong-typed or non-finite: the default (the audit records it)

    return value(attr, "real", default)


def physics_material(prim: Usd.Prim, meters_per_unit: float, kilograms_per_unit: float,
                     *, require_binding_api: bool = True) -> PhysicsMaterial | None:
    """The physics material a collider simulates with (rule in the module docstring)."""
    binding = UsdShade.MaterialBindingAPI(prim)
    if require_binding_api and not prim.HasAPI(UsdShade.MaterialBindingAPI):
        return None
    material, _ = binding.ComputeBoundMaterial("physics")
    if not material:
        return None
    mprim = material.GetPrim()
    if not mprim.IsValid() or not mprim.HasAPI(UsdPhysics.MaterialAPI):
        return None
    api = UsdPhysics.MaterialAPI(mprim)
    density = _float(api.GetDensityAttr())
    if density != 0.0:
        density = density * kilograms_per_unit / meters_per_unit ** 3
    return PhysicsMaterial(
        path=str(mprim.GetPath()),
        static_friction=_float(api.GetStaticFrictionAttr()),
        dynamic_friction=_float(api.GetDynamicFrictionAttr()),
        restitution=_float(api.GetRestitutionAttr()),
        density=density,
    )
