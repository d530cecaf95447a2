"""`usdgrade records ingest|report|show`: registered in commands/cli.py by ``add_parser``.

    usdgrade records ingest JOB_DIR... [--db URL]
    usdgrade records report [--db URL] --out DIR [--scoring-version V] [--verifier-version V]
    usdgrade records show EPISODE [--db URL]

Exit codes: 0 done; 1 nothing usable (no folder could be ingested, an unknown episode, an empty
store to report on) or a trial refused because its id is taken by another trial; 2 the store
cannot be opened. `report` and `show` only read: they create no store and migrate none. Output cut
short by its reader (`| head`) ends quietly.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

DB_HELP = "database URL (sqlite:///FILE or postgresql+psycopg://...) or a SQLite file; default records.sqlite"


def _say(text: str, stream=None) -> None:
    """Print, and when the reader has gone (`| head -3`) stop writing quietly instead of raising."""
    stream = stream or sys.stdout
    try:
        print(text, file=stream)
        stream.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)      # nothing more reaches the closed pipe, not even at exit
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError):
            pass
        finally:
            os.close(devnull)


def _open(url: str | None, create: bool = True):
    try:
        import sqlalchemy.exc

        from .store import StoreError, open_store
    except ImportError as error:
        print(f"the records store needs the records extra (pip install -e '.[records]'): {error}", file=sys.stderr)
        return None

    try:
        return open_store(url, create=create)
    except (StoreError, sqlalchemy.exc.SQLAlchemyError, ValueError) as error:
        _say(f"cannot open the records store {url or 'records.sqlite'}: {error}", sys.stderr)
        return None


def _database_failed(error: Exception) -> int:
    _say(f"the records store failed: {str(error).splitlines()[0]}", sys.stderr)
    return 2


def ingest_command(args: argparse.Namespace) -> int:
    from .ingest import ingest

    store = _open(args.db)
    if store is None:
        return 2
    import sqlalchemy.exc

    try:
        with store:
            report = ingest(store, [Path(p) for p in args.folders])
    except sqlalchemy.exc.SQLAlchemyError as error:
        return _database_failed(error)
    _say("\n".join(report.lines()))
    _say("nothing changed" if report.changed == 0 else f"{report.changed} row(s) written")
    if report.clashes:
        _say(f"{len(report.clashes)} trial(s) not stored: their trial id is already another trial's (CLASH lines above)",
             sys.stderr)
        return 1
    return 0 if report.episodes else 1


def report_command(args: argparse.Namespace) -> int:
    from .report import NothingToReport, write_report

    store = _open(args.db, create=False)
    if store is None:
        return 2
    import sqlalchemy.exc

    try:
        with store:
            tables = write_report(store, Path(args.out), scoring_version=args.scoring_version,
                                  verifier_version=args.verifier_version)
    except NothingToReport as error:
        _say(f"no report written: {error}", sys.stderr)
        return 1
    except sqlalchemy.exc.SQLAlchemyError as error:
        return _database_failed(error)
    _say(f"wrote {Path(args.out) / 'report.html'} ({len(tables['episodes'])} episodes, "
          f"{len(tables['leaderboard'])} model/agent rows), report.md, CSV tables and {len(tables['figures'])} figure files")
    return 0


def show_command(args: argparse.Namespace) -> int:
    from .show import show_lines

    store = _open(args.db, create=False)
    if store is None:
        return 2
    import sqlalchemy.exc

    try:
        with store:
            lines = show_lines(store, args.episode)
    except LookupError as error:
        _say(str(error), sys.stderr)
        return 1
    except sqlalchemy.exc.SQLAlchemyError as error:
        return _database_failed(error)
    _say("\n".join(lines))
    return 0


def add_parser(sub) -> None:
    records = sub.add_parser("records", help="episode records: ingest Harbor jobs, report results, show one")
    verbs = records.add_subparsers(dest="records_command", required=True)

    p = verbs.add_parser("ingest", help="read Harbor job/trial folders or grade folders into the store")
    p.add_argument("folders", nargs="+", metavar="JOB_DIR")
    p.add_argument("--db", default=None, help=DB_HELP)
    p.set_defaults(run=ingest_command)

    p = verbs.add_parser("report", help="write the results report (HTML, Markdown, CSV, figures)")
    p.add_argument("--db", default=None, help=DB_HELP)
    p.add_argument("--out", required=True)
    p.add_argument("--scoring-version", default=None, help="only grades of this scoring version")
    p.add_argument("--verifier-version", default=None, help="only grades of this verifier version")
    p.set_defaults(run=report_command)

    p = verbs.add_parser("show", help="one episode's grades, checks and separate reports")
    p.add_argument("episode", help="episode id, trial name or a unique id prefix")
    p.add_argument("--db", default=None, help=DB_HELP)
    p.set_defaults(run=show_command)
