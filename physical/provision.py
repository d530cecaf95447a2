"""Install the engine's pinned packages into an interpreter when they are missing.

For users only: `usdgrade physical --setup` calls it. The verifier's own tests never install
anything (`pip install -e '.[test]'` pulls the same pins through the `physical` extra); a file
lock keeps two setups from installing at the same time.
"""
from __future__ import annotations

import fcntl
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

from .settings import ENGINE_MODULES, ENGINE_REQUIREMENTS

LOCK = Path(__file__).resolve().parent.parent / ".physical-install.lock"


def missing_modules() -> list[str]:
    importlib.invalidate_caches()
    return [m for m in ENGINE_MODULES if importlib.util.find_spec(m) is None]


def ensure_engine(python: str = sys.executable) -> list[str]:
    """Install the pins into `python` if this interpreter lacks a module; returns what was missing.

    Raises RuntimeError with pip's output when the install fails (offline, no wheel...)."""
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = missing_modules()
        if missing:
            done = subprocess.run([python, "-m", "pip", "install", "--quiet", *ENGINE_REQUIREMENTS],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"cannot install the engine ({', '.join(ENGINE_REQUIREMENTS)}): "
                                   f"{(done.stdout + done.stderr)[-2000:]}")
            still = missing_modules()
            if still:
                raise RuntimeError(f"installed the engine but still missing: {', '.join(still)}")
        return missing
