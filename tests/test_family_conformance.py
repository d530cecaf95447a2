"""The rules every check family keeps, run over the family table (profiles/families.py).

For every family:
- the reference against itself passes every check, and the family measures something on the
  fixture assets;
- every component carries its unit;
- each measure reads exactly the tolerances its entry declares;
- an equivalent package changes nothing: the same asset with a renamed namespace, flattened
  layers, a binary layer, other units (metersPerUnit 0.01, or 1 for the centimetre cabinet) or
  its prims reordered measures as the asset itself, intact or broken by one of its fault kinds
  (a fault in the layout itself, `measures_layout`, cannot survive a rewritten layout);
- every fault kind injects (the same bytes for the same seed, the rest of the package kept),
  freezes (a kind of a hand-picked fixture case is frozen and graded by the case suite), and fails
  exactly its checks: every check it selects fails on its target, and nothing else fails anywhere
  but the knock-on effects its entry declares.

The last test adds a toy family in a copy of the repository, with one module and one entry and
nothing else (it proves the copy differs from the repository in those two files only), and runs
this suite on it there.
"""
from __future__ import annotations

import functools
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from pxr import Usd

from usd_repair_verifier.authoring.freeze import freeze
from usd_repair_verifier.authoring.inject import inject, root_layer_of
from usd_repair_verifier.authoring.inject_targets import list_targets
from usd_repair_verifier.checks.measurement import Comparison
from usd_repair_verifier.checks.registry import Measurements, every_measurement
from usd_repair_verifier.gates.exemptions import exempt_keys
from usd_repair_verifier.profiles.families import FAMILIES, measure_entry
from usd_repair_verifier.profiles.result_record import UNITS
from usd_repair_verifier.profiles.schema import Fault
from usd_repair_verifier.profiles.vocabulary import (DEFAULT_CORRESPONDENCE, DEFAULT_SAMPLING, DEFAULT_TOLERANCES,
                                                     FAULT_KINDS)
from usd_repair_verifier.stage_snapshot.correspondence import correspond
from usd_repair_verifier.stage_snapshot.read import read_snapshot
from tests import equivalent_variants
from tests.grade_in_process import grade_warm

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ("cabinet_cm", "gripper_m", "ant")   # centimetres and metres, meshes and capsules, one layer and six
CASES = ROOT / "fixtures" / "cases"
FAMILY_NAMES = [f.name for f in FAMILIES]
KINDS = [pytest.param(f.name, k.name, id=f"{f.name}-{k.name}") for f in FAMILIES for k in f.fault_kinds]
VARIANTS = sorted(equivalent_variants.EQUIVALENT)
SEED = 11


@functools.cache
def snapshot(package: str):
    return read_snapshot(root_layer_of(Path(package)), DEFAULT_SAMPLING)


@functools.cache
def measurements(reference: Path, candidate: Path) -> Measurements:
    """Every measurement of the pair, made once per test process (the families' tests share it)."""
    ref, cand = snapshot(str(reference)), snapshot(str(candidate))
    match = correspond(ref, cand, DEFAULT_CORRESPONDENCE["max_body_cost"], DEFAULT_CORRESPONDENCE["max_joint_cost"])
    return Measurements(Comparison(ref, cand, match, dict(DEFAULT_TOLERANCES)))


def asset(name: str) -> Path:
    return ROOT / "fixtures" / "assets" / name


def family_keys(reference: Path, family: str) -> list[tuple[str, str, str]]:
    return [key for key in every_measurement(snapshot(str(reference))) if key[0] == family]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("conformance")


_built: dict[tuple, Path] = {}


def equivalent(work: Path, source: Path, variant: str) -> Path:
    """The package `source` as the variant makes it (built once per test process)."""
    key = (str(source), variant)
    if key not in _built:
        out = work / "variants" / f"{len(_built)}-{variant}"
        out.parent.mkdir(parents=True, exist_ok=True)
        _built[key] = equivalent_variants.EQUIVALENT[variant](source, out)
    return _built[key]


def example(kind: str) -> tuple[Path, str]:
    """A reference package and a target for the kind: a committed case's, else the first target
    its injector accepts on the fixture assets."""
    for profile in sorted(CASES.glob("*/profile.json")):
        for fault in json.loads(profile.read_text())["faults"]:
            if fault["kind"] == kind:
                return profile.parent / "reference", fault["target"]
    for name in ASSETS:
        found = list_targets(asset(name), [kind])[0]
        if found.valid:
            return asset(name), found.valid[0]
    raise LookupError(f"no fixture asset takes a fault of kind {kind}")


@functools.cache
def frozen_by_the_case_suite() -> frozenset[str]:
    """The fault kinds of the hand-picked fixture cases (none in a copy without them)."""
    try:
        from fixtures.build_cases import CASE_TABLE
    except ImportError:
        return frozenset()
    return frozenset(kind for _, faults in CASE_TABLE.values() for _, kind, _ in faults)


def injected(work: Path, kind: str) -> tuple[Path, Path, str]:
    """(reference, input, target): the kind injected on its example (once per test process)."""
    key = ("injected", kind)
    if key not in _built:
        reference, target = example(kind)
        out = work / "inputs" / kind
        [done] = inject(reference, out, [(kind, target)], SEED)
        _built[key] = (reference, out, done.target)
    return _built[key]


# --- the reference against itself ----------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_the_reference_against_itself_passes_every_check(family):
    measured = 0
    for name in ASSETS:
        m = measurements(asset(name), asset(name))
        for key in family_keys(asset(name), family):
            result = m.check(*key)
            assert result.passed is not False, (name, key, result.details)
            measured += result.passed is True
    assert measured, f"the {family} family measures nothing on {ASSETS}"


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_every_component_carries_its_unit(family, work):
    entry = next(f for f in FAMILIES if f.name == family)
    pairs = [(asset(name), asset(name)) for name in ASSETS]
    pairs += [injected(work, kind.name)[:2] for kind in entry.fault_kinds]
    seen = 0
    for reference, candidate in pairs:
        m = measurements(reference, candidate)
        for key in family_keys(reference, family):
            for name, component in m.check(*key).components.items():
                assert component.unit in UNITS, (key, name, component.unit)
                assert component.value_unit is None or component.value_unit in UNITS, (key, name, component.value_unit)
                seen += 1
    assert seen


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_each_measure_reads_the_tolerances_it_declares(family, work):
    entry = next(f for f in FAMILIES if f.name == family)
    pairs = [(asset(name), asset(name)) for name in ASSETS]
    pairs += [injected(work, kind.name)[:2] for kind in entry.fault_kinds]
    read: dict[str, set] = {m.name: set() for m in entry.measures}
    measured: set[str] = set()
    for reference, candidate in pairs:
        m = measurements(reference, candidate)
        for key in family_keys(reference, family):
            if m.check(*key).passed is not None:
                measured.add(key[1])
        for measure in entry.measures:
            read[measure.name] |= m.view(family, measure.name).tolerances.read
    for measure in entry.measures:
        if measure.name in measured:   # a measure unmeasured everywhere reads nothing to compare
            assert read[measure.name] == set(measure.tolerances), (measure.name, read[measure.name])


# --- equivalent packages -------------------------------------------------------------------------

def _same(reference: Path, one: Path, other: Path, keys) -> None:
    """Every check of `keys` measures `other` against the reference as it measures `one`."""
    first, second = measurements(reference, one), measurements(reference, other)
    for key in keys:
        a, b = first.check(*key), second.check(*key)
        assert (a.passed, set(a.components)) == (b.passed, set(b.components)), (key, a.details, b.details)
        for name, c in a.components.items():
            d = b.components[name]
            if isinstance(c.error, (int, float)) and math.isfinite(c.error):
                bound = max(1e-6 * abs(c.error), 1e-3 * c.tolerance, 1e-6)   # float32 storage aside
                assert abs(c.error - d.error) <= bound, (key, name, c.error, d.error)
            else:
                assert str(c.error) == str(d.error), (key, name, c.error, d.error)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_an_equivalent_package_changes_nothing(family, variant, work):
    entry = next(f for f in FAMILIES if f.name == family)
    for name in ASSETS:
        _same(asset(name), asset(name), equivalent(work, asset(name), variant), family_keys(asset(name), family))
    # Broken too, by one of its kinds (the kinds' own test covers the rest), unless its fault is in
    # the layout itself (a missing sublayer): every variant here rewrites the layout.
    kinds = [k for k in entry.fault_kinds if not any(measure_entry(f, m).measures_layout for f, m in k.checks)]
    for kind in kinds[:1]:
        reference, broken, target = injected(work, kind.name)
        keys = family_keys(reference, family) + [(f, m, target) for f, m in kind.checks]
        _same(reference, broken, equivalent(work, broken, variant), keys)


def test_the_variants_are_what_they_claim(work):
    """The suite above proves something only if each variant really changed what it names."""
    source = asset("gripper_m")
    ref = snapshot(str(source))
    renamed = snapshot(str(equivalent(work, source, "renamed_namespace")))
    assert not set(renamed.bodies) & set(ref.bodies) and len(renamed.bodies) == len(ref.bodies)
    assert root_layer_of(equivalent(work, source, "binary_layer")).suffix == ".usdc"
    assert snapshot(str(equivalent(work, source, "other_units"))).meters_per_unit == pytest.approx(0.01)
    assert snapshot(str(equivalent(work, asset("cabinet_cm"), "other_units"))).meters_per_unit == pytest.approx(1.0)
    flat = equivalent(work, source, "flattened")
    assert len([p for p in flat.rglob("*") if p.suffix in (".usd", ".usda", ".usdc")]) == 1
    def order(package: Path) -> list[str]:
        stage = Usd.Stage.Open(str(root_layer_of(package)))
        return [str(p.GetPath()) for p in stage.Traverse()]

    reordered, flat_order = order(equivalent(work, source, "reordered_prims")), order(flat)
    assert reordered != flat_order and sorted(reordered) == sorted(flat_order)


# --- fault kinds -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("family", "kind"), KINDS)
def test_every_fault_kind_injects_freezes_and_fails_exactly_its_checks(family, kind, work, monkeypatch):
    reference, broken, target = injected(work, kind)
    again = work / "again" / kind
    inject(reference, again, [(kind, example(kind)[1])], SEED)
    files = lambda folder: {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    assert files(again) == files(broken)   # the same seed, the same bytes
    # The rest of the package is kept: at most the layers holding the faulted opinions change
    # (body_hierarchy alone flattens the package into its root layer).
    changed = [name for name, data in files(broken).items() if files(reference).get(name) != data]
    assert changed and (kind == "body_hierarchy" or len(changed) <= 3), changed
    # Frozen: freeze grades the reference (1.0, objective met) and the input (0, graded, every
    # targeted check failing) and refuses otherwise (its grades run in this process). A kind of a
    # hand-picked fixture case was frozen by fixtures/build_cases.py, and tests/test_case_suite.py
    # grades that case's reference and input the same way on every run: not frozen again here.
    fault = Fault(id="f1", kind=kind, target=target)
    if kind in frozen_by_the_case_suite():
        profile = SimpleNamespace(checks=[SimpleNamespace(family=f, measure=name, target=target)
                                          for f, name in FAULT_KINDS[kind].checks])
    else:
        monkeypatch.setattr("usd_repair_verifier.scoring.run.run_grade", grade_warm)
        profile = freeze(f"conformance-{kind}", reference, broken, work / "cases" / kind, [fault])
    m = measurements(reference, broken)
    failing = {key for key in every_measurement(m.comparison.reference) if m.check(*key).passed is False}
    selected = {(f, name, target) for f, name in FAULT_KINDS[kind].checks}
    assert selected <= failing, sorted(selected - failing)
    undeclared = failing - exempt_keys(profile, m.comparison)
    assert not undeclared, f"{kind} also fails {sorted(undeclared)}: declare them as knock-ons or fix the injector"


# --- a new family: one module, one entry ------------------------------------------------------------

TOY_MODULE = '''"""Toy family: a rigid body's world position, to a tolerance far tighter than any other check's."""
import math

from usd_repair_verifier.profiles.families import InjectionError

from .measurement import Comparison, Component


def position(cmp: Comparison, target: str):
    ref = cmp.reference.bodies[target]
    tolerance = cmp.tolerances["body_position_m"]
    cand_path = cmp.match.bodies.get(target)
    if cand_path is None:
        return {"position": Component(math.inf, tolerance, list(ref.pose.position), None, unit="m", value_unit="m")}
    cand = cmp.candidate.bodies[cand_path]
    return {"position": Component(math.dist(ref.pose.position, cand.pose.position), tolerance,
                                  list(ref.pose.position), list(cand.pose.position), unit="m", value_unit="m")}


MEASURES = {"position": position}


def targets(reference, measure=None):
    return list(reference.bodies)


def body_nudged(stage, target, rng, dirty):
    """The body moved 0.4 mm along x, where its translate is authored most strongly."""
    from pxr import UsdGeom

    prim = stage.GetPrimAtPath(target)
    translate = prim.GetAttribute("xformOp:translate") if prim else None
    if not translate or not translate.GetPropertyStack():
        raise InjectionError(f"{target} has no authored translate to nudge")
    spec = translate.GetPropertyStack()[0]
    value = spec.default
    if value is None:
        raise InjectionError(f"{target}'s translate has no default to nudge")
    step = 0.0004 / UsdGeom.GetStageMetersPerUnit(stage)
    spec.default = type(value)(value[0] + step, value[1], value[2])
    dirty.add(spec.layer)
    return "moved 0.4 mm along x"
'''

TOY_ENTRY = '''    Family(
        name="body_pose", module="body_pose",
        measures=(Measure(name="position", target_kind=TargetKind.BODY, objective_gate="all_bodies",
                          preservation_gate="healthy_body_properties", tolerances=("body_position_m",)),),
        tolerances={"body_position_m": 1e-5},
        fault_kinds=(FaultKind(name="body_nudged", target=TargetKind.BODY, checks=(("body_pose", "position"),),
                               summary="a rigid body moved a little",
                               injector="usd_repair_verifier.checks.body_pose:body_nudged"),),
    ),
'''
CODE = ("usd_repair_verifier", "authoring", "checks", "closed_book", "commands", "gates", "physical", "profiles",
        "records", "regrade", "scoring", "stage_snapshot", "visual", "tests", "tools", "docs/schemas")


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for folder in CODE for p in sorted((root / folder).rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


@pytest.mark.slow
def test_a_toy_family_is_one_module_and_one_entry(tmp_path):
    copy = tmp_path / "repo"
    for folder in CODE:
        shutil.copytree(ROOT / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(ROOT / "pyproject.toml", copy / "pyproject.toml")
    for name in ASSETS:
        shutil.copytree(asset(name), copy / "fixtures" / "assets" / name)
    (copy / "checks" / "body_pose.py").write_text(TOY_MODULE)
    table = copy / "profiles" / "families.py"
    text = table.read_text()
    anchor = "\n)\n\nBY_NAME"
    assert text.count(anchor) == 1, "the family table ends where the toy entry is appended"
    table.write_text(text.replace(anchor, "\n" + TOY_ENTRY.rstrip("\n") + "\n)\n\nBY_NAME"))

    before, after = _files(ROOT), _files(copy)
    changed = sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))
    assert changed == ["checks/body_pose.py", "profiles/families.py"]

    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    suite = subprocess.run([sys.executable, "-m", "pytest", "tests/test_family_conformance.py", "-k", "body_pose or test_layers",
                            "tests/test_layers.py", "-q", "-p", "no:cacheprovider"],
                           cwd=copy, env=env, capture_output=True, text=True, timeout=900)
    assert suite.returncode == 0, suite.stdout[-4000:] + suite.stderr[-2000:]
    summary = suite.stdout.strip().splitlines()[-1]
    toy_tests = 3 + len(VARIANTS) + 1      # reference, units, tolerances, each variant, its one kind
    assert "failed" not in summary and int(summary.split()[0]) >= toy_tests, summary
    schemas = subprocess.run([sys.executable, "tools/json_schemas.py", "--check"], cwd=copy, env=env,
                             capture_output=True, text=True, timeout=300)
    assert schemas.returncode == 0, schemas.stderr   # no published schema changes with a family
