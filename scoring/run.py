"""Run the grading session as `pytest checks ...` in a child process and read its outputs.

Used by `usdgrade grade`, by freeze's self-check and by the verifier's own
tests: the exact command operators run, so what is tested is what ships.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .outputs import GRADE_FILE, REWARD_FILE

if TYPE_CHECKING:
    from .grade_file import Grade

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    grade: dict | None       # grade.json as JSON, for tests that look at the file's very content
    reward: dict | None
    stdout: str
    stderr: str

    @property
    def typed_grade(self) -> Grade | None:
        """grade.json as the verifier's `Grade` (what every reader uses), None when the run left
        none; `NotAGrade` when it left something that is not a grade."""
        from .grade_file import read

        return None if self.grade is None else read(self.grade)


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def run_grade(case: Path, submission: Path, out: Path, extra_args: tuple[str, ...] = (), timeout: float | None = None,
              env: dict | None = None) -> RunResult:
    """`env` is merged into the child's environment (e.g. PYTHONPATH for a test plugin)."""
    command = [
        sys.executable, "-m", "pytest", "checks",
        "--case", str(case), "--submission", str(submission), "--out", str(out),
        "-q", "-p", "no:cacheprovider", *extra_args,
    ]
    child_env = dict(os.environ)
    child_env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    child_env.update(env or {})
    proc = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, env=child_env)
    return RunResult(proc.returncode, _read(Path(out) / GRADE_FILE), _read(Path(out) / REWARD_FILE), proc.stdout, proc.stderr)
