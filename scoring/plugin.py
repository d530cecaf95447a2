"""The pytest plugin behind `pytest checks --case CASE --submission DIR --out OUT`.

This module adds the options and, when a run grades (`--case` given), registers the run's roles
in pytest_configure, one object each, as pytest's own junitxml.py registers its LogXML; each keeps
its own state, the config's stash holds them (and the run's inputs), and each is unregistered at
unconfigure. Without `--case` nothing is registered (`pytest tests` runs the verifier's own tests).

The roles, in the order a grade meets them:
- RunInputs (scoring/run_inputs.py): the options and the loaded case, fixed at configure.
- GradeCollector (scoring/collector.py): the grade's test folders (checks/ and gates/: every grade
  runs the gate tests) and each test's parameters from the case's profile.
- Measuring (scoring/measuring.py): who does the work (serially this process; under xdist the
  workers share it through a folder), the validity gate started at configure, and at collection
  finish the GradingSession the tests read through the `grading` fixture.
- MeasuredFailures (scoring/measured_failures.py): a failing check's report as one line.
- GradeRecorder (scoring/recorder.py): each test's typed record, attached with the `record_grade`
  fixture to the report's user_properties; json-report's finished report, kept for the writer.
- GradeWriter (scoring/writer.py): in the process that reads the reports (serial, or the xdist
  controller), at session finish, grade.json and reward.json from the records.
- Watchdog (scoring/watchdog.py): with --time-limit, the explicit time limit of the whole grade.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from . import outputs
from .collector import GradeCollector, grading_requested
from .measured_failures import MeasuredFailures
from .measuring import REFERENCES, Measuring
from .recorder import GradeRecorder, attach
from .run_inputs import INPUTS, RunInputs, is_worker
from .watchdog import Watchdog
from .writer import GradeWriter

if TYPE_CHECKING:
    from usd_repair_verifier.profiles.result_record import CheckResult, GateResult

    from .session import GradingSession

__all__ = ["REFERENCES", "COLLECTOR", "MEASURING", "RECORDER", "WRITER", "WATCHDOG"]

# Each role of a grading run, in the config's stash (absent when the run does not grade, and in a
# process without that role: no writer or watchdog on an xdist worker, no measuring session on
# its controller).
COLLECTOR = pytest.StashKey[GradeCollector]()
MEASURING = pytest.StashKey[Measuring]()
RECORDER = pytest.StashKey[GradeRecorder]()
WRITER = pytest.StashKey[GradeWriter]()
WATCHDOG = pytest.StashKey[Watchdog]()
# The plugin manager's name for each registered role object.
ROLE_NAMES = ("usdgrade-collector", "usdgrade-measuring", "usdgrade-measured-failures", "usdgrade-recorder",
              "usdgrade-writer", "usdgrade-watchdog")


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


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    case_dir = config.getoption("case")
    if not case_dir:
        if grading_requested(config):
            raise pytest.UsageError(
                "grading needs --case CASE --submission DIR --out OUT "
                "(pytest checks without them would grade nothing; `pytest tests` runs the verifier's own tests)")
        return
    submission, out = config.getoption("submission"), config.getoption("out")
    if not submission or not out:
        raise pytest.UsageError("--case needs --submission DIR and --out OUT")
    trajectory = config.getoption("trajectory")
    try:  # never inside the submission, the case or the verifier (scoring/outputs.py)
        outputs.check_grade_output(Path(out).resolve(), submission=Path(submission).absolute(),
                                   case=Path(case_dir).resolve(), inputs=[("trajectory", trajectory)])
    except outputs.OutputRefused as error:
        raise pytest.UsageError(str(error)) from None
    # json-report is our record of every test; our own files are the outputs.
    config.option.json_report = True
    config.option.json_report_file = None
    inputs = RunInputs.from_options(config, case_dir, submission, out)
    config.stash[INPUTS] = inputs
    _register_roles(config, inputs)


def _register_roles(config: pytest.Config, inputs: RunInputs) -> None:
    plugins = config.pluginmanager
    collector = config.stash[COLLECTOR] = GradeCollector(inputs)
    collector.name_test_folders(config)
    plugins.register(collector, "usdgrade-collector")
    plugins.register(MeasuredFailures(), "usdgrade-measured-failures")  # one line per failing check
    recorder = config.stash[RECORDER] = GradeRecorder()
    plugins.register(recorder, "usdgrade-recorder")
    measuring = config.stash[MEASURING] = Measuring(inputs)
    if not is_worker(config):   # the process that reads the reports writes the grade
        writer = config.stash[WRITER] = GradeWriter(inputs, collector, recorder)
        writer.remove_stale()
        plugins.register(writer, "usdgrade-writer")
        if inputs.time_limit:
            watchdog = config.stash[WATCHDOG] = Watchdog(inputs.time_limit, _locked(writer), measuring.remove_shared_folder)
            plugins.register(watchdog, "usdgrade-watchdog")
            watchdog.arm()
    measuring.start(config)
    plugins.register(measuring, "usdgrade-measuring")


def _locked(writer: GradeWriter) -> Callable[[str], int]:
    def write_unfinished(cause: str) -> int:
        with writer.writing:
            return writer.write_unfinished(cause)
    return write_unfinished


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Every role leaves with the run (its own unconfigure, if it has one, ran first)."""
    for name in ROLE_NAMES:
        role = config.pluginmanager.get_plugin(name)
        if role is not None:
            config.pluginmanager.unregister(role)


@pytest.fixture(scope="session")
def grading(request: pytest.FixtureRequest) -> GradingSession:
    """The run's grading session (a module function: pytest deprecates a session fixture defined as
    an instance method)."""
    measuring = request.config.stash.get(MEASURING, None)
    if measuring is None:
        pytest.fail("no grade is running: give --case CASE --submission DIR --out OUT", pytrace=False)
    return measuring.grading_session()


@pytest.fixture
def record_grade(request: pytest.FixtureRequest) -> Callable[..., None]:
    """`record_grade(kind, id, result, timings=None)`: the test's typed record, put on its reports
    (scoring/recorder.py); call it before asserting, so a failing check is still recorded."""
    def record(kind: str, id: str, result: CheckResult | GateResult, timings: dict | None = None) -> None:
        attach(request.node, kind, id, result, timings)
    return record
