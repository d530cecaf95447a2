"""Each of the verifier's modules has one name, `usd_repair_verifier.<package>.<module>`
(usd_repair_verifier/__init__.py): from a checkout, a top-level name (`scoring.reward`, `checks.registry`)
is refused with one clear line, while pytest still imports the test modules it collects; and no
code of the repository edits sys.path except the sealed grade's bootstrap."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from usd_repair_verifier import COLLECTED, collected_name

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("authoring", "checks", "closed_book", "commands", "gates", "physical", "profiles", "records",
            "regrade", "scoring", "stage_snapshot", "visual")


def _import_in_checkout(name: str) -> subprocess.CompletedProcess:
    """`import NAME` in a fresh interpreter whose sys.path starts with the checkout's root."""
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); import {name}; print('imported', {name}.__name__)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name", ["scoring.reward", "scoring", "profiles.families", "checks.registry", "gates.validity",
                                  "gates.names", "physical.engine", "authoring.inject", "commands.cli"])
def test_a_top_level_name_is_refused_with_the_one_name_to_use(name):
    done = _import_in_checkout(name)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError:"), done.stderr[-2000:]
    assert f"usd_repair_verifier.{name.split('.')[0]}" in last, last   # the package's name, or the module's


@pytest.mark.parametrize("name", ["checks.test_fault_checks", "gates.test_validity",
                                  "physical.runtime_tests.conftest"])
def test_the_modules_pytest_collects_still_import_by_their_folders(name):
    done = _import_in_checkout(name)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"imported {name}"


def test_the_namespaced_names_import():
    done = _import_in_checkout("usd_repair_verifier.scoring.reward")
    assert done.returncode == 0, done.stderr[-2000:]


def test_what_a_collected_package_lets_through():
    assert set(COLLECTED) == {"checks", "gates", "physical"}
    assert collected_name("checks") and collected_name("checks.test_fault_checks")
    assert collected_name("physical") and collected_name("physical.runtime_tests")
    assert collected_name("physical.runtime_tests.test_joint_travel") and collected_name("gates.conftest")
    assert not collected_name("checks.registry") and not collected_name("physical.engine")
    assert not collected_name("physical.test_x") and not collected_name("scoring.test_x")
    assert not collected_name("gates.validity.test_x")


def test_every_package_asks_for_its_one_name():
    for package in PACKAGES:
        tree = ast.parse((ROOT / package / "__init__.py").read_text())
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "only_namespaced"]
        assert calls, f"{package}/__init__.py does not call only_namespaced(__name__)"


SEALED_BOOTSTRAP = "scoring/sealed.py"
# The tests' command server forks a child per command and sets its sys.path[0] to the command's
# folder: what `python -m` itself does at start-up, which the fork skipped (not a reach into the
# checkout).
AS_THE_INTERPRETER_DOES = "tests/command_runner.py"
# The Ray driver of tests/test_regrade_cluster.py runs by its path from a folder of its own and puts
# the checkout on its own sys.path for bench.ray_cluster: run with `python -m` from the checkout (or
# with the checkout on PYTHONPATH) the nodes it starts never reached their head (measured: "Failed to
# connect to GCS within 60 seconds" on every run; by its path, 7 of 7 pass).
RAY_DRIVER = "tests/ray_cluster_driver.py"


def _edits_sys_path(source: str) -> bool:
    """`sys.path.insert/append/extend(...)`, `sys.path[...] = ...` or `sys.path = ...`, in code or
    in code run by `python -c` written as a string."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("insert", "append", "extend") and ast.unparse(node.func.value) == "sys.path":
            return True
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(ast.unparse(t).startswith("sys.path") for t in targets):
                return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "sys.path" in node.value \
                and node.value.lstrip().startswith("import") and _edits_sys_path(node.value):
            return True
    return False


@pytest.mark.slow
def test_no_script_edits_sys_path_but_the_sealed_bootstrap():
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    editing = [path for path in tracked.split()
               if path not in (SEALED_BOOTSTRAP, AS_THE_INTERPRETER_DOES, RAY_DRIVER) and _edits_sys_path((ROOT / path).read_text(encoding="utf-8"))]
    assert editing == [], f"these edit sys.path (run them with `python -m` from the checkout instead): {editing}"
    assert _edits_sys_path((ROOT / SEALED_BOOTSTRAP).read_text())   # the check does see an edit
