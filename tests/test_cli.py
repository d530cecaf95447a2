"""The `usdgrade` command: grade (in process, same outputs), inject, freeze, explain."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import command_runner
from usd_repair_verifier.profiles.schema import load_profile

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "fixtures" / "cases" / "ant_two_joint_faults"
DEMO = ROOT / "fixtures" / "submissions" / "ant_two_joint_faults_one_repair"
CABINET = ROOT / "fixtures" / "assets" / "cabinet_cm"


def usdgrade(*args: str) -> subprocess.CompletedProcess:
    return command_runner.usdgrade(*args, cwd=ROOT, timeout=None)


@pytest.mark.slow
def test_grade_writes_what_pytest_checks_writes(tmp_path):
    r = usdgrade("grade", str(DEMO), "--case", str(CASE), "--out", str(tmp_path / "cli"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    reward = json.loads((tmp_path / "cli" / "reward.json").read_text())
    grade = json.loads((tmp_path / "cli" / "grade.json").read_text())
    assert reward == {"authored_usd": 0.5}
    assert grade["targeted_repair_fraction"] == 0.5 and grade["status"] == "graded"


def test_grade_partial_run_writes_no_reward(tmp_path):
    r = usdgrade("grade", str(DEMO), "--case", str(CASE), "--out", str(tmp_path / "cli"), "-k", "f1")
    assert not (tmp_path / "cli" / "reward.json").exists()
    assert json.loads((tmp_path / "cli" / "grade.json").read_text())["status"] == "partial"
    assert r.returncode == 0


def test_explain_shows_the_arithmetic_and_the_failing_check(tmp_path):
    usdgrade("grade", str(DEMO), "--case", str(CASE), "--out", str(tmp_path / "o"))
    r = usdgrade("explain", str(tmp_path / "o" / "grade.json"))
    assert r.returncode == 0
    assert "R = 0.5 F + 0.5 S = 0.5 x 0.5000 + 0.5 x 0.5000 = 0.5000" in r.stdout
    assert "f2-joint.range" in r.stdout and "travel.lower" in r.stdout
    assert "FAIL  all_joints" in r.stdout


def test_inject_list_names_every_kind_with_its_injector():
    r = usdgrade("inject", "--list")
    assert r.returncode == 0
    for kind in ("joint_frame", "component_moved", "collision_over_approximated", "mass_unit_factor", "broken_asset_path"):
        assert kind in r.stdout
    assert "(no injector)" not in r.stdout  # every kind the checks know can be injected


def test_inject_is_byte_reproducible(tmp_path):
    args = ["inject", "--reference", str(CABINET), "--fault", "joint_frame:/Cabinet/Joints/DoorHinge",
            "--fault", "component_moved:/Cabinet/Drawer/Handle", "--seed", "11"]
    a = usdgrade(*args, "--out", str(tmp_path / "a"))
    b = usdgrade(*args, "--out", str(tmp_path / "b"))
    assert a.returncode == b.returncode == 0, a.stderr
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    untouched = [f for f in files if (tmp_path / "a" / f).read_bytes() == (CABINET / f).read_bytes()]
    assert len(untouched) >= len(files) - 3  # only the layers holding the faulted opinions change


def test_inject_rejects_unknown_kind(tmp_path):
    r = usdgrade("inject", "--reference", str(CABINET), "--fault", "melted:/Cabinet", "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and "unknown fault kind" in r.stderr


@pytest.mark.slow
def test_freeze_finds_a_hand_edited_fault_and_refuses_an_unbroken_input(tmp_path):
    reference = tmp_path / "reference"
    shutil.copytree(CABINET, reference)
    broken = tmp_path / "broken"
    shutil.copytree(CABINET, broken)
    physics = broken / "layers" / "physics.usda"
    text = physics.read_text()
    assert "float physics:upperLimit = 110" in text
    physics.write_text(text.replace("float physics:upperLimit = 110", "float physics:upperLimit = 1.9198622", 1))

    r = usdgrade("freeze", "--reference", str(reference), "--input", str(broken), "--out", str(tmp_path / "case"))
    assert r.returncode == 0, r.stdout + r.stderr
    profile = load_profile(tmp_path / "case" / "profile.json")
    assert [(f.kind, f.target) for f in profile.faults] == [("joint_limits", "/Cabinet/Joints/DoorHinge")] or \
        [(f.kind, f.target) for f in profile.faults] == [("joint_limit_units", "/Cabinet/Joints/DoorHinge")]
    assert profile.checks[0].input_error["travel.upper"] > 100

    r = usdgrade("freeze", "--reference", str(reference), "--input", str(reference), "--out", str(tmp_path / "none"))
    assert r.returncode == 1 and "does not differ" in r.stderr
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("argv", [["--version"], ["no-such-command"], ["explain", "no-such-folder"],
                                  ["grade", "--help"], ["records", "show", "x", "--db", "no/such/store.sqlite"]])
@pytest.mark.slow
def test_a_forked_command_runs_as_the_interpreter_runs_it(argv, tmp_path):
    """tests/command_runner.py forks the commands of these tests from a server: same exit code,
    stdout and stderr as `python -m usd_repair_verifier.commands.cli` started afresh, in the
    checkout and in another folder."""
    for cwd in (ROOT, tmp_path):
        forked = command_runner.usdgrade(*argv, cwd=cwd)
        fresh = subprocess.run([sys.executable, "-m", "usd_repair_verifier.commands.cli", *argv], cwd=cwd,
                               capture_output=True, text=True)
        assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
    assert command_runner._server is not None and command_runner._server.alive()
