"""Content digests of package folders: same bytes and names, same digest."""
from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

CHUNK = 1 << 20


def tree_digest(root: str | os.PathLike) -> str:
    """sha256 over every entry below root: relative path, kind and content (symlinks by their target text)."""
    root = Path(root)
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                h.update(b"L " + os.fsencode(rel) + b"\0" + os.fsencode(os.readlink(full)) + b"\0")
                continue
            if not stat.S_ISREG(info.st_mode):  # a FIFO or device would block or never end: name it only
                h.update(b"O " + os.fsencode(rel) + b"\0")
                continue
            h.update(b"F " + os.fsencode(rel) + b"\0")  # bytes: names need not be UTF-8
            with open(full, "rb") as f:
                while chunk := f.read(CHUNK):
                    h.update(chunk)
            h.update(b"\0")
    return "sha256:" + h.hexdigest()


def file_digest(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return "sha256:" + h.hexdigest()
