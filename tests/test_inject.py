"""Every fault kind: injected where it is the effective opinion, reproducible byte for byte."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from usd_repair_verifier.checks.measurement import Comparison
from usd_repair_verifier.checks.registry import measure
from usd_repair_verifier.authoring.inject import INJECTORS, inject, root_layer_of
from usd_repair_verifier.profiles.vocabulary import DEFAULT_SAMPLING, DEFAULT_TOLERANCES, FAULT_KINDS
from usd_repair_verifier.stage_snapshot.correspondence import correspond
from usd_repair_verifier.stage_snapshot.read import read_snapshot

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"


def example_of(kind: str) -> tuple[Path, str]:
    """A committed case's reference package and target for this kind (the case suite covers every kind)."""
    for profile_path in sorted(CASES.glob("*/profile.json")):
        for fault in json.loads(profile_path.read_text())["faults"]:
            if fault["kind"] == kind:
                return profile_path.parent / "reference", fault["target"]
    raise LookupError(kind)


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_every_fault_kind_has_an_injector():
    assert set(FAULT_KINDS) == set(INJECTORS)


@pytest.mark.parametrize("kind", sorted(FAULT_KINDS))
def test_fault_is_effective_and_reproducible(kind, tmp_path):
    reference, target = example_of(kind)
    inject(reference, tmp_path / "a", [(kind, target)], seed=5)
    inject(reference, tmp_path / "b", [(kind, target)], seed=5)
    assert files(tmp_path / "a") == files(tmp_path / "b")
    # Effective: the composed stage shows it, so the kind's checks fail on the broken copy.
    ref = read_snapshot(root_layer_of(reference), DEFAULT_SAMPLING)
    broken = read_snapshot(root_layer_of(tmp_path / "a"), DEFAULT_SAMPLING)
    cmp = Comparison(ref, broken, correspond(ref, broken), dict(DEFAULT_TOLERANCES))
    results = [measure(cmp, family, name, target) for family, name in FAULT_KINDS[kind].checks]
    assert any(m.passed is False for m in results), [m.details for m in results]
    # The rest of the package is kept: at most the layers holding the faulted opinions change
    # (body_hierarchy alone flattens the package into its root layer).
    changed = [name for name, data in files(tmp_path / "a").items() if files(reference).get(name) != data]
    assert changed and (kind == "body_hierarchy" or len(changed) <= 3), changed
