"""`usdgrade records ingest|report|show`: registered in commands/cli.py by ``add_parser``.

    usdgrade records ingest JOB_DIR... [--db URL]
    usdgrade records report [--db URL] --out DIR [--scoring-version V] [--verifier-version V]
    usdgrade records show EPISODE [--db URL]

Exit codes: 0 done; 1 nothing usable (no folder could be ingested, an unknown episode, an empty
store to report on) or a trial refused because its id is taken by another trial; 2 the store
cannot be opened, a folder to ingest is not there (no store is made), or the `records` extra is
not installed (one line naming it). `report` and `show` only read: they create no store and migrate none. Output cut
short by its reader (`| head`) ends quietly.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from usd_repair_verifier.profiles.errors import ExitCode

# The modules the `records` extra installs; without them each verb says so in one line.
EXTRA_MODULES = ("sqlalchemy", "psycopg", "matplotlib")
INSTALL_EXTRA = "pip install 'usd-repair-verifier[records]'"
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


def extra_missing(error: ImportError) -> str | None:
    """The line for a module of the `records` extra that is not installed, else None (another
    import error is a fault of the verifier's, raised on)."""
    name = (getattr(error, "name", None) or "").split(".")[0]
    if name not in EXTRA_MODULES:
        return None
    return f"usdgrade records needs the records extra, which is not installed (no module {name}): {INSTALL_EXTRA}"


def _records_module(name: str):
    """records.<name>, or None after one line on stderr when the records extra is missing."""
    import importlib

    try:
        return importlib.import_module(f"{__package__}.{name}")
    except ImportError as error:
        line = extra_missing(error)
        if line is None:
            raise
        _say(line, sys.stderr)
        return None


def _open(url: str | None, create: bool = True):
    store_module = _records_module("store")
    if store_module is None:
        return None
    import sqlalchemy.exc

    StoreError, open_store = store_module.StoreError, store_module.open_store

    try:
        return open_store(url, create=create)
    except (StoreError, sqlalchemy.exc.SQLAlchemyError, ValueError) as error:
        _say(f"cannot open the records store {url or 'records.sqlite'}: {error}", sys.stderr)
        return None


def _database_failed(error: Exception) -> int:
    _say(f"the records store failed: {str(error).splitlines()[0]}", sys.stderr)
    return ExitCode.USAGE


def _store_file(url: str | None) -> Path | None:
    """The SQLite file a --db names (default records.sqlite, a path or sqlite:///PATH); None for a server."""
    url = url or "records.sqlite"
    if url.startswith("sqlite:///"):
        return Path(url.removeprefix("sqlite:///"))
    return None if "://" in url else Path(url)


def ingest_command(args: argparse.Namespace) -> int:
    from usd_repair_verifier.scoring.outputs import OutputRefused, check_placement

    missing = [folder for folder in args.folders if not Path(folder).is_dir()]
    if missing:   # a mistake in the command line: no store is made for it
        _say(f"records ingest: {missing[0]} is not a folder (give Harbor job or trial folders, or folders of "
             "grade.json)", sys.stderr)
        return ExitCode.USAGE
    ingest_module = _records_module("ingest")
    if ingest_module is None:
        return ExitCode.USAGE
    ingest = ingest_module.ingest
    store_file = _store_file(args.db)
    if store_file is not None:
        try:  # a store inside a job would change the job it records; inside the verifier, its code
            check_placement(store_file, [("folder to ingest", folder) for folder in args.folders], owns_folder=False,
                            option="--db")
        except OutputRefused as error:
            _say(str(error).replace("an output folder", "a store"), sys.stderr)
            return ExitCode.USAGE
    store = _open(args.db)
    if store is None:
        return ExitCode.USAGE
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
        return ExitCode.REFUSED
    return ExitCode.DONE if report.episodes else ExitCode.REFUSED


def report_command(args: argparse.Namespace) -> int:
    from usd_repair_verifier.scoring.outputs import OutputRefused, claim_folder, replace_folder, staging_folder

    report_module = _records_module("report")
    if report_module is None or _records_module("figures") is None:
        return ExitCode.USAGE
    NothingToReport, write_report = report_module.NothingToReport, report_module.write_report
    out = Path(args.out)
    store_file = _store_file(args.db)
    try:  # the report's folder: new, or (--force) an earlier report; never anything else (scoring/outputs.py)
        claim_folder(out, "records report", [("records store", store_file)], force=args.force)
    except OutputRefused as error:
        print(str(error), file=sys.stderr)
        return ExitCode.USAGE
    store = _open(args.db, create=False)
    if store is None:
        return ExitCode.USAGE
    import shutil

    import sqlalchemy.exc

    staging = staging_folder(out)
    try:
        with store:
            tables = write_report(store, staging, scoring_version=args.scoring_version,
                                  verifier_version=args.verifier_version)
        replace_folder(staging, out, "records report")
    except NothingToReport as error:
        _say(f"no report written: {error}", sys.stderr)
        return ExitCode.REFUSED
    except sqlalchemy.exc.SQLAlchemyError as error:
        return _database_failed(error)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _say(f"wrote {Path(args.out) / 'report.html'} ({len(tables['episodes'])} episodes, "
          f"{len(tables['leaderboard'])} model/agent rows), report.md, CSV tables and {len(tables['figures'])} figure files")
    return ExitCode.DONE


def show_command(args: argparse.Namespace) -> int:
    show_module = _records_module("show")
    if show_module is None:
        return ExitCode.USAGE
    show_lines = show_module.show_lines
    store = _open(args.db, create=False)
    if store is None:
        return ExitCode.USAGE
    import sqlalchemy.exc

    try:
        with store:
            lines = show_lines(store, args.episode)
    except LookupError as error:
        _say(str(error), sys.stderr)
        return ExitCode.REFUSED
    except sqlalchemy.exc.SQLAlchemyError as error:
        return _database_failed(error)
    _say("\n".join(lines))
    return ExitCode.DONE


def add_parser(sub) -> None:
    records = sub.add_parser("records", help="episode records: ingest Harbor jobs, report results, show one")
    verbs = records.add_subparsers(dest="records_command", required=True)

    p = verbs.add_parser("ingest", help="read Harbor job/trial folders or grade folders into the store")
    p.add_argument("folders", nargs="+", metavar="JOB_DIR",
                   help="Harbor job folders, trial folders or folders of grades (grade.json)")
    p.add_argument("--db", default=None, help=DB_HELP)
    p.set_defaults(run=ingest_command)

    p = verbs.add_parser("report", help="write the results report (HTML, Markdown, CSV, figures)")
    p.add_argument("--db", default=None, help=DB_HELP)
    p.add_argument("--out", required=True, metavar="DIR", help="the report's folder (a new one, or --force)")
    p.add_argument("--force", action="store_true",
                   help="replace an earlier report written by this command (never a folder it did not write)")
    p.add_argument("--scoring-version", default=None, help="only grades of this scoring version")
    p.add_argument("--verifier-version", default=None, help="only grades of this verifier version")
    p.set_defaults(run=report_command)

    p = verbs.add_parser("show", help="one episode's grades, checks and separate reports")
    p.add_argument("episode", help="episode id, trial name or a unique id prefix")
    p.add_argument("--db", default=None, help=DB_HELP)
    p.set_defaults(run=show_command)
