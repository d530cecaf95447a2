"""The grade's outputs: the tests' records turned into OUT/grade.json and OUT/reward.json.

One GradeWriter in the process that reads the reports (the serial one, or the xdist controller),
registered by the plugin at configure time. At session finish, after pytest-json-report built
its report (the recorder keeps it), it reads the tests' typed records, decides the outcome,
applies the closed-book rule when the case asks for it, and writes grade.json (and reward.json)
from the Grade model; the terminal summary then shows the grade. A run that cannot finish (the
watchdog's time limit) writes its infrastructure-error grade through `write_unfinished`.
"""
from __future__ import annotations

import threading
import time

import pytest

from . import grade_file, outputs, readable
from .collector import GradeCollector
from .recorder import GradeRecorder
from .reward import NO_RESULTS, OUTCOMES, Decision, Expected, apply_closed_book, decide
from .run_inputs import RunInputs


class GradeWriter:
    def __init__(self, inputs: RunInputs, collector: GradeCollector, recorder: GradeRecorder):
        self.inputs, self.collector, self.recorder = inputs, collector, recorder
        self.closed_book: grade_file.ClosedBook | None = None   # the rule's verdict as grade.json records it
        self.grade: grade_file.Grade | None = None              # what was written
        # Held while outputs are written: the watchdog's grade and the session's never interleave.
        self.writing = threading.Lock()

    def remove_stale(self) -> None:
        """At configure: no grade.json or reward.json of an earlier run survives this one."""
        outputs.remove_stale(self.inputs.out)

    def _build(self, decision: Decision, results, started_scoring: float | None = None) -> grade_file.Grade:
        grade = grade_file.build(decision, results, self.inputs.grade_inputs(self.closed_book),
                                 time.time() - self.inputs.started)
        if started_scoring is not None:
            timings = {**grade.timings, "scoring_s": round(time.perf_counter() - started_scoring, 6)}
            grade = grade.model_copy(update={"timings": timings})
        return grade

    def _write(self, decision: Decision, grade: grade_file.Grade) -> int | None:
        """Write the files the decision calls for; the exit code it calls for (None: pytest's own)."""
        write_reward, exit_code = OUTCOMES[decision.status]
        out = self.inputs.out
        outputs.write_json(out / outputs.GRADE_FILE, grade.to_json())
        if write_reward:
            outputs.write_json(out / outputs.REWARD_FILE, {"authored_usd": decision.authored_usd})
        self.grade = grade
        return exit_code

    def write_unfinished(self, cause: str) -> int:
        """The run will not finish (the watchdog): an explicit infrastructure error, not nothing.
        Returns the exit code the process ends with."""
        grade = grade_file.infrastructure_grade(cause, self.inputs.grade_inputs(self.closed_book),
                                                time.time() - self.inputs.started)
        return self._write(decide(NO_RESULTS, Expected({}), grade.infrastructure_error), grade)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        case_error = self.inputs.case_error
        if case_error is None and self.recorder.json_report is None:
            case_error = "pytest-json-report produced no report (is the plugin installed and enabled?)"
        if case_error is None and exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR):
            case_error = f"pytest ended with {pytest.ExitCode(exitstatus).name} (collection error, crash or interrupt)"
        scoring_started = time.perf_counter()
        try:
            results = self.recorder.results()
            decision = self._apply_closed_book(decide(results, self.collector.expected(), case_error))
            grade = self._build(decision, results, scoring_started)
        except Exception as error:  # a scoring fault: still an explicit, numeric infrastructure error
            grade = grade_file.infrastructure_grade(f"scoring failed: {type(error).__name__}: {error}",
                                                    self.inputs.grade_inputs(self.closed_book),
                                                    time.time() - self.inputs.started)
            decision = decide(NO_RESULTS, Expected({}), grade.infrastructure_error)
        with self.writing:
            exit_code = self._write(decision, grade)
        if exit_code is not None:
            session.exitstatus = exit_code

    def _apply_closed_book(self, decision: Decision) -> Decision:
        """A closed-book case: read the agent's trajectory and apply the rule to the decision."""
        case = self.inputs.case
        if case is None or not (case.profile.closed_book or self.inputs.closed_book_forced):
            self.closed_book = grade_file.ClosedBook(required=False)
            return apply_closed_book(decision, None)
        from usd_repair_verifier import closed_book

        profile = case.profile
        verdict = closed_book.evaluate(closed_book.trajectory_path(self.inputs.trajectory), case.paths.input,
                                       profile.allowed_urls)
        self.closed_book = grade_file.ClosedBook.model_validate(verdict.to_json())
        return apply_closed_book(decision, verdict.status, verdict.reason)

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config: pytest.Config) -> None:
        if self.grade is None:
            return
        terminalreporter.write_sep("=", "usdgrade")
        for line in readable.summary_lines(self.grade):
            terminalreporter.write_line(line)
        terminalreporter.write_line("tests: checks/ (the case's fault checks) and gates/ (validity, preservation, "
                                    "objective: every grade runs them)")
        out = self.inputs.out
        written = [n for n in outputs.OUTPUT_FILES if (out / n).exists()]
        terminalreporter.write_line(f"outputs: {', '.join(str(out / n) for n in written)}")
