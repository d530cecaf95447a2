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
      Crossing it fails this rule with the counts (composed_budget.py).
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
All USD work runs in a fresh Python subprocess (``python -m
usd_repair_verifier.gates.validity.worker``; ~0.25 s of start-up, mostly
importing pxr) with
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

Where things are
----------------
``rules.py``            the rule names and file types (pxr-free; gates/names.py reads it)
``gate.py``             the orchestration: check_submission, timed_validity, each rule's reason
``walk.py``             local_package, single_root_layer, the file walk (no file opened)
``rule_results.py``     RuleResult, ValidityReport
``limits.py``           ResourceLimits, default_worker_memory, the worker's caps
``runner.py``           starting the worker, waiting for it, reading its result or its crash
``protocol.py``         the worker's config and result (WorkerConfig, WorkerResult)
``worker.py``           the capped worker: the layers in order, cycles, cross-check, budgets
``scan.py``             one layer: every value read, every asset path checked, prims and points
``resolve.py``          an authored asset path anchored to its layer (schemes, '..', UDIM, .usdz)
``paths.py``            package-relative paths and locations (pxr-free)
``usdz.py``             the .usdz archive checks (zipfile)
``composed_budget.py``  counting the composed stage against its budgets
``fork.py``             the fork server for processes that grade many submissions
``text.py``             how reasons write paths, counts and offence lists

The package's public names (below) load their module on first use, so importing
the package, or its rules alone, imports none of the gate's code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Public name -> the module that defines it (loaded when the name is first used).
_EXPORTS = {
    "RULES": "rules",
    "USD_EXTENSIONS": "rules",
    "ResourceLimits": "limits",
    "default_worker_memory": "limits",
    "RuleResult": "rule_results",
    "ValidityReport": "rule_results",
    "check_submission": "gate",
    "timed_validity": "gate",
}

__all__ = [
    "RULES",
    "USD_EXTENSIONS",
    "ResourceLimits",
    "RuleResult",
    "ValidityReport",
    "check_submission",
    "default_worker_memory",
    "start_fork_server",
    "stop_fork_server",
    "timed_validity",
]

if TYPE_CHECKING:
    from .gate import check_submission, timed_validity
    from .limits import ResourceLimits, default_worker_memory
    from .rule_results import RuleResult, ValidityReport
    from .rules import RULES, USD_EXTENSIONS


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


# A process that grades many submissions forks each worker from a server that imported pxr
# once (fork.py); otherwise, and whenever the server fails or was started with another
# environment than a fresh worker's would be now, a fresh interpreter. The runner reads this
# process's server here.
_FORK_SERVER = None


def start_fork_server() -> None:
    """Start this process's server, or start it again if the worker's environment changed since
    (a no-op while it is alive and current)."""
    global _FORK_SERVER
    from .fork import ForkServer
    from .runner import same_worker_env, worker_env

    env = worker_env()
    if _FORK_SERVER is not None and (not _FORK_SERVER.alive() or not same_worker_env(_FORK_SERVER.env, env)):
        stop_fork_server()
    if _FORK_SERVER is None:
        _FORK_SERVER = ForkServer(env)


def stop_fork_server() -> None:
    global _FORK_SERVER
    if _FORK_SERVER is not None:
        _FORK_SERVER.close()
        _FORK_SERVER = None
