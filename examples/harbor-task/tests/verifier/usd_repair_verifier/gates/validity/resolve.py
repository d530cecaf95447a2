"""Anchoring an authored asset path to the layer that authored it, inside the package or not at all.

Offences, each with its reason: absolute paths, '..' escaping the package or a .usdz, symlink
escapes, URLs/URIs and anything of the form 'scheme:', SDF_FORMAT_ARGS, variable expressions,
bare names that would fall back to a resolver search path, non-files, package-relative paths into
something that is not a .usdz, missing .usdz members, <UDIM> paths with no tile. A path to a file
the package lacks is reported apart (MISSING_INSIDE): a composition error, not an escape.
"""
from __future__ import annotations

import os
import posixpath
import stat

from .paths import MISSING_INSIDE, SCHEME_RE, UDIM, Location, split_package_path, udim_pattern
from .text import clean, inside, show
from .usdz import UsdzArchives

Resolved = tuple[Location | None, str | None]   # (where it is, why it is refused)


class Resolver:
    def __init__(self, root: str, archives: UsdzArchives):
        self.root = root
        self.archives = archives

    def show(self, path: str) -> str:
        return show(path, self.root)

    def resolve(self, anchor: Location, authored: str, is_layer: bool) -> Resolved:
        """Anchor an authored asset path to its layer.  Returns (location, problem)."""
        problem = _refused_form(authored)
        if problem:
            return None, problem
        try:
            outer, members = split_package_path(authored)
        except ValueError as exc:
            return None, f"malformed package-relative path ({exc})"
        if not outer:
            return None, "malformed package-relative path (no package file)"
        for mem in members:
            if mem.startswith(("/", "\\")) or SCHEME_RE.match(mem):
                return None, f"package member {clean(mem)!r} is absolute"
            norm = posixpath.normpath(mem)
            if norm == ".." or norm.startswith("../"):
                return None, f"package member {clean(mem)!r} escapes the .usdz"
        members = tuple(posixpath.normpath(mm) for mm in members)
        udim = (not is_layer) and UDIM in authored
        if anchor.members:  # authored inside a .usdz: anchor within the zip
            loc, problem = self._in_zip(anchor, outer, members)
            first_zip_level = len(anchor.members) - 1
        else:
            loc, problem = self._on_disk(anchor, outer, members, udim)
            first_zip_level = 0
        if loc is None or problem or not loc.members:
            return loc, problem
        return self._through_zips(loc, first_zip_level, udim)

    def _in_zip(self, anchor: Location, outer: str, members: tuple[str, ...]) -> Resolved:
        base = posixpath.dirname(anchor.members[-1])
        member = posixpath.normpath(posixpath.join(base, outer))
        if member == ".." or member.startswith("../") or member.startswith("/"):
            container = Location(anchor.fs, anchor.members[:-1])
            return None, (f"escapes its .usdz package {self.show(container.ident())} "
                          f"(would be {self.show(container.ident())}[{clean(member)}])")
        return Location(anchor.fs, anchor.members[:-1] + (member,) + members), None

    def _on_disk(self, anchor: Location, outer: str, members: tuple[str, ...], udim: bool) -> Resolved:
        """A file next to (or below) the anchoring layer on disk; members are checked after."""
        bare = not (outer.startswith("./") or outer.startswith("../") or outer in (".", ".."))
        fs = os.path.normpath(os.path.join(os.path.dirname(anchor.fs), outer))
        if not inside(fs, self.root):
            return None, f"'..' escapes the package (resolves to {clean(fs)})"
        if udim and not members:
            return self.resolve_udim_fs(fs)
        real = os.path.realpath(fs)
        if not inside(real, self.root):
            return None, f"resolves through a symlink to {clean(real)}, outside the package"
        try:
            st = os.stat(real)
        except OSError:
            hint = ("; backslashes are not path separators here, use '/'" if "\\" in outer else "")
            if bare:
                return None, ("not found next to the authoring layer; a bare name like this "
                              "would fall back to a resolver search path, which is not allowed" + hint)
            return None, f"{MISSING_INSIDE}{self.show(fs)} does not exist){hint}"
        if not stat.S_ISREG(st.st_mode):
            return None, f"{self.show(fs)} is not a regular file"
        if members and not outer.lower().endswith(".usdz"):
            return None, f"package-relative path into {self.show(fs)}, which is not a .usdz"
        return Location(fs, members), None

    def _through_zips(self, loc: Location, first_zip_level: int, udim: bool) -> Resolved:
        """Check every zip level of loc from first_zip_level on: each a .usdz holding the next."""
        for level in range(first_zip_level, len(loc.members)):
            container = Location(loc.fs, loc.members[:level])
            if level > 0 and not container.members[-1].lower().endswith(".usdz"):
                return None, f"package-relative path into {self.show(container.ident())}, which is not a .usdz"
            zf, err = self.archives.open(container)
            if zf is None:
                return None, err
            names = self.archives.members(zf)
            member = loc.members[level]
            if member == ".." or member.startswith("../"):
                return None, f"escapes its .usdz package {self.show(container.ident())}"
            last = level == len(loc.members) - 1
            if udim and last and UDIM in member:
                rx = udim_pattern(member)
                if not any(rx.match(n) for n in names):
                    return None, f"no UDIM tile matching {clean(member)!r} in {self.show(container.ident())}"
                return loc, None
            if member not in names:
                return None, f"member {clean(member)!r} is missing from {self.show(container.ident())}"
        return loc, None

    def resolve_udim_fs(self, fs: str) -> Resolved:
        """A <UDIM> file name on disk: at least one four-digit tile, every tile inside the package."""
        directory, pattern = os.path.split(fs)
        if UDIM in directory:
            return None, "<UDIM> is only supported in the file name"
        real_dir = os.path.realpath(directory)
        if not inside(real_dir, self.root):
            return None, f"resolves through a symlink to {clean(real_dir)}, outside the package"
        rx = udim_pattern(pattern)
        tiles = 0
        try:
            with os.scandir(real_dir) as it:
                for entry in it:
                    if not rx.match(entry.name):
                        continue
                    real = os.path.realpath(entry.path)
                    if not inside(real, self.root):
                        return None, f"UDIM tile {self.show(entry.path)} resolves outside the package"
                    if os.path.isfile(real):
                        tiles += 1
        except OSError:
            pass
        if not tiles:
            return None, f"no UDIM tile matching {self.show(fs)} exists"
        return Location(fs), None


def _refused_form(p: str) -> str | None:
    """A path the gate refuses whatever it names: expressions, format arguments, URLs, absolute paths."""
    if p.startswith("`"):
        return "variable-expression asset paths are not allowed"
    if ":SDF_FORMAT_ARGS:" in p:
        return "file-format arguments (:SDF_FORMAT_ARGS:) are not allowed"
    m = SCHEME_RE.match(p)
    if m and len(m.group(0)) == 2 and p[2:3] in ("/", "\\"):
        return "is an absolute Windows drive path; only paths relative to the layer are allowed"
    if m:
        return f"is a URL/URI ({m.group(0)!r} scheme); only package-local files are allowed"
    if p.startswith(("/", "\\")):
        return "absolute paths are not allowed (use a path relative to the layer)"
    return None
