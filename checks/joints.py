"""Joint family: existence, graph, frame, range, state, redundant constraints.

Targets are reference joint paths; the candidate joint is found through the
correspondence (bodies and type), never by path. A candidate joint may have its
bodies the other way round: sides, axis direction and travel are compared
after undoing that ("axis sign handled").
"""
from __future__ import annotations

import math

from usd_repair_verifier.stage_snapshot import spatial
from usd_repair_verifier.stage_snapshot.model import Joint

from .articulation import problem_kind
from .measurement import Comparison, Component, boolean, log_ratio

SINGLE_AXIS = ("revolute", "prismatic")
# A drive's gains in SI, (angular, linear): a linear drive pulls with newtons per metre, an angular
# one with newton metres per degree (angular drives are in degrees by schema).
GAIN_UNITS = {"stiffness": ("N m/deg", "N/m"), "damping": ("N m s/deg", "N s/m"), "max_force": ("N m", "N")}
UNSIGNED_DOFS = ("cone", "distance")
MISSING = math.inf


def _pair(cmp: Comparison, target: str) -> tuple[Joint, Joint | None, bool]:
    """The reference joint, its candidate (or None) and whether the candidate's sides are swapped."""
    ref = cmp.reference.joints[target]
    cand_path = cmp.match.joints.get(target)
    cand = cmp.candidate.joints.get(cand_path) if cand_path else None
    if cand is None:
        return ref, None, False
    want0 = cmp.match.candidate_body(ref.body0)
    want1 = cmp.match.candidate_body(ref.body1)
    swapped = (cand.body0, cand.body1) == (want1, want0) and (want0 != want1)
    return ref, cand, swapped


def _sides(cand: Joint, swapped: bool):
    return (cand.frame1, cand.frame0) if swapped else (cand.frame0, cand.frame1)


def _direction(ref: Joint, cand: Joint, swapped: bool) -> float:
    """+1 when the candidate's travel runs the same way as the reference's, -1 when reversed."""
    if ref.type not in SINGLE_AXIS or cand.type not in SINGLE_AXIS:
        return -1.0 if swapped else 1.0
    ref_axis = spatial.world_axis(ref.frame0, ref.axis or "X")
    cand_frame0, _ = _sides(cand, swapped)
    cand_axis = spatial.world_axis(cand_frame0, cand.axis or "X")
    same = sum(a * b for a, b in zip(ref_axis, cand_axis)) >= 0.0
    return (1.0 if same else -1.0) * (-1.0 if swapped else 1.0)


def _missing(names: list[str], tolerances: list[float], units: list[str]) -> dict[str, Component]:
    return {n: Component(MISSING, t, None, "joint missing", unit=u) for n, t, u in zip(names, tolerances, units)}


def existence(cmp: Comparison, target: str):
    ref, cand, _ = _pair(cmp, target)
    return {"exists": boolean(cand is not None, ref.path, cand.path if cand else None)}


def graph(cmp: Comparison, target: str):
    ref, cand, _ = _pair(cmp, target)
    if cand is None:
        return {"bodies": boolean(False), "type": boolean(False), "relationships": boolean(False)}
    wanted = {cmp.match.candidate_body(ref.body0), cmp.match.candidate_body(ref.body1)}
    wanted_pair = [cmp.match.candidate_body(ref.body0), cmp.match.candidate_body(ref.body1)]
    have_pair = [cand.body0, cand.body1]
    bodies_ok = have_pair == wanted_pair or have_pair == wanted_pair[::-1]
    # Relative to the reference: a relationship problem the reference joint has too is its own.
    known = {problem_kind(p) for p in ref.problems}
    new_problems = [p for p in cand.problems if problem_kind(p) not in known]
    out = {
        "bodies": boolean(bodies_ok, sorted(map(str, wanted)), [str(b) for b in have_pair]),
        "type": boolean(ref.type == cand.type, ref.type, cand.type),
        "relationships": boolean(not new_problems, list(ref.problems), list(cand.problems)),
    }
    if cand.body0 is not None and cand.body0 == cand.body1 and not (ref.body0 is not None and ref.body0 == ref.body1):
        # A joint between a body and itself constrains nothing: invalid, whatever else matches.
        out["distinct_bodies"] = Component(1.0, 0.0, [ref.body0, ref.body1], [cand.body0, cand.body1], True, "flag")
    return out


def frame(cmp: Comparison, target: str):
    ref, cand, swapped = _pair(cmp, target)
    tol_m = cmp.tolerances["joint_position_m"]
    tol_deg = cmp.tolerances["joint_angle_deg"]
    single_axis = ref.type in SINGLE_AXIS
    angle_name = "axis_deg" if single_axis else "rotation_deg"
    names = ["position_m", angle_name, "sides_position_m", "sides_angle_deg"]
    if cand is None:
        return _missing(names, [tol_m, tol_deg, tol_m, tol_deg], ["m", "deg", "m", "deg"])
    c0, c1 = _sides(cand, swapped)
    position = max(
        spatial.distance(ref.frame0.position, c0.position),
        spatial.distance(ref.frame1.position, c1.position),
    )
    if single_axis:
        angles = []
        for r, c in ((ref.frame0, c0), (ref.frame1, c1)):
            a = spatial.vector_angle_deg(spatial.world_axis(r, ref.axis or "X"), spatial.world_axis(c, cand.axis or "X"))
            angles.append(min(a, 180.0 - a))  # an axis is a line: its sign is the range check's business
        angle = max(angles)
    else:
        angle = max(
            spatial.rotation_angle_deg(ref.frame0.rotation, c0.rotation),
            spatial.rotation_angle_deg(ref.frame1.rotation, c1.rotation),
        )
    ref_gap = spatial.distance(ref.frame0.position, ref.frame1.position)
    cand_gap = spatial.distance(cand.frame0.position, cand.frame1.position)
    ref_twist = spatial.rotation_angle_deg(ref.frame0.rotation, ref.frame1.rotation)
    cand_twist = spatial.rotation_angle_deg(cand.frame0.rotation, cand.frame1.rotation)
    return {
        "position_m": Component(position, tol_m, list(ref.frame0.position), list(c0.position), unit="m", value_unit="m"),
        angle_name: Component(angle, tol_deg, unit="deg"),
        # The two sides of a joint agree at rest; the reference's own disagreement is allowed.
        "sides_position_m": Component(max(0.0, cand_gap - ref_gap), tol_m, ref_gap, cand_gap, unit="m", value_unit="m"),
        "sides_angle_deg": Component(max(0.0, cand_twist - ref_twist), tol_deg, ref_twist, cand_twist, unit="deg",
                                     value_unit="deg"),
    }


SINGLE_AXIS_DOFS = ("angular", "linear")


def _linear(joint: Joint, dof: str) -> bool:
    return joint.linear or dof.startswith("Trans") or dof == "linear"


def _travel_tolerance(cmp: Comparison, joint: Joint, dof: str) -> float:
    return cmp.tolerances["limit_linear_m" if _linear(joint, dof) else "limit_angle_deg"]


def _travel_unit(joint: Joint, dof: str) -> str:
    return "m" if _linear(joint, dof) else "deg"


def range_(cmp: Comparison, target: str):
    ref, cand, swapped = _pair(cmp, target)
    components = {}
    if cand is None:
        for limit in ref.limits:
            t, u = _travel_tolerance(cmp, ref, limit.dof), _travel_unit(ref, limit.dof)
            components.update(_missing([f"{limit.dof}.lower", f"{limit.dof}.upper"], [t, t], [u, u]))
        return components or {"limited": boolean(False, "unlimited", "joint missing")}
    sign = _direction(ref, cand, swapped)
    cand_limits = {}
    inverted_in_reference = {lim.dof for lim in ref.limits if lim.lower > lim.upper}
    for limit in cand.limits:
        if limit.dof in SINGLE_AXIS_DOFS and limit.lower > limit.upper and limit.dof not in inverted_in_reference:
            # Inverted limits of a revolute or prismatic joint admit no position at all: invalid in
            # itself, not a nearer repair. (A D6 axis with lower > upper is locked, by the schema;
            # a cone's two half-angles are magnitudes.)
            components[f"{_dof_key(ref, limit.dof)}.ordered"] = Component(
                1.0, 0.0, "lower <= upper", [limit.lower, limit.upper], True, "flag")
        # Cone half-angles and distances are magnitudes: swapping the bodies leaves them as they are.
        signed = limit.dof not in UNSIGNED_DOFS
        lower, upper = (limit.lower, limit.upper) if sign > 0 or not signed else (-limit.upper, -limit.lower)
        cand_limits[_dof_key(ref, limit.dof)] = (lower, upper)
    for limit in ref.limits:
        key = _dof_key(ref, limit.dof)
        t, u = _travel_tolerance(cmp, ref, limit.dof), _travel_unit(ref, limit.dof)
        got = cand_limits.pop(key, None)
        if got is None:
            components[f"{key}.lower"] = Component(MISSING, t, limit.lower, None, unit=u, value_unit=u)
            components[f"{key}.upper"] = Component(MISSING, t, limit.upper, None, unit=u, value_unit=u)
            continue
        components[f"{key}.lower"] = Component(_limit_error(limit.lower, got[0]), t, limit.lower, got[0], unit=u,
                                               value_unit=u)
        components[f"{key}.upper"] = Component(_limit_error(limit.upper, got[1]), t, limit.upper, got[1], unit=u,
                                               value_unit=u)
    for key, got in sorted(cand_limits.items()):
        components[f"{key}.unexpected_limit"] = boolean(False, None, list(got))
    return components or {"limited": boolean(True, "unlimited", "unlimited")}


def _dof_key(ref: Joint, dof: str) -> str:
    # revolute/prismatic limits of a type-changed candidate still compare as "the travel"
    return "travel" if dof in ("angular", "linear") else dof


def _limit_error(a: float, b: float) -> float:
    if math.isinf(a) or math.isinf(b):
        return 0.0 if a == b else MISSING
    return abs(a - b)


def state(cmp: Comparison, target: str):
    ref, cand, swapped = _pair(cmp, target)
    flags = ("enabled", "collision_enabled", "exclude_from_articulation")
    if cand is None:
        return {f: boolean(False, getattr(ref, f), None) for f in flags}
    components = {f: boolean(getattr(ref, f) == getattr(cand, f), getattr(ref, f), getattr(cand, f)) for f in flags}
    sign = _direction(ref, cand, swapped)
    cand_drives = {_dof_key(ref, d.dof): d for d in cand.drives}
    rel_tol = math.log1p(cmp.tolerances["drive_relative"])
    for drive in ref.drives:
        key = _dof_key(ref, drive.dof)
        got = cand_drives.pop(key, None)
        components[f"drive.{key}.present"] = boolean(got is not None, True, got is not None)
        if got is None:
            continue
        t, u = _travel_tolerance(cmp, ref, drive.dof), _travel_unit(ref, drive.dof)
        components[f"drive.{key}.kind"] = boolean(drive.kind == got.kind, drive.kind, got.kind)
        components[f"drive.{key}.target_position"] = Component(
            abs(drive.target_position - sign * got.target_position), t, drive.target_position, sign * got.target_position,
            unit=u, value_unit=u)
        components[f"drive.{key}.target_velocity"] = Component(
            abs(drive.target_velocity - sign * got.target_velocity), t, drive.target_velocity, sign * got.target_velocity,
            unit=u, value_unit=f"{u}/s")
        for gain in ("stiffness", "damping", "max_force"):
            a, b = getattr(drive, gain), getattr(got, gain)
            components[f"drive.{key}.{gain}"] = Component(log_ratio(a, b), rel_tol, a, b, unit="log_ratio",
                                                         value_unit=GAIN_UNITS[gain][u == "m"])
    for key in sorted(cand_drives):
        components[f"drive.{key}.unexpected"] = boolean(False, None, True)
    return components


def redundant(cmp: Comparison, target: str):
    """Candidate joints beyond the reference's between the bodies this reference joint joins.

    A joint from one of those bodies to itself counts too: breaking the original of a
    duplicated pair leaves the duplicate in its place and a degenerate joint, not a repair.
    """
    ref = cmp.reference.joints[target]
    pair = {cmp.match.candidate_body(ref.body0), cmp.match.candidate_body(ref.body1)}
    extra = [
        path
        for path in cmp.match.extra_joints
        if {cmp.candidate.joints[path].body0, cmp.candidate.joints[path].body1} <= pair
    ]
    return {"extra_joints": Component(float(len(extra)), 0.0, 0, sorted(extra), unit="count")}


MEASURES = {
    "existence": existence,
    "graph": graph,
    "frame": frame,
    "range": range_,
    "state": state,
    "redundant": redundant,
}


def targets(reference, measure: str | None = None) -> list[str]:
    return list(reference.joints)
