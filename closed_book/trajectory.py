"""Reading an agent's trajectory in Harbor's ATIF (Agent Trajectory Interchange Format).

Only what the closed-book rule needs is read: every tool call of every step (its
`function_name` and `arguments`), across the whole run:
- continuation files: a trajectory's `continued_trajectory_ref` (a file name next to
  it), and Harbor's `<stem>.cont-N.json` siblings of the root file;
- subagents: embedded `subagent_trajectories`, and observation results'
  `subagent_trajectory_ref` entries, resolved by `trajectory_id` (embedded) or
  `trajectory_path` (a file next to the referring one);
- every other `<stem>*.json` file beside the root (what the task's collect hook copies:
  summarisation files and any other file Harbor writes there), whether referenced or not.

Memory is bounded: one file is parsed at a time, each tool call is handed on as plain
strings the moment its step is read and the parsed file is dropped before the next one;
a file may hold at most MAX_FILE_VALUES JSON values (counted before parsing, outside its
strings) and take at most MAX_DECODED_BYTES as text, so its parsed objects cannot outgrow a
fixed amount whatever their shape.
docs/closed-book.md states the bound that tests/test_closed_book_memory.py measures.

The reader is written against the format, not Harbor's classes (which need a newer
Python). It is deliberately unforgiving: anything it cannot read completely (bad
JSON, a missing field, a reference that does not resolve, a file past the size
limits, a schema it does not know) raises TrajectoryError, because a trajectory
read in part cannot show that the agent stayed closed book.
"""
from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from usd_repair_verifier.profiles.errors import UsageMistake

# ATIF-v1.0 to v1.8 share the shape read here; a later version may record actions elsewhere.
SCHEMA_PATTERN = re.compile(r"ATIF-v1\.(\d+)")
NEWEST_MINOR = 8
MAX_FILE_BYTES = 128 << 20
MAX_TOTAL_BYTES = 256 << 20
# Parsed JSON costs up to ~70 bytes per value beyond its strings (an empty object per three bytes
# of `{},` would cost twenty times the file): past this many values a file is refused.
MAX_FILE_VALUES = 2_000_000
# The decoded document and its parsed strings each take up to this much: a file whose text would
# take more (128 MiB of text with one emoji is 512 MiB in Python) is refused.
MAX_DECODED_BYTES = 256 << 20
MAX_FILES = 1000
MAX_DEPTH = 32
CONTINUATION_PATTERN = r"{stem}\.cont-(\d+)\.json"
# Every string of a JSON document, so that the structure outside them can be counted.
JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


class TrajectoryError(UsageMistake, ValueError):
    """The trajectory cannot be read completely: the run cannot be checked."""


@dataclass(frozen=True)
class ToolCall:
    trajectory: str          # which trajectory: the file name, then "/subagent:ID" for embedded ones
    step_id: int
    tool_call_id: str
    function_name: str
    arguments: dict


@dataclass
class Run:
    """What was read of a run; `calls` only when the reader was asked to keep them."""

    agent: str | None = None
    schema_versions: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    trajectories: int = 0
    steps: int = 0
    tool_calls: int = 0
    calls: list[ToolCall] = field(default_factory=list)


def count_values(raw: bytes) -> int:
    """An upper bound on the JSON values of a document: its separators and openings outside strings.

    Counted in place (no copy of the document): every such byte, less those inside strings.
    """
    def structural(start: int = 0, end: int | None = None) -> int:
        end = len(raw) if end is None else end
        return raw.count(b",", start, end) + raw.count(b"[", start, end) + raw.count(b"{", start, end)

    total = structural()
    if total <= MAX_FILE_VALUES:
        return total + 1
    for match in JSON_STRING.finditer(raw):
        total -= structural(match.start(), match.end())
    return total + 1


# What makes a document's characters take four bytes in Python (a character past U+FFFF: the UTF-8
# lead byte of one, or the escaped first half of a surrogate pair), or two (past U+00FF).
FOUR_BYTE_LEAD = re.compile(rb"[\xf0-\xf4]")
FOUR_BYTE_ESCAPE = re.compile(rb"\\u[dD][89abAB]")
TWO_BYTE_LEAD = re.compile(rb"[\xc4-\xef]")
TWO_BYTE_ESCAPE = re.compile(rb"\\u(?:0[1-9a-fA-F]|[1-9a-fA-F])")


def decoded_bytes(raw: bytes) -> int:
    """What the document takes as a Python string: one, two or four bytes a character, by its widest
    character (a single character past U+FFFF makes every character take four).

    Each pattern is searched on its own: an escape by its literal `\\u`, which the regular-expression
    engine finds at memory speed, and a lead byte only in a document that has a byte past ASCII.
    One alternation of both read every byte in turn: 3.4 s for a 100 MiB file, against 0.1 s."""
    wide = not raw.isascii()
    if (wide and FOUR_BYTE_LEAD.search(raw)) or FOUR_BYTE_ESCAPE.search(raw):
        return 4 * len(raw)
    if (wide and TWO_BYTE_LEAD.search(raw)) or TWO_BYTE_ESCAPE.search(raw):
        return 2 * len(raw)
    return len(raw)


@dataclass
class _Reader:
    folder: Path                       # where referenced files must live
    on_call: Callable[[ToolCall], None]
    run: Run = field(default_factory=Run)
    total_bytes: int = 0
    seen_files: set[str] = field(default_factory=set)
    open_files: set[str] = field(default_factory=set)   # being read: a reference back to one is a cycle

    def read_file(self, name: str, referrer: str, depth: int) -> None:
        """Read one file (and what it refers to) unless it was read already."""
        path = self._resolve(name, referrer)
        key = str(path)
        if key in self.open_files:
            raise TrajectoryError(f"{name} (from {referrer}) is read twice: the references form a cycle")
        if key in self.seen_files:
            return
        self.seen_files.add(key)
        if len(self.seen_files) > MAX_FILES:
            raise TrajectoryError(f"more than {MAX_FILES} trajectory files")
        data = self._parse(path, name, referrer)
        self.run.files.append(path.name)
        self.open_files.add(key)
        try:
            _read_trajectory(self, data, path.name, depth)
        finally:
            self.open_files.discard(key)

    def _parse(self, path: Path, name: str, referrer: str):
        raw = self._read_bytes(path, name, referrer)
        values = count_values(raw)
        if values > MAX_FILE_VALUES:
            raise TrajectoryError(f"{name}: about {values} JSON values, over the limit of {MAX_FILE_VALUES}")
        decoded = decoded_bytes(raw)
        if decoded > MAX_DECODED_BYTES:
            raise TrajectoryError(f"{name}: its text takes {decoded} bytes decoded, over the limit of {MAX_DECODED_BYTES}")
        try:
            text = raw.decode("utf-8")
            del raw
            return json.loads(text)
        except (UnicodeDecodeError, ValueError, RecursionError) as error:
            raise TrajectoryError(f"{name} is not valid JSON: {error}") from error

    def _read_bytes(self, path: Path, name: str, referrer: str) -> bytes:
        """The whole of one regular file, or TrajectoryError. Nothing here can block: a FIFO, a
        socket or a device is refused by its type before it is opened, and opened without blocking
        (O_NONBLOCK) and checked again on the open file, so one swapped in between is refused too."""
        try:
            kind = _not_regular(os.stat(path).st_mode)
            if kind:
                raise TrajectoryError(f"{name} (from {referrer}) is {kind}, not a regular file: it cannot be read completely")
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        except OSError as error:
            raise TrajectoryError(f"cannot read {name} (from {referrer}): {error.strerror or error}") from error
        try:
            info = os.fstat(fd)
            kind = _not_regular(info.st_mode)
            if kind:
                raise TrajectoryError(f"{name} (from {referrer}) is {kind}, not a regular file: it cannot be read completely")
            if info.st_size > MAX_FILE_BYTES:
                raise TrajectoryError(f"{name}: {info.st_size} bytes, over the limit of {MAX_FILE_BYTES}")
            chunks, size = [], 0
            while size <= MAX_FILE_BYTES:          # a file that grows while it is read is still bounded
                chunk = os.read(fd, min(1 << 24, MAX_FILE_BYTES + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError as error:
            raise TrajectoryError(f"cannot read {name} (from {referrer}): {error.strerror or error}") from error
        finally:
            os.close(fd)
        if size > MAX_FILE_BYTES:
            raise TrajectoryError(f"{name}: more than {MAX_FILE_BYTES} bytes, over the limit")
        self.total_bytes += size
        if self.total_bytes > MAX_TOTAL_BYTES:
            raise TrajectoryError(f"the trajectory files exceed {MAX_TOTAL_BYTES} bytes together")
        return b"".join(chunks)

    def _resolve(self, name: str, referrer: str) -> Path:
        """A referenced file: a relative path inside the root trajectory's folder, nothing else."""
        if not isinstance(name, str) or not name or "\0" in name:
            raise TrajectoryError(f"{referrer}: a trajectory reference must be a file name, got {name!r}")
        if "://" in name or name.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", name):
            raise TrajectoryError(f"{referrer}: {name!r} is not a file next to the trajectory; it cannot be read here")
        path = Path(os.path.realpath(self.folder / name))
        if path != self.folder and self.folder not in path.parents:
            raise TrajectoryError(f"{referrer}: {name!r} leaves the trajectory's folder")
        if not path.exists():
            raise TrajectoryError(f"{referrer} refers to {name!r}, which does not exist")
        return path


def _not_regular(mode: int) -> str | None:
    """What a file that is not a regular file is (a FIFO, a folder...), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, what in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISDIR, "a folder"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return what
    return "not a regular file"


def _require(obj, key: str, kind, where: str):
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        expected = getattr(kind, "__name__", str(kind))
        raise TrajectoryError(f"{where}.{key}: expected {expected}, got {type(value).__name__}")
    return value


def _schema(data: dict, where: str) -> str:
    version = _require(data, "schema_version", str, where)
    match = SCHEMA_PATTERN.fullmatch(version)
    if not match or int(match.group(1)) > NEWEST_MINOR:
        raise TrajectoryError(f"{where}.schema_version: {version!r} is not ATIF v1.0 to v1.{NEWEST_MINOR}")
    return version


def _read_steps(reader: _Reader, data: dict, label: str) -> list[tuple]:
    """Hand on the tool calls of one trajectory object; returns the subagent refs its observations hold."""
    steps = _require(data, "steps", list, label)
    if not steps:
        raise TrajectoryError(f"{label}.steps: empty")
    refs = []
    for i, step in enumerate(steps):
        at = f"{label}.steps[{i}]"
        step_id = _require(step, "step_id", int, at)
        calls = step.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise TrajectoryError(f"{at}.tool_calls: expected a list or null")
        for j, call in enumerate(calls or ()):
            call_at = f"{at}.tool_calls[{j}]"
            name = _require(call, "function_name", str, call_at)
            arguments = _require(call, "arguments", dict, call_at)
            reader.run.tool_calls += 1
            reader.on_call(ToolCall(label, step_id, str(call.get("tool_call_id", "")), name, arguments))
        observation = step.get("observation")
        if observation is None:
            continue
        results = _require(observation, "results", list, f"{at}.observation")
        for k, result in enumerate(results):
            if not isinstance(result, dict):
                raise TrajectoryError(f"{at}.observation.results[{k}]: expected an object")
            found = result.get("subagent_trajectory_ref")
            if found is not None and not isinstance(found, list):
                raise TrajectoryError(f"{at}.observation.results[{k}].subagent_trajectory_ref: expected a list")
            refs.extend((ref, f"{at}.observation.results[{k}]") for ref in found or ())
    reader.run.steps += len(steps)
    return refs


def _read_trajectory(reader: _Reader, data: dict, label: str, depth: int) -> None:
    """One trajectory object, its embedded subagents, referenced subagent files and continuation."""
    if depth > MAX_DEPTH:
        raise TrajectoryError(f"{label}: subagents or continuations nested more than {MAX_DEPTH} deep")
    if not isinstance(data, dict):
        raise TrajectoryError(f"{label}: expected a JSON object")
    reader.run.schema_versions.append(_schema(data, label))
    agent = _require(data, "agent", dict, label)
    reader.run.agent = reader.run.agent or _require(agent, "name", str, f"{label}.agent")
    reader.run.trajectories += 1
    refs = _read_steps(reader, data, label)

    embedded = data.get("subagent_trajectories")
    if embedded is not None and not isinstance(embedded, list):
        raise TrajectoryError(f"{label}.subagent_trajectories: expected a list")
    embedded_ids = set()
    for i, sub in enumerate(embedded or ()):
        sub_id = sub.get("trajectory_id") if isinstance(sub, dict) else None
        if not isinstance(sub_id, str) or sub_id in embedded_ids:
            raise TrajectoryError(f"{label}.subagent_trajectories[{i}].trajectory_id: missing or not unique")
        embedded_ids.add(sub_id)
        _read_trajectory(reader, sub, f"{label}/subagent:{sub_id}", depth + 1)

    for ref, where in refs:
        if not isinstance(ref, dict):
            raise TrajectoryError(f"{where}.subagent_trajectory_ref: expected objects")
        ref_id, path = ref.get("trajectory_id"), ref.get("trajectory_path")
        # Every trajectory a reference names is read, whichever way it names it: an embedded id
        # (read above) does not excuse the file a `trajectory_path` beside it names.
        if path is None:
            if ref_id is None or ref_id not in embedded_ids:
                raise TrajectoryError(f"{where}: subagent {ref_id!r} is neither embedded nor in a file")
            continue
        reader.read_file(path, where, depth + 1)

    continuation = data.get("continued_trajectory_ref")
    if continuation is not None:
        reader.read_file(continuation, f"{label}.continued_trajectory_ref", depth + 1)


def sibling_files(root: Path) -> list[Path]:
    """The files beside the root that belong to its run: `<stem>.cont-N.json` in numeric order, then
    every other `<stem>*.json` by name (what the task's collect hook copies)."""
    pattern = re.compile(CONTINUATION_PATTERN.format(stem=re.escape(root.stem)))
    # Every entry of the name, whatever its type: a FIFO, a folder or a device named like a part of
    # the run is a part that cannot be read (the reader refuses it), never one quietly passed over.
    names = sorted(p.name for p in root.parent.iterdir()
                   if p.name.startswith(root.stem) and p.name.endswith(".json") and p.name != root.name)
    segments = sorted((int(m.group(1)), n) for n in names if (m := pattern.fullmatch(n)))
    ordered = [n for _, n in segments]
    return [root.parent / n for n in ordered + [n for n in names if n not in ordered]]


def read_run(path: str | Path, on_call: Callable[[ToolCall], None] | None = None) -> Run:
    """Every tool call of the run whose root trajectory is `path` (TrajectoryError if any part is unreadable).

    With `on_call`, each call is handed to it as soon as it is read and not kept; without, the
    calls are collected in `Run.calls`.
    """
    root = Path(path)
    if not root.exists():
        raise TrajectoryError(f"no trajectory at {root}")
    run = Run()
    reader = _Reader(Path(os.path.realpath(root.parent)), on_call or run.calls.append, run)
    reader.read_file(root.name, "the command line", 0)
    # Harbor writes a run cut by context summarisation as <stem>.cont-N.json, and subagents as
    # <stem>.summarization-...json; read any file of the run that no reference reached too, so a
    # broken chain or a dropped reference cannot hide a segment.
    try:
        siblings = sibling_files(root)
    except OSError as error:
        raise TrajectoryError(f"cannot list the trajectory's folder: {error.strerror or error}") from error
    for sibling in siblings:
        reader.read_file(sibling.name, "the trajectory's folder", 0)
    return run
