"""The software rasterizer of the trusted renders: numpy, float64, no threads, same pixels everywhere.

A Scene (world triangles, Z up, each with a linear diffuse colour, a part id and optionally a
texture) is drawn through an orthographic camera (render.camera): z-buffered with exact
tie-breaking, flat two-sided Lambert shading under one key light, textures sampled per pixel
centre (visual/textures.py), outlines where the visible part changes, and display values encoded
to sRGB through a table (so no SIMD pow can change a last bit).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import textures

BACKGROUND = (0.86, 0.87, 0.89)     # neutral light grey (display values, already gamma-encoded)
AMBIENT = 0.30
KEY = 0.70
OUTLINE = 0.55                      # part outlines: colour multiplied by this
FRAGMENT_BUDGET = 3_000_000          # candidate (triangle, pixel) pairs per chunk


@dataclass(frozen=True)
class Scene:
    """What the rasterizer draws (render.load_scene builds it from a package)."""
    triangles: np.ndarray   # (n, 3, 3) world metres, Z up
    colors: np.ndarray      # (n, 3) linear diffuse colour per triangle
    part_ids: np.ndarray    # (n,) index of the gprim each triangle belongs to
    gprims: int
    skipped_planes: int = 0
    colour_sources: dict | None = None   # how many parts got their colour from where (render._color)
    # textured triangles: texture_ids[i] indexes textures (-1: flat colour), st[i] its corners' coordinates
    texture_ids: np.ndarray | None = None   # (n,)
    st: np.ndarray | None = None            # (n, 3, 2)
    textures: tuple = ()                    # textures.Texture, sampled where a triangle refers to one
    textured_parts: dict | None = None      # prim path -> "texture" (sampled) or "texture_fallback"

    def bounds(self) -> np.ndarray | None:
        if len(self.triangles) == 0:
            return None
        flat = self.triangles.reshape(-1, 3)
        return np.stack([flat.min(axis=0), flat.max(axis=0)])


def _srgb(c: float) -> float:
    return c * 12.92 if c <= 0.0031308 else 1.055 * math.pow(c, 1.0 / 2.4) - 0.055


# A table built with libm's pow, not numpy's vectorised pow: numpy may pick SIMD kernels by CPU
# feature, and those can differ in the last bit. Lookups and IEEE + - * / sqrt are exact everywhere.
_SRGB_STEPS = 65535
_SRGB_TABLE = np.array([_srgb(i / _SRGB_STEPS) for i in range(_SRGB_STEPS + 1)], dtype=np.float64)


def _encode_srgb(linear: np.ndarray) -> np.ndarray:
    c = np.clip(linear, 0.0, 1.0)
    return _SRGB_TABLE[np.floor(c * _SRGB_STEPS + 0.5).astype(np.int64)]


class _Screen(NamedTuple):
    """Triangles in pixel space: pixel bounding boxes (``keep``: the triangles that cover a pixel
    centre's box at all) and the plane equations of b0, b1 (barycentrics) and depth, which are
    affine in the pixel centre (qx, qy)."""
    xmin: np.ndarray
    xmax: np.ndarray
    ymin: np.ndarray
    ymax: np.ndarray
    keep: np.ndarray
    b0: tuple   # (a, c, k): b0 = a qx + c qy + k
    b1: tuple
    z: tuple

    def barycentrics(self, tri: np.ndarray, qx: np.ndarray, qy: np.ndarray):
        (a0, c0, k0), (a1, c1, k1) = self.b0, self.b1
        return a0[tri] * qx + c0[tri] * qy + k0[tri], a1[tri] * qx + c1[tri] * qy + k1[tri]


def _shade(scene: Scene, cam: dict) -> np.ndarray:
    """Per triangle: ambient plus the two-sided Lambert term of the key light."""
    e1 = scene.triangles[:, 1] - scene.triangles[:, 0]
    e2 = scene.triangles[:, 2] - scene.triangles[:, 0]
    normal = np.stack([e1[:, 1] * e2[:, 2] - e1[:, 2] * e2[:, 1],
                       e1[:, 2] * e2[:, 0] - e1[:, 0] * e2[:, 2],
                       e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]], axis=1)
    length = np.sqrt(normal[:, 0] ** 2 + normal[:, 1] ** 2 + normal[:, 2] ** 2)
    ok = length > 0
    lit = np.zeros(len(normal))
    L = cam["light"]
    lit[ok] = np.abs(normal[ok, 0] * L[0] + normal[ok, 1] * L[1] + normal[ok, 2] * L[2]) / length[ok]
    return AMBIENT + KEY * lit


def _screen(scene: Scene, cam: dict) -> _Screen:
    """Project the triangles into the camera's pixels (x right, y down, depth larger is farther)."""
    size = cam["size"]
    r, u, f, c = cam["right"], cam["up"], cam["forward"], cam["center"]
    p = scene.triangles - c
    px, py, pz = p[..., 0], p[..., 1], p[..., 2]
    scale = size / (2.0 * cam["half_extent"])
    sx = (px * r[0] + py * r[1] + pz * r[2]) * scale + size * 0.5           # (n, 3) pixel x
    sy = size * 0.5 - (px * u[0] + py * u[1] + pz * u[2]) * scale           # (n, 3) pixel y (down)
    depth = px * f[0] + py * f[1] + pz * f[2]
    x0, x1, x2 = sx[:, 0], sx[:, 1], sx[:, 2]
    y0, y1, y2 = sy[:, 0], sy[:, 1], sy[:, 2]
    area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
    xmin = np.maximum(np.ceil(np.minimum(np.minimum(x0, x1), x2) - 0.5), 0).astype(np.int64)
    xmax = np.minimum(np.floor(np.maximum(np.maximum(x0, x1), x2) - 0.5), size - 1).astype(np.int64)
    ymin = np.maximum(np.ceil(np.minimum(np.minimum(y0, y1), y2) - 0.5), 0).astype(np.int64)
    ymax = np.minimum(np.floor(np.maximum(np.maximum(y0, y1), y2) - 0.5), size - 1).astype(np.int64)
    keep = np.nonzero((np.abs(area) > 1e-9) & (xmax >= xmin) & (ymax >= ymin))[0]
    safe = np.where(area == 0, 1.0, area)
    # b0(q) = ((x1-qx)(y2-qy) - (x2-qx)(y1-qy)) / area = a0 qx + c0 qy + k0 (likewise b1)
    a0, c0, k0 = (y1 - y2) / safe, (x2 - x1) / safe, (x1 * y2 - x2 * y1) / safe
    a1, c1, k1 = (y2 - y0) / safe, (x0 - x2) / safe, (x2 * y0 - x0 * y2) / safe
    d0, d1, d2 = depth[:, 0], depth[:, 1], depth[:, 2]
    # z = b0 d0 + b1 d1 + (1 - b0 - b1) d2
    z = (a0 * (d0 - d2) + a1 * (d1 - d2), c0 * (d0 - d2) + c1 * (d1 - d2), k0 * (d0 - d2) + k1 * (d1 - d2) + d2)
    return _Screen(xmin, xmax, ymin, ymax, keep, (a0, c0, k0), (a1, c1, k1), z)


# A barycentric whose change along a row is below this (per pixel) bounds nothing in _row_spans:
# its boundary's x is left to the exact per-fragment test.
_FLAT_GRADIENT = 1e-7


def _row_spans(screen: _Screen, idx: np.ndarray):
    """For each row of each triangle's pixel box: (triangle, row, first x, count) of a run of
    pixels that holds every pixel centre of the row inside the triangle.

    Each barycentric is affine along a row, so its sign changes at most once: b0 >= 0, b1 >= 0
    and b0 + b1 <= 1 each clip the row to a half-line. The clip is widened by one pixel on each
    side, so rounding can only keep a pixel the exact test in _nearest_triangles then rejects,
    never drop one it accepts; a gradient near zero clips nothing."""
    (a0, c0, k0), (a1, c1, k1) = screen.b0, screen.b1
    heights = (screen.ymax - screen.ymin + 1)[idx]
    tri = np.repeat(idx, heights)
    row = screen.ymin[tri] + (np.arange(int(heights.sum()), dtype=np.int64)
                              - np.repeat(np.cumsum(heights) - heights, heights))
    qy = row + 0.5
    lo, hi = screen.xmin[tri].astype(np.float64), screen.xmax[tri].astype(np.float64)
    # each constraint as A qx >= B
    for a, b in ((a0[tri], -(c0[tri] * qy + k0[tri])), (a1[tri], -(c1[tri] * qy + k1[tri])),
                 (-(a0[tri] + a1[tri]), (c0[tri] + c1[tri]) * qy + (k0[tri] + k1[tri]) - 1.0)):
        rising, falling = a > _FLAT_GRADIENT, a < -_FLAT_GRADIENT
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            edge = np.clip(b / np.where(rising | falling, a, 1.0) - 0.5, lo - 2.0, hi + 2.0)  # in pixel x
        lo = np.where(rising, np.maximum(lo, np.ceil(edge) - 1.0), lo)
        hi = np.where(falling, np.minimum(hi, np.floor(edge) + 1.0), hi)
    count = np.maximum(hi - lo + 1.0, 0.0).astype(np.int64)
    keep = count > 0
    return tri[keep], row[keep], lo[keep].astype(np.int64), count[keep]


def _nearest_triangles(screen: _Screen, size: int) -> np.ndarray:
    """Z-buffer: per pixel the index of the nearest triangle covering its centre, -1 for none.
    Exact depth ties go to the lowest triangle index, so the result does not depend on chunking."""
    keep = screen.keep
    za, zc, zk = screen.z
    zbuf = np.full(size * size, np.inf)
    owner = np.full(size * size, -1, dtype=np.int64)
    none = np.iinfo(np.int64).max
    # A chunk's nearest depth and lowest winning triangle per pixel, kept in two screen-sized
    # buffers that only the chunk's own pixels touch and are reset at its end: a chunk costs its
    # fragments, not two copies of the whole screen.
    chunk_z = np.full(size * size, np.inf)
    chunk_best = np.full(size * size, none, dtype=np.int64)
    boxes = ((screen.xmax - screen.xmin + 1) * (screen.ymax - screen.ymin + 1))[keep]
    start = 0
    while start < len(keep):
        # deterministic chunking by a running budget of box pixels (at least one triangle per chunk)
        csum = np.cumsum(boxes[start:])
        stop = start + max(1, int(np.searchsorted(csum, FRAGMENT_BUDGET, side="right")))
        span_tri, span_row, span_x, span_n = _row_spans(screen, keep[start:stop])
        tri = np.repeat(span_tri, span_n)
        pxi = np.repeat(span_x, span_n) + (np.arange(int(span_n.sum()), dtype=np.int64)
                                           - np.repeat(np.cumsum(span_n) - span_n, span_n))
        pyi = np.repeat(span_row, span_n)
        qx, qy = pxi + 0.5, pyi + 0.5
        b0, b1 = screen.barycentrics(tri, qx, qy)
        inside = (b0 >= 0) & (b1 >= 0) & (b0 + b1 <= 1.0)
        tri, qx, qy = tri[inside], qx[inside], qy[inside]
        pix = (pyi[inside] * size + pxi[inside])
        z = za[tri] * qx + zc[tri] * qy + zk[tri]
        if len(pix):
            np.minimum.at(chunk_z, pix, z)              # nearest depth per pixel (order-free)
            before = zbuf[pix]
            nearest = np.minimum(before, chunk_z[pix])
            win = (z == nearest) & (z < before)         # earlier chunks win exact ties
            won = pix[win]
            np.minimum.at(chunk_best, won, tri[win])    # exact ties: lowest triangle index
            owner[won] = chunk_best[won]
            zbuf[pix] = nearest
            chunk_z[pix] = np.inf
            chunk_best[won] = none
        start = stop
    return owner


def _draw_textures(image: np.ndarray, scene: Scene, screen: _Screen, owner: np.ndarray,
                   shade: np.ndarray, size: int) -> None:
    """Overwrite textured pixels with their texture sampled at the pixel centre, shaded.
    The cameras are orthographic, so the barycentrics in screen space are the perspective-correct
    ones (w = 1 at every vertex) and interpolate st exactly."""
    pixels = np.nonzero(owner >= 0)[0]
    tri = owner[pixels]
    texture_of = scene.texture_ids[tri]
    for k, texture in enumerate(scene.textures):
        mine = texture_of == k
        if not mine.any():
            continue
        p, t = pixels[mine], tri[mine]
        b0, b1 = screen.barycentrics(t, (p % size) + 0.5, (p // size) + 0.5)
        b2 = 1.0 - b0 - b1
        st = scene.st[t, 0] * b0[:, None] + scene.st[t, 1] * b1[:, None] + scene.st[t, 2] * b2[:, None]
        image[p] = _encode_srgb(textures.sample(texture, st) * shade[t][:, None])


def _outline(image: np.ndarray, part: np.ndarray, outline_px: int) -> None:
    """Darken the pixels where the visible part changes (part against part, or against background)."""
    size = part.shape[0]
    edge = np.zeros((size, size), dtype=bool)
    edge[:, :-1] |= part[:, :-1] != part[:, 1:]
    edge[:-1, :] |= part[:-1, :] != part[1:, :]
    edge &= part >= 0
    for _ in range(outline_px - 1):                 # outlines keep about one output pixel of width
        grown = edge.copy()
        grown[:, 1:] |= edge[:, :-1]
        grown[1:, :] |= edge[:-1, :]
        edge = grown & (part >= 0)
    image[edge.reshape(-1)] *= OUTLINE


def draw(scene: Scene, cam: dict, outline_px: int, sample_textures: bool = True) -> tuple[np.ndarray, set]:
    """(size, size, 3) float display values and the set of part ids seen (``sample_textures`` False:
    textured parts flat in their mean colour, for callers that only count parts)."""
    size = cam["size"]
    image = np.empty((size * size, 3), dtype=np.float64)
    image[:] = np.array(BACKGROUND, dtype=np.float64)
    if len(scene.triangles) == 0:
        return image.reshape(size, size, 3), set()
    shade = _shade(scene, cam)
    screen = _screen(scene, cam)
    owner = _nearest_triangles(screen, size)
    hit = owner >= 0
    image[hit] = _encode_srgb(scene.colors * shade[:, None])[owner[hit]]
    if sample_textures and scene.textures and scene.texture_ids is not None and scene.st is not None:
        _draw_textures(image, scene, screen, owner, shade, size)
    part = np.where(hit, scene.part_ids[np.maximum(owner, 0)], -1).reshape(size, size)
    _outline(image, part, outline_px)
    return image.reshape(size, size, 3), {int(p) for p in np.unique(part) if p >= 0}
