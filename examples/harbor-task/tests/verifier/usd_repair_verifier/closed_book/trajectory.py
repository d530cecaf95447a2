"""Reading an agent's trajectory in Harbor's ATIF (Agent Trajectory Interchange Format).

Only what the closed-book rule needs is read: every tool call of every step (its
`function_name` and `arguments`), across the whole run:
- continuation files: a trajectory's `continued_trajectory_ref` (a file name next to
  it), and Harbor's `<stem>.cont-N.json` siblings of the root file;
- subagents: embedded `subagent_trajectories`, and observation results'
  `subagent_trajectory_ref` entries, resolved by `trajectory_id` (embedded) or
  `trajectory_path` (a file next to the referring one).

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
from dataclasses import dataclass, field
from pathlib import Path

# ATIF-v1.0 to v1.8 share the shape read here; a later version may record actions elsewhere.
SCHEMA_PATTERN = re.compile(r"ATIF-v1\.(\d+)")
NEWEST_MINOR = 8
# JSON in memory takes several times its size on disk: these keep a hostile run from exhausting it.
MAX_FILE_BYTES = 128 << 20
MAX_TOTAL_BYTES = 256 << 20
MAX_FILES = 1000
MAX_DEPTH = 32
CONTINUATION_PATTERN = r"{stem}\.cont-(\d+)\.json"


class TrajectoryError(ValueError):
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
    """Every tool call of a run, with the files and trajectories they came from."""

    agent: str | None = None
    schema_versions: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    trajectories: int = 0
    steps: int = 0
    calls: list[ToolCall] = field(default_factory=list)


@dataclass
class _Reader:
    folder: Path                       # where referenced files must live
    run: Run = field(default_factory=Run)
    total_bytes: int = 0
    seen_files: set[str] = field(default_factory=set)

    def load_file(self, name: str, referrer: str) -> dict:
        path = self._resolve(name, referrer)
        key = str(path)
        if key in self.seen_files:
            raise TrajectoryError(f"{name} (from {referrer}) is read twice: the references form a cycle")
        self.seen_files.add(key)
        if len(self.seen_files) > MAX_FILES:
            raise TrajectoryError(f"more than {MAX_FILES} trajectory files")
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:
                raise TrajectoryError(f"{name}: {size} bytes, over the limit of {MAX_FILE_BYTES}")
            self.total_bytes += size
            if self.total_bytes > MAX_TOTAL_BYTES:
                raise TrajectoryError(f"the trajectory files exceed {MAX_TOTAL_BYTES} bytes together")
            data = json.loads(path.read_bytes().decode("utf-8"))
        except OSError as error:
            raise TrajectoryError(f"cannot read {name} (from {referrer}): {error.strerror or error}") from error
        except (UnicodeDecodeError, ValueError, RecursionError) as error:
            raise TrajectoryError(f"{name} is not valid JSON: {error}") from error
        self.run.files.append(path.name)
        return data

    def _resolve(self, name: str, referrer: str) -> Path:
        """A referenced file: a relative path inside the root trajectory's folder, nothing else."""
        if not isinstance(name, str) or not name or "\0" in name:
            raise TrajectoryError(f"{referrer}: a trajectory reference must be a file name, got {name!r}")
        if "://" in name or name.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", name):
            raise TrajectoryError(f"{referrer}: {name!r} is not a file next to the trajectory; it cannot be read here")
        path = Path(os.path.realpath(self.folder / name))
        if path != self.folder and self.folder not in path.parents:
            raise TrajectoryError(f"{referrer}: {name!r} leaves the trajectory's folder")
        if not path.is_file():
            raise TrajectoryError(f"{referrer} refers to {name!r}, which does not exist")
        return path


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


def _read_steps(reader: _Reader, data: dict, label: str, where: str) -> list[dict]:
    """The tool calls of one trajectory object; returns the subagent refs its observations hold."""
    steps = _require(data, "steps", list, where)
    if not steps:
        raise TrajectoryError(f"{where}.steps: empty")
    refs = []
    for i, step in enumerate(steps):
        at = f"{where}.steps[{i}]"
        step_id = _require(step, "step_id", int, at)
        calls = step.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise TrajectoryError(f"{at}.tool_calls: expected a list or null")
        for j, call in enumerate(calls or ()):
            call_at = f"{at}.tool_calls[{j}]"
            name = _require(call, "function_name", str, call_at)
            arguments = _require(call, "arguments", dict, call_at)
            reader.run.calls.append(ToolCall(label, step_id, str(call.get("tool_call_id", "")), name, arguments))
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
    refs = _read_steps(reader, data, label, label)

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
        if ref_id is not None and ref_id in embedded_ids:
            continue  # read above
        if path is None:
            raise TrajectoryError(f"{where}: subagent {ref_id!r} is neither embedded nor in a file")
        sub = reader.load_file(path, where)
        _read_trajectory(reader, sub, path, depth + 1)

    continuation = data.get("continued_trajectory_ref")
    if continuation is not None:
        following = reader.load_file(continuation, f"{label}.continued_trajectory_ref")
        _read_trajectory(reader, following, continuation, depth + 1)


def read_run(path: str | Path) -> Run:
    """Every tool call of the run whose root trajectory is `path` (TrajectoryError if any part is unreadable)."""
    root = Path(path)
    if not root.is_file():
        raise TrajectoryError(f"no trajectory at {root}")
    reader = _Reader(Path(os.path.realpath(root.parent)))
    data = reader.load_file(root.name, "the command line")
    _read_trajectory(reader, data, root.name, 0)
    # Harbor writes a run cut by context summarisation as <stem>.cont-N.json; read any
    # that no reference reached too, so a broken chain cannot hide a segment.
    pattern = re.compile(CONTINUATION_PATTERN.format(stem=re.escape(root.stem)))
    segments = sorted((int(m.group(1)), p) for p in reader.folder.iterdir() if (m := pattern.fullmatch(p.name)))
    for _, sibling in segments:
        if str(Path(os.path.realpath(sibling))) not in reader.seen_files:
            segment = reader.load_file(sibling.name, "the trajectory's folder")
            _read_trajectory(reader, segment, sibling.name, 0)
    return reader.run
