"""Every property of every physics schema is decided: measured by a named check or gate, or ignored
for a stated reason (profiles/physics_coverage.py), and docs/physics-coverage.md says so.

The registry is walked at run time, so a usd-core or newton-usd-schemas release that adds a
property (or a schema) fails here, naming it, until someone decides about it."""
from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

from usd_repair_verifier.gates.names import OBJECTIVE_GATES, PRESERVATION_GATES
from usd_repair_verifier.profiles import physics_coverage as table
from usd_repair_verifier.profiles.families import FAMILIES

ROOT = Path(__file__).resolve().parent.parent
WALK = ("import dataclasses, json; from usd_repair_verifier.profiles.physics_coverage import "
        "registered_physics_properties as walk; found, schemas, missing = walk(); "
        "print(json.dumps([[dataclasses.asdict(p) for p in found], sorted(schemas), missing]))")


@functools.cache
def registry_walk() -> tuple[list, set[str], list[str]]:
    """The registry's walk in a fresh interpreter: usd-core builds its schema registry once per
    process, so in a test worker where something already built it, schemas a package registers
    later (newton-usd-schemas) would be missing from it."""
    run = subprocess.run([sys.executable, "-c", WALK], capture_output=True, text=True, timeout=300, check=True)
    found, schemas, missing = json.loads(run.stdout.strip().splitlines()[-1])
    return [table.RegisteredProperty(**p) for p in found], set(schemas), missing


def test_docs_physics_coverage_md_is_what_the_table_gives():
    r = subprocess.run([sys.executable, "tools/physics_coverage.py", "--check"], cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr


def test_every_registered_physics_property_has_a_decision():
    found, schemas, missing = registry_walk()
    assert not missing, f"packages whose physics schemas could not be registered: {missing}"
    undecided = [f"{p.schema} {p.property} ({p.kind}, {p.package})" for p in found if p.key not in table.BY_KEY]
    assert not undecided, "physics properties nobody decided about (add a row to profiles/physics_coverage.py): " \
        + "; ".join(undecided)
    unknown = sorted(schemas - set(table.SCHEMAS))
    assert not unknown, f"physics schemas the table does not list: {unknown}"


def test_every_row_names_a_property_the_registry_has():
    found, schemas, _ = registry_walk()
    registered = {p.key: p for p in found}
    gone = [f"{r.schema} {r.property}" for r in table.ROWS if r.key not in registered]
    assert not gone, "rows for properties the schema registry no longer lists: " + "; ".join(gone)
    wrong_kind = [f"{r.schema} {r.property}: the table says {r.kind}, the registry {registered[r.key].kind}"
                  for r in table.ROWS if registered[r.key].kind != r.kind]
    assert not wrong_kind, "; ".join(wrong_kind)
    wrong_package = [f"{r.schema}: the table says {r.package}, the registry {registered[r.key].package}"
                     for r in table.ROWS if registered[r.key].package != r.package]
    assert not wrong_package, "; ".join(sorted(set(wrong_package)))
    gone_schemas = sorted(set(table.SCHEMAS) - schemas)
    assert not gone_schemas, f"schemas the registry no longer lists: {gone_schemas}"


def measure_names() -> set[str]:
    """Every name a row may give in `measured_by`: the families' measures, the gates, the readings."""
    return ({f"{f.name}.{m.name}" for f in FAMILIES for m in f.measures}
            | set(PRESERVATION_GATES) | set(OBJECTIVE_GATES) | set(table.KNOWN_MEASURES))


def test_every_row_names_a_measure_that_exists_or_one_reason():
    names = measure_names()
    unknown = [f"{r.schema} {r.property}: {m}" for r in table.ROWS for m in r.measured_by if m not in names]
    assert not unknown, "rows naming no family measure, gate or reading: " + "; ".join(unknown)
    assert all(bool(r.measured_by) != bool(r.ignored) for r in table.ROWS)
    # A built-in property is decided as in the schema it comes from.
    for r in (r for r in table.ROWS if r.via):
        source = table.BY_KEY[(r.via, r.property)]
        assert (r.measured_by, r.ignored, r.kind) == (source.measured_by, source.ignored, source.kind), r.key


def test_the_walk_notices_an_undecided_property(monkeypatch):
    """The decision test can fail: a row taken out of the table is reported by schema and property."""
    row = table.BY_KEY[("PhysicsFilteredPairsAPI", "physics:filteredPairs")]
    monkeypatch.setattr(table, "BY_KEY", {k: v for k, v in table.BY_KEY.items() if k != row.key})
    try:
        test_every_registered_physics_property_has_a_decision()
    except AssertionError as error:
        assert "PhysicsFilteredPairsAPI physics:filteredPairs (relationship, usd-core)" in str(error)
    else:
        raise AssertionError("a property with no row passed")
