"""One measured property of one runtime test: value, threshold, pass or fail, or null with a reason."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

TESTS = ("load_and_cook", "rest_and_contact", "dynamic_response", "joint_travel", "slope_drop", "grasp_and_lift")
PROPERTIES = {
    "load_and_cook": ("loads", "bodies", "degrees_of_freedom", "colliders_built", "collider_bodies", "body_masses"),
    "rest_and_contact": ("finite", "settled", "rest_positions", "rest_rotations"),
    "dynamic_response": ("finite", "trajectories", "rotations"),
    "joint_travel": ("travel",),
    "slope_drop": ("finite", "settled", "rest_positions", "rest_rotations"),
    "grasp_and_lift": ("finite", "held", "box_trajectory", "finger_positions"),
}


# Why a property of a loaded asset may stay null and still be what the asset is, not an engine failure:
# a test that does not apply (docs/separate-grades.md, "Null, with the reason").
NOT_APPLICABLE = (
    "no gripper",                                   # grasp_and_lift: no two facing prismatic fingers
    "not exercised",                                # rest/slope drop of a world-anchored asset at rest
    "the reference has no revolute or prismatic joint",
    "the reference has no limited revolute or prismatic joint",
)


def not_applicable(reason: str | None) -> bool:
    return bool(reason) and reason.startswith(NOT_APPLICABLE)


@dataclass(frozen=True)
class PropertyResult:
    test: str
    name: str
    value: object = None          # the candidate's measured figure (None when not measured)
    threshold: object = None      # what it was judged against
    unit: str | None = None
    passed: bool | None = None    # None: not measured
    reason: str | None = None     # why null (or, on failure, what differs)
    details: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        out = asdict(self)
        out["value"] = _clean(out["value"])
        out["threshold"] = _clean(out["threshold"])
        out["details"] = _clean(out["details"])
        return out


def null(test: str, name: str, reason: str) -> PropertyResult:
    return PropertyResult(test, name, reason=reason)


def nulls(reason: str) -> list[PropertyResult]:
    """Every property of every test, unmeasured for one reason (engine absent, invalid submission...)."""
    return [null(t, n, reason) for t in TESTS for n in PROPERTIES[t]]


def _clean(value):
    """JSON-safe and stable: floats rounded to 9 significant digits, non-finite as strings."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return float(f"{value:.9g}")
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return _clean(value.item())
    return value
