"""Records against folders, files and command lines made to break them: names that are not UTF-8,
numbers no database stores, trial ids that clash, folders whose kind depends on how they are
reached, re-grade output, an empty store, a missing store, a closed pipe. Store tests run on
SQLite and on a real PostgreSQL server (the fixtures of tests/test_records.py).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sa = pytest.importorskip("sqlalchemy", reason="the records extra (SQLAlchemy) is not installed")

from tests import command_runner
from usd_repair_verifier.records import schema  # noqa: E402
from usd_repair_verifier.records.ingest import ingest  # noqa: E402
from usd_repair_verifier.records.report import NOTES  # noqa: E402
from usd_repair_verifier.records.results import leaderboard, load_views  # noqa: E402
from usd_repair_verifier.records.store import StoreError  # noqa: E402
from tests.test_records import JOB, PLAIN, postgres, store, store_url  # noqa: E402,F401  (fixtures)

ROOT = Path(__file__).resolve().parent.parent


def _trials(job: Path) -> list[Path]:
    return sorted(p for p in job.iterdir() if p.is_dir())


def _result(trial: Path) -> dict:
    return json.loads((trial / "result.json").read_text())


def _copy_job(tmp_path: Path, name: str = "job") -> Path:
    job = tmp_path / name
    shutil.copytree(JOB, job)
    return job


# -- names and values no database can hold ----------------------------------------------------------

def test_a_trial_folder_whose_name_is_not_utf8_is_skipped_with_the_reason(store, tmp_path):
    job = _copy_job(tmp_path)
    first = _trials(job)[0]
    odd = Path(os.fsdecode(bytes(job) + b"/trial-\xff\xfe"))
    first.rename(odd)
    plain = Path(os.fsdecode(bytes(tmp_path) + b"/grade-\xe9"))
    shutil.copytree(PLAIN / "ant_demo", plain)
    report = ingest(store, [job, plain])
    skipped = dict(report.skipped)
    assert skipped[os.fsencode(odd).decode("utf-8", "backslashreplace")].startswith("its path is not valid UTF-8")
    assert "grade-\\xe9" in " ".join(skipped)
    assert store.counts()["episodes"] == 26
    "\n".join(report.lines()).encode("utf-8")                           # every line can be printed


@pytest.mark.parametrize("where, text", [
    ("grade", '"authored_usd": 1e999'),
    ("grade", '"authored_usd": -1e999'),
    ("grade", '"authored_usd": 1E400'),
    ("grade", '"note": "graded\\udc80"'),
    ("grade", '"\\ud800key": 1'),
    ("visual", '"score": 1e999'),
    ("result", '"cost_usd": 1e999'),
])
def test_a_number_or_string_no_database_stores_is_never_stored(store, tmp_path, where, text):
    job = _copy_job(tmp_path)
    trial = _trials(job)[0]
    path = {"grade": trial / "verifier" / "grade.json", "visual": trial / "verifier" / "visual.json",
            "result": trial / "result.json"}[where]
    original = path.read_text() if path.exists() else '{"record_version": "1"}'
    path.write_text(original.replace("{", "{" + text + ", ", 1))
    report = ingest(store, [job])
    said = " ".join(why for _, why in report.skipped + report.notes)
    assert "cannot be stored" in said or "not finite" in said, said
    for table in (schema.grades, schema.visual, schema.episodes):
        for row in store.rows(table):
            dumped = json.dumps(row, default=str, allow_nan=False)      # raises on NaN or Infinity
            assert "\\udc80" not in dumped and "\\ud800" not in dumped


def test_the_api_refuses_non_finite_numbers_at_any_depth(store):
    ingest(store, [JOB])
    eid = _result(_trials(JOB)[0])["id"]
    with pytest.raises(StoreError, match="not finite"):
        store.upsert_grade(eid, {"scoring_version": "1", "verifier_version": "9", "checks": [{"progress": float("inf")}]})
    with pytest.raises(StoreError, match="not valid Unicode"):
        store.upsert_separate("visual", eid, {"verifier_version": "9", "reason": "\udc80"})


# -- one trial id, two trials -----------------------------------------------------------------------

def _clashing_jobs(tmp_path: Path) -> tuple[Path, Path, str, str, str]:
    """Job A: a trial graded 0.6. Job B: another trial (other name, task, start) under the same id, no grade."""
    job_a, job_b = _copy_job(tmp_path, "job_a"), _copy_job(tmp_path, "job_b")
    graded = next(t for t in _trials(job_a) if (t / "verifier" / "grade.json").is_file()
                  and json.loads((t / "verifier" / "grade.json").read_text()).get("authored_usd") == 0.6)
    trial_id = _result(graded)["id"]
    other = next(t for t in _trials(job_b) if _result(t)["task_name"] != _result(graded)["task_name"])
    result = _result(other)
    result["id"] = trial_id
    (other / "result.json").write_text(json.dumps(result))
    shutil.rmtree(other / "verifier")
    for trial in _trials(job_b):                       # job B holds only that trial
        if trial != other:
            shutil.rmtree(trial)
    return job_a, job_b, trial_id, graded.name, other.name


@pytest.mark.parametrize("order", ["graded first", "ungraded first"])
def test_a_reward_stays_with_the_trial_that_was_graded_and_a_clash_is_said(store, tmp_path, order):
    job_a, job_b, trial_id, graded, other = _clashing_jobs(tmp_path)
    folders = [job_a, job_b] if order == "graded first" else [job_b, job_a]
    report = ingest(store, folders)
    assert len(report.clashes) == 1 and trial_id in report.clashes[0][1]
    assert any(line.startswith("CLASH ") for line in report.lines())
    episode = store.get_episode(trial_id)
    grades = store.grades(trial_id)
    if order == "graded first":
        assert episode.trial_name == graded and [g["authored_usd"] for g in grades] == [0.6]
    else:                                              # the ungraded trial keeps its id: and no reward
        assert episode.trial_name == other and grades == []


def test_the_same_trial_found_twice_is_no_clash(store, tmp_path):
    job = _copy_job(tmp_path)
    report = ingest(store, [job, JOB, job / _trials(job)[0].name])
    assert report.clashes == [] and store.counts()["episodes"] == 27


def test_a_clash_exits_1_with_the_line(tmp_path, capsys):
    from usd_repair_verifier.commands.cli import main

    job_a, job_b, trial_id, _, _ = _clashing_jobs(tmp_path)
    assert main(["records", "ingest", str(job_a), str(job_b), "--db", str(tmp_path / "r.sqlite")]) == 1
    captured = capsys.readouterr()
    assert f"trial id {trial_id!r} is already stored for another trial" in captured.out
    assert "1 trial(s) not stored" in captured.err


# -- a folder is what it holds, however it is reached -----------------------------------------------

def _layout(root: Path, name: str) -> Path:
    """A folder whose kind used to depend on how it was reached."""
    folder = root / name
    if name == "broken_result":                       # a trial whose result.json is not a trial result
        shutil.copytree(_trials(JOB)[0], folder)
        (folder / "result.json").write_text("[1, 2]")
    elif name == "planted":                           # no result.json; the agent's artifacts hold a grade
        shutil.copytree(_trials(JOB)[1], folder)
        (folder / "result.json").unlink()
        (folder / "artifacts" / "app").mkdir(parents=True, exist_ok=True)   # beside the stored submission
        shutil.copy(PLAIN / "ant_demo" / "grade.json", folder / "artifacts" / "app" / "grade.json")
    else:
        shutil.copytree(PLAIN / "ant_demo", folder)
    return folder


@pytest.mark.parametrize("name", ["broken_result", "planted", "grade_folder"])
def test_a_folder_gets_the_same_outcome_given_directly_or_found_in_a_job_or_a_folder(request, store_url, tmp_path, name):
    from usd_repair_verifier.records.store import open_store

    outcomes = []
    for how in ("direct", "in a job", "in a folder", "two down"):
        base = tmp_path / how.replace(" ", "_")
        if how == "in a job":
            shutil.copytree(JOB, base)
            for trial in _trials(base):
                shutil.rmtree(trial)
            folder = _layout(base, name)
            given = base
        elif how == "direct":
            base.mkdir()
            folder = given = _layout(base, name)
        else:
            holder = base / "a" if how == "two down" else base
            holder.mkdir(parents=True)
            folder = _layout(holder, name)
            given = base
        label = how.replace(" ", "_")
        if store_url.startswith("sqlite"):
            url = store_url.replace("records.sqlite", f"{label}.sqlite")
        else:                                          # a database of its own on the same server
            url = request.getfixturevalue("postgres").create_database(f"layout_{name}_{label}_{os.getpid()}")
        with open_store(url) as opened:
            report = ingest(opened, [given])
            stored = [(e.source, e.trial_name) for e in opened.iter_episodes()]
        why = dict(report.skipped).get(str(folder))
        outcomes.append((stored, why))
    assert all(o == outcomes[0] for o in outcomes), outcomes
    if name == "grade_folder":
        assert outcomes[0][0] == [("folder", name)]
    else:
        assert outcomes[0] == ([], outcomes[0][1]) and outcomes[0][1]          # skipped, with the reason


# -- re-grade output ---------------------------------------------------------------------------------

def _regrade_output(tmp_path: Path, verifier_version: str, same_bytes: bool = False) -> Path:
    """What `usdgrade regrade JOB` writes: OUT/<version>/<job folder>/<trial folder>/grade.json
    (with `same_bytes`, every trial of a task submitted the same package)."""
    out = tmp_path / "regrade" / f"scoring-1_verifier-{verifier_version}" / JOB.name
    for trial in _trials(JOB):
        grade = trial / "verifier" / "grade.json"
        if grade.is_file():
            (out / trial.name).mkdir(parents=True)
            data = json.loads(grade.read_text())
            data["verifier_version"] = verifier_version
            if same_bytes:
                data["digests"]["candidate"]["digest"] = "sha256:" + data["profile"]["id"]
            (out / trial.name / "grade.json").write_text(json.dumps(data))
    return out.parent


def test_regrade_output_alone_keeps_one_episode_per_trial(store, tmp_path):
    out = _regrade_output(tmp_path, "9.0.0", same_bytes=True)
    report = ingest(store, [out])
    assert report.written["episodes"] == {"inserted": 26} and store.counts()["episodes"] == 26
    # trials that submitted identical bytes stay apart (three packages among 26 trials)
    assert len({e.submission_digest for e in store.iter_episodes()}) == 3
    assert ingest(store, [out]).changed == 0


def test_regrade_output_after_its_job_becomes_the_trials_grades(store, tmp_path):
    ingest(store, [JOB])
    report = ingest(store, [_regrade_output(tmp_path, "9.0.0")])
    harbor_trials = {e.episode_id for e in store.iter_episodes({"source": "harbor"})}
    newer = [g for g in store.rows(schema.grades) if g["verifier_version"] == "9.0.0"]
    attached = [g for g in newer if g["episode_id"] in harbor_trials]
    assert len(newer) == 26 and len(attached) >= 20           # every trial whose grade names its submission
    for g in attached:                                          # each one on the trial whose submission it graded
        episode = store.get_episode(g["episode_id"])
        assert g["candidate_digest"] == episode.submission_digest
    assert store.counts()["episodes"] == 27 + (len(newer) - len(attached))
    assert "episodes" not in report.written or report.written["episodes"].get("inserted", 0) == len(newer) - len(attached)


def test_a_stray_grade_folder_is_on_no_leaderboard_row(store):
    ingest(store, [JOB, PLAIN])
    rows = leaderboard(load_views(store))
    assert "(no model)" not in {r["model"] for r in rows} and sum(r["episodes"] for r in rows) == 27


def test_the_closed_book_column_is_defined():
    from usd_repair_verifier.records.models import LeaderboardRow

    assert any(note.startswith("invalid, preservation failed, closed book zeroed:") for note in NOTES)
    assert "closed_book_violation" in LeaderboardRow.model_fields["closed_book_rate"].description


# -- the commands ------------------------------------------------------------------------------------

def _usdgrade(*argv: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    return command_runner.usdgrade(*argv, cwd=cwd, **kwargs)


@pytest.mark.parametrize("argv", [["records", "show", "x"], ["records", "report", "--out", "rep"]])
def test_reading_commands_create_nothing(tmp_path, argv):
    done = _usdgrade(*argv, cwd=tmp_path)
    assert done.returncode == 2 and "no records store" in done.stderr and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_report_of_an_empty_store_is_refused(tmp_path):
    from usd_repair_verifier.records.store import open_store

    open_store(tmp_path / "r.sqlite").close()                   # a store with its tables and nothing in them
    done = _usdgrade("records", "report", "--db", "r.sqlite", "--out", "rep", cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.strip().startswith("no report written: the store holds no episodes")
    assert not (tmp_path / "rep").exists()


@pytest.mark.slow
def test_show_into_a_closed_pipe_ends_quietly(tmp_path):
    db = tmp_path / "r.sqlite"
    assert _usdgrade("records", "ingest", str(JOB), "--db", str(db), cwd=tmp_path).returncode == 0
    trial = _trials(JOB)[0].name
    read, write = os.pipe()
    os.close(read)                                              # the reader is gone before anything is written
    child = subprocess.run([sys.executable, "-m", "usd_repair_verifier.commands.cli", "records", "show", trial,
                            "--db", str(db)], stdout=write, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    os.close(write)
    assert "BrokenPipeError" not in child.stderr and "Traceback" not in child.stderr, child.stderr
    assert child.returncode == 0
