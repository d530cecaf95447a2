"""The Harbor end-to-end tests' shared runs, each made once per session and read by every test
that needs it, in three waves so that the client's waiting (container starts, artifact copies,
timeouts, an agent's pauses) overlaps:

1. the oracle on the three tasks: it builds every image the later runs reuse (Harbor names an
   image by the content of its build context, so a later trial of the same task builds nothing);
2. at once: nop on the three tasks, the five client faults (variants of the ant task, whose
   agent image is the ant's), terminus-2 repairing offline and terminus-2 fetching;
3. at once: `harbor job regrade` of the oracle, nop and both terminus jobs.
"""
from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests_harbor.faults import VARIANTS, kill_verifier_when_grading, make_variant
from tests_harbor.harbor_client import TASKS, Stack, concurrently, harbor_regrade, harbor_run, stack, write_task
from tests_harbor.terminus import terminus_runs

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
def docker_gateway() -> str:
    """The host's address on Docker's default bridge: a server there is on this machine, and a
    container reaches it only through its network."""
    r = subprocess.run(["docker", "network", "inspect", "bridge", "--format", "{{(index .IPAM.Config 0).Gateway}}"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.strip(), r.stderr
    return r.stdout.strip()


@pytest.fixture(scope="session")
def second_wave(request, harbor_stack, dataset, jobs, work, oracle_job, docker_gateway) -> dict:
    faults = work / "faults"
    for name in VARIANTS:
        make_variant(dataset / "ant_two_joint_faults", faults / name, name)
    stop, killed = threading.Event(), []
    watcher = threading.Thread(target=kill_verifier_when_grading, args=(jobs / "faults", stop, killed), daemon=True)
    watcher.start()
    try:
        runs = concurrently(
            nop=lambda: harbor_run(harbor_stack, dataset, "nop", jobs, "nop"),
            faults=lambda: harbor_run(harbor_stack, faults, "oracle", jobs, "faults", concurrent=len(VARIANTS)),
            terminus=lambda: terminus_runs(harbor_stack, dataset / "ant_two_joint_faults", jobs, docker_gateway))
    finally:
        stop.set()
        watcher.join(timeout=10)
    runs["killed"] = killed
    # The sparse variant's artifact is 2 GB on disk here (Harbor's copy keeps no holes): gone once read.
    request.addfinalizer(lambda: [p.unlink() for p in (jobs / "faults").glob("sparse__*/artifacts/app/huge.bin")])
    return runs


@pytest.fixture(scope="session")
def nop_job(second_wave):
    return second_wave["nop"]


@pytest.fixture(scope="session")
def fault_job(second_wave):
    return second_wave["faults"], second_wave["killed"]


@pytest.fixture(scope="session")
def terminus_jobs(second_wave):
    return second_wave["terminus"]


@pytest.fixture(scope="session")
def graded_jobs(oracle_job, nop_job, terminus_jobs) -> list:
    """Every job whose trials ran to a grade: the oracle, nop and both terminus-2 runs."""
    return [oracle_job, nop_job, terminus_jobs["repair"][0], terminus_jobs["fetch"][0]]


@pytest.fixture(scope="session")
def regraded(harbor_stack, dataset, jobs, graded_jobs) -> dict:
    """`harbor job regrade` of every graded job, at once: source job -> regrade job."""
    def regrade(source):
        tasks = dataset if len(source.trials()) > 1 else dataset / "ant_two_joint_faults"
        return lambda: harbor_regrade(harbor_stack, source, tasks, jobs, f"regrade-{source.folder.name}")

    runs = concurrently(**{job.folder.name: regrade(job) for job in graded_jobs})
    return {job.folder.name: (job, runs[job.folder.name]) for job in graded_jobs}

