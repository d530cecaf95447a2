"""Where a command may write, and writing there: the one rule every `usdgrade` command follows.

Nothing is ever destroyed that the command did not write:
- an output inside or equal to one of the command's inputs is refused, and so is an input inside
  the output (for a command that replaces its output folder), and an output inside the verifier's
  own code;
- a command that owns a whole folder (inject, freeze, task, records report, explain --html,
  regrade) refuses an existing folder that holds anything it did not write itself; a folder it
  did write (its mark: `.usdgrade-output` naming the command, or what the command alone writes,
  such as inject's manifest) is replaced only with `--force` (regrade resumes in its own folder);
- the grade and the separate grades (visual, physical) write named files into OUT and remove
  only those (OUT may hold other things: Harbor's /logs/verifier holds its own log).

Refusals are `OutputRefused`: one line that says why and what to do, raised before anything is
written. Grade files are written atomically (a temporary file renamed over the target); a folder
is built beside its destination and renamed into place. Both get the modes the user's umask
gives a new file or folder (tempfile's private 0600 and 0700 would make a team's shared output
unreadable to the team); the sealed test.sh of a Harbor task sets its own umask.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from usd_repair_verifier.profiles import jsonable
from usd_repair_verifier.profiles.errors import UsageMistake

REWARD_FILE = "reward.json"
GRADE_FILE = "grade.json"
OUTPUT_FILES = (REWARD_FILE, GRADE_FILE)

MARK_FILE = ".usdgrade-output"
# The verifier's packages (pyproject.toml's package-dir; tests/test_command_outputs.py keeps the two equal).
SOURCE_PACKAGES = ("authoring", "checks", "closed_book", "commands", "gates", "physical", "profiles", "records",
                   "regrade", "scoring", "stage_snapshot", "visual")


class OutputRefused(UsageMistake, ValueError):
    """An output that would overwrite, delete or corrupt something the command did not write."""


def current_umask() -> int:
    """The process's umask, read without changing it (Linux reports it in /proc/self/status)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)   # elsewhere: set and restored at once
    os.umask(mask)
    return mask


def as_umask_allows(path: Path | str | int, folder: bool = False) -> None:
    """Give a file (a path or an open descriptor) or a folder made private by tempfile the mode an
    ordinary new one gets: 0666, or 0777 for a folder, less the umask."""
    mode = (0o777 if folder else 0o666) & ~current_umask()
    if isinstance(path, int):
        os.fchmod(path, mode)
    else:
        os.chmod(path, mode)


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def inside(path: Path, folder: Path) -> bool:
    path, folder = _real(path), _real(folder)
    return path == folder or folder in path.parents


def verifier_code() -> tuple[Path, ...]:
    """The folders that hold the verifier's own code: the import package, and in a checkout the
    package folders it maps (a checkout's other folders, out/ or fixtures/, are not code)."""
    from usd_repair_verifier import IMPORT_ROOT

    root = _real(IMPORT_ROOT)
    package = root / "usd_repair_verifier"
    if (package / "scoring").is_dir():      # installed: every package lies under the namespace
        return (package,)
    return (package, *(root / name for name in SOURCE_PACKAGES))


def check_placement(out: Path, inputs: Iterable[tuple[str, Path | str | None]], *, owns_folder: bool = True,
                    option: str = "--out") -> None:
    """Refuse `out` (OutputRefused) inside or equal to an input or the verifier's code; with
    `owns_folder` (the command replaces the folder) also an input inside `out`."""
    target = _real(out)
    for label, given in inputs:
        if given is None or str(given) == "":
            continue
        path = _real(given)
        if target == path or path in target.parents:
            itself = " (it is that folder)" if target == path else ""
            raise OutputRefused(f"{option} {out} lies inside the {label} {given}{itself}: writing there would "
                                f"change it; choose an output folder outside it")
        if owns_folder and target in path.parents:
            raise OutputRefused(f"the {label} {given} lies inside {option} {out}: replacing {out} would delete it; "
                                f"choose an output folder that holds no input")
    for code in verifier_code():
        if target == code or code in target.parents:
            raise OutputRefused(f"{option} {out} lies inside the verifier's own code ({code}): "
                                f"choose an output folder outside it")


# --- folders a command owns -------------------------------------------------------------------

def marked_by(folder: Path) -> str | None:
    """The command named by the folder's mark, or None."""
    try:
        value = json.loads((Path(folder) / MARK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    command = value.get("command") if isinstance(value, dict) else None
    return command if isinstance(command, str) else None


def mark(folder: Path, command: str) -> None:
    """Mark `folder` as written by `usdgrade COMMAND`."""
    from usd_repair_verifier.scoring import VERIFIER_VERSION

    (Path(folder) / MARK_FILE).write_text(
        json.dumps({"command": command, "written_by": f"usd-repair-verifier {VERIFIER_VERSION}"}) + "\n",
        encoding="utf-8")


def _by_mark(command: str) -> Callable[[Path], bool]:
    return lambda folder: marked_by(folder) == command


def claim_folder(out: Path, command: str, inputs: Iterable[tuple[str, Path | str | None]] = (), *,
                 force: bool = False, owned: Callable[[Path], bool] | None = None, resume: bool = False,
                 option: str = "--out") -> bool:
    """May `usdgrade COMMAND` write the folder `out`? OutputRefused (one line) when not; True when
    `out` holds an earlier output of the command (to be replaced: `force`, or continued: `resume`).

    `owned(folder)` says whether the command wrote an existing folder (default: its mark)."""
    check_placement(out, inputs, option=option)
    out = Path(out)
    if not out.exists() and not out.is_symlink():
        return False
    if out.is_symlink() or not out.is_dir():
        raise OutputRefused(f"{option} {out} exists and is not a folder: nothing was written; choose a new folder")
    if not any(out.iterdir()):
        return False
    if not (owned or _by_mark(command))(out):
        raise OutputRefused(f"{option} {out} exists and holds files that usdgrade {command} did not write: "
                            f"nothing was written; choose a new folder (or empty this one yourself)")
    if not (force or resume):
        raise OutputRefused(f"{option} {out} holds an earlier output of usdgrade {command}: nothing was written; "
                            f"add --force to replace it, or choose a new folder")
    return True


def staging_folder(out: Path) -> Path:
    """A fresh, empty folder beside `out` (same filesystem) to build the new output in."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    as_umask_allows(staging, folder=True)     # it becomes the output folder
    return staging


def replace_folder(staging: Path, out: Path, command: str | None = None,
                   owned: Callable[[Path], bool] | None = None) -> None:
    """Move the finished `staging` folder to `out`, marked for `command` (None: its mark is its own
    content), removing the earlier output there only if the command wrote it (checked again now)."""
    staging, out = Path(staging), Path(out)
    if command is not None:
        mark(staging, command)
    old = None
    if out.exists():
        if any(out.iterdir()) and not (owned or _by_mark(command or ""))(out):
            raise OutputRefused(f"{out} changed while the command ran and holds files it did not write: "
                                f"the new output is left in {staging}")
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        out.rename(old)
    staging.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


# --- files in a shared folder: the grade, the visual and the physical grade ---------------------

def check_grade_output(out: Path, *, submission: Path, case: Path | None = None,
                       inputs: Iterable[tuple[str, Path | str | None]] = ()) -> None:
    """The grade's OUT: not inside (or equal to) the submission, the case or the verifier's code,
    and none of the files it writes or removes is an input (OutputRefused)."""
    check_placement(out, [("submission", submission), ("case", case)], owns_folder=False)
    _folder_or_nothing(out)
    inputs = [(label, path) for label, path in inputs if path]
    for name in OUTPUT_FILES:
        for label, path in inputs:
            if _real(Path(out) / name) == _real(path):
                raise OutputRefused(f"the {label} {path} is the grade's own output {name} in --out {out}: "
                                    f"it would be removed; choose another output folder")


def prepare_separate_output(out: Path, submission: Path, record_file: str,
                            inputs: Iterable[tuple[str, Path | str | None]] = ()) -> None:
    """A separate grade's OUT (visual.json, physical.json): not inside the submission, the case or
    the verifier's code (OutputRefused), created, and without a record of an earlier run."""
    inputs = list(inputs)
    check_placement(out, [("submission", submission), *inputs], owns_folder=False)
    _folder_or_nothing(out)
    for label, path in inputs:
        if path and _real(Path(out) / record_file) == _real(path):
            raise OutputRefused(f"the {label} {path} is {record_file} in --out {out}: it would be replaced")
    out.mkdir(parents=True, exist_ok=True)
    try:
        (out / record_file).unlink()
    except FileNotFoundError:
        pass


def _folder_or_nothing(out: Path) -> None:
    if (Path(out).exists() or Path(out).is_symlink()) and not Path(out).is_dir():
        raise OutputRefused(f"--out {out} exists and is not a folder: choose a folder for the outputs")


def remove_stale(out: Path) -> None:
    for name in OUTPUT_FILES:
        try:
            (out / name).unlink()
        except FileNotFoundError:
            pass


def write_json(path: Path, value) -> None:
    """Write to a temporary file in the same folder, then rename over the target."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        as_umask_allows(fd)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(jsonable.dumps(value))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
