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


def test_the_suite_bench_counts_idle_cores_inside_the_run_and_sums_each_file():
    """bench/bench_suite.py: idle core-seconds from /proc/stat samples within the tests' window
    only; a file's test seconds and CPU are the sums of its tests'."""
    from bench.bench_suite import by_file, idle_core_seconds

    # (time, busy jiffies, total jiffies) on 2 cores: half busy, then fully busy, then idle
    samples = [(0.0, 0, 0), (1.0, 100, 200), (2.0, 300, 400), (3.0, 300, 600)]
    assert idle_core_seconds(samples, 0.0, 2.0, 2) == 1.0          # 1 s at one core idle, 1 s at none
    assert idle_core_seconds(samples, 0.0, 3.0, 2) == 3.0          # and 1 s of both idle
    assert idle_core_seconds(samples, 0.5, 1.5, 2) is None         # no whole interval inside: unmeasured
    records = [{"id": "tests/a.py::x", "wall_s": 2.0, "self_cpu_s": 1.5, "children_cpu_s": 0.25},
               {"id": "tests/a.py::y[1]", "wall_s": 1.0, "self_cpu_s": 0.5, "children_cpu_s": 0.0},
               {"id": "tests/b.py::z", "wall_s": 4.0, "self_cpu_s": 0.0, "children_cpu_s": 3.5}]
    assert by_file(records) == [("tests/b.py", 4.0, 0.0, 3.5, 1), ("tests/a.py", 3.0, 2.0, 0.25, 2)]
