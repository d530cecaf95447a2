"""The published JSON Schemas (docs/schemas/) are the models' own, and the files the verifier and its
fixtures hold are what they describe: the profiles, the grades, the records store and the results report.

Every grade.json, visual.json and physical.json the end-to-end tests write is validated against its
model where it is written (tests/test_grading_end_to_end.py, test_readable_grade.py,
test_visual_grade.py, test_physical_grade.py).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from tools.json_schemas import SCHEMA_DIR, schemas, stale
from usd_repair_verifier.profiles.schema import Profile, load_profile
from usd_repair_verifier.records import ingest, models, results, schema as tables
from usd_repair_verifier.records.store import open_store
from usd_repair_verifier.scoring.grade_file import Grade
from usd_repair_verifier.scoring.run import run_grade

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
JOBS = ROOT / "fixtures" / "harbor_jobs"
FIXTURE_GRADES = sorted(JOBS.rglob("grade.json"))

# What fixtures/build_harbor_jobs.py leaves out of the grades it writes (its docstring says why):
# the trimmed grades of the job (those with a fixture_note) drop environment and timings (so the
# bytes do not vary) and keep no gates, gate results, components or tolerances; the real grade
# (plain_grades/) is whole, its timings left empty, so `usdgrade explain` reads it.
DROPPED = {("environment",), ("timings",)}
TRIMMED = DROPPED | {("gates",), ("validity",), ("preservation",), ("missing_tests",), ("checks", "*", "details"),
                     ("checks", "*", "components"), ("profile", "tolerances")}


def validator(name: str) -> Draft202012Validator:
    published = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(published)
    return Draft202012Validator(published)


def test_the_committed_schemas_are_the_ones_the_models_generate():
    assert stale() == [], "run python tools/json_schemas.py"
    assert sorted(p.name for p in SCHEMA_DIR.glob("*.schema.json")) == sorted(schemas())


@pytest.mark.parametrize("case_id", sorted(p.name for p in CASES.iterdir() if (p / "profile.json").is_file()))
def test_every_case_profile_is_what_the_published_schema_describes(case_id):
    data = json.loads((CASES / case_id / "profile.json").read_text(encoding="utf-8"))
    validator("profile.schema.json").validate(data)
    assert Profile.model_validate(data) == load_profile(CASES / case_id / "profile.json")


def test_the_published_profile_schema_refuses_what_loading_refuses():
    data = json.loads((CASES / "ant_two_joint_faults" / "profile.json").read_text(encoding="utf-8"))
    check = validator("profile.schema.json")
    for broken in ({**data, "schema_version": 2}, {**data, "checks": "none"}, {**data, "closed_book": "yes"},
                   {**data, "preserved_namespaces": ["my engine"]},
                   {**data, "reference": {"root_layer": "a.usda"}},
                   {**data, "reference": {**data["reference"], "root_layer": "sub/a.usda"}}):
        assert list(check.iter_errors(broken)), broken
    # The words (fault kinds, checks) are the family table's: loading refuses an unknown one, the
    # published schema does not list them (a new family changes no schema).
    with pytest.raises(ValidationError, match="unknown fault kind 'melted'"):
        Profile.model_validate({**data, "faults": [{**data["faults"][0], "kind": "melted"}]})


@pytest.mark.parametrize("path", FIXTURE_GRADES, ids=[str(p.relative_to(JOBS).parent) for p in FIXTURE_GRADES])
def test_every_fixture_grade_is_what_the_grade_model_describes(path):
    """A fixture grade holds nothing the model does not describe, and leaves out only what its
    writer says it drops."""
    grade = json.loads(path.read_text(encoding="utf-8"))
    trimmed = grade.pop("fixture_note", None) is not None
    try:
        Grade.model_validate(grade)
        problems = []
    except ValidationError as error:
        problems = error.errors()
    left_out = {tuple("*" if isinstance(p, int) else p for p in e["loc"]) for e in problems if e["type"] == "missing"}
    assert [e for e in problems if e["type"] != "missing"] == []
    assert left_out <= (TRIMMED if trimmed else set())
    if trimmed:
        assert DROPPED <= left_out  # the check can fail: the dropped fields are reported missing


@pytest.mark.slow
def test_a_grade_the_verifier_writes_is_what_the_published_schema_describes(tmp_path):
    case = CASES / "gen_cartpole_1"
    result = run_grade(case, case / "reference", tmp_path / "out")
    assert result.exit_code == 0, result.stdout[-2000:] + result.stderr[-2000:]
    text = (tmp_path / "out" / "grade.json").read_text(encoding="utf-8")
    Grade.model_validate_json(text)
    check = validator("grade.schema.json")
    check.validate(json.loads(text))
    assert list(check.iter_errors({**json.loads(text), "status": "fine"}))
    assert list(check.iter_errors({**json.loads(text), "extra": 1}))


@pytest.fixture(scope="module")
def fixture_store(tmp_path_factory):
    store = open_store(f"sqlite:///{tmp_path_factory.mktemp('records') / 'records.sqlite'}")
    ingest.ingest(store, [JOBS])
    yield store
    store.close()


def test_the_records_store_rows_are_what_the_store_schema_describes(fixture_store):
    rows = {name: fixture_store.rows(getattr(tables, name)) for name in models.StoreRows.model_fields}
    assert all(rows.values()), {name: len(r) for name, r in rows.items()}  # every table holds rows to check
    models.StoreRows.model_validate(rows)
    validator("store.schema.json").validate(json.loads(json.dumps(rows)))
    assert set(models.StoreRows.model_fields) == set(tables.metadata.tables)  # a new table needs its rows here


def test_the_results_tables_are_what_the_results_schema_describes(fixture_store):
    views = results.load_views(fixture_store)
    tables_now = {
        "leaderboard": results.leaderboard(views),
        "repair_by_family": results.repair_rates(views, "family"),
        "repair_by_fault_kind": results.repair_rates(views, "fault_kind"),
        "infrastructure_errors": results.infrastructure(views),
        "separate_grades": results.separate_grades(fixture_store, views),
        "per_task": results.per_task(views),
        "episodes": results.episode_rows(views),
    }
    assert all(tables_now.values())
    models.Results.model_validate(tables_now)
    validator("results.schema.json").validate(json.loads(json.dumps(tables_now)))
