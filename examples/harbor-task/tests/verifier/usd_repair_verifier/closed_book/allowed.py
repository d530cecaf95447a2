"""URLs the task itself gave the agent: those in its input package and its instruction.

USD layers are read through Sdf and exported as text, so a URL inside a binary
`.usdc` (whose strings may be compressed) or inside a `.usdz` member is found as
well as one in a `.usda`; every other file is read as bytes. The input package is
the case's own (its digest was verified), never the submission.
"""
from __future__ import annotations

import os
import zipfile
from pathlib import Path

from .rule import urls_in

LAYER_SUFFIXES = (".usd", ".usda", ".usdc")


def _layer_text(identifier: str) -> str | None:
    from pxr import Sdf

    layer = Sdf.Layer.OpenAsAnonymous(identifier) if not identifier.endswith("]") else Sdf.Layer.FindOrOpen(identifier)
    return layer.ExportToString() if layer is not None else None


def _file_texts(path: Path):
    name = path.name.lower()
    if name.endswith(".usdz"):
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                if member.lower().endswith(LAYER_SUFFIXES):
                    text = _layer_text(f"{path}[{member}]")
                    if text is not None:
                        yield text
                yield archive.read(member).decode("latin-1")
        return
    if name.endswith(LAYER_SUFFIXES):
        text = _layer_text(str(path))
        if text is not None:
            yield text
    yield path.read_bytes().decode("latin-1")


def package_urls(folder: Path) -> set[str]:
    """Every URL written anywhere in the package folder's files."""
    found: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for filename in sorted(filenames):
            path = Path(dirpath) / filename
            if path.is_symlink() or not path.is_file():
                continue
            for text in _file_texts(path):
                found.update(urls_in(text))
    return found


def allowed_urls(input_package: Path, instruction_urls: tuple[str, ...] = ()) -> frozenset[str]:
    return frozenset(package_urls(input_package)) | {u for text in instruction_urls for u in urls_in(text)}
