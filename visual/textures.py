"""Diffuse colour of a textured UsdPreviewSurface, for the renders: the texture's average colour.

The rasterizer shades each part with one colour. When the bound material's ``diffuseColor``
is connected to a ``UsdUVTexture``, that colour is the texture's mean (decoded with Pillow,
linearised when the texture is sRGB, then the node's ``scale`` and ``bias``); when the file
cannot be read, the node's ``fallback``, as a renderer would show. The file is read through
USD's asset resolver, so package members of a ``.usdz`` work; only files under the package's
own folder are opened (the validity gate already refuses paths that leave it).
"""
from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
from pxr import Ar, Sdf, UsdShade

MAX_TEXTURE_BYTES = 64 * 1024 * 1024
MAX_TEXTURE_PIXELS = 64 * 1024 * 1024     # Pillow's decompression-bomb guard, made explicit
SAMPLE_SIZE = 64                          # textures are reduced to at most 64 x 64 before averaging


def _srgb_to_linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else math.pow((c + 0.055) / 1.055, 2.4)


# built with libm's pow, one value per 8-bit level: the same on every machine of this kind
_LINEAR = np.array([_srgb_to_linear(i / 255.0) for i in range(256)], dtype=np.float64)


def _source(inp: UsdShade.Input):
    """The shader and output an input is connected to, or None."""
    if not inp or not inp.HasConnectedSource():
        return None
    sources = inp.GetConnectedSources()[0]
    if not sources:
        return None
    return UsdShade.Shader(sources[0].source.GetPrim()), sources[0].sourceName


def _vec(shader: UsdShade.Shader, name: str, default: tuple) -> np.ndarray:
    inp = shader.GetInput(name)
    value = inp.Get() if inp else None
    try:
        out = np.array([float(v) for v in value], dtype=np.float64)
    except (TypeError, ValueError):
        return np.array(default, dtype=np.float64)
    return out if len(out) == len(default) and np.all(np.isfinite(out)) else np.array(default, dtype=np.float64)


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


def _mean_rgb(data: bytes, srgb: bool) -> np.ndarray | None:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.width * image.height > MAX_TEXTURE_PIXELS:
                return None
            rgb = image.convert("RGB")
            rgb.thumbnail((SAMPLE_SIZE, SAMPLE_SIZE), Image.Resampling.BOX)
            pixels = np.asarray(rgb, dtype=np.uint8).reshape(-1, 3)
    except Exception:  # not an image Pillow reads: the texture does not load
        return None
    if not len(pixels):
        return None
    values = _LINEAR[pixels] if srgb else pixels.astype(np.float64) / 255.0
    return values.sum(axis=0) / len(values)


def textured_diffuse(material: UsdShade.Material | None, package: Path) -> tuple[tuple, str] | None:
    """(rgb, how) when the material's diffuseColor comes from a UsdUVTexture: how is "texture" (its
    average colour) or "texture_fallback" (the file did not load); None when it is not textured."""
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
    fallback = _vec(node, "fallback", (0.0, 0.0, 0.0, 1.0))
    scale = _vec(node, "scale", (1.0, 1.0, 1.0, 1.0))
    bias = _vec(node, "bias", (0.0, 0.0, 0.0, 0.0))
    space = node.GetInput("sourceColorSpace")
    srgb = (space.Get() if space else "auto") != "raw"   # 8-bit images are sRGB under "auto"
    file_input = node.GetInput("file")
    data = _read_asset(file_input.GetAttr() if file_input else None, package)
    mean = _mean_rgb(data, srgb) if data else None
    if mean is None:
        rgb, how = fallback[:3], "texture_fallback"
    else:
        rgb, how = mean * scale[:3] + bias[:3], "texture"
    if output in ("r", "g", "b"):                         # one channel feeding a colour: grey
        channel = {"r": 0, "g": 1, "b": 2}[output]
        rgb = np.repeat(rgb[channel], 3)
    return tuple(float(min(max(c, 0.0), 1.0)) for c in rgb), how
