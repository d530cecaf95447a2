"""Textured diffuse colour for the renders: UsdUVTexture images sampled per pixel.

When a part's bound UsdPreviewSurface has its ``diffuseColor`` connected to a ``UsdUVTexture``,
the renderer looks the texture up at every covered pixel (``sample``), at the texture coordinate
interpolated over the triangle from per-corner coordinates (``corner_st``):

- coordinates: the ``st`` input's source, a ``UsdPrimvarReader_float2`` reading the primvar its
  ``varname`` names (any name, found on the prim or inherited), with the primvar's interpolation
  (constant, uniform, vertex, varying, faceVarying) and indices; optionally through a
  ``UsdTransform2d`` (scale, then rotation in degrees, then translation). A primvar that is missing
  or malformed gives the reader's ``fallback`` coordinate everywhere, as a renderer would;
- image: decoded with Pillow (8-bit RGBA), read through USD's asset resolver so members of a
  ``.usdz`` package load; only files under the package's own folder are opened (the validity gate
  already refuses paths that leave it). Caps: ``MAX_TEXTURE_BYTES`` of file, ``MAX_TEXTURE_PIXELS``
  decoded (Pillow's decompression-bomb guard, made explicit); images wider or taller than
  ``MAX_SAMPLED_SIDE`` are box-reduced by a whole factor (a 512 px render never needs more);
- lookup: bilinear between texel centres, ``st`` (0, 0) at the image's lower left; ``wrapS`` /
  ``wrapT`` ``repeat``, ``mirror``, ``clamp`` or ``black`` (also for ``useMetadata``: PNG and JPEG
  carry no wrap metadata, and a texture without an opinion shows black outside [0, 1]);
- colour: ``sourceColorSpace`` ``sRGB`` (and ``auto``, for these 8-bit images) is linearised per
  texel before filtering, ``raw`` is not; then ``scale`` and ``bias`` per channel, and the output
  the surface reads (``rgb``, or one of ``r`` ``g`` ``b`` ``a`` as grey), clamped to [0, 1];
- a file that does not load (missing, unreadable, too big, outside the package) shows the node's
  ``fallback`` colour, flat.

Everything is float64 elementwise arithmetic and table lookups, so the same bytes give the same pixels.
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pxr import Ar, Sdf, Usd, UsdGeom, UsdShade

from usd_repair_verifier.stage_snapshot import geometry

MAX_TEXTURE_BYTES = 64 * 1024 * 1024
MAX_TEXTURE_PIXELS = 64 * 1024 * 1024     # Pillow's decompression-bomb guard, made explicit
MAX_SAMPLED_SIDE = 1024                   # larger images are box-reduced by a whole factor first
WRAP_MODES = ("repeat", "mirror", "clamp", "black")
CHANNELS = {"rgb": None, "r": 0, "g": 1, "b": 2, "a": 3}
COORDINATE_LIMIT = 1.0e6                  # st beyond this is clamped before indexing (no int overflow)


def _srgb_to_linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else math.pow((c + 0.055) / 1.055, 2.4)


# built with libm's pow, one value per 8-bit level: the same on every machine of this kind
_LINEAR = np.array([_srgb_to_linear(i / 255.0) for i in range(256)], dtype=np.float64)


@dataclass(frozen=True)
class Texture:
    """A UsdUVTexture bound to a surface's diffuseColor, ready to sample."""
    texels: np.ndarray | None       # (h, w, 4) float64, bottom row first, rgb linear; None: did not load
    wrap: tuple[str, str]           # (wrapS, wrapT), each one of WRAP_MODES
    scale: np.ndarray               # (4,)
    bias: np.ndarray                # (4,)
    fallback: np.ndarray            # (4,)
    channel: str                    # the output the surface reads: "rgb", "r", "g", "b" or "a"
    varname: str | None             # the primvar the coordinates come from; None: a constant st
    st_fallback: tuple[float, float]
    st_transform: tuple[tuple[float, float], float, tuple[float, float]] | None  # scale, degrees, translation

    @property
    def loaded(self) -> bool:
        return self.texels is not None

    def flat_colour(self) -> tuple[float, float, float]:
        """One colour for the part: the fallback when the file did not load, else the texture's mean
        (only used where a single colour is needed; the renders sample the texture)."""
        if self.texels is None:
            return _clamped_rgb(self.fallback, self.channel)
        mean = self.texels.reshape(-1, 4).sum(axis=0) / (self.texels.shape[0] * self.texels.shape[1])
        return _clamped_rgb(mean * self.scale + self.bias, self.channel)


def _clamped_rgb(rgba: np.ndarray, channel: str) -> tuple[float, float, float]:
    index = CHANNELS[channel]
    rgb = rgba[:3] if index is None else np.repeat(rgba[index], 3)
    return tuple(float(min(max(c, 0.0), 1.0)) for c in rgb)  # type: ignore[return-value]


def _source(inp: UsdShade.Input | None):
    """The shader and output name an input is connected to, or None."""
    if not inp or not inp.HasConnectedSource():
        return None
    sources = inp.GetConnectedSources()[0]
    if not sources:
        return None
    return UsdShade.Shader(sources[0].source.GetPrim()), str(sources[0].sourceName)


def _value(shader: UsdShade.Shader, name: str):
    """An input's value, following a connection to a material's interface input."""
    attr = _attr(shader, name)
    return attr.Get() if attr is not None else None


def _attr(shader: UsdShade.Shader, name: str):
    """The attribute that holds an input's value (an interface input when connected to one)."""
    inp = shader.GetInput(name)
    if not inp:
        return None
    for attr in inp.GetValueProducingAttributes():
        if UsdShade.Input.IsInput(attr):
            return attr
    return None


def _vec(shader: UsdShade.Shader, name: str, default: tuple) -> np.ndarray:
    value = _value(shader, name)
    try:
        out = np.array([float(v) for v in value], dtype=np.float64)
    except (TypeError, ValueError):
        return np.array(default, dtype=np.float64)
    return out if len(out) == len(default) and np.all(np.isfinite(out)) else np.array(default, dtype=np.float64)


def _float(shader: UsdShade.Shader, name: str, default: float) -> float:
    value = _value(shader, name)
    try:
        out = float(value)
    except (TypeError, ValueError):
        return default
    return out if math.isfinite(out) else default


def _token(shader: UsdShade.Shader, name: str, default: str) -> str:
    value = _value(shader, name)
    return str(value) if isinstance(value, str) and value else default


def _read_asset(attr, package: Path) -> bytes | None:
    """The bytes of the asset an attribute names, through the resolver; None when unreadable or outside."""
    value = attr.Get() if attr else None
    if not isinstance(value, Sdf.AssetPath) or not value.resolvedPath:
        return None
    resolved = value.resolvedPath
    outer = resolved.split("[", 1)[0]                 # a .usdz member: "pkg.usdz[member.png]"
    try:
        if not Path(outer).resolve().is_relative_to(Path(package).resolve()):
            return None
        asset = Ar.GetResolver().OpenAsset(Ar.ResolvedPath(resolved))
        if asset is None or asset.GetSize() > MAX_TEXTURE_BYTES:
            return None
        return bytes(asset.GetBuffer())
    except Exception:  # an unreadable asset is a texture that does not load: the fallback shows
        return None


def decode(data: bytes, srgb: bool) -> np.ndarray | None:
    """(h, w, 4) float64 texels, bottom row first, rgb linearised when ``srgb``; None when not an image
    Pillow reads within the caps."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.width * image.height > MAX_TEXTURE_PIXELS or image.width < 1 or image.height < 1:
                return None
            rgba = image.convert("RGBA")
            factor = -(-max(rgba.width, rgba.height) // MAX_SAMPLED_SIDE)
            if factor > 1:
                rgba = rgba.reduce(factor)
            pixels = np.asarray(rgba, dtype=np.uint8)[::-1]
    except Exception:  # not an image Pillow reads: the texture does not load
        return None
    texels = np.empty(pixels.shape, dtype=np.float64)
    texels[..., :3] = _LINEAR[pixels[..., :3]] if srgb else pixels[..., :3] / 255.0
    texels[..., 3] = pixels[..., 3] / 255.0
    return np.ascontiguousarray(texels)


def _wrap(token: str) -> str:
    return token if token in WRAP_MODES else "black"   # useMetadata, or an unknown token


def _coordinates(node: UsdShade.Shader):
    """(varname, reader fallback, UsdTransform2d parameters) for the texture's st input."""
    transform = None
    source = _source(node.GetInput("st"))
    if source is not None and source[0].GetIdAttr().Get() == "UsdTransform2d":
        t2d = source[0]
        transform = (tuple(_vec(t2d, "scale", (1.0, 1.0))), _float(t2d, "rotation", 0.0),
                     tuple(_vec(t2d, "translation", (0.0, 0.0))))
        source = _source(t2d.GetInput("in"))
    if source is None:                                # unconnected: the st input's own value
        constant = tuple(float(v) for v in _vec(node, "st", (0.0, 0.0)))
        return None, constant, transform
    reader = source[0]
    fallback = tuple(float(v) for v in _vec(reader, "fallback", (0.0, 0.0)))
    if reader.GetIdAttr().Get() != "UsdPrimvarReader_float2":
        return None, fallback, transform
    varname = _value(reader, "varname")
    return (str(varname) if isinstance(varname, str) and varname else None), fallback, transform


def diffuse_texture(material: UsdShade.Material | None, package: Path) -> Texture | None:
    """The UsdUVTexture feeding the material's diffuseColor, or None when it is not textured."""
    if material is None:
        return None
    surface = material.ComputeSurfaceSource()[0]
    if not surface:
        return None
    source = _source(surface.GetInput("diffuseColor"))
    if source is None:
        return None
    node, output = source
    if node.GetIdAttr().Get() != "UsdUVTexture":
        return None
    srgb = _token(node, "sourceColorSpace", "auto") != "raw"   # 8-bit images are sRGB under "auto"
    data = _read_asset(_attr(node, "file"), package)
    varname, st_fallback, transform = _coordinates(node)
    return Texture(
        texels=decode(data, srgb) if data else None,
        wrap=(_wrap(_token(node, "wrapS", "useMetadata")), _wrap(_token(node, "wrapT", "useMetadata"))),
        scale=_vec(node, "scale", (1.0, 1.0, 1.0, 1.0)),
        bias=_vec(node, "bias", (0.0, 0.0, 0.0, 0.0)),
        fallback=_vec(node, "fallback", (0.0, 0.0, 0.0, 1.0)),
        channel=output if output in CHANNELS else "rgb",
        varname=varname, st_fallback=st_fallback, st_transform=transform)


# --------------------------------------------------------------------------- coordinates


def _primvar_values(prim: Usd.Prim, varname: str):
    """(values (m, 2), interpolation) of a float2 primvar with its indices applied, or None.
    Indices are checked here rather than by ComputeFlattened, which prints a warning for bad ones."""
    primvar = UsdGeom.PrimvarsAPI(prim).FindPrimvarWithInheritance(varname)
    if not primvar or not primvar.HasValue():
        return None
    try:
        values = np.asarray(primvar.Get(), dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if values.ndim != 2 or values.shape[1] != 2 or len(values) == 0 or not np.isfinite(values).all():
        return None
    if primvar.IsIndexed():
        indices = np.asarray(primvar.GetIndices(), dtype=np.int64).reshape(-1)
        if len(indices) == 0 or indices.min() < 0 or indices.max() >= len(values):
            return None
        values = values[indices]
    return values, str(primvar.GetInterpolation())


def _mesh_topology(prim: Usd.Prim):
    mesh = UsdGeom.Mesh(prim)
    counts = mesh.GetFaceVertexCountsAttr().Get()
    indices = mesh.GetFaceVertexIndicesAttr().Get()
    if counts is None or indices is None:
        return None
    return np.asarray(counts, dtype=np.int64).reshape(-1), np.asarray(indices, dtype=np.int64).reshape(-1)


def corner_st(prim: Usd.Prim, soup: geometry.TriangleSoup, texture: Texture) -> tuple[np.ndarray, np.ndarray]:
    """(triangles (n, 3, 3), st (n, 3, 2)): the soup's triangles and each corner's texture coordinate.

    For a mesh the corners are listed in face-vertex order, so that a faceVarying value follows its
    corner (the soup may have flipped a triangle's winding; the rasterizer is two-sided, so the
    triangles are the same surface). Where the coordinates cannot be had (no such primvar, a length
    that fits no interpolation, an implicit prim with a non-constant primvar), every corner has the
    reader's fallback."""
    triangles = soup.vertices[soup.faces]
    constant = np.broadcast_to(np.array(texture.st_fallback, dtype=np.float64), (len(triangles), 3, 2))
    found = _primvar_values(prim, texture.varname) if texture.varname else None
    st = None
    if found is not None:
        values, interpolation = found
        if interpolation == UsdGeom.Tokens.constant:
            st = np.broadcast_to(values[0], (len(triangles), 3, 2))
        elif prim.IsA(UsdGeom.Mesh):
            mesh_corners = _mesh_corners(prim, soup, values, interpolation)
            if mesh_corners is not None:
                triangles, st = mesh_corners
    st = constant if st is None else st
    return triangles, _transformed(np.ascontiguousarray(st, dtype=np.float64), texture.st_transform)


def _mesh_corners(prim, soup, values, interpolation):
    topology = _mesh_topology(prim)
    if topology is None:
        return None
    counts, indices = topology
    slots = geometry.fan_triangulate(counts, np.arange(len(indices), dtype=np.int64))  # face-vertex slots
    if len(slots) != len(soup.faces):
        return None
    points = indices[slots]
    # read_mesh keeps only the referenced points, in sorted order: map original indices to soup rows
    used = np.unique(points)
    if len(used) != len(soup.vertices):
        return None
    triangles = soup.vertices[np.searchsorted(used, points)]
    if interpolation == UsdGeom.Tokens.faceVarying and len(values) == len(indices):
        return triangles, values[slots]
    if interpolation in (UsdGeom.Tokens.vertex, UsdGeom.Tokens.varying) and len(values) > int(indices.max()):
        return triangles, values[points]
    if interpolation == UsdGeom.Tokens.uniform and len(values) == len(counts):
        face = np.repeat(np.arange(len(counts))[counts >= 3], counts[counts >= 3] - 2)
        return triangles, np.repeat(values[face][:, None, :], 3, axis=1)
    return None


def _transformed(st: np.ndarray, transform) -> np.ndarray:
    """UsdTransform2d: scale, then rotate counter-clockwise by degrees, then translate."""
    if transform is None:
        return st
    (sx, sy), degrees, (tx, ty) = transform
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    u, v = st[..., 0] * sx, st[..., 1] * sy
    return np.stack([u * c - v * s + tx, u * s + v * c + ty], axis=-1)


# --------------------------------------------------------------------------- lookup


def _axis(coord: np.ndarray, n: int, mode: str):
    """Bilinear taps along one axis: (index0, index1, weight of index1, valid0, valid1)."""
    coord = np.clip(coord, -COORDINATE_LIMIT, COORDINATE_LIMIT)
    if mode == "repeat":
        coord = coord - np.floor(coord)
    elif mode == "mirror":
        coord = coord - 2.0 * np.floor(coord * 0.5)
    x = coord * n - 0.5
    base = np.floor(x)
    frac = x - base
    i0 = base.astype(np.int64)
    taps = []
    for i in (i0, i0 + 1):
        if mode == "repeat":
            taps.append((np.mod(i, n), None))
        elif mode == "mirror":
            m = np.mod(i, 2 * n)
            taps.append((np.where(m < n, m, 2 * n - 1 - m), None))
        elif mode == "clamp":
            taps.append((np.clip(i, 0, n - 1), None))
        else:                                         # black outside the image
            taps.append((np.clip(i, 0, n - 1), (i >= 0) & (i < n)))
    return taps[0][0], taps[1][0], frac, taps[0][1], taps[1][1]


def sample(texture: Texture, st: np.ndarray) -> np.ndarray:
    """(m, 3) linear diffuse colour at texture coordinates ``st`` (m, 2): bilinear, wrapped,
    scaled and biased, the surface's output channel, clamped to [0, 1]."""
    texels = texture.texels
    if texels is None:
        return np.broadcast_to(np.array(texture.flat_colour()), (len(st), 3)).copy()
    h, w = texels.shape[:2]
    x0, x1, fx, vx0, vx1 = _axis(st[:, 0], w, texture.wrap[0])
    y0, y1, fy, vy0, vy1 = _axis(st[:, 1], h, texture.wrap[1])
    gx, gy = 1.0 - fx, 1.0 - fy
    flat = texels.reshape(-1, 4)
    out = np.zeros((len(st), 4))
    for (yy, vy, wy) in ((y0, vy0, gy), (y1, vy1, fy)):
        row = yy * w
        for (xx, vx, wx) in ((x0, vx0, gx), (x1, vx1, fx)):
            weight = wy * wx
            if vx is not None:
                weight = np.where(vx, weight, 0.0)
            if vy is not None:
                weight = np.where(vy, weight, 0.0)
            out += np.take(flat, row + xx, axis=0) * weight[:, None]
    out = out * texture.scale + texture.bias
    index = CHANNELS[texture.channel]
    rgb = out[:, :3] if index is None else np.repeat(out[:, index:index + 1], 3, axis=1)
    return np.clip(rgb, 0.0, 1.0)
