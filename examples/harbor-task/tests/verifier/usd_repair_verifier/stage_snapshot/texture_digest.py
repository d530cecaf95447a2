"""Texture content digests: what a texture-valued shader input draws, as a string.

A texture is compared by the bytes of the file it resolves to, never by its
authored path (a repaired asset may move or rename it). ``texture_digest``
returns ``"sha256:<hex>"`` of those bytes (UDIM: one digest over every tile,
keyed by tile number), ``"missing:<authored path>"`` when nothing resolves, or
``"too_large:<bytes>"`` above ``MAX_TEXTURE_BYTES`` (the file is not read).
Files inside a package (``.usdz``) are read through the asset resolver.
"""
from __future__ import annotations

import hashlib
import os
from contextlib import contextmanager
from contextvars import ContextVar

from pxr import Ar, Sdf, Usd, UsdShade

__all__ = ["texture_digest", "texture_digest_scope", "MAX_TEXTURE_BYTES"]

MAX_TEXTURE_BYTES = 64 * 1024 * 1024

# Digests by resolved path, kept for one stage read only (`texture_digest_scope`, opened by
# read.read_snapshot): a process that grades many submissions, one after another at the same
# paths, must never reuse the digest of another package's file.
_DIGESTS: ContextVar[dict | None] = ContextVar("usdgrade_texture_digests", default=None)


@contextmanager
def texture_digest_scope():
    """Remember digests by resolved path (and size and mtime) until the block ends."""
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
