"""How the gate writes paths, counts and offence lists into reasons (parent and worker alike)."""
from __future__ import annotations

import os
from typing import Any, Iterable

MAX_DETAILS = 50  # offences listed in a rule's details; the rest are counted


def clean(text: Any) -> str:
    """Printable, JSON-safe text: control characters and undecodable bytes escaped."""
    s = str(text)
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        s = s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if any(ord(c) < 32 or ord(c) == 127 for c in s):
        s = "".join(c if (ord(c) >= 32 and ord(c) != 127) else repr(c)[1:-1] for c in s)
    return s


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def show(path: str, root: str | None) -> str:
    """A path for messages: relative to the package root when inside it."""
    if root and inside(path, root) and path != root:
        return clean(os.path.relpath(path, root))
    return clean(path)


def human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{n} B"  # pragma: no cover


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """'1 file', '3 files'."""
    return f"{count} {noun if count == 1 else (plural or noun + 's')}"


def cap(details: Iterable[str]) -> tuple[str, ...]:
    """At most MAX_DETAILS cleaned offences, the last one saying how many more there were."""
    items = list(details)
    if len(items) > MAX_DETAILS:
        extra = len(items) - (MAX_DETAILS - 1)
        items = items[: MAX_DETAILS - 1] + [f"... and {extra} more"]
    return tuple(clean(d) for d in items)


def summarise(offences: list[str], what: str, total: int | None = None) -> str:
    """A rule's reason from its offences: the only one, or how many and the first."""
    if not offences:
        return ""
    count = max(total or 0, len(offences))
    first = clean(offences[0])
    if count == 1:
        return first
    return f"{count} {what}s; first: {first}"
