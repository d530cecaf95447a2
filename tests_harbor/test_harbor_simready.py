"""A task written by `usdgrade task` from a SimReady case (physics behind per-engine variant sets,
every engine Disabled in the package; the case selects /Gripper:PhysX=Enabled), run by the real
Harbor 0.26.0 with real Docker containers: the oracle scores 1.0 and the nop agent 0.0, each graded
under the case's selection inside the verifier's own container."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests_harbor.harbor_client import ROOT, concurrently, harbor, harbor_run, usdgrade

CASE = ROOT / "fixtures" / "simready" / "cases" / "simready_gripper_missing_and_drive"
SELECTION = {"/Gripper": {"PhysX": "Enabled"}}


@pytest.fixture(scope="module")
def simready_task(harbor_stack, tmp_path_factory) -> Path:
    dataset = tmp_path_factory.mktemp("simready") / "dataset"
    task = dataset / CASE.name
    r = usdgrade("task", str(CASE), "--out", str(task), "--base-image", harbor_stack.base_image, "--open-book")
    assert r.returncode == 0, r.stderr
    return task


@pytest.fixture(scope="module")
def simready_jobs(harbor_stack, simready_task) -> dict:
    jobs = simready_task.parent.parent / "jobs"
    return concurrently(
        oracle=lambda: harbor_run(harbor_stack, simready_task.parent, "oracle", jobs, "simready-oracle"),
        nop=lambda: harbor_run(harbor_stack, simready_task.parent, "nop", jobs, "simready-nop"))


def test_the_simready_task_passes_harbor_lint(harbor_stack, simready_task):
    r = harbor(harbor_stack, "lint", str(simready_task), "--select", "ALL", "--json", timeout=120)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    assert json.loads(r.stdout) == []
    profile = json.loads((simready_task / "tests" / "case" / "profile.json").read_text())
    assert profile["variant_selections"] == SELECTION
    assert "`/Gripper:PhysX=Enabled`" in (simready_task / "instruction.md").read_text()


def test_oracle_scores_one_under_the_case_selection(simready_jobs):
    (trial,) = simready_jobs["oracle"].trials()
    assert trial.exception is None and trial.rewards == {"authored_usd": 1.0}, trial.describe()
    grade = trial.grade
    assert grade["status"] == "graded" and grade["objective_success"] is True, trial.describe()
    assert grade["variant_selections"] == SELECTION
    assert "with the case's variant selections /Gripper:PhysX=Enabled" in grade["validity"]["stage_reads"]["reason"]
    assert "composed: 4 bodies, 3 joints" in grade["validity"]["stage_reads"]["reason"]
    # The oracle restores the published package: every engine Disabled in its own root layer.
    app = trial.folder / "artifacts" / "app" / "gripper.usda"
    assert app.read_text().count('= "Disabled"') == 3


def test_nop_scores_zero_under_the_case_selection(simready_jobs):
    (trial,) = simready_jobs["nop"].trials()
    assert trial.exception is None and trial.rewards == {"authored_usd": 0.0}, trial.describe()
    grade = trial.grade
    assert grade["status"] == "graded" and grade["variant_selections"] == SELECTION, trial.describe()
    assert all(c["passed"] is False for c in grade["checks"])
