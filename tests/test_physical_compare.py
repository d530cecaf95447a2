"""The physical grade's pure comparisons and record helpers (no engine)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from usd_repair_verifier.physical import compare
from usd_repair_verifier.physical.property_results import PROPERTIES, TESTS, PropertyResult, nulls
from usd_repair_verifier.physical.settings import THRESHOLDS, Thresholds


def cook(bodies=2, dofs=1, masses=(1.0, 2.0), colliding=("/a", "/b"), authored=("/a/c", "/b/c"), built=None):
    built = list(authored if built is None else built)
    per_body = {}
    for c in built:
        per_body.setdefault(c.rsplit("/", 1)[0], []).append(c)
    return {"bodies": bodies, "dofs": dofs, "colliders_authored": list(authored), "colliders_built": built,
            "colliders_built_per_body": per_body,
            "body_mass": dict(zip(("/a", "/b"), masses)), "collider_bodies": list(colliding)}


def by_name(results):
    return {r.name: r for r in results}


def test_identical_cook_passes():
    r = by_name(compare.load_and_cook(cook(), cook(), {"/a": "/a", "/b": "/b"}, THRESHOLDS))
    assert all(p.passed for p in r.values())


def test_cook_compares_through_the_correspondence_not_paths():
    cand = cook(colliding=("/x", "/y"))
    cand["body_mass"] = {"/x": 1.0, "/y": 2.0}
    r = by_name(compare.load_and_cook(cook(), cand, {"/a": "/x", "/b": "/y"}, THRESHOLDS))
    assert r["body_masses"].passed and r["collider_bodies"].passed


def test_mass_factor_and_lost_colliders_fail_with_figures():
    r = by_name(compare.load_and_cook(cook(), cook(masses=(1.0, 2000.0), colliding=("/a",)),
                                      {"/a": "/a", "/b": "/b"}, THRESHOLDS))
    assert r["body_masses"].passed is False and math.isclose(r["body_masses"].value, 999.0)
    assert r["collider_bodies"].passed is False and r["collider_bodies"].value == 1


def test_unbuilt_collider_fails():
    r = by_name(compare.load_and_cook(cook(), cook(built=("/a/c",)), {"/a": "/a", "/b": "/b"}, THRESHOLDS))
    assert r["colliders_built"].passed is False and r["colliders_built"].details["not_built"] == ["/b/c"]


def test_a_candidate_that_lost_a_collider_fails_against_the_reference():
    """The candidate builds every collider it authors, but it authors one fewer than the reference."""
    lost = cook(authored=("/a/c",), colliding=("/a", "/b"))
    r = by_name(compare.load_and_cook(cook(), lost, {"/a": "/a", "/b": "/b"}, THRESHOLDS))
    assert r["colliders_built"].passed is False
    assert (r["colliders_built"].value, r["colliders_built"].threshold) == (1, 2)
    assert r["colliders_built"].details["short"][0]["reference_body"] == "/b"
    # the same colliders under other names, or split in more pieces, pass
    split = cook(authored=("/x/c", "/y/c1", "/y/c2"), colliding=("/x", "/y"))
    split["body_mass"] = {"/x": 1.0, "/y": 2.0}
    r = by_name(compare.load_and_cook(cook(), split, {"/a": "/x", "/b": "/y"}, THRESHOLDS))
    assert r["colliders_built"].passed is True and r["colliders_built"].value == 2


def run(positions, dt=0.02, rotations=None):
    positions = np.asarray(positions, dtype=float)
    if rotations is None:
        rotations = np.tile([0.0, 0.0, 0.0, 1.0], positions.shape[:2] + (1,))
    return {"times": dt * np.arange(1, len(positions) + 1), "positions": positions,
            "rotations": np.asarray(rotations, dtype=float)}


def test_rest_positions_and_settling():
    still = run([[[0, 0, 0.0]]] * 10)
    moving = run([[[0.01 * k, 0, 0]] for k in range(10)])        # 0.5 m/s
    r = by_name(compare.rest_and_contact(still, moving, [(0, 0)], ["/a"], 1.0, THRESHOLDS, 0.1))
    assert r["settled"].passed is False and math.isclose(r["settled"].value, 0.5)
    assert r["rest_positions"].passed is False and math.isclose(r["rest_positions"].value, 0.09)
    r = by_name(compare.rest_and_contact(still, still, [(0, 0)], ["/a"], 1.0, THRESHOLDS, 0.1))
    assert all(p.passed for p in r.values())


def anchored(positions, contacts=0, start=(0.0, 0.0, 0.0)):
    out = run(positions)
    out.update(contacts=contacts, start_positions=np.array([start]), start_rotations=np.array([[0.0, 0.0, 0.0, 1.0]]))
    return out


def test_a_rest_run_where_nothing_happened_is_null_not_a_pass():
    """A world-anchored asset: no contact, no body moves in either run. Error 0 would test nothing."""
    still = anchored([[[0, 0, 0.0]]] * 10)
    r = by_name(compare.rest_and_contact(still, still, [(0, 0)], ["/a"], 1.0, THRESHOLDS, 0.1))
    assert r["finite"].passed is True
    for name in ("settled", "rest_positions", "rest_rotations"):
        assert r[name].passed is None and r[name].value is None and "not exercised" in r[name].reason
    # the candidate falls (it lost its anchor): that is measured, and fails
    falling = anchored([[[0, 0, -0.05 * k]] for k in range(10)])
    r = by_name(compare.rest_and_contact(still, falling, [(0, 0)], ["/a"], 1.0, THRESHOLDS, 0.1))
    assert r["rest_positions"].passed is False and r["settled"].passed is False
    # a contact in either run exercises the test even when nothing moves
    touching = anchored([[[0, 0, 0.0]]] * 10, contacts=4)
    r = by_name(compare.rest_and_contact(touching, still, [(0, 0)], ["/a"], 1.0, THRESHOLDS, 0.1))
    assert r["rest_positions"].passed is True and r["rest_positions"].value == 0.0
    assert r["settled"].details["contacts"] == {"reference": 4, "candidate": 0}
    # a body turning in place has moved
    half = math.sin(math.radians(5))
    turned = anchored([[[0, 0, 0.0]]] * 10)
    turned["rotations"] = np.array([[[0, 0, half, math.cos(math.radians(5))]]] * 10)
    r = by_name(compare.rest_and_contact(still, turned, [(0, 0)], ["/a"], 1.0, THRESHOLDS, 0.1))
    assert r["rest_rotations"].passed is False


def test_divergence_and_unmatched_bodies():
    still = run([[[0, 0, 0.0]]] * 3)
    nan = run([[[np.nan, 0, 0]]] * 3)
    r = by_name(compare.rest_and_contact(still, nan, [(0, 0)], ["/a"], 1.0, THRESHOLDS, 0.1))
    assert r["finite"].passed is False and r["settled"].passed is None and "diverged" in r["settled"].reason
    r = by_name(compare.dynamic_response(still, still, [(0, None)], ["/a"], 1.0, THRESHOLDS, {}))
    assert r["trajectories"].passed is False and r["trajectories"].details["per_body_m"] == {"/a": None}


def test_a_body_spinning_in_place_fails_on_rotation_only():
    still = run([[[0, 0, 0.0]]] * 3)
    half = math.sin(math.radians(5))         # 10 degrees about z
    turned = run([[[0, 0, 0.0]]] * 3, rotations=[[[0, 0, half, math.cos(math.radians(5))]]] * 3)
    r = by_name(compare.dynamic_response(still, turned, [(0, 0)], ["/a"], 1.0, THRESHOLDS, {}))
    assert r["trajectories"].passed is True
    assert r["rotations"].passed is False and math.isclose(r["rotations"].value, 10.0, rel_tol=1e-6)
    r = by_name(compare.rest_and_contact(still, turned, [(0, 0)], ["/a"], 1.0, THRESHOLDS, 0.1))
    assert r["rest_rotations"].passed is False and r["rest_positions"].passed is True


def test_position_threshold_scales_with_asset_size():
    th = Thresholds()
    assert th.position_m(0.1) == th.position_abs_m
    assert th.position_m(10.0) == th.position_relative_to_size * 10.0


def test_joint_travel_relative_to_the_reference_range():
    ref = {"j": {"type": "revolute", "range": 2.0, "lower": -1.0, "upper": 1.0, "reached_max": 1.0, "reached_min": -1.0}}
    same = compare.joint_travel(ref, ref, THRESHOLDS)[0]
    assert same.passed and same.value == 0.0
    short = {"j": dict(ref["j"], reached_max=0.0175, reached_min=-0.0175)}
    r = compare.joint_travel(ref, short, THRESHOLDS)[0]
    assert r.passed is False and math.isclose(r.value, (1 - 0.0175) / 2.0)
    assert math.isclose(r.details["joints"]["j"]["candidate_reached"][1], math.degrees(0.0175))
    r = compare.joint_travel(ref, {"j": None}, THRESHOLDS)[0]
    assert r.passed is False and r.details["joints"]["j"]["candidate_reached"] is None


def test_nulls_cover_every_property_with_the_reason():
    n = nulls("engine not installed: x")
    assert len(n) == sum(len(PROPERTIES[t]) for t in TESTS)
    assert all(p.passed is None and p.value is None and p.reason == "engine not installed: x" for p in n)


def test_results_are_json_safe_and_rounded():
    p = PropertyResult("t", "n", float("inf"), 0.1 + 0.2, passed=False, details={"a": np.float64(1 / 3)}).to_json()
    assert p["value"] == "inf" and p["threshold"] == 0.3 and p["details"]["a"] == 0.333333333


# --- slope drop and grasp and lift ----------------------------------------------------------------

def grasp_run(box_drop_m: float = 0.0, fingers=(0.01, 0.01), diverge=False) -> dict:
    times = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    palm = np.array([[0.0, 0.0, 0.5 + 0.1 * max(t - 0.3, 0.0)] for t in times])
    box = palm - [0.0, 0.0, 0.07]
    box[-1, 2] -= box_drop_m
    if diverge:
        box[-1, 2] = np.nan
    return {"times": times, "box": box, "palm": palm, "fingers": np.tile(fingers, (len(times), 1)),
            "lift_starts_s": 0.3, "floating_root": True, "box_mass_kg": 0.005}


SETUP = {"box": {"center": [0, 0, 0.43]}, "opening_m": 0.035, "joints": ["/j/left", "/j/right"],
         "ranges_m": [0.015, 0.015]}


def test_a_held_box_passes_and_a_dropped_one_fails_on_slip_and_path():
    held = by_name(compare.grasp_and_lift(grasp_run(), grasp_run(), 0.1, THRESHOLDS, SETUP))
    assert all(p.passed for p in held.values()) and held["held"].value == 0.0
    dropped = by_name(compare.grasp_and_lift(grasp_run(), grasp_run(box_drop_m=0.2), 0.1, THRESHOLDS, SETUP))
    assert dropped["held"].passed is False and dropped["held"].value == pytest.approx(0.2)
    assert dropped["box_trajectory"].passed is False and dropped["finger_positions"].passed is True


def test_the_slip_bound_is_the_reference_slip_plus_the_position_bound():
    r = by_name(compare.grasp_and_lift(grasp_run(box_drop_m=0.05), grasp_run(box_drop_m=0.055), 0.1, THRESHOLDS, SETUP))
    assert r["held"].threshold == pytest.approx(0.05 + THRESHOLDS.position_m(0.1)) and r["held"].passed is True


def test_fingers_that_end_elsewhere_fail_as_a_share_of_their_range():
    r = by_name(compare.grasp_and_lift(grasp_run(), grasp_run(fingers=(0.01, 0.0125)), 0.1, THRESHOLDS, SETUP))
    assert r["finger_positions"].passed is False and r["finger_positions"].value == pytest.approx(0.0025 / 0.015)


def test_a_diverged_grasp_is_finite_false_and_the_rest_null():
    r = by_name(compare.grasp_and_lift(grasp_run(), grasp_run(diverge=True), 0.1, THRESHOLDS, SETUP))
    assert r["finite"].passed is False
    assert all(r[n].passed is None and "diverged" in r[n].reason for n in ("held", "box_trajectory", "finger_positions"))


def test_the_slope_drop_is_judged_like_the_rest_test_under_its_own_name():
    from usd_repair_verifier.physical import probes

    g = probes.tilted(15.0)(np.array([0.0, 0.0, -9.81]))
    assert np.linalg.norm(g) == pytest.approx(9.81)
    assert math.degrees(math.acos(-g[2] / 9.81)) == pytest.approx(15.0)
    times = np.array([0.5, 1.0])
    run = {"times": times, "positions": np.zeros((2, 1, 3)), "rotations": np.tile([0, 0, 0, 1.0], (2, 1, 1)),
           "contacts": 3}
    results = compare.rest_and_contact(run, run, [(0, 0)], ["/a"], 1.0, THRESHOLDS, 0.1, test="slope_drop")
    assert [r.test for r in results] == ["slope_drop"] * 4 and all(r.passed for r in results)
    assert [r.name for r in results] == list(PROPERTIES["slope_drop"])


def test_only_named_reasons_are_not_applicable():
    from usd_repair_verifier.physical.property_results import not_applicable

    assert not_applicable("no gripper: no two prismatic fingers")
    assert not_applicable("not exercised: no contact")
    assert not not_applicable("reference itself unloadable: the MuJoCo solver refused the model")
    assert not not_applicable(None)
