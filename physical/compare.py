"""Pure comparisons: a reference run and a candidate run (plain data) -> PropertyResults.

No engine here. Candidate bodies and joints are addressed through a correspondence
(reference label -> candidate label), never by prim path; see physical/runtime_tests/conftest.py.
"""
from __future__ import annotations

import numpy as np

from .property_results import PropertyResult
from .settings import Thresholds


def _unmatched(mapping: dict, wanted) -> list[str]:
    return sorted(k for k in wanted if mapping.get(k) is None)


# --- (1) load and cook --------------------------------------------------------------------------

def load_and_cook(ref: dict, cand: dict, bodies: dict, th: Thresholds) -> list[PropertyResult]:
    """ref/cand: {bodies, dofs, colliders_authored, colliders_built, colliders_built_per_body{label: [prims]},
    body_mass{label}, collider_bodies[labels]}."""
    t = "load_and_cook"
    out = [PropertyResult(t, "loads", True, True, None, True)]
    out.append(PropertyResult(t, "bodies", cand["bodies"], ref["bodies"], "count", cand["bodies"] == ref["bodies"]))
    out.append(PropertyResult(t, "degrees_of_freedom", cand["dofs"], ref["dofs"], "count", cand["dofs"] == ref["dofs"]))
    out.append(_colliders_built(ref, cand, bodies))
    differ = []
    for rb in ref["body_mass"]:
        cb = bodies.get(rb)
        has_ref = rb in ref["collider_bodies"]
        has_cand = cb is not None and cb in cand["collider_bodies"]
        if has_ref != has_cand:
            differ.append({"reference_body": rb, "candidate_body": cb, "reference_collides": has_ref,
                           "candidate_collides": has_cand})
    out.append(PropertyResult(t, "collider_bodies", len(differ), 0, "bodies whose collision presence differs",
                              not differ, None, {"differ": differ}))
    worst, per_body = 0.0, {}
    for rb, rm in ref["body_mass"].items():
        cb = bodies.get(rb)
        if cb is None:
            per_body[rb] = None
            worst = float("inf")
            continue
        cm = cand["body_mass"][cb]
        err = abs(cm - rm) / max(abs(rm), 1e-12) if rm else (0.0 if not cm else float("inf"))
        per_body[rb] = {"reference_kg": rm, "candidate_kg": cm, "relative_error": err}
        worst = max(worst, err)
    out.append(PropertyResult(t, "body_masses", worst, th.body_mass_relative, "relative", worst <= th.body_mass_relative,
                              None, {"bodies": per_body, "unmatched": _unmatched(bodies, ref["body_mass"])}))
    return out


def _colliders_built(ref: dict, cand: dict, bodies: dict) -> PropertyResult:
    """Against the REFERENCE's colliders: every matched body holds at least as many built colliders as
    the reference's body (another decomposition into more pieces is fine; a lost collider is not),
    and every collider the candidate authors was built by the engine."""
    ref_per, cand_per = ref.get("colliders_built_per_body", {}), cand.get("colliders_built_per_body", {})
    short = []
    for rb, colliders in sorted(ref_per.items()):
        cb = rb if rb == "(world)" else bodies.get(rb)
        have = len(cand_per.get(cb, [])) if cb is not None else 0
        if have < len(colliders):
            short.append({"reference_body": rb, "candidate_body": cb, "reference_colliders": len(colliders),
                          "candidate_colliders": have})
    expected = sum(len(c) for c in ref_per.values())
    covered = expected - sum(s["reference_colliders"] - s["candidate_colliders"] for s in short)
    not_built = sorted(set(cand["colliders_authored"]) - set(cand["colliders_built"]))
    passed = not short and not not_built
    reason = None
    if short:
        reason = "bodies with fewer built colliders than the reference's"
    elif not_built:
        reason = "authored colliders the engine did not build"
    return PropertyResult("load_and_cook", "colliders_built", covered, expected, "reference colliders covered",
                          passed, reason, {"short": short, "not_built": not_built,
                                           "reference_not_built": sorted(set(ref["colliders_authored"])
                                                                         - set(ref["colliders_built"]))})


# --- trajectories ---------------------------------------------------------------------------------

def _worst_over_bodies(body_pairs: list[tuple[int, int | None]], ref_labels: list[str],
                       error_of) -> tuple[float, dict]:
    """Max over matched bodies of error_of(r, c), with each body's own; an unmatched body is infinite."""
    worst, per_body = 0.0, {}
    for r, c in body_pairs:
        err = float("inf") if c is None else error_of(r, c)
        per_body[ref_labels[r]] = None if c is None else err
        worst = max(worst, err)
    return worst, per_body


def position_error(ref_positions: np.ndarray, cand_positions: np.ndarray, body_pairs: list[tuple[int, int | None]],
                   ref_labels: list[str]) -> tuple[float, dict]:
    """Max over samples and matched bodies of |p_cand - p_ref| (m); an unmatched body is infinite."""
    n = min(len(ref_positions), len(cand_positions))

    def error_of(r: int, c: int) -> float:
        diff = np.linalg.norm(ref_positions[:n, r, :] - cand_positions[:n, c, :], axis=-1)
        return float(np.max(diff)) if np.all(np.isfinite(diff)) else float("inf")

    return _worst_over_bodies(body_pairs, ref_labels, error_of)


def rotation_error(ref_rotations: np.ndarray, cand_rotations: np.ndarray, body_pairs: list[tuple[int, int | None]],
                   ref_labels: list[str]) -> tuple[float, dict]:
    """Max over samples and matched bodies of the angle between world orientations (degrees)."""
    n = min(len(ref_rotations), len(cand_rotations))

    def error_of(r: int, c: int) -> float:
        a = ref_rotations[:n, r, :] / np.linalg.norm(ref_rotations[:n, r, :], axis=-1, keepdims=True)
        b = cand_rotations[:n, c, :] / np.linalg.norm(cand_rotations[:n, c, :], axis=-1, keepdims=True)
        b = b * np.where(np.sum(a * b, axis=-1, keepdims=True) < 0.0, -1.0, 1.0)   # q and -q: one rotation
        # |a - b| = 2 sin(angle / 4) for unit quaternions: exact near zero, where arccos(dot) is not
        angle = np.degrees(4.0 * np.arcsin(np.clip(np.linalg.norm(a - b, axis=-1) / 2.0, 0.0, 1.0)))
        if not angle.size:
            return 0.0
        return float(np.max(angle)) if np.all(np.isfinite(angle)) else float("inf")

    return _worst_over_bodies(body_pairs, ref_labels, error_of)


def end_speed(positions: np.ndarray, times: np.ndarray, window_s: float) -> float:
    """Max body speed over the last window: displacement / window (m/s)."""
    end = len(times) - 1
    start = int(np.searchsorted(times, times[end] - window_s - 1e-9))
    start = min(max(start, 0), end - 1) if end > 0 else 0
    span = times[end] - times[start]
    if span <= 0:
        return 0.0
    d = np.linalg.norm(positions[end] - positions[start], axis=-1)
    return float(np.max(d) / span) if d.size else 0.0


def _finite(test: str, cand: dict, later: tuple[str, ...]) -> list[PropertyResult]:
    """The test's `finite` property; when the candidate diverged, its other properties null."""
    finite = bool(np.all(np.isfinite(cand["positions"])))
    out = [PropertyResult(test, "finite", finite, True, None, finite)]
    if not finite:
        reason = "the candidate's simulation diverged (non-finite positions)"
        out += [PropertyResult(test, name, reason=reason) for name in later]
    return out


# a run "moved" when a body left its start pose by more than this: far below any threshold,
# far above the solver's round-off on a body held still
STILL_M = 1e-6
STILL_DEG = 1e-4


def _moved(run: dict) -> bool | None:
    """Whether any body left its start pose during the run; None when the start pose is unknown."""
    if "start_positions" not in run or "start_rotations" not in run:
        return None
    start_p = np.asarray(run["start_positions"], dtype=float)
    if len(start_p) and np.max(np.linalg.norm(run["positions"] - start_p[None], axis=-1)) > STILL_M:
        return True
    start_q = np.repeat(np.asarray(run["start_rotations"], dtype=float)[None], len(run["rotations"]), axis=0)
    labels = [str(i) for i in range(start_p.shape[0])]
    angle, _ = rotation_error(start_q, run["rotations"], [(i, i) for i in range(len(labels))], labels)
    return bool(angle > STILL_DEG)


def _unexercised(ref: dict, cand: dict) -> str | None:
    """The reason the rest test measured nothing, when neither run made a contact nor moved a body
    (a world-anchored asset at rest): its errors would be exactly 0 without testing anything."""
    if ref.get("contacts") == 0 and cand.get("contacts") == 0 and _moved(ref) is False and _moved(cand) is False:
        return ("not exercised: no contact and no body moved under gravity in either run "
                "(a world-anchored asset at rest)")
    return None


def rest_and_contact(ref: dict, cand: dict, body_pairs, ref_labels, size_m: float, th: Thresholds,
                     window_s: float, test: str = "rest_and_contact") -> list[PropertyResult]:
    """The drop on the ground; with test="slope_drop", the same drop with gravity tilted (a slope)."""
    t = test
    out = _finite(t, cand, ("settled", "rest_positions", "rest_rotations"))
    if not out[0].passed:
        return out
    unexercised = _unexercised(ref, cand)
    if unexercised:
        return out + [PropertyResult(t, name, reason=unexercised, details={"contacts": {
            "reference": ref.get("contacts"), "candidate": cand.get("contacts")}})
            for name in ("settled", "rest_positions", "rest_rotations")]
    ref_speed = end_speed(ref["positions"], ref["times"], window_s)
    cand_speed = end_speed(cand["positions"], cand["times"], window_s)
    limit = max(ref_speed * th.settle_speed_factor, ref_speed + th.settle_speed_abs_mps)
    out.append(PropertyResult(t, "settled", cand_speed, limit, "m/s (max body speed over the last window)",
                              cand_speed <= limit, None, {"reference_speed_mps": ref_speed, "contacts": {
                                  "reference": ref.get("contacts"), "candidate": cand.get("contacts")}}))
    final_ref, final_cand = ref["positions"][-1:], cand["positions"][-1:]
    err, per_body = position_error(final_ref, final_cand, body_pairs, ref_labels)
    tol = th.position_m(size_m)
    out.append(PropertyResult(t, "rest_positions", err, tol, "m (max body position error at the end)",
                              err <= tol, None, {"per_body_m": per_body, "asset_size_m": size_m}))
    err, per_body = rotation_error(ref["rotations"][-1:], cand["rotations"][-1:], body_pairs, ref_labels)
    out.append(PropertyResult(t, "rest_rotations", err, th.rotation_deg, "deg (max body orientation error at the end)",
                              err <= th.rotation_deg, None, {"per_body_deg": per_body}))
    return out


def dynamic_response(ref: dict, cand: dict, body_pairs, ref_labels, size_m: float, th: Thresholds,
                     program: dict) -> list[PropertyResult]:
    t = "dynamic_response"
    out = _finite(t, cand, ("trajectories", "rotations"))
    if not out[0].passed:
        return out
    err, per_body = position_error(ref["positions"], cand["positions"], body_pairs, ref_labels)
    tol = th.position_m(size_m)
    out.append(PropertyResult(t, "trajectories", err, tol, "m (max body position error over the run)",
                              err <= tol, None, {"per_body_m": per_body, "program": program, "asset_size_m": size_m}))
    err, per_body = rotation_error(ref["rotations"], cand["rotations"], body_pairs, ref_labels)
    out.append(PropertyResult(t, "rotations", err, th.rotation_deg, "deg (max body orientation error over the run)",
                              err <= th.rotation_deg, None, {"per_body_deg": per_body}))
    return out


# --- (4) joint travel -------------------------------------------------------------------------------

def joint_travel(ref: dict, cand: dict, th: Thresholds) -> list[PropertyResult]:
    """ref/cand: {joint label (reference's): {type, range, reached_max, reached_min}}; cand None where unmatched."""
    t = "joint_travel"
    worst, per_joint = 0.0, {}
    for label, r in ref.items():
        c = cand.get(label)
        span = max(r["range"], 1e-9)
        unit = "deg" if r["type"] == "revolute" else "m"
        show = (lambda v: float(np.degrees(v))) if unit == "deg" else (lambda v: float(v))
        if c is None or not np.isfinite(c["reached_max"]) or not np.isfinite(c["reached_min"]):
            per_joint[label] = {"unit": unit, "reference_reached": [show(r["reached_min"]), show(r["reached_max"])],
                                "candidate_reached": None, "relative_error": None,
                                "why": "no matching single-axis joint in the candidate" if c is None else "diverged"}
            worst = float("inf")
            continue
        err = max(abs(c["reached_max"] - r["reached_max"]), abs(c["reached_min"] - r["reached_min"])) / span
        per_joint[label] = {"unit": unit, "reference_reached": [show(r["reached_min"]), show(r["reached_max"])],
                            "candidate_reached": [show(c["reached_min"]), show(c["reached_max"])],
                            "reference_limits": [show(r["lower"]), show(r["upper"])], "relative_error": err}
        worst = max(worst, err)
    return [PropertyResult(t, "travel", worst, th.travel_relative,
                           "max |reached - reference reached| / reference range", worst <= th.travel_relative,
                           None, {"joints": per_joint})]


# --- (6) grasp and lift -------------------------------------------------------------------------------

def _slip(run: dict) -> float:
    """How far the box moved against the fingers' parent body during the lift (m): 0 when held."""
    times = np.asarray(run["times"])
    start = int(np.searchsorted(times, run["lift_starts_s"] - 1e-9))
    start = min(max(start - 1, 0), len(times) - 1)
    box = np.asarray(run["box"], dtype=float)
    relative = box - (np.asarray(run["palm"], dtype=float) if run.get("palm") is not None else 0.0)
    return float(np.linalg.norm(relative[-1] - relative[start]))


def grasp_and_lift(ref: dict, cand: dict, size_m: float, th: Thresholds, setup: dict) -> list[PropertyResult]:
    """ref/cand: {times, box (n, 3) m, palm (n, 3) m or None, fingers (n, 2) m, lift_starts_s}."""
    t = "grasp_and_lift"
    finite = bool(np.all(np.isfinite(cand["box"])) and np.all(np.isfinite(cand["fingers"])))
    out = [PropertyResult(t, "finite", finite, True, None, finite)]
    if not finite:
        return out + [PropertyResult(t, n, reason="the candidate's simulation diverged (non-finite positions)")
                      for n in ("held", "box_trajectory", "finger_positions")]
    tol = th.position_m(size_m)
    ref_slip, cand_slip = _slip(ref), _slip(cand)
    out.append(PropertyResult(t, "held", cand_slip, ref_slip + tol, "m (box slip against the fingers' body during "
                              "the lift)", cand_slip <= ref_slip + tol, None,
                              {"reference_slip_m": ref_slip, "box": setup["box"], "opening_m": setup["opening_m"],
                               "box_mass_kg": ref.get("box_mass_kg"), "finger_joints": setup["joints"],
                               "floating_root": ref.get("floating_root")}))
    n = min(len(ref["box"]), len(cand["box"]))
    error = float(np.max(np.linalg.norm(np.asarray(ref["box"])[:n] - np.asarray(cand["box"])[:n], axis=-1)))
    out.append(PropertyResult(t, "box_trajectory", error, tol, "m (max box position error over the run)",
                              error <= tol, None, {"asset_size_m": size_m}))
    ranges = np.asarray(setup["ranges_m"], dtype=float)
    finger_error = np.abs(np.asarray(ref["fingers"])[n - 1] - np.asarray(cand["fingers"])[n - 1]) / np.maximum(ranges, 1e-9)
    worst = float(np.max(finger_error))
    out.append(PropertyResult(t, "finger_positions", worst, th.travel_relative,
                              "max |finger end - reference's| / finger range", worst <= th.travel_relative, None,
                              {"per_finger": dict(zip(setup["joints"], [float(e) for e in finger_error]))}))
    return out
