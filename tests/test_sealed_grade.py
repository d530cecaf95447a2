"""The sealed grade (`usdgrade grade`, scoring/sealed.py): nothing in the submission, the current
folder or the environment takes part in it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from usd_repair_verifier.scoring.sealed import GRADE_INI, command, pytest_argv, scrubbed_environment

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "fixtures" / "cases" / "ant_two_joint_faults"
MARK = "open({path!r}, 'w').write('imported')\nimport usd_repair_verifier.scoring.reward as r\nr.reward_from = lambda *a, **k: 1.0\n"


def test_the_session_reads_only_the_verifiers_own_settings():
    argv = pytest_argv("/c", "/s", "/o", workers=2, select="f1")
    for flag in ("--noconftest", "--disable-plugin-autoload", f"--config-file={GRADE_INI}", f"--rootdir={ROOT}",
                 "--case=/c", "--submission=/s", "--out=/o"):
        assert flag in argv, flag
    assert argv[argv.index("-p") + 1] == "usd_repair_verifier.scoring.plugin"
    # No value is a separate word that pytest's early parse could take for a test path.
    assert "/s" not in argv and "/o" not in argv and "/c" not in argv
    assert command("py", "/c", "/s", "/o")[:3] == ["py", "-I", "-B"]
    assert scrubbed_environment({"PYTEST_ADDOPTS": "x", "PYTHONPATH": "y", "pythonhome": "z", "HOME": "h"}) == {"HOME": "h"}


@pytest.mark.slow
def test_planted_conftest_ini_and_environment_do_not_enter_usdgrade_grade(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    app = tmp_path / "app"
    shutil.copytree(CASE / "input", app)
    (app / "conftest.py").write_text(MARK.format(path=str(marks / "app-conftest")))
    (app / "tests").mkdir()
    (app / "tests" / "conftest.py").write_text(MARK.format(path=str(marks / "app-tests-conftest")))
    (app / "sitecustomize.py").write_text(MARK.format(path=str(marks / "app-sitecustomize")))
    (app / "pwned_plugin.py").write_text(MARK.format(path=str(marks / "app-plugin")))
    (app / "pytest.ini").write_text(f"[pytest]\naddopts = -p pwned_plugin\npythonpath = {app}\n")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "pytest.ini").write_text("[pytest]\naddopts = -p pwned_plugin --co\n")
    (cwd / "conftest.py").write_text(MARK.format(path=str(marks / "cwd-conftest")))
    # (PYTHONPATH is the operator's own: it steers the usdgrade process itself, not the grade.)
    env = dict(os.environ, PYTEST_ADDOPTS="-p pwned_plugin", PYTEST_PLUGINS="pwned_plugin", PYTHONPATH=str(ROOT))
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "usd_repair_verifier.commands.cli", "grade", str(app), "--case", str(CASE), "--out", str(out)],
                       cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert json.loads((out / "reward.json").read_text()) == {"authored_usd": 0.0}
    assert json.loads((out / "grade.json").read_text())["status"] == "graded"
    assert sorted(os.listdir(marks)) == []


def test_the_checkout_conftest_and_an_explicit_plugin_register_it_once():
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "usd_repair_verifier.scoring.plugin", "--co", "-q", "tests/test_reward.py"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


def test_plain_pytest_checks_in_a_checkout_never_imports_a_submission_conftest(tmp_path):
    """`pytest checks --case C --submission S --out O` (space-separated, as the README types it):
    pytest's early parse takes S for a test path; the plugin refuses conftests outside the verifier."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    case = root / "fixtures" / "cases" / "ant_two_joint_faults"
    sub = tmp_path / "sub"
    shutil.copytree(case / "input", sub)
    marker = tmp_path / "PLANTED_RAN"
    (sub / "conftest.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "checks", "-q", "-p", "no:cacheprovider", "--case", str(case),
                        "--submission", str(sub), "--out", str(tmp_path / "out")],
                       cwd=root, capture_output=True, text=True, timeout=300)
    assert not marker.exists(), r.stdout[-2000:]
    assert (tmp_path / "out" / "reward.json").exists(), r.stdout[-2000:]
