"""Driving the real Harbor client: the stack, tasks written by `usdgrade task`, `harbor run`,
`harbor job regrade`, and reading what they leave (job and trial folders)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
# The three tasks: textures (the cabinet), closed book (the ant, the default of `usdgrade task`),
# a mass and collision fault (the gripper, written open book). Case -> `usdgrade task` options.
TASKS = {
    "cabinet_drawer_door": (),
    "ant_two_joint_faults": (),
    "gripper_hull_and_mass": ("--open-book",),
}
STACK = ROOT / "tools" / "harbor_stack.py"
# LiteLLM (imported by Harbor) fetches a model price list from the web at start unless told not to.
HARBOR_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "scripted-model-needs-no-key"}


def unavailable(reason: str) -> None:
    """A prerequisite is missing: a failure under CI, an explicit skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must provide it: .ci/run runs tools/harbor_stack.py)", pytrace=False)
    pytest.skip(reason)


@dataclass(frozen=True)
class Stack:
    harbor: Path
    base_image: str


def stack() -> Stack:
    """The stack .ci/run brought up (its variables), else tools/harbor_stack.py --no-install,
    which starts what is installed and builds the images, but installs nothing."""
    harbor, base = os.environ.get("USDGRADE_HARBOR"), os.environ.get("USDGRADE_BASE_IMAGE")
    if not (harbor and base):
        if os.geteuid() != 0:
            unavailable("the Harbor end-to-end tests need root (dockerd, the registry)")
        r = subprocess.run([sys.executable, str(STACK), "--no-install"], capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            unavailable(f"the Harbor stack is not up: {r.stderr.strip()[-800:]}")
        values = dict(line.removeprefix("export ").split("=", 1) for line in r.stdout.splitlines() if "=" in line)
        harbor, base = values["USDGRADE_HARBOR"], values["USDGRADE_BASE_IMAGE"]
    if not Path(harbor).is_file():
        unavailable(f"harbor not found at {harbor}")
    return Stack(Path(harbor), base)


def usdgrade(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "usd_repair_verifier.commands.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


@dataclass(frozen=True)
class Trial:
    folder: Path

    @property
    def result(self) -> dict:
        return json.loads((self.folder / "result.json").read_text())

    @property
    def task(self) -> str:
        return self.result["task_name"]

    @property
    def rewards(self) -> dict | None:
        verifier = self.result.get("verifier_result")
        return verifier and verifier.get("rewards")

    @property
    def exception(self) -> dict | None:
        return self.result.get("exception_info")

    def verifier_file(self, name: str):
        path = self.folder / "verifier" / name
        return json.loads(path.read_text()) if path.exists() else None

    @property
    def grade(self) -> dict | None:
        return self.verifier_file("grade.json")

    def log(self) -> str:
        path = self.folder / "verifier" / "test-stdout.txt"
        return path.read_text(errors="replace") if path.exists() else "(no test-stdout.txt)"

    def describe(self) -> str:
        exception = self.exception or {}
        return (f"{self.folder.name}: rewards {self.rewards}, exception {exception.get('exception_type')}: "
                f"{str(exception.get('exception_message'))[:600]}\n{self.log()[-1500:]}")


@dataclass(frozen=True)
class Job:
    folder: Path
    seconds: float
    output: str

    @property
    def result(self) -> dict:
        return json.loads((self.folder / "result.json").read_text())

    def trials(self) -> list[Trial]:
        return sorted((Trial(p.parent) for p in self.folder.glob("*/result.json")), key=lambda t: t.folder.name)

    def by_task(self) -> dict[str, Trial]:
        return {trial.task: trial for trial in self.trials()}


def harbor(stack_: Stack, *args: str, timeout: float, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, **HARBOR_ENV, **(env or {}))
    return subprocess.run([str(stack_.harbor), *args], capture_output=True, text=True, timeout=timeout, env=full_env)


def harbor_run(stack_: Stack, tasks: Path, agent: str, jobs: Path, name: str, *extra: str, concurrent: int = 2,
               timeout: float = 1500, env: dict | None = None) -> Job:
    started = time.monotonic()
    r = harbor(stack_, "run", "-p", str(tasks), "-a", agent, "-e", "docker", "-o", str(jobs), "--job-name", name,
               "-n", str(concurrent), "-y", *extra, timeout=timeout, env=env)
    job = Job(jobs / name, time.monotonic() - started, r.stdout + r.stderr)
    assert (job.folder / "result.json").exists(), f"harbor run left no job result ({r.returncode}): {job.output[-3000:]}"
    return job


def harbor_regrade(stack_: Stack, source: Job, tasks: Path, jobs: Path, name: str, timeout: float = 1500) -> Job:
    started = time.monotonic()
    r = harbor(stack_, "job", "regrade", str(source.folder), "-p", str(tasks), "-o", str(jobs), "--job-name", name,
               "-n", "2", "-y", timeout=timeout)
    job = Job(jobs / name, time.monotonic() - started, r.stdout + r.stderr)
    assert (job.folder / "result.json").exists(), f"harbor job regrade left no result ({r.returncode}): {job.output[-3000:]}"
    return job


def write_task(case: str, out: Path, base_image: str, *options: str) -> Path:
    r = usdgrade("task", str(CASES / case), "--out", str(out), "--base-image", base_image, *options)
    assert r.returncode == 0, r.stderr
    return out


def concurrently(**calls):
    """Run each call in a thread of its own (each mostly waits on a `harbor` process) and return
    name -> result; the first exception is raised once all have ended."""
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = {name: pool.submit(call) for name, call in calls.items()}
        return {name: future.result() for name, future in futures.items()}
