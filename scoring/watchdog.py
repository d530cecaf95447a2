"""The grade's time limit (`--time-limit S`): past it, an explicit infrastructure error, then exit 3.

A harness that grades with a time limit of its own (Harbor's verifier timeout) kills a grade that
overruns it and is left with no grade.json at all. Given a limit below the harness's, the grade
ends itself first and leaves a grade that says why: status `infrastructure_error`, the cause
"time limit of S s exceeded: the grade did not finish", a reward of 0, exit code 3.

How it ends the process, and why so: a grade past its limit is usually inside native code (USD's
composition, a mesh boolean, a solver) that no Python-level interruption reaches — a signal
handler or an exception raised in the main thread would run only when that call returns. So the
watchdog is a timer thread that, at the limit, writes the grade through the writer, runs the
run's cleanup (the xdist work folder), and ends the process with `os._exit`: no further Python
code of the grade runs, and pytest's own unconfigure does not (which is why the cleanup is
handed to the watchdog). xdist workers end when their controller does (their channel closes).

A grade that finishes in time disarms the watchdog at the start of its session finish, before
the writer writes; `disarm` waits for an expiry already writing, so the two never both write.
"""
from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable

import pytest

from usd_repair_verifier.profiles.errors import ExitCode


def time_limit_cause(limit: float) -> str:
    return f"time limit of {limit:g} s exceeded: the grade did not finish"


class Watchdog:
    def __init__(self, limit: float, write_grade: Callable[[str], int], cleanup: Callable[[], None]):
        """`write_grade(cause)` writes the infrastructure-error grade and returns the exit code;
        `cleanup()` undoes what pytest's unconfigure would have."""
        self.limit = limit
        self.write_grade, self.cleanup = write_grade, cleanup
        self._lock = threading.Lock()
        self._disarmed = False
        self._timer = threading.Timer(limit, self._expire)
        self._timer.name = "usdgrade-watchdog"
        self._timer.daemon = True

    def arm(self) -> None:
        self._timer.start()

    def disarm(self) -> None:
        """The grade finishes in time: the watchdog never fires (waits for an expiry in progress,
        which then ends the process)."""
        self._timer.cancel()
        with self._lock:
            self._disarmed = True

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.disarm()

    def _expire(self) -> None:
        with self._lock:
            if self._disarmed:
                return
            cause = time_limit_cause(self.limit)
            exit_code = ExitCode.INFRASTRUCTURE_ERROR   # should writing the grade itself fail
            try:
                exit_code = self.write_grade(cause)
            finally:
                try:
                    self.cleanup()
                finally:
                    sys.stderr.write(f"usdgrade: {cause}\n")
                    sys.stderr.flush()
                    os._exit(exit_code)
