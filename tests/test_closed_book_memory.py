"""The trajectory reader's memory is bounded (docs/closed-book.md, "Limits"): measured as the peak
resident set of a fresh process reading a pair of large files, above that process's baseline."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Not in the inner loop: large trajectories read within the memory bound; the closed-book reader runs in the inner loop (tests/test_closed_book_*.py).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "tests" / "trajectory_memory_probe.py"
INPUT = ROOT / "fixtures" / "cases" / "ant_two_joint_faults" / "input"
BOUND_MIB = 1024          # the bound docs/closed-book.md states


def _measure(tmp_path: Path, shape: str, mib: int) -> dict:
    folder = tmp_path / shape
    subprocess.run([sys.executable, str(PROBE), "write", str(folder), shape, str(mib)], check=True)
    done = subprocess.run([sys.executable, str(PROBE), "read", str(folder), str(INPUT)], check=True,
                          capture_output=True, text=True, cwd=ROOT)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("shape, mib, status", [
    ("ordinary", 100, "clean"),              # the repro: a 100 MiB root and a 100 MiB continuation (3.1 GB before)
    ("small_values", 100, "unverified"),     # 70 million values in each file: refused before parsing
    ("worst_within_limits", 0, "clean"),     # at every limit at once: ~60 MiB a file, 256 MiB decoded
])
def test_reading_a_large_run_stays_within_the_bound(tmp_path, shape, mib, status):
    measured = _measure(tmp_path, shape, mib)
    assert measured["status"] == status, measured["reason"]
    assert measured["above_baseline_mib"] < BOUND_MIB, measured
