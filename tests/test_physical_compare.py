"""The physical grade's pure comparisons and record helpers (no engine)."""
from __future__ import annotations

import math

import numpy as np

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
