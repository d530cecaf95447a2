"""The visual grade: eligibility, trusted renders, rubric judging, the OUT/visual.json record.

Separate from the reward: it reads grade.json, never writes it, never touches authored_usd
and never produces a combined score. Statuses (each with a reason; score null unless graded):
``not_eligible`` -> ``error`` (bytes changed, case or inputs unusable) -> ``not_authorized``
-> ``graded`` | ``error`` (judge failed after retries, truncated, refused, malformed...).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from profiles.digest import tree_digest
from scoring.outputs import prepare_separate_output, write_json

from . import judge as judges
from . import render, rubric as rubrics

VISUAL_FILE = "visual.json"
RENDER_DIR = "renders"
AUTHORIZE_ENV = "USDGRADE_VISUAL_AUTHORIZE"
CACHE_ENV = "USDGRADE_VISUAL_CACHE"
TRUTHY = {"1", "true", "yes", "on"}
RECORD_VERSION = "1"


def _authorized(flag: bool, env) -> dict:
    if flag:
        return {"authorized": True, "source": "--authorize"}
    if str(env.get(AUTHORIZE_ENV, "")).strip().lower() in TRUTHY:
        return {"authorized": True, "source": AUTHORIZE_ENV}
    return {"authorized": False, "source": None}


def eligibility(grade: dict) -> tuple[bool, str | None]:
    """Objective grade gates, in order: graded, valid, preservation, full objective success."""
    if grade.get("status") != "graded":
        return False, f"objective grade status is {grade.get('status')!r}, not 'graded'"
    if grade.get("submission_valid") is not True:
        return False, "the submission is not valid"
    if grade.get("preservation_pass") is not True:
        return False, "preservation did not pass"
    if grade.get("objective_success") is not True:
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
               fake_verdict: str = "pass") -> dict:
    """Run the visual grade and write OUT/visual.json (and OUT/renders/*.png). Returns the record.

    ``judge`` may be an already-built judge object (tests inject one); otherwise one is built
    from ``judge_kind`` ("anthropic" | "fake") only after every gate has passed.
    """
    env = os.environ if env is None else env
    started = time.monotonic()
    case, submission, out = Path(case), Path(submission), Path(out)
    prepare_separate_output(out, submission, VISUAL_FILE)
    stale = out / RENDER_DIR                  # renders of an earlier run are never left beside a new record
    if stale.is_dir() and not stale.is_symlink():
        for old in stale.glob("*.png"):
            old.unlink()
    votes = int(votes)
    record: dict = {
        "record_version": RECORD_VERSION,
        "status": None, "reason": None, "score": None,
        "case": str(case), "submission": str(submission), "grade_json": str(grade_path),
        "objective": None, "digests": None, "authorization": None,
        "renders": None, "rubric": None, "judge": None, "votes": [], "verdicts": None,
        "usage": None, "cache": None, "timings": {},
    }

    def finish(status: str, reason: str | None, score=None) -> dict:
        record.update(status=status, reason=reason, score=score)
        record["timings"]["total_s"] = round(time.monotonic() - started, 3)
        write_json(out / VISUAL_FILE, record)
        return record

    # 0. inputs we need to say anything at all
    try:
        grade = json.loads(Path(grade_path).read_text(encoding="utf-8"))
        if not isinstance(grade, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as error:
        return finish("error", f"cannot read the objective grade {grade_path}: {error}")
    record["objective"] = {k: grade.get(k) for k in
                           ("status", "submission_valid", "preservation_pass", "objective_success", "authored_usd")}

    # 1. eligibility
    ok, why = eligibility(grade)
    if not ok:
        return finish("not_eligible", why)

    # 2. the bytes now are the bytes that were graded
    recorded = ((grade.get("digests") or {}).get("candidate") or {}).get("digest")
    if not recorded:
        return finish("error", "grade.json records no candidate digest")
    try:
        current = tree_digest(submission)
    except OSError as error:
        return finish("error", f"cannot hash the submission: {error}")
    record["digests"] = {"candidate_recorded": recorded, "candidate_now": current}
    if current != recorded:
        return finish("error", f"the submission changed since it was graded: digest {current} != recorded {recorded}")
    try:
        from profiles.case import load_case

        loaded = load_case(case, verify_digests=True)
    except Exception as error:  # CaseError, DigestMismatch, a malformed profile
        return finish("error", f"case unusable: {type(error).__name__}: {error}")
    reference_digest = loaded.profile.reference.digest
    record["digests"]["reference"] = reference_digest
    graded_reference = (grade.get("digests") or {}).get("reference")
    if graded_reference != reference_digest:
        return finish("error", f"grade.json was made against another reference ({graded_reference}), "
                               f"not this case's ({reference_digest})")

    # 3. explicit authorization: images go to an outside service and cost money
    record["authorization"] = _authorized(authorize, env)
    if not record["authorization"]["authorized"]:
        return finish("not_authorized", f"the visual grade sends images to an outside judge: pass --authorize "
                                        f"or set {AUTHORIZE_ENV}=1")

    # 4. rubric, renders
    try:
        rubric = rubrics.load(rubric_path)
    except rubrics.RubricError as error:
        return finish("error", str(error))
    rubric_digest = rubrics.digest(rubric)
    record["rubric"] = {"source": str(rubric_path) if rubric_path else "default", "digest": rubric_digest,
                        "content": rubric}
    if votes < 1:
        return finish("error", f"--judge-votes must be at least 1, not {votes}")
    t0 = time.monotonic()
    try:
        rendered = render.render_pair(loaded.paths.reference, submission, out / RENDER_DIR)
    except Exception as error:  # RenderError, a USD failure: no score from a broken render
        return finish("error", f"render failed: {type(error).__name__}: {error}")
    record["timings"]["render_s"] = round(time.monotonic() - t0, 3)
    images = [judges.Image(role, view, rendered[role][view]["png"], rendered[role][view]["digest"])
              for role in ("reference", "candidate") for view in rendered["views"]]
    for role in ("reference", "candidate"):
        for view in rendered["views"]:
            entry = rendered[role][view]
            entry.pop("png")
            entry["file"] = f"{RENDER_DIR}/{entry['file']}"
    record["renders"] = rendered
    render_digests = {i.label: i.digest for i in images}

    # 5. judge (or the cache)
    if judge is None:
        if judge_kind == "fake":
            judge = judges.FakeJudge(rule=fake_verdict)
        elif judge_kind == "anthropic":
            model = judges.resolve_model(judge_model, env)
            try:
                judge = judges.AnthropicJudge(model)
            except Exception as error:  # SDK missing, no credentials
                record["judge"] = {"kind": judge_kind, "model_requested": model, "votes_requested": votes}
                return finish("error", f"cannot start the anthropic judge: {type(error).__name__}: {error}")
        else:
            return finish("error", f"unknown judge {judge_kind!r}")
    model = judge.model
    key = cache_key(render_digests, rubric_digest, model, votes, judge.kind)
    cache_root = Path(cache_dir or env.get(CACHE_ENV) or (out / ".visual-cache"))
    cache_file = cache_root / f"{key}.json"
    record["cache"] = {"key": key, "dir": str(cache_root), "hit": False}
    if cache_file.is_file():
        try:
            cached = json.loads(cache_file.read_text(encoding="utf-8"))
            if cached.get("key") == key:
                record.update(judge=cached["judge"], votes=cached["votes"], verdicts=cached["verdicts"],
                              usage=cached["usage"])
                record["cache"]["hit"] = True
                return finish("graded", None, cached["score"])
        except (OSError, ValueError, KeyError):
            pass  # an unreadable cache entry is a miss
    record["judge"] = {"kind": judge.kind, "model_requested": model, "models_answered": [], "request_ids": [],
                       "votes_requested": votes, "prompt_version": judges.PROMPT_VERSION}
    done: list[judges.Vote] = []
    t0 = time.monotonic()
    for index in range(votes):
        try:
            vote = judge.vote(rubric, images)
        except judges.JudgeError as error:
            record["votes"].append({"index": index, "error": {"kind": error.kind, "message": error.message},
                                    "model": error.model, "request_id": error.request_id,
                                    "usage": error.usage or {}})
            if error.model:
                record["judge"]["models_answered"].append(error.model)
            if error.request_id:
                record["judge"]["request_ids"].append(error.request_id)
            record["usage"] = _usage_total(record["votes"])
            record["timings"]["judge_s"] = round(time.monotonic() - t0, 3)
            return finish("error", f"judge vote {index + 1} of {votes} failed: {error.kind}: {error.message}")
        done.append(vote)
        record["votes"].append({"index": index, "model": vote.model, "request_id": vote.request_id,
                                "usage": vote.usage, "stop_reason": vote.stop_reason, "verdicts": vote.verdicts})
        if vote.model:
            record["judge"]["models_answered"].append(vote.model)
        if vote.request_id:
            record["judge"]["request_ids"].append(vote.request_id)
    record["timings"]["judge_s"] = round(time.monotonic() - t0, 3)
    final = judges.aggregate(rubric, done)
    record["verdicts"] = {c["id"]: {"verdict": final[c["id"]], "importance": c["importance"],
                                    "weight": rubrics.weight(c)} for c in rubric["criteria"]}
    record["usage"] = _usage_total(record["votes"])
    score = rubrics.score(rubric, final)
    write_json(cache_file, {"key": key, "judge": record["judge"], "votes": record["votes"],
                            "verdicts": record["verdicts"], "usage": record["usage"], "score": score})
    return finish("graded", None, score)
