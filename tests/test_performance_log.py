"""The benchmarks write their own dated results (bench/performance_log.py), not a hand-kept diary."""
from __future__ import annotations

import re

from bench.performance_log import HEADER, recorded


def test_a_recorded_run_appends_a_dated_entry_with_the_machine_and_its_output(tmp_path, capsys):
    results = tmp_path / "performance.md"
    with recorded("bench/bench_x.py", True, results):
        print("engine  wall s\nlocal   17.4")
    with recorded("bench/bench_x.py", True, results):
        print("second run")
    text = results.read_text()
    assert text.startswith(HEADER.splitlines()[0])
    entries = re.findall(r"(?m)^## \d{4}-\d\d-\d\d \d\d:\d\d UTC: `bench/bench_x\.py", text)
    assert len(entries) == 2 and text.index("local   17.4") < text.index("second run")
    assert re.search(r"Commit \S+; \d+ cores; load average [\d. ]+ before, [\d. ]+ after; Python 3\.", text)
    assert "local   17.4" in capsys.readouterr().out          # still printed as it ran


def test_an_unrecorded_run_writes_nothing(tmp_path):
    with recorded("bench/bench_x.py", False, tmp_path / "performance.md"):
        print("quick run")
    assert not (tmp_path / "performance.md").exists()
