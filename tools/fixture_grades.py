#!/usr/bin/env python3
"""Grade every committed fixture case's reference, input and submissions into one folder.

For a change that must leave every grade as it was (a refactor of the plugin, the scoring, the
checks' plumbing): run it before and after, then compare the two folders.

    python tools/fixture_grades.py OUT                # every case, one fresh `pytest checks` each
    python tools/fixture_grades.py OUT --only gen_ant_1 hyq_shape_and_mass
    python tools/fixture_grades.py OUT --check BEFORE # grade into OUT, then compare with BEFORE (exit 1 on a difference)
    diff -r BEFORE OUT                                # the same comparison, by hand

What is graded: each case folder under fixtures/cases/, fixtures/robot_cases/ and
fixtures/simready/cases/ (its `reference/` must grade 1.0, its `input/` 0.0), and each package
under fixtures/submissions/ against the case whose name begins its own. Each grade is the
operator's command (scoring/run.py: `python -m pytest checks --case ... --submission ... --out ...`,
serial) run in this checkout. OUT/<case>/<side>/ receives grade.json with its `timings` left out
(seconds by stage, the only part of a grade that differs between runs of the same bytes),
reward.json when the grade wrote one, and exit_code.txt; the checkout's own folder is written
`<checkout>` in them, so that two checkouts' grades compare.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASE_FOLDERS = ("fixtures/cases", "fixtures/robot_cases", "fixtures/simready/cases")
SUBMISSIONS = "fixtures/submissions"
UNSTABLE_FIELDS = ("timings",)


def cases(root: Path = ROOT) -> dict[str, Path]:
    """Case name -> folder, every committed case (a folder with a profile.json)."""
    found = {}
    for parent in CASE_FOLDERS:
        for folder in sorted((root / parent).iterdir()):
            if (folder / "profile.json").is_file():
                found[folder.name] = folder
    return found


def grades_to_run(root: Path = ROOT, only: list[str] | None = None) -> list[tuple[str, str, Path, Path]]:
    """(case name, side, case folder, submission folder), in a fixed order."""
    every = cases(root)
    runs = []
    for name, folder in every.items():
        runs += [(name, "reference", folder, folder / "reference"), (name, "input", folder, folder / "input")]
    submissions = root / SUBMISSIONS
    for package in sorted(p for p in submissions.iterdir() if p.is_dir()) if submissions.is_dir() else []:
        owners = [n for n in every if package.name.startswith(n + "_")]
        if not owners:
            raise SystemExit(f"{package}: no committed case's name begins the submission's name")
        owner = max(owners, key=len)
        runs.append((owner, f"submission-{package.name}", every[owner], package))
    if only:
        unknown = set(only) - set(every)
        if unknown:
            raise SystemExit(f"no such case: {', '.join(sorted(unknown))}")
        runs = [r for r in runs if r[0] in only]
    return runs


def stable(grade_text: str, root: Path = ROOT) -> str:
    """grade.json without the fields that differ between runs of the same bytes, the checkout's
    folder written as `<checkout>` (reasons name the submission's folder), keys in the file's order."""
    grade = json.loads(grade_text)
    for field in UNSTABLE_FIELDS:
        grade.pop(field, None)
    return json.dumps(grade, indent=2).replace(str(root), "<checkout>") + "\n"


def grade_one(case: Path, submission: Path, out: Path) -> None:
    # Imported here: the tool's --help and its file comparison need no pxr.
    from usd_repair_verifier.scoring.outputs import GRADE_FILE, REWARD_FILE
    from usd_repair_verifier.scoring.run import run_grade

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fixture-grade-") as scratch:
        result = run_grade(case, submission, Path(scratch), extra_args=("-p", "no:randomly"))
        grade, reward = Path(scratch) / GRADE_FILE, Path(scratch) / REWARD_FILE
        if grade.is_file():
            (out / GRADE_FILE).write_text(stable(grade.read_text()))
        if reward.is_file():
            shutil.copyfile(reward, out / REWARD_FILE)
    (out / "exit_code.txt").write_text(f"{result.exit_code}\n")


def differences(before: Path, after: Path) -> list[str]:
    """Relative paths of files present on one side only or with different bytes."""
    names = {p.relative_to(before) for p in before.rglob("*") if p.is_file()}
    names |= {p.relative_to(after) for p in after.rglob("*") if p.is_file()}
    return [str(n) for n in sorted(names)
            if not ((before / n).is_file() and (after / n).is_file()
                    and (before / n).read_bytes() == (after / n).read_bytes())]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for the grades (created; existing grades are replaced)")
    parser.add_argument("--only", nargs="+", metavar="CASE", help="only these cases (folder names)")
    parser.add_argument("--check", type=Path, metavar="BEFORE",
                        help="after grading, compare OUT with this earlier output; exit 1 on any difference")
    args = parser.parse_args(argv)
    runs = grades_to_run(only=args.only)
    for i, (name, side, case, submission) in enumerate(runs, 1):
        grade_one(case, submission, args.out / name / side)
        print(f"[{i}/{len(runs)}] {name} {side}: {(args.out / name / side / 'exit_code.txt').read_text().strip()}",
              flush=True)
    if args.check is None:
        return 0
    changed = differences(args.check, args.out)
    for path in changed:
        print(f"differs: {path}")
    print(f"{len(changed)} file(s) differ between {args.check} and {args.out}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
