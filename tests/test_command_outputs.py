"""Nothing is destroyed that the command did not write (scoring/outputs.py), command by command.

Every command that writes refuses, with one line and nothing written: an output inside (or equal
to) one of its inputs, an input inside the output it would replace, an output inside the
verifier's own code, and an existing folder it did not write. A folder it wrote itself is
replaced only with --force. The grade (and the separate grades) write named files into OUT and
remove only those. Read-only commands create nothing.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests import command_runner
from usd_repair_verifier.commands.cli import main
from usd_repair_verifier.profiles.digest import tree_digest
from usd_repair_verifier.scoring import outputs
from usd_repair_verifier.scoring.run import run_grade

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
CASE = CASES / "hopper_graph_and_state"          # the quickest committed case to grade
DEMO_CASE = CASES / "ant_two_joint_faults"
DEMO = ROOT / "fixtures" / "submissions" / "ant_two_joint_faults_one_repair"
CABINET = ROOT / "fixtures" / "assets" / "cabinet_cm"
HINGE = "joint_frame:/Cabinet/Joints/DoorHinge"
JOB = ROOT / "fixtures" / "harbor_jobs" / "repair-bench-fixture"


def usdgrade(*args: str, cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess:
    return command_runner.usdgrade(*args, cwd=cwd, timeout=timeout)


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


@pytest.fixture
def foreign(tmp_path) -> Path:
    """A folder of somebody else's: it must survive every command pointed at it."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("not the verifier's")
    return folder


def test_the_packages_the_rule_protects_are_the_verifiers_packages():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    mapped = {name.split(".")[1] for name in config["tool"]["setuptools"]["package-dir"]}
    assert set(outputs.SOURCE_PACKAGES) == mapped
    assert ROOT / "regrade" in outputs.verifier_code() and ROOT / "usd_repair_verifier" in outputs.verifier_code()
    assert ROOT / "out" not in outputs.verifier_code()   # the quick start's out/demo is not code


# --- the grade: OUT never inside the case, the submission or the verifier ---------------------

@pytest.mark.parametrize("where", ["case_reference", "case", "verifier"])
def test_pytest_checks_refuses_an_out_that_would_corrupt_the_case_or_the_verifier(tmp_path, where):
    case = tmp_path / "case"
    shutil.copytree(CASE, case)
    before = tree_digest(case)
    out = {"case_reference": case / "reference" / "out", "case": case, "verifier": ROOT / "scoring" / "out"}[where]
    r = run_grade(case, case / "input", out, timeout=300)
    assert r.exit_code == 4, r.stdout[-2000:] + r.stderr[-2000:]
    assert "choose an output folder outside it" in r.stderr + r.stdout
    assert tree_digest(case) == before and not (case / "reference" / "out").exists()
    assert not (ROOT / "scoring" / "out").exists()


def test_usdgrade_grade_refuses_out_inside_the_case_and_a_trajectory_among_its_outputs(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(CASE, case)
    before = tree_digest(case)
    r = usdgrade("grade", str(case / "input"), "--case", str(case), "--out", str(case / "reference" / "out"))
    assert r.returncode == 4 and "lies inside the case" in r.stderr, r.stderr
    assert tree_digest(case) == before
    out = tmp_path / "out"
    out.mkdir()
    (out / "grade.json").write_text("{}")
    r = usdgrade("grade", str(case / "input"), "--case", str(case), "--out", str(out),
                 "--trajectory", str(out / "grade.json"))
    assert r.returncode == 4 and "trajectory" in r.stderr and "would be removed" in r.stderr, r.stderr


@pytest.mark.slow
def test_the_grade_keeps_what_else_its_out_holds(tmp_path):
    """Harbor's /logs/verifier holds its own log beside the grade: only reward.json and grade.json go."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "test-stdout.txt").write_text("harbor's log")
    (out / "reward.json").write_text('{"authored_usd": 1.0}')   # stale, or planted: replaced
    r = run_grade(CASE, CASE / "input", out, timeout=300)
    assert r.exit_code == 0
    assert (out / "test-stdout.txt").read_text() == "harbor's log"
    assert json.loads((out / "reward.json").read_text()) == {"authored_usd": 0.0}


# --- inject -----------------------------------------------------------------------------------

def test_inject_never_writes_over_or_into_its_reference(tmp_path):
    reference = tmp_path / "ref"
    shutil.copytree(CABINET, reference)
    before = tree_digest(reference)
    for out in (reference, reference / "broken"):
        r = usdgrade("inject", "--reference", str(reference), "--fault", HINGE, "--out", str(out))
        assert r.returncode == 2 and "inside the reference" in one_line(r.stderr), r.stderr
    assert tree_digest(reference) == before and not (reference / "broken").exists()
    assert not (tmp_path / "ref.inject.json").exists()


def test_inject_refuses_a_folder_it_did_not_write_and_replaces_its_own_only_with_force(tmp_path, foreign, capsys):
    args = ["inject", "--reference", str(CABINET), "--fault", HINGE, "--seed", "3"]
    assert main([*args, "--out", str(foreign)]) == 2
    assert "did not write" in one_line(capsys.readouterr().err)
    assert listing(foreign) == ["notes.txt"] and not (tmp_path / "mine.inject.json").exists()

    out = tmp_path / "broken"
    assert main([*args, "--out", str(out)]) == 0
    capsys.readouterr()
    first = tree_digest(out)
    assert main([*args, "--out", str(out)]) == 2
    assert "add --force" in one_line(capsys.readouterr().err)
    assert main([*args, "--seed", "4", "--out", str(out), "--force"]) == 0
    assert tree_digest(out) != first
    assert json.loads((tmp_path / "broken.inject.json").read_text())["seed"] == 4


def test_inject_refuses_a_manifest_it_did_not_write(tmp_path, capsys):
    (tmp_path / "broken.inject.json").write_text("somebody's notes")
    assert main(["inject", "--reference", str(CABINET), "--fault", HINGE, "--out", str(tmp_path / "broken")]) == 2
    assert "did not write" in one_line(capsys.readouterr().err)
    assert (tmp_path / "broken.inject.json").read_text() == "somebody's notes"


# --- freeze -----------------------------------------------------------------------------------

def test_freeze_into_a_folder_of_cases_deletes_nothing(tmp_path):
    cases = tmp_path / "cases"
    for name in ("hopper_graph_and_state", "cabinet_drawer_door"):
        shutil.copytree(CASES / name, cases / name)
    before = tree_digest(cases)
    r = usdgrade("freeze", "--reference", str(CASE / "reference"), "--input", str(CASE / "input"), "--out", str(cases))
    assert r.returncode == 2 and "did not write" in one_line(r.stderr), r.stderr
    assert tree_digest(cases) == before


@pytest.mark.slow
def test_freeze_refuses_its_inputs_and_replaces_its_own_case_only_with_force(tmp_path, capsys):
    reference, input_ = tmp_path / "reference", tmp_path / "input"
    shutil.copytree(CASE / "reference", reference)
    shutil.copytree(CASE / "input", input_)
    for out in (input_, input_ / "case", tmp_path):        # the input itself, inside it, around it
        assert main(["freeze", "--reference", str(reference), "--input", str(input_), "--out", str(out)]) == 2
        assert "input" in one_line(capsys.readouterr().err)
    case = tmp_path / "case"
    shutil.copytree(CASE, case)        # a case as freeze writes it: profile.json, reference/, input/
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps(json.loads((CASE / "profile.json").read_text())["faults"]))
    args = ["freeze", "--reference", str(reference), "--input", str(input_), "--faults", str(faults), "--out", str(case)]
    assert main(args) == 2
    assert "add --force" in one_line(capsys.readouterr().err)
    (case / "mine.txt").write_text("added by a person")
    assert main([*args, "--force"]) == 2
    assert "did not write" in one_line(capsys.readouterr().err)
    (case / "mine.txt").unlink()
    assert main([*args, "--force", "--id", "refrozen"]) == 0
    assert json.loads((case / "profile.json").read_text())["id"] == "refrozen"


# --- task, regrade, records report, explain --html, visual, physical ----------------------------

def test_task_refuses_its_case_and_replaces_its_own_task_only_with_force(tmp_path, foreign, capsys):
    case = tmp_path / "case"
    shutil.copytree(CASES / "cabinet_drawer_door", case)
    assert main(["task", str(case), "--out", str(case / "task")]) == 2
    assert "inside the case" in one_line(capsys.readouterr().err)
    assert main(["task", str(case), "--out", str(foreign)]) == 2
    assert listing(foreign) == ["notes.txt"]
    capsys.readouterr()
    out = tmp_path / "task"
    assert main(["task", str(case), "--out", str(out)]) == 0
    assert main(["task", str(case), "--out", str(out)]) == 2
    assert "add --force" in capsys.readouterr().err
    assert main(["task", str(case), "--out", str(out), "--force"]) == 0


def test_regrade_default_output_never_lands_in_the_verifiers_code(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    r = usdgrade("regrade", str(job), "--cases", str(CASES), "--no-progress", cwd=ROOT / "regrade")
    assert r.returncode == 2 and "verifier's own code" in one_line(r.stderr), r.stderr
    assert not (ROOT / "regrade" / "regrade-out").exists() and not (ROOT / "regrade" / "regrade").exists()
    r = usdgrade("regrade", str(job), "--cases", str(CASES), "--no-progress", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "regrade-out").exists()     # nothing to grade, nothing written


def test_regrade_refuses_a_foreign_out_and_one_inside_a_job(tmp_path, foreign):
    job = tmp_path / "job"
    shutil.copytree(JOB / "ant_two_joint_faults__0ac0d16", job / "trial")
    for out in (foreign, job / "regraded"):
        r = usdgrade("regrade", str(job), "--cases", str(CASES), "--out", str(out), "--no-progress")
        assert r.returncode == 2, r.stderr
    assert listing(foreign) == ["notes.txt"] and not (job / "regraded").exists()


@pytest.mark.slow
def test_records_report_replaces_only_its_own_report_and_never_the_store(tmp_path, foreign, capsys):
    db = tmp_path / "store" / "records.sqlite"
    db.parent.mkdir()
    assert main(["records", "ingest", str(JOB), "--db", str(db)]) == 0
    for out in (foreign, db.parent):
        assert main(["records", "report", "--db", str(db), "--out", str(out)]) == 2
    capsys.readouterr()
    assert listing(foreign) == ["notes.txt"] and db.is_file()
    out = tmp_path / "report"
    assert main(["records", "report", "--db", str(db), "--out", str(out)]) == 0
    assert main(["records", "report", "--db", str(db), "--out", str(out)]) == 2
    assert "add --force" in capsys.readouterr().err
    assert main(["records", "report", "--db", str(db), "--out", str(out), "--force"]) == 0
    assert (out / "report.html").is_file() and outputs.marked_by(out) == "records report"


def test_records_ingest_never_puts_its_store_inside_a_job_or_the_verifier(tmp_path):
    job = tmp_path / "job"
    shutil.copytree(JOB / "ant_two_joint_faults__0ac0d16", job / "trial")
    before = tree_digest(job)
    for db, cwd in ((job / "trial" / "records.sqlite", tmp_path), (job / "records.sqlite", tmp_path), (None, ROOT / "regrade")):
        r = usdgrade("records", "ingest", str(job), *(["--db", str(db)] if db else []), cwd=cwd)
        assert r.returncode == 2 and "choose a store outside it" in one_line(r.stderr), r.stderr
    assert tree_digest(job) == before and not (ROOT / "regrade" / "records.sqlite").exists()


def test_explain_html_writes_its_own_folder_and_explain_alone_writes_nothing(tmp_path, foreign, capsys):
    grade = tmp_path / "grades" / "grade.json"
    grade.parent.mkdir()
    shutil.copyfile(ROOT / "fixtures" / "harbor_jobs" / "plain_grades" / "ant_demo" / "grade.json", grade)
    assert main(["explain", str(grade)]) == 0
    assert listing(grade.parent) == ["grade.json"]
    assert main(["explain", str(grade), "--html", "--out", str(foreign)]) == 2
    assert listing(foreign) == ["notes.txt"]
    assert main(["explain", str(grade), "--html"]) == 0
    assert main(["explain", str(grade), "--html"]) == 2
    assert "add --force" in capsys.readouterr().err
    assert main(["explain", str(grade), "--html", "--force"]) == 0
    assert (grade.parent / "explain" / "index.html").is_file()


@pytest.mark.parametrize("command", ["visual", "physical"])
def test_separate_grades_never_write_into_the_case(tmp_path, command, capsys):
    case = tmp_path / "case"
    shutil.copytree(DEMO_CASE, case)
    before = tree_digest(case)
    args = [command, "--case", str(case), "--submission", str(DEMO), "--out", str(case / "reference" / "out")]
    if command == "visual":
        args += ["--grade", str(ROOT / "fixtures" / "harbor_jobs" / "plain_grades" / "ant_demo" / "grade.json"),
                 "--judge", "fake"]
    assert main(args) == 2
    assert "lies inside the case" in capsys.readouterr().err
    assert tree_digest(case) == before


def test_read_only_commands_create_nothing(tmp_path):
    reference = tmp_path / "ref"
    shutil.copytree(CABINET, reference)
    before = tree_digest(reference)
    work = tmp_path / "cwd"
    work.mkdir()
    for args in (["--version"], ["--help"], ["inject", "--list"], ["inject", "--targets", str(reference)],
                 ["explain", str(ROOT / "fixtures" / "harbor_jobs" / "plain_grades" / "ant_demo" / "grade.json")]):
        r = usdgrade(*args, cwd=work)
        assert r.returncode == 0, (args, r.stderr)
    assert listing(work) == [] and tree_digest(reference) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwd", "ref"]


@pytest.mark.slow
def test_regrade_of_a_job_checks_each_stored_submission_against_its_earlier_grade(tmp_path):
    """A stored submission that changed since it was graded is not the one the agent left: it is
    skipped with the reason, never re-graded as if it were (as --db mode does)."""
    job = tmp_path / "job"
    for trial in ("ant_two_joint_faults__0ac0d16", "ant_two_joint_faults__142af18"):
        shutil.copytree(JOB / trial, job / trial)
    layer = next((job / "ant_two_joint_faults__142af18" / "artifacts" / "app").glob("*.usda"))
    layer.write_text(layer.read_text() + "\n# edited after grading\n")
    r = usdgrade("regrade", str(job), "--cases", str(CASES), "--out", str(tmp_path / "out"), "-j", "1", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "1 to grade" in r.stderr and "1 cannot be graded" in r.stderr
    assert "ant_two_joint_faults__142af18: the submission" in r.stderr and "changed since it was graded" in r.stderr
    graded = sorted(p.parent.name for p in (tmp_path / "out").rglob("grade.json"))
    assert graded == ["ant_two_joint_faults__0ac0d16"]
    assert outputs.marked_by(tmp_path / "out") == "regrade"


def test_an_out_that_is_a_file_is_a_usage_error_not_an_internal_error(tmp_path):
    out = tmp_path / "notes.txt"
    out.write_text("mine")
    r = run_grade(CASE, CASE / "input", out, timeout=300)
    assert r.exit_code == 4 and "exists and is not a folder" in r.stdout + r.stderr
    assert "INTERNALERROR" not in r.stdout + r.stderr and out.read_text() == "mine"


# --- modes: what is written follows the user's umask (the sealed test.sh sets its own) -------------

@pytest.mark.parametrize("mask, file_mode, folder_mode", [(0o022, 0o644, 0o755), (0o002, 0o664, 0o775),
                                                          (0o077, 0o600, 0o700)])
def test_outputs_follow_the_umask(tmp_path, mask, file_mode, folder_mode):
    import os
    import stat

    old = os.umask(mask)
    try:
        assert outputs.current_umask() == mask
        outputs.write_json(tmp_path / "out" / "grade.json", {"a": 1})
        staging = outputs.staging_folder(tmp_path / "report")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out" / "grade.json").stat().st_mode) == file_mode
    assert stat.S_IMODE(staging.stat().st_mode) == folder_mode


@pytest.mark.slow
def test_a_grade_and_a_page_are_readable_by_the_team_under_umask_022(tmp_path):
    """`usdgrade grade` and `usdgrade explain --html` with the common umask: files 0644, folders 0755
    (tempfile's private modes were 0600 and 0700 whatever the umask)."""
    import os
    import stat

    def command(*args):
        return subprocess.run([sys.executable, "-m", "usd_repair_verifier.commands.cli", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300, preexec_fn=lambda: os.umask(0o022))

    out = tmp_path / "out"
    assert command("grade", str(CASE / "reference"), "--case", str(CASE), "--out", str(out)).returncode == 0
    assert command("explain", str(out / "grade.json"), "--html", "--out", str(tmp_path / "page")).returncode == 0
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (out / "grade.json", out / "reward.json",
                                                            tmp_path / "page", tmp_path / "page" / "index.html")}
    assert modes == {"grade.json": 0o644, "reward.json": 0o644, "page": 0o755, "index.html": 0o644}


def test_the_warp_kernel_cache_defaults_to_the_users_cache_folder(monkeypatch, tmp_path):
    from usd_repair_verifier.physical.grade import default_kernel_cache

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert default_kernel_cache() == Path.home() / ".cache" / "usd-repair-verifier" / "warp"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_kernel_cache() == tmp_path / "usd-repair-verifier" / "warp"
    assert not any(outputs.inside(default_kernel_cache(), folder) for folder in (ROOT, *outputs.verifier_code()))
