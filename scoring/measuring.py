"""The grade's measuring: who does the run's work, and the GradingSession its tests read.

One Measuring per grading process, registered by the plugin at configure time:
- configure: set up who does the work. Serially this process does all of it; under xdist the
  controller makes a folder the workers share the work through (scoring/work_share.py), and the
  worker that claims the submission starts the validity gate at once, in its own capped process,
  before the heavy imports.
- collection finish: every process that runs tests (the serial one, each xdist worker) builds
  its GradingSession, given tests or not: a unit one worker claimed must be finished, or the
  others would wait for it. The grade's tests read it through the `grading` fixture.
- unconfigure: wait for the validity gate's thread, remove the shared folder.
"""
from __future__ import annotations

import gc
import shutil
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from usd_repair_verifier.gates.validity import ResourceLimits, timed_validity

from .run_inputs import RunInputs, is_controller, is_worker
from .work_share import WORKER_INPUT_KEY, LocalWork, SharedWork

if TYPE_CHECKING:
    from .reference_cache import ReferenceCache  # noqa: F401  (the stash key's type, named as a string)
    from .session import GradingSession

# Set by a process that grades many submissions (regrade/warm.py): reference snapshots it keeps.
REFERENCES = pytest.StashKey["ReferenceCache"]()


def import_measuring_code() -> type[GradingSession]:
    """usd_repair_verifier.scoring.session and what it imports (pxr, numpy, scipy, every check family).

    The first import creates most of the objects the process will ever hold, all of them
    permanent. The cyclic garbage collector would scan the growing heap over and over while
    they are created (a few hundred passes), then pytest's own full collections at the end of
    the session would scan it all again: collection is paused for the import, and what exists
    after it is moved out of every later collection's reach (gc.freeze). A process that has
    imported it before (a warm worker, which froze its own imports) changes nothing here."""
    if "usd_repair_verifier.scoring.session" in sys.modules:
        from .session import GradingSession

        return GradingSession
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        from .session import GradingSession
    finally:
        if was_enabled:
            gc.enable()
    gc.freeze()
    return GradingSession


class Measuring:
    def __init__(self, inputs: RunInputs):
        self.inputs = inputs
        self.work: LocalWork | SharedWork | None = None     # None on the xdist controller
        self.shared_folder: Path | None = None              # the controller's, under xdist
        self.validity: Future | None = None                 # the validity gate, started at configure
        self.background: ThreadPoolExecutor | None = None
        self.session: GradingSession | None = None
        self.session_error: BaseException | None = None

    def start(self, config: pytest.Config) -> None:
        """At configure: set up who does the run's work, and start the validity gate early."""
        if is_controller(config):
            self.shared_folder = SharedWork.create()
            return
        folder = config.workerinput.get(WORKER_INPUT_KEY) if is_worker(config) else None
        self.work = SharedWork(folder) if folder else LocalWork()
        case = self.inputs.case
        if case is None or not self.work.claim("submission"):
            return
        try:
            limits = ResourceLimits.from_dict(case.profile.limits)
        except ValueError:
            return  # the session reports the malformed limits as a case error
        # The gate's USD work runs in its own capped process: this thread only waits for it.
        self.background = ThreadPoolExecutor(1, thread_name_prefix="usdgrade-validity")
        self.validity = self.background.submit(timed_validity, self.inputs.submission, limits,
                                               case.reference_root_layer, case.profile.variant_selections)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        """xdist, on the controller: tell each worker where the run's shared work lives."""
        if self.shared_folder is not None:
            node.workerinput[WORKER_INPUT_KEY] = str(self.shared_folder)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.inputs.case is not None and self.work is not None:
            self._build_session(session.config)

    def _build_session(self, config: pytest.Config) -> None:
        try:
            start = time.perf_counter()
            GradingSession = import_measuring_code()
            imports = round(time.perf_counter() - start, 6)
            self.session = GradingSession(self.inputs.case, self.inputs.submission, self.work, self.validity,
                                          references=config.stash.get(REFERENCES, None))
            self.session.timings["imports"] = imports
        except Exception as error:  # raised again by every test that needs it: an infrastructure error
            self.session_error = error
            if self.work is not None:
                self.work.abandon(f"{type(error).__name__}: {error}")  # no other worker waits for us

    def grading_session(self) -> GradingSession:
        """What the `grading` fixture gives every test of this run."""
        if self.inputs.case is None:
            pytest.fail(f"no case loaded: {self.inputs.case_error}", pytrace=False)
        if self.session_error is not None:
            raise self.session_error
        if self.session is None:
            pytest.fail("the grading session was not built (no collection finished)", pytrace=False)
        return self.session

    def remove_shared_folder(self) -> None:
        if self.shared_folder is not None:
            shutil.rmtree(self.shared_folder, ignore_errors=True)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.background is not None:
            self.background.shutdown(wait=True)
        self.remove_shared_folder()
