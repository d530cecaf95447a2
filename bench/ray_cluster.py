"""A Ray cluster of several nodes on this one machine, as a team's cluster of several machines
would be: for the Ray engine's tests and the re-grading bench.

Each node is its own `ray start --block` process with its own working folder (its workers' working
directory), its own environment (a node can run another verifier: another PYTHONPATH) and its own
PID namespace, so that killing the node kills every process it holds at once, as a machine that
dies would (its raylet, its agents and its workers, which Ray puts in process groups of their
own). A node can also get a mount namespace of its own in which some folders are hidden behind
an empty one: a machine that does not mount the shared inputs.

The head node runs the cluster's control processes (and `cpus` of work: none by default, as on
many teams' clusters). Nodes start side by side, each once the one before holds its socket names
(two raylets choosing at once on one machine choose the same ones). The cluster uses token
authentication with a token of its own (RAY_AUTH_TOKEN, never the user's ~/.ray/auth_token) and
a temporary folder of its own, so that a `ray.init()` elsewhere on the machine never finds it. A
driver joins with `driver_env()` (or `auth_env()` set before Ray is imported).

Namespaces need root and util-linux's `unshare`; `available()` says why not when they are missing.
`namespaces=False` starts plain `ray start` processes instead (the bench's standing clusters).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))
START_TIMEOUT_S = 300.0   # a node's start on a machine that other work keeps busy
# How soon the cluster notices a dead node: Ray's defaults check every 3 s and give up after 5
# failures in a row (about 15 s); here every second and after 3. A dead node's port refuses at once,
# so it is noticed in about 3 s; a node that is alive but starved of CPU (a busy shared machine)
# still has Ray's 10 s to answer each check, so it is not declared dead for being slow.
FAST_HEALTH_CHECKS = {"health_check_initial_delay_ms": 1000, "health_check_period_ms": 1000,
                      "health_check_timeout_ms": 10000, "health_check_failure_threshold": 3}


def available(namespaces: bool = True) -> str | None:
    """None when nodes can be started here, else why not."""
    if not Path(RAY).is_file():
        return f"Ray's `ray` command is not beside {sys.executable} (the ray extra is not installed)"
    if not namespaces:
        return None
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return "a node of the local cluster needs root and unshare (a PID and mount namespace of its own)"
    probe = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True)
    if probe.returncode != 0:
        return f"unshare cannot make PID and mount namespaces here: {probe.stderr.decode().strip()}"
    return None


@dataclass
class Node:
    name: str
    folder: Path
    process: subprocess.Popen        # `unshare ... ray start --block`: the node's every process is below it
    log: Path
    hidden: tuple[Path, ...] = ()
    argv: tuple[str, ...] = ()       # how it was started: a node that fails to start is started again once
    env: dict | None = None
    restarted: bool = False

    @property
    def resource(self) -> str:
        """A custom resource that names this node in `ray.nodes()` (one unit, never requested)."""
        return f"usdgrade_node_{self.name}"

    def alive(self) -> bool:
        return self.process.poll() is None


def _plasma_sockets(sockets: Path) -> int:
    """How many object-store sockets the session holds; none while `session_latest` is being
    re-pointed by a starting node (its folder is briefly missing: seen as FileNotFoundError)."""
    try:
        return sum(1 for name in os.listdir(sockets) if name.startswith("plasma_store"))
    except FileNotFoundError:
        return 0


@dataclass
class LocalCluster:
    root: Path
    health_checks: dict = field(default_factory=lambda: dict(FAST_HEALTH_CHECKS))
    token: str = field(default_factory=lambda: secrets.token_hex(32))
    address: str | None = None
    nodes: dict[str, Node] = field(default_factory=dict)
    # False: plain `ray start` processes (no root needed), for a bench; a node can then neither
    # hide folders nor die all at once (its workers outlive their raylet for a moment).
    namespaces: bool = True

    def __post_init__(self):
        self.root = Path(self.root)
        # The head's sessions, which every node of the cluster shares: a short path of its own, as
        # Ray's Unix sockets live there and their paths may not pass 107 bytes.
        self.temp_dir = Path(tempfile.mkdtemp(prefix="usdgrade-ray-", dir="/tmp" if os.path.isdir("/tmp") else None))

    def auth_env(self) -> dict:
        """What a process needs in its environment to join this cluster."""
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}

    def _env(self, extra: dict | None = None) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        env.update(self.auth_env(), RAY_USAGE_STATS_ENABLED="0")
        env.update(extra or {})
        return env

    def driver_env(self, extra: dict | None = None) -> dict:
        """The environment of a process that joins this cluster (`ray.init(address=...)`)."""
        return self._env(extra)

    def _spawn(self, name: str, argv: list[str], env: dict | None, hide: tuple[Path, ...]) -> Node:
        folder = self.root / f"node-{name}"
        folder.mkdir(parents=True, exist_ok=True)
        log = self.root / f"node-{name}.log"
        command = argv
        if self.namespaces:
            # `--kill-child`: the node's first process dies with unshare (SIGKILL), and with it its
            # PID namespace, every process of the node. Folders to hide get an empty tmpfs over them.
            mounts = "".join(f"mount -t tmpfs -o size=1m,mode=0755 usdgrade-hidden {_quote(p)} && " for p in hide)
            command = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "--propagation", "private",
                       "sh", "-c", f"{mounts}exec \"$@\"", "node", *argv]
        elif hide:
            raise ValueError("hiding folders from a node needs namespaces")
        with open(log, "wb") as out:
            process = subprocess.Popen(command, cwd=folder, env=self._env(env), stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent)
        node = Node(name, folder, process, log, tuple(hide), tuple(argv), env)
        self.nodes[name] = node
        return node

    def start_head(self, cpus: int = 0, env: dict | None = None) -> "LocalCluster":
        """The head node: the cluster's control processes, and `cpus` for work (a team's head often has none)."""
        node = self._spawn("head", [RAY, "start", "--head", "--block", "--port", "0", "--num-cpus", str(cpus),
                                    "--resources", json.dumps({"usdgrade_node_head": 1}),
                                    "--temp-dir", str(self.temp_dir), "--include-dashboard", "false",
                                    "--disable-usage-stats", "--system-config", json.dumps(self.health_checks)],
                           env, ())
        address_file = self.temp_dir / "ray_current_cluster"
        self._wait(node, lambda _: address_file.is_file() and address_file.read_text().strip())
        self.address = address_file.read_text().strip()
        return self

    def join(self, name: str, cpus: int = 1, env: dict | None = None, hide: tuple[Path, ...] = ()) -> Node:
        """A node starts joining the cluster; returns once its raylet holds its socket names (two
        raylets choosing at once would choose the same ones), before the cluster has it: `wait`."""
        resources = json.dumps({f"usdgrade_node_{name}": 1})
        return self._join([RAY, "start", "--address", self.address, "--block", "--num-cpus", str(cpus),
                           "--resources", resources, "--disable-usage-stats"], name, env, tuple(hide))

    def _join(self, argv: list[str], name: str, env: dict | None, hide: tuple[Path, ...],
              restarted: bool = False) -> Node:
        sockets = self.temp_dir / "session_latest" / "sockets"
        taken = _plasma_sockets(sockets)
        node = self._spawn(name, argv, env, hide)
        node.restarted = restarted
        self._wait(node, lambda n: _plasma_sockets(sockets) > taken or self._ready(n), may_restart=True)
        return self.nodes[name]

    @staticmethod
    def _ready(node: Node) -> bool:
        return b"This command will now block forever" in node.log.read_bytes()

    def wait(self, *names: str) -> None:
        """Until the cluster has each of these nodes."""
        for name in names:
            self._wait(self.nodes[name], self._ready, may_restart=True)

    def add_node(self, name: str, cpus: int = 1, env: dict | None = None, hide: tuple[Path, ...] = ()) -> Node:
        """A node that joins the cluster; returns once the cluster has it."""
        node = self.join(name, cpus, env, hide)
        self.wait(name)
        return node

    def _wait(self, node: Node, ready, may_restart: bool = False) -> None:
        """Until `ready(node)`. A joining node whose `ray start` gives up (Ray allows its raylet 30 s to
        register with the head, which a 2-core machine busy with other nodes' start-up can exceed:
        `The current node timed out during startup`) is started once more, as an operator would;
        a second failure, or the head's, stops the cluster and raises."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready(node):
            if not node.alive() or time.monotonic() > deadline:
                tail = node.log.read_text(errors="replace")[-3000:]
                if may_restart and not node.restarted and not node.alive() and node.name != "head":
                    print(f"Ray node {node.name} did not start; starting it once more:\n{tail[-600:]}",
                          file=sys.stderr)
                    node.log.rename(node.log.with_suffix(".failed.log"))
                    self.nodes.pop(node.name)
                    self._join(list(node.argv), node.name, node.env, node.hidden, restarted=True)
                    node = self.nodes[node.name]
                    continue
                self.stop()
                raise RuntimeError(f"Ray node {node.name} did not start:\n{tail}")
            time.sleep(0.05)

    def kill(self, name: str) -> None:
        """The node dies at once, as a machine does: SIGKILL to its PID namespace's every process."""
        node = self.nodes[name]
        node.process.kill()
        node.process.wait(timeout=30)

    def remove(self, *names: str, timeout: float = 60.0) -> None:
        """These nodes leave the cluster in order, together (Ray's own stop on each: the cluster
        marks each dead at once)."""
        leaving = [self.nodes.pop(name) for name in names]
        for node in leaving:
            # `ray start`: the PID namespace's first process, under unshare
            first = _child(node.process.pid) if self.namespaces else node.process.pid
            if first is not None:
                try:
                    os.kill(first, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + timeout
        for node in leaving:
            try:
                node.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait(timeout=30)

    def stop(self) -> None:
        """Every node, the head last; nothing of the cluster is left running."""
        self.remove(*[n for n in self.nodes if n != "head"], timeout=30.0)
        if "head" in self.nodes:
            self.remove("head", timeout=30.0)
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _die_with_parent() -> None:
    """In the node's first process: SIGKILL when the process that started it dies, so that an
    interrupted test or bench leaves no node behind (PR_SET_PDEATHSIG)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def _child(pid: int) -> int | None:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else None


def _quote(path: Path) -> str:
    import shlex

    return shlex.quote(str(path))
