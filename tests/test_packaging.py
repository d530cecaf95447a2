"""Packaging: the verifier installs under one import namespace, usd_repair_verifier.

pyproject.toml maps the repository's top-level code folders (checks/, scoring/, ...) under the
namespace; these tests read that mapping and the tree, so a new folder, subpackage or data file
that the mapping misses fails here rather than in an install. tools/namespace_imports.py keeps
every reference namespaced: its --check runs on the whole repository, and its rewrite is tested
on a small tree of its own.
"""
from __future__ import annotations

import fnmatch
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "usd_repair_verifier"
SCRIPT = ROOT / "tools" / "namespace_imports.py"
# Top-level folders with an __init__.py that are not installed: the benchmarks run from a checkout.
CHECKOUT_ONLY = {"bench", NAMESPACE}


def setuptools_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def code_folders() -> list[str]:
    return sorted(p.parent.name for p in ROOT.glob("*/__init__.py") if p.parent.name not in CHECKOUT_ONLY)


def test_every_top_level_code_folder_is_mapped_under_the_namespace():
    mapping = setuptools_config()["package-dir"]
    assert code_folders(), "no code folder found"
    assert mapping == {f"{NAMESPACE}.{name}": name for name in code_folders()}


def test_every_subpackage_is_listed_and_nothing_else():
    packages = setuptools_config()["packages"]
    expected = {NAMESPACE} | {
        ".".join((NAMESPACE, *init.parent.relative_to(ROOT).parts))
        for name in code_folders() for init in (ROOT / name).rglob("__init__.py") if "__pycache__" not in init.parts}
    assert "usd_repair_verifier.physical.runtime_tests" in expected
    assert sorted(packages) == sorted(expected)
    assert {p.split(".")[0] for p in packages} == {NAMESPACE}


def test_every_data_file_is_package_data():
    """Non-Python files inside the code folders (rubric, ini, task templates) ship with the wheel."""
    config = setuptools_config()
    data = config["package-data"]
    assert set(data) <= set(config["packages"]), "package-data names a package that is not installed"
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", *code_folders()],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    missing = []
    for rel in (r for r in tracked if not r.endswith(".py")):
        folder, name = rel.rsplit("/", 1)
        # the nearest package above the file and the file's path relative to it
        parts = folder.split("/")
        while parts and not (ROOT.joinpath(*parts) / "__init__.py").is_file():
            parts.pop()
        package = ".".join((NAMESPACE, *parts))
        relative = rel[len("/".join(parts)) + 1:]
        if not any(fnmatch.fnmatch(relative, pattern) for pattern in data.get(package, ())):
            missing.append(rel)
    assert tracked and not missing, missing


def test_entry_points_name_namespaced_modules():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"usdgrade": f"{NAMESPACE}.commands.cli:main"}
    # pytest registers a plugin once per name: the entry point's name is the module the checkout's
    # addopts name
    assert project["entry-points"]["pytest11"] == {f"{NAMESPACE}.scoring.plugin": f"{NAMESPACE}.scoring.plugin"}
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert addopts[addopts.index(f"{NAMESPACE}.scoring.plugin") - 1] == "-p"
    assert not (ROOT / "conftest.py").exists()   # nothing else registers it


def test_the_checkout_imports_the_namespace_from_its_own_folders():
    import usd_repair_verifier
    from usd_repair_verifier.physical import runtime_tests
    from usd_repair_verifier.scoring import plugin

    assert usd_repair_verifier.IMPORT_ROOT == ROOT
    assert Path(plugin.__file__).resolve() == ROOT / "scoring" / "plugin.py"
    assert Path(runtime_tests.__file__).resolve() == ROOT / "physical" / "runtime_tests" / "__init__.py"


@pytest.mark.slow
def test_no_reference_in_the_repository_is_left_unnamespaced():
    r = subprocess.run([sys.executable, str(SCRIPT), "--check"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


# --- the rewrite itself, on a small repository of its own -----------------------------------

BEFORE = '''\
"""Uses scoring.plugin; visual.json and records.sqlite are files, `checks` a folder."""
import os
import closed_book
import scoring as s
from scoring.plugin import x
from scoring import plugin


def lazy():
    from closed_book.rule import y
    import scoring.plugin as p
    return importlib.import_module("scoring.plugin"), ["-m", "scoring.cli"], "closed_book.HARBOR"


CODE = "import sys; import closed_book; from scoring.plugin import x\\nimport scoring.plugin as p\\nscoring.cli.y"
PATCH = "scoring.plugin.time"  # scoring.missing stays: no such module
'''

AFTER = '''\
"""Uses usd_repair_verifier.scoring.plugin; visual.json and records.sqlite are files, `checks` a folder."""
import os
from usd_repair_verifier import closed_book
from usd_repair_verifier import scoring as s
from usd_repair_verifier.scoring.plugin import x
from usd_repair_verifier.scoring import plugin


def lazy():
    from usd_repair_verifier.closed_book.rule import y
    import usd_repair_verifier.scoring.plugin as p
    return importlib.import_module("usd_repair_verifier.scoring.plugin"), ["-m", "usd_repair_verifier.scoring.cli"], "usd_repair_verifier.closed_book.HARBOR"


CODE = "import sys; from usd_repair_verifier import closed_book; from usd_repair_verifier.scoring.plugin import x\\nimport usd_repair_verifier.scoring.plugin as p\\nusd_repair_verifier.scoring.cli.y"
PATCH = "usd_repair_verifier.scoring.plugin.time"  # scoring.missing stays: no such module
'''


@pytest.fixture()
def small_repo(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools.package-dir]\n'
        '"usd_repair_verifier.scoring" = "scoring"\n"usd_repair_verifier.closed_book" = "closed_book"\n'
        '"usd_repair_verifier.visual" = "visual"\n"usd_repair_verifier.records" = "records"\n'
        '"usd_repair_verifier.checks" = "checks"\n'
        '[project.scripts]\nusdgrade = "scoring.cli:main"\n')
    for package, modules in {"scoring": ("plugin", "cli"), "closed_book": ("rule",), "visual": ("render",),
                             "records": ("store",), "checks": ("registry",)}.items():
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("import json\n" + ("HARBOR = 1\n" if package == "closed_book" else ""))
        for module in modules:
            (tmp_path / package / f"{module}.py").write_text("")
    (tmp_path / "code.py").write_text(BEFORE)
    (tmp_path / "doc.md").write_text("```\nimport closed_book\npython -m scoring.cli\n```\nsee records.store\n")
    (tmp_path / "binds.py").write_text("import scoring.plugin\n")
    return tmp_path


def run_script(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), *args], capture_output=True, text=True)


def test_the_rewrite_namespaces_imports_and_module_paths_and_is_idempotent(small_repo):
    files = [small_repo / n for n in ("code.py", "doc.md", "pyproject.toml")]
    check = run_script(small_repo, "--check", *map(str, files))
    assert check.returncode == 1 and "code.py:3:" in check.stdout and "doc.md:2:" in check.stdout
    assert (small_repo / "code.py").read_text() == BEFORE     # --check writes nothing

    first = run_script(small_repo, *map(str, files))
    assert first.returncode == 0, first.stderr
    assert (small_repo / "code.py").read_text() == AFTER
    assert (small_repo / "doc.md").read_text() == (
        "```\nfrom usd_repair_verifier import closed_book\npython -m usd_repair_verifier.scoring.cli\n```\n"
        "see usd_repair_verifier.records.store\n")
    assert 'usdgrade = "usd_repair_verifier.scoring.cli:main"' in (small_repo / "pyproject.toml").read_text()

    snapshot = {f: f.read_text() for f in files}
    second = run_script(small_repo, *map(str, files))
    assert second.returncode == 0 and second.stdout == ""
    assert {f: f.read_text() for f in files} == snapshot
    assert run_script(small_repo, "--check", *map(str, files)).returncode == 0


def test_an_import_that_binds_the_old_name_is_reported_not_rewritten(small_repo):
    r = run_script(small_repo, str(small_repo / "binds.py"))
    assert r.returncode == 1 and "binds.py:1" in r.stderr and "binds `scoring`" in r.stderr
    assert (small_repo / "binds.py").read_text() == "import scoring.plugin\n"
