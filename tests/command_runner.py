"""`usdgrade ARGS` for the tests, each in a fresh process, without paying an interpreter's start.

A test of a command runs it as the operator does (`python -m usd_repair_verifier.commands.cli
ARGS`): its exit code and its two streams, in a process of its own. About a hundred tests do, and
each such process spent most of its ~0.7 s of CPU importing pxr, numpy and the commands before it
did anything. Here each command runs in a child forked from a server (gates/validity/fork.py: the
same server loop as the validity workers') that imported those once and is still single-threaded:
still one fresh process per command, which ends with it, its streams in their own files, its exit
code as the interpreter would give it (SystemExit, a traceback and 1 for an uncaught exception,
exit handlers run).

The child works in the command's folder, which heads its sys.path as `python -m` puts it there.
What a forked child cannot reproduce goes to a real interpreter instead (`subprocess.run`, as
before): input on stdin or other subprocess arguments, and an environment that differs from the
server's in anything read when an interpreter or pxr starts (PYTHON*, PXR_*, TF_*, LD_*, thread
counts). Tests of an interpreter's start itself (what `usdgrade grade` imports, a folder's planted
modules, the installed package, a terminal) never come here.
"""
from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULE = "usd_repair_verifier.commands.cli"
SERVER_MODULE = "tests.command_runner"
# An environment variable with one of these prefixes is read as an interpreter (or pxr, or a BLAS
# library) starts: a command asked to run with another value than the server's gets a real one.
START_PREFIXES = ("PYTHON", "PXR_", "TF_", "LD_", "OPENBLAS", "OMP_", "MKL_", "MALLOC")

_server = None
_lock = threading.Lock()


def usdgrade(*args: str, cwd: Path = ROOT, env: dict | None = None, timeout: float | None = 300,
             **kwargs) -> subprocess.CompletedProcess:
    """`python -m usd_repair_verifier.commands.cli ARGS` in `cwd` with `env` (default: this
    process's environment now), text output captured, as subprocess.run would give it."""
    argv = [sys.executable, "-m", MODULE, *args]

    def fresh() -> subprocess.CompletedProcess:
        return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, **kwargs)

    wanted = dict(os.environ if env is None else env)
    server = None if kwargs else _fork_server(wanted)
    if server is None:
        return fresh()
    from usd_repair_verifier.gates.validity.fork import ForkServerError, kill_group

    with tempfile.TemporaryDirectory(prefix="usdgrade-command-") as folder:
        request, out, err = (Path(folder) / name for name in ("request.json", "stdout", "stderr"))
        request.write_text(json.dumps({"args": list(args), "env": wanted, "stdout": str(out)}))
        out.touch()
        err.touch()
        try:
            child = server.spawn(str(request), str(err), str(Path(cwd).absolute()))
        except ForkServerError:
            return fresh()
        try:
            code = child.wait(timeout)
        except subprocess.TimeoutExpired:
            kill_group(child)
            raise subprocess.TimeoutExpired(argv, timeout) from None
        return subprocess.CompletedProcess(argv, code, out.read_text(errors="replace"), err.read_text(errors="replace"))


def _started_alike(a: dict, b: dict) -> bool:
    def start(env):
        return {k: v for k, v in env.items() if k.startswith(START_PREFIXES)}
    return start(a) == start(b)


def _fork_server(wanted: dict):
    """This process's server when a command with environment `wanted` can fork from it, else None."""
    global _server
    from usd_repair_verifier.gates.validity.fork import ForkServer, ForkServerError

    with _lock:
        if _server is not None and not _server.alive():
            _server = None
        if _server is None:
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
            try:
                _server = ForkServer(env, module=SERVER_MODULE, name="command")
            except ForkServerError:
                return None
            atexit.register(_server.close)
        started_with = dict(_server.env)
        # the server's own PYTHONPATH names the checkout, where a command in it starts anyway
        started_with["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
        return _server if _started_alike({**wanted, "PYTHONPATH": wanted.get("PYTHONPATH", "")}, started_with) else None


# --- the server side (python -m tests.command_runner) ------------------------------------------------

def _preload() -> None:
    """What the commands import before they do anything, once; then check that nothing started a
    thread (a fork copies only the thread that forks)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import numpy  # noqa: F401
    from pxr import Sdf, Usd, UsdGeom, UsdPhysics, UsdShade  # noqa: F401

    from usd_repair_verifier.commands import cli
    from usd_repair_verifier.profiles import case  # noqa: F401
    from usd_repair_verifier.stage_snapshot import read  # noqa: F401

    cli.build_parser()   # every command's parser, and the modules they come from
    sys.stdout.flush()   # nothing of the server's may wait in a buffer that a child inherits
    sys.stderr.flush()
    if threading.active_count() != 1:
        raise SystemExit("the command server started a thread while importing")


def _run_command(request_path: str) -> int:
    """One command in the forked child, as `python -m usd_repair_verifier.commands.cli` runs it."""
    import traceback

    request = json.loads(Path(request_path).read_text())
    os.environ.clear()
    os.environ.update(request["env"])
    out = os.open(request["stdout"], os.O_WRONLY | os.O_APPEND)
    os.dup2(out, 1)
    os.close(out)
    from usd_repair_verifier.commands import cli

    sys.argv = [cli.__file__, *request["args"]]
    sys.path[0] = os.getcwd()   # the server loop moved to the command's folder
    try:
        code = cli.main(request["args"])
    except SystemExit as stop:
        code = stop.code
    except BaseException:  # noqa: BLE001 - the interpreter prints it and exits 1
        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        threading._shutdown()   # as the interpreter does at exit: wait for non-daemon threads
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return code


if __name__ == "__main__":
    from usd_repair_verifier.gates.validity.fork import serve

    serve(_run_command, preload=_preload)
