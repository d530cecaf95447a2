"""Trusted renders: a small deterministic software rasterizer (numpy, float64, no threads;
the drawing itself is visual/raster.py).

The verifier renders the verified bytes itself: every visible gprim of the composed stage
(meshes and implicit prims, through ``usd_repair_verifier.stage_snapshot.geometry.prim_triangles``) is drawn
with its diffuse colour (bound visual material, else display colour) under a fixed light (a
diffuse colour that comes from a UsdUVTexture is sampled per pixel: ``visual/textures.py``),
with orthographic cameras framed on the union bounds of both stages, so the reference and
candidate views are directly comparable. Output is an 8-bit RGB PNG written with zlib at a
fixed level. Same bytes in, same pixels and same PNG bytes out.
"""
from __future__ import annotations

import dataclasses
import hashlib
import struct
import zlib
from pathlib import Path

import numpy as np
from pxr import Usd, UsdGeom, UsdShade

from usd_repair_verifier.stage_snapshot import geometry, materials, parts
from usd_repair_verifier.stage_snapshot.content_cache import CACHE
from usd_repair_verifier.stage_snapshot.variant_selections import applied_selections, open_selected

from . import textures
from .raster import Scene, draw

RENDERER_VERSION = "visual-raster-3"
SIZE = 512
MARGIN = 1.12                       # framing: the union bounds fill 1/MARGIN of the image
FALLBACK_COLOR = (0.18, 0.18, 0.18)  # UsdPreviewSurface default diffuse
ROOT_SUFFIXES = (".usd", ".usda", ".usdc", ".usdz")
SUPERSAMPLE = 3                      # anti-aliasing: each pixel is the mean of 3 x 3 samples
PROBE_SIZE = 96                      # the low-resolution renders that pick the front
# horizontal directions a camera may look from, in the order that settles ties
HORIZONTAL = ((0.0, -1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (-1.0, 0.0, 0.0))
ROLES = ("reference", "candidate", "difference")

# name -> (direction the camera looks along, screen-up hint); Z-up world after normalisation.
VIEWS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "front": ((0.0, 1.0, 0.0), (0.0, 0.0, 1.0)),            # camera at -Y looking +Y
    "side": ((-1.0, 0.0, 0.0), (0.0, 0.0, 1.0)),            # camera at +X looking -X
    "top": ((0.0, 0.0, -1.0), (0.0, 1.0, 0.0)),             # camera above looking down, +Y up
    "three_quarter": ((-1.0, 1.0, -0.8), (0.0, 0.0, 1.0)),  # camera at (+X, -Y, +Z)
    "three_quarter_rear": ((1.0, -1.0, -0.8), (0.0, 0.0, 1.0)),  # camera at (-X, +Y, +Z)
}


class RenderError(Exception):
    """The package cannot be rendered (no single root layer, stage does not open)."""


def root_layer(package: Path) -> Path:
    package = Path(package)
    roots = sorted(p for p in package.iterdir() if p.is_file() and p.suffix.lower() in ROOT_SUFFIXES)
    if len(roots) != 1:
        raise RenderError(f"{package}: expected exactly one root layer, found {len(roots)}")
    return roots[0]


def _texture(prim: Usd.Prim, package: Path, cache: dict) -> textures.Texture | None:
    """The texture feeding the part's bound diffuseColor (decoded once per material), or None."""
    try:
        material = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial()[0]
        key = str(material.GetPath()) if material else None
        if key not in cache:
            cache[key] = textures.diffuse_texture(material, package)
        return cache[key]
    except Exception:  # a strange network must not stop the render: the plain colours of _color
        return None


def _color(prim: Usd.Prim, package: Path, texture: textures.Texture | None = None
           ) -> tuple[tuple[float, float, float], str]:
    """The part's diffuse colour and where it came from: "texture" (sampled per pixel; the colour
    here is the texture's mean), "texture_fallback" (the texture did not load: its fallback colour),
    "material", "display_color" or "default"."""
    if texture is not None:
        return texture.flat_colour(), "texture" if texture.loaded else "texture_fallback"
    candidates = []
    try:
        bound = materials.visual_material(prim)
    except Exception:  # a strange network must not stop the render: fall back to display colour
        bound = None
    if bound is not None:
        candidates.append((bound.surface.get("diffuseColor"), "material"))
    candidates.append((materials.display_surface(prim).surface.get("diffuseColor"), "display_color"))
    for value, how in candidates:
        try:
            rgb = tuple(float(c) for c in value)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            continue
        if len(rgb) == 3 and all(np.isfinite(rgb)):
            return tuple(min(max(c, 0.0), 1.0) for c in rgb), how  # type: ignore[return-value]
    return FALLBACK_COLOR, "default"


def load_scene(package: Path, variant_selections: dict | None = None) -> Scene:
    """Every visible gprim of the package's composed stage (with the case's `variant_selections` in
    its session layer, as the grade composes it), as coloured world triangles."""
    path = root_layer(package)
    try:
        stage = open_selected(path, variant_selections)
    except Exception as error:
        raise RenderError(f"cannot open {path}: {error}") from error
    if stage is None:
        raise RenderError(f"cannot open {path}")
    mpu = float(UsdGeom.GetStageMetersPerUnit(stage)) or 0.01
    y_up = UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.y
    cache = UsdGeom.XformCache()
    tris, cols, ids, count, planes, sources = [], [], [], 0, 0, {}
    tex_ids, corner_st, used_textures, texture_cache, textured = [], [], [], {}, {}
    for prim in stage.Traverse(Usd.TraverseInstanceProxies(Usd.PrimDefaultPredicate)):
        if not prim.IsA(UsdGeom.Gprim) or not parts.is_visible(prim):
            continue
        if prim.IsA(UsdGeom.Plane):  # an unbounded ground plane would swamp the framing
            planes += 1
            continue
        soup = geometry.prim_triangles(prim, cache.GetLocalToWorldTransform(prim), mpu)
        if soup is None or len(soup.faces) == 0:
            continue
        texture = _texture(prim, Path(package), texture_cache)
        sampled = texture is not None and texture.loaded
        t, st = soup.vertices[soup.faces], None
        if sampled:
            try:
                t, st = textures.corner_st(prim, soup, texture)
            except Exception:  # malformed coordinates: the reader's fallback everywhere
                st = None
            if st is None:
                st = np.broadcast_to(np.array(texture.st_fallback, dtype=np.float64), (len(t), 3, 2))
        else:
            st = np.zeros((len(t), 3, 2))
        finite = np.isfinite(t).all(axis=(1, 2)) & np.isfinite(st).all(axis=(1, 2))
        t, st = t[finite], st[finite]
        if len(t) == 0:
            continue
        tris.append(t)
        corner_st.append(st)
        if sampled:
            slot = next((i for i, u in enumerate(used_textures) if u is texture), len(used_textures))
            if slot == len(used_textures):
                used_textures.append(texture)
            tex_ids.append(np.full(len(t), slot, dtype=np.int64))
        else:
            tex_ids.append(np.full(len(t), -1, dtype=np.int64))
        rgb, how = _color(prim, Path(package), texture)
        if texture is not None:
            textured[str(prim.GetPath())] = how
        sources[how] = sources.get(how, 0) + 1
        cols.append(np.broadcast_to(np.array(rgb, dtype=np.float64), (len(t), 3)))
        ids.append(np.full(len(t), count, dtype=np.int64))
        count += 1
    if not tris:
        return Scene(np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros(0, dtype=np.int64), 0, planes)
    triangles = np.ascontiguousarray(np.concatenate(tris), dtype=np.float64)
    if y_up:  # rotate +90 degrees about X: (x, y, z) -> (x, -z, y)
        triangles = np.stack([triangles[..., 0], -triangles[..., 2], triangles[..., 1]], axis=-1)
    return Scene(triangles, np.ascontiguousarray(np.concatenate(cols)), np.concatenate(ids), count, planes,
                 dict(sorted(sources.items())), np.concatenate(tex_ids),
                 np.ascontiguousarray(np.concatenate(corner_st), dtype=np.float64), tuple(used_textures),
                 dict(sorted(textured.items())))


def union_bounds(*scenes: Scene) -> np.ndarray:
    boxes = [b for b in (s.bounds() for s in scenes) if b is not None]
    if not boxes:
        return np.array([[-0.5, -0.5, -0.5], [0.5, 0.5, 0.5]])
    lo = np.min([b[0] for b in boxes], axis=0)
    hi = np.max([b[1] for b in boxes], axis=0)
    return np.stack([lo, hi])


def _unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return v / np.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


def _cross(a, b) -> np.ndarray:
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def camera(view: str, bounds: np.ndarray, size: int = SIZE, directions: dict | None = None) -> dict:
    """Orthographic camera for a named view, framed on ``bounds`` (same for both stages).
    ``directions``: view name -> (looking along, screen-up hint); default VIEWS."""
    look, hint = (directions or VIEWS)[view]
    forward = _unit(look)
    right = _unit(_cross(forward, hint))
    up = _cross(right, forward)
    center = (bounds[0] + bounds[1]) * 0.5
    corners = np.array([[x, y, z] for x in bounds[:, 0] for y in bounds[:, 1] for z in bounds[:, 2]]) - center
    u = corners[:, 0] * right[0] + corners[:, 1] * right[1] + corners[:, 2] * right[2]
    v = corners[:, 0] * up[0] + corners[:, 1] * up[1] + corners[:, 2] * up[2]
    half = max(float(np.abs(u).max()), float(np.abs(v).max()), 1e-6) * MARGIN
    # key light from the camera's upper left, slightly behind it
    light = _unit(-forward * 0.75 + up * 0.55 - right * 0.35)
    return {"view": view, "forward": forward, "right": right, "up": up, "center": center,
            "half_extent": half, "light": light, "size": size}


def _drawing_inputs(scene: Scene, cam: dict, *settings) -> tuple:
    """Everything a drawing is computed from, as content-cache inputs (arrays by their bytes): the
    scene's arrays and textures, the camera, the settings."""
    texture_fields = tuple(getattr(t, f.name) for t in scene.textures for f in dataclasses.fields(t))
    return (scene.triangles, scene.colors, scene.part_ids, scene.texture_ids, scene.st, *texture_fields,
            tuple(sorted(cam)), *(cam[k] for k in sorted(cam)), *settings)


def rasterize(scene: Scene, cam: dict, supersample: int = 1) -> np.ndarray:
    """(size, size, 3) uint8 image: z-buffered, flat Lambert shaded, two-sided; with ``supersample`` s,
    drawn at s times the size and each pixel the mean of its s x s samples (added in a fixed order).
    A pure function of the scene, the camera and s: the same drawing met again (a case's reference
    rendered for submission after submission, a candidate that left the scene as it was) comes
    from the content cache."""
    return CACHE.get_or_compute("rasterize", _drawing_inputs(scene, cam, int(supersample)),
                                lambda: _rasterize(scene, cam, supersample), min_bytes=0)


def _rasterize(scene: Scene, cam: dict, supersample: int) -> np.ndarray:
    size = cam["size"]
    if supersample > 1:
        hi, _ = draw(scene, {**cam, "size": size * supersample}, outline_px=supersample)
        acc = np.zeros((size, size, 3))
        for i in range(supersample):
            for j in range(supersample):
                acc += hi[i::supersample, j::supersample]
        return np.round(np.clip(acc / (supersample * supersample), 0.0, 1.0) * 255.0).astype(np.uint8)
    image, _ = draw(scene, cam, outline_px=1)
    return np.round(np.clip(image, 0.0, 1.0) * 255.0).astype(np.uint8)


def visible_parts(scene: Scene, cam: dict) -> int:
    """How many distinct parts a camera sees (at the camera's size, no anti-aliasing); from the
    content cache when the same scene was probed from the same camera before."""
    return CACHE.get_or_compute("visible_parts", _drawing_inputs(scene, cam),
                                lambda: len(draw(scene, cam, outline_px=1, sample_textures=False)[1]), min_bytes=0)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(image: np.ndarray) -> bytes:
    """8-bit RGB PNG, filter 0 on every row, zlib level 9: fully determined by the pixels."""
    image = np.ascontiguousarray(image, dtype=np.uint8)
    height, width, channels = image.shape
    if channels != 3:
        raise ValueError("RGB images only")
    raw = np.zeros((height, width * 3 + 1), dtype=np.uint8)
    raw[:, 1:] = image.reshape(height, width * 3)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr)
            + _chunk(b"IDAT", zlib.compress(raw.tobytes(), 9)) + _chunk(b"IEND", b""))


def decode_png(data: bytes) -> np.ndarray:
    """Inverse of encode_png (filter 0 only): for tests and checks."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, width * 3 + 1)
    return raw[:, 1:].reshape(height, width, 3).copy()


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def asset_views(scene: Scene, bounds: np.ndarray) -> dict:
    """The five views oriented on the asset: "front" looks at the horizontal side from which the most
    parts are visible (doors, drawers and handles face out; a back panel hides everything), ties
    settled by a fixed order; "side" is to the front's right, the three-quarter views between them
    and from above. Z up (the scene is normalised)."""
    seen = []
    for k, d in enumerate(HORIZONTAL):
        look = (-d[0], -d[1], -d[2])
        cam = camera("probe", bounds, PROBE_SIZE, {"probe": (look, (0.0, 0.0, 1.0))})
        seen.append((-visible_parts(scene, cam), k))
    front = HORIZONTAL[min(seen)[1]]                       # the camera stands on this side
    right = (-front[1], front[0], 0.0)                     # 90 degrees counter-clockwise seen from above
    up = (0.0, 0.0, 1.0)
    return {
        "front": ((-front[0], -front[1], 0.0), up),
        "side": ((-right[0], -right[1], 0.0), up),
        "top": ((0.0, 0.0, -1.0), (-front[0], -front[1], 0.0)),
        "three_quarter": ((-front[0] - right[0], -front[1] - right[1], -0.8), up),
        "three_quarter_rear": ((front[0] + right[0], front[1] + right[1], -0.8), up),
    }


def difference(reference: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """Black where the two renders agree; the candidate's pixel where they differ (a missing part
    shows the background's grey, so every difference is bright against black)."""
    differs = np.any(reference != candidate, axis=-1)
    out = np.zeros_like(candidate)
    out[differs] = np.maximum(candidate[differs], 64)     # never so dark it reads as agreement
    return out


def render_pair(reference: Path, candidate: Path, out_dir: Path | None = None,
                views=tuple(VIEWS), size: int = SIZE, variant_selections: dict | None = None) -> dict:
    """Render both packages in every view, framed on their union bounds, and their difference.

    Returns {"renderer", "size", "views", "bounds", "reference": {view: {file, digest, png, ...}},
    "candidate": {...}, "difference": {view: {..., "differing_pixels"}}}; PNG bytes are under "png"
    (dropped by the caller before recording). Files go to out_dir/<role>_<view>.png when out_dir is given.
    """
    # As the grade composes them: the case's selections, the named prims' other sets held at the reference's.
    applied = applied_selections(root_layer(reference), variant_selections or {})
    scenes = {"reference": load_scene(reference, applied), "candidate": load_scene(candidate, applied)}
    bounds = union_bounds(*scenes.values())
    directions = asset_views(scenes["reference"], bounds)      # the reference's views, for both
    result: dict = {"renderer": RENDERER_VERSION, "size": size, "views": list(views),
                    "supersample": SUPERSAMPLE, "bounds_m": bounds.tolist(),
                    "view_directions": {v: [list(map(float, directions[v][0])), list(map(float, directions[v][1]))]
                                        for v in views},
                    "triangles": {k: int(len(s.triangles)) for k, s in scenes.items()},
                    "gprims": {k: s.gprims for k, s in scenes.items()},
                    "skipped_ground_planes": {k: s.skipped_planes for k, s in scenes.items()},
                    "colour_sources": {k: s.colour_sources for k, s in scenes.items()},
                    "textured_parts": {k: s.textured_parts or {} for k, s in scenes.items()}}
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    result.update({role: {} for role in ROLES})
    for view in views:
        cam = camera(view, bounds, size, directions)
        pixels = {role: rasterize(scene, cam, SUPERSAMPLE) for role, scene in scenes.items()}
        pixels["difference"] = difference(pixels["reference"], pixels["candidate"])
        for role in ROLES:
            png = encode_png(pixels[role])
            entry = {"file": f"{role}_{view}.png", "digest": sha256(png), "png": png}
            if role == "difference":
                entry["differing_pixels"] = int(np.count_nonzero(np.any(pixels[role] != 0, axis=-1)))
            if out_dir is not None:
                (Path(out_dir) / entry["file"]).write_bytes(png)
            result[role][view] = entry
    return result
