"""The records store: open (create or migrate) and write episodes, grades and separate reports.

The stable Python API (docs/records.md): ``open_store``, ``Store.upsert_episode``,
``Store.upsert_grade``, ``Store.upsert_separate``, ``Store.has_grade``, ``Store.iter_episodes``,
``Store.get_episode``, ``Store.grades``, ``Store.renumber_attempts``.

Every write is an upsert on the natural key that leaves a row alone when its source digest is
unchanged, so repeating an ingest changes nothing and reports ``unchanged``.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from pydantic import BaseModel, ValidationError

from . import schema
from .grades import check_rows, grade_columns, separate_columns
from .harbor import json_problem
from .models import CHECK_ROW, EPISODE_ROW, GRADE_ROW, META_ROW, PHYSICAL_ROW, VISUAL_ROW
from usd_repair_verifier.profiles.errors import Refused

# The typed row each table is written from (records/models.py derives them from the tables).
ROW_MODELS = {schema.episodes.name: EPISODE_ROW, schema.grades.name: GRADE_ROW, schema.checks.name: CHECK_ROW,
              schema.visual.name: VISUAL_ROW, schema.physical.name: PHYSICAL_ROW, schema.meta.name: META_ROW}

DEFAULT_URL = "sqlite:///records.sqlite"


class StoreError(Refused):
    """The store cannot do what was asked (newer schema, unknown column, missing key)."""


class Episode:
    """One `episodes` row, read-only, one attribute per column."""

    __slots__ = tuple(c.name for c in schema.episodes.columns)

    def __init__(self, row: sa.Row):
        for name in self.__slots__:
            setattr(self, name, getattr(row, name))

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self) -> str:
        return f"Episode({self.episode_id!r}, model={self.model_name!r}, task={self.task_name!r})"


def version_key(text: str | None) -> tuple:
    """Versions in order: '0.10.2' after '0.9', numbers compared as numbers, other parts as text."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.\-+]", text or ""))


def start_key(text: str | None) -> tuple:
    """A start time for ordering: ISO-8601 parsed to UTC (naive read as UTC); unparsable ones last, as text."""
    if text:
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return (1, 0.0, text)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        return (0, moment.timestamp(), "")
    return (2, 0.0, "")


def canonical_digest(value: Any) -> str:
    """sha256 of a JSON value written canonically (sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalise_url(url: str | Path | None) -> str:
    """None: the default SQLite file; a bare path: a SQLite file; else a SQLAlchemy URL."""
    if url is None:
        return DEFAULT_URL
    text = str(url)
    if "://" in text:
        return text
    return f"sqlite:///{Path(text)}"


def open_store(url: str | Path | None = None, *, create: bool = True) -> "Store":
    """Open the store at ``url``, creating the tables or migrating an older schema.

    ``create=False`` opens an existing store to read it: nothing is created or migrated (a SQLite
    file that does not exist, a database without the tables, or a store of another schema version
    is refused with StoreError).
    """
    return Store(normalise_url(url), create=create)


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL (None for PostgreSQL or an in-memory database)."""
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")      # readers never block the one writer
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")    # a second writer waits instead of failing
    cursor.close()


class Store:
    def __init__(self, url: str, create: bool = True):
        self.url = url
        path = sqlite_file(url)
        if not create and path is not None and not path.is_file():
            raise StoreError(f"there is no records store at {path} (usdgrade records ingest creates one)")
        self.engine = sa.create_engine(url, future=True)
        self.dialect = self.engine.dialect.name
        if self.dialect == "sqlite":
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        elif self.dialect != "postgresql":
            raise StoreError(f"unsupported database {self.dialect!r}: use SQLite or PostgreSQL")
        self._connection: sa.Connection | None = None
        self._statements: dict[tuple, tuple] = {}   # _upsert_statements, by the row's shape
        if create:
            self._migrate()
        else:
            self._require_current()

    def _require_current(self) -> None:
        """A store opened to read: it must already be one of this schema (nothing is written)."""
        with self.engine.connect() as connection:
            version = self._read_version(connection)
            if version == 0:
                raise StoreError(f"{self.url} holds no records store (usdgrade records ingest creates one)")
            if version != schema.SCHEMA_VERSION:
                raise StoreError(f"the store at {self.url} has schema {version}, this verifier reads "
                                 f"{schema.SCHEMA_VERSION}: " + ("upgrade the verifier" if version > schema.SCHEMA_VERSION
                                                                else "usdgrade records ingest migrates it"))
            self._check_columns(connection)

    # -- lifecycle ----------------------------------------------------------------------------
    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sa.Connection]:
        """Group writes: every call inside shares one transaction (committed at the end)."""
        if self._connection is not None:
            yield self._connection
            return
        with self.engine.begin() as connection:
            self._connection = connection
            try:
                yield connection
            finally:
                self._connection = None

    def schema_version(self) -> int:
        with self.engine.connect() as connection:
            return self._read_version(connection)

    def _read_version(self, connection: sa.Connection) -> int:
        if not sa.inspect(connection).has_table("meta"):
            return 0
        value = connection.execute(sa.select(schema.meta.c.value)
                                   .where(schema.meta.c.key == "schema_version")).scalar()
        return int(value) if value is not None else 0

    def _migrate(self) -> None:
        with self.engine.begin() as connection:
            if self.dialect == "postgresql":    # two processes opening a new store: one migrates
                connection.execute(sa.text("SELECT pg_advisory_xact_lock(731804)"))
            version = self._read_version(connection)
            if version > schema.SCHEMA_VERSION:
                raise StoreError(f"the store at {self.url} has schema {version}, newer than this "
                                 f"verifier's {schema.SCHEMA_VERSION}: upgrade the verifier")
            for step in range(version + 1, schema.SCHEMA_VERSION + 1):
                schema.MIGRATIONS[step](connection)
            if version < schema.SCHEMA_VERSION:
                self._upsert(connection, schema.meta, self._typed(schema.meta, {
                    "key": "schema_version", "value": str(schema.SCHEMA_VERSION)}), key=["key"], compare=None)
            self._check_columns(connection)

    def _check_columns(self, connection: sa.Connection) -> None:
        """Refuse a store whose tables lack a column this schema version has (another build wrote it)."""
        inspector = sa.inspect(connection)
        for table in schema.metadata.sorted_tables:
            present = {c["name"] for c in inspector.get_columns(table.name)}
            missing = sorted(set(table.c.keys()) - present)
            if missing:
                raise StoreError(f"the store at {self.url} claims schema {schema.SCHEMA_VERSION} but its table "
                                 f"{table.name} lacks {', '.join(missing)}: it was not written by this schema")

    # -- the one upsert -----------------------------------------------------------------------
    def _insert(self):
        return postgresql.insert if self.dialect == "postgresql" else sqlite.insert

    @staticmethod
    def _typed(table: sa.Table, fields: dict) -> BaseModel:
        """The table's typed row of ``fields`` (every column, each of its column's type)."""
        try:
            return ROW_MODELS[table.name](**fields)
        except ValidationError as error:
            first = error.errors()[0] if error.errors() else {}
            where = ".".join(str(p) for p in first.get("loc", ())) or "a column"
            raise StoreError(f"the {table.name} row cannot be stored: {where}: {first.get('msg', error)}") from None

    def _upsert(self, connection: sa.Connection, table: sa.Table, typed: BaseModel, *, key: list[str],
                compare: str | None = "record_digest", keep: tuple[str, ...] = ()) -> str:
        """Insert the typed row or update it in place; with ``compare``, an equal digest writes
        nothing; the columns in ``keep`` are left as stored (and written only by an insert)."""
        row = typed.model_dump()
        find, write = self._upsert_statements(table, tuple(key), compare, tuple(keep), tuple(row))
        existing = connection.execute(find, {f"key_{k}": row[k] for k in key}).first()
        if existing is not None and compare and existing[0] == row[compare]:
            return "unchanged"
        connection.execute(write, row)
        return "inserted" if existing is None else "updated"

    def _upsert_statements(self, table: sa.Table, key: tuple[str, ...], compare: str | None,
                           keep: tuple[str, ...], columns: tuple[str, ...]) -> tuple[sa.Select, Any]:
        """The look-up of a row by its key and the insert-or-update of it, built once per shape with
        bound parameters (building them anew for every row was most of an ingest's time)."""
        shape = (table.name, key, compare, keep, columns)
        statements = self._statements.get(shape)
        if statements is None:
            find = (sa.select(table.c[compare] if compare else sa.literal(1))
                    .where(*(table.c[k] == sa.bindparam(f"key_{k}") for k in key)))
            insert = self._insert()(table)
            updates = {name: insert.excluded[name] for name in columns if name not in key and name not in keep}
            statements = self._statements[shape] = (find, insert.on_conflict_do_update(index_elements=list(key),
                                                                                       set_=updates))
        return statements

    # -- writes -------------------------------------------------------------------------------
    def upsert_episode(self, fields: dict) -> str:
        """Insert or update one episode; ``fields`` must hold ``episode_id`` and ``source``."""
        unknown = set(fields) - set(schema.episodes.c.keys())
        if unknown:
            raise StoreError(f"unknown episode fields: {sorted(unknown)}")
        if not fields.get("episode_id") or not fields.get("source"):
            raise StoreError("an episode needs episode_id and source")
        row = {name: fields.get(name) for name in schema.episodes.c.keys() if name != "record_digest"}
        problem = json_problem(row, "episode")
        if problem:
            raise StoreError(f"the episode cannot be stored: {problem}")
        digest_fields = {k: v for k, v in row.items() if k != "attempt"}
        row["record_digest"] = canonical_digest(digest_fields)
        typed = self._typed(schema.episodes, row)
        keep = ("attempt",) if fields.get("attempt") is None else ()   # keep a numbering computed earlier
        with self.transaction() as connection:
            return self._upsert(connection, schema.episodes, typed, key=["episode_id"], keep=keep)

    def _require_episode(self, connection: sa.Connection, episode_id: str) -> None:
        found = connection.execute(sa.select(schema.episodes.c.episode_id)
                                   .where(schema.episodes.c.episode_id == episode_id)).first()
        if found is None:
            raise StoreError(f"no episode {episode_id!r}: write the episode first")

    def upsert_grade(self, episode_id: str, grade: dict, *, origin: str = "harbor",
                     record_digest: str | None = None) -> str:
        """Store a parsed grade.json for ``episode_id``; replaces that grade's checks."""
        try:
            columns = grade_columns(grade)
        except ValueError as error:
            raise StoreError(str(error)) from None
        problem = json_problem(grade, "grade.json")
        if problem:
            raise StoreError(f"the grade cannot be stored: {problem}")
        typed = self._typed(schema.grades, {"episode_id": episode_id, "origin": origin, **columns,
                                            "record_digest": record_digest or canonical_digest(grade),
                                            "grade_json": grade})
        key = ["episode_id", "scoring_version", "verifier_version"]
        ids = {k: getattr(typed, k) for k in key}
        checks = [self._typed(schema.checks, {**item, **ids}).model_dump() for item in check_rows(grade)]
        with self.transaction() as connection:
            self._require_episode(connection, episode_id)
            outcome = self._upsert(connection, schema.grades, typed, key=key)
            if outcome != "unchanged":
                connection.execute(sa.delete(schema.checks).where(*(schema.checks.c[k] == v for k, v in ids.items())))
                if checks:
                    connection.execute(sa.insert(schema.checks), checks)
            return outcome

    def upsert_separate(self, kind: str, episode_id: str, record: dict, *,
                        record_digest: str | None = None) -> str:
        """Store a visual.json or physical.json record (``kind`` = "visual" | "physical")."""
        if kind not in schema.SEPARATE_TABLES:
            raise StoreError(f"unknown separate grade {kind!r}: visual or physical")
        try:
            columns = separate_columns(kind, record)
        except ValueError as error:
            raise StoreError(str(error)) from None
        problem = json_problem(record, f"{kind}.json")
        if problem:
            raise StoreError(f"the {kind} record cannot be stored: {problem}")
        table = schema.SEPARATE_TABLES[kind]
        typed = self._typed(table, {"episode_id": episode_id, **columns,
                                    "record_digest": record_digest or canonical_digest(record), "record": record})
        with self.transaction() as connection:
            self._require_episode(connection, episode_id)
            return self._upsert(connection, table, typed, key=["episode_id", "grader_version"])

    def renumber_attempts(self) -> int:
        """Number the trials of each (task, agent, model) 1, 2, ... by start time, then trial name."""
        e = schema.episodes
        with self.transaction() as connection:
            rows = connection.execute(sa.select(e.c.episode_id, e.c.task_name, e.c.agent_name,
                                                e.c.model_name, e.c.started_at, e.c.trial_name,
                                                e.c.attempt)).all()
            groups: dict[tuple, list] = {}
            for r in rows:
                groups.setdefault((r.task_name, r.agent_name, r.model_name), []).append(r)
            changed = 0
            for members in groups.values():
                members.sort(key=lambda r: (start_key(r.started_at), r.trial_name or "", r.episode_id))
                for index, r in enumerate(members, start=1):
                    if r.attempt != index:
                        connection.execute(sa.update(e).where(e.c.episode_id == r.episode_id)
                                           .values(attempt=index))
                        changed += 1
            return changed

    # -- reads --------------------------------------------------------------------------------
    def iter_episodes(self, where: dict | None = None) -> Iterator[Episode]:
        """Episodes matching equality filters (a list or tuple value means any of), by id."""
        e = schema.episodes
        query = sa.select(e).order_by(e.c.episode_id)
        for name, value in (where or {}).items():
            if name not in e.c:
                raise StoreError(f"unknown episode column {name!r}")
            column = e.c[name]
            if isinstance(value, (list, tuple, set)):
                query = query.where(column.in_(list(value)))
            elif value is None:
                query = query.where(column.is_(None))
            else:
                query = query.where(column == value)
        with self.engine.connect() as connection:
            rows = connection.execute(query).all()
        for row in rows:
            yield Episode(row)

    def get_episode(self, episode_id: str) -> Episode | None:
        return next(self.iter_episodes({"episode_id": episode_id}), None)

    def has_grade(self, episode_id: str, scoring_version: str | None = None,
                  verifier_version: str | None = None) -> bool:
        g = schema.grades
        query = sa.select(g.c.episode_id).where(g.c.episode_id == episode_id)
        if scoring_version is not None:
            query = query.where(g.c.scoring_version == scoring_version)
        if verifier_version is not None:
            query = query.where(g.c.verifier_version == verifier_version)
        with self.engine.connect() as connection:
            return connection.execute(query.limit(1)).first() is not None

    def grades(self, episode_id: str) -> list[dict]:
        """The episode's grades, oldest first: by scoring then verifier version (numbers as numbers)."""
        g = schema.grades
        with self.engine.connect() as connection:
            rows = [dict(r._mapping) for r in connection.execute(sa.select(g).where(g.c.episode_id == episode_id))]
        return sorted(rows, key=lambda r: (version_key(r["scoring_version"]), version_key(r["verifier_version"])))

    def rows(self, table: sa.Table, *where) -> list[dict]:
        """Every row of ``table`` (optionally filtered), in primary-key order, as dicts."""
        with self.engine.connect() as connection:
            query = sa.select(table).where(*where).order_by(*table.primary_key.columns)
            return [dict(r._mapping) for r in connection.execute(query).all()]

    def counts(self) -> dict[str, int]:
        with self.engine.connect() as connection:
            return {t.name: connection.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
                    for t in schema.metadata.sorted_tables if t.name != "meta"}
