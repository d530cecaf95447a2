"""examples/harbor-task: its tests/test.sh, run here with Harbor's paths redirected."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "examples" / "harbor-task"
CASE = TASK / "tests" / "case"


def run_test_sh(submission: Path, out: Path, time_limit: float | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, USDGRADE_HOME=str(ROOT), USDGRADE_CASE=str(CASE), USDGRADE_SUBMISSION=str(submission),
               USDGRADE_OUT=str(out), USDGRADE_PYTHON=sys.executable)
    if time_limit is not None:
        env["USDGRADE_TIME_LIMIT"] = str(time_limit)
    return subprocess.run(["bash", str(TASK / "tests" / "test.sh")], env=env, capture_output=True, text=True)


def test_task_layout_and_internal_time_limit_below_the_verifier_timeout():
    for part in ("task.toml", "instruction.md", "environment/Dockerfile", "tests/test.sh", "tests/case/profile.json"):
        assert (TASK / part).exists(), part
    timeout = tomllib.loads((TASK / "task.toml").read_text())["verifier"]["timeout_sec"]
    default_limit = float((TASK / "tests" / "test.sh").read_text().split("USDGRADE_TIME_LIMIT:-")[1].split("}")[0])
    assert default_limit < timeout


def test_reference_in_app_scores_one(tmp_path):
    r = run_test_sh(CASE / "reference", tmp_path / "logs")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert json.loads((tmp_path / "logs" / "reward.json").read_text()) == {"authored_usd": 1.0}
    assert json.loads((tmp_path / "logs" / "grade.json").read_text())["status"] == "graded"


def test_unrepaired_input_scores_zero(tmp_path):
    app = tmp_path / "app"
    shutil.copytree(CASE / "input", app)
    r = run_test_sh(app, tmp_path / "logs")
    assert r.returncode == 0
    assert json.loads((tmp_path / "logs" / "reward.json").read_text()) == {"authored_usd": 0.0}


def test_a_grade_past_the_time_limit_still_writes_an_infrastructure_error(tmp_path):
    r = run_test_sh(CASE / "reference", tmp_path / "logs", time_limit=0.2)
    assert r.returncode == 3
    grade = json.loads((tmp_path / "logs" / "grade.json").read_text())
    assert grade["status"] == "infrastructure_error" and "time limit" in grade["infrastructure_error"]
    assert json.loads((tmp_path / "logs" / "reward.json").read_text()) == {"authored_usd": 0.0}
