"""`usdgrade doctor`: one command that says whether this installation can grade."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from usd_repair_verifier.commands import doctor

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "fixtures" / "cases" / "ant_two_joint_faults"
DEMO = ROOT / "fixtures" / "submissions" / "ant_two_joint_faults_one_repair"
# What pyproject's [tool.setuptools] installs: the code under its namespace (installed name -> the
# repository's folder), without tests/, fixtures/ or conftest.py.
INSTALLED_PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]


def doctor_run(*args: str, pythonpath: Path = ROOT, cwd: Path = ROOT, env: dict | None = None):
    full = {**os.environ, "PYTHONPATH": str(pythonpath), **(env or {})}
    return subprocess.run([sys.executable, "-m", "usd_repair_verifier.commands.cli", "doctor", *args], cwd=cwd,
                          capture_output=True, text=True, env=full)


@pytest.mark.slow
def test_doctor_in_an_installed_package_without_a_checkout_grades_a_case(tmp_path):
    site = tmp_path / "site"
    (site / "usd_repair_verifier").mkdir(parents=True)
    shutil.copyfile(ROOT / "usd_repair_verifier" / "__init__.py", site / "usd_repair_verifier" / "__init__.py")
    for package, folder in INSTALLED_PACKAGES.items():
        shutil.copytree(ROOT / folder, site.joinpath(*package.split(".")), ignore=shutil.ignore_patterns("__pycache__"))
    # The case and submission outside any checkout, so no conftest.py can be found near them.
    shutil.copytree(CASE, tmp_path / "case")
    shutil.copytree(DEMO, tmp_path / "submission")
    r = doctor_run("--case", str(tmp_path / "case"), "--submission", str(tmp_path / "submission"), "--expect", "0.5",
                   pythonpath=site, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"grading tests in {site / 'usd_repair_verifier'} (an installed package)" in r.stdout
    assert "ok    fixture grade    case: reward 0.5 as expected" in r.stdout
    assert r.stdout.rstrip().endswith("ready to grade")


@pytest.mark.slow
def test_doctor_fails_when_the_fixture_grade_is_not_the_expected_reward(tmp_path):
    r = doctor_run("--case", str(CASE), "--submission", str(CASE / "reference"), "--expect", "0.5")
    assert r.returncode == 1, r.stdout
    assert "FAIL  fixture grade    ant_two_joint_faults: reward 1.0, expected 0.5" in r.stdout
    assert "1 problem(s)" in r.stdout


def test_judge_key_is_reported_but_never_printed():
    secret = "sk-ant-doctor-test-0123456789"
    r = doctor_run("--skip-grade", env={"ANTHROPIC_API_KEY": secret})
    assert "ANTHROPIC_API_KEY is set (value not shown)" in r.stdout
    assert secret not in r.stdout and secret not in r.stderr and "0123456789" not in r.stdout
    r = doctor_run("--skip-grade", env={"ANTHROPIC_API_KEY": ""})
    assert "warn  judge key        ANTHROPIC_API_KEY is not set" in r.stdout


def test_missing_extras_are_warnings_with_the_install_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    found = {f.topic: f for f in doctor.check_extras()}
    assert found["extra ray"].level == "warn" and "pip install -e '.[ray]'" in found["extra ray"].text
    assert all(f.level in ("ok", "warn") for f in found.values())


def test_warp_cache_location_is_reported(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.bin").write_bytes(b"x")
    [finding] = doctor.check_warp_cache({"WARP_CACHE_PATH": str(tmp_path / "kernels")})
    assert finding.level == "ok" and f"{tmp_path / 'kernels'} (WARP_CACHE_PATH): 1 files" in finding.text
    [finding] = doctor.check_warp_cache({"WARP_CACHE_PATH": str(tmp_path / "none")})
    assert "not built yet" in finding.text
