"""USD's own warnings during case authoring, caught and said in words.

USD reports problems of a stage (a sublayer that cannot be loaded, a negative mass) by writing
C++ diagnostics to the process's stderr, from whichever thread found them, so a Python-level trap
misses those of worker threads. `captured()` points file descriptor 2 at a private file while the
block runs (Python's own writes, progress bars included, still reach the terminal), then parses
what USD wrote; `describe()` turns the messages into short lines with package-relative paths.
A broken input is expected to make USD complain; the reference is not.
"""
from __future__ import annotations

import io
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

DIAGNOSTIC = re.compile(r"^(?P<kind>Warning|Error|Coding Error|Runtime Error|Fatal Error|Status)"
                        r"(?: \(secondary thread\))?: in \S+ at line \d+ of \S+ -- (?P<text>.*)$")
# USD's own context suffixes, which name temporary stages by address: "(recomposing stage on stage @...@ <0x...>)".
STAGE_SUFFIX = re.compile(r"\s*\((?:recomposing|instantiating) stage on stage @[^@]*@ <0x[0-9a-f]+>\)\s*$", re.I)
TRAILING_THREAD = re.compile(r"\s*\[[^\]]*\]\s*$")
REWORDED = (
    (re.compile(r"^Could not load sublayer @(?P<a>[^@]*)@ of layer @(?P<b>[^@]*)@; skipping\.?$"),
     "layer {b}: its sublayer {a} cannot be loaded"),
    (re.compile(r"^In <(?P<p>[^>]*)>: Could not open asset @(?P<a>[^@]*)@ for (?P<arc>\w+) introduced by @(?P<b>[^@]*)@<[^>]*>\.?$"),
     "{p}: the {arc} to {a} cannot be opened (in layer {b})"),
    (re.compile(r"^Mass is negative, prim path: (?P<p>\S+)$"), "{p}: negative mass"),
    (re.compile(r"^Density is negative, prim path: (?P<p>\S+)$"), "{p}: negative density"),
)


@dataclass
class Captured:
    """What USD said while the block ran: its diagnostics, and any other text written to fd 2."""
    diagnostics: list[tuple[str, str]] = field(default_factory=list)   # (kind, text)
    other: list[str] = field(default_factory=list)


def parse(text: str) -> Captured:
    found = Captured()
    for line in text.splitlines():
        match = DIAGNOSTIC.match(line)
        if match:
            body = TRAILING_THREAD.sub("", STAGE_SUFFIX.sub("", match["text"]))
            found.diagnostics.append((match["kind"], STAGE_SUFFIX.sub("", body)))
        elif line.strip() and found.diagnostics and line.startswith(("\t", " ")):
            kind, body = found.diagnostics[-1]          # a continuation line of the last message
            found.diagnostics[-1] = (kind, f"{body} {line.strip()}")
        elif line.strip():
            found.other.append(line)
    return found


@contextmanager
def captured() -> Iterator[Captured]:
    """Collect what is written to file descriptor 2 while the block runs; Python's sys.stderr goes
    to the real stderr meanwhile. The result is filled in when the block ends (even by an error)."""
    result = Captured()
    sys.stderr.flush()
    saved = os.dup(2)
    sink = tempfile.TemporaryFile()
    real = sys.stderr
    terminal = io.TextIOWrapper(os.fdopen(os.dup(saved), "wb", buffering=0), encoding=getattr(real, "encoding", None)
                                or "utf-8", errors="replace", write_through=True)
    os.dup2(sink.fileno(), 2)
    sys.stderr = terminal
    try:
        yield result
    finally:
        sys.stderr = real
        terminal.close()
        os.dup2(saved, 2)
        os.close(saved)
        sink.seek(0)
        found = parse(sink.read().decode("utf-8", "replace"))
        sink.close()
        result.diagnostics, result.other = found.diagnostics, found.other


@contextmanager
def muted() -> Iterator[None]:
    """Drop what USD writes to file descriptor 2 while the block runs: for tries on private copies
    broken on purpose, whose complaints are expected and name temporary folders. Python's own
    sys.stderr (a progress bar, an enclosing `captured()`'s terminal) is untouched."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _short(text: str, places: list[tuple[re.Pattern, str]]) -> str:
    """The message with every known folder (a temporary copy included) named by its label."""
    for pattern, label in places:
        text = pattern.sub(label, text)
    return text


def _places(places: dict[str | Path | re.Pattern, str]) -> list[tuple[re.Pattern, str]]:
    """Folders (absolute and real paths both) or patterns of paths, longest first, to their labels."""
    found = {}
    for key, label in places.items():
        if isinstance(key, re.Pattern):
            found[key.pattern] = (key, label)
            continue
        for path in {os.path.abspath(key), os.path.realpath(key)}:
            found[re.escape(path)] = (re.compile(re.escape(path) + r"(?=/|@|\s|$)"), label)
    return [found[k] for k in sorted(found, key=len, reverse=True)]


def describe(found: Captured, places: dict[str | Path | re.Pattern, str], limit: int = 8) -> list[str]:
    """One line per distinct message (with a count when repeated), paths relative to `places`
    ({folder or pattern: label}), at most `limit` lines plus one that says how many more there were."""
    names = _places(places)
    lines = Counter()
    for kind, text in found.diagnostics:
        for pattern, words in REWORDED:
            match = pattern.match(text)
            if match:
                text = words.format(**match.groupdict())
                break
        prefix = "" if kind == "Warning" else f"{kind.lower()}: "
        lines[prefix + _short(text, names)] += 1
    out = [f"{text} ({n} times)" if n > 1 else text for text, n in lines.items()]   # in the order USD said them
    out += [_short(line, names) for line in found.other]
    return out[:limit] + ([f"... and {len(out) - limit} more"] if len(out) > limit else [])


def relabel(text: str, places: dict[str | Path | re.Pattern, str]) -> str:
    """`text` with the folders of `places` named by their labels (as `describe` names them)."""
    return _short(text, _places(places))


def error_text(error: BaseException) -> str:
    """A USD error (Tf.ErrorException, or a message that carries one) as one line: the first
    message, where USD says what failed (a parse error with its file, line and text), without
    USD's C++ function names."""
    parts = re.split(r"\s*Error in '[^']*' at line \d+ in file \S+ : ", str(error))
    messages = [" ".join(part.split()).strip("'").strip() for part in parts[1:] if part.strip()]
    if not messages:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        return lines[-1] if lines else type(error).__name__
    message = re.sub(r"pxrInternal_v\w+?__pxrReserved__(::|_)?", "", messages[0])
    return re.sub(r"parse error matching \S+ at", "parse error at", message)

