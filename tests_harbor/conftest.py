"""The Harbor end-to-end tests' shared runs: each `harbor run` here is made once per session and
read by every test that needs it (image builds are content-addressed by Harbor and shared by
every later trial of the same task)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harbor_client import Stack, harbor_run, stack, write_task  # noqa: E402

# One task per kind the issue names: textures (the cabinet), closed book (the ant, the default of
# `usdgrade task`), a mass and collision fault (the gripper, written open book).
TASKS = {
    "cabinet_drawer_door": (),
    "ant_two_joint_faults": (),
    "gripper_hull_and_mass": ("--open-book",),
}


@pytest.fixture(scope="session")
def harbor_stack() -> Stack:
    return stack()


@pytest.fixture(scope="session")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("harbor")


@pytest.fixture(scope="session")
def dataset(harbor_stack, work) -> Path:
    folder = work / "dataset"
    for case, options in TASKS.items():
        write_task(case, folder / case, harbor_stack.base_image, *options)
    return folder


@pytest.fixture(scope="session")
def jobs(work) -> Path:
    return work / "jobs"


@pytest.fixture(scope="session")
def oracle_job(harbor_stack, dataset, jobs):
    return harbor_run(harbor_stack, dataset, "oracle", jobs, "oracle")


@pytest.fixture(scope="session")
def nop_job(harbor_stack, dataset, jobs, oracle_job):
    # After the oracle's job: every image it built is reused.
    return harbor_run(harbor_stack, dataset, "nop", jobs, "nop")


@pytest.fixture(scope="session")
def docker_gateway() -> str:
    """The host's address on Docker's default bridge: a server there is on this machine, and a
    container reaches it only through its network."""
    r = subprocess.run(["docker", "network", "inspect", "bridge", "--format", "{{(index .IPAM.Config 0).Gateway}}"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.strip(), r.stderr
    return r.stdout.strip()


def copy_task(dataset: Path, name: str, dest: Path) -> Path:
    shutil.copytree(dataset / name, dest)
    return dest
