"""`usdgrade doctor`: what a new operator checks first, in one command.

    usdgrade doctor [--case CASE [--submission DIR --expect R]] [--skip-grade]

Each line is `ok`, `warn` (an optional part is missing: its separate grade reports
`not_run`) or `FAIL` (the authored-USD grade cannot be trusted here); the exit code is 1
when anything failed. Checked: Python and usd-core, the grading plugin and its test
folders beside the installed package (so `usdgrade grade` works without a checkout), the
extras (physical engine, Ray, record drivers), the judge's credentials (present or not,
never shown), the Warp kernel cache, and a real grade of a fixture case against its
expected reward, run as the operator's `usdgrade grade` runs. With `--case` alone: what the case
grades (its id, faults and variant selections) and its own reference, which must score 1.0.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from usd_repair_verifier.profiles.errors import ExitCode

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_CASE = REPO_ROOT / "fixtures" / "cases" / "ant_two_joint_faults"
DEMO_SUBMISSION = REPO_ROOT / "fixtures" / "submissions" / "ant_two_joint_faults_one_repair"
DEMO_REWARD = 0.5
MIN_USD = (25, 5)
JUDGE_KEY_ENV = "ANTHROPIC_API_KEY"
# extra -> ((module, distribution) pairs that must be installed, the install command)
EXTRAS = {
    "physical": ((("newton", "newton"), ("warp", "warp-lang"), ("mujoco", "mujoco"), ("mujoco_warp", "mujoco-warp"),
                  ("newton_usd_schemas", "newton-usd-schemas")), "pip install -e '.[physical]'"),
    "ray": ((("ray", "ray"),), "pip install -e '.[ray]'"),
    "records": ((("sqlalchemy", "SQLAlchemy"), ("psycopg", "psycopg"), ("matplotlib", "matplotlib")),
                "pip install -e '.[records]'"),
}


@dataclass(frozen=True)
class Finding:
    level: str       # "ok" | "warn" | "FAIL"
    topic: str
    text: str


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_python_and_usd() -> list[Finding]:
    found = [Finding("ok" if sys.version_info >= (3, 11) else "FAIL", "python",
                     f"{sys.version.split()[0]} at {sys.executable}")]
    try:
        from pxr import Usd
    except ImportError as error:
        return found + [Finding("FAIL", "usd-core", f"pxr does not import: {error} (pip install usd-core)")]
    version = tuple(Usd.GetVersion())[1:]   # (0, year, month)
    level = "ok" if version >= MIN_USD else "FAIL"
    found.append(Finding(level, "usd-core", f"{'.'.join(map(str, version))}"
                                            + ("" if level == "ok" else f", below {'.'.join(map(str, MIN_USD))}")))
    return found


def check_plugin() -> list[Finding]:
    """The plugin and the grading tests it runs, where the installed package put them."""
    if importlib.util.find_spec("usd_repair_verifier.scoring.plugin") is None:
        return [Finding("FAIL", "plugin", "usd_repair_verifier.scoring.plugin does not import")]
    tests = [REPO_ROOT / "checks" / "test_fault_checks.py", REPO_ROOT / "gates" / "test_validity.py"]
    missing = [str(t) for t in tests if not t.is_file()]
    if missing:
        return [Finding("FAIL", "plugin", f"grading tests missing from the install: {', '.join(missing)}")]
    where = "a checkout" if (REPO_ROOT / "pyproject.toml").is_file() else "an installed package"
    return [Finding("ok", "plugin", f"usd_repair_verifier.scoring.plugin and the grading tests in {REPO_ROOT} ({where}); "
                                     "usdgrade grade loads the plugin itself, no conftest needed")]


def check_extras() -> list[Finding]:
    found = []
    for extra, (modules, install) in EXTRAS.items():
        missing = [m for m, _ in modules if importlib.util.find_spec(m) is None]
        if missing:
            found.append(Finding("warn", f"extra {extra}", f"missing {', '.join(missing)} ({install})"))
        else:
            versions = ", ".join(f"{d} {_version(d) or '?'}" for _, d in modules)
            found.append(Finding("ok", f"extra {extra}", versions))
    return found


def check_judge_key(env=os.environ) -> list[Finding]:
    """Present or not; the value itself is never read into the output."""
    if env.get(JUDGE_KEY_ENV):
        return [Finding("ok", "judge key", f"{JUDGE_KEY_ENV} is set (value not shown)")]
    return [Finding("warn", "judge key", f"{JUDGE_KEY_ENV} is not set: usdgrade visual cannot call the judge")]


def check_warp_cache(env=os.environ) -> list[Finding]:
    from usd_repair_verifier.physical.grade import default_kernel_cache

    path = Path(env.get("WARP_CACHE_PATH") or default_kernel_cache())
    source = "WARP_CACHE_PATH" if env.get("WARP_CACHE_PATH") else "default"
    if path.is_dir():
        writable = os.access(path, os.W_OK)
        kernels = sum(1 for _ in path.rglob("*") if _.is_file())
        return [Finding("ok" if writable else "warn", "warp cache",
                        f"{path} ({source}): {kernels} files{'' if writable else ', not writable'}")]
    parent_ok = os.access(path.parent if path.parent.exists() else REPO_ROOT, os.W_OK)
    return [Finding("ok" if parent_ok else "warn", "warp cache",
                    f"{path} ({source}): not built yet (the first physical grade compiles it, about 20 s)"
                    + ("" if parent_ok else "; its folder is not writable"))]


def expected_reward(case: Path, submission: Path, given: float | None) -> float | None:
    """The reward the grade should give: --expect when given; the demo's own reward for the demo; for a case's own sides what freezing it required (its reference
    1.0, its input 0.0); else none (the grade's reward is reported, not judged)."""
    if given is not None:
        return given
    case, submission = case.resolve(), submission.resolve()
    if (case, submission) == (DEMO_CASE.resolve(), DEMO_SUBMISSION.resolve()):
        return DEMO_REWARD
    if submission == case / "reference":
        return 1.0
    if submission == case / "input":
        return 0.0
    return None


def check_fixture_grade(case: Path, submission: Path, expected: float | None) -> list[Finding]:
    """Grade as `usdgrade grade` does, in a child process started outside the checkout."""
    if not (case / "profile.json").is_file() or not submission.is_dir():
        return [Finding("warn", "fixture grade", f"no fixture case at {case} (not a checkout?): "
                                                 "give --case CASE --submission DIR --expect R")]
    with tempfile.TemporaryDirectory(prefix="usdgrade-doctor-") as tmp:
        start = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "usd_repair_verifier.commands.cli", "grade", str(submission), "--case", str(case),
                              "--out", str(Path(tmp) / "out")], cwd=tmp, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        reward = _graded_reward(Path(tmp) / "out")
    if expected is None and reward is not None and run.returncode == ExitCode.DONE:
        return [Finding("ok", "fixture grade", f"{case.name}: reward {reward} ({seconds:.1f} s); no expected "
                                               "reward to compare with (--expect R)")]
    if reward == expected and run.returncode == ExitCode.DONE:
        return [Finding("ok", "fixture grade", f"{case.name}: reward {reward} as expected ({seconds:.1f} s)")]
    tail = (run.stderr.strip().splitlines() or run.stdout.strip().splitlines() or ["no output"])[-1]
    return [Finding("FAIL", "fixture grade", f"{case.name}: reward {reward}, expected {expected}, "
                                             f"exit {run.returncode}: {tail}")]


def _graded_reward(out: Path) -> float | None:
    """The reward the fixture's grade.json records, read as the verifier's `Grade`; None when the
    grade wrote no reward (its reward.json is the same number) or left no grade."""
    from usd_repair_verifier.profiles.errors import NotAGrade
    from usd_repair_verifier.scoring.grade_file import load

    if not (out / "reward.json").is_file():
        return None
    try:
        return load(out / "grade.json").authored_usd
    except NotAGrade:
        return None


def check_case(case: Path) -> list[Finding]:
    """What the case grades: its profile's id, faults and variant selections (the session layer
    every stage is composed with)."""
    from usd_repair_verifier.profiles.schema import ProfileError, load_profile, selection_text

    try:
        profile = load_profile(case / "profile.json")
    except ProfileError as error:
        return [Finding("FAIL", "case", f"{case}: {error}")]
    selections = selection_text(profile.variant_selections)
    return [Finding("ok", "case", f"{profile.id} (version {profile.version}): {len(profile.faults)} fault(s), "
                                  f"{len(profile.checks)} check(s)"),
            Finding("ok", "selections", selections + (" (composed into reference, input and candidate "
                                                              "through the session layer)"
                                                              if profile.variant_selections else ""))]


def run(args: argparse.Namespace) -> int:
    given = [(label, Path(value)) for label, value in (("--case", args.case), ("--submission", args.submission)) if value]
    missing = [f"{label} {path}" for label, path in given if not path.is_dir()]
    if missing or (args.submission and not args.case):
        print(f"usdgrade doctor: {missing[0]} is not a folder" if missing else
              "usdgrade doctor: --submission needs its --case (or neither: the bundled demo)", file=sys.stderr)
        return ExitCode.USAGE
    findings = check_python_and_usd() + check_plugin() + check_extras() + check_judge_key() + check_warp_cache()
    if args.case:
        findings += check_case(Path(args.case))
    if not args.skip_grade:
        case = Path(args.case) if args.case else DEMO_CASE
        # --case alone: the case's own reference, which must score 1.0.
        submission = Path(args.submission) if args.submission else (case / "reference" if args.case else DEMO_SUBMISSION)
        expected = expected_reward(case, submission, args.expect)
        findings += check_fixture_grade(case.resolve(), submission.resolve(), expected)
    for f in findings:
        print(f"{f.level:<4}  {f.topic:<16} {f.text}")
    failed = [f for f in findings if f.level == "FAIL"]
    print(f"{len(failed)} problem(s)" if failed else "ready to grade")
    return ExitCode.REFUSED if failed else ExitCode.DONE


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("doctor", help="check this installation: usd-core, plugin, extras, keys, a real grade")
    p.add_argument("--case", help="a case: shows what it grades (faults, variant selections) and grades it "
                                  "(default: the bundled demo case)")
    p.add_argument("--submission", metavar="DIR", help="its submission (default: the case's reference, or the "
                                                       "bundled demo submission)")
    p.add_argument("--expect", type=float, default=None,
                   help=f"the expected reward (default: {DEMO_REWARD} for the demo, 1.0 for a case's reference, 0.0 for "
                        "its input, else none: the reward is reported)")
    p.add_argument("--skip-grade", action="store_true", help="skip the fixture grade")
    p.set_defaults(run=run)
    return p
