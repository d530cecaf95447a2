"""`--engine ray`: warm graders as Ray core tasks, on a cluster of one machine or many (the `ray` extra).

Each item is one task (`num_cpus=1`, `memory` as asked) running regrade/warm.py in a Ray worker
process; Ray keeps its workers, so a worker's imports and reference snapshots serve every item it
is given. With --ray-address the run joins that cluster (or stops at once, with one line, when
nothing answers there or the cluster refuses its token); without, a one-node cluster of -j CPUs is
started for the run (`address="local"`: never a cluster that another process left on the machine)
and stopped when it ends. The driver keeps no more tasks in flight than the cluster's nodes can run
at once, collects them with `ray.wait` as they finish and alone writes the results.

- Nodes. Workers read the inputs where they run: the cases and submissions must be on a filesystem
  every node mounts at the same path. Before the first task, one probe on each node that can take
  an item checks that it reads every input folder and runs this verifier: the same scoring and
  verifier versions, the same grading code (a digest of its files) and the same versions of the
  libraries that measure. A node that does not, or does not answer, stops the run before anything
  is graded, with one line naming it. A node that joins later is checked on each of its results:
  a grade made by another verifier is never kept (the run stops, naming the node).
- Failures. A task whose worker or node dies is retried once by Ray (`max_retries=1`; exceptions
  are never retried), elsewhere when its node is gone (the cluster notices a dead node through its
  health checks: about 15 s with Ray's defaults). A second loss, and any other loss Ray reports, is
  an infrastructure error: never a score, never dropped. A finished grade comes back inside the
  task's reply (compressed, far below Ray's 100 KiB bound for inline results), so it is in the
  driver's memory when its task ends: a node that dies after that neither loses it nor makes Ray
  grade it again. Each result names the node that graded it and the attempt.
- Time limit. It counts from submission (no more tasks in flight than can start at once); past it
  the task is cancelled with its worker process (`ray.cancel(force=True)`) and the item recorded as
  the plugin records its own time limit.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
import time
import zlib
from importlib import metadata
from typing import Iterable, Iterator

from usd_repair_verifier import IMPORT_ROOT

from usd_repair_verifier.regrade.warm import Item, ItemResult, infrastructure_result, time_limit_reason, versions

PROBE_TIMEOUT_S = 120.0        # a node that has not answered its probe by then is refused
JOIN_TIMEOUT_S = 10.0          # for --ray-address to accept a connection at all
CAPACITY_REFRESH_S = 2.0       # how often the driver re-reads which nodes are alive
# The libraries whose version can move a measurement: a node must run the driver's.
MEASURING_DISTRIBUTIONS = ("usd-core", "numpy", "scipy", "trimesh", "pytest", "pytest-json-report")
# The grading code's files, in the grade's packages (authoring/task.py's VERIFIER_PACKAGES) and
# regrade/: its modules and the data files they read (the sealed grade's ini, the web tool list).
GRADING_CODE_SUFFIXES = (".py", ".ini", ".json")

_GRADER = None        # this Ray worker process's warm grader, made on its first item
_FINGERPRINT = None   # this process's verifier, as the probe reports it


class NodeRefused(RuntimeError):
    """A node cannot read the inputs, runs another verifier or does not answer: nothing was graded."""


class ClusterUnavailable(RuntimeError):
    """The cluster at --ray-address cannot be joined: nothing was graded."""


def join_cluster(ray, address: str) -> None:
    """`ray.init(address)`, or one line that says why not. Ray itself retries an address where
    nothing listens for many minutes: the address is tried first (a TCP connection)."""
    host, _, port = address.split("://")[-1].rpartition(":")
    if port.isdigit():
        try:
            socket.create_connection((host or "127.0.0.1", int(port)), timeout=JOIN_TIMEOUT_S).close()
        except OSError as error:
            raise ClusterUnavailable(f"no Ray cluster answers at {address} ({error.strerror or error}): "
                                     "start one (`ray start --head`) or correct --ray-address") from None
    try:
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    except Exception as error:  # noqa: BLE001  Ray raises several kinds here; each ends as one line
        causes, cause = [], error
        while cause is not None:
            causes.append(cause)
            cause = cause.__cause__ or cause.__context__
        if any(type(c).__name__ == "AuthenticationError" or "InvalidAuthToken" in str(c) for c in causes):
            raise ClusterUnavailable(
                f"the Ray cluster at {address} refused this run's authentication: a cluster that uses tokens "
                "is joined with RAY_AUTH_MODE=token and its token (~/.ray/auth_token or RAY_AUTH_TOKEN)") from None
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ClusterUnavailable(f"cannot join the Ray cluster at {address}: {first}") from None


def _code_digest() -> str:
    """sha256 over the grading code's files (path and bytes): the grade's packages and the warm grader's."""
    from importlib.util import find_spec

    from usd_repair_verifier.authoring.task import VERIFIER_PACKAGES

    digest = hashlib.sha256()
    for package in sorted({*VERIFIER_PACKAGES, "regrade"}):
        root = next(iter(find_spec(f"usd_repair_verifier.{package}").submodule_search_locations))
        files = []
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            files += [os.path.join(folder, n) for n in names if n.endswith(GRADING_CODE_SUFFIXES)]
        for path in sorted(files, key=lambda p: os.path.relpath(p, root)):
            relative = f"{package}/{os.path.relpath(path, root)}".replace(os.sep, "/")
            with open(path, "rb") as handle:
                digest.update(relative.encode() + b"\0" + hashlib.sha256(handle.read()).digest())
    return digest.hexdigest()


def fingerprint() -> dict:
    """What must be equal on every node that grades: versions, grading code, measuring libraries."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        python = ".".join(platform.python_version_tuple()[:2])
        found = {**versions(), "grading code": _code_digest()[:16], "python": python}
        for name in MEASURING_DISTRIBUTIONS:
            try:
                found[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                found[name] = "missing"
        _FINGERPRINT = found
    return _FINGERPRINT


def _node_id() -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


def _attempt() -> int:
    """1 for a task's first run, 2 for Ray's retry (Ray keeps the count; the API is private)."""
    try:
        from ray._private.worker import global_worker

        return int(global_worker.core_worker.get_current_task_attempt_number()) + 1
    except Exception:  # noqa: BLE001  another Ray: the attempt is unknown, never a reason to fail a grade
        return 1


def _grade_task(item: dict) -> bytes:
    global _GRADER
    if _GRADER is None:
        from usd_repair_verifier.regrade.warm import WarmGrader

        _GRADER = WarmGrader()
    result = _GRADER.grade(Item(**item))
    result.node, result.attempts = _node_id(), _attempt()
    return zlib.compress(json.dumps({"result": result.to_dict(), "fingerprint": fingerprint()}).encode())


def _probe_task(paths: list[str]) -> dict:
    missing = [p for p in paths if not os.path.isdir(p)]
    return {"node": _node_id(), "host": os.uname().nodename, "fingerprint": fingerprint(),
            "missing": len(missing), "missing_first": missing[:1]}


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


def differences(found: dict, expected: dict) -> str:
    """`usd-core 26.8 (this driver: 26.11), ...`: what a node runs that the driver does not."""
    return ", ".join(f"{key} {found.get(key)} (this driver: {value})" for key, value in expected.items()
                     if found.get(key) != value)


def node_label(node: dict) -> str:
    """How a line names a node: its Ray node id and address, as `ray list nodes` shows them."""
    return f"node {node['NodeID']} at {node.get('NodeManagerAddress', '?')}"


class RayEngine:
    def __init__(self, jobs: int, time_limit: float, address: str | None = None, memory_mb: int = 2048):
        self.jobs, self.time_limit, self.address, self.memory_mb = jobs, time_limit, address, memory_mb
        self.started_cluster = False   # a local cluster started by this engine: stopped when its run ends
        self.cluster_cpus = None
        self.task_function = _grade_task   # what each task runs (tests substitute a faulty one)

    def _start(self):
        import ray

        if not ray.is_initialized():
            if self.address:
                join_cluster(ray, self.address)
            else:  # a local cluster started on the spot: its workers inherit this environment
                path = os.pathsep.join(p for p in (str(IMPORT_ROOT), os.environ.get("PYTHONPATH", "")) if p)
                os.environ["PYTHONPATH"] = path  # so they import this checkout's verifier
                ray.init(address="local", num_cpus=self.jobs, include_dashboard=False, log_to_driver=False,
                         logging_level="ERROR")
                self.started_cluster = True
        self.cluster_cpus = ray.cluster_resources().get("CPU")
        return ray

    def _capacity(self, node: dict) -> int:
        """How many items this node can run at once (a CPU and --memory-mb each)."""
        resources = node.get("Resources", {})
        return int(min(resources.get("CPU", 0), resources.get("memory", 0) // (self.memory_mb << 20)))

    def graders(self, ray) -> list[dict]:
        """The alive nodes that can take an item."""
        return [n for n in ray.nodes() if n.get("Alive") and self._capacity(n) >= 1]

    def check_nodes(self, ray, items: list[Item]) -> list[dict]:
        """Probe every node that can take an item; refuse the run, naming each node that cannot grade it."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = self.graders(ray)
        if not nodes:
            raise NodeRefused(f"no node of the cluster can take an item (each needs 1 CPU and {self.memory_mb} MB "
                              "of Ray memory: see --memory-mb); nothing was graded")
        paths = sorted({i.case for i in items} | {i.submission for i in items})
        probe = ray.remote(num_cpus=0, max_retries=0)(_probe_task)
        refs = {probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(paths):
                n for n in nodes}
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=PROBE_TIMEOUT_S)
        expected, problems = fingerprint(), []
        for ref, node in refs.items():
            problem = f"did not answer the probe within {PROBE_TIMEOUT_S:g} s"
            if ref in ready:
                try:
                    problem = self._probe_problem(ray.get(ref), expected, len(paths))
                except ray.exceptions.RayError as error:
                    problem = f"its probe failed: {type(error).__name__}"
            if problem:
                problems.append(f"{node_label(node)}: {problem}")
        if problems:
            raise NodeRefused("\n".join([f"{len(problems)} of {len(nodes)} Ray nodes cannot grade this run; "
                                         "nothing was graded:", *problems]))
        return nodes

    @staticmethod
    def _probe_problem(found: dict, expected: dict, paths: int) -> str | None:
        if found["fingerprint"] != expected:
            return f"runs another verifier: {differences(found['fingerprint'], expected)}"
        if found["missing"]:
            return (f"cannot read {found['missing']} of {paths} input folders (e.g. {found['missing_first'][0]}): "
                    "put the cases and submissions on a filesystem every node mounts at the same path")
        return None

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
        nodes = self.check_nodes(ray, pending)
        task = ray.remote(num_cpus=1, memory=self.memory_mb << 20, max_retries=1,
                          retry_exceptions=False)(self.task_function)
        limit, read_at = max(1, sum(map(self._capacity, nodes))), time.monotonic()
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
            done, rest = ray.wait(list(flying), num_returns=1, timeout=min(wait_s, CAPACITY_REFRESH_S))
            if done and rest:  # and whatever else has finished meanwhile
                done += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            # Every finished grade is fetched at once, before anything else happens.
            finished = [self._result(ray, ref, *flying.pop(ref)) for ref in done]
            now = time.monotonic()
            expired = [(ref, *flying.pop(ref)) for ref, (_, start) in list(flying.items()) if now - start > self.time_limit]
            for ref, _, _ in expired:
                ray.cancel(ref, force=True)
            if now - read_at > CAPACITY_REFRESH_S:  # nodes die and join: as many in flight as can run
                limit, read_at = max(1, sum(map(self._capacity, self.graders(ray)))), now
            # Refill the freed CPUs before handing results to the caller, whose writing would
            # otherwise leave a worker idle for each result.
            dispatch()
            yield from finished
            for _, item, start in expired:
                yield infrastructure_result(item, time_limit_reason(self.time_limit), now - start)

    @staticmethod
    def _result(ray, ref, item: Item, start: float) -> ItemResult:
        from ray import exceptions

        try:
            packed = json.loads(zlib.decompress(ray.get(ref)))
        except exceptions.RayTaskError as error:  # a fault of the grader itself
            return infrastructure_result(item, f"the grading worker failed: {error.cause!r}", time.monotonic() - start)
        except exceptions.RayError as error:  # the worker or its node lost, after Ray's one retry
            result = infrastructure_result(item, f"the grading worker was lost on this item, and again on its "
                                                 f"retry: {_loss(error)}", time.monotonic() - start)
            result.attempts = 2
            return result
        result = ItemResult(**packed["result"])
        expected = fingerprint()
        if packed["fingerprint"] != expected:
            raise NodeRefused(f"node {result.node} joined the cluster after the probe and runs another verifier: "
                              f"{differences(packed['fingerprint'], expected)}; its grade of {item.key} was not "
                              "kept and the run stopped")
        return result


def _loss(error: Exception) -> str:
    from ray import exceptions

    kinds = ((exceptions.NodeDiedError, "its node died"), (exceptions.WorkerCrashedError, "its worker process died"),
             (exceptions.OutOfMemoryError, "Ray's memory monitor killed its worker"))
    why = next((text for kind, text in kinds if isinstance(error, kind)), "Ray lost it")
    return f"{why} ({type(error).__name__})"
