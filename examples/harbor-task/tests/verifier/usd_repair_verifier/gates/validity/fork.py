"""A fork server for the validity gate's capped USD worker, for processes that grade many items.

The validity gate reads every submission in a worker process of its own, capped and killed
by process group (runner.py). A fresh worker spends most of its ~0.3-0.5 s importing
pxr. A process that grades many submissions (regrade/warm.py) starts one server instead: a
process that has imported pxr once, is still single-threaded (importing pxr starts no thread;
measured), and forks one worker per submission. The forked worker runs the very worker code
of a fresh one (worker.main: caps set first, then the package read) in a session of its
own, with its output going to the same diagnostics file; it is still one fresh process per
submission, killed with its group on timeout, and no state passes from one to the next. The
server also imports what a worker imports on the way (pxr's UsdGeom and Pcp, numpy), never
anything of a submission.

Protocol over the server's pipes, one JSON line each way: the caller sends
[config path, diagnostics path, working folder]; the server answers ["pid", PID], then
["exit", CODE] when the worker ends (CODE negative for a signal, as subprocess reports it).

The server runs this module (``python -m usd_repair_verifier.gates.validity.fork``, with the
worker's environment: runner.worker_env); the caller imports it for ForkServer. The physical
grade's runtime sessions have a server of the same kind (physical/runtime_server.py: another
module, what it imports ahead, what a forked child runs).
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

FORK_MODULE = "usd_repair_verifier.gates.validity.fork"


def preload_validity() -> None:
    """What every validity worker would import, imported once in the server."""
    from pxr import Pcp, Sdf, Tf, Usd, UsdGeom, UsdUtils  # noqa: F401

    # The composed budget counts a mesh's triangles with numpy (gates/composed_budget.py): a
    # worker would import it for every package that has a mesh, about 0.15 s each. One BLAS
    # thread: importing numpy then starts no thread, and the server stays single-threaded.
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    except ImportError:  # a worker without numpy fails on a mesh as a fresh one does
        pass


def serve(worker_main, preload=preload_validity) -> None:
    """The server's loop (runs in the server process): preload, then one forked child per request
    running worker_main(config path)."""
    # The answers go out on a copy of stdout; whatever the server itself prints (an engine's
    # banner while preloading) goes where its stderr goes, never into the protocol.
    answers = os.dup(1)
    os.dup2(2, 1)
    preload()
    os.write(answers, b'["ready"]\n')
    for line in sys.stdin:
        cfg_path, stderr_path, cwd = json.loads(line)
        pid = os.fork()
        if pid == 0:  # the worker: a session of its own, output to the diagnostics file
            code = 70
            try:
                os.close(answers)
                os.setsid()
                null = os.open(os.devnull, os.O_RDONLY)
                out = os.open(stderr_path, os.O_WRONLY | os.O_APPEND)
                os.dup2(null, 0)
                os.dup2(out, 1)
                os.dup2(out, 2)
                os.chdir(cwd)
                code = worker_main(cfg_path)
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
        os.write(answers, (json.dumps(["pid", pid]) + "\n").encode())
        _, status = os.waitpid(pid, 0)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        os.write(answers, (json.dumps(["exit", code]) + "\n").encode())
    # Input closed: nothing is left to write. Leave without the interpreter's teardown, where an
    # engine's native libraries take seconds (measured: over 3 s for Newton and Warp).
    os._exit(0)


def kill_group(worker) -> int:
    """Kill a worker that leads its own process group (a Popen started in a new session, or a
    ForkedWorker) with everything in the group, then reap it; returns its exit code."""
    try:
        os.killpg(worker.pid, signal.SIGKILL)
    except OSError:
        worker.kill()
    return worker.wait()


class ForkServerError(OSError):
    """The server is gone or answered nonsense: the caller falls back to a fresh worker."""


class ForkServer:
    START_TIMEOUT_S = 120.0

    def __init__(self, env: dict, module: str = FORK_MODULE, name: str = "validity"):
        self._lock = threading.Lock()
        self._buffer = b""
        self.name = name
        self.env = dict(env)   # what every forked child inherits, whatever the caller's is by then
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
            start_new_session=True, bufsize=0,
        )
        try:
            started = self._message(self.START_TIMEOUT_S) == ["ready"]
        except (OSError, ValueError):
            started = False
        if not started:
            self.close()
            raise ForkServerError(f"the {name} fork server did not start")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _message(self, timeout: float | None) -> list | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], left)[0]:
                return None  # timed out
            chunk = os.read(fd, 4096)
            if not chunk:
                raise ForkServerError(f"the {self.name} fork server ended")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def spawn(self, cfg_path: str, stderr_path: str, cwd: str) -> "ForkedWorker":
        self._lock.acquire()  # one worker at a time per server (released by the worker's wait)
        try:
            self.proc.stdin.write((json.dumps([cfg_path, stderr_path, cwd]) + "\n").encode())
            message = self._message(self.START_TIMEOUT_S)
        except (OSError, ValueError) as error:
            self._lock.release()
            raise ForkServerError(f"the {self.name} fork server failed: {error}") from error
        if not message or message[0] != "pid":
            self._lock.release()
            raise ForkServerError(f"the {self.name} fork server answered {message!r}")
        return ForkedWorker(self, int(message[1]))

    def close(self) -> None:
        """End the server: its loop ends with its input; killed (with any worker) if it lingers."""
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()


class ForkedWorker:
    """What the runner needs of a worker process: pid, wait(timeout), kill()."""

    def __init__(self, server: ForkServer, pid: int):
        self.server, self.pid, self.returncode = server, pid, None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        try:
            message = self.server._message(timeout)
        except (OSError, ValueError):
            message = ["exit", -signal.SIGKILL]  # the server died with its worker: a crash
            self.server.close()
        if message is None:
            raise subprocess.TimeoutExpired(f"{self.server.name} worker {self.pid}", timeout)
        self.returncode = int(message[1])
        self.server._lock.release()
        return self.returncode

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass


if __name__ == "__main__":
    from .worker import main

    serve(main)
