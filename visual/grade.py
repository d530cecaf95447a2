"""The visual grade: eligibility, trusted renders, rubric judging, the OUT/visual.json record.

Separate from the reward: it reads grade.json, never writes it, never touches authored_usd
and never produces a combined score. Statuses (each with a reason; score null unless graded):
``not_eligible`` -> ``error`` (bytes changed, case or inputs unusable) -> ``not_authorized``
-> ``graded`` | ``error`` (no key, a criterion in error after the retries, a render failure, the
bytes changed while rendering, a verifier fault). A grade in error keeps its raw ``rubric_score``
(criteria in error earn 0); a fake judge's run is marked ``dry_run``.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from usd_repair_verifier.profiles.digest import tree_digest
from usd_repair_verifier.profiles.errors import NotAGrade
from usd_repair_verifier.scoring import grade_file
from usd_repair_verifier.scoring.grade_file import Grade
from usd_repair_verifier.scoring.outputs import prepare_separate_output, write_json
from usd_repair_verifier.scoring.progress import progress, working

from . import judge as judges
from . import render, rubric as rubrics
from .record import VisualRecord

VISUAL_FILE = "visual.json"
RENDER_DIR = "renders"
AUTHORIZE_ENV = "USDGRADE_VISUAL_AUTHORIZE"
CACHE_ENV = "USDGRADE_VISUAL_CACHE"
TRUTHY = {"1", "true", "yes", "on"}
RECORD_VERSION = "2"


FAKE_JUDGE = "--judge fake"


def _authorized(flag: bool, env, fake_judge: bool = False) -> dict:
    if flag:
        return {"authorized": True, "source": "--authorize"}
    if str(env.get(AUTHORIZE_ENV, "")).strip().lower() in TRUTHY:
        return {"authorized": True, "source": AUTHORIZE_ENV}
    if fake_judge:   # a dry run: no image leaves this machine, so there is nothing to authorize
        return {"authorized": True, "source": FAKE_JUDGE}
    return {"authorized": False, "source": None}


def eligibility(grade: Grade) -> tuple[bool, str | None]:
    """Objective grade gates, in order: graded, valid, preservation, full objective success."""
    if grade.status != "graded":
        return False, f"objective grade status is {grade.status.value!r}, not 'graded'"
    if grade.submission_valid is not True:
        return False, "the submission is not valid"
    if grade.preservation_pass is not True:
        return False, "preservation did not pass"
    if grade.objective_success is not True:
        return False, "no full objective success"
    return True, None


def cache_key(render_digests: dict, rubric_digest: str, model: str, votes: int, judge_kind: str) -> str:
    material = json.dumps({"renders": render_digests, "rubric": rubric_digest, "model": model, "votes": votes,
                           "judge": judge_kind, "prompt_version": judges.PROMPT_VERSION,
                           "renderer": render.RENDERER_VERSION}, sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()


def _usage_total(votes: list[dict]) -> dict:
    total: dict[str, int] = {}
    for v in votes:
        for k, n in (v.get("usage") or {}).items():
            if isinstance(n, int):
                total[k] = total.get(k, 0) + n
    return total


def run_visual(case: Path, submission: Path, grade_path: Path, out: Path, *, authorize: bool = False,
               judge=None, judge_kind: str = "anthropic", judge_model: str | None = None, votes: int = 1,
               rubric_path: Path | None = None, cache_dir: Path | None = None, env=None,
               fake_verdict: str = "pass", fake_mapping: dict | Path | None = None) -> dict:
    """Run the visual grade and write OUT/visual.json (and OUT/renders/*.png). Returns the record.

    ``judge`` may be an already-built judge object (tests inject one); otherwise one is built
    from ``judge_kind`` ("anthropic" | "fake") only after every gate has passed. Whatever happens
    after OUT is prepared, visual.json is written: a verifier fault is status ``error`` with its cause.
    """
    env = os.environ if env is None else env
    case, submission, out = Path(case), Path(submission), Path(out)
    prepare_separate_output(out, submission, VISUAL_FILE, [("case", case), ("grade", grade_path),
                                                          ("rubric", rubric_path), ("judge cache", cache_dir)])
    stale = out / RENDER_DIR                  # renders of an earlier run are never left beside a new record
    if stale.is_dir() and not stale.is_symlink():
        for old in stale.glob("*.png"):
            old.unlink()
    run = _Run(out, case, submission, grade_path)
    try:
        return _grade(run, authorize=authorize, judge=judge, judge_kind=judge_kind, judge_model=judge_model,
                      votes=int(votes), rubric_path=rubric_path, cache_dir=cache_dir, env=env,
                      fake_verdict=fake_verdict, fake_mapping=fake_mapping)
    except Exception as error:  # a verifier fault: an explicit error record, never a traceback without one
        return run.finish("infrastructure_error", f"verifier fault: {type(error).__name__}: {error}")


class _Run:
    """The record being built and the one way to finish it (write OUT/visual.json)."""

    def __init__(self, out: Path, case: Path, submission: Path, grade_path: Path):
        self.out = out
        self.started = time.monotonic()
        self.record: dict = {
            "record_version": RECORD_VERSION,
            "status": None, "reason": None, "score": None, "rubric_score": None, "dry_run": False,
            "case": str(case), "submission": str(submission), "grade_json": str(grade_path),
            "objective": None, "digests": None, "authorization": None,
            "renders": None, "rubric": None, "judge": None, "votes": [], "verdicts": None,
            "usage": None, "cache": None, "timings": {},
        }

    def finish(self, status: str, reason: str | None, score=None) -> dict:
        self.record.update(status=status, reason=reason, score=score)
        self.record["timings"]["total_s"] = round(time.monotonic() - self.started, 3)
        # The file is written from its model (visual/record.py, which the published schema is
        # generated from): a record the model does not describe is a verifier fault, never written.
        write_json(self.out / VISUAL_FILE, VisualRecord.model_validate(self.record).model_dump(exclude_unset=True))
        return self.record


def _check_inputs(run: _Run, case: Path, submission: Path, grade_path: Path):
    """Steps 0-2: the objective grade, eligibility, the graded bytes, the case. Returns (loaded case,
    None) or (None, finished record)."""
    record = run.record
    try:   # the authored-USD grade this verifier wrote, read back as its own type
        grade = grade_file.load(grade_path)
    except NotAGrade as error:
        return None, run.finish("infrastructure_error", f"cannot read the objective grade {grade_path}: {error}")
    record["objective"] = grade.model_dump(mode="json", include={
        "status", "submission_valid", "preservation_pass", "objective_success", "authored_usd"})
    ok, why = eligibility(grade)
    if not ok:
        return None, run.finish("not_eligible", why)
    recorded = grade.digests.candidate.digest
    if not recorded:
        return None, run.finish("infrastructure_error", "grade.json records no candidate digest")
    try:
        current = tree_digest(submission)
    except OSError as error:
        return None, run.finish("infrastructure_error", f"cannot hash the submission: {error}")
    record["digests"] = {"candidate_recorded": recorded, "candidate_now": current}
    if current != recorded:
        return None, run.finish("infrastructure_error", f"the submission changed since it was graded: digest {current} != "
                                         f"recorded {recorded}")
    try:
        from usd_repair_verifier.profiles.case import load_case

        loaded = load_case(case, verify_digests=True)
    except Exception as error:  # CaseError, DigestMismatch, a malformed profile
        return None, run.finish("infrastructure_error", f"case unusable: {type(error).__name__}: {error}")
    reference_digest = loaded.profile.reference.digest
    record["digests"]["reference"] = reference_digest
    graded_reference = grade.digests.reference
    if graded_reference != reference_digest:
        return None, run.finish("infrastructure_error", f"grade.json was made against another reference ({graded_reference}), "
                                         f"not this case's ({reference_digest})")
    return loaded, None


def _render(run: _Run, loaded, submission: Path):
    """Step 4: renders of both packages, then the candidate's bytes hashed again (the renderer read
    the same bytes that were graded). Returns (images, None) or (None, finished record)."""
    record = run.record
    t0 = time.monotonic()
    try:
        with working("visual: rendering reference and candidate", "five views each"):
            rendered = render.render_pair(loaded.paths.reference, submission, run.out / RENDER_DIR,
                                          variant_selections=loaded.profile.variant_selections)
    except Exception as error:  # RenderError, a USD failure: no score from a broken render
        return None, run.finish("infrastructure_error", f"render failed: {type(error).__name__}: {error}")
    record["timings"]["render_s"] = round(time.monotonic() - t0, 3)
    try:
        after = tree_digest(submission)
    except OSError as error:
        return None, run.finish("infrastructure_error", f"cannot hash the submission after rendering: {error}")
    record["digests"]["candidate_after_render"] = after
    if after != record["digests"]["candidate_recorded"]:
        return None, run.finish("infrastructure_error", f"the submission changed while it was rendered: digest {after} != "
                                         f"recorded {record['digests']['candidate_recorded']}")
    roles = [r for r in render.ROLES if r in rendered]
    images = [judges.Image(role, view, rendered[role][view]["png"], rendered[role][view]["digest"])
              for view in rendered["views"] for role in roles]
    for role in roles:
        for view in rendered["views"]:
            entry = rendered[role][view]
            entry.pop("png")
            entry["file"] = f"{RENDER_DIR}/{entry['file']}"
    record["renders"] = rendered
    return images, None


def _make_judge(run: _Run, judge_kind, judge_model, votes, env, fake_verdict, fake_mapping):
    """The judge named on the command line. Returns (judge, None) or (None, finished record)."""
    if judge_kind == "fake":
        run.record["dry_run"] = True
        try:
            if isinstance(fake_mapping, (str, Path)):
                fake_mapping = judges.load_fake_mapping(fake_mapping)
            return judges.FakeJudge(rule=fake_verdict, mapping=fake_mapping), None
        except ValueError as error:
            return None, run.finish("infrastructure_error", f"fake judge: {error}")
    if judge_kind != "anthropic":
        return None, run.finish("infrastructure_error", f"unknown judge {judge_kind!r}")
    model = judges.resolve_model(judge_model, env)
    try:
        return judges.AnthropicJudge(model, env=env), None
    except Exception as error:  # JudgeError (no key, SDK missing), an SDK fault
        kind = getattr(error, "kind", type(error).__name__)
        run.record["judge"] = {"kind": judge_kind, "model_requested": model, "votes_requested": votes}
        return None, run.finish("infrastructure_error", f"cannot start the anthropic judge: {kind}: {getattr(error, 'message', error)}")


def _grade(run: _Run, *, authorize, judge, judge_kind, judge_model, votes, rubric_path, cache_dir, env,
           fake_verdict, fake_mapping) -> dict:
    record = run.record
    case, submission = Path(record["case"]), Path(record["submission"])
    loaded, finished = _check_inputs(run, case, submission, Path(record["grade_json"]))
    if finished:
        return finished
    # 3. explicit authorization: images go to an outside service and cost money (not the fake judge's)
    fake = getattr(judge, "kind", None) == "fake" if judge is not None else judge_kind == "fake"
    record["authorization"] = _authorized(authorize, env, fake)
    if not record["authorization"]["authorized"]:
        return run.finish("not_authorized", f"the visual grade sends images to an outside judge: pass --authorize "
                                            f"or set {AUTHORIZE_ENV}=1")
    try:
        rubric = rubrics.load(rubric_path)
    except rubrics.RubricError as error:
        return run.finish("infrastructure_error", str(error))
    rubric_digest = rubrics.digest(rubric)
    record["rubric"] = {"source": str(rubric_path) if rubric_path else "default", "digest": rubric_digest,
                        "content": rubric}
    if votes < 1:
        return run.finish("infrastructure_error", f"--judge-votes must be at least 1, not {votes}")
    if judge is None:
        judge, finished = _make_judge(run, judge_kind, judge_model, votes, env, fake_verdict, fake_mapping)
        if finished:
            return finished
    record["dry_run"] = judge.kind == "fake"
    images, finished = _render(run, loaded, submission)
    if finished:
        return finished
    key = cache_key({i.label: i.digest for i in images}, rubric_digest, judge.model, votes, judge.kind)
    cache_root = Path(cache_dir or env.get(CACHE_ENV) or (run.out / ".visual-cache"))
    cache_file = cache_root / f"{key}.json"
    record["cache"] = {"key": key, "dir": str(cache_root), "hit": False}
    cached = _read_cache(cache_file, key)
    if cached is not None:
        record.update(judge=cached["judge"], votes=cached["votes"], verdicts=cached["verdicts"],
                      usage=cached["usage"], rubric_score=cached["score"])
        record["cache"]["hit"] = True
        return run.finish("graded", None, cached["score"])
    return _judge_and_score(run, judge, rubric, images, votes, cache_file)


def _read_cache(cache_file: Path, key: str) -> dict | None:
    if not cache_file.is_file():
        return None
    try:
        cached = json.loads(cache_file.read_text(encoding="utf-8"))
        if cached.get("key") == key and all(k in cached for k in ("judge", "votes", "verdicts", "usage", "score")):
            return cached
    except (OSError, ValueError):
        pass  # an unreadable cache entry is a miss
    return None


def _judge_and_score(run: _Run, judge, rubric: dict, images: list, votes: int, cache_file: Path) -> dict:
    """Step 5: every vote is asked (a failed vote never skips the others), then each criterion's final
    verdict; any criterion in error makes the grade an error (its raw rubric score kept, never cached)."""
    record = run.record
    record["judge"] = {"kind": judge.kind, "model_requested": judge.model, "models_answered": [], "request_ids": [],
                       "votes_requested": votes, "prompt_version": judges.PROMPT_VERSION}
    outcomes: list = []
    t0 = time.monotonic()
    for index in progress(range(votes), f"visual: asking the {judge.kind} judge", "vote"):
        try:
            vote = judge.vote(rubric, images)
        except judges.JudgeError as error:
            outcomes.append(None)
            record["votes"].append({"index": index, "error": {"kind": error.kind, "message": error.message},
                                    "attempts": error.attempts, "model": error.model, "request_id": error.request_id,
                                    "usage": error.usage or {}})
            answered, request_id = error.model, error.request_id
        else:
            outcomes.append(vote)
            record["votes"].append({"index": index, "attempts": vote.attempts, "model": vote.model,
                                    "request_id": vote.request_id, "usage": vote.usage,
                                    "stop_reason": vote.stop_reason, "verdicts": vote.verdicts})
            answered, request_id = vote.model, vote.request_id
        if answered:
            record["judge"]["models_answered"].append(answered)
        if request_id:
            record["judge"]["request_ids"].append(request_id)
    record["timings"]["judge_s"] = round(time.monotonic() - t0, 3)
    final = judges.aggregate(rubric, outcomes)
    record["verdicts"] = {c["id"]: {**final[c["id"]], "importance": c["importance"], "weight": rubrics.weight(c)}
                          for c in rubric["criteria"]}
    record["usage"] = _usage_total(record["votes"])
    score = rubrics.score(rubric, {cid: v["verdict"] for cid, v in final.items()})
    record["rubric_score"] = score
    in_error = [cid for cid, v in final.items() if v["verdict"] == "error"]
    if in_error:
        failed = sorted({f"{v['error']['kind']}" for v in record["votes"] if "error" in v})
        return run.finish("infrastructure_error", f"{len(in_error)} criteria in error: {', '.join(in_error)} "
                                   f"({outcomes.count(None)} of {votes} vote(s) failed: {', '.join(failed)})")
    write_json(cache_file, {"key": cache_file.stem, "judge": record["judge"], "votes": record["votes"],
                            "verdicts": record["verdicts"], "usage": record["usage"], "score": score})
    return run.finish("graded", None, score)

