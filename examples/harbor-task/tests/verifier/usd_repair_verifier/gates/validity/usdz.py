"""The .usdz checks: each archive (or archive inside an archive) opened once with zipfile and held
to what USD can read (members stored uncompressed and unencrypted, first member a USD layer)."""
from __future__ import annotations

import posixpath
import zipfile
from typing import Any, Callable

from .paths import Location
from .rules import has_usd_ext
from .text import clean


class UsdzArchives:
    def __init__(self, describe: Callable[[Location], str]):
        self.describe = describe   # a location as messages name it
        self.cache: dict[str, tuple[Any, str | None]] = {}

    def open(self, loc: Location) -> tuple[zipfile.ZipFile | None, str | None]:
        """Open the zip at loc (fs file or nested member).  Returns (zipfile, error)."""
        key = loc.ident()
        if key in self.cache:
            return self.cache[key]
        try:
            result = self._open(loc)
        except Exception as exc:  # BadZipFile, KeyError, OSError, ...
            result = (None, f"{self.describe(loc)} is not a valid zip archive: {clean(exc)}")
        if result[0] is not None:
            err = self.problem(result[0], loc)
            if err:
                result = (None, err)
        self.cache[key] = result
        return result

    def _open(self, loc: Location) -> tuple[zipfile.ZipFile | None, str | None]:
        not_a_zip = f"{self.describe(loc)} is not a zip archive (a .usdz must be a zip)"
        if not loc.members:
            if not zipfile.is_zipfile(loc.fs):
                return None, not_a_zip
            return zipfile.ZipFile(loc.fs), None
        parent, err = self.open(Location(loc.fs, loc.members[:-1]))
        if parent is None:
            return None, err
        info = parent.getinfo(loc.members[-1])
        if info.compress_type != zipfile.ZIP_STORED:
            return None, f"{self.describe(loc)} is stored compressed inside its .usdz"
        fh = parent.open(info)
        if not zipfile.is_zipfile(fh):
            return None, not_a_zip
        fh.seek(0)
        return zipfile.ZipFile(fh), None

    def problem(self, zf: zipfile.ZipFile, loc: Location) -> str | None:
        """Why USD cannot read this archive as a .usdz, if it cannot."""
        infos = zf.infolist()
        if not infos:
            return f"{self.describe(loc)} is an empty zip; a .usdz needs a root layer as its first member"
        for info in infos:
            if info.compress_type != zipfile.ZIP_STORED:
                return (f"{self.describe(loc)}: member {clean(info.filename)!r} is compressed; "
                        "USDZ members must be stored uncompressed (USD cannot read it)")
            if info.flag_bits & 0x1:
                return f"{self.describe(loc)}: member {clean(info.filename)!r} is encrypted"
        first = infos[0].filename
        if not has_usd_ext(first) or first.endswith("/"):
            return (f"{self.describe(loc)}: first member {clean(first)!r} is not a USD layer; "
                    "a .usdz's first member is its root layer")
        return None

    @staticmethod
    def members(zf: zipfile.ZipFile) -> dict[str, Any]:
        """Its files by normalised member path (the first of duplicates)."""
        out = {}
        for info in zf.infolist():
            if info.filename.endswith("/"):
                continue
            out.setdefault(posixpath.normpath(info.filename), info)
        return out
