"""The dated results file the benchmarks write: docs/performance.md.

Each full run of a benchmark appends one entry: the date and time (UTC), the script and its
arguments, the commit, the machine (cores, load average before and after the run, Python) and
everything the run printed. The README keeps only today's figures and the targets; the history
of how they moved lives here, written by the scripts themselves rather than by hand.
"""
from __future__ import annotations

import io
import os
import platform
import subprocess
import sys
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "docs" / "performance.md"
HEADER = """# Performance results

Written by the benchmark scripts (`bench/bench_grade.py`, `bench/bench_regrade.py`): each full run
appends an entry, newest last, with the machine's load, because these machines are shared and
only ratios measured within one run mean much. The README keeps today's figures and the targets;
`bench/bench_robots.py` writes the real robots' rows to [bench/results/](../bench/results/).
Run a script with `--no-record` to leave this file alone (quick runs do not record unless
`--record` is given).
"""


class _Tee(io.TextIOBase):
    def __init__(self, stream):
        self.stream, self.seen = stream, io.StringIO()

    def write(self, text: str) -> int:
        self.seen.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


@contextmanager
def recorded(script: str, enabled: bool, path: Path = RESULTS):
    """Print as usual; when `enabled`, append what was printed to `path` as a dated entry."""
    if not enabled:
        yield
        return
    started, load_before = datetime.now(timezone.utc), _load()
    tee = _Tee(sys.stdout)
    sys.stdout = tee
    try:
        yield
    finally:
        sys.stdout = tee.stream
        entry = [f"## {started:%Y-%m-%d %H:%M} UTC: `{script} {' '.join(sys.argv[1:])}`".rstrip(), "",
                 f"Commit {_commit()}; {os.cpu_count()} cores; load average {load_before} before, {_load()} after; "
                 f"Python {platform.python_version()}.", "", "```", tee.seen.getvalue().rstrip(), "```", ""]
        text = path.read_text(encoding="utf-8") if path.is_file() else HEADER
        path.write_text(text.rstrip() + "\n\n" + "\n".join(entry), encoding="utf-8")
        print(f"appended the results to {path}")
