"""Work done once per grading run, whether by one process or shared by xdist workers.

A grade has a few large units of work: the submission (validity gate, then the
candidate snapshot), the reference snapshot, and the measurements. Serially one
process does them all (`LocalWork`). Under `-n N` every worker needs all of them,
and doing each in every worker made `-n 2` slower than serial; so the workers share
one folder (made by the controller, removed after the run) and each unit is done by
whichever worker claims it first (`SharedWork`): a claim is an exclusive file
creation, a result a pickle renamed into place, a failure a text file that every
waiting worker raises again. Claimed units are never redone, so N workers do the
work of one, spread over N cores.

The folder is private to this run (mkdtemp, mode 0700) and holds only what our own
workers wrote, so unpickling it is safe.
"""
from __future__ import annotations

import os
import pickle
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from usd_repair_verifier.profiles.case import CaseError
from usd_repair_verifier.profiles.errors import ExitCode, InfrastructureFault

WORKER_INPUT_KEY = "usdgrade_shared_work"
POLL_S = 0.01


class VerifierFault(InfrastructureFault):
    """The verifier could not do its work: an infrastructure error, never a score."""


class LocalWork:
    """One process does everything, in the order it asks."""

    shared = False

    def __init__(self):
        self.mine: dict[str, Any] = {}

    def claim(self, unit: str) -> bool:
        return True

    def run(self, unit: str, compute: Callable[[], Any]) -> Any:
        self.mine[unit] = value = compute()
        return value

    def wait(self, unit: str) -> Any:
        return self.mine[unit]

    def abandon(self, reason: str) -> None:
        pass  # nobody else waits


class SharedWork:
    """Units of work claimed and published through a folder shared by xdist workers."""

    shared = True

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.mine: dict[str, Any] = {}
        self.claimed: set[str] = set()

    @staticmethod
    def create() -> Path:
        return Path(tempfile.mkdtemp(prefix="usdgrade-work-"))

    def _path(self, unit: str, suffix: str) -> Path:
        return self.folder / f"{unit}.{suffix}"

    def claim(self, unit: str) -> bool:
        """True when this process owns the unit (and must run it), False when another does."""
        if unit in self.claimed:
            return True
        try:
            fd = os.open(self._path(unit, "claim"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        self.claimed.add(unit)
        return True

    def run(self, unit: str, compute: Callable[[], Any]) -> Any:
        """Compute a claimed unit and publish the result, or the failure, for the others."""
        try:
            value = compute()
            self._write(unit, "pickle", pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        except BaseException as error:
            kind = "case" if isinstance(error, CaseError) else "fault"
            try:
                self._write(unit, "failed", f"{kind}\n{type(error).__name__}: {error}".encode())
            except OSError:
                # Not even the failure can be published (a full disk): end this worker, so that
                # the others see its claim die (a verifier fault) instead of waiting for ever.
                os._exit(ExitCode.INFRASTRUCTURE_ERROR)
            raise
        self.mine[unit] = value
        return value

    def abandon(self, reason: str) -> None:
        """This worker failed before finishing the units it claimed: fail them for the others."""
        for unit in sorted(self.claimed - set(self.mine)):
            if not self._path(unit, "failed").exists():
                self._write(unit, "failed", f"fault\n{reason}".encode())

    def _write(self, unit: str, suffix: str, data: bytes) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{unit}.")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, self._path(unit, suffix))

    def wait(self, unit: str) -> Any:
        """The unit's result, once its owner published it; its failure raised again here."""
        if unit in self.mine:
            return self.mine[unit]
        result, failed, claim = self._path(unit, "pickle"), self._path(unit, "failed"), self._path(unit, "claim")
        while True:
            if result.exists():
                with open(result, "rb") as f:
                    value = pickle.load(f)
                self.mine[unit] = value
                return value
            if failed.exists():
                kind, _, message = failed.read_text().partition("\n")
                raise (CaseError if kind == "case" else VerifierFault)(f"{message} (in another worker, building {unit})")
            owner = _owner(claim)
            if owner is not None and not _alive(owner):
                if result.exists() or failed.exists():
                    continue  # published just before it ended
                raise VerifierFault(f"the worker building {unit} (pid {owner}) ended without a result")
            time.sleep(POLL_S)


def _owner(claim: Path) -> int | None:
    try:
        text = claim.read_text()
    except FileNotFoundError:
        return None
    return int(text) if text.strip().isdigit() else None  # None: claimed, pid not yet written


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
