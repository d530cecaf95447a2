"""The pytest plugin behind `pytest checks --case CASE --submission DIR --out OUT`.

- configure: check the options, remove stale outputs, load the case (every
  process: the controller for the expected test set, each xdist worker for its
  parametrization), switch pytest-json-report on, and add the gate tests to
  the collection (the command names only `checks`).
- tests: `check_spec`, `validity_rule`, `preservation_gate`, `objective_gate`
  are parametrized from the profile; the `grading` fixture gives the one
  GradingSession of the process. Serially it is built on first use; xdist workers
  build theirs together right after collection, sharing the work through a folder
  the controller made (scoring/work_share.py), so every claimed unit is finished
  even by a worker that is given no test.
- start-up: only light modules are imported here (the controller never measures),
  and the validity gate's worker process starts at configure, so it runs while
  the measuring code is imported.
- sessionfinish (controller only, after json-report built its report): decide
  the outcome from the report, apply the closed-book rule when the case asks for
  it (`--trajectory`, closed_book/), and write OUT/reward.json and OUT/grade.json.
"""
from __future__ import annotations

import gc
import os
import shutil
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from usd_repair_verifier.gates.names import OBJECTIVE_GATES, PRESERVATION_GATES, VALIDITY_RULES
from usd_repair_verifier.gates.validity import ResourceLimits, timed_validity
from usd_repair_verifier.profiles.case import Case, CaseError, load_case

from . import outputs, report
from .measured_failures import MeasuredFailures
from .reward import INFRASTRUCTURE_EXIT, OUTCOMES, Expected, apply_closed_book, decide, records_from_report
from .work_share import WORKER_INPUT_KEY, LocalWork, SharedWork

if TYPE_CHECKING:
    from .reference_cache import ReferenceCache
    from .session import GradingSession

GATES_DIR = Path(__file__).resolve().parent.parent / "gates"
CHECKS_DIR = GATES_DIR.parent / "checks"


@dataclass
class RunState:
    case_dir: Path
    submission: Path
    out: Path
    started: float
    case: Case | None = None
    case_error: str | None = None
    session: GradingSession | None = None
    session_error: BaseException | None = None
    grade: dict | None = None
    timer: threading.Timer | None = None
    work: LocalWork | SharedWork | None = None
    shared_folder: Path | None = None      # the controller's, under xdist
    validity: Future | None = None         # the validity gate, started at configure
    background: ThreadPoolExecutor | None = None
    trajectory: str | None = None          # --trajectory, for a closed-book case
    closed_book: dict | None = None        # the verdict as grade.json records it
    json_report: dict | None = None        # pytest-json-report's report of every test (ReportReceiver)

    def expected(self) -> Expected:
        profile = self.case.profile
        return Expected({
            "check": tuple(c.id for c in profile.checks),
            "validity": VALIDITY_RULES,
            "preservation": PRESERVATION_GATES,
            "objective": OBJECTIVE_GATES,
        })


class ReportReceiver:
    """Takes pytest-json-report's report through its public hook, which it calls in its
    sessionfinish (tryfirst) once the report is complete: before ours (trylast) reads it."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    @pytest.hookimpl(optionalhook=True)  # the hook's spec arrives with json-report's configure
    def pytest_json_modifyreport(self, json_report: dict) -> None:
        self.state.json_report = json_report


STATE = pytest.StashKey[RunState]()
RECEIVER = "usdgrade-json-report-receiver"
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
    state = RunState(Path(case_dir).resolve(), Path(submission).absolute(), Path(out).resolve(), time.time())
    try:  # never inside the submission, the case or the verifier (scoring/outputs.py)
        outputs.check_grade_output(state.out, submission=state.submission, case=state.case_dir,
                                   inputs=[("trajectory", config.getoption("trajectory"))])
    except outputs.OutputRefused as error:
        raise pytest.UsageError(str(error)) from None

    # json-report is our record of every test; our own files are the outputs.
    config.option.json_report = True
    config.option.json_report_file = None
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        # `pytest --case=...` with no test path (an installed verifier, from any folder): the
        # grade's tests are the verifier's own, never whatever lies in the current folder.
        config.args[:] = [str(CHECKS_DIR)]
    if not any(Path(a.split("::")[0]).resolve() == GATES_DIR for a in config.args):
        config.args.append(str(GATES_DIR))

    config.pluginmanager.register(MeasuredFailures(), "usdgrade-measured-failures")  # one line per failing check
    if not is_worker(config):
        config.pluginmanager.register(ReportReceiver(state), RECEIVER)
        outputs.remove_stale(state.out)
        limit = config.getoption("time_limit")
        if limit:
            state.timer = threading.Timer(limit, _time_out, args=(state, limit))
            state.timer.daemon = True
            state.timer.start()
    try:
        state.case = load_case(state.case_dir)
    except CaseError as error:
        state.case_error = f"{type(error).__name__}: {error}"
    except Exception as error:  # a verifier fault while reading the case
        state.case_error = f"unexpected {type(error).__name__} while loading the case: {error}"
    trajectory = config.getoption("trajectory")
    state.trajectory = os.path.abspath(trajectory) if trajectory else None  # the run may change folder
    config.stash[STATE] = state
    _start_work(config, state)


def _start_work(config: pytest.Config, state: RunState) -> None:
    """Set up who does the run's work, and start the validity gate early."""
    if is_controller(config):
        state.shared_folder = SharedWork.create()
        return
    folder = config.workerinput.get(WORKER_INPUT_KEY) if is_worker(config) else None
    state.work = SharedWork(folder) if folder else LocalWork()
    if state.case is None or not state.work.claim("submission"):
        return
    try:
        limits = ResourceLimits.from_dict(state.case.profile.limits)
    except ValueError:
        return  # the session reports the malformed limits as a case error
    # The gate's USD work runs in its own capped process: this thread only waits for it.
    state.background = ThreadPoolExecutor(1, thread_name_prefix="usdgrade-validity")
    state.validity = state.background.submit(timed_validity, state.submission, limits,
                                             state.case.reference_root_layer)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist, on the controller: tell each worker where the run's shared work lives."""
    state = node.config.stash.get(STATE, None)
    if state is not None and state.shared_folder is not None:
        node.workerinput[WORKER_INPUT_KEY] = str(state.shared_folder)


def pytest_collection_finish(session: pytest.Session) -> None:
    """xdist workers build their session now, given tests or not: a unit one of them
    claimed must be finished, or the others would wait for it."""
    state = session.config.stash.get(STATE, None)
    if state is not None and state.case is not None and state.work is not None and state.work.shared:
        _build_session(state, session.config)


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


def _build_session(state: RunState, config: pytest.Config) -> None:
    try:
        start = time.perf_counter()
        GradingSession = _import_measuring_code()
        imports = round(time.perf_counter() - start, 6)
        state.session = GradingSession(state.case, state.submission, state.work, state.validity,
                                       references=config.stash.get(REFERENCES, None))
        state.session.timings["imports"] = imports
    except Exception as error:  # raised again by every test that needs it: an infrastructure error
        state.session_error = error
        if state.work is not None:
            state.work.abandon(f"{type(error).__name__}: {error}")  # no other worker waits for us


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    state = metafunc.config.stash.get(STATE, None)
    ready = state is not None and state.case is not None
    params = {
        "check_spec": list(state.case.profile.checks) if ready else [],
        "validity_rule": list(VALIDITY_RULES) if ready else [],
        "preservation_gate": list(PRESERVATION_GATES) if ready else [],
        "objective_gate": list(OBJECTIVE_GATES) if ready else [],
    }
    for name, values in params.items():
        if name in metafunc.fixturenames:
            ids = [getattr(v, "id", v) for v in values]
            metafunc.parametrize(name, values, ids=ids)


@pytest.fixture(scope="session")
def grading(request: pytest.FixtureRequest) -> GradingSession:
    state = request.config.stash.get(STATE, None)
    if state is None or state.case is None:
        pytest.fail("no case loaded", pytrace=False)
    if state.session is None and state.session_error is None:
        _build_session(state, request.config)
    if state.session_error is not None:
        raise state.session_error
    return state.session


def _time_out(state: RunState, limit: float) -> None:
    """The run took longer than --time-limit: leave an explicit infrastructure error, not nothing."""
    decision = decide([], Expected({}), f"time limit of {limit:g} s exceeded: the grade did not finish")
    try:
        outputs.write_json(state.out / outputs.GRADE_FILE, report.build(decision, [], state, time.time() - state.started))
        outputs.write_json(state.out / outputs.REWARD_FILE, {"authored_usd": decision.authored_usd})
    finally:
        if state.shared_folder is not None:
            shutil.rmtree(state.shared_folder, ignore_errors=True)  # os._exit skips unconfigure
        sys.stderr.write(f"usdgrade: {decision.infrastructure_error}\n")
        sys.stderr.flush()
        os._exit(INFRASTRUCTURE_EXIT)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = config.stash.get(STATE, None)
    if state is None or is_worker(config):
        return
    if state.timer is not None:
        state.timer.cancel()
    json_report = state.json_report
    case_error = state.case_error
    if case_error is None and json_report is None:
        case_error = "pytest-json-report produced no report (is the plugin installed and enabled?)"
    if case_error is None and exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR):
        case_error = f"pytest ended with {pytest.ExitCode(exitstatus).name} (collection error, crash or interrupt)"
    scoring_started = time.perf_counter()
    try:
        records = records_from_report(json_report or {})
        expected = state.expected() if state.case else Expected({})
        decision = _closed_book(state, decide(records, expected, case_error))
        grade = report.build(decision, records, state, time.time() - state.started)
        grade["timings"]["scoring_s"] = round(time.perf_counter() - scoring_started, 6)
    except Exception as error:  # a scoring fault: still an explicit, numeric infrastructure error
        records = []
        decision = decide([], Expected({}), f"scoring failed: {type(error).__name__}: {error}")
        grade = report.build(decision, records, state, time.time() - state.started)
    write_reward, exit_code = OUTCOMES[decision.status]
    outputs.write_json(state.out / outputs.GRADE_FILE, grade)
    if write_reward:
        outputs.write_json(state.out / outputs.REWARD_FILE, {"authored_usd": decision.authored_usd})
    if exit_code is not None:
        session.exitstatus = exit_code
    state.grade = grade


def _closed_book(state: RunState, decision):
    """A closed-book case: read the agent's trajectory and apply the rule to the decision."""
    if state.case is None or not state.case.profile.closed_book:
        state.closed_book = {"required": False}
        return apply_closed_book(decision, None)
    from usd_repair_verifier import closed_book

    profile = state.case.profile
    verdict = closed_book.evaluate(closed_book.trajectory_path(state.trajectory), state.case.paths.input,
                                   profile.allowed_urls)
    state.closed_book = verdict.to_json()
    return apply_closed_book(decision, verdict.status, verdict.reason)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None:
        return
    receiver = config.pluginmanager.get_plugin(RECEIVER)
    if receiver is not None:
        config.pluginmanager.unregister(receiver)
    if state.background is not None:
        state.background.shutdown(wait=True)
    if state.shared_folder is not None:
        shutil.rmtree(state.shared_folder, ignore_errors=True)


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None or is_worker(config) or state.grade is None:
        return
    terminalreporter.write_sep("=", "usdgrade")
    for line in report.summary_lines(state.grade):
        terminalreporter.write_line(line)
    written = [n for n in outputs.OUTPUT_FILES if (state.out / n).exists()]
    terminalreporter.write_line(f"outputs: {', '.join(str(state.out / n) for n in written)}")


# --- no conftest from outside the verifier ------------------------------------------------
# In a checkout, `pytest checks --case C --submission S --out O` registers this plugin through
# the root conftest, after pytest's early argument parse took S and O for test paths; pytest then
# imports any conftest.py it finds there. Once this plugin is registered, every conftest outside
# the verifier's own folder is replaced by an empty module when the run grades (--case given).
VERIFIER_FOLDER = CHECKS_DIR.parent


def pytest_plugin_registered(plugin, manager) -> None:
    importer = getattr(manager, "_importconftest", None)
    if importer is None or getattr(importer, "_verifier_guard", False):
        return
    config = manager.get_plugin("pytestconfig")
    args = [str(a) for a in getattr(getattr(config, "invocation_params", None), "args", ())]
    if not any(a == "--case" or a.startswith("--case=") for a in args):
        return

    def guarded(conftestpath, *a, **k):
        path = Path(conftestpath).resolve()
        # The checkout's root conftest only registers this plugin, which is registered already: run
        # from another folder, pytest would refuse its pytest_plugins (not the top-level conftest).
        own_root = path == VERIFIER_FOLDER.resolve() / "conftest.py" and manager.get_plugin(str(conftestpath)) is None
        if own_root or not path.is_relative_to(VERIFIER_FOLDER.resolve()):
            import types

            return types.ModuleType(f"refused_conftest_{abs(hash(str(conftestpath)))}")
        return importer(conftestpath, *a, **k)

    guarded._verifier_guard = True
    manager._importconftest = guarded
