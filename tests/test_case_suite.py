"""Every committed case grades as it must: the reference 1.0 with objective
success, the unchanged input 0, and each single-fault repair strictly between
with F = (repaired faults' checks) / (all checks). Each is the operator's session graded in
this process by the warm grader (tests/grade_in_process.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.build_cases import CASE_TABLE, SEED
from usd_repair_verifier.authoring.inject import inject
from usd_repair_verifier.profiles.schema import load_profile
from tests.grade_in_process import grade_warm
from tests.inner_loop import CASES_IN_THE_INNER_LOOP, SINGLE_REPAIRS_IN_THE_INNER_LOOP, representatives

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
ASSETS = ROOT / "fixtures" / "assets"


def test_every_case_in_the_table_is_committed():
    assert sorted(p.name for p in CASES.iterdir() if p.is_dir()) == sorted(CASE_TABLE)


@pytest.mark.parametrize("case_id", representatives(sorted(CASE_TABLE), CASES_IN_THE_INNER_LOOP))
def test_reference_and_input(case_id, tmp_path):
    ref = grade_warm(CASES / case_id, CASES / case_id / "reference", tmp_path / "ref")
    assert ref.exit_code == 0 and ref.reward == {"authored_usd": 1.0}, (ref.grade or {}).get("reasons")
    assert ref.grade["objective_success"] is True
    inp = grade_warm(CASES / case_id, CASES / case_id / "input", tmp_path / "input")
    assert inp.exit_code == 0 and inp.reward == {"authored_usd": 0.0}
    assert all(c["passed"] is False for c in inp.grade["checks"])


# In a one-fault case, repairing its fault is the reference (test_reference_and_input).
SINGLE_REPAIRS = [(case_id, i) for case_id, (_, faults) in sorted(CASE_TABLE.items()) if len(faults) > 1
                  for i in range(len(faults))]


@pytest.mark.parametrize("case_id, repaired", representatives(
    SINGLE_REPAIRS, [r for r in SINGLE_REPAIRS if r[0] in SINGLE_REPAIRS_IN_THE_INNER_LOOP],
    ids=[f"{c}-f{i + 1}" for c, i in SINGLE_REPAIRS]))
def test_single_fault_repair_scores_strictly_between(case_id, repaired, tmp_path):
    asset, faults = CASE_TABLE[case_id]
    left = [(kind, target) for i, (_, kind, target) in enumerate(faults) if i != repaired]
    inject(ASSETS / asset, tmp_path / "submission", left, SEED)
    r = grade_warm(CASES / case_id, tmp_path / "submission", tmp_path / "out")
    g = r.grade
    assert r.exit_code == 0 and g["status"] == "graded", g["reasons"]
    profile = load_profile(CASES / case_id / "profile.json")
    fault_id = faults[repaired][0]
    ours = [c for c in profile.checks if c.fault == fault_id]
    assert g["targeted_repair_fraction"] == pytest.approx(len(ours) / len(profile.checks))
    # The repaired fault's checks are at tolerance (progress 1), the others unchanged from the input (0).
    assert g["targeted_semantic_score"] == pytest.approx(len(ours) / len(profile.checks))
    passed = {c["id"]: c["passed"] for c in g["checks"]}
    assert all(passed[c.id] for c in ours)
    assert not any(passed[c.id] for c in profile.checks if c.fault != fault_id)
    assert 0.0 < r.reward["authored_usd"] < 1.0
