"""The outcome rules of the README's "The command" and "Reward" sections, on synthetic test records."""
from pathlib import Path

import pytest

from usd_repair_verifier.profiles.result_record import CheckResult, GateResult
from usd_repair_verifier.scoring.reward import Expected, Status, TestRecord, TestResults
from usd_repair_verifier.scoring.reward import decide as decide_results

EXPECTED = Expected({
    "check": ("f1-a", "f2-b"),
    "validity": ("local_package",),
    "preservation": ("body_correspondence",),
    "objective": ("all_joints",),
})


def rec(kind, id_, passed, progress=None, outcome=None):
    if kind == "check":
        result = CheckResult(check=id_, family="joint", measure="frame", target="/j", passed=passed, progress=progress)
    else:
        result = GateResult.of(id_, passed, "r")
    return TestRecord(f"node::{id_}", outcome or ("passed" if passed else "failed"), kind, id_, result)


def decide(records, expected, case_error=None):
    return decide_results(TestResults.of(records), expected, case_error)


def full(checks=((True, 1.0), (True, 1.0)), valid=True, preserved=True, objective=True):
    return [
        rec("check", "f1-a", *checks[0]),
        rec("check", "f2-b", *checks[1]),
        rec("validity", "local_package", valid),
        rec("preservation", "body_correspondence", preserved),
        rec("objective", "all_joints", objective),
    ]


def test_perfect_repair_scores_one():
    d = decide(full(), EXPECTED)
    assert d.status is Status.GRADED and d.authored_usd == 1.0 and d.objective_success


def test_half_repair_is_half_fraction_and_capped_without_objective():
    d = decide(full(checks=((True, 1.0), (False, 0.5)), objective=False), EXPECTED)
    assert d.targeted_repair_fraction == 0.5
    assert d.targeted_semantic_score == 0.75
    assert d.authored_usd == pytest.approx(0.625)


def test_cap_applies_only_above_099():
    d = decide(full(objective=False), EXPECTED)
    assert d.authored_usd == 0.99 and d.objective_success is False


def test_invalid_submission_scores_zero_whatever_the_checks():
    d = decide(full(valid=False), EXPECTED)
    assert d.status is Status.INVALID and d.authored_usd == 0.0


def test_preservation_failure_scores_zero():
    d = decide(full(preserved=False), EXPECTED)
    assert d.status is Status.PRESERVATION_FAILED and d.authored_usd == 0.0


def test_missing_required_test_is_partial_without_reward():
    d = decide(full()[1:], EXPECTED)
    assert d.status is Status.PARTIAL and d.authored_usd is None and d.missing == ["check:f1-a"]


def test_errored_test_is_infrastructure_error():
    records = full()
    records[0] = TestRecord("node::f1-a", "error", None, None, None, "RuntimeError: boom")
    d = decide(records, EXPECTED)
    assert d.status is Status.INFRASTRUCTURE_ERROR and "boom" in d.infrastructure_error and d.authored_usd == 0.0


def test_crashed_worker_failure_without_result_is_infrastructure_error():
    records = full()
    records[2] = TestRecord("node::local_package", "failed", None, None, None, "worker 'gw0' crashed while running")
    assert decide(records, EXPECTED).status is Status.INFRASTRUCTURE_ERROR


def test_case_error_wins():
    d = decide(full(), EXPECTED, case_error="DigestMismatch: reference/ changed")
    assert d.status is Status.INFRASTRUCTURE_ERROR and "DigestMismatch" in d.infrastructure_error


@pytest.mark.parametrize("status, objective, expected", [
    (Status.GRADED, True, 0.995),
    (Status.GRADED, False, 0.99),                    # capped
    ("graded", False, 0.99),                         # a status as grade.json writes it
    (Status.INVALID, True, 0.0),
    (Status.PRESERVATION_FAILED, True, 0.0),
    ("closed_book_violation", True, 0.0),
    (Status.CLOSED_BOOK_UNVERIFIED, True, 0.0),
    (Status.INFRASTRUCTURE_ERROR, True, 0.0),        # the fallback, not a score
    (Status.PARTIAL, True, None),
])
def test_the_reward_rule_in_one_function(status, objective, expected):
    from usd_repair_verifier.scoring.reward import raw_reward, reward_from

    assert raw_reward(1.0, 0.99) == pytest.approx(0.995)
    assert reward_from(1.0, 0.99, status, objective) == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize("records", [full(((True, 1.0), (False, 0.4)), objective=False),
                                     full(((True, 1.0), (True, 1.0)), objective=False),
                                     full(((False, 0.2), (False, 0.6))), full(valid=False), full(preserved=False)])
def test_explain_states_the_reward_decide_gave(records):
    """explain's arithmetic derives its figures from the same rule: the reward it names is decide's."""
    from usd_repair_verifier.scoring import grade_file
    from usd_repair_verifier.scoring.readable import arithmetic

    d = decide(records, EXPECTED)
    grade = grade_file.build(d, TestResults.of(records), grade_file.GradeInputs(None, Path("/nowhere")), 1.0)
    line = arithmetic(grade)
    raw = 0.5 * d.targeted_repair_fraction + 0.5 * d.targeted_semantic_score
    assert f"= {raw:.4f}" in line
    if d.authored_usd == 0.0:
        assert line.endswith(f"{d.status.value}: reward 0")
    elif d.authored_usd < raw:
        assert line.endswith(f"capped at {d.authored_usd:g}")
    elif d.objective_success is False:
        assert line.endswith("reward R")
    else:
        assert line == line.split(";")[0]
