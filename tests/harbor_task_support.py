"""Shared by the Harbor task tests: the example task, test.sh copies with local paths, policy skips."""
from __future__ import annotations

import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "examples" / "harbor-task"
CASE = TASK / "tests" / "case"
# The example task is closed book: its grade reads the agent's trajectory. A clean one stands in for it.
CLEAN_TRAJECTORY = ROOT / "fixtures" / "trajectories" / "claude_code_clean" / "trajectory.json"


def unavailable(reason: str) -> None:
    """A tool the test needs is missing: a failure in CI, an explicit skip on a developer's machine."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must provide it: see .ci/run)", pytrace=False)
    pytest.skip(reason)


def local_test_sh(folder: Path, submission: Path, out: Path, time_limit: float = 540,
                  trajectory: Path = CLEAN_TRAJECTORY) -> Path:
    """The example's test.sh rendered with this checkout's paths (the shipped one honours no
    override): the verifier is this checkout, the interpreter this one and its own bytecode (the
    image's bytecode tree is not on this machine, as in `usdgrade task --check`), no process sweep."""
    from usd_repair_verifier.authoring.task import render_test_sh

    script = folder / "test.sh"
    script.write_text(render_test_sh(verifier=str(ROOT), python=sys.executable, case=str(CASE),
                                     submission=str(submission), out=str(out), time_limit=time_limit,
                                     end_processes=False, trajectory=str(trajectory), pycache="",
                                     details=str(TASK / "tests" / "reward_details.py")))
    return script


def run_script(script: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=timeout,
                          env=env if env is not None else dict(os.environ))


def read_json(path: Path):
    return json.loads(path.read_text())


def tree_differences(a: Path, b: Path) -> list[str]:
    """Files that differ, or exist on one side only, between two folders (recursively)."""
    found = []

    def walk(cmp: filecmp.dircmp, prefix: str) -> None:
        found.extend(f"{prefix}{n} (only one side)" for n in cmp.left_only + cmp.right_only)
        found.extend(f"{prefix}{n}" for n in cmp.diff_files + cmp.funny_files)
        for name, sub in cmp.subdirs.items():
            walk(sub, f"{prefix}{name}/")

    walk(filecmp.dircmp(a, b, ignore=["__pycache__"]), "")
    return found
