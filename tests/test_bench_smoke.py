"""bench/bench_grade.py --quick runs end to end and prints its table (no timing assertions)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_bench_grade_quick_prints_table():
    proc = subprocess.run(
        # --python: the test's own interpreter (the default, a fresh venv, would need pip and time)
        [sys.executable, "bench/bench_grade.py", "--quick", "--no-peer", "--python", sys.executable],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = proc.stdout
    assert re.search(r"^asset\s+bodies\s+tris\s+grade s\s+floor s", out, re.M), out
    small = re.search(r"^small:\S+\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+", out, re.M)
    assert small, out
    assert re.search(r"^ratio small:\S+: grade/floor = [\d.]+x", out, re.M), out
    assert "peer: skipped (--no-peer)" in out
    assert re.search(r"^serial vs -n 2 on \S+: serial [\d.]+ s .* -n 2 / serial = [\d.]+x; reward 1.0$", out, re.M), out


def test_bench_regrade_prints_throughput_and_identical_grades():
    proc = subprocess.run([sys.executable, "bench/bench_regrade.py", "--count", "4", "--no-ray"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = proc.stdout
    assert re.search(r"^fresh\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+\d+\s+1\.00x$", out, re.M), out
    assert re.search(r"^local\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+\d+\s+[\d.]+x$", out, re.M), out
    assert "identical grades fresh vs local: 4/4" in out
    assert "identical grades across engines: yes" in out
