"""`usdgrade task --check TASK`: is a task folder sound, without Docker?

The task's own tests/test.sh and solution/solve.sh run here with Harbor's layout mapped onto
temporary folders (their fixed paths /app, /solution, /logs/agent, /tests, /opt/usdgrade and
/logs/verifier replaced, line by line, by local ones; nothing else of either script changes;
the process sweep, which would end this machine's processes, is left out; the image's bytecode
tree, /opt/usdgrade/pycache, which only the verifier's image has, gives way to the interpreter's
own bytecode beside its sources (without either, each grade would compile every module it
imports: 3.2 s against 1.6 s for a grade of the example task's reference, measured):

1. the oracle: solve.sh restores solution/reference into a copy of environment/app and records
   its trajectory, then test.sh grades it: it must score 1.0 (`graded`, objective success);
2. the untouched input (a fresh copy of environment/app, graded with the oracle's trajectory so
   that a closed-book task measures it): it must score 0.0.

One line says whether the task is sound (exit 0) or what failed (exit 1); a TASK that is not a
folder is a mistake in the command line (exit 2). The verifier is the
task's own copy (tests/verifier) when it ships one, else this installed verifier.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import usd_repair_verifier
from usd_repair_verifier.profiles.errors import ExitCode

TEMPLATES = Path(__file__).resolve().with_name("task_files")
DETAILS_SCRIPT = "reward_details.py"
NAMESPACE_INIT = Path(usd_repair_verifier.__file__).resolve()

# test.sh's fixed settings, each a line NAME=value, and the closed-book trajectory argument.
SETTINGS = ("VERIFIER", "PYTHON", "CASE", "SUBMISSION", "OUT", "DETAILS")
SOLVE_PATHS = ("/solution/", "/app")


class CheckError(Exception):
    """The task cannot be checked (a missing part, a script usdgrade did not write)."""


def _local_test_sh(text: str, paths: dict[str, str], trajectory: Path) -> str:
    for name in SETTINGS:
        text, count = re.subn(rf"^{name}=\S+$", f"{name}={paths[name]}", text, flags=re.M)
        if count != 1:
            raise CheckError(f"tests/test.sh has no single {name}= line: regenerate the task with usdgrade task")
    text = re.sub(r"--trajectory=\S+?\)", f"--trajectory={trajectory})", text)
    text, count = re.subn(r"(?<= -X pycache_prefix=)\S+", "", text)
    if count != 1:
        raise CheckError("tests/test.sh has no single -X pycache_prefix=: regenerate the task with usdgrade task")
    return re.sub(r"^end_other_processes$", "# (the check does not end this machine's processes)", text, flags=re.M)


def _local_solve_sh(text: str, solution: Path, app: Path, logs: Path) -> str:
    for fixed in SOLVE_PATHS:
        if fixed not in text:
            raise CheckError(f"solution/solve.sh never names {fixed}: regenerate the task with usdgrade task")
    text = re.sub(r"/app(?=[/\s]|$)", str(app), text)
    return text.replace("/solution/", f"{solution}/").replace("/logs/agent", str(logs))


def _grade(task: Path, scratch: Path, submission: Path, trajectory: Path, verifier: Path) -> dict:
    out = scratch / "out"
    out.mkdir()
    details = task / "tests" / DETAILS_SCRIPT
    paths = {"VERIFIER": str(verifier), "PYTHON": sys.executable, "CASE": str(task / "tests" / "case"),
             "SUBMISSION": str(submission), "OUT": str(out),
             "DETAILS": str(details if details.is_file() else TEMPLATES / DETAILS_SCRIPT)}
    if any(re.search(r"[\s'\"$`\\]", p) for p in paths.values()) or re.search(r"[\s'\"$`\\]", str(trajectory)):
        raise CheckError("a path here holds a space or quote: run the check from a plain folder")
    script = scratch / "test.sh"
    script.write_text(_local_test_sh((task / "tests" / "test.sh").read_text(), paths, trajectory))
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900)
    try:
        grade = json.loads((out / "grade.json").read_text())
        reward = json.loads((out / "reward.json").read_text())
    except (OSError, ValueError) as error:
        raise CheckError(f"test.sh left no readable grade ({error}); its output ends: {r.stdout[-300:]}") from error
    return {"status": grade.get("status"), "reward": reward.get("authored_usd"), "grade": grade}


def check_task(task: Path) -> tuple[bool, str]:
    for part in ("task.toml", "tests/test.sh", "tests/case/profile.json", "solution/solve.sh", "environment/app"):
        if not (task / part).exists():
            raise CheckError(f"no {part}")
    verifier = task / "tests" / "verifier"
    verifier = verifier if (verifier / NAMESPACE_INIT.parent.name).is_dir() else NAMESPACE_INIT.parent.parent
    closed = json.loads((task / "tests" / "case" / "profile.json").read_text()).get("closed_book", False)
    with tempfile.TemporaryDirectory(prefix="usdgrade-check-") as temp:
        scratch = Path(temp)
        oracle_app, logs = scratch / "oracle" / "app", scratch / "oracle" / "logs"
        shutil.copytree(task / "environment" / "app", oracle_app)
        logs.mkdir()
        solve = scratch / "oracle" / "solve.sh"
        solve.write_text(_local_solve_sh((task / "solution" / "solve.sh").read_text(), task / "solution", oracle_app, logs))
        r = subprocess.run(["bash", str(solve)], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise CheckError(f"solution/solve.sh failed ({r.returncode}): {r.stderr.strip()[-300:]}")
        trajectory = logs / "trajectory.json"
        if closed and not trajectory.is_file():
            raise CheckError("closed book, but solve.sh recorded no trajectory: Harbor's oracle would score 0")
        oracle = _grade(task, scratch / "oracle", oracle_app, trajectory, verifier)
        shutil.copytree(task / "environment" / "app", scratch / "input" / "app")
        untouched = _grade(task, scratch / "input", scratch / "input" / "app", trajectory, verifier)
    book = "closed book" if closed else "open book"
    summary = (f"oracle {oracle['reward']} ({oracle['status']}), untouched input {untouched['reward']} "
               f"({untouched['status']}), {book}")
    sound = (oracle["reward"] == 1.0 and oracle["status"] == "graded" and oracle["grade"].get("objective_success")
             and untouched["reward"] == 0.0 and untouched["status"] == "graded")
    return bool(sound), summary


def check_command(task: str) -> int:
    if not Path(task).is_dir():   # a mistake in the command line, not a task that is unsound
        print(f"usdgrade task --check: {task} is {'not a folder' if Path(task).exists() else 'not there'}: "
              "give a task folder that usdgrade task wrote", file=sys.stderr)
        return ExitCode.USAGE
    try:
        sound, summary = check_task(Path(task).resolve())
    except (CheckError, OSError, ValueError, subprocess.TimeoutExpired) as error:
        print(f"{task}: NOT sound: {error}")
        return ExitCode.REFUSED
    print(f"{task}: {'sound' if sound else 'NOT sound'}: {summary}")
    return ExitCode.DONE if sound else ExitCode.REFUSED
