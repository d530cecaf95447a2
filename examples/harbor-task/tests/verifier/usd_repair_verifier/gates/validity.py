"""Submission validity gate (docs/bad-input.md).

``check_submission(submission, limits)`` inspects a candidate *package* (a
local folder with exactly one root layer at its top level plus whatever it
depends on below it) and returns a :class:`ValidityReport` with one
:class:`RuleResult` per entry of :data:`RULES`, in that order.  The package was
written by a possibly hostile agent, so every problem becomes a failed rule
with a specific reason naming the file and the offending asset path; the
function never raises because of the submission, never hangs and never lets
USD allocate unbounded memory in the calling process.

Rules
-----
``local_package``
    The path is a string/PathLike (not URL-ish), exists, is a directory, is not
    itself a symlink, and can be listed.
``single_root_layer``
    Exactly one non-directory entry at the top level whose extension is
    ``.usd``, ``.usda``, ``.usdc`` or ``.usdz`` (case-insensitive).  Zero or
    several fail and are listed.  An empty folder fails here.
``resource_limits``
    Two budgets, reported under one rule:

    * the *file walk* (pure Python, ``os.scandir`` without following
      symlinks, sizes from ``lstat``; no file is ever opened): number of files,
      number of directories (bounded by ``max_files`` too), bytes per file and
      in total; FIFOs, sockets and devices are rejected (opening a FIFO would
      hang USD); symlinks are allowed only when they resolve to a regular file
      or directory *inside* the package (an escaping, dangling or looping
      symlink is an offence).  The walk stops early once a count limit is
      crossed, so a package with a million entries, or a 2 GB sparse file, is
      rejected in milliseconds.
    * the *parsed budget*: prim specs (over all reachable layers, including
      prims inside variants) and points (sum of the lengths of every
      ``points`` attribute value, default and time samples, over all layers).
      These are counted while the layers are read (see below); when a budget
      is crossed reading stops and the rule fails, naming the layer where the
      limit was crossed, and ``layers_parse``/``dependencies_inside`` are
      "not checked: resource_limits failed".
    * the *composed budget*: once every layer parses and every dependency is
      inside, the worker composes the stage and counts composed prims,
      instances, points and triangles (instances expanded), stopping at the
      budget: min(max_composed_*, factor x the reference's count + slack).
      Crossing it fails this rule with the counts (gates/composed_budget.py).
``layers_parse``
    Every USD layer reachable from the root (sublayers, references, payloads,
    value-clip layers, in every variant; also whatever
    ``Sdf.Layer.GetCompositionAssetDependencies()`` reports) opens with
    ``Sdf.Layer.FindOrOpen`` and *every authored value in it can be read*
    (attribute defaults and time samples, metadata, list ops; only scalar
    enum/bool/token fields such as ``specifier`` are skipped, they are inlined
    in crate files and cannot be oversized).  Reading every value is
    deliberate: a crafted ``.usdc`` can claim a huge array length for any
    attribute, and reading it later inside the grading process would allocate
    gigabytes; here it fails inside a memory-capped worker.  A ``.usdz`` is
    checked with :mod:`zipfile` before USD sees it (must be a zip, members
    stored uncompressed and unencrypted, first member a USD layer).  A
    sublayer cycle (a layer that sublayers itself, directly or through other
    layers) is reported here as invalid: it is a composition error in the layer
    stack.  Reference cycles between different prims are legal and are not
    flagged.  An empty ``.usda`` is invalid (USD itself refuses it: "is not a
    valid usda layer").
``dependencies_inside``
    Every asset path authored in every reachable layer must name an existing
    regular file inside the package, anchored to the directory of the layer
    that authored it: sublayers, references, payloads (including those inside
    variants), value-clip asset paths, asset-valued attributes and asset
    arrays (defaults and time samples; e.g. texture ``inputs:file``) and
    asset values in layer/prim/property metadata dictionaries.  Offences:
    absolute paths (rejected outright, even when they point inside the
    package), ``..`` escaping the package, symlink escapes
    (``os.path.realpath`` containment), URLs/URIs or anything of the form
    ``scheme:`` (``http:``, ``file:``, ``omniverse:``, ``anon:``, also
    ``C:``), ``SDF_FORMAT_ARGS`` and backquoted variable expressions, bare
    names that do not exist next to the authoring layer (they would fall back
    to a resolver search path), missing files and non-files, package-relative
    paths into something that is not a ``.usdz`` and ``.usdz`` member paths
    that escape the zip or are missing.  Empty asset paths (``@@``) are "no
    dependency".  ``<UDIM>`` paths need at least one matching tile (four
    digits) inside the package.  ``assetInfo`` is identification metadata,
    not a dependency, and is not checked (``UsdUtils.ComputeAllDependencies``
    ignores it too).  When everything else passed,
    ``UsdUtils.ComputeAllDependencies`` is run as a cross-check (safe at that
    point: every path it can follow is already known to be inside); anything
    it reports unresolved or outside the package fails the rule.

    If some layers failed to parse, the dependencies of the layers that did
    parse are still checked; the rule fails with those offences (and says
    which layers could not be inspected) or, if none were found, is
    "not checked: layers_parse failed".

Isolation
---------
All USD work runs in a fresh Python subprocess (this file, loaded under a
private module name; ~0.25 s of start-up, mostly importing pxr) with
``RLIMIT_AS`` (see :func:`default_worker_memory`), ``RLIMIT_CORE=0``, a
bounded ``RLIMIT_FSIZE`` and ``RLIMIT_CPU``, ``PXR_WORK_THREAD_LIMIT=2`` and
``MALLOC_ARENA_MAX=2`` (so the address-space cap does not depend on the
machine's core count), and a wall-clock timeout after which its process group
is killed.  A crash, a timeout or a memory failure becomes a failed
``layers_parse`` naming the layer being read.  USD's diagnostics go to the
worker's stderr (a temp file outside the package) and are quoted in reasons,
never printed by the caller.  usd-core 26.11, measured:

* A 789-byte crate whose LZ4-compressed ``float[] points`` claims 3e9
  elements makes an uncapped process allocate ~11.5 GB and spend ~35 s before
  failing (an ``int[]`` claim: ~23 GB).  Uncompressed arrays in a ``.usdc`` on
  disk are memory-mapped and an out-of-range count is rejected at once
  ("Zero-copy data range out-of-bounds").  Inside a ``.usdz`` the same holds
  only when the member's data is 4-byte aligned; an unaligned member is read
  through a copy and a Vec3f array claiming 1e9 elements allocates ~11.5 GB
  (12-31 s).  Under the cap each fails in milliseconds ("Corrupt asset ...
  exception thrown unpacking a value").  The cap still lets a claim just below
  it allocate that much, but in the worker, never in the caller.
* A 329 KB ``.usda`` with 20,000 nested prims crashes the text parser with
  SIGSEGV (stack overflow).  In-process that would kill the grading session.
* Some corrupt crates make ``Sdf.Layer.FindOrOpen`` return ``None`` with no
  diagnostic at all.  A ``.usdz`` that is not a zip also returns ``None``
  silently (hence the zipfile pre-check).  A deflated ``.usdz`` raises
  "compressed files are not supported".  Random bytes raise "Sdf crate
  bootstrap section corrupt".  An empty ``.usda`` raises "is not a valid usda
  layer".  A self-sublayering layer opens fine (Sdf does not compose), so the
  cycle is detected here.
* A cap that is too tight (600 MB) makes USD segfault rather than raise.  The
  default cap leaves room for that (python + libusd map ~1.0 GB).
* An exception raised in a ``Layer.Traverse`` callback does not stop the
  traversal; it is re-raised for every remaining path.

Symlinks: allowed when they resolve (``os.path.realpath``) to a regular file
or a directory inside the package; a symlink that resolves outside, dangles or
loops, or points at anything else fails ``resource_limits``.  The walk never
follows them, so a link to ``/dev/zero`` or a directory loop costs nothing.
The submission folder itself must not be a symlink.

If the worker cannot start or cannot import ``pxr`` that is the verifier's
fault, not the submission's: the report then carries ``infrastructure_error``
(and is not valid); callers should grade it as an infrastructure error.

Agent-written files such as ``reward.json`` or ``grade.json`` are ordinary
files: they count towards the file/byte limits and are otherwise ignored
(never opened).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, fields
from typing import Any, Iterable

__all__ = [
    "RULES",
    "USD_EXTENSIONS",
    "ResourceLimits",
    "RuleResult",
    "ValidityReport",
    "check_submission",
    "default_worker_memory",
]

RULES = (
    "local_package",
    "single_root_layer",
    "resource_limits",
    "layers_parse",
    "dependencies_inside",
)

USD_EXTENSIONS = (".usd", ".usda", ".usdc", ".usdz")
TEXT_LAYER_EXTENSIONS = (".usd", ".usda", ".usdz")  # may hold text layers

MAX_DETAILS = 50
DEFAULT_WORKER_TIMEOUT_S = 300.0
_GIB = 1024**3
_WORKER_BASE_MEMORY = 3 * _GIB // 2      # python + libusd mappings, ~1.0 GB VmPeak
_WORKER_MIN_EXTRA_MEMORY = 1 * _GIB
_WORKER_MAX_STDERR_BYTES = 64 * 1024**2  # RLIMIT_FSIZE for the worker
_STDERR_TAIL = 2000
# Tests only: "crash" or "hang" makes the worker fail while reading the first layer,
# exercising the crash/timeout handling.  The environment is the operator's, not the agent's.
_TEST_FAULT_ENV = "USD_VALIDITY_TEST_FAULT"

# Ar's notion of a URI scheme: a letter followed by letters, digits, + - . then ':'.
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
# Prefix of the resolve() problem for an anchored path to a file the package lacks.
MISSING_INSIDE = "missing file ("
_UDIM = "<UDIM>"


# ---------------------------------------------------------------------------
# Public data types
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceLimits:
    max_total_bytes: int = 200_000_000  # all files in the package
    max_file_bytes: int = 100_000_000   # any single file
    max_files: int = 2_000
    max_prims: int = 200_000            # prim specs over all layers
    max_points: int = 20_000_000        # sum of points-array lengths over all layers
    # Absolute bounds on the composed stage (see gates/composed_budget.py; the budget is
    # also sized from the reference's own counts when the gate knows the reference).
    max_composed_prims: int = 200_000
    max_composed_instances: int = 10_000
    max_composed_points: int = 4_000_000
    max_composed_triangles: int = 4_000_000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(
                    f"resource limit {f.name!r} must be a positive integer, got {value!r}"
                )
            if value <= 0:
                raise ValueError(
                    f"resource limit {f.name!r} must be a positive integer, got {value!r}"
                )

    @classmethod
    def from_dict(cls, d: dict) -> "ResourceLimits":
        """Build limits from a profile dict; missing keys keep their defaults.

        Unknown keys, non-integer and non-positive values raise ValueError.
        Integral floats (``2e8``) are accepted because JSON writers produce them.
        """
        if d is None:
            return cls()
        if not isinstance(d, dict):
            raise ValueError(f"resource limits must be a JSON object, got {type(d).__name__}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(str(k) for k in d if k not in known)
        if unknown:
            raise ValueError(
                f"unknown resource limit key(s): {', '.join(map(repr, unknown))}; "
                f"known keys are {', '.join(known)}"
            )
        kwargs = {}
        for key, value in d.items():
            if isinstance(value, float) and not isinstance(value, bool) and value.is_integer():
                value = int(value)
            kwargs[key] = value
        return cls(**kwargs)

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class RuleResult:
    rule: str       # one of RULES
    passed: bool
    reason: str     # always filled
    details: tuple[str, ...] = ()  # individual offences, at most ~50

    def to_json(self) -> dict:
        return {
            "rule": self.rule,
            "passed": self.passed,
            "reason": self.reason,
            "details": list(self.details),
        }


@dataclass(frozen=True)
class ValidityReport:
    rules: tuple[RuleResult, ...]  # one per RULES entry, in RULES order
    root_layer: str | None         # absolute path of the root layer when found
    layer_count: int
    infrastructure_error: str | None = None  # verifier fault (worker could not run)

    @property
    def valid(self) -> bool:
        return self.infrastructure_error is None and all(r.passed for r in self.rules)

    def rule(self, name: str) -> RuleResult:
        for r in self.rules:
            if r.rule == name:
                return r
        raise KeyError(name)

    @property
    def failed_rules(self) -> tuple[str, ...]:
        return tuple(r.rule for r in self.rules if not r.passed)

    @property
    def reason(self) -> str:
        """One line: why the submission is (in)valid (first failure)."""
        if self.infrastructure_error:
            return f"infrastructure error: {self.infrastructure_error}"
        for r in self.rules:
            if not r.passed:
                return f"{r.rule}: {r.reason}"
        return "all validity rules passed"

    def to_json(self) -> dict:
        return {
            "valid": self.valid,
            "reason": self.reason,
            "root_layer": self.root_layer,
            "layer_count": self.layer_count,
            "infrastructure_error": self.infrastructure_error,
            "rules": [r.to_json() for r in self.rules],
        }


def default_worker_memory(limits: ResourceLimits, text_bytes: int = 0, binary_bytes: int = 0) -> int:
    """Address-space cap for the USD worker.

    ~1.5 GiB covers the interpreter and libusd mappings.  On top of that the
    worker may use max(1 GiB, 48 x text-layer bytes + 8 x other bytes): text
    layers need ~25-45x their size to parse (a 78 MB .usda peaked at 3.6 GB
    of address space), crate files are memory-mapped but compressed arrays
    expand.  Memory claimed beyond this by a crafted file fails fast.
    """
    text_bytes = min(text_bytes, limits.max_total_bytes)
    binary_bytes = min(binary_bytes, limits.max_total_bytes)
    extra = max(_WORKER_MIN_EXTRA_MEMORY, 48 * text_bytes + 8 * binary_bytes)
    return _WORKER_BASE_MEMORY + extra


# ---------------------------------------------------------------------------
# Small helpers (shared by parent and worker)
# ---------------------------------------------------------------------------


def _clean(text: Any) -> str:
    """Printable, JSON-safe text: control characters and undecodable bytes escaped."""
    s = str(text)
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        s = s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if any(ord(c) < 32 or ord(c) == 127 for c in s):
        s = "".join(c if (ord(c) >= 32 and ord(c) != 127) else repr(c)[1:-1] for c in s)
    return s


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _show(path: str, root: str | None) -> str:
    """A path for messages: relative to the package root when inside it."""
    if root and _inside(path, root) and path != root:
        return _clean(os.path.relpath(path, root))
    return _clean(path)


def _has_usd_ext(name: str) -> bool:
    return name.lower().endswith(USD_EXTENSIONS)


def _human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{n} B"  # pragma: no cover


def _n(count: int, noun: str, plural: str | None = None) -> str:
    return f"{count} {noun if count == 1 else (plural or noun + 's')}"


def _cap(details: Iterable[str]) -> tuple[str, ...]:
    items = list(details)
    if len(items) > MAX_DETAILS:
        extra = len(items) - (MAX_DETAILS - 1)
        items = items[: MAX_DETAILS - 1] + [f"... and {extra} more"]
    return tuple(_clean(d) for d in items)


def _summarise(offences: list[str], what: str, total: int | None = None) -> str:
    if not offences:
        return ""
    count = max(total or 0, len(offences))
    first = _clean(offences[0])
    if count == 1:
        return first
    return f"{count} {what}s; first: {first}"


# ---------------------------------------------------------------------------
# Parent side: local_package, single_root_layer, file walk
# ---------------------------------------------------------------------------


def _check_local_package(submission: Any) -> tuple[RuleResult, str | None]:
    rule = "local_package"
    if submission is None:
        return RuleResult(rule, False, "no submission path given"), None
    try:
        raw = os.fspath(submission)
    except TypeError:
        return RuleResult(rule, False, f"submission is not a path: {type(submission).__name__}"), None
    if isinstance(raw, bytes):
        raw = os.fsdecode(raw)
    if not raw:
        return RuleResult(rule, False, "submission path is empty"), None
    if "\x00" in raw:
        return RuleResult(rule, False, f"submission path contains a NUL byte: {_clean(raw)!r}"), None
    if "://" in raw or (_SCHEME_RE.match(raw) and len(raw.split(":", 1)[0]) > 1):
        return RuleResult(
            rule, False, f"submission {_clean(raw)!r} looks like a URL; a local folder is required"
        ), None
    path = os.path.abspath(raw)
    shown = _clean(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return RuleResult(rule, False, f"{shown} does not exist"), None
    except OSError as exc:
        return RuleResult(rule, False, f"{shown} cannot be inspected: {_clean(exc.strerror or exc)}"), None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return RuleResult(
            rule, False,
            f"{shown} is a symlink (to {_clean(target)}), not a local folder; pass the real directory",
        ), None
    if not stat.S_ISDIR(st.st_mode):
        kind = "a regular file" if stat.S_ISREG(st.st_mode) else "not a directory"
        return RuleResult(rule, False, f"{shown} is {kind}; a package must be a folder"), None
    if not os.access(path, os.R_OK | os.X_OK):
        return RuleResult(rule, False, f"{shown} is not readable"), None
    try:
        with os.scandir(path) as it:
            next(it, None)
    except OSError as exc:
        return RuleResult(rule, False, f"{shown} cannot be listed: {_clean(exc.strerror or exc)}"), None
    real = os.path.realpath(path)
    return RuleResult(rule, True, f"{shown} is a readable local folder"), real


def _check_single_root(root: str) -> tuple[RuleResult, str | None]:
    rule = "single_root_layer"
    candidates: list[str] = []
    entries = 0
    try:
        with os.scandir(root) as it:
            for entry in it:
                entries += 1
                if entries > 1_000_000:
                    break
                if not _has_usd_ext(entry.name):
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        continue
                except OSError:
                    pass
                candidates.append(entry.name)
    except OSError as exc:
        return RuleResult(rule, False, f"cannot list the package: {_clean(exc)}"), None
    candidates.sort()
    exts = "/".join(USD_EXTENSIONS)
    if not candidates:
        if entries == 0:
            return RuleResult(rule, False, f"the package folder is empty: no root layer ({exts})"), None
        return RuleResult(
            rule, False,
            f"no root layer: no {exts} file at the top level of the package ({entries} other entries)",
        ), None
    if len(candidates) > 1:
        names = ", ".join(_clean(c) for c in candidates[:10])
        more = f" and {len(candidates) - 10} more" if len(candidates) > 10 else ""
        return RuleResult(
            rule, False,
            f"{len(candidates)} candidate root layers at the top level, exactly one is required: {names}{more}",
            _cap(candidates),
        ), None
    name = candidates[0]
    return RuleResult(rule, True, f"root layer {_clean(name)}"), os.path.join(root, name)


@dataclass
class _WalkResult:
    files: int = 0
    dirs: int = 0
    total_bytes: int = 0
    text_bytes: int = 0
    binary_bytes: int = 0
    symlinks: int = 0
    offences: list[str] = field(default_factory=list)
    stopped: str | None = None


def _walk_package(root: str, limits: ResourceLimits) -> _WalkResult:
    res = _WalkResult()
    stack = [root]
    total_reported = False
    max_entries = 2 * limits.max_files + 1000  # hard bound on work
    seen_entries = 0

    def offence(msg: str) -> None:
        res.offences.append(msg)

    while stack and res.stopped is None:
        directory = stack.pop()
        try:
            it = os.scandir(directory)
        except OSError as exc:
            offence(f"{_show(directory, root)}/: cannot list directory ({_clean(exc.strerror or exc)})")
            continue
        with it:
            for entry in it:
                seen_entries += 1
                path = entry.path
                shown = _show(path, root)
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    offence(f"{shown}: cannot stat ({_clean(exc.strerror or exc)})")
                    continue
                mode = st.st_mode
                if stat.S_ISDIR(mode):
                    res.dirs += 1
                    if res.dirs > limits.max_files:
                        offence(f"more than {limits.max_files} directories (stopped walking at {shown})")
                        res.stopped = "directories"
                        break
                    stack.append(path)
                    continue
                res.files += 1
                if res.files > limits.max_files:
                    offence(
                        f"more than {limits.max_files} files (limit max_files={limits.max_files}; "
                        f"stopped counting at {shown})"
                    )
                    res.stopped = "files"
                    break
                if seen_entries > max_entries:  # pragma: no cover - covered by the two above
                    res.stopped = "entries"
                    break
                if stat.S_ISLNK(mode):
                    res.symlinks += 1
                    try:
                        target = os.readlink(path)
                    except OSError:
                        target = "?"
                    real = os.path.realpath(path)
                    if not _inside(real, root):
                        via = "" if os.path.normpath(target) == real else f" ({_clean(real)})"
                        offence(f"{shown}: symlink to {_clean(target)} resolves outside the package{via}")
                        continue
                    try:
                        tst = os.stat(real)
                    except OSError:
                        offence(f"{shown}: dangling or looping symlink (to {_clean(target)})")
                        continue
                    if not (stat.S_ISREG(tst.st_mode) or stat.S_ISDIR(tst.st_mode)):
                        offence(f"{shown}: symlink to {_clean(target)} is not a regular file or directory")
                    continue
                if not stat.S_ISREG(mode):
                    kind = (
                        "a FIFO" if stat.S_ISFIFO(mode) else
                        "a socket" if stat.S_ISSOCK(mode) else
                        "a device" if (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) else
                        "not a regular file"
                    )
                    offence(f"{shown}: is {kind}; only regular files and directories are allowed")
                    continue
                size = st.st_size
                if size > limits.max_file_bytes:
                    offence(
                        f"{shown}: {_human_bytes(size)} ({size} bytes) exceeds max_file_bytes="
                        f"{limits.max_file_bytes}"
                    )
                res.total_bytes += size
                if entry.name.lower().endswith(TEXT_LAYER_EXTENSIONS):
                    res.text_bytes += size
                else:
                    res.binary_bytes += size
                if res.total_bytes > limits.max_total_bytes and not total_reported:
                    total_reported = True
                    offence(
                        f"package exceeds max_total_bytes={limits.max_total_bytes} "
                        f"(reached {res.total_bytes} bytes at {shown})"
                    )
                if not os.access(path, os.R_OK):
                    offence(f"{shown}: not readable")
        if len(res.offences) > 10 * MAX_DETAILS:
            res.stopped = "offences"
    return res


# ---------------------------------------------------------------------------
# check_submission
# ---------------------------------------------------------------------------


def check_submission(
    submission: str | os.PathLike,
    limits: ResourceLimits | dict | None = None,
    *,
    timeout_s: float | None = None,
    memory_bytes: int | None = None,
    reference: str | os.PathLike | None = None,
) -> ValidityReport:
    """Run every validity rule on ``submission``; never raises because of it.

    ``timeout_s`` (default 300 s) bounds the USD worker's wall-clock time and
    ``memory_bytes`` overrides :func:`default_worker_memory`.  ``reference``, the
    reference's root layer, sizes the composed-stage budgets (else only the
    absolute limits apply).
    """
    if limits is None:
        limits = ResourceLimits()
    elif isinstance(limits, dict):
        limits = ResourceLimits.from_dict(limits)
    elif not isinstance(limits, ResourceLimits):
        raise TypeError(f"limits must be ResourceLimits, got {type(limits).__name__}")
    try:
        return _check(submission, limits, timeout_s, memory_bytes,
                      None if reference is None else os.fspath(reference))
    except Exception as exc:  # a verifier bug: report it, never crash the session
        msg = f"validity gate crashed: {type(exc).__name__}: {_clean(exc)}"
        return ValidityReport(
            rules=tuple(RuleResult(r, False, f"not checked: {msg}") for r in RULES),
            root_layer=None,
            layer_count=0,
            infrastructure_error=msg,
        )


def timed_validity(submission: str | os.PathLike, limits: ResourceLimits,
                   reference: str | os.PathLike | None = None) -> tuple[ValidityReport, float]:
    """check_submission and its wall time in seconds (run in the background by the plugin)."""
    start = time.perf_counter()
    report = check_submission(submission, limits, reference=reference)
    return report, round(time.perf_counter() - start, 6)


def _not_checked(rule: str, earlier: str, extra: str = "") -> RuleResult:
    return RuleResult(rule, False, f"not checked: {earlier} failed" + (f"; {extra}" if extra else ""))


def _check(submission: Any, limits: ResourceLimits, timeout_s: float | None,
           memory_bytes: int | None, reference: str | None = None) -> ValidityReport:
    results: dict[str, RuleResult] = {}

    def report(root_layer: str | None = None, layer_count: int = 0,
               infra: str | None = None) -> ValidityReport:
        return ValidityReport(
            rules=tuple(results[r] for r in RULES),
            root_layer=root_layer,
            layer_count=layer_count,
            infrastructure_error=infra,
        )

    lp, root = _check_local_package(submission)
    results["local_package"] = lp
    if root is None:
        for r in RULES[1:]:
            results[r] = _not_checked(r, "local_package")
        return report()

    srl, root_layer = _check_single_root(root)
    results["single_root_layer"] = srl

    walk = _walk_package(root, limits)
    walk_summary = (
        f"{_n(walk.files, 'file')}, {_human_bytes(walk.total_bytes)} in {_n(walk.dirs, 'subfolder')} "
        f"(limits: {limits.max_files} files, {limits.max_file_bytes} bytes per file, "
        f"{limits.max_total_bytes} bytes in total)"
    )
    if walk.offences:
        results["resource_limits"] = RuleResult(
            "resource_limits", False, _summarise(walk.offences, "offence"), _cap(walk.offences)
        )
        for r in RULES[3:]:
            results[r] = _not_checked(r, "resource_limits")
        return report(root_layer)
    if root_layer is None:
        results["resource_limits"] = _not_checked(
            "resource_limits", "single_root_layer",
            f"the file walk alone found {walk_summary}; prim and point counts need a root layer",
        )
        for r in RULES[3:]:
            results[r] = _not_checked(r, "single_root_layer")
        return report()

    if memory_bytes is None:
        memory_bytes = default_worker_memory(limits, walk.text_bytes, walk.binary_bytes)
    if timeout_s is None:
        timeout_s = DEFAULT_WORKER_TIMEOUT_S
    out, infra = _run_worker(root, root_layer, limits, timeout_s, memory_bytes, reference)
    if infra is not None:
        for r in RULES[2:]:
            results[r] = RuleResult(r, False, f"not checked: verifier infrastructure error: {infra}")
        return report(root_layer, 0, infra)

    layers = out.get("layers", [])
    layer_count = len(layers)
    budget = out.get("budget")
    prims, points = out.get("prims", 0), out.get("points", 0)
    parsed_summary = (
        f"{_n(prims, 'prim spec')} and {_n(points, 'point')} over {_n(layer_count, 'layer')} "
        f"(limits: {limits.max_prims} prims, {limits.max_points} points)"
    )
    if budget:
        results["resource_limits"] = RuleResult(
            "resource_limits", False, _clean(budget["reason"]), _cap(budget.get("details", []))
        )
        for r in RULES[3:]:
            results[r] = _not_checked(r, "resource_limits")
        return report(root_layer, layer_count)
    symlink_note = (f"; {_n(walk.symlinks, 'symlink')}, all resolving inside the package"
                    if walk.symlinks else "")
    composed = out.get("composed") or {}
    if composed.get("refusal"):
        results["resource_limits"] = RuleResult(
            "resource_limits", False, _clean(composed["refusal"]), (_clean(composed["refusal"]),)
        )
    else:
        counts = composed.get("counts")
        composed_note = ("; composed: " + ", ".join(f"{v} {k}" for k, v in counts.items())
                         + f" (budgets: {', '.join(f'{v} {k}' for k, v in composed['budgets'].items())})"
                         if counts else "")
        results["resource_limits"] = RuleResult(
            "resource_limits", True, f"{walk_summary}{symlink_note}; {parsed_summary}{composed_note}"
        )
    if composed.get("error"):
        out.setdefault("parse_errors", []).append(composed["error"])

    parse_errors: list[str] = out.get("parse_errors", [])
    if parse_errors:
        results["layers_parse"] = RuleResult(
            "layers_parse", False,
            _summarise(parse_errors, "layer error", out.get("parse_error_total")), _cap(parse_errors)
        )
    else:
        names = ", ".join(_show(p, root) for p in layers[:8])
        more = f" and {len(layers) - 8} more" if len(layers) > 8 else ""
        results["layers_parse"] = RuleResult(
            "layers_parse", True,
            f"{_n(layer_count, 'layer')} open and every authored value reads back: {names}{more}",
        )

    dep_errors: list[str] = out.get("dep_errors", [])
    if dep_errors:
        reason = _summarise(dep_errors, "dependency offence", out.get("dep_error_total"))
        if parse_errors:
            reason += "; layers that failed to parse were not inspected"
        results["dependencies_inside"] = RuleResult("dependencies_inside", False, reason, _cap(dep_errors))
    elif parse_errors:
        results["dependencies_inside"] = _not_checked(
            "dependencies_inside", "layers_parse",
            "no offence in the layers that did parse",
        )
    else:
        stats = out.get("dep_stats", {})
        cross = out.get("cross_check", "")
        missing = out.get("missing_inside", [])
        missing_note = (f"; {_n(len(missing), 'path')} name a file missing inside the package "
                        f"(a composition error, graded by the composition checks): {missing[0]}" if missing else "")
        results["dependencies_inside"] = RuleResult(
            "dependencies_inside", True,
            f"{_n(stats.get('layer_arcs', 0), 'layer arc')} (sublayers/references/payloads/clips) and "
            f"{_n(stats.get('assets', 0), 'asset path')} ({_n(stats.get('asset_files', 0), 'distinct file')}), "
            f"all inside the package" + (f"; {cross}" if cross else "") + missing_note,
            _cap(missing),
        )
    return report(root_layer, layer_count)


# ---------------------------------------------------------------------------
# Worker process management (parent side)
# ---------------------------------------------------------------------------

_WORKER_BOOT = (
    "import sys, importlib.util\n"
    "sys.dont_write_bytecode = True\n"
    "spec = importlib.util.spec_from_file_location('_usd_validity_worker', sys.argv[1])\n"
    "mod = importlib.util.module_from_spec(spec)\n"
    "sys.modules['_usd_validity_worker'] = mod\n"
    "spec.loader.exec_module(mod)\n"
    "code = mod._worker_main(sys.argv[2])\n"
    "sys.stdout.flush(); sys.stderr.flush()\n"
    "import os; os._exit(code)\n"
)


def _tail(path: str, limit: int = _STDERR_TAIL) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            data = fh.read()
    except OSError:
        return ""
    lines = [ln for ln in data.decode("utf-8", "replace").splitlines()
             if ln.strip() and not ln.startswith("#")]
    return _clean(" | ".join(lines[-6:]))


def _last_progress(path: str, root: str) -> str | None:
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as fh:
            lines = [ln.rstrip("\n") for ln in fh if ln.strip()]
    except OSError:
        return None
    for ln in reversed(lines):
        if ln.startswith("layer "):
            return _show(ln[6:], root)
    return None


def _worker_ready(path: str) -> bool:
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as fh:
            return any(ln.startswith("ready") for ln in fh)
    except OSError:
        return False


def _make_tempdir(root: str) -> str:
    tmp = tempfile.mkdtemp(prefix="usd-validity-")
    if _inside(os.path.realpath(tmp), root):  # TMPDIR inside the submission: go elsewhere
        shutil.rmtree(tmp, ignore_errors=True)
        for base in ("/tmp", "/var/tmp", os.path.expanduser("~")):
            if os.path.isdir(base) and not _inside(os.path.realpath(base), root):
                return tempfile.mkdtemp(prefix="usd-validity-", dir=base)
        raise RuntimeError("no temporary directory outside the submission")
    return tmp


def _worker_env() -> dict:
    env = dict(os.environ)
    env.update({
        "PXR_WORK_THREAD_LIMIT": "2",
        "MALLOC_ARENA_MAX": "2",
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    env.pop("PYTHONSTARTUP", None)
    return env


# A process that grades many submissions forks each worker from a server that imported pxr
# once (gates/validity_fork.py); otherwise, and whenever the server fails, a fresh interpreter.
_FORK_SERVER = None


def start_fork_server() -> None:
    global _FORK_SERVER
    from .validity_fork import ForkServer

    if _FORK_SERVER is None or not _FORK_SERVER.alive():
        _FORK_SERVER = ForkServer(os.path.abspath(__file__), _worker_env())


def stop_fork_server() -> None:
    global _FORK_SERVER
    if _FORK_SERVER is not None:
        _FORK_SERVER.close()
        _FORK_SERVER = None


def _forked_worker(cfg_path: str, stderr_path: str, cwd: str):
    if _FORK_SERVER is None:
        return None
    try:
        return _FORK_SERVER.spawn(cfg_path, stderr_path, cwd)
    except OSError:  # the server is gone: this worker starts fresh
        return None


def _run_worker(root: str, root_layer: str, limits: ResourceLimits, timeout_s: float,
                memory_bytes: int, reference: str | None = None) -> tuple[dict, str | None]:
    """Run the USD part in a capped subprocess.  Returns (result, infra_error)."""
    tmp = _make_tempdir(root)
    try:
        cfg_path = os.path.join(tmp, "config.json")
        out_path = os.path.join(tmp, "result.json")
        progress_path = os.path.join(tmp, "progress.log")
        stderr_path = os.path.join(tmp, "stderr.log")
        cfg = {
            "package_root": root,
            "root_layer": root_layer,
            "reference_root_layer": reference,
            "limits": limits.to_dict(),
            "memory_bytes": int(memory_bytes),
            "cpu_seconds": int(timeout_s) + 30,
            "result": out_path,
            "progress": progress_path,
            "stderr": stderr_path,
        }
        with open(cfg_path, "w", encoding="utf-8") as fh:
            json.dump(cfg, fh)
        start = time.monotonic()
        with open(stderr_path, "wb") as err:
            try:
                proc = _forked_worker(cfg_path, stderr_path, tmp) or subprocess.Popen(
                    [sys.executable, "-c", _WORKER_BOOT, os.path.abspath(__file__), cfg_path],
                    stdin=subprocess.DEVNULL,
                    stdout=err,
                    stderr=err,
                    cwd=tmp,
                    env=_worker_env(),
                    start_new_session=True,
                )
            except OSError as exc:
                return {}, f"could not start the USD worker ({sys.executable}): {_clean(exc)}"
            try:
                rc = proc.wait(timeout=timeout_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    proc.kill()
                rc = proc.wait()
        elapsed = time.monotonic() - start
        result = None
        if os.path.exists(out_path):
            try:
                with open(out_path, "r", encoding="utf-8") as fh:
                    result = json.load(fh)
            except (OSError, ValueError):
                result = None
        if result is not None and not timed_out:
            if result.get("internal_error"):
                return {}, f"the validity worker failed: {_clean(result['internal_error'])}"
            return result, None
        ready = _worker_ready(progress_path)
        where = _last_progress(progress_path, root)
        stderr_tail = _tail(stderr_path)
        if not ready:  # died or hung before touching the submission: our fault
            how = f"timed out after {timeout_s:g} s" if timed_out else f"exited with code {rc}"
            return {}, (
                f"the USD worker {how} before reading the package "
                f"(could not import pxr?): {stderr_tail or 'no output'}"
            )
        at = f" while reading {where}" if where else ""
        if timed_out:
            msg = f"USD did not finish within {timeout_s:g} s{at}; the worker was killed"
        elif rc is not None and rc < 0:
            try:
                sig = signal.Signals(-rc).name
            except ValueError:
                sig = f"signal {-rc}"
            hint = {
                "SIGKILL": " (killed: out of memory?)",
                "SIGXFSZ": f" (wrote more than {_WORKER_MAX_STDERR_BYTES // 1024**2} MB of diagnostics)",
                "SIGXCPU": " (CPU time limit)",
            }.get(sig, "")
            msg = f"USD crashed with {sig}{hint}{at}"
        else:
            msg = f"the USD worker failed with exit code {rc}{at}"
        if stderr_tail:
            msg += f"; USD said: {stderr_tail}"
        partial = result or {}
        parse_errors = [msg] + list(partial.get("parse_errors", []))
        return {
            "layers": partial.get("layers", []),
            "prims": partial.get("prims", 0),
            "points": partial.get("points", 0),
            "parse_errors": parse_errors,
            "dep_errors": partial.get("dep_errors", []),
            "elapsed": elapsed,
        }, None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------
# Worker side (runs in the capped subprocess; imports pxr)
# ---------------------------------------------------------------------------


class _Loc(tuple):
    """A file location: (absolute fs path, chain of zip member paths)."""

    __slots__ = ()

    def __new__(cls, fs: str, members: tuple[str, ...] = ()):
        return super().__new__(cls, (fs, tuple(members)))

    @property
    def fs(self) -> str:
        return self[0]

    @property
    def members(self) -> tuple[str, ...]:
        return self[1]

    def ident(self) -> str:
        if not self.members:
            return self.fs
        inner = self.members[-1]
        for m in reversed(self.members[:-1]):
            inner = f"{m}[{inner}]"
        return f"{self.fs}[{inner}]"


def _split_package_path(path: str) -> tuple[str, tuple[str, ...]]:
    """'a.usdz[b.usdz[c.usda]]' -> ('a.usdz', ('b.usdz', 'c.usda')).  ValueError if malformed."""
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
    sub_outer, sub_members = _split_package_path(inner)
    return outer, (sub_outer, *sub_members)


class _Budget(Exception):
    pass


# Scalar enum/bool/token fields: inlined in crate files (nothing to read lazily) and
# never asset-valued.  Skipping them keeps large layers fast.  Layer-stack fields are
# handled separately; assetInfo is identification metadata, not a dependency.
_SKIP_INFO_KEYS = frozenset({
    "specifier", "typeName", "variability", "custom", "active", "hidden",
    "instanceable", "kind", "subLayers", "subLayerOffsets", "assetInfo",
})


class _Capped(list):
    """A list that keeps the first ``keep`` items but counts every append."""

    def __init__(self, keep: int = 4 * MAX_DETAILS):
        super().__init__()
        self.keep = keep
        self.total = 0

    def append(self, item) -> None:  # type: ignore[override]
        self.total += 1
        if len(self) < self.keep:
            super().append(item)


class _Worker:
    def __init__(self, cfg: dict):
        from pxr import Sdf, Tf  # noqa: F401 (imported after the rlimits are set)

        self.Sdf = Sdf
        self.Tf = Tf
        self.root = cfg["package_root"]
        self.root_layer = cfg["root_layer"]
        self.reference_root_layer = cfg.get("reference_root_layer")
        self.limits = ResourceLimits(**cfg["limits"])
        self.stderr_path = cfg["stderr"]
        self.progress = open(cfg["progress"], "a", encoding="utf-8")
        self.layers: list[str] = []
        self.parse_errors = _Capped()
        self.dep_errors = _Capped()
        self.missing_inside = _Capped()
        self.missing_inside_files: set[str] = set()
        self.prims = 0
        self.points = 0
        self.budget: dict | None = None
        self.zip_cache: dict[str, Any] = {}
        self.sublayer_edges: dict[str, list[str]] = {}
        self.layer_arcs = 0
        self.assets = 0
        self.asset_files: set[str] = set()
        self.unparsed: list[str] = []

    # -- reporting ---------------------------------------------------------
    def show(self, loc_or_path: Any) -> str:
        text = loc_or_path.ident() if isinstance(loc_or_path, _Loc) else str(loc_or_path)
        return _show(text, self.root)

    def note(self, line: str) -> None:
        self.progress.write(_clean(line) + "\n")
        self.progress.flush()

    def stderr_since(self, pos: int) -> str:
        try:
            with open(self.stderr_path, "rb") as fh:
                fh.seek(pos)
                data = fh.read(64 * 1024)
        except OSError:
            return ""
        lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines()
                 if ln.strip() and not ln.startswith("#")]
        return " | ".join(lines[:4])

    def stderr_pos(self) -> int:
        try:
            sys.stderr.flush()
            return os.fstat(2).st_size
        except OSError:
            return 0

    @staticmethod
    def usd_message(exc: BaseException) -> str:
        text = str(exc).strip()
        # Tf errors look like "Error in 'func' at line N in file F : 'message'"
        m = re.findall(r" : '(.*?)'\s*$", text, flags=re.S | re.M)
        if m:
            text = m[-1]
        text = " ".join(text.split())
        return _clean(text[:500]) or type(exc).__name__

    # -- zips ---------------------------------------------------------------
    def zip_open(self, loc: _Loc):
        """Open the zip at loc (fs file or nested member).  Returns (zipfile, error)."""
        import zipfile

        key = loc.ident()
        if key in self.zip_cache:
            return self.zip_cache[key]
        result: tuple[Any, str | None]
        try:
            if not loc.members:
                if not zipfile.is_zipfile(loc.fs):
                    result = (None, f"{self.show(loc)} is not a zip archive (a .usdz must be a zip)")
                else:
                    result = (zipfile.ZipFile(loc.fs), None)
            else:
                parent, err = self.zip_open(_Loc(loc.fs, loc.members[:-1]))
                if parent is None:
                    result = (None, err)
                else:
                    info = parent.getinfo(loc.members[-1])
                    if info.compress_type != zipfile.ZIP_STORED:
                        result = (None, f"{self.show(loc)} is stored compressed inside its .usdz")
                    else:
                        fh = parent.open(info)
                        if not zipfile.is_zipfile(fh):
                            result = (None, f"{self.show(loc)} is not a zip archive (a .usdz must be a zip)")
                        else:
                            fh.seek(0)
                            result = (zipfile.ZipFile(fh), None)
        except Exception as exc:  # BadZipFile, KeyError, OSError, ...
            result = (None, f"{self.show(loc)} is not a valid zip archive: {_clean(exc)}")
        if result[0] is not None:
            err = self.usdz_problem(result[0], loc)
            if err:
                result = (None, err)
        self.zip_cache[key] = result
        return result

    def usdz_problem(self, zf, loc: _Loc) -> str | None:
        import zipfile

        infos = zf.infolist()
        if not infos:
            return f"{self.show(loc)} is an empty zip; a .usdz needs a root layer as its first member"
        for info in infos:
            if info.compress_type != zipfile.ZIP_STORED:
                return (f"{self.show(loc)}: member {_clean(info.filename)!r} is compressed; "
                        "USDZ members must be stored uncompressed (USD cannot read it)")
            if info.flag_bits & 0x1:
                return f"{self.show(loc)}: member {_clean(info.filename)!r} is encrypted"
        first = infos[0].filename
        if not _has_usd_ext(first) or first.endswith("/"):
            return (f"{self.show(loc)}: first member {_clean(first)!r} is not a USD layer; "
                    "a .usdz's first member is its root layer")
        return None

    @staticmethod
    def zip_members(zf) -> dict[str, Any]:
        out = {}
        for info in zf.infolist():
            if info.filename.endswith("/"):
                continue
            out.setdefault(posixpath.normpath(info.filename), info)
        return out

    # -- dependency resolution ---------------------------------------------
    def resolve(self, anchor: _Loc, authored: str, is_layer: bool) -> tuple[_Loc | None, str | None]:
        """Anchor an authored asset path to its layer.  Returns (location, problem)."""
        p = authored
        if p.startswith("`"):
            return None, "variable-expression asset paths are not allowed"
        if ":SDF_FORMAT_ARGS:" in p:
            return None, "file-format arguments (:SDF_FORMAT_ARGS:) are not allowed"
        m = _SCHEME_RE.match(p)
        if m and len(m.group(0)) == 2 and p[2:3] in ("/", "\\"):
            return None, "is an absolute Windows drive path; only paths relative to the layer are allowed"
        if m:
            return None, f"is a URL/URI ({m.group(0)!r} scheme); only package-local files are allowed"
        if p.startswith(("/", "\\")):
            return None, "absolute paths are not allowed (use a path relative to the layer)"
        try:
            outer, members = _split_package_path(p)
        except ValueError as exc:
            return None, f"malformed package-relative path ({exc})"
        if not outer:
            return None, "malformed package-relative path (no package file)"
        bare = not (outer.startswith("./") or outer.startswith("../") or outer in (".", ".."))
        for mem in members:
            if mem.startswith(("/", "\\")) or _SCHEME_RE.match(mem):
                return None, f"package member {_clean(mem)!r} is absolute"
            norm = posixpath.normpath(mem)
            if norm == ".." or norm.startswith("../"):
                return None, f"package member {_clean(mem)!r} escapes the .usdz"
        members = tuple(posixpath.normpath(mm) for mm in members)
        udim = (not is_layer) and _UDIM in p

        if anchor.members:  # authored inside a .usdz: anchor within the zip
            base = posixpath.dirname(anchor.members[-1])
            member = posixpath.normpath(posixpath.join(base, outer))
            if member == ".." or member.startswith("../") or member.startswith("/"):
                container = _Loc(anchor.fs, anchor.members[:-1])
                return None, (f"escapes its .usdz package {self.show(container)} "
                              f"(would be {self.show(container)}[{_clean(member)}])")
            loc = _Loc(anchor.fs, anchor.members[:-1] + (member,) + members)
            first_zip_level = len(anchor.members) - 1
        else:
            fs = os.path.normpath(os.path.join(os.path.dirname(anchor.fs), outer))
            if not _inside(fs, self.root):
                return None, f"'..' escapes the package (resolves to {_clean(fs)})"
            if udim and not members:
                return self.resolve_udim_fs(fs)
            real = os.path.realpath(fs)
            if not _inside(real, self.root):
                return None, f"resolves through a symlink to {_clean(real)}, outside the package"
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
            loc = _Loc(fs, members)
            first_zip_level = 0
            if not members:
                return loc, None
            if not outer.lower().endswith(".usdz"):
                return None, f"package-relative path into {self.show(fs)}, which is not a .usdz"

        # Check every zip level from first_zip_level on.
        for level in range(first_zip_level, len(loc.members)):
            container = _Loc(loc.fs, loc.members[:level])
            if level > 0 and not container.members[-1].lower().endswith(".usdz"):
                return None, f"package-relative path into {self.show(container)}, which is not a .usdz"
            zf, err = self.zip_open(container)
            if zf is None:
                return None, err
            names = self.zip_members(zf)
            member = loc.members[level]
            if member == ".." or member.startswith("../"):
                return None, f"escapes its .usdz package {self.show(container)}"
            last = level == len(loc.members) - 1
            if udim and last and _UDIM in member:
                rx = re.compile(re.escape(member).replace(re.escape(_UDIM), r"\d{4}") + r"\Z")
                if not any(rx.match(n) for n in names):
                    return None, f"no UDIM tile matching {_clean(member)!r} in {self.show(container)}"
                return loc, None
            if member not in names:
                return None, f"member {_clean(member)!r} is missing from {self.show(container)}"
        return loc, None

    def resolve_udim_fs(self, fs: str) -> tuple[_Loc | None, str | None]:
        directory, pattern = os.path.split(fs)
        if _UDIM in directory:
            return None, "<UDIM> is only supported in the file name"
        real_dir = os.path.realpath(directory)
        if not _inside(real_dir, self.root):
            return None, f"resolves through a symlink to {_clean(real_dir)}, outside the package"
        rx = re.compile(re.escape(pattern).replace(re.escape(_UDIM), r"\d{4}") + r"\Z")
        tiles = 0
        try:
            with os.scandir(real_dir) as it:
                for entry in it:
                    if not rx.match(entry.name):
                        continue
                    real = os.path.realpath(entry.path)
                    if not _inside(real, self.root):
                        return None, f"UDIM tile {self.show(entry.path)} resolves outside the package"
                    if os.path.isfile(real):
                        tiles += 1
        except OSError:
            pass
        if not tiles:
            return None, f"no UDIM tile matching {self.show(fs)} exists"
        return _Loc(fs), None

    def check_dep(self, layer_loc: _Loc, anchor: _Loc, authored: str, kind: str,
                  where: str, is_layer: bool) -> _Loc | None:
        if not authored:
            return None
        loc, problem = self.resolve(anchor, authored, is_layer)
        if problem and problem.startswith(MISSING_INSIDE):
            # A file the package itself should hold but does not: not an escape, so not
            # invalid; the stage gets a composition error (or a missing texture) that the
            # composition checks and the preservation bound grade.
            self.missing_inside.append(f"{self.show(anchor)}: {kind} @{_clean(authored)}@{where}: {problem}")
            self.missing_inside_files.add(os.path.normpath(
                os.path.join(os.path.dirname(anchor.fs), _split_package_path(authored)[0])))
            return None
        if problem:
            self.dep_errors.append(
                f"{self.show(anchor)}: {kind} @{_clean(authored)}@{where}: {problem}"
            )
            return None
        if is_layer:
            self.layer_arcs += 1
        else:
            self.assets += 1
            self.asset_files.add(loc.ident())
        return loc

    # -- layers -------------------------------------------------------------
    def open_layer(self, loc: _Loc) -> tuple[Any, _Loc | None]:
        """Open a layer; returns (layer, anchor location) or (None, None) after recording why."""
        anchor = loc
        last = loc.members[-1] if loc.members else loc.fs
        if last.lower().endswith(".usdz"):
            zf, err = self.zip_open(loc)
            if zf is None:
                self.parse_errors.append(err)
                return None, None
            anchor = _Loc(loc.fs, loc.members + (posixpath.normpath(zf.infolist()[0].filename),))
        ident = loc.ident()
        self.note(f"layer {ident}")
        fault = os.environ.get(_TEST_FAULT_ENV)
        if fault == "crash":  # test hook: behave like USD segfaulting on this layer
            os.kill(os.getpid(), signal.SIGSEGV)
        elif fault == "hang":  # test hook: behave like USD never returning
            time.sleep(3600)
        pos = self.stderr_pos()
        try:
            layer = self.Sdf.Layer.FindOrOpen(ident)
        except MemoryError:
            self.parse_errors.append(f"{self.show(loc)}: exceeded the verifier's memory cap while opening")
            return None, None
        except Exception as exc:  # Tf.ErrorException and anything else
            self.parse_errors.append(f"{self.show(loc)}: does not parse: {self.usd_message(exc)}")
            return None, None
        if layer is None:
            said = self.stderr_since(pos)
            if os.path.exists(loc.fs) and os.path.getsize(loc.fs) == 0 and not loc.members:
                why = "empty file"
            else:
                why = "USD could not open it" + (f": {_clean(said)}" if said else " (no diagnostic)")
            self.parse_errors.append(f"{self.show(loc)}: does not parse: {why}")
            return None, None
        return layer, anchor

    def read(self, layer_loc: _Loc, what: str, fn):
        """Read a value through fn(); record corruption as a parse error."""
        try:
            return True, fn()
        except TypeError as exc:
            if "to_python" in str(exc) or "converter" in str(exc):
                return False, None  # binding limitation (e.g. subLayerOffsets), not corruption
            self.parse_errors.append(f"{self.show(layer_loc)}: {what} cannot be read: {self.usd_message(exc)}")
            return False, None
        except MemoryError:
            self.parse_errors.append(
                f"{self.show(layer_loc)}: {what} exceeds the verifier's memory cap (corrupt or oversized array)"
            )
            return False, None
        except Exception as exc:
            msg = self.usd_message(exc)
            if "unpacking a value" in msg:
                msg += " (a corrupt or oversized array: it does not fit the verifier's memory cap)"
            self.parse_errors.append(f"{self.show(layer_loc)}: {what} cannot be read: {msg}")
            return False, None

    def asset_values(self, value: Any, in_clips: bool = False):
        """Yield (asset path string, is_layer) found in a metadata/attribute value (iterative)."""
        Sdf = self.Sdf
        stack = [(value, in_clips)]
        while stack:
            v, clip = stack.pop()
            if isinstance(v, Sdf.AssetPath):
                yield (getattr(v, "authoredPath", None) or v.path), clip
            elif isinstance(v, Sdf.AssetPathArray):
                for a in v:
                    yield (getattr(a, "authoredPath", None) or a.path), clip
            elif isinstance(v, dict):
                for k, sub in v.items():
                    if clip and k == "templateAssetPath" and isinstance(sub, str):
                        yield ("\0template", sub), clip
                    else:
                        stack.append((sub, clip))
            elif isinstance(v, (list, tuple)):
                for sub in v:
                    stack.append((sub, clip))

    def process_layer(self, loc: _Loc, layer, anchor: _Loc, queue: list) -> None:
        Sdf = self.Sdf
        lim = self.limits

        def enqueue(target: _Loc | None, sublayer: bool) -> None:
            if target is None:
                return
            queue.append(target)
            if sublayer:
                self.sublayer_edges.setdefault(loc.ident(), []).append(target.ident())

        def layer_dep(path: str, kind: str, where: str, sublayer: bool = False) -> None:
            enqueue(self.check_dep(loc, anchor, path, kind, where, True), sublayer)

        def asset_dep(path: Any, kind: str, where: str, clip: bool) -> None:
            if isinstance(path, tuple):  # clip template string
                template = path[1]
                if template:
                    probe = template.replace("#", "0")
                    _, problem = self.resolve(anchor, probe, False)
                    if problem and ("absolute" in problem or "URL" in problem or "escapes" in problem
                                    or "symlink" in problem):
                        self.dep_errors.append(
                            f"{self.show(anchor)}: clip template {_clean(template)!r}{where}: {problem}"
                        )
                return
            if clip:
                layer_dep(path, "clip layer", where)
            else:
                self.check_dep(loc, anchor, path, kind, where, False)

        ok, sublayers = self.read(loc, "subLayers", lambda: list(layer.subLayerPaths))
        for sp in sublayers or []:
            layer_dep(sp, "sublayer", "", sublayer=True)
        ok, extra = self.read(loc, "composition dependencies",
                              lambda: list(layer.GetCompositionAssetDependencies()))
        listed = set(sublayers or [])
        # A set (its order follows the process's string hashing): sorted, so that the same
        # package gives the same report in every process.
        extra_paths = sorted(p for p in (extra or []) if p and p not in listed)

        seen_arcs: set[str] = set()

        def metadata(spec, spath: str) -> None:
            # Sorted: Sdf lists the keys in an order that varies from process to process.
            for key in sorted(spec.ListInfoKeys()):
                if key in _SKIP_INFO_KEYS:
                    continue
                if key in ("references", "payload"):
                    ok, listop = self.read(loc, f"{key} on <{spath}>", lambda k=key: spec.GetInfo(k))
                    if not ok or listop is None:
                        continue
                    kind = "reference" if key == "references" else "payload"
                    for item in listop.GetAddedOrExplicitItems():
                        ap = item.assetPath
                        if ap:
                            seen_arcs.add(ap)
                            layer_dep(ap, kind, f" on <{spath}>")
                    continue
                ok, value = self.read(loc, f"{key} on <{spath}>", lambda k=key: spec.GetInfo(k))
                if not ok:
                    continue
                for ap, clip in self.asset_values(value, in_clips=(key == "clips")):
                    asset_dep(ap, "asset", f" in {key} of <{spath}>", clip)

        # Layer.Traverse visits every spec path (prims, variant sets, variants, properties,
        # targets) from C++; ~1 us a path.  It cannot be stopped early (an exception in the
        # callback is re-raised for every remaining path), so only collect here.
        paths: list = []
        layer.Traverse(Sdf.Path.absoluteRootPath, paths.append)
        for path in paths:
            if path == Sdf.Path.absoluteRootPath:
                metadata(layer.pseudoRoot, "/")
            elif path.IsPrimPath():
                self.prims += 1
                if self.prims > lim.max_prims:
                    raise _Budget(
                        f"more than {lim.max_prims} prim specs (limit max_prims={lim.max_prims}); "
                        f"the limit was crossed in {self.show(loc)} at <{path}>"
                    )
                spec = layer.GetPrimAtPath(path)
                if spec is not None:
                    metadata(spec, str(path))
            elif path.IsPrimVariantSelectionPath():
                spec = layer.GetPrimAtPath(path)  # a variant's own prim spec (None for a variant set)
                if spec is not None:
                    metadata(spec, str(path))
            elif path.IsPropertyPath():
                spec = layer.GetPropertyAtPath(path)
                if spec is None:
                    continue
                if isinstance(spec, Sdf.AttributeSpec):
                    self.process_attribute(loc, spec, asset_dep)
                else:
                    metadata(spec, str(path))
        del paths

        for p in extra_paths:
            if p not in seen_arcs:
                layer_dep(p, "composition dependency", "")

    def process_attribute(self, loc: _Loc, attr, asset_dep) -> None:
        lim = self.limits
        apath = str(attr.path)
        is_points = attr.name == "points"
        for key in sorted(attr.ListInfoKeys()):
            ok, value = self.read(loc, f"{key} of <{apath}>", lambda k=key: attr.GetInfo(k))
            if not ok or value is None:
                continue
            if key == "default":
                values = [value]
            elif key == "timeSamples" and isinstance(value, dict):
                values = list(value.values())
            else:
                for ap, clip in self.asset_values(value):
                    asset_dep(ap, "asset", f" in {key} of <{apath}>", clip)
                continue
            for v in values:
                if is_points:
                    try:
                        n = len(v)
                    except TypeError:
                        n = 0
                    self.points += n
                    if self.points > lim.max_points:
                        raise _Budget(
                            f"more than {lim.max_points} points (limit max_points={lim.max_points}); "
                            f"the limit was crossed in {self.show(loc)} at <{apath}> ({n} points)"
                        )
                for ap, clip in self.asset_values(v):
                    asset_dep(ap, "asset attribute", f" <{apath}>", clip)

    # -- driver ---------------------------------------------------------------
    def run(self) -> dict:
        root_loc = _Loc(self.root_layer)
        queue: list[_Loc] = [root_loc]
        done: set[str] = set()
        head = 0
        try:
            while head < len(queue):
                loc = queue[head]
                head += 1
                key = loc.ident()
                if key in done:
                    continue
                done.add(key)
                layer, anchor = self.open_layer(loc)
                if layer is None:
                    self.unparsed.append(key)
                    continue
                self.layers.append(key)
                self.process_layer(loc, layer, anchor, queue)
                del layer
        except _Budget as exc:
            self.budget = {"reason": str(exc), "details": [str(exc)]}
        except MemoryError:
            self.parse_errors.append(
                f"{self.show(queue[head - 1]) if head else '?'}: exceeded the verifier's memory cap while reading"
            )
        if self.budget is None:
            self.check_cycles()
        cross = ""
        composed = None
        if self.budget is None and not self.parse_errors and not self.dep_errors:
            cross = self.cross_check(root_loc)
            if not self.dep_errors:
                composed = self.composed_budget(root_loc)
        return {
            "composed": composed,
            "layers": self.layers,
            "prims": self.prims,
            "points": self.points,
            "budget": self.budget,
            "parse_errors": list(self.parse_errors),
            "parse_error_total": self.parse_errors.total,
            "dep_errors": list(self.dep_errors),
            "dep_error_total": self.dep_errors.total,
            "missing_inside": list(self.missing_inside),
            "dep_stats": {
                "layer_arcs": self.layer_arcs,
                "assets": self.assets,
                "asset_files": len(self.asset_files),
            },
            "cross_check": cross,
        }

    def composed_budget(self, root_loc: _Loc) -> dict:
        """Compose the stage and count it against the budgets (see composed_budget.py)."""
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "_usd_composed_budget", os.path.join(os.path.dirname(os.path.abspath(__file__)), "composed_budget.py"))
        budget = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses need it listed
        spec.loader.exec_module(budget)
        absolute = {name: getattr(self.limits, f"max_composed_{name}") for name in budget.COUNTED}
        reference = None
        if self.reference_root_layer:
            # The reference is the case's own, trusted package: a failure here is the verifier's.
            counted = budget.count(self.reference_root_layer, absolute)
            reference = counted.as_dict()
        limits = budget.budgets(reference, absolute)
        self.note(f"layer {root_loc.ident()}")
        try:
            counts = budget.count(root_loc.ident(), limits)
        except MemoryError:
            return {"refusal": f"composing the stage exceeded the verifier's memory cap "
                               f"(budgets: {limits})", "budgets": limits}
        except Exception as exc:  # Tf errors: the stage does not compose
            return {"error": f"{self.show(root_loc)}: the stage does not compose: {self.usd_message(exc)}",
                    "budgets": limits}
        refusal = budget.refusal(counts, limits, reference) if counts.over else None
        return {"counts": counts.as_dict(), "budgets": limits, "reference": reference, "refusal": refusal}

    def check_cycles(self) -> None:
        edges = self.sublayer_edges
        color: dict[str, int] = {}
        reported: set[frozenset] = set()
        for start in list(edges):
            if color.get(start):
                continue
            stack = [(start, iter(edges.get(start, ())))]
            path = [start]
            color[start] = 1
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    color[node] = 2
                    stack.pop()
                    path.pop()
                    continue
                state = color.get(nxt, 0)
                if state == 1:
                    cyc = path[path.index(nxt):] + [nxt]
                    key = frozenset(cyc)
                    if key not in reported:
                        reported.add(key)
                        chain = " -> ".join(self.show(c) for c in cyc)
                        if len(cyc) == 2:
                            msg = f"{self.show(nxt)}: sublayers itself (sublayer cycle {chain})"
                        else:
                            msg = f"{self.show(nxt)}: sublayer cycle {chain}"
                        self.parse_errors.append(
                            msg + "; a cyclic layer stack is a composition error, so the package is invalid"
                        )
                elif state == 0:
                    color[nxt] = 1
                    path.append(nxt)
                    stack.append((nxt, iter(edges.get(nxt, ()))))

    def cross_check(self, root_loc: _Loc) -> str:
        try:
            from pxr import UsdUtils
        except Exception as exc:  # pragma: no cover
            return f"UsdUtils unavailable ({_clean(exc)}), cross-check skipped"
        self.note(f"layer {root_loc.ident()}")
        try:
            layers, assets, unresolved = UsdUtils.ComputeAllDependencies(root_loc.ident())
        except Exception as exc:
            self.dep_errors.append(
                f"{self.show(root_loc)}: UsdUtils.ComputeAllDependencies failed: {self.usd_message(exc)}"
            )
            return ""
        outside = []
        for lyr in layers:
            ident = lyr.realPath or lyr.identifier
            if lyr.anonymous or not ident:
                continue
            outside.append(ident)
        outside += [str(a) for a in assets]
        for path in outside:
            try:
                outer, _ = _split_package_path(path)
            except ValueError:
                outer = path
            real = os.path.realpath(outer) if os.path.isabs(outer) else None
            if real is None or not _inside(real, self.root):
                self.dep_errors.append(
                    f"{self.show(root_loc)}: UsdUtils.ComputeAllDependencies resolves a dependency "
                    f"outside the package: {_clean(path)}"
                )
        for u in unresolved:
            if os.path.normpath(str(u)) in self.missing_inside_files:
                continue  # already reported as missing inside the package
            self.dep_errors.append(
                f"{self.show(root_loc)}: UsdUtils.ComputeAllDependencies cannot resolve @{_clean(u)}@"
            )
        return (f"UsdUtils.ComputeAllDependencies agrees ({_n(len(layers), 'layer')}, "
                f"{_n(len(assets), 'asset')}, none unresolved outside what is reported missing)")


def _set_worker_limits(cfg: dict) -> None:
    try:
        import resource
    except ImportError:  # pragma: no cover - non-POSIX
        return

    def setlim(which: int, value: int) -> None:
        try:
            soft, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, hard if hard != resource.RLIM_INFINITY else value))
        except (ValueError, OSError):
            pass

    setlim(resource.RLIMIT_AS, int(cfg["memory_bytes"]))
    setlim(resource.RLIMIT_CORE, 0)
    setlim(resource.RLIMIT_FSIZE, _WORKER_MAX_STDERR_BYTES)
    setlim(resource.RLIMIT_CPU, int(cfg["cpu_seconds"]))


def _worker_main(cfg_path: str) -> int:
    with open(cfg_path, "r", encoding="utf-8") as fh:
        cfg = json.load(fh)
    _set_worker_limits(cfg)
    worker = _Worker(cfg)  # imports pxr
    worker.note("ready")
    try:
        result = worker.run()
    except Exception as exc:  # a verifier bug, not the submission's fault
        import traceback

        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        result = {"internal_error": "".join(tb[-3:])[-1500:]}
    tmp = cfg["result"] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(result, fh)
    os.replace(tmp, cfg["result"])
    return 0
