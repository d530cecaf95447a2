"""Every fault kind: injected where it is the effective opinion, reproducible byte for byte."""
from __future__ import annotations

import ast
import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from usd_repair_verifier.authoring import inject as inject_package
from usd_repair_verifier.authoring.inject import INJECTORS
from usd_repair_verifier.profiles.vocabulary import FAULT_KINDS

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"


def test_every_fault_kind_has_an_injector():
    assert set(FAULT_KINDS) == set(INJECTORS)


# Every kind injected, reproducible, effective and keeping the rest of the package: the family
# conformance suite (tests/test_family_conformance.py), which runs it for every kind of the table.


INJECT_MODULES = sorted(f"{inject_package.__name__}.{m.name}" for m in pkgutil.iter_modules(inject_package.__path__))


IMPORT_EACH_FIRST = """
import importlib, sys, traceback
package, modules = sys.argv[1], sys.argv[2:]
for module in modules:
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]
    try:
        importlib.import_module(module)
    except Exception:
        print(module, traceback.format_exc(limit=-3))
"""


def test_each_injector_module_imports_alone():
    """Any module of the package imports first, with none of the package loaded (no import cycle among them)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", IMPORT_EACH_FIRST, inject_package.__name__, *INJECT_MODULES],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0 and not run.stdout, run.stdout + run.stderr
    assert len(INJECT_MODULES) >= 8


def test_family_modules_import_only_the_editing_primitives_of_the_package():
    """The families share edits.py and nothing else of the package; edits.py imports no family."""
    for module in INJECT_MODULES:
        tree = ast.parse(Path(importlib.import_module(module).__file__).read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        inside = {name for name in imported if name.startswith(inject_package.__name__)}
        allowed = set() if module.endswith(".edits") else {f"{inject_package.__name__}.edits"}
        assert inside <= allowed, (module, inside)


def test_every_kind_names_its_injector_beside_it_in_the_family_table():
    for kind in FAULT_KINDS.values():
        module, _, function = kind.injector.partition(":")
        assert INJECTORS[kind.name] is getattr(importlib.import_module(module), function)
        assert function == kind.name   # the injectors of the package are named for their kinds


def flattened(first: str, second: str) -> str:
    """A flattened layer as Flatten writes it, prototypes in the order of their numbers: `first` holds
    colour 0.1, `second` colour 0.9; /Asset/A is an instance of the 0.9 one, /Asset/B of the 0.1 one."""
    def prototype(name, colour):
        return (f'over "{name}"\n{{\n    color3f inputs:diffuseColor = ({colour}, {colour}, {colour})\n'
                f'    token outputs:surface.connect = </{name}.outputs:surface>\n}}\n\n')
    instances = "".join(f'    def Material "{n}" (\n        instanceable = true\n        append references = </{p}>\n'
                        f'    )\n    {{\n    }}\n' for n, p in (("A", second), ("B", first)))
    prototypes = sorted([(first, 0.1), (second, 0.9)])
    return ('#usda 1.0\n(\n    defaultPrim = "Asset"\n)\n\n' + "".join(prototype(*p) for p in prototypes)
            + f'def Xform "Asset"\n{{\n{instances}}}\n\n')


def test_flattened_prototypes_get_the_same_names_whatever_flatten_numbered_them():
    from pxr import Sdf

    from usd_repair_verifier.authoring.inject.body import unmarked_prototypes

    one = unmarked_prototypes(flattened("Flattened_Prototype_1", "Flattened_Prototype_2"), "Asset")
    other = unmarked_prototypes(flattened("Flattened_Prototype_2", "Flattened_Prototype_1"), "Asset")
    assert one == other and "Flattened" not in one
    layer = Sdf.Layer.CreateAnonymous(".usda")
    assert layer.ImportFromString(one)
    # Named in the order the asset refers to them, written in that order, each instance keeping its prototype.
    assert [p.name for p in layer.rootPrims] == ["Asset_1", "Asset_2", "Asset"]
    prototype_of = {n: layer.GetPrimAtPath(f"/Asset/{n}").referenceList.appendedItems[0].primPath for n in "AB"}
    assert prototype_of == {"A": Sdf.Path("/Asset_1"), "B": Sdf.Path("/Asset_2")}
    colour = {p: layer.GetAttributeAtPath(p.AppendProperty("inputs:diffuseColor")).default[0] for p in prototype_of.values()}
    assert colour[prototype_of["A"]] == pytest.approx(0.9) and colour[prototype_of["B"]] == pytest.approx(0.1)
    connection = layer.GetAttributeAtPath("/Asset_1.outputs:surface").connectionPathList.explicitItems
    assert list(connection) == [Sdf.Path("/Asset_1.outputs:surface")]
