"""A pytest plugin for bench/bench_suite.py: each test's wall time and the CPU it cost.

Loaded with `-p bench.suite_timing`; it does nothing unless USDGRADE_SUITE_TIMINGS names a
folder. Each process that runs tests (every pytest-xdist worker) then appends one JSON line per
test to `<folder>/tests-<pid>.jsonl`: its node id, the seconds of wall time of its whole protocol
(setup, call, teardown), the CPU seconds (user + sys) of the process itself, and those of the
children it reaped meanwhile. A child's CPU is counted when it is reaped, so a server a test
stops (a runtime server, a fork server) is charged to that test, with all it did before.
"""
from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import pytest

FOLDER_ENV = "USDGRADE_SUITE_TIMINGS"


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


class TestTimes:
    """The plugin object: the open record file and one hook."""

    def __init__(self, folder: Path):
        self.path = folder / f"tests-{os.getpid()}.jsonl"
        self.file = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        own, children = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        outcome = yield
        record = {"id": item.nodeid, "wall_s": time.perf_counter() - started,
                  "self_cpu_s": _cpu(resource.RUSAGE_SELF) - own,
                  "children_cpu_s": _cpu(resource.RUSAGE_CHILDREN) - children, "end": time.time()}
        if self.file is None:
            self.file = self.path.open("a", encoding="utf-8")
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
        return outcome

    def pytest_unconfigure(self, config):
        if self.file is not None:
            self.file.close()


def pytest_configure(config):
    folder = os.environ.get(FOLDER_ENV)
    if folder:
        config.pluginmanager.register(TestTimes(Path(folder)), "usdgrade-suite-timing")
