"""examples/harbor-task: the output of `usdgrade task`, its layout, and its test.sh run here
(a copy rendered with this checkout's paths; the shipped one has fixed paths and no overrides)."""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import tomllib
from pathlib import Path

import pytest

from harbor_task_support import CASE, ROOT, TASK, local_test_sh, read_json, run_script, tree_differences, unavailable
from usd_repair_verifier.authoring.task import TIME_LIMIT_S, render_test_sh, write_task

FIXTURE_CASE = ROOT / "fixtures" / "cases" / "cabinet_drawer_door"


def test_the_example_is_what_usdgrade_task_writes_and_locks_its_verifier(tmp_path):
    """The example's own files are what `usdgrade task` writes for its case, and its lock names the
    verifier this checkout would copy into it (the copy itself is not committed)."""
    from tools.harbor_example import LOCK, differences, lock_of

    found = differences()
    assert not found, f"re-generate: python tools/harbor_example.py: {found}"
    for script in ("tests/test.sh", "solution/solve.sh"):
        assert (TASK / script).stat().st_mode & stat.S_IXUSR, script
    # A complete folder still: `usdgrade task` writes the verifier, and the lock describes that copy.
    written = write_task(FIXTURE_CASE, tmp_path / "task")
    assert (written / "tests" / "verifier" / "usd_repair_verifier" / "scoring" / "plugin.py").is_file()
    assert read_json(TASK / LOCK) == lock_of(written)
    assert "usd_repair_verifier/scoring/plugin.py" in read_json(TASK / LOCK)["verifier"]["files"]
    # The check can fail: an example built by another verifier is refused.
    stale = tmp_path / "stale"
    shutil.copytree(TASK, stale, ignore=shutil.ignore_patterns("verifier"))
    lock = read_json(stale / LOCK)
    (stale / LOCK).write_text(json.dumps({**lock, "scoring_version": "0"}))
    (stale / "tests" / "test.sh").write_text("#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n")
    assert sorted(differences(stale)) == ["tests/test.sh: differs", f"{LOCK}: not the lock of this checkout's verifier"]


def test_layout_keeps_the_verifier_case_and_outputs_out_of_the_agents_image():
    config = tomllib.loads((TASK / "task.toml").read_text())
    assert config["verifier"]["environment_mode"] == "separate"
    assert config["agent"]["user"] not in ("root", "0")
    # The submission, and the agent's trajectory for the closed-book rule (copied by the collect hook).
    assert config["artifacts"] == ["/app", "/var/lib/usdgrade-trajectory"]
    assert [c["user"] for c in config["verifier"]["collect"]] == ["root"]
    assert read_json(CASE / "profile.json")["closed_book"] is True
    assert TIME_LIMIT_S < config["verifier"]["timeout_sec"]
    # The agent's image is built from environment/ alone: its Dockerfile and the broken input.
    environment = TASK / "environment"
    assert sorted(p.name for p in environment.iterdir()) == ["Dockerfile", "app"]
    assert not tree_differences(environment / "app", CASE / "input")
    dockerfile = (environment / "Dockerfile").read_text()
    copies = [line.split()[-2] for line in dockerfile.splitlines() if line.startswith(("COPY", "ADD"))]
    assert copies == ["app"], copies
    for text in (dockerfile, (TASK / "tests" / "Dockerfile").read_text()):
        assert re.search(r"^FROM \S+@sha256:[0-9a-f]{64}$", text, re.M), "base image not pinned by digest"
    requirements = (TASK / "tests" / "requirements.txt").read_text().splitlines()
    assert all(re.fullmatch(r"[a-z0-9.-]+==[\w.]+", line) for line in requirements if not line.startswith("#"))
    # The oracle restores the reference; the reference and the case travel in tests/ and solution/ only.
    assert not tree_differences(TASK / "solution" / "reference", CASE / "reference")


def test_shipped_test_sh_has_fixed_paths_and_honours_no_override():
    shipped = (TASK / "tests" / "test.sh").read_text()
    assert shipped == render_test_sh()
    assert "USDGRADE_" not in shipped and ":-" not in shipped
    assert "\nend_other_processes\n" in shipped  # shared mode: the sweep runs in the shipped form
    for fixed in ("VERIFIER=/opt/usdgrade/verifier", "PYTHON=/opt/usdgrade/venv/bin/python", "CASE=/tests/case",
                  "SUBMISSION=/app", "OUT=/logs/verifier"):
        assert f"\n{fixed}\n" in shipped, fixed


@pytest.mark.slow
def test_reference_in_app_scores_one(tmp_path):
    out = tmp_path / "logs"
    r = run_script(local_test_sh(tmp_path, CASE / "reference", out))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert read_json(out / "reward.json") == {"authored_usd": 1.0}
    assert read_json(out / "grade.json")["status"] == "graded"
    assert sorted(p.name for p in out.iterdir()) == ["grade.json", "reward-details.json", "reward.json"]


@pytest.mark.slow
def test_planted_outputs_and_environment_cannot_raise_the_unrepaired_input(tmp_path):
    app, out = tmp_path / "app", tmp_path / "logs"
    shutil.copytree(CASE / "input", app)
    out.mkdir()
    (out / "reward.json").write_text('{"authored_usd": 1.0}')
    (out / "reward.txt").write_text("1.0")
    (out / "conftest.py").write_text("raise SystemExit('planted')\n")
    env = dict(os.environ, PYTEST_ADDOPTS="-p no:usdgrade --co", PYTHONPATH=str(app), PYTEST_PLUGINS="nothing",
               USDGRADE_OUT=str(tmp_path / "elsewhere"), USDGRADE_SUBMISSION=str(CASE / "reference"))
    r = run_script(local_test_sh(tmp_path, app, out), env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert read_json(out / "reward.json") == {"authored_usd": 0.0}
    assert read_json(out / "grade.json")["status"] == "graded"
    assert sorted(p.name for p in out.iterdir()) == ["grade.json", "reward-details.json", "reward.json"]


def test_a_grade_past_the_time_limit_still_writes_an_infrastructure_error(tmp_path):
    out = tmp_path / "logs"
    r = run_script(local_test_sh(tmp_path, CASE / "reference", out, time_limit=0.2))
    assert r.returncode == 3
    grade = read_json(out / "grade.json")
    assert grade["status"] == "infrastructure_error" and "time limit" in grade["infrastructure_error"]
    assert read_json(out / "reward.json") == {"authored_usd": 0.0}
    # Harbor's viewer and log say that this 0.0 is a fallback, not a measured repair.
    details = read_json(out / "reward-details.json")["authored_usd"]
    assert details["kind"] == "infrastructure_error" and "fallback" in details["warnings"][0]
    assert "infrastructure_error" in r.stdout and "fallback, not a measured repair" in r.stdout


def test_a_verifier_that_cannot_start_leaves_the_fallback(tmp_path):
    out = tmp_path / "logs"
    out.mkdir()
    (out / "reward.json").write_text('{"authored_usd": 1.0}')
    script = local_test_sh(tmp_path, CASE / "reference", out)
    script.write_text(script.read_text().replace(f"\nPYTHON={os.sys.executable}\n", "\nPYTHON=/nonexistent/python\n"))
    r = run_script(script)
    assert r.returncode == 3
    assert read_json(out / "reward.json") == {"authored_usd": 0.0}
    assert read_json(out / "grade.json")["status"] == "infrastructure_error"


def harbor_executable() -> Path:
    harbor = os.environ.get("USDGRADE_HARBOR")
    if not harbor or not Path(harbor).is_file():
        unavailable("harbor 0.26.0 (Python 3.12) not found: set USDGRADE_HARBOR to its `harbor` executable")
    return Path(harbor)


def harbor_lint(*tasks: Path) -> list:
    """Harbor's findings on the tasks (one run of its linter for all of them; each finding names
    its file)."""
    import json

    r = subprocess.run([str(harbor_executable()), "lint", *map(str, tasks), "--select", "ALL", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    return json.loads(r.stdout)


def test_harbor_lint_finds_nothing_in_the_example(tmp_path):
    # The example as `usdgrade task` writes it, complete (the committed one has no verifier copy).
    assert harbor_lint(write_task(FIXTURE_CASE, tmp_path / "task")) == []


def test_harbor_lint_finds_nothing_in_a_generated_dataset(tmp_path):
    from usd_repair_verifier.authoring.task import write_dataset

    cases = tmp_path / "cases"
    cases.mkdir()
    for name in ("ant_two_joint_faults", "cheetah_visual_and_shape"):
        source = ROOT / "fixtures" / "cases" / name
        if source.is_dir():
            shutil.copytree(source, cases / name)
    tasks = write_dataset(cases, tmp_path / "dataset")
    assert len(tasks) == 2
    assert harbor_lint(*tasks) == []


def test_usdgrade_task_refuses_a_folder_that_is_not_a_task_and_a_tampered_case(tmp_path, capsys):
    from usd_repair_verifier.commands.cli import main

    out = tmp_path / "not-a-task"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["task", str(FIXTURE_CASE), "--out", str(out)]) == 2   # an output refused: nothing written
    assert (out / "keep.txt").read_text() == "mine"
    case = tmp_path / "case"
    shutil.copytree(FIXTURE_CASE, case)
    layer = next(p for p in (case / "reference").rglob("*.usda"))
    layer.write_text(layer.read_text() + "\n")
    assert main(["task", str(case), "--out", str(tmp_path / "task")]) == 1
    assert not (tmp_path / "task").exists()
    assert "digest" in capsys.readouterr().err


@pytest.mark.slow
def test_usdgrade_task_check_says_a_generated_task_is_sound():

    r = subprocess.run([os.sys.executable, "-m", "usd_repair_verifier.commands.cli", "task", "--check", str(TASK)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines() == [
        f"{TASK}: sound: oracle 1.0 (graded), untouched input 0.0 (graded), closed book"]


@pytest.mark.slow
def test_usdgrade_task_check_finds_an_oracle_that_does_not_repair(tmp_path):
    task = tmp_path / "task"
    shutil.copytree(TASK, task)
    shutil.rmtree(task / "solution" / "reference")
    shutil.copytree(CASE / "input", task / "solution" / "reference")   # the "oracle" restores the broken input
    r = subprocess.run([os.sys.executable, "-m", "usd_repair_verifier.commands.cli", "task", "--check", str(task)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 1
    assert r.stdout.strip() == f"{task}: NOT sound: oracle 0.0 (graded), untouched input 0.0 (graded), closed book"


def test_usdgrade_task_check_reads_the_interpreters_own_bytecode(tmp_path):
    """The image's bytecode tree is not on this machine: the check's copy of test.sh takes the
    interpreter's own bytecode instead of compiling every module of each grade; a test.sh that
    names no tree is not one usdgrade wrote."""
    from usd_repair_verifier.authoring.task_check import SETTINGS, CheckError, _local_test_sh

    shipped = (TASK / "tests" / "test.sh").read_text()
    paths = {name: f"/local/{name.lower()}" for name in SETTINGS}
    local = _local_test_sh(shipped, paths, tmp_path / "trajectory.json")
    assert "/opt/usdgrade/pycache" in shipped and "/opt/usdgrade/pycache" not in local
    assert local.count(' -X pycache_prefix= -c "$BOOTSTRAP"') == 1
    with pytest.raises(CheckError, match="pycache_prefix"):
        _local_test_sh(shipped.replace("-X pycache_prefix=/opt/usdgrade/pycache ", ""), paths, tmp_path / "t.json")
