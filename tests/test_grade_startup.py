"""What a single grade pays for before its first check.

Speed itself is measured by bench/bench_grade.py; these tests pin the mechanisms that keep a
small grade's start-up short, so a change that quietly brings the cost back fails here:
the scipy modules a small asset never needs stay unimported, and the measuring code's
imports are taken out of the garbage collector's later passes.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from usd_repair_verifier.gates.scene_preservation import _pair_scenes
from usd_repair_verifier.scoring.run import run_grade

ROOT = Path(__file__).resolve().parent.parent
CARTPOLE = ROOT / "fixtures" / "cases" / "gen_cartpole_1"

# A plugin loaded into the graded session (by -p): at the end of the run it writes what the
# process imported and whether the garbage collector's permanent generation holds anything.
PROBE = '''
import gc, json, sys

def pytest_unconfigure(config):
    with open({out!r}, "w") as f:
        json.dump({{"modules": sorted(sys.modules), "frozen": gc.get_freeze_count()}}, f)
'''


def test_a_grade_of_primitives_imports_no_scipy_and_freezes_its_imports(tmp_path):
    probe_out = tmp_path / "probe.json"
    (tmp_path / "startup_probe.py").write_text(PROBE.format(out=str(probe_out)))
    result = run_grade(CARTPOLE, CARTPOLE / "reference", tmp_path / "out", ("-p", "startup_probe"),
                       env={"PYTHONPATH": f"{tmp_path}:{ROOT}"})
    assert result.exit_code == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.reward == {"authored_usd": 1.0}
    seen = json.loads(probe_out.read_text())
    modules = set(seen["modules"])
    assert "usd_repair_verifier.scoring.session" in modules  # the probe saw a process that measured
    # scipy comes only with what this asset of primitives does not need: a matching that is not
    # obvious (scipy.optimize), nearest-neighbour searches and convex hulls (scipy.spatial);
    # trimesh only with mesh mass properties.
    assert not {m for m in modules if m.split(".")[0] in ("scipy", "trimesh")}
    # The measuring code's imports were moved out of reach of later collections.
    assert seen["frozen"] > 10_000


def test_one_scene_each_side_pairs_without_the_solver():
    assert _pair_scenes(np.array([[0.0]])) == [(0, 0)]
    assert _pair_scenes(np.array([[np.inf]])) == [(0, 0)]  # a non-finite gravity still pairs (and fails)


@pytest.mark.parametrize("cost", [
    [[0.0, 5.0], [5.0, 0.0]],
    [[5.0, 0.0], [0.0, 5.0]],
    [[np.inf, 1.0, 2.0], [0.5, np.inf, 3.0], [1.0, 2.0, np.nan]],
])
def test_several_scenes_pair_as_the_solver_pairs_them(cost):
    cost = np.array(cost)
    rows, cols = linear_sum_assignment(np.where(np.isfinite(cost), cost, 1e9))
    assert _pair_scenes(cost) == list(zip(rows, cols))


def test_the_parent_of_usdgrade_grade_imports_none_of_the_apps():
    """`usdgrade grade` parses its command line with the core parsers alone: the parent of the sealed
    child imports no app (task, visual, physical, records, regrade, doctor), no pydantic, no pxr."""
    import subprocess
    import sys

    code = ("import sys; from usd_repair_verifier.commands import cli; "
            "cli.build_parser(core_only=cli._command_word(['grade', 'DIR', '--case', 'C', '--out', 'O']) "
            "in cli.CORE_COMMANDS).parse_args(['grade', 'DIR', '--case', 'C', '--out', 'O']); "
            "print('\\n'.join(sorted(sys.modules)))")
    modules = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                 cwd=ROOT).stdout.split())
    assert "usd_repair_verifier.commands.cli" in modules
    # The exit-code table (profiles/errors.py, which imports only enum) is the one contract the
    # command needs before it starts the child.
    light = {"usd_repair_verifier.profiles", "usd_repair_verifier.profiles.errors"}
    heavy = {m for m in modules - light if m.split(".")[0] in ("pydantic", "pxr", "numpy", "tqdm")
             or m.startswith(("usd_repair_verifier.authoring", "usd_repair_verifier.visual",
                              "usd_repair_verifier.physical", "usd_repair_verifier.records",
                              "usd_repair_verifier.regrade", "usd_repair_verifier.profiles"))}
    assert not heavy, sorted(heavy)


def test_the_sealed_grade_rewrites_no_assert():
    from usd_repair_verifier.scoring.sealed import pytest_argv

    assert "--assert=plain" in pytest_argv("C", "S", "O")
