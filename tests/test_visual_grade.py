"""The visual grade end to end: eligibility statuses in order, authorization, the record, the cache, the CLI."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from usd_repair_verifier.commands import cli
from usd_repair_verifier.visual import cli as visual_cli, judge as judges, rubric as rubrics
from usd_repair_verifier.visual.grade import AUTHORIZE_ENV, VISUAL_FILE, run_visual
from usd_repair_verifier.visual.record import VisualRecord
from tests.grade_in_process import grade_warm
from tests.lazy_import import LazyModule

anthropic = LazyModule("anthropic")
httpx2 = LazyModule("httpx2")

REPO = Path(__file__).resolve().parent.parent
CASE = REPO / "fixtures" / "cases" / "cabinet_drawer_door"
NO_ENV: dict = {}
AUTH_ENV = {AUTHORIZE_ENV: "1"}


# Any attempt to open a real connection fails the test (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("no_network")


@pytest.fixture(autouse=True)
def every_visual_json_written_matches_its_model(written_records_match):
    written_records_match(VISUAL_FILE, VisualRecord, "visual")


@pytest.fixture(scope="module", autouse=True)
def renders_once():
    """Each pair of packages is rendered once per module: these tests grade the same bytes many
    times, and what they test is the visual grade around the renders (the renderer has its own
    tests in tests/test_visual_render.py). A later render of the same bytes returns a copy of the
    first, PNG files written again as the renderer writes them."""
    import copy

    from usd_repair_verifier.profiles.digest import tree_digest
    from usd_repair_verifier.visual import render

    real, done = render.render_pair, {}

    def render_pair(reference, candidate, out_dir=None, views=tuple(render.VIEWS), size=render.SIZE,
                    variant_selections=None):
        key = (tree_digest(Path(reference)), tree_digest(Path(candidate)), tuple(views), size,
               repr(sorted((variant_selections or {}).items())))
        if key not in done:
            done[key] = real(reference, candidate, None, views=views, size=size, variant_selections=variant_selections)
        result = copy.deepcopy(done[key])
        if out_dir is not None:
            Path(out_dir).mkdir(parents=True, exist_ok=True)
            for role in render.ROLES:
                for entry in result[role].values():
                    (Path(out_dir) / entry["file"]).write_bytes(entry["png"])
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(render, "render_pair", render_pair)
        yield


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """grade.json of the reference as submission: graded with full objective success (in this process)."""
    out = tmp_path_factory.mktemp("objective_ref")
    result = grade_warm(CASE, CASE / "reference", out)
    assert result.grade["status"] == "graded" and result.grade["objective_success"] is True
    return out / "grade.json"


@pytest.fixture(scope="module")
def input_grade(tmp_path_factory):
    out = tmp_path_factory.mktemp("objective_input")
    result = grade_warm(CASE, CASE / "input", out)
    assert result.grade["objective_success"] is not True
    return out / "grade.json"


def _edited(grade_path: Path, tmp_path: Path, **changes) -> Path:
    grade = json.loads(grade_path.read_text())
    grade.update(changes)
    path = tmp_path / "edited_grade.json"
    path.write_text(json.dumps(grade))
    return path


def _read(out: Path) -> dict:
    return json.loads((out / VISUAL_FILE).read_text())


def test_input_is_not_eligible(input_grade, tmp_path):
    record = run_visual(CASE, CASE / "input", input_grade, tmp_path / "out", authorize=True, judge_kind="fake",
                        env=NO_ENV)
    assert record["status"] == "not_eligible" and record["score"] is None and record["reason"]
    assert _read(tmp_path / "out") == record
    assert not (tmp_path / "out" / "renders").exists()


@pytest.mark.parametrize("changes,why", [
    ({"status": "invalid"}, "status"),
    ({"status": "partial"}, "status"),
    ({"submission_valid": False}, "valid"),
    ({"preservation_pass": False}, "preservation"),
    ({"objective_success": False}, "objective"),
])
def test_each_gate_makes_it_not_eligible(graded, tmp_path, changes, why):
    record = run_visual(CASE, CASE / "reference", _edited(graded, tmp_path, **changes), tmp_path / "out",
                        authorize=True, judge_kind="fake", env=NO_ENV)
    assert record["status"] == "not_eligible" and record["score"] is None and why in record["reason"]


def test_not_eligible_comes_before_the_digest_and_authorization(graded, tmp_path):
    grade = json.loads(graded.read_text())
    grade["objective_success"] = False
    grade["digests"]["candidate"]["digest"] = "sha256:" + "0" * 64
    path = tmp_path / "g.json"
    path.write_text(json.dumps(grade))
    record = run_visual(CASE, CASE / "reference", path, tmp_path / "out", judge_kind="fake", env=NO_ENV)
    assert record["status"] == "not_eligible"


@pytest.mark.slow
def test_changed_bytes_are_an_error_before_authorization(graded, tmp_path):
    submission = tmp_path / "submission"
    shutil.copytree(CASE / "reference", submission)
    ok = run_visual(CASE, submission, graded, tmp_path / "out0", authorize=True, judge_kind="fake", env=NO_ENV)
    assert ok["status"] == "graded"                                  # same bytes, other folder: fine
    with open(submission / "cabinet.usda", "a") as f:
        f.write("\n# edited after grading\n")
    record = run_visual(CASE, submission, graded, tmp_path / "out", authorize=False, judge_kind="fake", env=NO_ENV)
    assert record["status"] == "infrastructure_error" and record["score"] is None and "changed" in record["reason"]
    assert record["digests"]["candidate_now"] != record["digests"]["candidate_recorded"]


def test_missing_digest_or_unreadable_grade_is_an_error(graded, tmp_path):
    record = run_visual(CASE, CASE / "reference", _edited(graded, tmp_path, digests={}), tmp_path / "o1",
                        authorize=True, judge_kind="fake", env=NO_ENV)
    assert record["status"] == "infrastructure_error" and "digest" in record["reason"]
    record = run_visual(CASE, CASE / "reference", tmp_path / "nope.json", tmp_path / "o2", authorize=True,
                        judge_kind="fake", env=NO_ENV)
    assert record["status"] == "infrastructure_error" and record["score"] is None


@pytest.mark.slow
def test_not_authorized_without_flag_or_env(graded, tmp_path):
    record = run_visual(CASE, CASE / "reference", graded, tmp_path / "out", judge_kind="anthropic", env=NO_ENV)
    assert record["status"] == "not_authorized" and record["score"] is None
    assert AUTHORIZE_ENV in record["reason"] and record["judge"] is None and record["renders"] is None
    record = run_visual(CASE, CASE / "reference", graded, tmp_path / "out2", judge_kind="anthropic",
                        env={AUTHORIZE_ENV: "0"})
    assert record["status"] == "not_authorized"
    record = run_visual(CASE, CASE / "reference", graded, tmp_path / "out3", judge_kind="fake", env=AUTH_ENV)
    assert record["status"] == "graded" and record["authorization"] == {"authorized": True, "source": AUTHORIZE_ENV}


@pytest.mark.slow
def test_the_fake_judge_needs_no_authorization(graded, tmp_path):
    """A dry run sends nothing anywhere: --judge fake grades without --authorize, and says why."""
    record = run_visual(CASE, CASE / "reference", graded, tmp_path / "out", judge_kind="fake",
                        env={AUTHORIZE_ENV: "0"})
    assert record["status"] == "graded" and record["dry_run"] is True
    assert record["authorization"] == {"authorized": True, "source": "--judge fake"}


@pytest.mark.slow
def test_fake_judge_grade_and_record(graded, tmp_path):
    before = graded.read_bytes()
    judge = judges.FakeJudge(rule="pass", mapping={"materials_and_colours": "fail", "surface_artefacts": "unclear"})
    out = tmp_path / "out"
    record = run_visual(CASE, CASE / "reference", graded, out, authorize=True, judge=judge, votes=3, env=NO_ENV)
    assert record["status"] == "graded"
    rubric = rubrics.load()
    total = sum(rubrics.weight(c) for c in rubric["criteria"])
    assert record["score"] == pytest.approx((total - 2 - 1) / total)
    assert record["rubric"]["content"] == rubric and record["rubric"]["digest"] == rubrics.digest(rubric)
    assert record["judge"]["votes_requested"] == 3 and len(record["votes"]) == 3
    final = record["verdicts"]["materials_and_colours"]
    assert (final["verdict"], final["importance"], final["weight"]) == ("fail", "Medium", 2)
    assert final["rationale"] == "fake judge: fail" and final["evidence"]["views"]
    assert record["dry_run"] is True and record["rubric_score"] == record["score"]
    for role in ("reference", "candidate", "difference"):
        for view in ("front", "side", "top", "three_quarter"):
            entry = record["renders"][role][view]
            assert (out / entry["file"]).is_file() and entry["digest"].startswith("sha256:")
    assert graded.read_bytes() == before                           # grade.json is never touched
    assert "authored_usd" not in {k for k in record if k != "objective"}
    assert _read(out)["score"] == record["score"]


@pytest.mark.slow
def test_cli_parser_and_exit_codes(graded, input_grade, tmp_path, monkeypatch):
    monkeypatch.delenv(AUTHORIZE_ENV, raising=False)
    parser = argparse.ArgumentParser()
    visual_cli.add_parser(parser.add_subparsers(dest="command"))
    base = ["visual", "--case", str(CASE), "--judge", "fake", "--cache-dir", str(tmp_path / "cache")]
    args = parser.parse_args(base + ["--submission", str(CASE / "reference"), "--grade", str(graded),
                                     "--out", str(tmp_path / "a"), "--authorize", "--judge-votes", "3",
                                     "--fake-verdict", "unclear"])
    assert args.run(args) == 0
    assert _read(tmp_path / "a")["score"] == 0.0 and _read(tmp_path / "a")["status"] == "graded"
    args = parser.parse_args(base + ["--submission", str(CASE / "input"), "--grade", str(input_grade),
                                     "--out", str(tmp_path / "b")])
    assert visual_cli.run(args) == 0 and _read(tmp_path / "b")["status"] == "not_eligible"
    args = parser.parse_args(base + ["--submission", str(CASE / "input"), "--grade", str(input_grade),
                                     "--out", str(tmp_path / "a")])                      # re-use OUT a
    assert visual_cli.run(args) == 0 and _read(tmp_path / "a")["status"] == "not_eligible"
    assert not list((tmp_path / "a" / "renders").glob("*.png"))                         # stale renders gone
    args = parser.parse_args(base + ["--submission", str(CASE / "reference"), "--grade", str(tmp_path / "x.json"),
                                     "--out", str(tmp_path / "c")])
    assert visual_cli.run(args) == 3 and _read(tmp_path / "c")["status"] == "infrastructure_error"
    args = parser.parse_args(base + ["--submission", str(CASE / "reference"), "--grade", str(graded),
                                     "--out", str(tmp_path / "d"), "--authorize", "--rubric", str(tmp_path / "x.json")])
    assert visual_cli.run(args) == 3 and "rubric" in _read(tmp_path / "d")["reason"]


def test_out_inside_the_submission_is_refused(graded, tmp_path):
    submission = tmp_path / "submission"
    shutil.copytree(CASE / "reference", submission)
    with pytest.raises(ValueError):
        run_visual(CASE, submission, graded, submission / "out", authorize=True, judge_kind="fake", env=NO_ENV)


@pytest.mark.parametrize("bad", [
    {"criteria": []},
    {"criteria": [{"id": "a", "text": "t", "importance": "Huge"}]},
    {"criteria": [{"id": "a", "text": "t", "importance": "High"}, {"id": "a", "text": "u", "importance": "Low"}]},
    {"criteria": [{"id": "", "text": "t", "importance": "High"}]},
])
def test_rubric_validation(bad):
    with pytest.raises(rubrics.RubricError):
        rubrics.validate(bad)


def test_default_rubric_has_its_seven_criteria():
    ids = {c["id"] for c in rubrics.load()["criteria"]}
    assert ids == {"silhouette", "no_missing_parts", "no_extra_parts", "placement", "proportions",
                   "materials_and_colours", "surface_artefacts"}


# ------------------------------------------------------------- the anthropic judge inside the grade


def _answer(rubric, verdict="pass", drop=()):
    return {c["id"]: {"rationale": "compared the views",
                      "evidence": {"views": ["candidate/front", "reference/front"], "observation": "same"},
                      "verdict": verdict}
            for c in rubric["criteria"] if c["id"] not in drop}


class Server:
    def __init__(self, *bodies):
        self.bodies = list(bodies)
        self.calls = 0

    def __call__(self, request):
        body = self.bodies[min(self.calls, len(self.bodies) - 1)]
        self.calls += 1
        if isinstance(body, httpx2.Response):
            return body
        return httpx2.Response(200, headers={"request-id": f"req_{self.calls}"}, json={
            "id": f"msg_{self.calls}", "type": "message", "role": "assistant", "model": "served-model",
            "content": [{"type": "text", "text": json.dumps(body)}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 1000, "output_tokens": 50}})


def _judge(server, model="asked-model-20250101", answer_retries=0):
    client = anthropic.Anthropic(api_key="test", base_url="http://mock", max_retries=1,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    return judges.AnthropicJudge(model, client=client, answer_retries=answer_retries, sleep=lambda s: None)


@pytest.mark.slow
def test_anthropic_votes_tie_record_and_cache(graded, tmp_path):
    rubric = rubrics.load()
    server = Server(_answer(rubric, "pass"), _answer(rubric, "fail"))
    cache = tmp_path / "cache"
    kwargs = dict(authorize=True, votes=2, env=NO_ENV, cache_dir=cache)
    record = run_visual(CASE, CASE / "reference", graded, tmp_path / "out", judge=_judge(server), **kwargs)
    assert record["status"] == "graded" and record["score"] == 0.0          # a 1-1 tie is unclear everywhere
    assert {v["verdict"] for v in record["verdicts"].values()} == {"unclear"}
    assert record["judge"]["model_requested"] == "asked-model-20250101"
    assert record["judge"]["models_answered"] == ["served-model", "served-model"]
    assert record["judge"]["request_ids"] == ["req_1", "req_2"]
    assert record["usage"]["input_tokens"] == 2000 and record["cache"]["hit"] is False
    assert [v["verdicts"]["silhouette"]["verdict"] for v in record["votes"]] == ["pass", "fail"]
    assert server.calls == 2
    again = run_visual(CASE, CASE / "reference", graded, tmp_path / "out2", judge=_judge(server), **kwargs)
    assert server.calls == 2 and again["cache"]["hit"] is True                # no new call
    assert again["score"] == record["score"] and again["votes"] == record["votes"]
    other = run_visual(CASE, CASE / "reference", graded, tmp_path / "out3", judge=_judge(server, "other-model"),
                       **kwargs)
    assert server.calls == 4 and other["cache"]["hit"] is False               # the model is in the key


@pytest.mark.slow
def test_majority_of_three(graded, tmp_path):
    rubric = rubrics.load()
    server = Server(_answer(rubric, "pass"), _answer(rubric, "fail"), _answer(rubric, "pass"))
    record = run_visual(CASE, CASE / "reference", graded, tmp_path / "out", judge=_judge(server), authorize=True,
                        votes=3, env=NO_ENV)
    assert record["status"] == "graded" and record["score"] == 1.0


@pytest.mark.slow
def test_an_error_vote_makes_every_criterion_error_without_skipping_the_others(graded, tmp_path):
    """Mixed votes with an error: the other votes still run, each criterion is error, the grade's
    status is error with its raw rubric score (0: criteria in error earn nothing), nothing cached."""
    rubric = rubrics.load()
    server = Server(_answer(rubric), _answer(rubric, drop=("placement",)), _answer(rubric))
    cache = tmp_path / "cache"
    record = run_visual(CASE, CASE / "reference", graded, tmp_path / "out", judge=_judge(server), authorize=True,
                        votes=3, env=NO_ENV, cache_dir=cache)
    assert record["status"] == "infrastructure_error" and record["score"] is None and server.calls == 3
    assert "missing_criterion" in record["reason"] and "criteria in error" in record["reason"]
    assert [("error" in v) for v in record["votes"]] == [False, True, False]
    assert record["votes"][1]["error"]["kind"] == "missing_criterion"
    assert {v["verdict"] for v in record["verdicts"].values()} == {"error"}
    assert record["rubric_score"] == 0.0
    assert not list(cache.glob("*.json"))
    good = Server(_answer(rubric))
    again = run_visual(CASE, CASE / "reference", graded, tmp_path / "out2", judge=_judge(good), authorize=True,
                       votes=3, env=NO_ENV, cache_dir=cache)
    assert good.calls == 3 and again["status"] == "graded" and again["score"] == 1.0


def test_a_malformed_answer_is_asked_again_inside_the_grade(graded, tmp_path):
    rubric = rubrics.load()
    server = Server(_answer(rubric, drop=("placement",)), _answer(rubric, "fail"))
    record = run_visual(CASE, CASE / "reference", graded, tmp_path / "out", judge=_judge(server, answer_retries=2),
                        authorize=True, votes=1, env=NO_ENV)
    assert record["status"] == "graded" and record["score"] == 0.0 and server.calls == 2
    assert record["votes"][0]["attempts"] == 2


def test_server_errors_past_the_retries_make_the_grade_an_error(graded, tmp_path):
    failing = httpx2.Response(500, headers={"retry-after-ms": "1"},
                              json={"type": "error", "error": {"type": "api_error", "message": "boom"}})
    server = Server(failing)
    record = run_visual(CASE, CASE / "reference", graded, tmp_path / "out", judge=_judge(server), authorize=True,
                        env=NO_ENV)
    assert record["status"] == "infrastructure_error" and record["score"] is None and "http_500" in record["reason"]
    assert server.calls == 2
    assert _read(tmp_path / "out")["verdicts"]["silhouette"]["verdict"] == "error"


def test_no_key_writes_an_error_record_and_exits_3(graded, tmp_path, monkeypatch):
    for name in judges.CREDENTIAL_ENVS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(judges.MODEL_ENV, raising=False)
    out = tmp_path / "out"
    code = cli.main(["visual", "--case", str(CASE), "--submission", str(CASE / "reference"), "--grade", str(graded),
                     "--out", str(out), "--authorize"])
    record = _read(out)
    assert code == 3 and record["status"] == "infrastructure_error" and "no_credentials" in record["reason"]
    assert record["judge"]["model_requested"] == "claude-opus-5-5" and record["score"] is None


def test_no_key_through_the_usdgrade_command_exits_3_without_a_traceback(graded, tmp_path):
    """The installed command's own path (`usdgrade visual`, a fresh interpreter): a clear error record and
    exit 3, no traceback on stderr."""
    env = {k: v for k, v in os.environ.items()
           if k not in judges.CREDENTIAL_ENVS and k not in (judges.MODEL_ENV, AUTHORIZE_ENV)}
    env["PYTHONPATH"] = str(REPO)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "usd_repair_verifier.commands.cli", "visual", "--case", str(CASE), "--submission",
                           str(CASE / "reference"), "--grade", str(graded), "--out", str(out), "--authorize"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert "visual infrastructure_error" in proc.stdout and "no_credentials" in proc.stdout
    record = _read(out)
    assert record["status"] == "infrastructure_error" and "no_credentials" in record["reason"] and record["score"] is None


@pytest.mark.parametrize("verdict,mapping,status,score", [
    ("pass", None, "graded", 1.0),
    ("fail", None, "graded", 0.0),
    ("unclear", None, "graded", 0.0),
    ("error", None, "infrastructure_error", None),
    ("pass", {"placement": "fail"}, "graded", 1 - 3 / 17),
    ("pass", {"placement": "error"}, "infrastructure_error", None),
])
def test_cli_dry_runs(graded, tmp_path, verdict, mapping, status, score):
    argv = ["visual", "--case", str(CASE), "--submission", str(CASE / "reference"), "--grade", str(graded),
            "--out", str(tmp_path / "out"), "--authorize", "--judge", "fake", "--fake-verdict", verdict]
    if mapping:
        (tmp_path / "m.json").write_text(json.dumps(mapping))
        argv += ["--fake-mapping", str(tmp_path / "m.json")]
    code = cli.main(argv)
    record = _read(tmp_path / "out")
    assert record["dry_run"] is True and record["judge"]["kind"] == "fake"
    assert record["status"] == status and code == (3 if status == "infrastructure_error" else 0)
    assert record["score"] == (None if score is None else pytest.approx(score))


def test_a_bad_mapping_file_is_an_error_record(graded, tmp_path):
    (tmp_path / "m.json").write_text('{"placement": "maybe"}')
    code = cli.main(["visual", "--case", str(CASE), "--submission", str(CASE / "reference"), "--grade", str(graded),
                     "--out", str(tmp_path / "out"), "--authorize", "--judge", "fake",
                     "--fake-mapping", str(tmp_path / "m.json")])
    assert code == 3 and "fake judge" in _read(tmp_path / "out")["reason"]


@pytest.mark.slow
def test_bytes_changed_while_rendering_are_an_error(graded, tmp_path, monkeypatch):
    from usd_repair_verifier.visual import render

    submission = tmp_path / "submission"
    shutil.copytree(CASE / "reference", submission)
    real = render.render_pair

    def render_then_edit(reference, candidate, out_dir=None, **kw):
        result = real(reference, candidate, out_dir, **kw)
        with open(Path(candidate) / "cabinet.usda", "a") as f:
            f.write("\n# edited while rendering\n")
        return result

    monkeypatch.setattr(render, "render_pair", render_then_edit)
    record = run_visual(CASE, submission, graded, tmp_path / "out", authorize=True, judge_kind="fake", env=NO_ENV)
    assert record["status"] == "infrastructure_error" and "while it was rendered" in record["reason"]
    assert record["digests"]["candidate_after_render"] != record["digests"]["candidate_recorded"]


def test_a_verifier_fault_still_writes_visual_json(graded, tmp_path, monkeypatch):
    from usd_repair_verifier.visual import grade

    monkeypatch.setattr(grade, "_authorized", lambda *args: 1 / 0)
    record = run_visual(CASE, CASE / "reference", graded, tmp_path / "out", authorize=True, judge_kind="fake",
                        env=NO_ENV)
    assert record["status"] == "infrastructure_error" and "verifier fault: ZeroDivisionError" in record["reason"]
    assert _read(tmp_path / "out")["status"] == "infrastructure_error"
