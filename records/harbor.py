"""Read Harbor (0.26) job and trial folders and plain grade folders into episode records.

Field names follow Harbor's result models (``models/trial/result.py`` TrialResult,
``models/job/result.py`` JobResult), read as plain JSON: Harbor is never imported, unknown fields
are ignored, a field of the wrong type becomes null. A trial folder holds ``result.json``,
``agent/trajectory.json`` (ATIF), ``verifier/`` (the verifier's outputs: ``reward.json``,
``grade.json``, and ``visual.json`` / ``physical.json`` when the separate grades ran) and
``artifacts/``. Harbor stores no attempt index; the store numbers attempts after ingesting.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from usd_repair_verifier.profiles.errors import Refused
from usd_repair_verifier.scoring.stored_grade import stored

MAX_JSON_BYTES = 64 * 1024 * 1024      # a larger record file is skipped, never parsed
SEPARATE_FILES = ("visual", "physical")
SUBMISSION_IN = Path("artifacts") / "app"     # Harbor re-creates the declared artifact /app here

# Harbor's error policy (models/trial/error_policy.py): exceptions after which the reward is still
# valid are the agent's own doing (a timeout, a non-zero exit, a full context). Used only when the
# stored result.json lacks the computed `policy`; Harbor treats unknown names as valid too.
AGENT_CAUSED = {"NonZeroAgentExitCodeError", "AgentTimeoutError", "ContextWindowExceededError",
                "OutputTokenExceededError", "ContextLengthExceededError", "OutputLengthExceededError",
                "AgentSafetyRefusalError", "ContentPolicyViolationError"}
HARNESS_CAUSED = {"EnvironmentStartTimeoutError", "SandboxBuildFailedError", "AgentSetupTimeoutError",
                  "HealthcheckError", "SandboxLikelyOutOfMemoryError", "MemoryLimitExceededError",
                  "RuntimeRequestError", "AddTestsDirError", "DownloadVerifierDirError", "ApiError",
                  "ApiRateLimitError", "ApiInternalServerError", "ApiOverloadedError", "UnknownApiError",
                  "NetworkConnectionError", "ApiConnectionError", "RateLimitError", "InternalServerError",
                  "ServiceUnavailableError", "APIConnectionError", "APIError", "Timeout",
                  "VerifierTimeoutError", "RewardFileNotFoundError", "RewardFileEmptyError",
                  "VerifierOutputParseError", "AgentAuthenticationError", "ModelNotFoundError",
                  "AuthenticationError", "PermissionDeniedError", "NotFoundError", "CancelledError",
                  "BadRequestError", "BudgetExceededError", "ApiUsageLimitError"}


class UnreadableFile(Refused):
    """A record file that cannot be used (missing, a symlink, too large, not JSON)."""


@dataclass
class RecordFile:
    path: Path
    data: Any
    digest: str          # sha256 of the file's bytes


@dataclass
class EpisodeSource:
    """Everything ingest writes for one episode: its fields and the graders' files."""
    fields: dict
    origin: str
    grade: RecordFile | None = None
    separate: dict[str, RecordFile] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)      # files present but skipped, and why


MAX_ID_CHARS = 200
INT_LIMIT = 2 ** 63     # a BIGINT on both databases


def _reject_constant(name: str):
    raise ValueError(f"non-finite number {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:40]} is not finite as a float")
    return value


def json_problem(value: Any, where: str = "", depth: int = 0) -> str | None:
    """Why a parsed JSON value cannot be stored the same on both databases, or None: a non-finite
    number anywhere, a string (or key) that is not valid Unicode (a lone surrogate) or holds NUL."""
    if depth > 200:
        return f"{where or 'the value'} is nested more than 200 deep"
    if isinstance(value, float):
        return None if value == value and abs(value) != float("inf") else f"{where or 'a number'} is not finite"
    if isinstance(value, str):
        if "\x00" in value:
            return f"{where or 'a string'} holds a NUL character"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{where or 'a string'} is not valid Unicode (a lone surrogate)"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            problem = json_problem(str(key), f"{where}.{str(key)[:40]!r} (a key)", depth + 1) \
                or json_problem(item, f"{where}.{str(key)[:40]}", depth + 1)
            if problem:
                return problem
    elif isinstance(value, list):
        for index, item in enumerate(value):
            problem = json_problem(item, f"{where}[{index}]", depth + 1)
            if problem:
                return problem
    return None


def read_json(path: Path, root: Path | None = None) -> RecordFile:
    """A JSON file inside ``root`` (default: its folder): no symlink on the way, bounded size.

    Every number is checked (NaN, Infinity, and a literal too large for a float such as 1e999),
    and every string: NUL characters and lone surrogates are refused. PostgreSQL's JSONB stores
    none of them, and a record must read the same from both databases.
    """
    root = path.parent if root is None else root
    step = root
    for part in path.relative_to(root).parts:
        step = step / part
        if step.is_symlink():
            raise UnreadableFile(f"{step} is a symlink")
    if not path.is_file():
        raise UnreadableFile(f"{path} is missing")
    if path.stat().st_size > MAX_JSON_BYTES:
        raise UnreadableFile(f"{path} is larger than {MAX_JSON_BYTES} bytes")
    raw = path.read_bytes()
    if b"\\u0000" in raw or b"\x00" in raw:
        raise UnreadableFile(f"{path} holds NUL characters")
    try:
        data = json.loads(raw, parse_constant=_reject_constant, parse_float=_finite_float)
    except (ValueError, RecursionError) as error:
        raise UnreadableFile(f"{path} is not JSON: {error}") from None
    problem = json_problem(data)
    if problem:
        raise UnreadableFile(f"{path} cannot be stored: {problem}")
    return RecordFile(path, data, hashlib.sha256(raw).hexdigest())


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and -INT_LIMIT < value < INT_LIMIT
    return value if ok else None


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def _seconds(timing: Any) -> float | None:
    start, end = _text(_get(timing, "started_at")), _text(_get(timing, "finished_at"))
    if not (start and end):
        return None
    try:
        return round((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds(), 3)
    except (ValueError, TypeError):
        return None


def token_totals(result: dict) -> dict:
    """Tokens and cost as Harbor totals them: the trial's agent_result, else its steps' sum."""
    contexts = [result.get("agent_result")] if isinstance(result.get("agent_result"), dict) else [
        step.get("agent_result") for step in result.get("step_results") or []
        if isinstance(step, dict) and isinstance(step.get("agent_result"), dict)]
    totals: dict[str, Any] = {"n_input_tokens": None, "n_cache_tokens": None, "n_output_tokens": None,
                              "cost_usd": None}
    for context in contexts:
        for name in ("n_input_tokens", "n_cache_tokens", "n_output_tokens"):
            if _int(context.get(name)) is not None:
                totals[name] = _int((totals[name] or 0) + context[name])
        cost = context.get("cost_usd")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and abs(cost) < 1e12:
            totals["cost_usd"] = round((totals["cost_usd"] or 0.0) + float(cost), 9)
    return totals


def _exception(result: dict) -> tuple[str | None, str | None, bool | None]:
    """The trial's first recorded exception (trial level, then steps) and whether its reward stands."""
    infos = [result.get("exception_info")] + [s.get("exception_info") for s in result.get("step_results") or []
                                              if isinstance(s, dict)]
    for info in infos:
        if isinstance(info, dict) and _text(info.get("exception_type")):
            name = info["exception_type"]
            valid = _get(info, "policy", "has_valid_reward")
            if not isinstance(valid, bool):
                valid = name in AGENT_CAUSED or name not in HARNESS_CAUSED
            return name, _text(info.get("exception_message")), valid
    return None, None, None


def _model(result: dict) -> tuple[str | None, str | None]:
    name = _text(_get(result, "agent_info", "model_info", "name"))
    provider = _text(_get(result, "agent_info", "model_info", "provider"))
    if name is None:                           # the run's configured model, "provider/name"
        configured = _text(_get(result, "config", "agent", "model_name"))
        if configured:
            provider, _, name = configured.rpartition("/")
            provider = provider or None
    return name, provider


def _trajectory(trial_dir: Path) -> tuple[int | None, str | None, str | None]:
    path = trial_dir / "agent" / "trajectory.json"
    if not path.exists() and not path.is_symlink():
        return None, None, None
    try:
        record = read_json(path, trial_dir)
    except UnreadableFile as error:
        return None, None, f"trajectory skipped: {error}"
    steps = record.data.get("steps") if isinstance(record.data, dict) else None
    return (len(steps) if isinstance(steps, list) else None), record.digest, None


def _submission_path(trial_dir: Path) -> str | None:
    """The kept submission's absolute path (for re-grading), when the trial holds it."""
    step = trial_dir
    for part in SUBMISSION_IN.parts:
        step = step / part
        if step.is_symlink() or not step.is_dir():
            return None
    return str(step.resolve())


def _graders_files(root: Path, folder: Path, source: EpisodeSource) -> None:
    """grade.json, visual.json, physical.json of one verifier output folder, when readable."""
    for name in ("grade",) + SEPARATE_FILES:
        path = folder / f"{name}.json"
        if not path.exists() and not path.is_symlink():
            continue
        try:
            record = read_json(path, root)
        except UnreadableFile as error:
            source.notes.append(f"{name}.json skipped: {error}")
            continue
        if not isinstance(record.data, dict):
            source.notes.append(f"{name}.json skipped: {path} is not a JSON object")
        elif name == "grade":
            source.grade = record
        else:
            source.separate[name] = record


def _from_grade(source: EpisodeSource) -> None:
    """The fields only the grade knows: case id, profile digest, the submission's digest."""
    grade = stored(source.grade.data) if source.grade else None
    source.fields.update(case_id=grade.case_id if grade else None,
                         profile_digest=grade.profile_digest if grade else None,
                         submission_digest=grade.candidate_digest if grade else None)


def trial_episode(trial_dir: Path, result: dict, job: dict | None = None) -> EpisodeSource:
    """One Harbor trial folder (its parsed result.json given) as an episode."""
    job = job or {}
    exception_type, exception_message, valid_reward = _exception(result)
    model_name, model_provider = _model(result)
    steps, trajectory_digest, trajectory_note = _trajectory(trial_dir)
    fields = {
        "episode_id": result["id"], "source": "harbor",
        "trial_name": _text(result.get("trial_name")),
        "job_id": _text(_get(result, "config", "job_id")) or job.get("job_id"),
        "job_name": job.get("job_name"),
        "task_name": _text(result.get("task_name")), "task_checksum": _text(result.get("task_checksum")),
        "agent_name": _text(_get(result, "agent_info", "name")),
        "agent_version": _text(_get(result, "agent_info", "version")),
        "model_name": model_name, "model_provider": model_provider,
        "started_at": _text(result.get("started_at")), "finished_at": _text(result.get("finished_at")),
        "agent_seconds": _seconds(result.get("agent_execution")),
        **token_totals(result),
        "exception_type": exception_type, "exception_message": exception_message,
        "exception_valid_reward": valid_reward,
        "trajectory_steps": steps, "trajectory_digest": trajectory_digest,
        "submission_path": _submission_path(trial_dir),
        "trial_result": result,
    }
    source = EpisodeSource(fields, origin="harbor")
    if trajectory_note:
        source.notes.append(trajectory_note)
    _graders_files(trial_dir, trial_dir / "verifier", source)
    _from_grade(source)
    mismatch = _reward_mismatch(result, source.grade.data if source.grade else None)
    if mismatch:
        source.notes.append(mismatch)
    return source


def _reward_mismatch(result: dict, grade: dict | None) -> str | None:
    """Harbor's recorded reward against grade.json's: stored as written, but a difference is said."""
    recorded = _get(result, "verifier_result", "rewards", "authored_usd")
    if grade is None or recorded is None:
        return None
    graded = grade.get("authored_usd")
    a, b = _finite(recorded), _finite(graded)
    if a is not None and b is not None and abs(a - b) <= 1e-9:
        return None
    return f"Harbor recorded authored_usd {recorded!r} but grade.json says {graded!r}"


def folder_episode(folder: Path) -> EpisodeSource:
    """A plain grade folder (grade.json and the separate grades beside it) as an episode.

    It names no trial, so the episode is the grade folder itself, where it lies:
    ``folder:<case id>:<sha256 of its absolute path, 16 hex digits>``. Two folders holding the same
    bytes (two trials that submitted the same package, re-graded) are two episodes; the same
    folder ingested again is the same one. Its trial name is the folder's name, its job name the
    name of the folder above.
    """
    source = EpisodeSource({"source": "folder"}, origin="folder")
    _graders_files(folder, folder, source)
    if source.grade is None:
        return source
    _from_grade(source)
    case = (source.fields.get("case_id") or "unknown-case")[:100]
    place = hashlib.sha256(os.fsencode(folder.resolve())).hexdigest()[:16]
    source.fields.update(episode_id=f"folder:{case}:{place}", task_name=case, trial_name=folder.name,
                         job_name=folder.resolve().parent.name or None)
    return source


def graded_trial(store, folder: Path, source: EpisodeSource) -> str | None:
    """The stored Harbor trial a grade folder re-grades, or None.

    `usdgrade regrade JOB` writes OUT/<version>/<job folder>/<trial folder>/grade.json: a folder
    named like a stored trial, under a folder named like its job, whose grade is of the very
    submission that trial's grade recorded (same candidate digest, same case) is that trial's
    grade. Anything less (no digest to compare, two trials that match) is not attached.
    """
    digest, case = source.fields.get("submission_digest"), source.fields.get("case_id")
    if not digest:
        return None
    matches = [e for e in store.iter_episodes({"source": "harbor", "trial_name": folder.name})
               if e.submission_digest == digest and (e.case_id in (None, case))
               and folder.parent.name in {e.job_name, _trial_job_folder(e)}]
    return matches[0].episode_id if len(matches) == 1 else None


def _trial_job_folder(episode) -> str | None:
    """The name of the job folder the trial was read from (its kept submission's path)."""
    path = getattr(episode, "submission_path", None)
    return Path(path).parent.parent.parent.name if path else None


def is_trial_result(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("trial_name"), str) \
        and isinstance(data.get("task_name"), str)


def trial_id_problem(data: dict) -> str | None:
    """Why a trial result's id cannot key an episode, or None."""
    value = data.get("id")
    if not isinstance(value, str) or not value.strip():
        return "result.json has no trial id"
    if len(value) > MAX_ID_CHARS:
        return f"the trial id is longer than {MAX_ID_CHARS} characters"
    return None


def is_job_result(data: Any) -> bool:
    return isinstance(data, dict) and "n_total_trials" in data and "id" in data


def job_identity(job_dir: Path, result: dict) -> dict:
    """The job's id (result.json) and name (config.json's job_name, else the folder's name)."""
    name = job_dir.name
    config = job_dir / "config.json"
    if config.is_file() and not config.is_symlink():
        try:
            name = _text(_get(read_json(config).data, "job_name")) or name
        except UnreadableFile:
            pass
    return {"job_id": _text(str(result.get("id"))) if result.get("id") is not None else None,
            "job_name": name}
