"""A fork server for the physical grade's runtime sessions, for processes that run many of them.

A runtime session (physical/grade.py) is a fresh interpreter running `pytest runtime_tests`: about
6 s on a small asset, of which 2 s import Newton and Warp and 1.5 s load Warp's kernel modules on
the first model (measured). A process that grades many (the sweep, the test suite) starts one
server instead: it imports the engine once, loads a tiny asset of its own once so that the kernel
modules every model needs are in memory, and forks one child per session (about 1.6 s). The child
runs the same pytest session in a session of its own, with the session's environment and its
output going to a file; it is still one process per grade, killed with its group on timeout, and
nothing passes from one child to the next (each is a copy of the server as it was before any grade).

The protocol and the client are the validity gate's fork server's (gates/validity/fork.py); a
request's config file holds the session's argv (what follows `python -m pytest`) and environment.
The server runs this module (``python -m usd_repair_verifier.physical.runtime_server``) with the
environment the first session would have had; only sessions with the same kernel cache use it.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

# The validity gate's fork server (standard library only at import): its protocol and client.
from usd_repair_verifier.gates.validity.fork import ForkServer, ForkServerError, serve

SERVER_MODULE = "usd_repair_verifier.physical.runtime_server"

# Two boxes on a hinge, above the ground the engine adds: what every model's load and run use
# (the USD importer, finalize, the MuJoCo conversion, contacts, stepping).
WARM_UP_ASSET = """#usda 1.0
(
    defaultPrim = "World"
    metersPerUnit = 1
    upAxis = "Z"
)
def Xform "World" (prepend apiSchemas = ["PhysicsArticulationRootAPI"])
{
    def PhysicsScene "Scene" {}
    def Cube "Base" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "PhysicsMassAPI"])
    {
        double size = 0.2
        float physics:mass = 1
        double3 xformOp:translate = (0, 0, 0.3)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }
    def Cube "Arm" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "PhysicsMassAPI"])
    {
        double size = 0.2
        float physics:mass = 0.5
        double3 xformOp:translate = (0.3, 0, 0.3)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }
    def PhysicsRevoluteJoint "Hinge"
    {
        rel physics:body0 = </World/Base>
        rel physics:body1 = </World/Arm>
        uniform token physics:axis = "Y"
        point3f physics:localPos0 = (0.15, 0, 0)
        point3f physics:localPos1 = (-0.15, 0, 0)
        float physics:lowerLimit = -45
        float physics:upperLimit = 45
    }
}
"""

_SERVER = None       # this process's server (start_runtime_server), used by physical/grade.py
# What the server fixed when it started: Warp's kernel cache and the import path. A session whose
# environment differs in either runs fresh.
FIXED_AT_START = ("WARP_CACHE_PATH", "PYTHONPATH")


def preload() -> None:
    """Runs in the server before it forks anything: the engine imported and warmed up."""
    import numpy  # noqa: F401
    import pytest  # noqa: F401

    from usd_repair_verifier.physical import engine
    from usd_repair_verifier.physical.settings import SETTINGS
    from usd_repair_verifier.stage_snapshot import correspondence, read  # noqa: F401  the runtime conftest's

    with tempfile.TemporaryDirectory(prefix="usdgrade-physical-warm-up-") as folder:
        root = Path(folder) / "warm_up.usda"
        root.write_text(WARM_UP_ASSET, encoding="utf-8")
        try:
            engine.simulate(engine.load(root, SETTINGS), SETTINGS, 0.05)
        except Exception:  # noqa: BLE001  a child then loads what it needs itself, as a fresh session does
            pass


def session_main(config_path: str) -> int:
    """A forked child: the runtime session with its own environment. The runtime conftest leaves
    with os._exit once its results are written; the return is for a session that ends earlier."""
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    os.environ.clear()
    os.environ.update(config["env"])
    import pytest

    return int(pytest.main(config["argv"]))


class RuntimeServer(ForkServer):
    # Its start loads a model: on an empty kernel cache Warp compiles first (about 20 s idle,
    # minutes on a busy machine), as the first fresh session would.
    START_TIMEOUT_S = 900.0


def start_runtime_server(env: dict) -> None:
    """Start this process's server with a session's environment (session_env, physical/grade.py);
    idempotent. A server that fails to start is simply not used: sessions then run fresh."""
    global _SERVER
    if _SERVER is None or not _SERVER.alive():
        try:
            _SERVER = RuntimeServer(env, module=SERVER_MODULE, name="physical runtime")
        except (ForkServerError, OSError):
            _SERVER = None


def stop_runtime_server() -> None:
    global _SERVER
    if _SERVER is not None:
        _SERVER.close()
        _SERVER = None


def server_for(env: dict):
    """The running server if it can run a session of this environment, else None."""
    if _SERVER is None or not _SERVER.alive() or any(_SERVER.env.get(k) != env.get(k) for k in FIXED_AT_START):
        return None
    return _SERVER


if __name__ == "__main__":
    serve(session_main, preload=preload)
