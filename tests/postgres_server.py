"""A real PostgreSQL server for the records tests: started in a temporary folder, stopped after.

The server binaries (`initdb`, `pg_ctl`) are looked up on PATH, then in Debian's
/usr/lib/postgresql/*/bin. They refuse to run as root, so as root they run as the `postgres`
system user through `runuser`, in a folder that user owns. The server listens only on a Unix
socket inside that folder, so parallel sessions never compete for a TCP port.

Missing binaries fail the test when `CI` is set (CI must test the PostgreSQL path) and skip it
with that reason otherwise.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

PORT = 5432          # the socket file lives in our own folder: no collision with other servers


def _binaries() -> tuple[str, str] | None:
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl:
        return initdb, pg_ctl
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(folder, "initdb").is_file() and Path(folder, "pg_ctl").is_file():
            return str(Path(folder, "initdb")), str(Path(folder, "pg_ctl"))
    return None


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the records tests against a real PostgreSQL server")
    pytest.skip(f"{reason}: the PostgreSQL half of the records tests did not run")


class PostgresServer:
    def __init__(self):
        found = _binaries()
        if found is None:
            _unavailable("PostgreSQL server binaries (initdb, pg_ctl) not found")
        self.initdb, self.pg_ctl = found
        self.prefix: list[str] = []
        self.folder = Path(tempfile.mkdtemp(prefix="usdgrade-pg-"))
        if os.geteuid() == 0:
            import pwd

            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                shutil.rmtree(self.folder)
                _unavailable("running as root without a `postgres` system user to run the server")
            os.chown(self.folder, user.pw_uid, user.pw_gid)
            self.prefix = ["runuser", "-u", "postgres", "--"]
        self.data = self.folder / "data"
        self.started = False

    def _run(self, *argv: str) -> None:
        done = subprocess.run([*self.prefix, *argv], cwd=self.folder, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stdout}{done.stderr}")

    def start(self) -> "PostgresServer":
        self._run(self.initdb, "-D", str(self.data), "-A", "trust", "-U", "test", "--no-sync", "-E", "UTF8")
        options = f"-p {PORT} -k {self.folder} -c listen_addresses='' -c fsync=off"
        self._run(self.pg_ctl, "-D", str(self.data), "-o", options, "-l", str(self.folder / "server.log"),
                  "-w", "-t", "60", "start")
        self.started = True
        return self

    def stop(self) -> None:
        if self.started:
            try:
                self._run(self.pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop")
            finally:
                self.started = False
        shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://test@/{database}?host={self.folder}&port={PORT}"

    def create_database(self, name: str) -> str:
        import sqlalchemy as sa

        engine = sa.create_engine(self.url(), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as connection:
                connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
        finally:
            engine.dispose()
        return self.url(name)
