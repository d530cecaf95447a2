"""How the verifier's commands end: one table of exit codes and the errors that choose them.

Every `usdgrade` command, the sealed grading session and the separate grades exit with an
`ExitCode`; docs/cli.md's table of exit codes is written from this enum (tools/cli_reference.py).
A command says why it stops by raising one of the `VerifierError`s below, each carrying the site
it concerns (a path, a prim, a check); `usdgrade` catches them once, in commands/cli.py `main`,
prints one line and exits with the error's code. Nothing here imports pxr or the measuring code.
"""
from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """The exit codes of every command. The docstring of each member is its row in docs/cli.md."""

    DONE = 0
    REFUSED = 1
    USAGE = 2
    INFRASTRUCTURE_ERROR = 3
    PYTEST_USAGE = 4
    INTERRUPTED = 130

    @property
    def meaning(self) -> str:
        return _MEANINGS[self]


_MEANINGS = {
    ExitCode.DONE: "done, whatever the reward (a failed check or a zero reward is a result, not an error)",
    ExitCode.REFUSED: "refused: nothing usable, or a case that would not grade sensibly; nothing written",
    ExitCode.USAGE: "a mistake in the command line (a missing path, a bad option, an output that is "
                    "not the command's own); nothing written",
    ExitCode.INFRASTRUCTURE_ERROR: "an infrastructure error: the verifier could not grade (grade.json "
                                   "says why; reward.json holds the fallback 0); never a score",
    ExitCode.PYTEST_USAGE: "pytest's own usage error (`usdgrade grade` and `pytest checks` exit as "
                           "pytest does)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
}


class VerifierError(Exception):
    """A reason a command stops, with the site it concerns. Subclasses choose the exit code."""

    exit_code: ExitCode = ExitCode.REFUSED

    def __init__(self, message: str, *, site: str | None = None):
        super().__init__(message)
        self.site = site


class Refused(VerifierError):
    """The input is well formed but nothing sensible can come of it (exit 1)."""

    exit_code = ExitCode.REFUSED


class UsageMistake(VerifierError):
    """A mistake in the command line: a path that is not there, a bad value (exit 2)."""

    exit_code = ExitCode.USAGE


class NotAGrade(UsageMistake):
    """A file given as a grade.json that this verifier's `Grade` does not read: unreadable, not
    JSON, or another shape (exit 2). Its site is the file."""


class InfrastructureFault(VerifierError):
    """The verifier itself could not do its work (exit 3): never a score."""

    exit_code = ExitCode.INFRASTRUCTURE_ERROR


def exit_code_rows() -> list[tuple[int, str, str]]:
    """(code, name, meaning) for every exit code, in order: docs/cli.md's table."""
    return [(int(code), code.name.lower(), code.meaning) for code in ExitCode]
