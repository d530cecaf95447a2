"""A person's mistake is one line and a non-zero exit, never a traceback; a failing check is a
measurement (one line), not an error; USD's own warnings are said in words; progress is drawn at
a terminal and nowhere else; the command says its version and every option says what it does."""
from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import select
import shutil
import struct
import subprocess
import sys
import termios
import textwrap
from pathlib import Path

import pytest

from tests import command_runner
from usd_repair_verifier.authoring import usd_messages
from usd_repair_verifier.commands.cli import build_parser, main
from usd_repair_verifier.scoring import progress as progress_module

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
CASE = CASES / "hopper_graph_and_state"
DEMO_CASE = CASES / "ant_two_joint_faults"
DEMO = ROOT / "fixtures" / "submissions" / "ant_two_joint_faults_one_repair"
CABINET = ROOT / "fixtures" / "assets" / "cabinet_cm"
HOPPER = ROOT / "fixtures" / "assets" / "hopper"
JOB = ROOT / "fixtures" / "harbor_jobs" / "repair-bench-fixture"


def usdgrade(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    return command_runner.usdgrade(*args, cwd=cwd, env=env, timeout=300)


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


# --- freeze --faults ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def injected(tmp_path_factory) -> tuple[Path, Path]:
    """A broken hopper from `usdgrade inject`, and its manifest moved away from it."""
    folder = tmp_path_factory.mktemp("injected")
    profile = json.loads((CASE / "profile.json").read_text())
    faults = [f"--fault={f['kind']}:{f['target']}" for f in profile["faults"]]
    r = usdgrade("inject", "--reference", str(HOPPER), *faults, "--seed", "7", "--out", str(folder / "input"))
    assert r.returncode == 0, r.stderr
    manifest = folder / "faults.inject.json"
    (folder / "input.inject.json").rename(manifest)
    return folder / "input", manifest


@pytest.mark.slow
def test_the_manifest_inject_wrote_works_as_faults(injected, tmp_path):
    input_, manifest = injected
    r = usdgrade("freeze", "--reference", str(HOPPER), "--input", str(input_), "--faults", str(manifest),
                 "--out", str(tmp_path / "case"))
    assert r.returncode == 0, r.stdout + r.stderr
    frozen = json.loads((tmp_path / "case" / "profile.json").read_text())["faults"]
    written = json.loads(manifest.read_text())["faults"]
    assert [(f["kind"], f["target"]) for f in frozen] == [(f["kind"], f["target"]) for f in written]


@pytest.mark.parametrize("faults, words, code", [
    ([{"kind": "joint_frame"}], "has no target", 2),
    ([{"kind": "joint_frame", "target": "*"}], "has no target", 2),
    ([{"kind": "melted", "target": "/hopper"}], "unknown kind 'melted'", 2),
    (["joint_frame"], "not an object", 2),
    ({"kind": "joint_frame"}, "expected a list of faults", 2),
    ([{"kind": "joint_frame", "target": "/hopper/Nope"}], "the reference has no joint /hopper/Nope", 1),
    ([{"kind": "joint_frame", "target": "/hopper/Geometry/torso"}], "/hopper/Geometry/torso is a body of the reference, "
                                                                    "not a joint", 1),
])
def test_a_bad_faults_file_is_one_line(injected, tmp_path, faults, words, code):
    input_, _ = injected
    path = tmp_path / "faults.json"
    path.write_text(json.dumps(faults))
    r = usdgrade("freeze", "--reference", str(HOPPER), "--input", str(input_), "--faults", str(path),
                 "--out", str(tmp_path / "case"))
    assert r.returncode == code and words in one_line(r.stderr), r.stderr
    assert not (tmp_path / "case").exists()


def test_a_faults_file_that_is_not_json_or_not_there_is_one_line(injected, tmp_path):
    input_, _ = injected
    (tmp_path / "faults.json").write_text("[{")
    for path, words in ((tmp_path / "faults.json", "is not JSON"), (tmp_path / "none.json", "cannot read")):
        r = usdgrade("freeze", "--reference", str(HOPPER), "--input", str(input_), "--faults", str(path),
                     "--out", str(tmp_path / "case"))
        assert r.returncode == 2 and words in one_line(r.stderr), r.stderr


@pytest.mark.parametrize("args, words", [
    (["inject", "--targets", str(CASE)], "its intact package is"),
    (["inject", "--targets", "/nonexistent/ref"], "does not exist"),
    (["inject", "--reference", str(CASE), "--fault", "articulation_root", "--out", "/tmp/x"], "not a package"),
    (["freeze", "--reference", str(HOPPER), "--input", str(CASE / "profile.json"), "--out", "/tmp/x"], "not a folder"),
    (["explain", "/nonexistent/grade.json"], "cannot read"),
    (["regrade", "/nonexistent/job", "--cases", str(CASES)], "is not a folder"),
])
def test_wrong_paths_are_one_line(args, words, tmp_path):
    r = usdgrade(*args, cwd=tmp_path)
    assert r.returncode in (1, 2) and words in one_line(r.stderr), r.stderr
    assert "usdgrade-targets-" not in r.stderr          # no temporary path of ours leaks


@pytest.mark.parametrize("record", ["visual.json", "physical.json"])
def test_explain_refuses_a_separate_grade_with_one_line(record):
    path = next(JOB.rglob(record))
    r = usdgrade("explain", str(path))
    line = one_line(r.stderr)
    assert r.returncode == 2 and f"it is a {record}" in line and "grade.json" in line
    assert "authored_usd: -" not in r.stdout


# --- the grade's own output ---------------------------------------------------------------------

def test_a_failing_check_is_one_line_not_a_traceback(tmp_path):
    r = usdgrade("grade", str(DEMO), "--case", str(DEMO_CASE), "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    for noise in ("Traceback", "GradingSession object at", "def test_fault_check", "FAILURES", "AssertionError"):
        assert noise not in r.stdout, noise
    assert "check f2-joint.range" in r.stdout and "progress 0.0000" in r.stdout
    assert "2 failed, 26 passed" in r.stdout     # still pytest's count: the outcome is unchanged


def test_a_wrong_submission_path_is_a_short_invalid_grade_under_pytest_checks(tmp_path):
    """Harbor's contract (`pytest checks`): a missing /app is an invalid submission, reward 0."""
    from usd_repair_verifier.scoring.run import run_grade

    r = run_grade(DEMO_CASE, tmp_path / "nonexistent", tmp_path / "out", timeout=300)
    assert r.exit_code == 0
    assert "Traceback" not in r.stdout and "FAILURES" not in r.stdout and "short test summary" not in r.stdout
    assert f"local_package: {tmp_path / 'nonexistent'} does not exist" in r.stdout
    assert len(r.stdout.splitlines()) < 25, r.stdout
    assert json.loads((tmp_path / "out" / "reward.json").read_text()) == {"authored_usd": 0.0}


@pytest.mark.slow
def test_a_check_that_raises_keeps_its_traceback(tmp_path):
    """A verifier fault is no measurement: pytest shows it in full (and the grade says infrastructure error)."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "usdgrade_assert_bug.py").write_text(textwrap.dedent('''
        import pytest

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_call(item):
            if "f2-joint.range" in item.nodeid:
                assert 1 + 1 == 3, "a bug in the verifier"
    '''))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(plugins), os.environ.get("PYTHONPATH")])))
    r = subprocess.run([sys.executable, "-m", "pytest", "checks", "--case", str(DEMO_CASE), "--submission", str(DEMO),
                        "--out", str(tmp_path / "out"), "-p", "usdgrade_assert_bug", "-p", "no:cacheprovider"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 3, r.stdout[-3000:]
    assert "FAILURES" in r.stdout and "a bug in the verifier" in r.stdout and "usdgrade_assert_bug.py" in r.stdout


@pytest.mark.slow
def test_pytest_grades_from_any_folder_with_the_installed_plugin(tmp_path):
    """The Quick start's editable install: `pytest --case=...` from another folder, no conftest there."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_PLUGINS")}
    r = subprocess.run([sys.executable, "-m", "pytest", f"--case={DEMO_CASE}", f"--submission={DEMO}",
                        f"--out={tmp_path / 'out'}", "-p", "no:cacheprovider"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "pytest_plugins" not in r.stdout
    # no deprecation of pytest's (a session fixture defined as an instance method) and no other warning
    assert "PytestRemovedIn" not in r.stdout and "warnings summary" not in r.stdout, r.stdout[-3000:]
    assert json.loads((tmp_path / "out" / "reward.json").read_text()) == {"authored_usd": 0.5}
    assert json.loads((tmp_path / "out" / "grade.json").read_text())["status"] == "graded"


# --- USD's own warnings -------------------------------------------------------------------------

WARNINGS = """\
Warning: in _ReportErrors at line 3326 of /opt/USD/pxr/usd/usd/stage.cpp -- Could not load sublayer @/tmp/usdgrade-targets-x1/package/layers/physics.usda@ of layer @/tmp/usdgrade-targets-x1/package/cabinet.usda@; skipping. (Recomposing stage on stage @/tmp/usdgrade-targets-x1/package/cabinet.usda@ <0x55a9c0529630>)
Warning (secondary thread): in ComputeMassProperties at line 900 of /opt/USD/pxr/usd/usdPhysics/massAPI.cpp -- Mass is negative, prim path: /Cabinet/Door [python3.11]
Warning (secondary thread): in ComputeMassProperties at line 900 of /opt/USD/pxr/usd/usdPhysics/massAPI.cpp -- Mass is negative, prim path: /Cabinet/Door [python3.11]
something else a library printed
"""


def test_usd_warnings_are_said_in_words_with_paths_the_author_knows():
    lines = usd_messages.describe(usd_messages.parse(WARNINGS), {"/tmp/usdgrade-targets-x1/package": "REF"})
    assert lines == ["layer REF/cabinet.usda: its sublayer REF/layers/physics.usda cannot be loaded",
                     "/Cabinet/Door: negative mass (2 times)", "something else a library printed"]


def test_usd_warnings_of_other_threads_are_caught_too(capfd):
    from pxr import Tf
    import threading

    with usd_messages.captured() as said:
        worker = threading.Thread(target=lambda: Tf.Warn("Mass is negative, prim path: /A"))
        worker.start()
        worker.join()
        Tf.Warn("Could not load sublayer @/x/b.usda@ of layer @/x/a.usda@; skipping.")
        print("python's own stderr", file=sys.stderr)
    captured = capfd.readouterr()
    assert "Mass is negative" not in captured.err and "python's own stderr" in captured.err
    assert usd_messages.describe(said, {"/x": "PKG"}) == [
        "/A: negative mass", "layer PKG/a.usda: its sublayer PKG/b.usda cannot be loaded"]


def test_targets_and_inject_print_no_raw_usd_warnings(tmp_path):
    r = usdgrade("inject", "--targets", str(CABINET), "--fault", "broken_asset_path")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = usdgrade("inject", "--reference", str(CABINET), "--fault", "broken_asset_path", "--out", str(tmp_path / "b"))
    assert r.returncode == 0 and "Warning: in" not in r.stdout + r.stderr, r.stderr
    assert f"its sublayer {tmp_path / 'b'}/layers/layers/physics.usda cannot be loaded" in r.stdout
    assert ".inject-" not in r.stdout                    # the temporary folder is named as the package


@pytest.mark.slow
def test_freeze_says_what_usd_warned_of_the_packages_and_nothing_of_its_private_tries(tmp_path):
    """freeze injects kinds into private copies to name a difference; what USD says of those copies
    (temporary folders, or the reference's own path for an in-memory try) is not the author's concern."""
    broken = tmp_path / "b"
    assert usdgrade("inject", "--reference", str(CABINET), "--fault", "broken_asset_path", "--out", str(broken)).returncode == 0
    r = usdgrade("freeze", "--reference", str(CABINET), "--input", str(broken), "--out", str(tmp_path / "case"))
    said = r.stdout + r.stderr
    assert "Warning: in" not in said and "Traceback" not in said, said
    for leak in ("usdgrade-detect-", "usdgrade-collateral-", ".inject-", f"{CABINET}/layers/layers"):
        assert leak not in said, leak
    assert f"the reference to {broken}/layers/layers/geometry.usda cannot be opened" in said, said


# --- progress: at a terminal, and only there ----------------------------------------------------

def run_at_terminal(*args: str) -> tuple[int, str]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "usd_repair_verifier.commands.cli", *args], cwd=ROOT,
                            stdin=slave, stdout=subprocess.DEVNULL, stderr=slave, close_fds=True)
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=60), seen.decode("utf-8", "replace")


@pytest.mark.slow
def test_progress_is_drawn_at_a_terminal_and_nowhere_else():
    code, terminal = run_at_terminal("inject", "--targets", str(CABINET))
    assert code == 0 and "trying targets" in terminal and "try/s" in terminal
    r = usdgrade("inject", "--targets", str(CABINET))
    assert r.returncode == 0 and r.stderr == ""


@pytest.mark.slow
def test_freeze_at_a_terminal_says_which_step_runs(tmp_path):
    code, terminal = run_at_terminal("freeze", "--reference", str(CASE / "reference"), "--input", str(CASE / "input"),
                                     "--out", str(tmp_path / "case"))
    assert code == 0, terminal
    assert "freeze: comparing the input with the reference" in terminal
    assert "freeze: measuring the input's errors, then grading reference and input" in terminal


def test_a_long_step_says_what_runs_and_for_how_long(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    monkeypatch.setattr(progress_module, "TICK_S", 0.05)
    with progress_module.working("physical: runtime tests", "about a minute"):
        import time

        time.sleep(0.3)
    assert "physical: runtime tests: 00:0" in screen.getvalue() and "(about a minute)" in screen.getvalue()
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with progress_module.working("nothing to see"):
        pass
    assert sys.stderr.getvalue() == ""


# --- the command describes itself ---------------------------------------------------------------

def test_version():
    r = usdgrade("--version")
    assert r.returncode == 0 and r.stdout.startswith("usdgrade 0.") and "scoring version" in r.stdout


def _actions(parser, path="usdgrade"):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield path, action


def test_every_option_of_every_command_has_help():
    missing = [f"{path} {'/'.join(a.option_strings) or a.dest}" for path, a in _actions(build_parser())
               if not (a.help or "").strip()]
    assert missing == []


def test_the_description_names_every_command():
    import argparse

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert len(commands) == 10
    for name in commands:
        assert f"\n  {name} " in parser.description, name


@pytest.mark.slow
def test_the_fake_judge_runs_without_authorize(tmp_path, capsys, monkeypatch):
    from contextlib import contextmanager

    from usd_repair_verifier.visual import grade as visual_grade

    steps = []

    @contextmanager
    def working(desc, note=""):     # the long step a terminal is shown (scoring/progress.py draws it)
        steps.append(desc)
        yield

    monkeypatch.setattr(visual_grade, "working", working)
    out, repaired = tmp_path / "out", DEMO_CASE / "reference"      # eligible: objective success
    assert main(["grade", str(repaired), "--case", str(DEMO_CASE), "--out", str(out)]) == 0
    capsys.readouterr()
    env_before = os.environ.pop("USDGRADE_VISUAL_AUTHORIZE", None)
    try:
        code = main(["visual", "--case", str(DEMO_CASE), "--submission", str(repaired), "--grade",
                     str(out / "grade.json"), "--out", str(out), "--judge", "fake"])
    finally:
        if env_before is not None:
            os.environ["USDGRADE_VISUAL_AUTHORIZE"] = env_before
    visual = json.loads((out / "visual.json").read_text())
    assert code == 0 and visual["status"] == "graded" and visual["dry_run"] is True, visual["reason"]
    assert visual["authorization"] == {"authorized": True, "source": "--judge fake"}
    assert steps == ["visual: rendering reference and candidate"]      # the renders: seconds, never silent


@pytest.mark.parametrize("command", ["visual", "physical"])
def test_a_separate_grade_of_folders_that_are_not_there_is_one_line(tmp_path, command):
    args = [command, "--case", str(tmp_path / "nope"), "--submission", str(DEMO), "--out", str(tmp_path / "out")]
    if command == "visual":
        args += ["--grade", str(tmp_path / "grade.json"), "--judge", "fake"]
    r = usdgrade(*args)
    assert r.returncode == 2 and "is not a folder" in one_line(r.stderr), r.stderr
    assert not (tmp_path / "out").exists()


def test_a_layer_that_does_not_parse_is_one_line_naming_file_and_line(tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(CABINET, broken)
    with open(broken / "cabinet.usda", "a") as layer:
        layer.write("garbage {{{\n")
    for args in (["inject", "--reference", str(broken), "--fault", "joint_frame:/Cabinet/Joints/DoorHinge",
                  "--out", str(tmp_path / "out")],
                 ["inject", "--targets", str(broken)],
                 ["freeze", "--reference", str(CABINET), "--input", str(broken), "--out", str(tmp_path / "case")]):
        r = usdgrade(*args)
        line = one_line(r.stderr)
        assert r.returncode == 1 and "cabinet.usda:" in line and "parse error at 'garbage {{{'" in line, line
        assert "pxrInternal" not in line and ".inject-" not in line
    assert not (tmp_path / "out").exists() and not (tmp_path / "case").exists()


# --- the mistakes a new user makes: one line, the README's exit code, nothing created ------------

# Runs the command as the core install would, without the records extra's modules: each import of
# one raises ModuleNotFoundError, as it does when the package is not installed.
WITHOUT_RECORDS_EXTRA = ("import sys\n"
                         "for name in ('sqlalchemy', 'psycopg', 'matplotlib'):\n"
                         "    sys.modules[name] = None\n"
                         "from usd_repair_verifier.commands.cli import main\n"
                         "sys.exit(main(sys.argv[1:]))\n")


@pytest.mark.parametrize("args", [["records", "show", "X", "--db", "S.sqlite"],
                                  ["records", "ingest", str(JOB), "--db", "S.sqlite"],
                                  ["records", "report", "--db", "S.sqlite", "--out", "report"],
                                  ["regrade", "--db", "S.sqlite", "--cases", str(CASES)]])
def test_records_without_the_extra_name_the_extra_in_one_line(tmp_path, args):
    if args[0] == "regrade":
        (tmp_path / "S.sqlite").write_bytes(b"")     # the store is there; the extra to read it is not
    before = sorted(p.name for p in tmp_path.iterdir())
    r = subprocess.run([sys.executable, "-c", WITHOUT_RECORDS_EXTRA, *args], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    line = one_line(r.stderr)
    assert r.returncode == 2 and "pip install 'usd-repair-verifier[records]'" in line, r.stderr
    assert "records extra" in line and "ModuleNotFoundError" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == before            # no store, no report folder


def test_ingest_of_a_folder_that_is_not_there_creates_no_store(tmp_path):
    r = usdgrade("records", "ingest", str(tmp_path / "jbos"), "--db", str(tmp_path / "S.sqlite"), cwd=tmp_path)
    assert r.returncode == 2 and f"{tmp_path / 'jbos'} is not a folder" in one_line(r.stderr), r.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("which", ["case", "submission", "trajectory", "case_is_a_file"])
def test_grade_of_a_path_that_is_not_there_is_a_usage_error_writing_nothing(tmp_path, which):
    case, submission = str(DEMO_CASE), str(DEMO)
    extra = []
    if which == "case":
        case = str(CASES / "ant_two_joint_fault")                  # misspelled
    elif which == "submission":
        submission = str(tmp_path / "submision")
    elif which == "trajectory":
        extra = ["--trajectory", str(tmp_path / "trajectroy.json")]
    else:
        case = str(DEMO_CASE / "profile.json")
    r = usdgrade("grade", submission, "--case", case, "--out", str(tmp_path / "out"), *extra)
    line = one_line(r.stderr)
    assert r.returncode == 2 and ("is not there" in line or "is not a folder" in line), r.stderr
    assert "nothing was graded or written" in line
    assert not (tmp_path / "out").exists()


def test_pytest_checks_keeps_harbors_contract_for_a_broken_case(tmp_path):
    """A case folder that is not there is the verifier's fault under Harbor: an infrastructure error."""
    from usd_repair_verifier.scoring.run import run_grade

    r = run_grade(tmp_path / "no_case", DEMO, tmp_path / "out", timeout=300)
    assert r.exit_code == 3 and r.grade["status"] == "infrastructure_error"
    assert r.reward == {"authored_usd": 0.0}


def test_task_check_of_a_folder_that_is_not_there_says_so(tmp_path):
    r = usdgrade("task", "--check", str(tmp_path / "tsak"), cwd=tmp_path)
    line = one_line(r.stderr)
    assert r.returncode == 2 and "is not there" in line and "NOT sound" not in r.stdout + r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("faults", [["joint_frame:/Cabinet/Joints/DoorHinge"] * 2,
                                    ["broken_asset_path", "broken_asset_path:*"]])
def test_inject_refuses_the_same_fault_twice(tmp_path, faults):
    r = usdgrade("inject", "--reference", str(CABINET), *(f"--fault={f}" for f in faults), "--out",
                 str(tmp_path / "broken"))
    line = one_line(r.stderr)
    assert r.returncode == 2 and "is given twice" in line, r.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_doctor_expects_a_cases_own_reward_not_the_demos(tmp_path):
    """The demo's 0.5 is the demo's: a case's reference must grade 1.0, another submission has no
    expected reward (its reward is reported)."""
    from usd_repair_verifier.commands.doctor import expected_reward

    assert expected_reward(CASE, CASE / "reference", None) == 1.0
    assert expected_reward(CASE, CASE / "input", None) == 0.0
    assert expected_reward(CASE, DEMO, None) is None and expected_reward(CASE, DEMO, 0.25) == 0.25
    assert expected_reward(DEMO_CASE, DEMO, None) == 0.5
    r = usdgrade("doctor", "--case", str(CASE), "--submission", str(CASE / "reference"), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{CASE.name}: reward 1.0 as expected" in r.stdout
    r = usdgrade("doctor", "--case", str(CASE), "--submission", str(DEMO_CASE / "input"), cwd=tmp_path)
    assert f"{CASE.name}: reward 0.0 (" in r.stdout and "no expected reward" in r.stdout, r.stdout
    assert list(tmp_path.iterdir()) == []
