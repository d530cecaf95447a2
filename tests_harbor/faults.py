"""The client-fault variants of the ant task (closed book), each run by Harbor's oracle agent with
one change to its solution or its verifier, and the watcher that kills one verifier mid-grade."""
from __future__ import annotations

import re
import shutil
import subprocess
import threading

VARIANTS = ("sparse", "no-app", "time-limit", "timeout", "killed")
SLOW = "sleep 3600   # (fault test: a grade that never ends)\n"


def _solution_appends(task, line: str) -> None:
    solve = task / "solution" / "solve.sh"
    solve.write_text(solve.read_text() + line)


def _before_grade(task, line: str) -> None:
    script = task / "tests" / "test.sh"
    text = script.read_text()
    anchor = "# 4. The grade:"
    assert anchor in text
    script.write_text(text.replace(anchor, line + anchor, 1))


def make_variant(source, dest, name: str):
    shutil.copytree(source, dest)
    toml = dest / "task.toml"
    text = re.sub(r'^name = "usdgrade/[^"]+"$', f'name = "usdgrade/fault-{name}"', toml.read_text(), flags=re.M)
    if name == "timeout":   # Harbor's own verifier timeout, below test.sh's time limit
        text = text.replace("timeout_sec = 600.0", "timeout_sec = 40.0")
    toml.write_text(text)
    if name == "sparse":    # the oracle's repair, plus a 2 GB sparse file in the submission
        _solution_appends(dest, "truncate -s 2G /app/huge.bin\n")
    elif name == "no-app":  # nothing at /app when the artifacts are collected
        _solution_appends(dest, "rm -rf /app\n")
    elif name == "time-limit":   # test.sh's own time limit passes during the grade
        script = dest / "tests" / "test.sh"
        script.write_text(re.sub(r"^TIME_LIMIT=\S+$", "TIME_LIMIT=0.5", script.read_text(), flags=re.M))
    elif name in ("timeout", "killed"):
        _before_grade(dest, SLOW)
    return dest


def verifier_container(trial_name: str) -> str:
    """The name Docker gives the main service of a trial's separate verifier: Compose's project
    is Harbor's session id (`<trial>__verifier__trial`) made a valid project name."""
    project = re.sub(r"[^a-z0-9_-]", "-", f"{trial_name}__verifier__trial".lower())
    return f"{project}-main-1"


def kill_verifier_when_grading(job_folder, stop: threading.Event, killed: list) -> None:
    """Kill the `killed` variant's verifier container (this job's trial, by name) once its
    test.sh is grading."""
    while not stop.wait(0.5):
        for trial in job_folder.glob("killed__*"):
            name = verifier_container(trial.name)
            top = subprocess.run(["docker", "top", name], capture_output=True, text=True).stdout
            if "test.sh" in top and "sleep 3600" in top:
                subprocess.run(["docker", "kill", name], capture_output=True)
                killed.append(name)
                return
