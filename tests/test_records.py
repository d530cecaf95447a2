"""Episode records: ingest of a Harbor job, the store's API, the report's numbers, hostile folders.

Every store test runs twice: on SQLite and on a real PostgreSQL server started for the session
(tests/postgres_server.py).
"""
from __future__ import annotations

import hashlib
import itertools
import json
import shutil
from pathlib import Path

import pytest

sa = pytest.importorskip("sqlalchemy", reason="the records extra (SQLAlchemy) is not installed")

from usd_repair_verifier.records import schema  # noqa: E402
from usd_repair_verifier.records.ingest import ingest  # noqa: E402
from usd_repair_verifier.records.report import write_report  # noqa: E402
from usd_repair_verifier.records.results import leaderboard, load_views, version_key  # noqa: E402
from usd_repair_verifier.records.stats import bootstrap_mean_ci, mean_pass_at_k, pass_at_k  # noqa: E402
from usd_repair_verifier.records.store import StoreError, open_store, start_key  # noqa: E402
from usd_repair_verifier.profiles.schema import SCORING_VERSION  # noqa: E402
from tests.postgres_server import PostgresServer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "fixtures" / "harbor_jobs" / "repair-bench-fixture"
PLAIN = ROOT / "fixtures" / "harbor_jobs" / "plain_grades"
_database_names = itertools.count()


@pytest.fixture(scope="session")
def postgres():
    server = PostgresServer()
    try:
        yield server.start()
    finally:
        server.stop()


# The inner loop keeps SQLite; the same tests on PostgreSQL run in the full suite.
@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'records.sqlite'}"
    server = request.getfixturevalue("postgres")
    return server.create_database(f"records_{next(_database_names)}")


@pytest.fixture
def store(store_url):
    with open_store(store_url) as opened:
        yield opened


def trial_dir(task: str, model: str, attempt: int) -> Path:
    """The fixture job's trial folder of a (task, model, attempt) by its result.json."""
    matches = []
    for folder in JOB.iterdir():
        if folder.is_dir():
            result = json.loads((folder / "result.json").read_text())
            if result["task_name"] == task and result["agent_info"]["model_info"]["name"] == model:
                matches.append((result["started_at"], folder))
    return sorted(matches)[attempt - 1][1]


def episode_id(task: str, model: str, attempt: int) -> str:
    return json.loads((trial_dir(task, model, attempt) / "result.json").read_text())["id"]


# -- ingest ---------------------------------------------------------------------------------------

@pytest.fixture
def ingested(store):
    """The store after one ingest of the fixture job and the plain grade folder, and the ingest's report."""
    return store, ingest(store, [JOB, PLAIN])


def test_ingest_gives_one_episode_per_trial_with_attempts_by_start_time(ingested):
    store, report = ingested
    assert store.counts() == {"episodes": 28, "grades": 27, "checks": 54, "visual": 3, "physical": 2}
    assert report.written["episodes"] == {"inserted": 28}
    assert report.written["grades"] == {"inserted": 27}
    assert store.schema_version() == schema.SCHEMA_VERSION

    # a 3 x 3 x 3 job: three attempts per (task, agent, model), numbered by start time
    harbor = list(store.iter_episodes({"source": "harbor"}))
    assert len(harbor) == 27
    groups = {}
    for e in harbor:
        groups.setdefault((e.task_name, e.agent_name, e.model_name), []).append((e.started_at, e.attempt))
    assert len(groups) == 9
    for members in groups.values():
        assert [a for _, a in sorted(members)] == [1, 2, 3]


def test_ingest_keeps_failed_trials_infrastructure_errors_and_closed_book_apart(ingested):
    store, report = ingested
    # the failed trial whose environment never started: an episode without a grade
    failed = store.get_episode(episode_id("cabinet_handle_and_collider", "model-c", 1))
    assert failed.exception_type == "EnvironmentStartTimeoutError"
    assert failed.exception_valid_reward is False
    assert not store.has_grade(failed.episode_id)
    assert report.notes == [(failed.episode_id, "no verifier/grade.json")]   # nothing else to say

    # the agent that timed out: a model failure with its grade
    timeout = store.get_episode(episode_id("cabinet_handle_and_collider", "model-b", 3))
    assert (timeout.exception_type, timeout.exception_valid_reward) == ("AgentTimeoutError", True)
    assert store.has_grade(timeout.episode_id, SCORING_VERSION)   # the fixture job is built by the current grader

    # the verifier's infrastructure error and the closed-book violation, as the graders wrote them
    infra = store.grades(episode_id("cabinet_handle_and_collider", "model-c", 3))[0]
    assert infra["status"] == "infrastructure_error" and infra["infrastructure_error"].startswith("a check raised")
    closed = store.grades(episode_id("hopper_body_and_com", "model-b", 1))[0]
    assert (closed["status"], closed["closed_book"], closed["authored_usd"], closed["raw_authored_usd"]) == \
        ("closed_book_violation", "violation", 0.0, 1.0)
    assert [v["url"] for v in closed["network_violations"]] == ["https://pypi.org/simple/"]
    clean = store.grades(episode_id("hopper_body_and_com", "model-a", 1))[0]
    assert (clean["closed_book"], clean["solved"]) == ("clean", True)     # a closed-book run that passed
    open_book = store.grades(episode_id("ant_two_joint_faults", "model-a", 1))[0]
    assert open_book["closed_book"] is None
    assert closed["solved"] is False
    assert closed["grade_json"]["fixture_note"].startswith("trimmed")        # unknown fields kept


def test_ingest_records_tokens_digests_checks_and_separate_reports(ingested):
    store, _ = ingested
    # tokens, cost, trajectory, digests
    first = store.get_episode(episode_id("ant_two_joint_faults", "model-a", 1))
    assert (first.n_input_tokens, first.n_cache_tokens, first.n_output_tokens) == (20000, 5000, 2000)
    assert first.cost_usd == pytest.approx(20000 * 3e-6 + 2000 * 15e-6)
    assert first.trajectory_steps == 2 and len(first.trajectory_digest) == 64
    assert first.agent_seconds == 40.0
    assert (first.model_name, first.model_provider, first.agent_version) == ("model-a", "acme", "1.2.0")
    assert first.case_id == "ant_two_joint_faults" and first.profile_digest.startswith("sha256:")
    grade_file = trial_dir("ant_two_joint_faults", "model-a", 1) / "verifier" / "grade.json"
    assert store.grades(first.episode_id)[0]["record_digest"] == hashlib.sha256(grade_file.read_bytes()).hexdigest()

    # the separate reports
    visual = store.rows(schema.visual, schema.visual.c.episode_id == first.episode_id)
    assert [(v["status"], v["score"], v["model"], v["grader_version"]) for v in visual] == \
        [("graded", 0.8333, "judge-1", "record-1")]
    physical = store.rows(schema.physical, schema.physical.c.episode_id == first.episode_id)
    assert [(p["status"], p["measured"], p["passed"], p["failed"], p["unmeasured"]) for p in physical] == \
        [("graded", 15, 14, 1, 2)]
    assert physical[0]["engine_versions"]["newton"] == "1.8.0"

    # checks: one query answers a per-family question
    with store.engine.connect() as connection:
        c = schema.checks
        rows = connection.execute(sa.select(c.c.family, sa.func.count()).where(c.c.passed.is_(True))
                                  .group_by(c.c.family).order_by(c.c.family)).all()
    assert dict(rows) == {"body": 8, "collision": 2, "geometry": 4, "joint": 10, "mass": 5}

    # the real grade of a plain folder
    real = json.loads((PLAIN / "ant_demo" / "grade.json").read_text())
    [plain] = store.iter_episodes({"source": "folder"})
    assert plain.episode_id.startswith("folder:ant_two_joint_faults:")
    assert plain.trial_name == "ant_demo" and plain.job_name == "plain_grades" and plain.model_name is None
    assert store.grades(plain.episode_id)[0]["authored_usd"] == real["authored_usd"] == 0.5


def test_second_ingest_is_a_no_op(store):
    ingest(store, [JOB, PLAIN])
    before = {t.name: store.rows(t) for t in schema.metadata.sorted_tables}
    again = ingest(store, [JOB, PLAIN])
    assert again.changed == 0
    assert set(again.written["episodes"]) == {"unchanged"} and set(again.written["grades"]) == {"unchanged"}
    assert {t.name: store.rows(t) for t in schema.metadata.sorted_tables} == before


def test_a_changed_grade_is_updated_and_its_checks_replaced(store, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    ingest(store, [job])
    path = trial_dir("ant_two_joint_faults", "model-a", 3).name
    grade_path = job / path / "verifier" / "grade.json"
    grade = json.loads(grade_path.read_text())
    grade["checks"] = grade["checks"][:1]
    grade_path.write_text(json.dumps(grade))
    report = ingest(store, [job])
    assert report.written["grades"] == {"unchanged": 25, "updated": 1}
    eid = json.loads((job / path / "result.json").read_text())["id"]
    assert len(store.rows(schema.checks, schema.checks.c.episode_id == eid)) == 1


# -- the API regrade writes through -----------------------------------------------------------------

def test_regrade_api_adds_a_grade_of_a_new_version_and_the_report_uses_the_newest(store):
    ingest(store, [JOB])
    eid = episode_id("ant_two_joint_faults", "model-c", 1)
    old = store.grades(eid)[0]["grade_json"]
    new = dict(old, verifier_version="0.10.0", authored_usd=1.0, status="graded", objective_success=True,
               targeted_repair_fraction=1.0, targeted_semantic_score=1.0,
               checks=[dict(c, passed=True, progress=1.0) for c in old["checks"]])
    assert not store.has_grade(eid, verifier_version="0.10.0")
    assert store.upsert_grade(eid, new, origin="regrade") == "inserted"
    assert store.upsert_grade(eid, new, origin="regrade") == "unchanged"
    assert store.has_grade(eid, scoring_version=old["scoring_version"], verifier_version="0.10.0")
    assert [g["verifier_version"] for g in store.grades(eid)] == [old["verifier_version"], "0.10.0"]
    store.upsert_grade(eid, dict(new, verifier_version="0.9.0"), origin="regrade")
    assert [g["verifier_version"] for g in store.grades(eid)][-2:] == ["0.9.0", "0.10.0"]   # newest last
    views = {v.id: v for v in load_views(store)}
    assert views[eid].grade["verifier_version"] == "0.10.0" and views[eid].grade["origin"] == "regrade"
    assert {v.id: v for v in load_views(store)}[eid].grade["verifier_version"] == "0.10.0"
    pinned = {v.id: v for v in load_views(store, verifier_version=old["verifier_version"])}
    assert pinned[eid].grade["authored_usd"] == pytest.approx(0.05)
    assert version_key("0.10.0") > version_key("0.9.1")
    selected = [e.episode_id for e in store.iter_episodes({"model_name": ["model-a", "model-b"],
                                                           "task_name": "hopper_body_and_com"})]
    assert len(selected) == 6 and selected == sorted(selected)


def test_api_refuses_what_it_cannot_key(store):
    ingest(store, [JOB])
    eid = episode_id("ant_two_joint_faults", "model-a", 1)
    with pytest.raises(StoreError, match="scoring_version"):
        store.upsert_grade(eid, {"status": "graded"})
    with pytest.raises(StoreError, match="no episode"):
        store.upsert_grade("nope", {"scoring_version": "1", "verifier_version": "x"})
    with pytest.raises(StoreError, match="unknown episode fields"):
        store.upsert_episode({"episode_id": "x", "source": "harbor", "reward": 1})
    with pytest.raises(StoreError, match="visual or physical"):
        store.upsert_separate("audio", eid, {})


def test_every_row_is_written_from_its_tables_typed_model(store):
    """Each table has its typed row (records/models.py, derived from the table), and a value of
    another type than its column's is refused as one line before anything is written."""
    from usd_repair_verifier.records import schema
    from usd_repair_verifier.records.store import ROW_MODELS

    assert sorted(ROW_MODELS) == sorted(schema.metadata.tables)
    for name, model in ROW_MODELS.items():
        assert list(model.model_fields) == [c.name for c in schema.metadata.tables[name].columns]
    with pytest.raises(StoreError, match=r"^the episodes row cannot be stored: attempt: "):
        store.upsert_episode({"episode_id": "typed", "source": "harbor", "attempt": "first"})
    with pytest.raises(StoreError, match=r"^the episodes row cannot be stored: agent_seconds: "):
        store.upsert_episode({"episode_id": "typed", "source": "harbor", "agent_seconds": {"s": 1}})
    assert store.get_episode("typed") is None


def test_a_store_of_a_newer_schema_is_refused(store_url):
    with open_store(store_url) as store:
        with store.engine.begin() as connection:
            connection.execute(sa.update(schema.meta).values(value=str(schema.SCHEMA_VERSION + 1)))
    with pytest.raises(StoreError, match="newer"):
        open_store(store_url)


def test_a_store_missing_a_column_of_its_schema_is_refused(store_url):
    with open_store(store_url) as store:
        with store.engine.begin() as connection:
            connection.execute(sa.text("ALTER TABLE episodes DROP COLUMN submission_path"))
    with pytest.raises(StoreError, match="lacks submission_path"):
        open_store(store_url)


# -- the report's numbers, by hand ----------------------------------------------------------------

def test_pass_at_k_and_bootstrap_against_hand_values():
    assert pass_at_k(3, 1, 1) == pytest.approx(1 / 3)
    assert pass_at_k(3, 1, 3) == 1.0
    assert pass_at_k(5, 2, 3) == pytest.approx(1 - 1 / 10)          # C(3,3)/C(5,3) = 1/10
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)       # C(7,5)/C(10,5)
    assert pass_at_k(3, 0, 1) == 0.0 and pass_at_k(2, 1, 3) is None
    assert mean_pass_at_k([(3, 1), (3, 0), (2, 2)], 3) == (pytest.approx(0.5), 2)
    assert mean_pass_at_k([(2, 1)], 5) == (None, 0)
    # mean of a resample of [0, 1] is 0, 1/2, 1 with probability 1/4, 1/2, 1/4: the 2.5 % and
    # 97.5 % points are 0 and 1; a constant sample has a zero-width interval
    assert bootstrap_mean_ci([0.0, 1.0]) == (0.0, 1.0)
    assert bootstrap_mean_ci([0.7, 0.7, 0.7]) == pytest.approx((0.7, 0.7))
    # [0, 0, 0, 1]: P(mean = 0) = (3/4)^4 = 0.316 > 2.5 %, P(mean = 1) = 1/256 < 2.5 %, and
    # P(mean >= 3/4) = 13/256 = 5.1 % > 2.5 %: the interval is [0, 0.75]
    assert bootstrap_mean_ci([0.0, 0.0, 0.0, 1.0]) == (0.0, 0.75)
    assert bootstrap_mean_ci([]) is None
    values = [0.013, 0.27, 0.41, 0.58, 0.66, 0.91, 0.97]
    assert bootstrap_mean_ci(values) == bootstrap_mean_ci(list(values))     # seeded: same bytes, same interval
    assert bootstrap_mean_ci(values, seed=1, resamples=500) != bootstrap_mean_ci(values, seed=2, resamples=500)


def test_leaderboard_numbers_match_hand_computation(store):
    ingest(store, [JOB])
    rows = {r["model"]: r for r in leaderboard(load_views(store))}
    a, b, c = rows["model-a"], rows["model-b"], rows["model-c"]
    # model-a: ant 1, 1, 0.6; cabinet 1, 0.6, 1; hopper 1, 1, 1 (0.6 = 0.5 F + 0.5 S, F 1/2, S 0.7)
    assert a["mean_authored_usd"] == pytest.approx(8.2 / 9)
    assert (a["solved"], a["counted"], a["infrastructure_errors"]) == (7, 9, 0)
    assert a["pass_at_1"] == pytest.approx((2 / 3 + 2 / 3 + 1) / 3)
    assert a["pass_at_3"] == 1.0 and a["pass_at_5"] is None and a["pass_at_5_tasks"] == 0
    assert a["cost_per_solve_usd"] == pytest.approx(a["cost_usd"] / 7)
    # model-b: ant 0.6, 0.05, 1; cabinet 0.6, invalid 0, timed out 0.05; hopper closed book 0, 0.6, 1
    assert b["mean_authored_usd"] == pytest.approx(3.9 / 9)
    assert b["pass_at_1"] == pytest.approx((1 / 3 + 0 + 1 / 3) / 3)
    assert b["pass_at_3"] == pytest.approx(2 / 3)
    assert (b["invalid_rate"], b["closed_book_rate"]) == (pytest.approx(1 / 9), pytest.approx(1 / 9))
    assert a["closed_book_rate"] == 0.0                                 # its clean closed-book runs
    assert b["objective_success_rate"] == pytest.approx(2 / 9)          # the closed-book one is withheld
    # model-c: two infrastructure errors listed apart, never counted: 7 counted episodes
    assert (c["episodes"], c["counted"], c["infrastructure_errors"]) == (9, 7, 2)
    assert c["mean_authored_usd"] == pytest.approx(1.4 / 7)
    assert c["preservation_failed_rate"] == pytest.approx(1 / 7)
    assert (c["pass_at_3"], c["pass_at_3_tasks"]) == (0.0, 2)           # cabinet has 1 counted attempt
    assert c["cost_per_solve_usd"] is None
    assert c["ci_low"] <= c["mean_authored_usd"] <= c["ci_high"]
    assert [r["model"] for r in leaderboard(load_views(store))] == ["model-a", "model-b", "model-c"]
    assert len(a["episode_ids"]) == 9


@pytest.mark.slow
def test_report_files_are_complete_and_identical_across_runs(store, tmp_path):
    ingest(store, [JOB, PLAIN])
    first, second = tmp_path / "one", tmp_path / "two"
    tables = write_report(store, first)
    write_report(store, second)
    names = sorted(p.relative_to(first).as_posix() for p in first.rglob("*") if p.is_file())
    assert names == ["episodes.csv", "figures/partial_credit.png", "figures/partial_credit.svg",
                     "figures/repair_by_family.png", "figures/repair_by_family.svg",
                     "figures/repair_by_fault_kind.png", "figures/repair_by_fault_kind.svg",
                     "figures/rewards.png", "figures/rewards.svg", "infrastructure_errors.csv",
                     "leaderboard.csv", "per_task.csv", "repair_by_family.csv", "repair_by_fault_kind.csv",
                     "report.html", "report.md", "separate_grades.csv"]
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    page = (first / "report.html").read_text()
    for row in tables["leaderboard"]:                 # every row points to its episodes
        anchor = f'id="episodes-{row["model"].strip("()").replace(" ", "-")}'
        assert anchor in page
    for eid in (r["episode_id"] for r in tables["infrastructure"]):
        assert f'href="#ep-{eid}"' in page and f'id="ep-{eid}"' in page
    tasks = {(r["task"], r["model"]): r for r in tables["tasks"]}
    cabinet_c = tasks["cabinet_handle_and_collider", "model-c"]          # two of its three are infrastructure
    assert (cabinet_c["counted"], cabinet_c["solved"], cabinet_c["mean_authored_usd"]) == (1, 0, pytest.approx(0.05))
    hopper_a = tasks["hopper_body_and_com", "model-a"]
    assert (hopper_a["counted"], hopper_a["solved"], hopper_a["mean_authored_usd"]) == (3, 3, 1.0)
    assert len(tasks) == 9                                               # 3 x 3: the plain grade is nobody's attempt
    assert [r["model"] for r in tables["leaderboard"]] == ["model-a", "model-b", "model-c"]   # no "(no model)" row
    assert [r["folder"] for r in tables["unattributed"]] == ["ant_demo"]
    assert "Unattributed grades" in page and "ant_demo" in page
    separate = {r["model"]: r for r in tables["separate"]}
    assert (separate["model-a"]["visual_reports"], separate["model-a"]["visual_graded"]) == (2, 1)
    assert separate["model-a"]["visual_mean_score"] == pytest.approx(0.8333)
    assert (separate["model-a"]["physical_properties_passed"], separate["model-a"]["physical_properties_measured"]) == (14, 15)
    assert (separate["model-b"]["physical_reports"], separate["model-b"]["physical_graded"]) == (1, 0)
    assert "model-c" not in separate
    family = {(r["model"], r["family"]): r for r in tables["families"]}
    assert (family["model-b", "collision"]["passed"], family["model-b", "collision"]["checks"]) == (0, 3)
    assert (family["model-a", "joint"]["passed"], family["model-a", "joint"]["checks"]) == (5, 6)


# -- hostile or broken folders ------------------------------------------------------------------------

def test_broken_folders_are_skipped_with_reasons(store, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    names = sorted(p.name for p in job.iterdir() if p.is_dir())
    (job / names[0] / "result.json").write_text("{not json")
    (job / names[1] / "result.json").write_text(json.dumps([1, 2]))
    grade = job / names[2] / "verifier" / "grade.json"
    grade.unlink()
    grade.symlink_to("/etc/passwd")
    (job / names[3] / "verifier" / "grade.json").write_text(json.dumps({"status": "graded", "authored_usd": "1"}))
    (job / names[4] / "verifier" / "visual.json").write_text("[]")
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "grade.json").write_text("null")
    report = ingest(store, [job, plain, tmp_path / "missing"])
    skipped = dict(report.skipped)
    assert "is not JSON" in skipped[str(job / names[0])]
    assert "neither a Harbor trial result" in skipped[str(job / names[1])]
    assert "symlink" in skipped[str(plain)] or "not a JSON object" in skipped[str(plain)]
    assert str(tmp_path / "missing") in skipped
    notes = " | ".join(note for _, note in report.notes)
    assert "symlink" in notes and "no usable scoring_version" in notes and "visual.json skipped" in notes
    assert store.counts()["episodes"] == 25
    assert not any(g["grade_json"].get("authored_usd") == "1" for g in store.rows(schema.grades))


def test_oversized_record_is_skipped(store, tmp_path, monkeypatch):
    from usd_repair_verifier.records import harbor

    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    monkeypatch.setattr(harbor, "MAX_JSON_BYTES", 2000)
    report = ingest(store, [job])
    assert any("larger than 2000 bytes" in why for _, why in report.skipped + report.notes)


# -- the command ---------------------------------------------------------------------------------------

def test_usdgrade_records_commands(tmp_path, capsys):
    from usd_repair_verifier.commands.cli import main

    db = tmp_path / "r.sqlite"
    assert main(["records", "ingest", str(JOB), str(PLAIN), "--db", str(db)]) == 0
    assert "28 inserted" in capsys.readouterr().out
    assert main(["records", "ingest", str(JOB), "--db", str(db)]) == 0
    assert "nothing changed" in capsys.readouterr().out
    assert main(["records", "report", "--db", str(db), "--out", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "report.html").is_file()
    trial = trial_dir("hopper_body_and_com", "model-b", 1).name
    capsys.readouterr()
    assert main(["records", "show", trial, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "closed_book_violation" in out and "f2-mass.center_of_mass" in out and "raw_authored_usd" in out
    assert main(["records", "show", "no-such-episode", "--db", str(db)]) == 1
    assert main(["records", "ingest", str(tmp_path / "empty"), "--db", str(db)]) == 2   # not there: a mistake
    (tmp_path / "empty").mkdir()
    assert main(["records", "ingest", str(tmp_path / "empty"), "--db", str(db)]) == 1   # nothing to ingest: refused
    (tmp_path / "bad.sqlite").write_text("not a database")
    assert main(["records", "report", "--db", str(tmp_path / "bad.sqlite"), "--out", str(tmp_path / "x")]) == 2


@pytest.mark.slow
def test_hostile_values_are_refused_or_nulled_on_both_databases(store, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    names = sorted(p.name for p in job.iterdir() if p.is_dir())
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(job / names[0] / "verifier" / "grade.json", outside / "grade.json")
    shutil.rmtree(job / names[0] / "verifier")
    (job / names[0] / "verifier").symlink_to(outside)                  # a verifier folder elsewhere
    nan = job / names[1] / "verifier" / "grade.json"
    nan.write_text(nan.read_text().replace('"authored_usd": 1.0', '"authored_usd": NaN', 1))
    nul = job / names[2] / "verifier" / "physical.json"
    nul.write_text(json.dumps({"record_version": "1", "status": "graded\u0000"}))
    result = json.loads((job / names[3] / "result.json").read_text())
    del result["id"]
    (job / names[3] / "result.json").write_text(json.dumps(result))
    result = json.loads((job / names[4] / "result.json").read_text())
    result["agent_result"]["n_input_tokens"] = 10 ** 30
    result["agent_info"]["model_info"]["name"] = "m" * 5000
    (job / names[4] / "result.json").write_text(json.dumps(result))
    result = json.loads((job / names[6] / "result.json").read_text())
    result["verifier_result"]["rewards"]["authored_usd"] = 0.987                # not what the grader wrote
    (job / names[6] / "result.json").write_text(json.dumps(result))
    grade = json.loads((job / names[5] / "verifier" / "grade.json").read_text())
    grade.update(status="x" * 5000, authored_usd=10 ** 400, checks=[{"id": "c" * 400}, "junk", {"id": 3}])
    (job / names[5] / "verifier" / "grade.json").write_text(json.dumps(grade))

    report = ingest(store, [job])
    notes = " | ".join(f"{e}: {n}" for e, n in report.notes)
    assert "symlink" in notes and "not JSON" in notes and "NUL" in notes
    assert "Harbor recorded authored_usd 0.987 but grade.json says" in notes
    assert dict(report.skipped)[str(job / names[3])] == "result.json has no trial id"
    big = store.get_episode(json.loads((job / names[4] / "result.json").read_text())["id"])
    assert big.n_input_tokens is None and len(big.model_name) == 5000
    eid = json.loads((job / names[5] / "result.json").read_text())["id"]
    [stored] = store.grades(eid)
    assert stored["authored_usd"] is None and len(stored["status"]) == 5000
    assert store.rows(schema.checks, schema.checks.c.episode_id == eid) == []
    assert store.counts()["episodes"] == 26
    write_report(store, tmp_path / "report")                            # the report still builds


def test_a_kept_submission_is_located_for_regrading(store, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    names = sorted(p.name for p in job.iterdir() if p.is_dir())
    assert (job / names[0] / "artifacts" / "app").is_dir()                 # the fixture's stored submission
    shutil.rmtree(job / names[1] / "artifacts" / "app")
    (job / names[1] / "artifacts" / "app").symlink_to(tmp_path)          # never followed
    shutil.rmtree(job / names[2] / "artifacts" / "app")                   # none kept
    ingest(store, [job])
    paths = {e.trial_name: e.submission_path for e in store.iter_episodes({"source": "harbor"})}
    assert paths[names[0]] == str((job / names[0] / "artifacts" / "app").resolve())
    assert paths[names[1]] is None and paths[names[2]] is None


@pytest.mark.slow
def test_an_empty_store_is_refused_and_nothing_is_written(tmp_path):
    from usd_repair_verifier.records.report import NothingToReport

    out = tmp_path / "report"
    with open_store(f"sqlite:///{tmp_path / 'full.sqlite'}") as full:
        ingest(full, [JOB])
        write_report(full, out)
        with pytest.raises(NothingToReport, match="no grade of verifier version 9.9"):
            write_report(full, tmp_path / "other", verifier_version="9.9")
    assert not (tmp_path / "other").exists()
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with open_store(f"sqlite:///{tmp_path / 'empty.sqlite'}") as empty:
        with pytest.raises(NothingToReport, match="holds no episodes"):
            write_report(empty, out)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before      # the earlier report untouched


def test_attempts_follow_start_time_whatever_its_spelling():
    # 10:00:05+01:00 is 09:00:05 UTC: first, although it sorts last as text
    spelled = ["2026-11-01T10:00:05+01:00", "2026-11-01T09:30:00Z", "2026-11-01T09:45:00.5+00:00", None, "soon"]
    assert sorted(reversed(spelled), key=start_key) == spelled[:3] + ["soon", None]


def test_missing_server_binaries_fail_under_ci_and_skip_otherwise(monkeypatch):
    from tests import postgres_server

    monkeypatch.setattr(postgres_server, "_binaries", lambda: None)
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="CI must run the records tests"):
        postgres_server.PostgresServer()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="not found: the PostgreSQL half"):
        postgres_server.PostgresServer()
