"""Grading arithmetic shared by every family: pass/fail, progress, log-ratios."""
import math

import pytest

from usd_repair_verifier.checks.measurement import MAX_LOG_RATIO, Component, Unmeasured, component_progress, grade, log_ratio


def test_component_progress_is_one_within_tolerance_and_zero_at_input_error():
    assert component_progress(0.001, 0.001, 0.5) == 1.0
    assert component_progress(0.5, 0.001, 0.5) == 0.0
    assert component_progress(0.2505, 0.001, 0.5) == pytest.approx(0.5)


def test_the_inputs_error_in_other_last_bits_is_no_progress():
    """The same broken geometry measured by another numpy build: not a repair."""
    assert component_progress(0.009148486447648832, 0.001, 0.009148486447648839) == 0.0
    assert component_progress(0.5 * (1 - 1e-10), 0.001, 0.5) == 0.0
    # a surface fit's ICP on another build: cheetah_visual_and_shape's input residual, measured twice
    assert component_progress(0.010679006652453072, 0.001, 0.010679054639502453) == 0.0
    assert component_progress(0.5 * (1 - 1e-3), 0.001, 0.5) > 0.0   # a real, if small, improvement counts


def test_component_progress_never_negative_when_worse_than_input():
    assert component_progress(0.9, 0.001, 0.5) == 0.0


def test_newly_broken_component_counts_against_progress():
    # input: a broken, b healthy; candidate fixes a but breaks b -> mean(1, 0)
    m = grade("c", "joint", "frame", "/j", {"a": Component(0.0, 0.1), "b": Component(1.0, 0.1)}, {"a": 1.0, "b": 0.0})
    assert m.passed is False
    assert m.progress == pytest.approx(0.5)


def test_unchanged_input_scores_zero_progress():
    m = grade("c", "joint", "frame", "/j", {"a": Component(1.0, 0.1), "b": Component(0.0, 0.1)}, {"a": 1.0, "b": 0.0})
    assert m.progress == 0.0 and m.passed is False


def test_infinite_input_error_gives_boolean_progress():
    assert component_progress(0.5, 0.1, math.inf) == 0.0
    assert component_progress(0.05, 0.1, math.inf) == 1.0


def test_nan_error_never_passes():
    m = grade("c", "joint", "frame", "/j", {"a": Component(float("nan"), 0.1)}, {"a": 1.0})
    assert m.passed is False and m.progress == 0.0


def test_unmeasured_is_neither_pass_nor_fail():
    m = grade("c", "mass", "mass", "/b", Unmeasured("reference has no authored mass"), None)
    assert m.passed is None and m.progress is None and "unmeasured" in m.details


def test_non_targeted_measurement_has_no_progress():
    m = grade("c", "joint", "frame", "/j", {"a": Component(0.0, 0.1)}, None)
    assert m.passed is True and m.progress is None


def test_log_ratio():
    assert log_ratio(2.0, 2.0) == 0.0
    assert log_ratio(1000.0, 1.0) == pytest.approx(math.log(1000.0))
    assert log_ratio(0.0, 1.0) == MAX_LOG_RATIO
    assert log_ratio(-1.0, 1.0) == MAX_LOG_RATIO
