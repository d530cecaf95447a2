"""What one grade reads, fixed at configure time: the options, the loaded case, the process's role.

The grading plugin (scoring/plugin.py) builds one RunInputs from the command line and keeps it in
the config's stash (`INPUTS`); each of the run's roles (collector, measuring, recorder, writer,
watchdog) reads it from there and never changes it.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from usd_repair_verifier.profiles.case import Case, CaseError, load_case

from . import grade_file


def is_worker(config: pytest.Config) -> bool:
    """An xdist worker: it runs tests, and the controller reads their reports."""
    return hasattr(config, "workerinput")


def is_controller(config: pytest.Config) -> bool:
    """The xdist controller: it distributes the tests and never runs one."""
    return not is_worker(config) and getattr(config.option, "dist", "no") != "no"


@dataclass(frozen=True)
class RunInputs:
    case_dir: Path
    submission: Path
    out: Path
    trajectory: str | None        # absolute: the run may change folder
    closed_book_forced: bool      # --closed-book: the rule applies even to an open-book profile
    time_limit: float | None      # seconds (--time-limit), or None
    case: Case | None             # None when the case did not load: then `case_error` says why
    case_error: str | None
    started: float                # seconds since the epoch, when the run began

    @classmethod
    def from_options(cls, config: pytest.Config, case_dir: str, submission: str, out: str) -> RunInputs:
        started = time.time()
        trajectory = config.getoption("trajectory")
        case, case_error = None, None
        try:
            case = load_case(Path(case_dir).resolve())
        except CaseError as error:
            case_error = f"{type(error).__name__}: {error}"
        except Exception as error:  # a verifier fault while reading the case
            case_error = f"unexpected {type(error).__name__} while loading the case: {error}"
        return cls(case_dir=Path(case_dir).resolve(), submission=Path(submission).absolute(), out=Path(out).resolve(),
                   trajectory=os.path.abspath(trajectory) if trajectory else None,
                   closed_book_forced=bool(config.getoption("closed_book")),
                   time_limit=config.getoption("time_limit") or None, case=case, case_error=case_error, started=started)

    def grade_inputs(self, closed_book: grade_file.ClosedBook | None) -> grade_file.GradeInputs:
        return grade_file.GradeInputs(self.case, self.submission, closed_book)


INPUTS = pytest.StashKey[RunInputs]()
