"""Asset paths as the gate reads them: schemes, package-relative paths and locations (pxr-free)."""
from __future__ import annotations

import re
from typing import NamedTuple

# Ar's notion of a URI scheme: a letter followed by letters, digits, + - . then ':'.
SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
# Prefix of the resolver's problem for an anchored path to a file the package lacks.
MISSING_INSIDE = "missing file ("
UDIM = "<UDIM>"


class Location(NamedTuple):
    """A file location: an absolute filesystem path and the chain of zip members inside it."""

    fs: str
    members: tuple[str, ...] = ()

    def ident(self) -> str:
        """Its package-relative path: 'a.usdz[b.usdz[c.usda]]'."""
        if not self.members:
            return self.fs
        inner = self.members[-1]
        for m in reversed(self.members[:-1]):
            inner = f"{m}[{inner}]"
        return f"{self.fs}[{inner}]"


def udim_pattern(name: str) -> re.Pattern:
    """A file name with <UDIM> as a regular expression matching its four-digit tiles."""
    return re.compile(re.escape(name).replace(re.escape(UDIM), r"\d{4}") + r"\Z")


def split_package_path(path: str) -> tuple[str, tuple[str, ...]]:
    """'a.usdz[b.usdz[c.usda]]' -> ('a.usdz', ('b.usdz', 'c.usda')).  ValueError if malformed.

    On well-formed paths this is what pxr.Ar.SplitPackageRelativePathOuter gives, applied to each
    inner path in turn. Ar is not used because it accepts what the gate rejects with a named reason:
    it reads stray brackets as plain characters ('a[x].usdz[b.usda]' has the outer 'a[x].usdz';
    'a[b' and 'a.usdz[b.usda]]' are not package-relative at all) and it splits off an empty
    member ('a.usdz[]') or an empty package ('[b.usda]').
    """
    if not path.endswith("]"):
        if "[" in path or "]" in path:
            # USD only treats a trailing [...] as package-relative; stray brackets are
            # plain characters, but they are almost certainly a mistake or a trick.
            raise ValueError("stray '[' or ']'")
        return path, ()
    depth = 0
    split_at = -1
    for i in range(len(path) - 1, -1, -1):
        c = path[i]
        if c == "]":
            depth += 1
        elif c == "[":
            depth -= 1
            if depth == 0:
                split_at = i
                break
    if split_at <= 0:
        raise ValueError("unbalanced '[' ']'")
    outer, inner = path[:split_at], path[split_at + 1:-1]
    if not inner:
        raise ValueError("empty package member")
    if "[" in outer or "]" in outer:
        raise ValueError("stray '[' or ']' before the package member")
    sub_outer, sub_members = split_package_path(inner)
    return outer, (sub_outer, *sub_members)
