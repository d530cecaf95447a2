"""Mass family: the controlling mass, centre of mass and principal inertia of each body.

Targets are reference rigid bodies; the candidate body is found through the
correspondence. The numbers are what the UsdPhysics rules yield on the composed
stage (usd_repair_verifier.stage_snapshot.mass: body mass over collider mass/density over body
density over material density over the default), in SI units and world space.

A property the reference does not establish (its mass comes from the default
density alone; the inertia of a body with a mass but no collider and no authored
inertia, which UsdPhysics makes up as a 0.1 m sphere's) is `Unmeasured`, never a
silent pass; a
candidate that has no matched body, or no mass properties, is at the cap.

Scales: mass and principal moments as |log ratio| (tolerance log(1 + relative));
the centre of mass as a world distance in metres; the orientation of the inertia as the
relative distance between the two world inertia tensors, each divided by its trace.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from usd_repair_verifier.stage_snapshot import spatial

from .measurement import MAX_LOG_RATIO, Comparison, Component, Unmeasured, log_ratio

PROPERTIES = {
    "mass": "mass",
    "center_of_mass": "centre of mass",
    "inertia": "principal inertia",
}


def _pair(cmp: Comparison, target: str, prop: str):
    """(reference MassProperties, candidate MassProperties or None) or Unmeasured."""
    ref = cmp.reference.mass.get(target)
    if ref is None:
        return Unmeasured(f"the reference has no mass properties for {target}")
    if not ref.established.get(prop, False):
        why = f"its mass comes from the {ref.source}"
        if prop == "inertia" and ref.established.get("mass") and not ref.colliders:
            why = "no collider and no authored inertia: UsdPhysics falls back to a 0.1 m sphere's"
        return Unmeasured(f"the reference does not establish the {PROPERTIES[prop]} of {target} ({why})")
    cand_path = cmp.match.bodies.get(target)
    cand = cmp.candidate.mass.get(cand_path) if cand_path else None
    return ref, cand


def _measure_of(prop: str):
    """A measure of prop, called as measure(cmp, target, reference MassProperties, candidate
    MassProperties or None); Unmeasured where _pair says so."""
    def decorate(measure):
        @functools.wraps(measure)
        def measured(cmp: Comparison, target: str):
            pair = _pair(cmp, target, prop)
            if isinstance(pair, Unmeasured):
                return pair
            return measure(cmp, target, *pair)
        return measured
    return decorate


@_measure_of("mass")
def mass(cmp: Comparison, target: str, ref, cand):
    tol = math.log1p(cmp.tolerances["mass_relative"])
    if cand is None:
        return {"mass": Component(MAX_LOG_RATIO, tol, ref.mass, None, unit="log_ratio", value_unit="kg")}
    return {"mass": Component(log_ratio(ref.mass, cand.mass), tol, ref.mass, cand.mass, unit="log_ratio", value_unit="kg")}


@_measure_of("center_of_mass")
def center_of_mass(cmp: Comparison, target: str, ref, cand):
    tol = cmp.tolerances["com_m"]
    if cand is None:
        return {"offset_m": Component(math.inf, tol, list(ref.center_of_mass), None, unit="m", value_unit="m")}
    d = spatial.distance(ref.center_of_mass, cand.center_of_mass)
    if not math.isfinite(d):
        d = math.inf  # nan (a non-finite candidate) is never a pass, and reports as the cap
    return {"offset_m": Component(d, tol, list(ref.center_of_mass), list(cand.center_of_mass), unit="m", value_unit="m")}


@_measure_of("inertia")
def inertia(cmp: Comparison, target: str, ref, cand):
    tol = math.log1p(cmp.tolerances["inertia_relative"])
    ref_moments = sorted(ref.principal_inertia)
    if cand is None:
        return {"principal_inertia": Component(MAX_LOG_RATIO, tol, ref_moments, None, unit="log_ratio",
                                               value_unit="kg m^2")}
    cand_moments = sorted(cand.principal_inertia)
    if not all(math.isfinite(m) and m > 0 for m in ref_moments):
        # no log ratio of a zero or negative moment: the difference relative to the largest one
        return {"principal_inertia": Component(_invalid_kept(ref_moments, cand_moments),
                                               cmp.tolerances["inertia_relative"], ref_moments, cand_moments,
                                               unit="1", value_unit="kg m^2")}
    # A zero, negative or non-finite moment is the cap (log_ratio), never a pass.
    err = max(log_ratio(a, b) for a, b in zip(ref_moments, cand_moments))
    if math.isnan(err):
        err = MAX_LOG_RATIO
    return {"principal_inertia": Component(err, tol, ref_moments, cand_moments, unit="log_ratio", value_unit="kg m^2")}


def _invalid_kept(ref_moments: list, cand_moments: list) -> float:
    """The error against a reference whose own inertia is invalid in itself (a converter's
    dummy link authors a zero or negative moment): what the reference has is its own, so the
    candidate keeps it, each moment within the tolerance relative to the largest one's size."""
    scale = max(abs(m) for m in ref_moments)
    if not (math.isfinite(scale) and scale > 0) or not all(math.isfinite(m) for m in cand_moments):
        return MAX_LOG_RATIO
    return min(MAX_LOG_RATIO, max(abs(a - b) for a, b in zip(ref_moments, cand_moments)) / scale)


def _normalized_tensor(props):
    """The world inertia tensor divided by its trace (the sum of the moments), or None when that
    is not a positive finite number: what is left is how the mass is spread, not how much."""
    tensor = np.array(props.inertia_tensor, dtype=float)
    trace = float(np.trace(tensor))
    if not (math.isfinite(trace) and trace > 0 and np.all(np.isfinite(tensor))):
        return None
    return tensor / trace


@_measure_of("inertia")
def inertia_orientation(cmp: Comparison, target: str, ref, cand):
    """How the inertia is oriented and distributed, whatever its size: the relative Frobenius
    distance between the two world tensors, each divided by its trace. A principal frame turned
    where the moments differ, or moments permuted among the body's axes, moves it; a rotation
    about an axis of equal moments (no physical change) does not, and neither does a scale
    common to every moment (the inertia measure's)."""
    tol = cmp.tolerances["inertia_relative"]
    ref_tensor = _normalized_tensor(ref)
    if ref_tensor is None:
        return Unmeasured(f"the reference's inertia of {target} has no positive finite sum of moments")
    shown = [list(row) for row in ref.inertia_tensor]
    cand_tensor = _normalized_tensor(cand) if cand is not None else None
    if cand_tensor is None:
        return {"tensor": Component(MAX_LOG_RATIO, tol, shown, None if cand is None else
                                    [list(row) for row in cand.inertia_tensor], unit="1", value_unit="kg m^2")}
    error = float(np.linalg.norm(cand_tensor - ref_tensor) / np.linalg.norm(ref_tensor))
    return {"tensor": Component(error, tol, shown, [list(row) for row in cand.inertia_tensor], unit="1",
                                value_unit="kg m^2")}


MEASURES = {"mass": mass, "center_of_mass": center_of_mass, "inertia": inertia,
            "inertia_orientation": inertia_orientation}


def targets(reference, measure: str | None = None) -> list[str]:
    return list(reference.bodies)
