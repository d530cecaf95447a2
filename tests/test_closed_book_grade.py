"""A closed-book case graded end to end with each trajectory outcome.

The demo submission repairs one of the ant case's two faults (reward 0.5). With
the case made closed book: a violating trajectory gives 0 with the violation
listed and 0.5 kept as raw_authored_usd; a clean one gives the plain 0.5; none or a
malformed one gives 0 as closed_book_unverified. Exit code 0 in every case.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from usd_repair_verifier.closed_book import HARBOR_TRAJECTORY
from usd_repair_verifier.profiles.digest import tree_digest
from tests.grade_in_process import grade_warm

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "fixtures" / "cases" / "ant_two_joint_faults"
DEMO = ROOT / "fixtures" / "submissions" / "ant_two_joint_faults_one_repair"
TRAJECTORIES = ROOT / "fixtures" / "trajectories"
SOURCE_URL = "https://github.com/google-deepmind/mujoco_menagerie/tree/main/ant"


def closed_book_case(folder: Path, input_doc: str | None = None) -> Path:
    """A copy of the ant case frozen as closed book (optionally with a doc string in its input)."""
    case = folder / "case"
    shutil.copytree(CASE, case)
    profile = json.loads((case / "profile.json").read_text())
    profile["closed_book"] = True
    if input_doc is not None:
        layer = case / "input" / "ant.usda"
        layer.write_text(layer.read_text().replace("(\n", f'(\n    doc = "{input_doc}"\n', 1))
        profile["input"]["digest"] = tree_digest(case / "input")
    (case / "profile.json").write_text(json.dumps(profile, indent=1))
    return case


def grade(case: Path, out: Path, name: str | None) -> tuple[int, dict, dict | None]:
    """The grading session in this process (tests/grade_in_process.py); `usdgrade grade` below is the command."""
    result = grade_warm(case, DEMO, out, TRAJECTORIES / name / "trajectory.json" if name else None)
    assert result.grade is not None, result.stdout[-3000:] + result.stderr[-3000:]
    return result.exit_code, result.grade, result.reward


@pytest.fixture(scope="module")
def case(tmp_path_factory) -> Path:
    return closed_book_case(tmp_path_factory.mktemp("closed"))


def test_an_assembled_url_and_a_network_client_are_listed_in_a_valid_grade(case, tmp_path):
    code, g, reward = grade(case, tmp_path / "out", "assembled_url_and_list_fetch")
    assert (code, reward, g["status"], g["raw_authored_usd"]) == (0, {"authored_usd": 0.0}, "closed_book_violation", 0.5)
    kinds = [(v["kind"], v["step_id"]) for v in g["network_violations"]]
    assert kinds == [("url", 2), ("network_command", 3)]
    assert "raw.githubusercontent.com" in g["network_violations"][0]["url"]


def test_a_violating_trajectory_zeroes_the_reward_and_keeps_the_measured_one(case, tmp_path):
    code, g, reward = grade(case, tmp_path / "out", "claude_code_webfetch")
    assert code == 0
    assert reward == {"authored_usd": 0.0}
    assert g["status"] == "closed_book_violation" and g["authored_usd"] == 0.0
    assert g["raw_authored_usd"] == 0.5
    assert g["targeted_repair_fraction"] == 0.5 and g["targeted_semantic_score"] == 0.5
    assert g["submission_valid"] is True and g["preservation_pass"] is True
    assert [v["tool"] for v in g["network_violations"]] == ["WebFetch", "WebFetch"]
    first = g["network_violations"][0]
    assert (first["step_id"], first["kind"]) == (2, "web_tool") and "Gymnasium" in first["excerpt"]
    assert g["closed_book"]["required"] is True and g["closed_book"]["status"] == "violation"
    assert g["reasons"][0].startswith("closed_book_violation: reward 0 (measured 0.5000, status graded)")
    assert any(c["passed"] is True for c in g["checks"])  # the measurement is all there


def test_a_clean_trajectory_gives_the_plain_grade(case, tmp_path):
    code, g, reward = grade(case, tmp_path / "out", "codex_clean")
    assert code == 0 and reward == {"authored_usd": 0.5}
    assert g["status"] == "graded" and g["raw_authored_usd"] == 0.5
    assert g["network_violations"] == [] and g["closed_book"]["status"] == "clean"
    assert g["closed_book"]["run"]["agent"] == "codex"


def test_without_a_trajectory_the_case_cannot_be_verified(case, tmp_path):
    # The default location is Harbor's; on this machine nothing may be there, or this test means nothing.
    assert not HARBOR_TRAJECTORY.exists()
    code, g, reward = grade(case, tmp_path / "out", None)
    assert code == 0 and reward == {"authored_usd": 0.0}
    assert g["status"] == "closed_book_unverified" and g["raw_authored_usd"] == 0.5
    assert "no trajectory" in g["closed_book"]["reason"]


def test_a_malformed_trajectory_cannot_be_verified(case, tmp_path):
    code, g, reward = grade(case, tmp_path / "out", "malformed_json")
    assert code == 0 and reward == {"authored_usd": 0.0}
    assert g["status"] == "closed_book_unverified" and "not valid JSON" in g["closed_book"]["reason"]


def test_a_url_from_the_input_package_is_not_a_violation(tmp_path):
    case = closed_book_case(tmp_path, input_doc=f"Converted from {SOURCE_URL} by a converter")
    code, g, _ = grade(case, tmp_path / "allowed", "input_url_allowed")
    assert code == 0 and g["status"] == "graded" and g["authored_usd"] == 0.5, g["closed_book"]
    code, g, _ = grade(case, tmp_path / "fetched", "input_url_fetched")
    assert g["status"] == "closed_book_violation" and g["network_violations"][0]["url"] == SOURCE_URL


def test_an_open_book_case_ignores_the_trajectory(tmp_path):
    code, g, reward = grade(CASE, tmp_path / "out", "claude_code_webfetch")
    assert code == 0 and reward == {"authored_usd": 0.5} and g["status"] == "graded"
    assert g["closed_book"] == {"required": False} and g["network_violations"] == []
    assert g["raw_authored_usd"] == 0.5


@pytest.mark.slow
def test_usdgrade_grade_passes_the_trajectory_and_explain_shows_the_violation_first(case, tmp_path):
    out = tmp_path / "cli"
    command = [sys.executable, "-m", "usd_repair_verifier.commands.cli"]
    r = subprocess.run([*command, "grade", str(DEMO), "--case", str(case), "--out", str(out),
                        "--trajectory", str(TRAJECTORIES / "subagent_embedded_violation" / "trajectory.json")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "CLOSED BOOK VIOLATION" in r.stdout  # the terminal summary says it too
    r = subprocess.run([*command, "explain", str(out / "grade.json")], cwd=ROOT, capture_output=True, text=True)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("CLOSED BOOK VIOLATION: reward 0, the measured reward 0.5000 is kept")
    assert any("WebSearch" in line and "subagent:agent-a1b2" in line for line in lines[:6])
    assert "R = 0.5 F + 0.5 S" in r.stdout and "closed_book_violation: reward 0" in r.stdout


def test_freeze_makes_a_closed_book_case_that_its_self_check_can_grade(tmp_path, monkeypatch):
    # The self-check grades the reference and the input without a trajectory: it must not
    # be refused as unverified, and the case it writes must still be closed book. Its two
    # grades run in this process (the same session as the command's child).
    monkeypatch.setattr("usd_repair_verifier.scoring.run.run_grade",
                        lambda case, submission, out, *args, **kwargs: grade_warm(case, submission, out))
    from usd_repair_verifier.authoring.freeze import freeze
    from usd_repair_verifier.profiles.schema import load_profile

    faults = list(load_profile(CASE / "profile.json").faults)
    profile = freeze("ant_closed", CASE / "reference", CASE / "input", tmp_path / "frozen", faults,
                     closed_book=True, allowed_urls=("https://example.com/instruction",))
    assert profile.closed_book
    frozen = load_profile(tmp_path / "frozen" / "profile.json")
    assert frozen.closed_book is True and frozen.allowed_urls == ("https://example.com/instruction",)
    code, g, _ = grade(tmp_path / "frozen", tmp_path / "out", None)
    assert g["status"] == "closed_book_unverified"
