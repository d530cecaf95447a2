"""Infrastructure errors end to end: `pytest checks --case ... --submission ... --out ...`.

A broken case is graded by the session in this process (tests/grade_in_process.py: the
command's session, exit code and outputs); everything about the command itself (extra
arguments and plugins, -n 2 workers, where OUT may be, stale outputs) is the command in a
child process.

A broken case, a digest mismatch, a crashed worker or a check that
raised instead of measuring is never a score: grade.json says
`infrastructure_error` with the cause, reward.json holds the numeric fallback
{"authored_usd": 0.0}, and the exit code is 3. OUT may not lie inside the
submission (pytest usage error, nothing written there). Outputs are atomic and
stale ones never survive a run.

Every test copies a committed case to tmp_path first: the committed fixtures are
never touched.
"""
from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from usd_repair_verifier.profiles.digest import tree_digest
from usd_repair_verifier.profiles.errors import ExitCode
from usd_repair_verifier.scoring.run import run_grade
from tests.grade_in_process import grade_warm

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
CASE = "hopper_graph_and_state"   # the quickest committed case to grade
FALLBACK = {"authored_usd": 0.0}
TIMEOUT = 300


@pytest.fixture
def case(tmp_path) -> Path:
    dst = tmp_path / "case"
    shutil.copytree(CASES / CASE, dst, symlinks=True)
    return dst


@pytest.fixture
def submission(tmp_path) -> Path:
    """The unchanged broken input, as an agent could hand it back (outside the case folder)."""
    dst = tmp_path / "submission"
    shutil.copytree(CASES / CASE / "input", dst, symlinks=True)
    return dst


def grade(case: Path, submission: Path, out: Path, *args: str, env: dict | None = None):
    return run_grade(case, submission, out, tuple(args), timeout=TIMEOUT, env=env)


def grade_session(case: Path, submission: Path, out: Path):
    """The grading session in this process: for a broken case, the command's grade and exit code."""
    return grade_warm(case, submission, out)


def debug(result) -> str:
    return f"exit {result.exit_code}\n--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-4000:]}"


def assert_only_outputs(out: Path, *names: str) -> None:
    """Atomic writes leave no temporary file behind: OUT holds exactly the named outputs."""
    assert sorted(p.name for p in out.iterdir()) == sorted(names)


def assert_infrastructure_error(result, out: Path, *words: str) -> str:
    assert result.grade is not None, debug(result)
    assert result.exit_code == ExitCode.INFRASTRUCTURE_ERROR, debug(result)
    assert result.grade["status"] == "infrastructure_error", result.grade
    assert result.reward == FALLBACK
    assert json.loads((out / "reward.json").read_text()) == FALLBACK  # exactly that key
    assert result.grade["authored_usd"] == 0.0
    cause = result.grade["infrastructure_error"]
    assert isinstance(cause, str) and cause
    for word in words:
        assert word.lower() in cause.lower(), cause
    assert_only_outputs(out, "grade.json", "reward.json")
    return cause


# --- the case itself is broken ------------------------------------------------------------

@pytest.mark.parametrize("side", ["reference", "input"])
def test_package_changed_after_freezing_is_a_digest_mismatch(case, submission, tmp_path, side):
    profile = json.loads((case / "profile.json").read_text())
    layer = case / side / profile[side]["root_layer"]
    layer.write_text(layer.read_text() + "\n# edited after the case was frozen\n")
    out = tmp_path / "out"
    r = grade_session(case, submission, out)
    cause = assert_infrastructure_error(r, out, "digest", side)
    assert profile[side]["digest"] in cause
    assert not any(c.get("passed") for c in r.grade["checks"])  # nothing was measured


def _bad_json(profile_path: Path) -> str:
    profile_path.write_text(profile_path.read_text()[:-40])
    return "not valid JSON"


def _unknown_fault_kind(profile_path: Path) -> str:
    d = json.loads(profile_path.read_text())
    d["faults"][0]["kind"] = "joint_teleported"
    profile_path.write_text(json.dumps(d))
    return "unknown fault kind 'joint_teleported'"


def _missing_field(profile_path: Path) -> str:
    d = json.loads(profile_path.read_text())
    del d["faults"][1]["target"]
    profile_path.write_text(json.dumps(d))
    return "missing field 'target'"


@pytest.mark.parametrize("breaker", [_bad_json, _unknown_fault_kind, _missing_field],
                         ids=["bad_json", "unknown_fault_kind", "missing_fault_target"])
def test_malformed_profile_is_an_infrastructure_error(case, submission, tmp_path, breaker):
    reason = breaker(case / "profile.json")
    out = tmp_path / "out"
    r = grade_session(case, submission, out)
    assert_infrastructure_error(r, out, "profile", reason)
    assert r.grade["checks"] == []  # no profile, no checks to report


def test_profile_frozen_for_another_scoring_version(case, submission, tmp_path):
    d = json.loads((case / "profile.json").read_text())
    d["scoring_version"] = "0"
    (case / "profile.json").write_text(json.dumps(d))
    out = tmp_path / "out"
    r = grade_session(case, submission, out)
    assert_infrastructure_error(r, out, "scoring version", "re-freeze")


def test_case_without_input_folder(case, submission, tmp_path):
    shutil.rmtree(case / "input")
    out = tmp_path / "out"
    r = grade_session(case, submission, out)
    assert_infrastructure_error(r, out, "missing input")


# --- the verifier breaks while grading ---------------------------------------------------

CRASH_PLUGIN = '''
import os
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    # Only inside an xdist worker: the worker process dies in the middle of a gate test.
    if hasattr(item.config, "workerinput") and item.nodeid.endswith("test_objective[all_joints]"):
        os._exit(1)
'''

RAISE_PLUGIN = '''
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    # Before the check's own body runs: it raises instead of measuring (and records nothing).
    if "test_fault_check" in item.nodeid and "f2-joint.state" in item.nodeid:
        raise RuntimeError("injected verifier fault: the state check blew up")
'''


def plugin(tmp_path: Path, name: str, source: str) -> tuple[tuple[str, ...], dict]:
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(textwrap.dedent(source))
    pythonpath = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return ("-p", name), {"PYTHONPATH": pythonpath}


def _grade_in_workers_with(tmp_path: Path, name: str, source: str):
    """A copy of the case's input graded under `-n 2` with the plugin loaded: (result, out folder)."""
    case = tmp_path / "case"
    shutil.copytree(CASES / CASE, case, symlinks=True)
    args, env = plugin(tmp_path, name, source)
    out = tmp_path / "out"
    return grade(case, case / "input", out, "-n", "2", *args, env=env), out


@pytest.fixture(scope="module")
def crashed_worker_run(tmp_path_factory):
    """One `-n 2` grade in which a worker process dies inside the all_joints gate test."""
    r, out = _grade_in_workers_with(tmp_path_factory.mktemp("crash"), "usdgrade_crash_worker", CRASH_PLUGIN)
    assert "crashed" in (r.stdout + r.stderr).lower(), debug(r)  # the plugin really killed a worker
    return r, out


@pytest.mark.slow
def test_crashed_xdist_worker_is_an_infrastructure_error(crashed_worker_run):
    r, out = crashed_worker_run
    cause = assert_infrastructure_error(r, out)
    assert "all_joints" in cause


@pytest.mark.slow
def test_crashed_xdist_worker_cause_names_the_crash(crashed_worker_run):
    r, out = crashed_worker_run
    cause = r.grade["infrastructure_error"]
    assert "crashed" in cause.lower(), cause
    assert "linux -- python" not in cause.lower(), cause


@pytest.mark.slow
def test_check_that_raises_instead_of_measuring(case, submission, tmp_path):
    args, env = plugin(tmp_path, "usdgrade_raise_check", RAISE_PLUGIN)
    out = tmp_path / "out"
    r = grade(case, submission, out, *args, env=env)
    cause = assert_infrastructure_error(r, out, "f2-joint.state")
    assert "blew up" in cause or "RuntimeError" in cause, cause


@pytest.fixture(scope="module")
def raised_in_worker_run(tmp_path_factory):
    return _grade_in_workers_with(tmp_path_factory.mktemp("raise"), "usdgrade_raise_check", RAISE_PLUGIN)


@pytest.mark.slow
def test_check_that_raises_in_a_worker(raised_in_worker_run):
    r, out = raised_in_worker_run
    assert_infrastructure_error(r, out, "f2-joint.state")


@pytest.mark.slow
def test_check_that_raises_in_a_worker_cause_names_the_exception(raised_in_worker_run):
    r, out = raised_in_worker_run
    cause = r.grade["infrastructure_error"]
    assert "RuntimeError" in cause and "blew up" in cause, cause


# --- where outputs go ----------------------------------------------------------------------

@pytest.mark.parametrize("where", ["child", "itself", "symlink"])
def test_out_inside_the_submission_is_a_usage_error(case, submission, tmp_path, where):
    before = tree_digest(submission)
    listing = sorted(str(p.relative_to(submission)) for p in submission.rglob("*"))
    if where == "child":
        out = submission / "out"
    elif where == "itself":
        out = submission
    else:
        link = tmp_path / "link"
        link.symlink_to(submission, target_is_directory=True)
        out = link / "out"
    r = grade(case, submission, out)
    assert r.exit_code == ExitCode.PYTEST_USAGE, debug(r)
    assert "inside the submission" in r.stderr + r.stdout, debug(r)
    assert sorted(str(p.relative_to(submission)) for p in submission.rglob("*")) == listing
    assert tree_digest(submission) == before


def test_stale_outputs_are_replaced_by_an_infrastructure_error_run(case, submission, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "grade.json").write_text(json.dumps({"status": "graded", "authored_usd": 1.0}))
    (out / "reward.json").write_text(json.dumps({"authored_usd": 1.0}))
    layer = next((case / "reference").glob("*.usda"))
    layer.write_text(layer.read_text() + "\n")
    r = grade(case, submission, out)
    assert_infrastructure_error(r, out, "digest")
    assert r.grade["status"] == "infrastructure_error"


def test_stale_outputs_are_removed_when_the_run_writes_no_reward(case, tmp_path):
    # A partial run writes no reward: a stale one must not survive to be read as this run's.
    out = tmp_path / "out"
    out.mkdir()
    (out / "grade.json").write_text(json.dumps({"status": "graded", "authored_usd": 1.0}))
    (out / "reward.json").write_text(json.dumps({"authored_usd": 1.0}))
    r = grade(case, case / "reference", out, "-k", "f1")
    assert r.grade is not None, debug(r)
    assert r.grade["status"] == "partial"
    assert_only_outputs(out, "grade.json")


@pytest.mark.slow
def test_full_run_leaves_only_its_two_outputs(case, tmp_path):
    out = tmp_path / "deep" / "out"   # created on demand
    r = grade(case, case / "reference", out, env={"USDGRADE_TEST_MARKER": "1"})
    assert r.exit_code == 0, debug(r)
    assert r.reward == {"authored_usd": 1.0} and r.grade["status"] == "graded"
    assert json.loads((out / "reward.json").read_text()) == {"authored_usd": 1.0}
    assert_only_outputs(out, "grade.json", "reward.json")
