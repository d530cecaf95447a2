"""`usdgrade records ingest`: Harbor job folders, trial folders and plain grade folders into the store.

Idempotent: every row is an upsert that leaves an unchanged row alone, so a second ingest of the
same folders reports everything `unchanged` and writes nothing. What is skipped is said, with why.

What a folder is depends on what it holds, never on how it was reached (given directly, found in
a job, or found in a folder of folders):
- a folder holding `result.json` is a Harbor trial or job, or it is skipped (never read as
  anything else, and never entered: a trial's `artifacts/` is the agent's);
- a folder that holds a trial's parts (`verifier/`, `agent/`, `artifacts/`) but no `result.json`
  is a trial without its record: skipped;
- a folder holding `grade.json` is a grade folder;
- any other folder is entered (up to MAX_DEPTH levels below what was given).
A trial is one episode keyed by Harbor's trial id; a second trial with the same id but another
identity (job, trial name, task, checksum, agent, model, start) is refused and said (a clash),
so a reward is only ever attached to the trial that was graded.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy.exc

from . import harbor
from .store import Store, StoreError

# A row the database refuses (a value out of range, a key too long) skips that episode with the
# reason; a database that is down or refuses us is not the data's fault and stops the ingest.
DATA_ERRORS = (StoreError, sqlalchemy.exc.DataError, sqlalchemy.exc.IntegrityError)
MAX_DEPTH = 4
TRIAL_PARTS = ("verifier", "agent", "artifacts")
# What makes two records the same Harbor trial: fields Harbor writes once, when the trial starts.
IDENTITY = ("source", "job_id", "trial_name", "task_name", "task_checksum", "agent_name", "model_name", "started_at")


def shown(path: Path | str) -> str:
    """A path as text that can always be printed (a name that is not UTF-8 keeps its bytes escaped)."""
    return os.fsencode(str(path)).decode("utf-8", "backslashreplace")


def _name_problem(path: Path) -> str | None:
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return "its path is not valid UTF-8 (the store keeps text)"
    return None


@dataclass
class IngestReport:
    written: dict[str, dict[str, int]] = field(default_factory=dict)   # table -> outcome -> count
    skipped: list[tuple[str, str]] = field(default_factory=list)       # (path, why)
    notes: list[tuple[str, str]] = field(default_factory=list)         # (episode, what was left out)
    clashes: list[tuple[str, str]] = field(default_factory=list)       # (path, which episode it clashes with)
    episodes: list[str] = field(default_factory=list)
    attempts_renumbered: int = 0

    def count(self, table: str, outcome: str) -> None:
        outcomes = self.written.setdefault(table, {})
        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    def skip(self, path: Path, why: str) -> None:
        self.skipped.append((shown(path), why))

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
        for path, why in self.clashes:
            out.append(f"CLASH {path}: {why}")
        return out


def _clash(store: Store, fields: dict) -> str | None:
    """Why a stored episode with this id is another trial, or None (new, or the same trial)."""
    stored = store.get_episode(fields["episode_id"])
    if stored is None:
        return None
    differ = [name for name in IDENTITY
              if fields.get(name) is not None and getattr(stored, name) is not None and fields[name] != getattr(stored, name)]
    if not differ:
        return None
    detail = ", ".join(f"{name} {getattr(stored, name)!r} there, {fields[name]!r} here" for name in differ[:3])
    return (f"trial id {fields['episode_id']!r} is already stored for another trial ({detail}); "
            "this trial and its grade were not stored")


def store_episode(store: Store, source: harbor.EpisodeSource, report: IngestReport, where: Path | None = None) -> None:
    """One episode and its graders' files in one transaction; counted once it committed."""
    episode_id = source.fields["episode_id"]
    clash = _clash(store, source.fields) if source.fields.get("source") else None
    if clash:
        report.clashes.append((shown(where or episode_id), clash))
        return
    outcomes, notes = [], list(source.notes)
    with store.transaction():
        if source.fields.get("source"):           # a grade attached to a stored trial writes no episode
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
        store_episode(store, source, report, where)
    except DATA_ERRORS as error:
        report.skip(where, f"the store refused it: {str(error).splitlines()[0]}")


def _ingest_trial(store: Store, trial_dir: Path, result: dict, job: dict | None, report: IngestReport) -> None:
    problem = harbor.trial_id_problem(result)
    if problem:
        report.skip(trial_dir, problem)
        return
    source = harbor.trial_episode(trial_dir, result, job)
    if source.grade is None and not (trial_dir / "verifier" / "grade.json").exists():
        source.notes.append("no verifier/grade.json")
    _store_or_skip(store, trial_dir, source, report)


def _ingest_grade_folder(store: Store, folder: Path, report: IngestReport) -> None:
    source = harbor.folder_episode(folder)
    if source.grade is None:
        report.skip(folder, "; ".join(source.notes) or "no usable grade.json")
        return
    trial = harbor.graded_trial(store, folder, source)
    if trial is not None:                         # a re-grade of a stored trial: its grade, not a new episode
        source.fields = {"episode_id": trial}
        source.notes.append(f"the grade of stored trial {trial} (same trial and job name, same submission digest)")
    _store_or_skip(store, folder, source, report)


def _ingest_folder(store: Store, folder: Path, report: IngestReport, depth: int = 0, job: dict | None = None) -> None:
    problem = _name_problem(folder)
    if problem:
        report.skip(folder, problem)
        return
    if folder.is_symlink() or not folder.is_dir():
        report.skip(folder, "not a folder (or a symlink)")
        return
    if (folder / "result.json").exists() or (folder / "result.json").is_symlink():
        try:
            result = harbor.read_json(folder / "result.json").data
        except harbor.UnreadableFile as error:
            report.skip(folder, f"no usable Harbor result: {error}")
            return
        if harbor.is_trial_result(result):
            _ingest_trial(store, folder, result, job, report)
        elif harbor.is_job_result(result):
            identity = harbor.job_identity(folder, result)
            for child in _children(folder, report):
                _ingest_folder(store, child, report, depth + 1, identity)
        else:
            report.skip(folder, "result.json is neither a Harbor trial result nor a job result")
        return
    parts = [p for p in TRIAL_PARTS if (folder / p).is_dir()]
    if parts:
        report.skip(folder, f"holds a trial's {', '.join(parts)} but no result.json: not a Harbor trial")
        return
    if (folder / "grade.json").exists() or (folder / "grade.json").is_symlink():
        _ingest_grade_folder(store, folder, report)
        return
    children = _children(folder, report)
    if not children:
        report.skip(folder, "not a Harbor job, a Harbor trial or a grade folder, and holds no folder")
    elif depth >= MAX_DEPTH:
        report.skip(folder, f"more than {MAX_DEPTH} folders below what was given: not searched")
    else:
        for child in children:
            _ingest_folder(store, child, report, depth + 1, job)


def _children(folder: Path, report: IngestReport) -> list[Path]:
    """The folders inside, by name (symlinks said and skipped; never followed)."""
    try:
        entries = sorted(folder.iterdir(), key=lambda p: os.fsencode(p.name))
    except OSError as error:
        report.skip(folder, f"cannot be listed: {error.strerror or error}")
        return []
    children = []
    for entry in entries:
        if entry.is_symlink():
            if entry.is_dir():
                report.skip(entry, "a symlink to a folder: not followed")
        elif entry.is_dir():
            children.append(entry)
    return children


def ingest(store: Store, folders: list[Path]) -> IngestReport:
    """Ingest every folder (job, trial, grade folder, or a folder of those), then number attempts."""
    report = IngestReport()
    for folder in folders:
        _ingest_folder(store, Path(folder), report)
    report.attempts_renumbered = store.renumber_attempts()
    return report
