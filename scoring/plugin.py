"""The pytest plugin behind `pytest checks --case CASE --submission DIR --out OUT`.

This module only adds the options and, when a run grades (`--case` given), registers one
`GradingRun` in pytest_configure, as pytest's own junitxml.py does: the run's state lives on that
object, its hooks are its methods, and it unregisters itself at unconfigure. Without `--case`
nothing is registered (`pytest tests` runs the verifier's own tests).

The run, in order:
- configure: check the options, remove stale outputs, load the case (every process: the
  controller for the expected test set, each xdist worker for its parametrization), switch
  pytest-json-report on, start the validity gate's worker, and add the gate tests (gates/) to
  the collection: every grade runs them, which the report header and the summary say.
- collection finish: every process that runs tests (the serial one, each xdist worker) builds
  its GradingSession, the same way; xdist workers share the work through a folder the
  controller made (scoring/work_share.py), so every claimed unit is finished even by a worker
  that is given no test. The tests (`check_spec`, `validity_rule`, `preservation_gate`,
  `objective_gate`, parametrized from the profile) read it through the `grading` fixture.
- sessionfinish (the controller, or the serial process, after json-report built its report):
  read the tests' typed records, decide the outcome, apply the closed-book rule when the case
  asks for it, and write OUT/grade.json (and OUT/reward.json) from the Grade model.
"""
from __future__ import annotations

import gc
import os
import shutil
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from usd_repair_verifier.gates.names import OBJECTIVE_GATES, PRESERVATION_GATES, VALIDITY_RULES
from usd_repair_verifier.gates.validity import ResourceLimits, timed_validity
from usd_repair_verifier.profiles.case import Case, CaseError, load_case

from . import grade_file, outputs, readable
from .measured_failures import MeasuredFailures
from .reward import INFRASTRUCTURE_EXIT, NO_RESULTS, OUTCOMES, Expected, TestResults, apply_closed_book, decide
from .work_share import WORKER_INPUT_KEY, LocalWork, SharedWork

if TYPE_CHECKING:
    from .session import GradingSession

GATES_DIR = Path(__file__).resolve().parent.parent / "gates"
CHECKS_DIR = GATES_DIR.parent / "checks"
PLUGIN_NAME = "usdgrade-grading-run"
# Set by a process that grades many submissions (regrade/warm.py): reference snapshots it keeps.
REFERENCES = pytest.StashKey["ReferenceCache"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("usdgrade", "grading an OpenUSD asset repair")
    group.addoption("--case", help="case folder: profile.json, reference/, input/")
    group.addoption("--submission", help="the candidate package folder")
    group.addoption("--out", help="output folder for reward.json and grade.json")
    group.addoption("--time-limit", type=float, default=None,
                    help="seconds; past it the run writes an infrastructure-error grade and exits 3 "
                         "(set it below the harness's own verifier timeout)")
    group.addoption("--trajectory", default=None,
                    help="the agent's ATIF trajectory.json, read when the case is closed book "
                         "(default: /logs/agent/trajectory.json when present)")
    group.addoption("--closed-book", action="store_true", default=False,
                    help="apply the closed-book rule even when the case's profile is open book (a re-grade of a "
                         "trial graded closed book: it never becomes open book)")


def _grading_requested(config: pytest.Config) -> bool:
    """The command names the grading tests (`pytest checks`, `pytest gates/...`)."""
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::")[0]).resolve()
        if any(path == folder or folder in path.parents for folder in (CHECKS_DIR, GATES_DIR)):
            return True
    return False


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def is_controller(config: pytest.Config) -> bool:
    """The xdist controller: it distributes the tests and never runs one."""
    return not is_worker(config) and getattr(config.option, "dist", "no") != "no"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    case_dir = config.getoption("case")
    if not case_dir:
        if _grading_requested(config):
            raise pytest.UsageError(
                "grading needs --case CASE --submission DIR --out OUT "
                "(pytest checks without them would grade nothing; `pytest tests` runs the verifier's own tests)")
        return
    submission, out = config.getoption("submission"), config.getoption("out")
    if not submission or not out:
        raise pytest.UsageError("--case needs --submission DIR and --out OUT")
    run = GradingRun(config, Path(case_dir).resolve(), Path(submission).absolute(), Path(out).resolve())
    config.pluginmanager.register(run, PLUGIN_NAME)
    run.start()


@pytest.fixture(scope="session")
def grading(request: pytest.FixtureRequest) -> GradingSession:
    """The run's grading session (a module function: pytest deprecates a session fixture defined as
    an instance method, such as one of GradingRun's)."""
    run = request.config.pluginmanager.get_plugin(PLUGIN_NAME)
    if run is None:
        pytest.fail("no grade is running: give --case CASE --submission DIR --out OUT", pytrace=False)
    return run.grading_session()


def _import_measuring_code() -> type[GradingSession]:
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


class GradingRun:
    """One grade: its inputs, its session and its outputs, for as long as pytest runs it."""

    def __init__(self, config: pytest.Config, case_dir: Path, submission: Path, out: Path):
        self.config = config
        self.case_dir, self.submission, self.out = case_dir, submission, out
        self.started = time.time()
        self.case: Case | None = None
        self.case_error: str | None = None
        self.session: GradingSession | None = None
        self.session_error: BaseException | None = None
        self.grade: grade_file.Grade | None = None
        self.timer: threading.Timer | None = None
        self.work: LocalWork | SharedWork | None = None
        self.shared_folder: Path | None = None       # the controller's, under xdist
        self.validity: Future | None = None          # the validity gate, started at configure
        self.background: ThreadPoolExecutor | None = None
        trajectory = config.getoption("trajectory")
        self.trajectory = os.path.abspath(trajectory) if trajectory else None  # the run may change folder
        self.closed_book: grade_file.ClosedBook | None = None   # the rule's verdict as grade.json records it
        self.json_report: dict | None = None         # pytest-json-report's report of every test

    # -- configure --------------------------------------------------------------------------

    def start(self) -> None:
        config = self.config
        try:  # never inside the submission, the case or the verifier (scoring/outputs.py)
            outputs.check_grade_output(self.out, submission=self.submission, case=self.case_dir,
                                       inputs=[("trajectory", self.trajectory)])
        except outputs.OutputRefused as error:
            raise pytest.UsageError(str(error)) from None
        config.pluginmanager.register(MeasuredFailures(), "usdgrade-measured-failures")  # one line per failing check
        # json-report is our record of every test; our own files are the outputs.
        config.option.json_report = True
        config.option.json_report_file = None
        if config.args_source != pytest.Config.ArgsSource.ARGS:
            # `pytest --case=...` with no test path (an installed verifier, from any folder): the
            # grade's tests are the verifier's own, never whatever lies in the current folder.
            config.args[:] = [str(CHECKS_DIR)]
        # Every grade runs the gate tests: named here, shown in the report header and the summary.
        if not any(Path(a.split("::")[0]).resolve() == GATES_DIR for a in config.args):
            config.args.append(str(GATES_DIR))
        if not is_worker(config):
            outputs.remove_stale(self.out)
            limit = config.getoption("time_limit")
            if limit:
                self.timer = threading.Timer(limit, self._time_out, args=(limit,))
                self.timer.daemon = True
                self.timer.start()
        try:
            self.case = load_case(self.case_dir)
        except CaseError as error:
            self.case_error = f"{type(error).__name__}: {error}"
        except Exception as error:  # a verifier fault while reading the case
            self.case_error = f"unexpected {type(error).__name__} while loading the case: {error}"
        self._start_work()

    def _start_work(self) -> None:
        """Set up who does the run's work, and start the validity gate early."""
        config = self.config
        if is_controller(config):
            self.shared_folder = SharedWork.create()
            return
        folder = config.workerinput.get(WORKER_INPUT_KEY) if is_worker(config) else None
        self.work = SharedWork(folder) if folder else LocalWork()
        if self.case is None or not self.work.claim("submission"):
            return
        try:
            limits = ResourceLimits.from_dict(self.case.profile.limits)
        except ValueError:
            return  # the session reports the malformed limits as a case error
        # The gate's USD work runs in its own capped process: this thread only waits for it.
        self.background = ThreadPoolExecutor(1, thread_name_prefix="usdgrade-validity")
        self.validity = self.background.submit(timed_validity, self.submission, limits,
                                               self.case.reference_root_layer, self.case.profile.variant_selections)

    def expected(self) -> Expected:
        if self.case is None:
            return Expected({})
        return Expected({
            "check": tuple(c.id for c in self.case.profile.checks),
            "validity": VALIDITY_RULES,
            "preservation": PRESERVATION_GATES,
            "objective": OBJECTIVE_GATES,
        })

    def pytest_report_header(self, config: pytest.Config) -> str:
        return (f"usdgrade: case {self.case_dir}, submission {self.submission}, out {self.out}; "
                f"tests: checks/ and gates/ (every grade runs the gate tests)")

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        """xdist, on the controller: tell each worker where the run's shared work lives."""
        if self.shared_folder is not None:
            node.workerinput[WORKER_INPUT_KEY] = str(self.shared_folder)

    # -- the tests ------------------------------------------------------------------------------

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        ready = self.case is not None
        params = {
            "check_spec": list(self.case.profile.checks) if ready else [],
            "validity_rule": list(VALIDITY_RULES) if ready else [],
            "preservation_gate": list(PRESERVATION_GATES) if ready else [],
            "objective_gate": list(OBJECTIVE_GATES) if ready else [],
        }
        for name, values in params.items():
            if name in metafunc.fixturenames:
                metafunc.parametrize(name, values, ids=[getattr(v, "id", v) for v in values])

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Every process that runs tests builds its session here, given tests or not: under xdist a
        unit one worker claimed must be finished, or the others would wait for it."""
        if self.case is not None and self.work is not None:
            self._build_session()

    def _build_session(self) -> None:
        try:
            start = time.perf_counter()
            GradingSession = _import_measuring_code()
            imports = round(time.perf_counter() - start, 6)
            self.session = GradingSession(self.case, self.submission, self.work, self.validity,
                                          references=self.config.stash.get(REFERENCES, None))
            self.session.timings["imports"] = imports
        except Exception as error:  # raised again by every test that needs it: an infrastructure error
            self.session_error = error
            if self.work is not None:
                self.work.abandon(f"{type(error).__name__}: {error}")  # no other worker waits for us

    def grading_session(self) -> GradingSession:
        """What the `grading` fixture gives every test of this run."""
        if self.case is None:
            pytest.fail(f"no case loaded: {self.case_error}", pytrace=False)
        if self.session_error is not None:
            raise self.session_error
        if self.session is None:
            pytest.fail("the grading session was not built (no collection finished)", pytrace=False)
        return self.session

    # -- the outputs -------------------------------------------------------------------------------

    def inputs(self) -> grade_file.GradeInputs:
        return grade_file.GradeInputs(self.case, self.submission, self.closed_book)

    def _time_out(self, limit: float) -> None:
        """The run took longer than --time-limit: leave an explicit infrastructure error, not nothing."""
        grade = grade_file.infrastructure_grade(f"time limit of {limit:g} s exceeded: the grade did not finish",
                                                self.inputs(), time.time() - self.started)
        try:
            outputs.write_json(self.out / outputs.GRADE_FILE, grade.to_json())
            outputs.write_json(self.out / outputs.REWARD_FILE, {"authored_usd": grade.authored_usd})
        finally:
            if self.shared_folder is not None:
                shutil.rmtree(self.shared_folder, ignore_errors=True)  # os._exit skips unconfigure
            sys.stderr.write(f"usdgrade: {grade.infrastructure_error}\n")
            sys.stderr.flush()
            os._exit(INFRASTRUCTURE_EXIT)

    @pytest.hookimpl(optionalhook=True)  # the hook's spec arrives with json-report's configure
    def pytest_json_modifyreport(self, json_report: dict) -> None:
        """json-report calls this in its sessionfinish (tryfirst) once the report is complete:
        before ours (trylast) reads it."""
        self.json_report = json_report

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if is_worker(self.config):
            return
        if self.timer is not None:
            self.timer.cancel()
        case_error = self.case_error
        if case_error is None and self.json_report is None:
            case_error = "pytest-json-report produced no report (is the plugin installed and enabled?)"
        if case_error is None and exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR):
            case_error = f"pytest ended with {pytest.ExitCode(exitstatus).name} (collection error, crash or interrupt)"
        scoring_started = time.perf_counter()
        try:
            results = TestResults.from_report(self.json_report or {})
            decision = self._apply_closed_book(decide(results, self.expected(), case_error))
            grade = grade_file.build(decision, results, self.inputs(), time.time() - self.started)
            timings = {**grade.timings, "scoring_s": round(time.perf_counter() - scoring_started, 6)}
            grade = grade.model_copy(update={"timings": timings})
        except Exception as error:  # a scoring fault: still an explicit, numeric infrastructure error
            grade = grade_file.infrastructure_grade(f"scoring failed: {type(error).__name__}: {error}",
                                                    self.inputs(), time.time() - self.started)
            decision = decide(NO_RESULTS, Expected({}), grade.infrastructure_error)
        write_reward, exit_code = OUTCOMES[decision.status]
        outputs.write_json(self.out / outputs.GRADE_FILE, grade.to_json())
        if write_reward:
            outputs.write_json(self.out / outputs.REWARD_FILE, {"authored_usd": decision.authored_usd})
        if exit_code is not None:
            session.exitstatus = exit_code
        self.grade = grade

    def _apply_closed_book(self, decision):
        """A closed-book case: read the agent's trajectory and apply the rule to the decision."""
        if self.case is None or not (self.case.profile.closed_book or self.config.getoption("closed_book")):
            self.closed_book = grade_file.ClosedBook(required=False)
            return apply_closed_book(decision, None)
        from usd_repair_verifier import closed_book

        profile = self.case.profile
        verdict = closed_book.evaluate(closed_book.trajectory_path(self.trajectory), self.case.paths.input,
                                       profile.allowed_urls)
        self.closed_book = grade_file.ClosedBook.model_validate(verdict.to_json())
        return apply_closed_book(decision, verdict.status, verdict.reason)

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config: pytest.Config) -> None:
        if is_worker(config) or self.grade is None:
            return
        terminalreporter.write_sep("=", "usdgrade")
        for line in readable.summary_lines(self.grade):
            terminalreporter.write_line(line)
        terminalreporter.write_line("tests: checks/ (the case's fault checks) and gates/ (validity, preservation, "
                                    "objective: every grade runs them)")
        written = [n for n in outputs.OUTPUT_FILES if (self.out / n).exists()]
        terminalreporter.write_line(f"outputs: {', '.join(str(self.out / n) for n in written)}")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.background is not None:
            self.background.shutdown(wait=True)
        if self.shared_folder is not None:
            shutil.rmtree(self.shared_folder, ignore_errors=True)
        config.pluginmanager.unregister(self)
