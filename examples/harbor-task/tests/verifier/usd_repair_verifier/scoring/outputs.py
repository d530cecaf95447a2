"""Writing OUT/reward.json and OUT/grade.json: atomically, and never inside the submission."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from usd_repair_verifier.profiles import jsonable

REWARD_FILE = "reward.json"
GRADE_FILE = "grade.json"
OUTPUT_FILES = (REWARD_FILE, GRADE_FILE)


def inside(path: Path, folder: Path) -> bool:
    path, folder = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    return path == folder or folder in path.parents


def prepare_separate_output(out: Path, submission: Path, record_file: str) -> None:
    """A separate grade's OUT (visual.json, physical.json): not inside the submission (ValueError),
    created, and without a record of an earlier run."""
    if inside(out, submission):
        raise ValueError(f"OUT ({out}) may not lie inside the submission ({submission})")
    out.mkdir(parents=True, exist_ok=True)
    try:
        (out / record_file).unlink()
    except FileNotFoundError:
        pass


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
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(jsonable.dumps(value))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
