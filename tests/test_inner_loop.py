"""The inner loop (`pytest tests -m "not slow" -n 2`, docs/developing.md) still covers every family,
gate and command at least once: read from the collection of the non-slow tests (a child pytest
`--collect-only`), so a slow mark that takes the last representative of any of them fails here.

- families: the hand-authored cases the inner loop grades (reference 1.0, input 0.0) have
  faults of every family of profiles/families.py, and the conformance suite runs each family;
- gates: every grade runs every validity rule, preservation gate and objective gate (they are
  the gate tests each grade collects), so a graded reference and a graded input cover them all;
  each preservation attack of the hostile suite runs on one asset;
- commands: every `usdgrade` subcommand (and each `records` subcommand) is named by a non-slow
  test: its file (tests/test_<command>...) or its test's name (test_freeze_..., ..._regrade_...).
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from usd_repair_verifier.commands.cli import build_parser
from usd_repair_verifier.profiles.families import FAMILIES
from usd_repair_verifier.profiles.schema import load_profile

ROOT = Path(__file__).resolve().parent.parent
# A guard of the marks, not of the verifier: it collects the whole suite in a child (about 7 s of
# CPU), so the full suite runs it, where a mark that takes the last representative is caught.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def inner_loop() -> list[str]:
    """Node ids of the non-slow tests."""
    done = subprocess.run([sys.executable, "-m", "pytest", "tests", "-m", "not slow", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "-p", "no:xdist"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert ids, done.stdout[-3000:]
    return ids


def _params(ids: list[str], test: str) -> set[str]:
    prefix = f"{test}["
    return {i[len(prefix):-1] for i in ids if i.startswith(prefix)}


def test_every_family_runs_in_the_inner_loop(inner_loop):
    every = {family.name for family in FAMILIES}
    graded = _params(inner_loop, "tests/test_case_suite.py::test_reference_and_input")
    assert graded, "the inner loop grades no committed case"
    families = {check.family for case in graded
                for check in load_profile(ROOT / "fixtures" / "cases" / case / "profile.json").checks}
    assert families == every, f"families no graded case of the inner loop has a fault of: {sorted(every - families)}"
    conformed = _params(inner_loop, "tests/test_family_conformance.py::test_the_reference_against_itself_passes_every_check")
    assert conformed == every


def test_every_gate_runs_in_the_inner_loop(inner_loop):
    """A grade runs every gate test; the inner loop grades references (each gate passes) and
    inputs (checks fail, gates judged), and every preservation attack once."""
    assert _params(inner_loop, "tests/test_case_suite.py::test_reference_and_input")
    from tests.test_hostile_preservation import ATTACK_RUNS

    attacks = {attack for case, attack in ATTACK_RUNS}
    kept = {p.split("-", 1)[1] for p in _params(inner_loop, "tests/test_hostile_preservation.py::"
                                                             "test_preservation_attacks_on_other_assets")}
    assert kept == attacks


def _commands() -> list[str]:
    def subcommands(parser) -> dict:
        actions = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        return actions[0].choices if actions else {}

    names = []
    for name, parser in subcommands(build_parser()).items():
        names.append(name)
        names += list(subcommands(parser))
    return names


def test_every_command_runs_in_the_inner_loop(inner_loop):
    commands = _commands()
    assert {"grade", "freeze", "regrade", "records", "ingest", "doctor"} <= set(commands)

    def names(command: str, node_id: str) -> bool:
        path, _, test = node_id.partition("::")
        return (Path(path).name.startswith(f"test_{command}")
                or re.search(rf"(^|_){command}(_|\[|$)", test.split("[")[0]) is not None)

    missing = [c for c in commands if not any(names(c, i) for i in inner_loop)]
    assert not missing, f"commands no non-slow test names: {missing}"
