"""The family table's entries are keyword-only and typed, and a table that contradicts itself is
refused at import with the entry named, also under `python -O` (no `assert` does the checking)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from usd_repair_verifier.profiles import families
from usd_repair_verifier.profiles.families import FaultKind, KnockOn, Measure, Relation, TargetKind

BAD_TABLES = {
    "unknown knock-on family": ("measure mass.mass", "knock-on on unknown family 'nothing'"),
    "tolerance nobody reads": ("family 'mass'", "declares tolerances no measure reads: ['unused_m']"),
    "injector without function": (f"fault kind '{families.BY_NAME['mass'].fault_kinds[0].name}'",
                                  "is not 'module:function'"),
}


def _broken(name: str) -> tuple:
    """FAMILIES with one contradiction in the mass family."""
    mass = families.BY_NAME["mass"]
    if name == "unknown knock-on family":
        first = mass.measures[0]
        measures = (Measure(name=first.name, target_kind=first.target_kind, objective_gate=first.objective_gate,
                            preservation_gate=first.preservation_gate, tolerances=first.tolerances,
                            knock_on=(KnockOn(relation=Relation.SAME, family="nothing"),)), *mass.measures[1:])
        mass = families.Family(**{**mass.__dict__, "measures": measures})
    elif name == "tolerance nobody reads":
        mass = families.Family(**{**mass.__dict__, "tolerances": {**mass.tolerances, "unused_m": 1.0}})
    else:
        kind = mass.fault_kinds[0]
        kinds = (FaultKind(**{**kind.__dict__, "injector": "usd_repair_verifier.authoring.inject.mass"}),
                 *mass.fault_kinds[1:])
        mass = families.Family(**{**mass.__dict__, "fault_kinds": kinds})
    return tuple(mass if f.name == "mass" else f for f in families.FAMILIES)


@pytest.mark.parametrize("name", sorted(BAD_TABLES))
def test_a_contradiction_names_its_entry(monkeypatch, name) -> None:
    table = _broken(name)
    monkeypatch.setattr(families, "FAMILIES", table)
    monkeypatch.setattr(families, "BY_NAME", {f.name: f for f in table})
    entry, problem = BAD_TABLES[name]
    with pytest.raises(families.FamilyTableError) as raised:
        families._check_table()
    assert entry in str(raised.value) and problem in str(raised.value), str(raised.value)


def test_the_check_survives_python_minus_o() -> None:
    code = textwrap.dedent('''
        from usd_repair_verifier.profiles import families
        mass = families.BY_NAME["mass"]
        bad = families.Family(**{**mass.__dict__, "tolerances": {**mass.tolerances, "unused_m": 1.0}})
        families.FAMILIES = tuple(bad if f.name == "mass" else f for f in families.FAMILIES)
        families.BY_NAME = {f.name: f for f in families.FAMILIES}
        try:
            families._check_table()
        except families.FamilyTableError as error:
            print("refused:", error)
    ''')
    run = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "refused: profiles/families.py, family 'mass': declares tolerances no measure reads" in run.stdout


def test_entries_take_keywords_only_and_typed_kinds() -> None:
    with pytest.raises(TypeError):
        Measure("mass", "body")   # noqa  positional arguments are refused
    for family in families.FAMILIES:
        assert all(isinstance(m.target_kind, TargetKind) for m in family.measures), family.name
        assert all(isinstance(k.target, TargetKind) for k in family.fault_kinds), family.name
        assert all(isinstance(k.relation, Relation) for m in family.measures for k in m.knock_on), family.name
        assert isinstance(family.scope, families.Scope), family.name
