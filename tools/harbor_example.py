"""examples/harbor-task: the Harbor task `usdgrade task` writes for fixtures/cases/cabinet_drawer_door.

The repository keeps what is the example's own (task.toml, the instruction, environment/, solution/,
tests/ with test.sh, the Dockerfile, the pins and the case) and a lock of the verifier it was built
with (verifier.lock.json: the verifier's and the scoring's versions, and the files the copy holds);
tests/verifier/ itself, a copy of this checkout's grading code, is not committed (.gitignore) but
written here. The lock changes with a version or with the set of the verifier's files, not with
every edit of its code.

    python tools/harbor_example.py            # write the complete example (its verifier too) and its lock
    python tools/harbor_example.py --check    # exit 1, saying what differs, unless the committed example
                                              # and lock are what this checkout writes

tests/test_harbor_example.py runs the check; .ci/run runs it, then writes the complete example.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "harbor-task"
CASE = ROOT / "fixtures" / "cases" / "cabinet_drawer_door"
LOCK = "verifier.lock.json"
VERIFIER = Path("tests") / "verifier"


def lock_of(task: Path) -> dict:
    """What identifies the verifier a written task carries: its versions and its files."""
    from usd_repair_verifier.profiles.schema import SCORING_VERSION
    from usd_repair_verifier.scoring import VERIFIER_VERSION

    files = sorted(p.relative_to(task / VERIFIER).as_posix() for p in (task / VERIFIER).rglob("*") if p.is_file())
    return {"case": CASE.relative_to(ROOT).as_posix(), "verifier_version": VERIFIER_VERSION,
            "scoring_version": SCORING_VERSION, "verifier": {"folder": VERIFIER.as_posix(), "files": files},
            "regenerate": "python tools/harbor_example.py"}


def _text(lock: dict) -> str:
    return json.dumps(lock, indent=2, sort_keys=True) + "\n"


def _own_files(task: Path) -> dict[str, bytes]:
    """The example's own files: everything but the verifier copy and the lock."""
    return {p.relative_to(task).as_posix(): p.read_bytes() for p in sorted(task.rglob("*"))
            if p.is_file() and not p.relative_to(task).is_relative_to(VERIFIER) and p.name != LOCK
            and "__pycache__" not in p.parts}


def write(out: Path = EXAMPLE) -> Path:
    from usd_repair_verifier.authoring.task import write_task

    write_task(CASE, out, force=True)   # the example is this command's own output, written again
    (out / LOCK).write_text(_text(lock_of(out)), encoding="utf-8")
    return out


def differences(example: Path = EXAMPLE) -> list[str]:
    """What differs between the committed example (its own files and its lock) and what this
    checkout writes."""
    from usd_repair_verifier.authoring.task import write_task

    with tempfile.TemporaryDirectory(prefix="usdgrade-example-") as tmp:
        written = write_task(CASE, Path(tmp) / "task")
        want, have = _own_files(written), _own_files(example)
        found = [f"{name}: {'missing' if name not in have else 'extra' if name not in want else 'differs'}"
                 for name in sorted(set(want) | set(have)) if want.get(name) != have.get(name)]
        lock = example / LOCK
        if not lock.is_file() or lock.read_text(encoding="utf-8") != _text(lock_of(written)):
            found.append(f"{LOCK}: not the lock of this checkout's verifier")
    return found


def main(argv: list[str] | None = None) -> int:
    from generated_page import write_or_check_files  # beside this script

    return write_or_check_files(argv, __doc__.splitlines()[0],
                                lambda: [f"examples/harbor-task/{line}" for line in differences()],
                                lambda: [write()], "tools/harbor_example.py")


if __name__ == "__main__":
    raise SystemExit(main())
