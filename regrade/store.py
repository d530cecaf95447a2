"""`usdgrade regrade --db URL`: the episode records store as regrade's source and sink.

Written against the store's documented Python API (`usd_repair_verifier.records.store.open_store`, `iter_episodes`,
`grades`, `has_grade`, `upsert_grade`). Episodes come from the store; each one's submission is
found on disk (the store keeps its digest, not its bytes):
- an `episodes.submission_path` column, when the store has one;
- else the trial folder named by Harbor's `trial_uri` in the stored `result.json`, or
  `--submissions-root/<job_name>/<trial_name>` when the job folders have moved;
and the folder's digest must be the one recorded when it was graded, or the episode is not
re-graded (a changed submission is not the one the agent left). New grades are written as rows
with `origin="regrade"`, keyed by this verifier's scoring and verifier versions; only the
driver writes.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from urllib.parse import unquote, urlparse

from usd_repair_verifier.profiles.schema import SCORING_VERSION

from usd_repair_verifier.scoring import VERIFIER_VERSION
from usd_repair_verifier.scoring.stored_grade import CLOSED_BOOK_STATUSES
from usd_repair_verifier.regrade.sources import DEFAULT_SUBMISSION_IN, Stored, changed_since_graded
from usd_repair_verifier.regrade.warm import ItemResult


class StoreSink:
    def __init__(self, url: str):
        from usd_repair_verifier.records.store import open_store  # the `records` extra: SQLAlchemy (and psycopg for PostgreSQL)

        self.store = open_store(url)

    def done(self, stored: Stored) -> bool:
        return self.store.has_grade(stored.key, scoring_version=SCORING_VERSION, verifier_version=VERIFIER_VERSION)

    def write(self, stored: Stored, result: ItemResult) -> None:
        if result.grade_text is None:
            return
        digest = hashlib.sha256(result.grade_text.encode("utf-8")).hexdigest()
        self.store.upsert_grade(stored.key, json.loads(result.grade_text), origin="regrade", record_digest=digest)


def _trial_folder(episode, submissions_root: Path | None) -> Path | None:
    if submissions_root is not None and episode.job_name and episode.trial_name:
        return submissions_root / episode.job_name / episode.trial_name
    uri = (episode.trial_result or {}).get("trial_uri") if isinstance(episode.trial_result, dict) else None
    if isinstance(uri, str) and uri.startswith("file:"):
        return Path(unquote(urlparse(uri).path))
    return None


def _submission(episode, submissions_root: Path | None) -> Path | None:
    path = getattr(episode, "submission_path", None)
    if path:
        return Path(path)
    trial = _trial_folder(episode, submissions_root)
    return trial / DEFAULT_SUBMISSION_IN if trial is not None else None


def _latest(grades: list[dict]) -> dict | None:
    """The grade to compare against: the last one the store lists for the episode."""
    return grades[-1] if grades else None


def _trajectory(episode, submissions_root: Path | None, submission: Path | None, closed_book: bool) -> Path | None:
    """The episode's trajectory in the Harbor trial folder its submission was found in (`artifacts/app`
    in it), else in the trial folder the store names. An episode graded closed book names it even
    when it is gone, so that its grade says no trajectory was found there (closed_book_unverified)."""
    if submission is not None and submission.parent.name == "artifacts":
        trial = submission.parent.parent
    else:
        trial = _trial_folder(episode, submissions_root)
    path = trial / "agent" / "trajectory.json" if trial is not None else None
    if path is not None and (closed_book or path.is_file()):
        return path
    return None


def _closed_book(grades: list[dict]) -> bool:
    """Some grade of the episode applied the closed-book rule (its `closed_book` outcome is recorded
    only then: clean, violation or unverified)."""
    return any(g.get("closed_book") is not None or g.get("status") in CLOSED_BOOK_STATUSES for g in grades)


def store_submissions(store, submissions_root: Path | None = None) -> list[Stored]:
    stored = []
    for episode in store.iter_episodes():
        grades = store.grades(episode.episode_id)
        previous = _latest(grades)
        submission = _submission(episode, submissions_root)
        closed = _closed_book(grades)
        item = Stored(
            key=episode.episode_id,
            submission=submission or Path("/nonexistent"),
            case_id=episode.case_id or episode.task_name,
            meta={"model": episode.model_name, "task": episode.task_name,
                  "status": (previous or {}).get("status"),
                  "version": f"{(previous or {}).get('scoring_version')}+{(previous or {}).get('verifier_version')}"},
            previous_reward=(previous or {}).get("authored_usd"),
            trajectory=_trajectory(episode, submissions_root, submission, closed),
            # any grade's case is one the store accepted for this episode (the trial's own, or one
            # a re-grade used); a store of grades that recorded none cannot be checked
            graded_profiles=tuple(dict.fromkeys(g["profile_digest"] for g in grades if g.get("profile_digest"))),
            closed_book=closed,
        )
        if submission is None:
            item.problem = "the store does not say where this episode's submission is"
        elif not submission.is_dir():
            item.problem = f"the submission {submission} is not there"
        else:
            item.problem = changed_since_graded(submission, episode.submission_digest)
        stored.append(item)
    return stored
