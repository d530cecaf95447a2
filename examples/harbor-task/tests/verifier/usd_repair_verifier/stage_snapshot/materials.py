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

Comparisons return named components ``name -> (error, tolerance)``; a
component passes when ``error <= tolerance``.  0/1 components have tolerance 0.
"""
from __future__ import annotations

import hashlib
import math
import os
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from pxr import Ar, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade

__all__ = [
    "VisualMaterial",
    "PhysicsMaterial",
    "visual_material",
    "physics_material",
    "compare_visual",
    "compare_physics",
    "texture_digest",
    "display_surface",
    "PREVIEW_SURFACE_DEFAULTS",
    "VISUAL_PURPOSE",
    "LARGE_ERROR",
    "MAX_TEXTURE_BYTES",
]

VISUAL_PURPOSE = "preview"
LARGE_ERROR = 50.0
MAX_TEXTURE_BYTES = 64 * 1024 * 1024

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
_RESERVED = {"bound", "shader"}


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
    """A Usd value as plain Python: float, str or a tuple of floats."""
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Sdf.AssetPath):
        return value.path
    try:
        seq = list(value)
    except TypeError:
        return str(value)
    if len(seq) == 1 and not isinstance(value, tuple) and hasattr(value, "__len__") \
            and type(value).__module__.startswith("pxr.Vt"):
        return _plain(seq[0])          # a one-element array (constant primvar)
    out = []
    for item in seq:
        p = _plain(item)
        if isinstance(p, tuple):
            out.extend(p)
        elif isinstance(p, float):
            out.append(p)
        else:
            return str(value)
    return tuple(out)


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
# textures
# ---------------------------------------------------------------------------

# Digests by resolved path, kept for one stage read only (`texture_digest_scope`, opened by
# read.read_snapshot): a process that grades many submissions, one after another at the same
# paths, must never reuse the digest of another package's file.
_DIGESTS: ContextVar[dict | None] = ContextVar("usdgrade_texture_digests", default=None)


@contextmanager
def texture_digest_scope():
    token = _DIGESTS.set({})
    try:
        yield
    finally:
        _DIGESTS.reset(token)


def _digest_resolved(resolved: str) -> str | None:
    """sha256 of an asset's bytes by resolved path (files and package members)."""
    outer = resolved.split("[", 1)[0] if resolved.endswith("]") else resolved
    try:
        st = os.stat(outer)
        key = (resolved, st.st_size, st.st_mtime_ns)
    except OSError:
        key = (resolved,)
    memo = _DIGESTS.get()
    hit = memo.get(key) if memo is not None else None
    if hit is not None:
        return hit
    if outer == resolved and os.path.isfile(resolved):
        size = os.path.getsize(resolved)
        if size > MAX_TEXTURE_BYTES:
            out = f"too_large:{size}"
        else:
            h = hashlib.sha256()
            with open(resolved, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            out = "sha256:" + h.hexdigest()
    else:
        asset = Ar.GetResolver().OpenAsset(Ar.ResolvedPath(resolved))
        if asset is None:
            return None
        size = asset.GetSize()
        if size > MAX_TEXTURE_BYTES:
            out = f"too_large:{size}"
        else:
            out = "sha256:" + hashlib.sha256(asset.GetBuffer()).hexdigest()
        del asset
    if memo is not None:
        memo[key] = out
    return out


def _authoring_layer(attr: Usd.Attribute) -> Sdf.Layer | None:
    try:
        for spec in attr.GetPropertyStack(Usd.TimeCode.Default()):
            if spec.HasDefaultValue() or spec.layer.ListTimeSamplesForPath(spec.path):
                return spec.layer
    except Exception:  # pragma: no cover - defensive
        pass
    return None


def texture_digest(attr: Usd.Attribute) -> str:
    """Digest of the file an asset-valued attribute points at (see VisualMaterial)."""
    value = attr.Get()
    if not isinstance(value, Sdf.AssetPath) or not value.path:
        return "missing:"
    authored = value.path
    if UsdShade.UdimUtils.IsUdimIdentifier(authored):
        layer = _authoring_layer(attr)
        tiles = UsdShade.UdimUtils.ResolveUdimTilePaths(authored, layer) if layer else []
        parts = []
        for path, tile in sorted(tiles, key=lambda t: str(t[1])):
            d = _digest_resolved(str(path))
            if d is None:
                continue
            if not d.startswith("sha256:"):
                return d
            parts.append(f"{tile}:{d}")
        if not parts:
            return f"missing:{authored}"
        return "sha256:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()
    resolved = value.resolvedPath
    if not resolved:
        return f"missing:{authored}"
    d = _digest_resolved(resolved)
    return d if d is not None else f"missing:{authored}"


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


# ---------------------------------------------------------------------------
# comparisons
# ---------------------------------------------------------------------------

def _finite(err: float) -> float:
    return err if math.isfinite(err) else LARGE_ERROR


def _value_error(ref, cand, color_tolerance: float, scalar_tolerance: float) -> tuple[float, float]:
    if isinstance(ref, tuple) and isinstance(cand, tuple) and len(ref) == len(cand):
        err = max((abs(a - b) for a, b in zip(ref, cand)), default=0.0)
        return (_finite(err), color_tolerance)
    if isinstance(ref, float) and isinstance(cand, float):
        return (_finite(abs(ref - cand)), scalar_tolerance)
    if isinstance(ref, str) and isinstance(cand, str):
        return (0.0 if ref == cand else 1.0, 0.0)
    # mismatched kinds or an input without any known default
    tol = color_tolerance if isinstance(ref, tuple) or isinstance(cand, tuple) else scalar_tolerance
    return (LARGE_ERROR, tol)


def _same_texture(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return False
    if a.startswith("missing:") and b.startswith("missing:"):
        return True                       # both render the fallback
    return a == b


def compare_visual(reference: VisualMaterial | None, candidate: VisualMaterial | None,
                   color_tolerance: float = 0.02, scalar_tolerance: float = 0.02
                   ) -> dict[str, tuple[float, float]]:
    """Path-independent comparison of two resolved visual materials.

    Components: ``bound``; ``shader``; each surface input by name (colours and
    other tuples: max abs channel difference vs ``color_tolerance``; scalars:
    abs difference vs ``scalar_tolerance``; tokens: 0/1); ``texture.<input>``
    (0/1, same content digest; two missing files both render the fallback and
    count as equal).  An input present on one side only compares against the
    UsdPreviewSurface default.  An input textured on either side is compared
    only through ``texture.<input>``.  When either side is unbound only
    ``bound`` is returned.
    """
    if reference is None or candidate is None:
        return {"bound": (0.0 if reference is None and candidate is None else 1.0, 0.0)}
    out: dict[str, tuple[float, float]] = {"bound": (0.0, 0.0)}
    out["shader"] = (0.0 if reference.shader == candidate.shader else 1.0, 0.0)
    textured = set(reference.textures) | set(candidate.textures)
    for name in sorted((set(reference.surface) | set(candidate.surface)) - textured):
        default = PREVIEW_SURFACE_DEFAULTS.get(name)
        r = reference.surface.get(name, default)
        c = candidate.surface.get(name, default)
        key = f"surface.{name}" if name in _RESERVED or name.startswith("texture.") else name
        out[key] = _value_error(r, c, color_tolerance, scalar_tolerance)
    for name in sorted(textured):
        same = _same_texture(reference.textures.get(name), candidate.textures.get(name))
        out[f"texture.{name}"] = (0.0 if same else 1.0, 0.0)
    return out


def compare_physics(reference: PhysicsMaterial | None, candidate: PhysicsMaterial | None,
                    relative_tolerance: float = 0.01, *, absolute_tolerance: float = 0.01
                    ) -> dict[str, tuple[float, float]]:
    """Path-independent comparison of two resolved physics materials.

    Components: ``bound``; ``static_friction``, ``dynamic_friction``,
    ``restitution`` (abs difference vs ``absolute_tolerance``); ``density``
    (|log ratio| vs log(1 + relative_tolerance); both unset (<= 0) -> 0, one
    unset -> LARGE_ERROR).  When either side is unbound only ``bound`` is
    returned.
    """
    if reference is None or candidate is None:
        return {"bound": (0.0 if reference is None and candidate is None else 1.0, 0.0)}
    out: dict[str, tuple[float, float]] = {"bound": (0.0, 0.0)}
    for name in ("static_friction", "dynamic_friction", "restitution"):
        err = abs(getattr(reference, name) - getattr(candidate, name))
        out[name] = (_finite(err), absolute_tolerance)
    a, b = reference.density, candidate.density
    a_set = math.isfinite(a) and a > 0
    b_set = math.isfinite(b) and b > 0
    if not a_set and not b_set:
        err = 0.0
    elif a_set != b_set:
        err = LARGE_ERROR
    else:
        err = abs(math.log(a / b))
    out["density"] = (_finite(err), math.log1p(relative_tolerance))
    return out
