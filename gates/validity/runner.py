"""The parent side of the worker: start it capped, wait for it, read what it wrote.

All USD work runs in a fresh process (``python -m usd_repair_verifier.gates.validity.worker``,
or forked from the fork server when the process started one: fork.py), in a session of its own so
that a timeout kills its whole group. A crash, a timeout or a memory failure after the worker
started reading the package is the package's doing: a failed layers_parse naming the layer being
read. A worker that fails before that (no pxr, no interpreter) is the verifier's: an
infrastructure error.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import usd_repair_verifier

from .fork import kill_group
from .limits import WORKER_MAX_STDERR_BYTES, ResourceLimits
from .protocol import WorkerConfig, WorkerResult
from .text import clean, inside, show

WORKER_MODULE = "usd_repair_verifier.gates.validity.worker"
_STDERR_TAIL = 2000


def worker_env() -> dict:
    """The worker's environment: the caller's, with USD's threads and malloc's arenas bounded (so
    the address-space cap does not depend on the machine's core count), and this verifier's
    folder first on the import path (the worker imports this package by name)."""
    env = dict(os.environ)
    env.update({
        "PXR_WORK_THREAD_LIMIT": "2",
        "MALLOC_ARENA_MAX": "2",
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    env.pop("PYTHONSTARTUP", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(usd_repair_verifier.IMPORT_ROOT), env.get("PYTHONPATH")]))
    if sys.pycache_prefix:
        # The sealed grade reads bytecode only from its own cache (test.sh): so does its worker.
        env["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix
    return env


def same_worker_env(a: dict, b: dict) -> bool:
    """Would a worker behave the same in both environments? pytest's own variables (PYTEST_*) are
    left out: pytest changes them while a session and each test run (PYTEST_CURRENT_TEST,
    PYTEST_VERSION), and the worker, which runs no pytest, reads none of them."""
    def kept(env: dict) -> dict:
        return {k: v for k, v in env.items() if not k.startswith("PYTEST_")}

    return kept(a) == kept(b)


def run_worker(root: str, root_layer: str, limits: ResourceLimits, timeout_s: float,
               memory_bytes: int, reference: str | None = None,
               variant_selections: dict | None = None) -> tuple[WorkerResult, str | None]:
    """Run the USD part in a capped subprocess.  Returns (result, infrastructure error)."""
    tmp = make_tempdir(root)
    try:
        cfg = WorkerConfig(
            package_root=root,
            root_layer=root_layer,
            reference_root_layer=reference,
            limits=limits,
            memory_bytes=int(memory_bytes),
            cpu_seconds=int(timeout_s) + 30,
            result=os.path.join(tmp, "result.json"),
            progress=os.path.join(tmp, "progress.log"),
            stderr=os.path.join(tmp, "stderr.log"),
            variant_selections=dict(variant_selections or {}),
        )
        cfg_path = os.path.join(tmp, "config.json")
        cfg.write(cfg_path)
        try:
            ended = _execute(cfg_path, cfg.stderr, tmp, timeout_s)
        except _NotStarted as exc:
            return WorkerResult(), f"could not start the USD worker ({sys.executable}): {clean(exc.__cause__)}"
        result = _read_result(cfg.result)
        if result is not None and not ended.timed_out:
            if result.internal_error:
                return WorkerResult(), f"the validity worker failed: {clean(result.internal_error)}"
            return result, None
        return _failed_worker(cfg, ended, timeout_s, result)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass(frozen=True)
class _Ended:
    returncode: int | None   # negative: the signal that ended it
    timed_out: bool          # killed (with its process group) at the timeout


def worker_command(cfg_path: str) -> list[str]:
    """The command line of a fresh worker (the tests replace it with a worker that crashes or hangs)."""
    return [sys.executable, "-m", WORKER_MODULE, cfg_path]


class _NotStarted(Exception):
    """The worker process could not be started (its cause: the OSError)."""


def _execute(cfg_path: str, stderr_path: str, cwd: str, timeout_s: float) -> _Ended:
    """Start the worker (forked or fresh) and wait for it."""
    with open(stderr_path, "wb") as err:
        try:
            proc = _forked_worker(cfg_path, stderr_path, cwd) or subprocess.Popen(
                worker_command(cfg_path),
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
                cwd=cwd,
                env=worker_env(),
                start_new_session=True,
            )
        except OSError as exc:
            raise _NotStarted() from exc
        try:
            return _Ended(proc.wait(timeout=timeout_s), False)
        except subprocess.TimeoutExpired:
            return _Ended(kill_group(proc), True)


def _forked_worker(cfg_path: str, stderr_path: str, cwd: str):
    from .. import validity  # the package holds this process's fork server (start_fork_server)

    server = validity._FORK_SERVER
    if server is None or not same_worker_env(server.env, worker_env()):
        return None   # a fresh worker, with the environment it would have now
    try:
        return server.spawn(cfg_path, stderr_path, cwd)
    except OSError:  # the server is gone: this worker starts fresh
        return None


def _read_result(path: str) -> WorkerResult | None:
    if not os.path.exists(path):
        return None
    try:
        return WorkerResult.read(path)
    except (OSError, ValueError, TypeError):
        return None


def _failed_worker(cfg: WorkerConfig, ended: _Ended, timeout_s: float,
                   partial: WorkerResult | None) -> tuple[WorkerResult, str | None]:
    """The worker crashed or timed out: the layer it was reading fails layers_parse."""
    root = cfg.package_root
    where = _last_progress(cfg.progress, root)
    stderr_tail = _tail(cfg.stderr)
    if not _worker_ready(cfg.progress):  # died or hung before touching the submission: our fault
        how = f"timed out after {timeout_s:g} s" if ended.timed_out else f"exited with code {ended.returncode}"
        return WorkerResult(), (
            f"the USD worker {how} before reading the package "
            f"(could not import pxr?): {stderr_tail or 'no output'}"
        )
    at = f" while reading {where}" if where else ""
    rc = ended.returncode
    if ended.timed_out:
        msg = f"USD did not finish within {timeout_s:g} s{at}; the worker was killed"
    elif rc is not None and rc < 0:
        msg = f"USD crashed with {_signal_description(-rc)}{at}"
    else:
        msg = f"the USD worker failed with exit code {rc}{at}"
    if stderr_tail:
        msg += f"; USD said: {stderr_tail}"
    partial = partial or WorkerResult()
    return WorkerResult(
        layers=partial.layers,
        prims=partial.prims,
        points=partial.points,
        parse_errors=[msg] + partial.parse_errors,
        dep_errors=partial.dep_errors,
    ), None


def _signal_description(signum: int) -> str:
    try:
        sig = signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
    hint = {
        "SIGKILL": " (killed: out of memory?)",
        "SIGXFSZ": f" (wrote more than {WORKER_MAX_STDERR_BYTES // 1024**2} MB of diagnostics)",
        "SIGXCPU": " (CPU time limit)",
    }.get(sig, "")
    return sig + hint


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
    return clean(" | ".join(lines[-6:]))


def _last_progress(path: str, root: str) -> str | None:
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as fh:
            lines = [ln.rstrip("\n") for ln in fh if ln.strip()]
    except OSError:
        return None
    for ln in reversed(lines):
        if ln.startswith("layer "):
            return show(ln[6:], root)
    return None


def _worker_ready(path: str) -> bool:
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as fh:
            return any(ln.startswith("ready") for ln in fh)
    except OSError:
        return False


def make_tempdir(root: str) -> str:
    """A private folder for the worker's files, never inside the submission."""
    tmp = tempfile.mkdtemp(prefix="usd-validity-")
    if inside(os.path.realpath(tmp), root):  # TMPDIR inside the submission: go elsewhere
        shutil.rmtree(tmp, ignore_errors=True)
        for base in ("/tmp", "/var/tmp", os.path.expanduser("~")):
            if os.path.isdir(base) and not inside(os.path.realpath(base), root):
                return tempfile.mkdtemp(prefix="usd-validity-", dir=base)
        raise RuntimeError("no temporary directory outside the submission")
    return tmp
