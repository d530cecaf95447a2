"""`usdgrade regrade`: re-grade stored submissions with the installed verifier.

    usdgrade regrade JOB_DIR... --cases CASES [--out OUT]        Harbor job folders
    usdgrade regrade --db URL --cases CASES                       the episode records store
        [--engine local|ray] [-j N] [--ray-address ADDR] [--time-limit S] [--memory-mb M]
        [--where FIELD=VALUE[,VALUE]]... [--refreeze] [--accept-profile-change] [--no-progress]

Each submission is graded against its case exactly as `pytest checks` grades it (regrade/warm.py)
against the very case the earlier grade recorded (its profile digest: a case of the same id with
another digest is skipped, with the reason, unless --accept-profile-change), closed book again when
the earlier grade was, and the new grade is stored under this verifier's version: in OUT/<version>/<job>/<trial>/ (job
folders; the trial folders are never written) or as a new grade row (the store). What is already
graded at this version is skipped, so an interrupted run resumes where it stopped. `--refreeze`
first re-freezes a case frozen by an older scoring version (from its reference and input, with
its faults, tolerances, sampling and limits; refusing as `usdgrade freeze` does) into
OUT/<version>/cases/ and grades against that, instead of grading every submission of it as an
infrastructure error. At the end: what changed (how many rewards moved, by how much, the
largest movers).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from usd_repair_verifier.profiles.schema import SCORING_VERSION

from usd_repair_verifier.scoring import VERIFIER_VERSION
from usd_repair_verifier.regrade.sources import (DEFAULT_SUBMISSION_IN, Stored, find_case, job_submissions, parse_where,
                              profile_changed, selected)
from usd_repair_verifier.regrade.warm import Item, ItemResult
from usd_repair_verifier.profiles.errors import ExitCode

VERSION_LABEL = f"scoring-{SCORING_VERSION}_verifier-{VERIFIER_VERSION}"
# Job folders' new grades (and re-frozen cases) go here unless --out says otherwise: a folder of
# the current directory's, never inside the verifier's code or an input (scoring/outputs.py).
DEFAULT_OUT = "regrade-out"
COMMAND = "regrade"
MOVED = 1e-9          # a reward change smaller than this is float noise, not a move
MOVERS_SHOWN = 5


class FolderSink:
    """Grades written next to, never into, the job folders: OUT/<version>/<key>/."""

    def __init__(self, out: Path):
        self.out = Path(out)
        self.root = self.out / VERSION_LABEL

    def folder(self, stored: Stored) -> Path:
        return self.root / stored.key

    def done(self, stored: Stored) -> bool:
        return (self.folder(stored) / "grade.json").is_file()

    def write(self, stored: Stored, result: ItemResult) -> None:
        from usd_repair_verifier.scoring.outputs import GRADE_FILE, REWARD_FILE, inside

        folder = self.folder(stored)
        if inside(folder, stored.submission):
            raise ValueError(f"{folder} lies inside the submission {stored.submission}")
        ensure_out(self.out)
        folder.mkdir(parents=True, exist_ok=True)
        # reward.json first: grade.json, written last, is what marks the item done.
        for name, text in ((REWARD_FILE, result.reward_text), (GRADE_FILE, result.grade_text)):
            if text is not None:
                _write_text(folder / name, text)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def refreeze(case: Path, cases_out: Path) -> tuple[Path | None, str | None]:
    """(the case to grade with, or None; why not). A current case is returned unchanged."""
    from usd_repair_verifier.authoring.freeze import FreezeRefused, freeze
    from usd_repair_verifier.profiles.schema import ProfileError, load_profile

    try:
        old = load_profile(case / "profile.json")
    except ProfileError as error:
        return None, f"cannot re-freeze {case}: {error}"
    if old.scoring_version == SCORING_VERSION:
        return case, None
    target = cases_out / old.id
    if (target / "profile.json").is_file():
        return target, None  # re-frozen by an earlier (interrupted) run of this version
    ensure_out(cases_out.parent.parent)
    try:
        freeze(old.id, case / "reference", case / "input", target, list(old.faults), tolerances=old.tolerances,
               sampling=old.sampling, limits=old.limits, version=f"{old.version}+scoring-{SCORING_VERSION}",
               closed_book=old.closed_book, allowed_urls=old.allowed_urls,
               preserved_namespaces=old.preserved_namespaces, variant_selections=old.variant_selections)
    except FreezeRefused as error:
        return None, str(error)
    return target, None


def _engine(args: argparse.Namespace):
    if args.engine == "ray":
        from usd_repair_verifier.regrade.ray_engine import RayEngine

        return RayEngine(args.j, args.time_limit, args.ray_address, args.memory_mb)
    from usd_repair_verifier.regrade.pool import LocalPool

    return LocalPool(args.j, args.time_limit, log_dir=args.log_dir)


def gather(args: argparse.Namespace):
    """(stored submissions to consider, the sink that stores new grades)."""
    if args.db:
        from usd_repair_verifier.regrade.store import StoreSink, store_submissions

        sink = StoreSink(args.db)
        return store_submissions(sink.store, Path(args.submissions_root) if args.submissions_root else None), sink
    stored: list[Stored] = []
    for job in args.jobs:
        stored += job_submissions(Path(job), args.submission_in)
    return stored, FolderSink(Path(args.out))


def plan(args: argparse.Namespace, stored: list[Stored], sink) -> tuple[list[Stored], list[Stored], int]:
    """(to grade, cannot be graded, already graded at this version)."""
    where = parse_where(args.where)
    cases = Path(args.cases).resolve() if args.cases else None
    todo, problems, done, frozen = [], [], 0, {}
    for s in stored:
        if not selected(s, where):
            continue
        if s.problem is None and not s.submission.is_dir():
            s.problem = f"no stored submission at {s.submission}"
        if s.problem is None:
            s.case = find_case(cases, s.case_id)
            if s.case is None:
                s.problem = f"no case {s.case_id!r} in {cases}"
            elif not args.accept_profile_change:   # the very case the earlier grade measured, or none
                s.problem = profile_changed(s, s.case, Path(args.cases) / s.case.relative_to(cases))
        if s.problem is None and args.refreeze:
            if s.case not in frozen:
                frozen[s.case] = refreeze(s.case, Path(args.out) / VERSION_LABEL / "cases")
            s.case, s.problem = frozen[s.case][0] or s.case, frozen[s.case][1]
        if s.problem is not None:
            problems.append(s)
        elif sink.done(s):
            done += 1
        else:
            todo.append(s)
    return todo, problems, done


def skipped_lines(problems: list[Stored]) -> list[str]:
    """One line per reason, naming every submission it holds for (a task's trials share theirs)."""
    by_reason: dict[str, list[str]] = {}
    for s in problems:
        by_reason.setdefault(s.problem, []).append(s.key)
    return [f"  skipped {keys[0]}: {reason}" if len(keys) == 1 else
            f"  skipped {len(keys)}: {', '.join(keys)}: {reason}" for reason, keys in by_reason.items()]


def _progress(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="grade", disable=not enabled, file=sys.stderr, smoothing=0.1,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]")


def run(args: argparse.Namespace) -> int:
    stored, sink = gather(args)
    todo, problems, done = plan(args, stored, sink)
    print(f"regrade {VERSION_LABEL}: {len(todo)} to grade, {done} already graded at this version, "
          f"{len(problems)} cannot be graded", file=sys.stderr)
    for line in skipped_lines(problems)[:20]:
        print(line, file=sys.stderr)
    by_key = {s.key: s for s in todo}
    # A trial graded closed book is graded closed book again, whatever its case says now.
    items = [Item(s.key, str(s.case), str(s.submission), str(s.trajectory) if s.trajectory else None,
                  closed_book=s.closed_book) for s in todo]
    outcomes: list[Outcome] = []   # small: the grades themselves are written, not kept
    started = time.monotonic()
    from usd_repair_verifier.scoring.progress import on_terminal

    with _progress(len(items), not args.no_progress and on_terminal()) as bar:
        for result in _engine(args).run(items):
            stored_item = by_key[result.key]
            sink.write(stored_item, result)
            outcomes.append(Outcome.of(stored_item, result))
            bar.update(1)
    for line in summary_lines(outcomes, time.monotonic() - started):
        print(line)
    return ExitCode.DONE


@dataclass(frozen=True)
class Outcome:
    key: str
    status: str
    previous: float | None
    reward: float | None
    worker: str
    peak_rss_mb: float | None
    node: str = ""
    attempts: int = 1

    @classmethod
    def of(cls, stored: Stored, result: ItemResult) -> "Outcome":
        from usd_repair_verifier.profiles.errors import NotAGrade
        from usd_repair_verifier.scoring import grade_file

        try:   # the grade this verifier just wrote, read back as its own type
            grade = grade_file.read(result.grade_text) if result.grade_text else None
        except NotAGrade:   # not a grade this version writes: said as "no grade", never a score
            grade = None
        return cls(stored.key, grade.status.value if grade else "no grade", stored.previous_reward,
                   grade.authored_usd if grade else None, result.worker, result.peak_rss_mb, result.node,
                   result.attempts)


def summary_lines(results: list[Outcome], seconds: float) -> list[str]:
    statuses, moves, workers = Counter(), [], {}
    for r in results:
        statuses[r.status] += 1
        if r.previous is not None and r.reward is not None:
            moves.append((r.reward - r.previous, r.key, r.previous, r.reward))
        if r.peak_rss_mb is not None:
            workers[r.worker] = max(workers.get(r.worker, 0.0), r.peak_rss_mb)
    if not results:
        return ["nothing graded"]
    rate = 60.0 * len(results) / seconds if seconds > 0 else 0.0
    lines = [f"graded {len(results)} in {seconds:.1f} s ({rate:.1f} grades/min): "
             + ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))]
    again = sum(r.attempts > 1 for r in results)
    if again:
        lines.append(f"{again} item(s) taken again after their worker or node was lost (see each grade's status)")
    nodes = Counter(r.node for r in results if r.node)
    if nodes:  # --engine ray: which node graded how many (one node: a local cluster)
        lines.append(f"graded on {len(nodes)} Ray node(s):")
        lines += [f"  node {node}: {n} grade{'s' if n != 1 else ''}" for node, n in sorted(nodes.items())]
    if workers:
        lines.append(f"peak memory per worker: {max(workers.values()):.0f} MB (max of {len(workers)} workers)")
    moved = [m for m in moves if abs(m[0]) > MOVED]
    if moves:
        mean = sum(abs(m[0]) for m in moved) / len(moved) if moved else 0.0
        lines.append(f"rewards moved: {len(moved)} of {len(moves)} with an earlier reward "
                     f"(mean |change| {mean:.4f}, up {sum(m[0] > 0 for m in moved)}, down {sum(m[0] < 0 for m in moved)})")
        for delta, key, old, new in sorted(moved, key=lambda m: (-abs(m[0]), m[1]))[:MOVERS_SHOWN]:
            lines.append(f"  {key}: {old:.4f} -> {new:.4f} ({delta:+.4f})")
    return lines


def add_parser(sub) -> None:
    p = sub.add_parser("regrade", help="re-grade stored submissions with this verifier (locally or on Ray)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("jobs", nargs="*", help="Harbor job folders (or single trial folders)")
    p.add_argument("--db", help="the episode records store's URL, instead of job folders")
    p.add_argument("--cases", required=True, help="folder of cases (CASES/<id>/ or Harbor task folders)")
    p.add_argument("--out", default=None,
                   help=f"job folders: where new grades go, OUT/<version>/<job>/<trial>/ (default: {DEFAULT_OUT}/ here; "
                        "an earlier run's OUT resumes)")
    p.add_argument("--submission-in", default=DEFAULT_SUBMISSION_IN, help="the submission inside a trial folder")
    p.add_argument("--submissions-root", help="the store: folder holding the trial folders, when they moved")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local: a pool of warm workers on this machine; ray: Ray tasks (pip install -e '.[ray]')")
    p.add_argument("-j", type=int, default=os.cpu_count() or 1, help="workers (default: the machine's cores)")
    p.add_argument("--ray-address", help="an existing Ray cluster (default: a local one started on the spot)")
    p.add_argument("--time-limit", type=float, default=540.0, help="seconds per item; past it an infrastructure error")
    p.add_argument("--memory-mb", type=int, default=2048, help="Ray: memory reserved per item")
    p.add_argument("--where", action="append", default=[], metavar="FIELD=VALUE[,VALUE]",
                   help="select by model, task, status or version (of the earlier grade: SCORING+VERIFIER)")
    p.add_argument("--refreeze", action="store_true", help="re-freeze cases frozen by an older scoring version")
    p.add_argument("--accept-profile-change", action="store_true",
                   help="grade against the case found by id even when its profile digest is not the one the earlier "
                        "grade recorded (skipped otherwise); a trial graded closed book stays closed book")
    p.add_argument("--log-dir", help="local engine: keep each worker's pytest output here")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (none is drawn anyway when stderr is not a terminal)")
    p.set_defaults(run=_command)


def claim_out(args: argparse.Namespace) -> None:
    """OUT holds grades of earlier runs of this command (they resume) or nothing: never another
    command's or a person's files, never inside a job folder, the cases or the verifier."""
    from usd_repair_verifier.scoring.outputs import claim_folder

    if args.out is None:
        args.out = DEFAULT_OUT
    db_file = _store_file(args.db)
    inputs = [*(("job folder", job) for job in args.jobs), ("cases folder", args.cases),
              ("submissions root", args.submissions_root), ("records store", db_file)]
    claim_folder(Path(args.out), COMMAND, inputs, resume=True)


def ensure_out(out: Path) -> Path:
    """OUT made and marked as this command's when the first thing is written there."""
    from usd_repair_verifier.scoring.outputs import MARK_FILE, mark

    if not (out / MARK_FILE).is_file():
        out.mkdir(parents=True, exist_ok=True)
        mark(out, COMMAND)
    return out


def _command(args: argparse.Namespace) -> int:
    if bool(args.jobs) == bool(args.db):
        print("regrade needs Harbor job folders or --db URL (one of the two)", file=sys.stderr)
        return ExitCode.USAGE
    if args.j < 1:
        print("-j must be at least 1", file=sys.stderr)
        return ExitCode.USAGE
    missing = [p for p in (*args.jobs, args.cases, args.submissions_root) if p and not Path(p).is_dir()]
    if missing:
        print(f"regrade: {missing[0]} is not a folder", file=sys.stderr)
        return ExitCode.USAGE
    if args.db:
        try:
            import usd_repair_verifier.records.store  # noqa: F401  the `records` extra: SQLAlchemy, psycopg
        except ImportError as error:
            from usd_repair_verifier.records.cli import extra_missing

            line = extra_missing(error)
            if line is None:
                raise
            print(f"regrade --db: {line}", file=sys.stderr)
            return ExitCode.USAGE
    store_file = _store_file(args.db)
    if store_file is not None and not store_file.is_file():
        print(f"regrade: there is no records store at {store_file} (usdgrade records ingest JOB_DIR --db "
              f"{args.db} makes one)", file=sys.stderr)
        return ExitCode.USAGE
    try:
        claim_out(args)
        return run(args)
    except ValueError as error:  # a bad selection or output folder
        print(f"regrade: {error}", file=sys.stderr)
        return ExitCode.USAGE
    except RuntimeError as error:  # workers that cannot start, inputs the Ray nodes cannot read
        print(f"regrade: {error}", file=sys.stderr)
        return ExitCode.INFRASTRUCTURE_ERROR
    except Exception as error:
        if type(error).__module__.split(".")[0] not in ("sqlalchemy", "psycopg"):
            raise
        # The store cannot be reached (a server that is down, a URL that is wrong): one line.
        print(f"regrade: the records store {args.db} failed: {str(error).splitlines()[0]}", file=sys.stderr)
        return ExitCode.USAGE


def _store_file(db: str | None) -> Path | None:
    """The SQLite file a --db names (a path, or sqlite:///PATH); None for a server URL."""
    if not db:
        return None
    if db.startswith("sqlite:///"):
        return Path(db.removeprefix("sqlite:///"))
    return None if "://" in db else Path(db)
