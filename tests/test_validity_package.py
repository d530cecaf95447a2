"""The validity gate's package: its names import light, its package-relative paths split as
documented, and its worker protocol round-trips."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from pxr import Ar

import usd_repair_verifier
from usd_repair_verifier.gates.validity.limits import ResourceLimits
from usd_repair_verifier.gates.validity.paths import Location, split_package_path
from usd_repair_verifier.gates.validity.protocol import (
    ComposedResult,
    DependencyStats,
    WorkerConfig,
    WorkerResult,
)


def _modules_after(statement: str) -> set[str]:
    code = f"import json, sys; {statement}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(usd_repair_verifier.IMPORT_ROOT)})
    return set(json.loads(out.stdout))


def test_naming_the_gates_imports_no_pxr_and_none_of_the_validity_code():
    modules = _modules_after("import usd_repair_verifier.gates.names")
    assert "usd_repair_verifier.gates.validity.rules" in modules
    gate_code = {m for m in modules if m.startswith("usd_repair_verifier.gates.validity.")}
    assert gate_code == {"usd_repair_verifier.gates.validity.rules"}
    assert not {m for m in modules if m.split(".")[0] == "pxr"}


def test_checking_a_submission_imports_no_pxr_in_the_caller():
    modules = _modules_after("from usd_repair_verifier.gates.validity import check_submission")
    assert "usd_repair_verifier.gates.validity.gate" in modules
    assert "usd_repair_verifier.gates.validity.worker" not in modules
    assert not {m for m in modules if m.split(".")[0] == "pxr"}


def _ar_split(path: str) -> tuple[str, tuple[str, ...]]:
    """Ar's outer split applied to each inner path in turn."""
    outer, inner = Ar.SplitPackageRelativePathOuter(path)
    if not inner:
        return outer, ()
    inner_outer, inner_members = _ar_split(inner)
    return outer, (inner_outer, *inner_members)


@pytest.mark.parametrize("path", [
    "a.usda", "./geo/a.usdc", "a.usdz[b.usda]", "./a.usdz[sub/b.usda]",
    "a.usdz[b.usdz[c.usda]]", "../x/a.usdz[b.usdz[c.usdz[d.png]]]",
])
def test_well_formed_package_paths_split_as_ar_splits_them(path):
    assert split_package_path(path) == _ar_split(path)


@pytest.mark.parametrize("path, why", [
    ("a[b", "stray '[' or ']'"),
    ("a.usdz[b[c].usda]", "stray '[' or ']'"),
    ("a[x].usdz[b.usda]", "stray '[' or ']' before the package member"),
    ("a.usdz[b.usda]]", "unbalanced '[' ']'"),
    ("[b.usda]", "unbalanced '[' ']'"),
    ("a.usdz[]", "empty package member"),
])
def test_malformed_package_paths_are_refused_where_ar_would_read_them(path, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        split_package_path(path)


def test_location_names_nested_members_as_usd_does():
    assert Location("/p/a.usdz", ("b.usdz", "c.usda")).ident() == "/p/a.usdz[b.usdz[c.usda]]"
    assert Location("/p/a.usda").ident() == "/p/a.usda"


def test_worker_protocol_round_trips(tmp_path):
    cfg = WorkerConfig(package_root="/p", root_layer="/p/a.usda", reference_root_layer=None,
                       limits=ResourceLimits(max_prims=7), memory_bytes=1, cpu_seconds=2,
                       result=str(tmp_path / "r.json"), progress="pr", stderr="err")
    cfg.write(str(tmp_path / "c.json"))
    assert WorkerConfig.read(str(tmp_path / "c.json")) == cfg
    result = WorkerResult(layers=["/p/a.usda"], prims=3, parse_errors=["x"], parse_error_total=9,
                          dep_stats=DependencyStats(1, 2, 3),
                          composed=ComposedResult(budgets={"prims": 5}, counts={"prims": 6}, refusal="over"))
    result.write(cfg.result)
    assert WorkerResult.read(cfg.result) == result
    assert not (tmp_path / "r.json.tmp").exists()


def test_every_public_name_resolves_to_its_module():
    from usd_repair_verifier.gates import validity

    for name in validity.__all__:
        assert getattr(validity, name) is not None, name
    assert validity.check_submission.__module__ == "usd_repair_verifier.gates.validity.gate"
    with pytest.raises(AttributeError):
        validity.no_such_name  # noqa: B018
