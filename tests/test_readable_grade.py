"""The terminal summary and `usdgrade explain`: what did not run says so, the cap is named only
when it applied, and `pytest checks` without a case fails instead of looking like a pass."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from usd_repair_verifier.profiles.result_record import CheckResult, GateResult
from usd_repair_verifier.profiles.case import load_case
from usd_repair_verifier.scoring import grade_file
from usd_repair_verifier.scoring.grade_file import Grade
from usd_repair_verifier.scoring.readable import explain_lines, summary_lines
from usd_repair_verifier.scoring.reward import NO_RESULTS, Expected, Status, TestRecord, TestResults
from usd_repair_verifier.scoring.reward import decide as decide_results
from tests.grade_in_process import grade_warm

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "fixtures" / "cases" / "ant_two_joint_faults"
DEMO = ROOT / "fixtures" / "submissions" / "ant_two_joint_faults_one_repair"


def pytest_run(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=cwd, capture_output=True, text=True, env=env)


def record(kind: str, name: str, passed: bool, progress: float | None = None) -> TestRecord:
    result = (GateResult.of(name, passed, "why") if kind != "check" else
              CheckResult(check=name, family="joint", measure="frame", target="/j", passed=passed, progress=progress))
    return TestRecord(f"{kind}::{name}", "passed" if passed else "failed", kind, name, result)


def decide(records, expected):
    return decide_results(TestResults.of(records), expected)


EXPECTED = Expected({"check": ("c1", "c2"), "validity": ("v",), "preservation": ("p",), "objective": ("all_joints",)})


def graded(checks: tuple[tuple[bool, float], ...]) -> list[TestRecord]:
    return [record("check", f"c{i + 1}", ok, progress) for i, (ok, progress) in enumerate(checks)] + [
        record("validity", "v", True), record("preservation", "p", True), record("objective", "all_joints", False)]


def test_objective_failure_below_the_cap_is_not_called_capped():
    d = decide(graded(((True, 1.0), (False, 0.0))), EXPECTED)
    assert d.status is Status.GRADED and d.authored_usd == 0.5
    assert d.reasons and all("capped" not in r and "cap 0.99 not reached" in r for r in d.reasons), d.reasons


def test_objective_failure_above_the_cap_says_capped():
    # Both checks pass but the objective gate fails: R = 1.0 is cut to 0.99.
    d = decide(graded(((True, 1.0), (True, 1.0))), EXPECTED)
    assert d.authored_usd == 0.99
    assert d.reasons and all(r.startswith("capped at 0.99") for r in d.reasons), d.reasons


def _written_grade(out: Path) -> Grade:
    """OUT/grade.json, read through its model (what the published JSON Schema describes)."""
    return Grade.model_validate_json((out / "grade.json").read_text())


@pytest.fixture(scope="module")
def demo_grade(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("demo")
    r = grade_warm(CASE, DEMO, out)   # the session of `pytest checks ... -q`, in this process
    assert r.exit_code == 0, r.stdout[-2000:]
    assert "usdgrade" in r.stdout
    return {"grade": _written_grade(out), "stdout": r.stdout}


@pytest.fixture(scope="module")
def partial_grade(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("partial")
    r = pytest_run("checks", "--case", str(CASE), "--submission", str(DEMO), "--out", str(out), "-q", "-k", "f1")
    return {"grade": _written_grade(out), "stdout": r.stdout}


def test_objective_met_names_no_cap():
    d = decide(graded(((True, 1.0), (True, 1.0)))[:-1] + [record("objective", "all_joints", True)], EXPECTED)
    assert d.status is Status.GRADED and d.authored_usd == 1.0
    assert not any("cap" in r or "objective not met" in r for r in d.reasons), d.reasons


def test_demo_summary_says_the_cap_was_not_reached(demo_grade):
    out = demo_grade["stdout"]
    assert "capped" not in out
    assert "objective not met (R 0.5000, cap 0.99 not reached)" in out


def test_the_readmes_sample_summary_is_what_the_demo_prints(demo_grade):
    """The Quick start shows the demo's summary abridged: each of its lines (a wrapped line joined,
    `...` standing for what it leaves out) is printed by the demo, in that order."""
    import re

    readme = (ROOT / "README.md").read_text()
    sample = re.search(r"(?ms)^```\n(status graded.*?)^```", readme).group(1)
    lines = []
    for line in sample.splitlines():
        if line.startswith("    ") and lines:
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    printed = demo_grade["stdout"][demo_grade["stdout"].index("= usdgrade ="):].splitlines()
    for line in lines:
        line = line.replace(".../out/demo/", "...")       # this grade's OUT is a folder of the test's
        pattern = re.compile(".*?".join(re.escape(part) for part in line.split("...")).replace(r"\ ", " ") + "$")
        found = next((i for i, said in enumerate(printed) if pattern.match(said)), None)
        assert found is not None, f"README shows {line!r}; the demo printed:\n" + "\n".join(printed)
        printed = printed[found + 1:]


def test_partial_summary_says_what_did_not_run(partial_grade):
    grade, out = partial_grade["grade"], partial_grade["stdout"]
    assert grade.status == "partial"
    summary = out[out.index("= usdgrade ="):]
    assert "all 0 pass" not in summary and "F 0.0000" not in summary
    for kind in ("validity", "preservation", "objective"):
        assert f"{kind:<13} not run" in summary
    assert "1 of 2 not run" in summary


def test_explain_of_a_partial_run_computes_no_reward_and_fails_no_unrun_check(partial_grade):
    text = "\n".join(explain_lines(partial_grade["grade"]))
    assert "R = " not in text and "no F, S or reward was computed" in text
    assert "failing checks" not in text            # f2 never ran: it is not failing
    assert "checks not run: f2-joint.range" in text
    assert "passing checks: f1-joint.frame" in text


def test_infrastructure_error_summary_says_nothing_ran():
    decision = decide_results(NO_RESULTS, Expected({}), "case digest mismatch")
    grade = grade_file.build(decision, NO_RESULTS, grade_file.GradeInputs(load_case(CASE), DEMO), 1.0)
    assert [c.details for c in grade.checks] == ["not run", "not run"]
    summary = "\n".join(summary_lines(grade))
    assert "all 0 pass" not in summary and "not run" in summary and "case digest mismatch" in summary
    text = "\n".join(explain_lines(grade))
    assert "R = " not in text and "failing checks" not in text and "not a score" in text


# A check that raises instead of measuring: the grade is an infrastructure error, and the check
# that raised left no measurement.
RAISING_CHECK_PLUGIN = """
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    if "test_fault_check" in item.nodeid and "f2-joint.range" in item.nodeid:
        raise RuntimeError("the range check blew up")
"""


@pytest.fixture(scope="module")
def raised_grade(tmp_path_factory) -> dict:
    plugins = tmp_path_factory.mktemp("plugins")
    (plugins / "usdgrade_raising_check.py").write_text(RAISING_CHECK_PLUGIN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path_factory.mktemp("raised")
    r = pytest_run("-p", "usdgrade_raising_check", "checks", "--case", str(CASE), "--submission", str(DEMO),
                   "--out", str(out), "-q", env=env)
    assert r.returncode == 3, r.stdout[-2000:] + r.stderr[-2000:]
    return {"grade": _written_grade(out), "stdout": r.stdout}


def test_infrastructure_error_run_says_which_check_did_not_run(raised_grade):
    grade, out = raised_grade["grade"], raised_grade["stdout"]
    assert grade.status == "infrastructure_error" and "blew up" in grade.infrastructure_error
    summary = out[out.index("= usdgrade ="):]
    assert "no F or S (infrastructure error)" in summary and "F 0.0000" not in summary
    assert "checks        1 of 2 not run: no reward" in summary
    text = "\n".join(explain_lines(grade))
    assert "R = " not in text and "no F, S or reward was computed" in text and "not a score" in text
    assert "checks not run: f2-joint.range" in text
    assert "failing checks" not in text and "unmeasured" not in text   # it raised: it measured nothing
    assert "passing checks: f1-joint.frame" in text


def test_explain_of_the_demo_keeps_the_arithmetic(demo_grade):
    text = "\n".join(explain_lines(demo_grade["grade"]))
    assert "R = 0.5 F + 0.5 S = 0.5 x 0.5000 + 0.5 x 0.5000 = 0.5000" in text
    assert "below the cap 0.99" in text and "capped" not in text
    assert "f2-joint.range on /ant/Geometry/torso/front_right_leg/aux_2/Body/ankle_2" in text


@pytest.mark.parametrize("args", [("checks",), ("checks/test_fault_checks.py",), ("gates",)])
def test_pytest_checks_without_a_case_fails_clearly(args):
    r = pytest_run(*args)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout[-1000:] + r.stderr[-1000:]
    assert "grading needs --case CASE --submission DIR --out OUT" in r.stderr
    assert "skipped" not in r.stdout


@pytest.mark.slow
def test_the_verifiers_own_tests_do_not_need_a_case():
    r = pytest_run("tests/test_readable_grade.py", "-q", "-k", "cap_says_capped")
    assert r.returncode == 0, r.stdout[-1000:]


@pytest.mark.parametrize("content", ["[1, 2]", '{"status": 3}', "not json",
                                     '{"status": "graded", "checks": [{"passed": false, "components": [1]}], "gates": {}}'])
@pytest.mark.parametrize("html", [False, True])
def test_explain_of_a_malformed_grade_gives_a_reason_not_a_traceback(content, html, tmp_path):
    path = tmp_path / "grade.json"
    path.write_text(content)
    args = ["explain", str(path)] + (["--html", "--out", str(tmp_path / "page")] if html else [])
    r = subprocess.run([sys.executable, "-m", "usd_repair_verifier.commands.cli", *args], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith("cannot ") and "Traceback" not in r.stderr


# --- units and labels: every number a person reads has its unit -----------------------------------

def test_explain_and_the_summary_show_units_and_the_fault_kind(demo_grade):
    text = "\n".join(explain_lines(demo_grade["grade"]))
    assert "f2-joint.range on /ant/Geometry/torso/front_right_leg/aux_2/Body/ankle_2: fault f2 (joint_limit_units)" in text
    # The limit read as degrees by the schema: both values in degrees, the error and tolerance too.
    assert "travel.lower: 68.7783 deg > 0.5 deg, input 68.7783 deg (reference -70 deg, candidate -1.22173 deg)" in text
    summary = demo_grade["stdout"][demo_grade["stdout"].index("= usdgrade ="):]
    assert "check f2-joint.range (joint_limit_units) on" in summary
    assert "travel.upper: 29.4764 deg > 0.5 deg (reference -30 deg, candidate -0.523599 deg)" in summary


def test_every_component_in_grade_json_carries_its_unit(demo_grade):
    components = [c for check in demo_grade["grade"].checks for c in check.components.values()]
    failures = [f for gate in demo_grade["grade"].preservation.values() for f in gate.failures]
    assert components and all(c.unit for c in components)
    assert all(c.unit for f in failures for c in f.components.values())


def test_a_mass_is_shown_in_kilograms_with_its_ratio(tmp_path):
    case = ROOT / "fixtures" / "cases" / "gripper_hull_and_mass"
    r = grade_warm(case, case / "input", tmp_path / "out")
    assert r.exit_code == 0, r.stdout[-2000:]
    text = "\n".join(explain_lines(_written_grade(tmp_path / "out")))
    line = next(line for line in text.splitlines() if line.strip().startswith("mass:"))
    # A log-ratio of 6.9 means nothing to a reader: the two masses in kg and their ratio.
    assert "kg against the reference's" in line and " kg (x1000;" in line and "tolerance 1%" in line, line


def test_a_grade_written_before_results_were_typed_still_reads(demo_grade, tmp_path):
    """Older grades: gate failures as sentences, no units, no fault kind. They parse, and explain reads them."""
    old = demo_grade["grade"].to_json()
    for check in old["checks"]:
        check.pop("fault_kind")
        for component in check["components"].values():
            component.pop("unit"), component.pop("value_unit")
    for kind in ("validity", "preservation"):
        for gate in old[kind].values():
            gate["failures"] = [f["reason"] for f in gate["failures"]]
    old["preservation"]["joint_count"]["failures"] = ["an old sentence"]
    path = tmp_path / "grade.json"
    path.write_text(json.dumps(old))
    grade = grade_file.read(path.read_text())
    assert grade.preservation["joint_count"].failures[0].reason == "an old sentence"
    r = subprocess.run([sys.executable, "-m", "usd_repair_verifier.commands.cli", "explain", str(path)], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "f2-joint.range on /ant/Geometry/torso/front_right_leg/aux_2/Body/ankle_2: fault f2 (kind not recorded)" in r.stdout
    assert "travel.lower: 68.7783 > 0.5" in r.stdout   # no unit recorded: none invented
