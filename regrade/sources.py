"""What `usdgrade regrade` re-grades: stored submissions, each with its case.

Two sources give the same thing, a list of `Stored` submissions:
- Harbor job folders (`JOB/<trial>/result.json`, the submission under `artifacts/app` as
  Harbor collects the declared `/app` artifact, the earlier grade in `verifier/grade.json`);
- the episode records store (regrade/store.py).
A case is found by id in the `--cases` folder: `CASES/<id>/profile.json`, or a Harbor task
folder `CASES/<id>/tests/case/profile.json`; the id is the earlier grade's profile id, else
the task's name. The case found must be the one the earlier grade recorded (its profile digest):
a case of the same id frozen again with other faults, tolerances, limits or closed-book setting
is another case, skipped with the reason unless the operator accepts the change. A trial graded
closed book is graded closed book again, whatever the case found says (`Stored.closed_book`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from usd_repair_verifier.scoring import stored_grade
from usd_repair_verifier.scoring.stored_grade import StoredGrade

# Harbor re-creates a declared artifact under the trial's artifacts/ folder at its path.
DEFAULT_SUBMISSION_IN = "artifacts/app"
WHERE_FIELDS = ("model", "task", "status", "version")


@dataclass
class Stored:
    """One stored submission. `key` is unique in a run and names its output folder."""
    key: str
    submission: Path
    case_id: str | None
    meta: dict = field(default_factory=dict)     # model, task, status, version (of the earlier grade)
    previous_reward: float | None = None
    case: Path | None = None                     # filled by find_case
    problem: str | None = None                   # why it cannot be re-graded (no case, ...)
    trajectory: Path | None = None               # the agent's ATIF trajectory (closed-book cases)
    graded_profiles: tuple[str, ...] = ()        # profile digests the earlier grade(s) recorded
    closed_book: bool = False                    # an earlier grade applied the closed-book rule


def _json(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _get(data: dict | None, *keys):
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _previous_reward(grade: StoredGrade | None, verifier: Path) -> float | None:
    value = grade.authored_usd if grade is not None else None
    if value is None:
        value = _get(_json(verifier / "reward.json"), "authored_usd")
    return float(value) if isinstance(value, (int, float)) else None


def _stored_grade(path: Path) -> StoredGrade | None:
    """The earlier grade (of this version's format or an earlier one: scoring/stored_grade.py),
    None when there is no readable JSON object."""
    data = _json(path)
    return stored_grade.stored(data) if data is not None else None


def trial_submission(trial: Path, submission_in: str = DEFAULT_SUBMISSION_IN) -> Stored:
    """One Harbor trial folder as a stored submission."""
    result = _json(trial / "result.json") or {}
    grade = _stored_grade(trial / "verifier" / "grade.json")
    task = result.get("task_name") or _get(result, "config", "task", "path")
    model = _get(result, "agent_info", "model_info", "name") or _get(result, "config", "agent", "model_name")
    version = None
    if grade is not None:
        version = f"{grade.scoring_version}+{grade.verifier_version}"
    trajectory = trial / "agent" / "trajectory.json"
    closed = grade is not None and grade.closed_book_required
    stored = Stored(
        key=f"{trial.parent.name}/{trial.name}",
        submission=trial / submission_in,
        case_id=(grade.case_id if grade else None) or (Path(task).name if task else None),
        meta={"model": model, "task": task, "status": grade.status if grade else None, "version": version},
        previous_reward=_previous_reward(grade, trial / "verifier"),
        # Harbor's place for it; a trial graded closed book names it even when it is gone (the
        # grade then says no trajectory was found there: closed_book_unverified).
        trajectory=trajectory if closed or trajectory.is_file() else None,
        graded_profiles=(grade.profile_digest,) if grade and grade.profile_digest else (),
        closed_book=closed,
    )
    if not result:
        stored.problem = "no readable result.json: not a Harbor trial"
    elif stored.submission.is_dir():
        stored.problem = changed_since_graded(stored.submission, grade.candidate_digest if grade else None)
    return stored


def changed_since_graded(submission: Path, graded_digest) -> str | None:
    """Why a stored submission is not the one the earlier grade measured (its digest differs), or
    None. A grade that recorded no digest (too large to hash, or none at all) cannot be checked."""
    from usd_repair_verifier.profiles.digest import tree_digest

    if not isinstance(graded_digest, str) or not graded_digest:
        return None
    try:
        now = tree_digest(submission)
    except OSError as error:
        return f"the submission {submission} cannot be read: {error}"
    if now != graded_digest:
        return f"the submission {submission} changed since it was graded (digest differs)"
    return None


def job_submissions(folder: Path, submission_in: str = DEFAULT_SUBMISSION_IN) -> list[Stored]:
    """Every trial of a Harbor job folder (or the folder itself when it is one trial)."""
    folder = Path(folder)
    if (folder / "result.json").is_file() and (folder / "verifier").is_dir():
        return [trial_submission(folder, submission_in)]
    trials = [p for p in sorted(folder.iterdir()) if p.is_dir() and (p / "result.json").is_file()]
    return [trial_submission(t, submission_in) for t in trials]


def find_case(cases: Path | None, case_id: str | None) -> Path | None:
    if cases is None or not case_id or "/" in case_id or case_id in (".", ".."):
        return None
    for candidate in (cases / case_id, cases / case_id / "tests" / "case"):
        if (candidate / "profile.json").is_file():
            return candidate.resolve()
    return None


def profile_changed(stored: Stored, case: Path, shown_as: Path) -> str | None:
    """Why `case` is not the case the earlier grade measured (its profile digest differs), or None.
    A grade that recorded no profile digest cannot be checked. `shown_as` names the case as the
    operator gave it."""
    from usd_repair_verifier.profiles.digest import file_digest

    if not stored.graded_profiles:
        return None
    try:
        digest = file_digest(case / "profile.json")
    except OSError as error:
        return f"the case {shown_as} cannot be read: {error.strerror or error}"
    if digest in stored.graded_profiles:
        return None
    return (f"{shown_as} is profile {digest}, the trial was graded against {stored.graded_profiles[-1]} "
            "(another case under the same id; --accept-profile-change grades against it anyway)")


def parse_where(terms: list[str]) -> dict[str, set[str]]:
    """`--where model=a,b --where status=graded` -> {"model": {"a", "b"}, "status": {"graded"}}."""
    where: dict[str, set[str]] = {}
    for term in terms:
        name, sep, values = term.partition("=")
        if not sep or name not in WHERE_FIELDS:
            raise ValueError(f"--where {term!r}: expected FIELD=VALUE[,VALUE] with FIELD one of {', '.join(WHERE_FIELDS)}")
        where.setdefault(name, set()).update(v for v in values.split(",") if v)
    return where


def selected(stored: Stored, where: dict[str, set[str]]) -> bool:
    return all(str(stored.meta.get(name)) in values for name, values in where.items())
