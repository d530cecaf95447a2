"""`--engine ray`: warm graders as Ray core tasks (the optional `ray` extra).

Each item is one task (`num_cpus=1`, `memory` as asked) running regrade/warm.py in a Ray
worker process; Ray keeps its workers, so a worker's imports and reference snapshots serve
every item it is given. Without --ray-address a local cluster of -j CPUs is started for the
run and stopped when it ends. The driver keeps a bounded number of tasks in flight (the cluster's
CPUs), collects them with `ray.wait` as they finish and alone writes the results.

- Inputs are read by the workers, wherever they run: the cases and submissions must be on a
  filesystem every node mounts at the same path. Before the first task, one probe per node
  checks that every input folder is there and that the node's verifier is this one (same
  scoring and verifier versions); any mismatch stops the run before anything is graded.
- Retries are Ray's, for a lost worker only (`max_retries=1`, exceptions never retried):
  a worker that dies twice on an item leaves an infrastructure error.
- The per-item time limit counts from submission (tasks start at once: no more are in flight
  than the cluster has CPUs); past it the task is cancelled with its worker process
  (`ray.cancel(force=True)`) and the item recorded as the plugin records its own time limit.
"""
from __future__ import annotations

import os
import time
from typing import Iterable, Iterator

from usd_repair_verifier import IMPORT_ROOT

from usd_repair_verifier.regrade.warm import Item, ItemResult, infrastructure_result, time_limit_reason, versions

_GRADER = None  # this Ray worker process's warm grader, made on its first item


def _grade_task(item: dict) -> dict:
    global _GRADER
    if _GRADER is None:
        from usd_repair_verifier.regrade.warm import WarmGrader

        _GRADER = WarmGrader()
    return _GRADER.grade(Item(**item)).to_dict()


def _probe_task(paths: list[str]) -> dict:
    return {"host": os.uname().nodename, "versions": versions(),
            "missing": [p for p in paths if not os.path.isdir(p)][:20]}


def stop_started_cluster(ray) -> None:
    """`ray.shutdown()` of a local cluster this process started, a second sooner.

    Ray stops the cluster's processes one after another, each sent SIGTERM and given a second
    before SIGKILL. Its autoscaler monitor answers SIGTERM by reporting to the GCS, which Ray has
    stopped just before, so the monitor always takes the whole second. A cluster started for one
    run keeps nothing in its monitor: it is killed outright first, then Ray stops the rest."""
    try:
        from ray._private import ray_constants, worker

        node = worker._global_node
        for info in node.all_processes.get(ray_constants.PROCESS_TYPE_MONITOR, []) if node else []:
            info.process.kill()
            info.process.wait(timeout=10)
    except Exception:  # noqa: BLE001  Ray's private layout moved: the shutdown below still stops it all
        pass
    ray.shutdown()


class InputsNotShared(RuntimeError):
    """A node cannot read the inputs, or runs another verifier: nothing was graded."""


class RayEngine:
    def __init__(self, jobs: int, time_limit: float, address: str | None = None, memory_mb: int = 2048):
        self.jobs, self.time_limit, self.address, self.memory_mb = jobs, time_limit, address, memory_mb
        self.started_cluster = False   # a local cluster started by this engine: stopped when its run ends
        self.cluster_cpus = None

    def _start(self):
        import ray

        if not ray.is_initialized():
            if self.address:
                ray.init(address=self.address, log_to_driver=False, logging_level="ERROR")
            else:  # a local cluster started on the spot: its workers inherit this environment
                path = os.pathsep.join(p for p in (str(IMPORT_ROOT), os.environ.get("PYTHONPATH", "")) if p)
                os.environ["PYTHONPATH"] = path  # so they import this checkout's verifier
                ray.init(num_cpus=self.jobs, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
                self.started_cluster = True
        self.cluster_cpus = ray.cluster_resources().get("CPU")
        return ray

    def check_inputs(self, ray, items: list[Item]) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        paths = sorted({i.case for i in items} | {i.submission for i in items})
        probe = ray.remote(num_cpus=0)(_probe_task)
        nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
        reports = ray.get([probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)).remote(paths)
                           for n in nodes])
        for found in reports:
            if found["versions"] != versions():
                raise InputsNotShared(f"node {found['host']} runs verifier {found['versions']}, the driver {versions()}")
            if found["missing"]:
                raise InputsNotShared(f"node {found['host']} cannot read {len(found['missing'])} input folder(s), "
                                      f"e.g. {found['missing'][0]}: put them on a filesystem every node shares")

    def run(self, items: Iterable[Item]) -> Iterator[ItemResult]:
        pending = list(items)
        if not pending:
            return
        ray = self._start()
        try:
            yield from self._run(ray, pending)
        finally:
            if self.started_cluster:  # now, not at exit, where Ray first sleeps half a second
                stop_started_cluster(ray)
                self.started_cluster = False

    def _run(self, ray, pending: list[Item]) -> Iterator[ItemResult]:
        from ray import exceptions

        self.check_inputs(ray, pending)
        task = ray.remote(num_cpus=1, memory=self.memory_mb << 20, max_retries=1, retry_exceptions=False)(_grade_task)
        limit = max(1, int(self.cluster_cpus or self.jobs))
        pending.reverse()
        flying: dict = {}  # ref -> (item, submitted at)

        def dispatch() -> None:
            while pending and len(flying) < limit:
                item = pending.pop()
                flying[task.remote(vars(item))] = (item, time.monotonic())

        dispatch()
        while flying:
            now = time.monotonic()
            wait_s = max(0.0, min(start + self.time_limit - now for _, start in flying.values())) + 0.01
            done, rest = ray.wait(list(flying), num_returns=1, timeout=wait_s)
            if done and rest:  # and whatever else has finished meanwhile
                done += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            finished = [(ref, *flying.pop(ref)) for ref in done]
            now = time.monotonic()
            expired = [(ref, *flying.pop(ref)) for ref, (_, start) in list(flying.items()) if now - start > self.time_limit]
            for ref, _, _ in expired:
                ray.cancel(ref, force=True)
            # Refill the freed CPUs before handing results to the caller, whose writing would
            # otherwise leave a worker idle for each result.
            dispatch()
            for ref, item, start in finished:
                yield self._result(ray, exceptions, ref, item, start)
            for _, item, start in expired:
                yield infrastructure_result(item, time_limit_reason(self.time_limit), now - start)

    @staticmethod
    def _result(ray, exceptions, ref, item: Item, start: float) -> ItemResult:
        try:
            return ItemResult(**ray.get(ref))
        except (exceptions.WorkerCrashedError, exceptions.OutOfMemoryError, exceptions.NodeDiedError) as error:
            return infrastructure_result(item, f"the grading worker died twice on this item: {type(error).__name__}",
                                         time.monotonic() - start)
        except exceptions.RayTaskError as error:  # a fault of the grader itself
            return infrastructure_result(item, f"the grading worker failed: {error.cause!r}", time.monotonic() - start)
