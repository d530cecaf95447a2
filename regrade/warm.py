"""A warm grader: one process grades many submissions, each as its own pytest session.

Every item is the very session of `pytest checks --case CASE --submission DIR --out OUT`
(the same plugin, checks, gates and outputs; `pytest.main` in this process, without pytest's
plugins that no grade reads: WARM_SESSION_ARGS), so its grade.json is the fresh command's byte
for byte apart from "timings". What is paid once
per process instead of once per grade: the interpreter, the imports (pxr, scipy, numpy,
pytest, every check family) and each case's reference snapshot (scoring/reference_cache.py,
keyed by the profile's digest and the scoring version).

Untrusted input stays contained as in the single command: each item's validity gate runs in
its own capped child process. What a session cannot contain is handled by the process that
owns this grader (regrade/pool.py, regrade/ray_engine.py): a per-item time limit and a worker
that dies. After each item the grader checks that pxr holds no layer of the package it just
graded (a later package at the same path must be read from disk, not from memory); when one
is left, the grader asks to be replaced.
"""
from __future__ import annotations

import contextlib
import gc
import os
import resource
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from usd_repair_verifier.profiles.case import CaseError, load_case
from usd_repair_verifier.profiles.schema import SCORING_VERSION

from usd_repair_verifier.scoring import VERIFIER_VERSION, grade_file, outputs
from usd_repair_verifier.scoring.reference_cache import ReferenceCache
from usd_repair_verifier.profiles.errors import ExitCode



@dataclass(frozen=True)
class Item:
    """One stored submission to grade against its case. `key` names it in the results."""
    key: str
    case: str
    submission: str
    trajectory: str | None = None       # the agent's trajectory, for a closed-book case
    closed_book: bool = False           # apply the closed-book rule whatever the case says (graded so before)


@dataclass
class ItemResult:
    key: str
    exit_code: int
    grade_text: str | None              # OUT/grade.json exactly as written
    reward_text: str | None             # OUT/reward.json, None when the session wrote none
    seconds: float
    worker: str = ""                    # host:pid of the process that graded it
    node: str = ""                      # the Ray node that graded it (--engine ray), else ""
    peak_rss_mb: float | None = None    # that process's peak resident memory so far
    attempts: int = 1
    recycle: bool = False               # the worker asks to be replaced after this item
    versions: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def versions() -> dict:
    return {"scoring_version": SCORING_VERSION, "verifier_version": VERIFIER_VERSION}


def peak_rss_mb() -> float:
    """This process's peak resident set (Linux reports ru_maxrss in KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


# pytest's plugins that a warm session leaves out, and json-report's fields it does not record.
# The grade reads of a session only json-report's per-test record (nodeid, outcome, metadata,
# the call's duration, a stage's crash message), so none of these can change grade.json: they
# serve a person at a terminal or other kinds of test suites (doctests, JUnit XML, tmp_path,
# monkeypatch, output and log capture for failure reports, warning summaries, skip and xfail
# marks, which the grade's tests never use, and the garbage collections pytest runs at the end
# of a session to report exceptions raised in finalizers). Each costs every session its
# registration and hooks; the fresh command keeps them all.
UNUSED_PLUGINS = ("capture", "debugging", "doctest", "junitxml", "logging", "monkeypatch", "pastebin",
                  "recwarn", "setuponly", "setupplan", "skipping", "stepwise", "subtests", "threadexception",
                  "tmpdir", "unittest", "unraisableexception", "warnings")
UNUSED_REPORT_FIELDS = ["collectors", "keywords", "log", "streams", "traceback", "warnings"]
# A failed test's report also carries a traceback text, which no grade reads: the native one is
# the cheapest to format, and its crash message (the one the grade reads) is the same.
WARM_SESSION_ARGS = (*(arg for name in UNUSED_PLUGINS for arg in ("-p", f"no:{name}")), "--tb=native")


class _WarmPlugin:
    """Hands the process's reference snapshots to the grading plugin of each session."""

    def __init__(self, references: ReferenceCache):
        self.references = references

    def pytest_configure(self, config) -> None:
        from usd_repair_verifier.scoring.plugin import REFERENCES

        config.stash[REFERENCES] = self.references
        config.option.json_report_omit = list(UNUSED_REPORT_FIELDS)


@contextlib.contextmanager
def _quiet(log_path: str | None):
    """pytest's terminal output goes to a log (or nowhere): the owner of this process talks
    to it through a pipe or Ray, never through stdout."""
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    target = os.open(log_path or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)  # as the umask allows
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        with open(target, "w", closefd=False) as text, contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


class WarmGrader:
    def __init__(self, cache_bytes: int | None = None, log_path: str | None = None, fork_validity: bool = True):
        self.references = ReferenceCache() if cache_bytes is None else ReferenceCache(cache_bytes)
        self.log_path = log_path
        self.host = os.uname().nodename
        import pytest  # noqa: F401
        from usd_repair_verifier.gates import validity

        from usd_repair_verifier.scoring import plugin, session  # noqa: F401  the imports every item would otherwise pay

        if fork_validity:
            validity.start_fork_server()  # each item's capped validity worker, without pxr's import

        # pytest collects garbage several times per session; the modules just imported are never
        # garbage, so leave them out of every later collection (it halves a small item's cost).
        gc.collect()
        gc.freeze()

    def close(self) -> None:
        from usd_repair_verifier.gates import validity

        validity.stop_fork_server()

    def grade(self, item: Item) -> ItemResult:
        start = time.perf_counter()
        unreadable = _unreadable(item)
        if unreadable:
            return self._result(item, infrastructure_result(item, unreadable, time.perf_counter() - start), start)
        import pytest

        from usd_repair_verifier.scoring.sealed import pytest_argv

        held_before = _held_layers(collect=False)  # what the last item's check left, plus the host's
        out = Path(tempfile.mkdtemp(prefix="usdgrade-warm-"))
        try:
            # The sealed session's arguments: the verifier's own ini, rootdir and plugins, no
            # conftest from anywhere (a planted one in the submission never runs), --opt=value.
            argv, named = _named_plugins_apart(pytest_argv(item.case, item.submission, str(out),
                                                          trajectory=item.trajectory, closed_book=item.closed_book))
            with _quiet(self.log_path):
                code = int(pytest.main([*argv, *WARM_SESSION_ARGS], plugins=[_WarmPlugin(self.references), *named]))
            texts = [_read_text(out / name) for name in (outputs.GRADE_FILE, outputs.REWARD_FILE)]
        finally:
            shutil.rmtree(out, ignore_errors=True)
        result = ItemResult(item.key, code, texts[0], texts[1], 0.0)
        result.recycle = bool(_held_layers(collect=True) - held_before)
        return self._result(item, result, start)

    def _result(self, item: Item, result: ItemResult, start: float) -> ItemResult:
        result.seconds = round(time.perf_counter() - start, 6)
        result.worker = f"{self.host}:{os.getpid()}"
        result.peak_rss_mb = peak_rss_mb()
        result.versions = versions()
        return result


def _named_plugins_apart(argv: list[str]) -> tuple[list[str], list]:
    """The arguments without their `-p MODULE`, and those modules, imported. pytest looks each
    `-p` name up among every installed distribution's entry points before it imports the module
    (about 5 ms each, every session); handed the module, it registers it under the same name
    without the look-up. `-p no:NAME` stays an argument."""
    import importlib

    rest, modules = [], []
    args = iter(argv)
    for arg in args:
        if arg != "-p":
            rest.append(arg)
            continue
        name = next(args)
        if name.startswith("no:"):
            rest += [arg, name]
        else:
            modules.append(importlib.import_module(name))
    return rest, modules


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _unreadable(item: Item) -> str | None:
    """Stored inputs that this host cannot see are the store's fault, never the agent's:
    a submission folder that is not there would otherwise grade as an invalid package."""
    for what, path in (("case", item.case), ("submission", item.submission)):
        if not os.path.isdir(path):
            return (f"the {what} {path} is not readable on {os.uname().nodename} "
                    "(re-grading needs the stored inputs on a filesystem every worker shares)")
    return None


def _held_layers(collect: bool) -> set[str]:
    """The file layers pxr keeps open in this process. A grade that leaves one more open than
    it found asks for its worker to be replaced: a later item must never compose a layer kept
    from an earlier one. Layers the host process held before (a test's own stage) are not the
    grade's doing. Only the count after a grade needs a garbage collection first (a layer held
    by the grade's unreachable objects is about to go); before a grade one more layer in the
    set can only excuse a layer that was open before the grade began."""
    if collect:
        gc.collect()
    from pxr import Sdf

    return {layer.identifier for layer in Sdf.Layer.GetLoadedLayers() if not layer.anonymous}


def _case_or_none(case_dir: str):
    """The case, for the report of an item that ended outside its session (None when it cannot be
    loaded: the report says the cause anyway)."""
    try:
        return load_case(case_dir)
    except CaseError:
        return None
    except Exception:  # a verifier fault while reading the case
        return None


def infrastructure_result(item: Item, reason: str, elapsed: float) -> ItemResult:
    """The grade of an item that ended outside its session (time limit, dead worker, inputs
    not readable): the report the plugin writes for its own time limit, with this cause."""
    inputs = grade_file.GradeInputs(_case_or_none(item.case), Path(item.submission).absolute())
    grade = grade_file.infrastructure_grade(reason, inputs, elapsed)
    from usd_repair_verifier.profiles import jsonable

    return ItemResult(item.key, ExitCode.INFRASTRUCTURE_ERROR, jsonable.dumps(grade.to_json()),
                      jsonable.dumps({"authored_usd": grade.authored_usd}), round(elapsed, 6),
                      versions=versions())


def time_limit_reason(limit: float) -> str:
    """The plugin's own wording for a grade past --time-limit."""
    return f"time limit of {limit:g} s exceeded: the grade did not finish"
