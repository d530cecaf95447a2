"""`usdgrade records ingest`: Harbor job folders, trial folders and plain grade folders into the store.

Idempotent: every row is an upsert that leaves an unchanged row alone, so a second ingest of the
same folders reports everything `unchanged` and writes nothing. What is skipped is said, with why.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy.exc

from . import harbor
from .store import Store, StoreError

# A row the database refuses (a value out of range, a key too long) skips that episode with the
# reason; a database that is down or refuses us is not the data's fault and stops the ingest.
DATA_ERRORS = (StoreError, sqlalchemy.exc.DataError, sqlalchemy.exc.IntegrityError)


@dataclass
class IngestReport:
    written: dict[str, dict[str, int]] = field(default_factory=dict)   # table -> outcome -> count
    skipped: list[tuple[str, str]] = field(default_factory=list)       # (path, why)
    notes: list[tuple[str, str]] = field(default_factory=list)         # (episode, what was left out)
    episodes: list[str] = field(default_factory=list)
    attempts_renumbered: int = 0

    def count(self, table: str, outcome: str) -> None:
        outcomes = self.written.setdefault(table, {})
        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    @property
    def changed(self) -> int:
        return sum(n for outcomes in self.written.values() for o, n in outcomes.items() if o != "unchanged") \
            + self.attempts_renumbered

    def lines(self) -> list[str]:
        out = [f"{len(self.episodes)} episode(s) read"]
        for table in sorted(self.written):
            parts = ", ".join(f"{n} {o}" for o, n in sorted(self.written[table].items()))
            out.append(f"  {table}: {parts}")
        if self.attempts_renumbered:
            out.append(f"  attempts renumbered: {self.attempts_renumbered}")
        for episode, note in self.notes:
            out.append(f"note {episode}: {note}")
        for path, why in self.skipped:
            out.append(f"skipped {path}: {why}")
        return out


def store_episode(store: Store, source: harbor.EpisodeSource, report: IngestReport) -> None:
    """One episode and its graders' files in one transaction; counted once it committed."""
    episode_id = source.fields["episode_id"]
    outcomes, notes = [], list(source.notes)
    with store.transaction():
        outcomes.append(("episodes", store.upsert_episode(source.fields)))
        if source.grade is not None:
            try:
                outcomes.append(("grades", store.upsert_grade(episode_id, source.grade.data, origin=source.origin,
                                                              record_digest=source.grade.digest)))
            except StoreError as error:
                notes.append(f"grade.json not stored: {error}")
        for kind, record in sorted(source.separate.items()):
            outcomes.append((kind, store.upsert_separate(kind, episode_id, record.data,
                                                         record_digest=record.digest)))
    for table, outcome in outcomes:
        report.count(table, outcome)
    report.episodes.append(episode_id)
    report.notes.extend((episode_id, note) for note in notes)


def _store_or_skip(store: Store, where: Path, source: harbor.EpisodeSource, report: IngestReport) -> None:
    try:
        store_episode(store, source, report)
    except DATA_ERRORS as error:
        report.skipped.append((str(where), f"the store refused it: {str(error).splitlines()[0]}"))


def _ingest_trial(store: Store, trial_dir: Path, result: dict, job: dict | None,
                  report: IngestReport) -> None:
    problem = harbor.trial_id_problem(result)
    if problem:
        report.skipped.append((str(trial_dir), problem))
        return
    source = harbor.trial_episode(trial_dir, result, job)
    if source.grade is None and not (trial_dir / "verifier" / "grade.json").exists():
        source.notes.append("no verifier/grade.json")
    _store_or_skip(store, trial_dir, source, report)


def _ingest_folder(store: Store, folder: Path, report: IngestReport, depth: int = 0) -> None:
    if folder.is_symlink() or not folder.is_dir():
        report.skipped.append((str(folder), "not a folder (or a symlink)"))
        return
    result_path = folder / "result.json"
    if result_path.exists():
        try:
            result = harbor.read_json(result_path).data
        except harbor.UnreadableFile as error:
            report.skipped.append((str(folder), str(error)))
            return
        if harbor.is_trial_result(result):
            _ingest_trial(store, folder, result, None, report)
            return
        if harbor.is_job_result(result):
            _ingest_job(store, folder, result, report)
            return
    if (folder / "grade.json").exists():
        source = harbor.folder_episode(folder)
        if source.grade is None:
            report.skipped.append((str(folder), "; ".join(source.notes) or "no usable grade.json"))
            return
        _store_or_skip(store, folder, source, report)
        return
    children = sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
    if depth == 0 and children:                   # a folder of grade folders or trials
        for child in children:
            _ingest_folder(store, child, report, depth + 1)
        return
    report.skipped.append((str(folder), "not a Harbor job, a Harbor trial or a grade folder"))


def _ingest_job(store: Store, job_dir: Path, result: dict, report: IngestReport) -> None:
    job = harbor.job_identity(job_dir, result)
    for trial_dir in sorted(p for p in job_dir.iterdir() if p.is_dir()):
        if trial_dir.is_symlink():
            report.skipped.append((str(trial_dir), "a symlink"))
            continue
        try:
            trial = harbor.read_json(trial_dir / "result.json").data
        except harbor.UnreadableFile as error:
            report.skipped.append((str(trial_dir), f"no trial result: {error}"))
            continue
        if not harbor.is_trial_result(trial):
            report.skipped.append((str(trial_dir), "result.json is not a Harbor trial result"))
            continue
        _ingest_trial(store, trial_dir, trial, job, report)


def ingest(store: Store, folders: list[Path]) -> IngestReport:
    """Ingest every folder (job, trial, grade folder, or a folder of those), then number attempts."""
    report = IngestReport()
    for folder in folders:
        _ingest_folder(store, Path(folder), report)
    report.attempts_renumbered = store.renumber_attempts()
    return report
