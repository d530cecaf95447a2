"""Preservation of what a simulator or renderer reads beyond bodies and joints.

The reference defines healthy: everything in it that the case does not target must
survive in the candidate, and nothing of the kind may be added.
- physics_scene: the stage's up axis; every PhysicsScene with its resolved gravity
  (SI, direction and magnitude), matched by count;
- static_scenery: colliders and visible parts that belong to no rigid body, matched
  like components (placement and shape of the surface, kind and size of the solid):
  none missing, none moved or reshaped, none added;
- simulator_attributes: on every matched element (bodies, joints, colliders, their
  physics materials, scenes, articulation roots, and prims such as actuators attached to them), every
  authored attribute of a simulator namespace resolves to an equal value, and none
  is added (stage_snapshot/scene.py says which attributes and units);
- healthy_materials: the resolved visual surface of every visible part (bound
  material, else display colour and opacity) and every body's physics materials.
All compare composed values through the correspondence, never paths or layers.
"""
from __future__ import annotations

import math

import numpy as np

from usd_repair_verifier.checks import articulation
from usd_repair_verifier.checks.measurement import Comparison
from usd_repair_verifier.checks.registry import Measurements
from usd_repair_verifier.profiles.schema import Profile
from usd_repair_verifier.stage_snapshot import scene, spatial

from . import exemptions
from .differences import failed
from usd_repair_verifier.profiles.result_record import GateResult

GRAVITY_TOLERANCE = 1e-3        # m/s^2 on each component of the gravity vector
SCENE_ATTRIBUTES = ("physics:gravityDirection", "physics:gravityMagnitude")
# A ground plane tilted by more than this is another slope: 0.05 degrees lifts a point 1 m away by 0.9 mm,
# about the position tolerance.
PLANE_TILT_DEG = 0.05


def physics_scene(measurements: Measurements, profile: Profile) -> GateResult:
    cmp = measurements.comparison
    ref, cand = cmp.reference, cmp.candidate
    failures = []
    if ref.up_axis != cand.up_axis:
        failures.append(f"up axis {cand.up_axis}, the reference's is {ref.up_axis}")
    if len(ref.scenes) != len(cand.scenes):
        failures.append(f"{len(cand.scenes)} physics scene(s), the reference has {len(ref.scenes)}")
    elif ref.scenes:
        cost = np.array([[_gravity_error(r, c) for c in cand.scenes] for r in ref.scenes])
        for i, j in _pair_scenes(cost):
            r, c = ref.scenes[i], cand.scenes[j]
            if not (cost[i, j] <= GRAVITY_TOLERANCE):
                failures.append(f"scene {r.path}: gravity {_vec(c.gravity)} m/s^2 ({c.path}), "
                                f"the reference's is {_vec(r.gravity)} m/s^2")
    # A gravity the parser could not use (a string, NaN, a time sample disagreeing with the
    # default) is the parser's fallback above: name the authoring error whatever it resolved to.
    scene_paths = {s.path for s in cand.scenes}
    for path, items in cand.authoring_problems.items():
        if path in scene_paths:
            failures += [f"scene {path}: {name}: {why}" for name, why in items
                         if name in SCENE_ATTRIBUTES and (name, why) not in ref.authoring_problems.get(path, ())]
    return GateResult.from_failures("physics_scene", failures,
                         f"up axis {ref.up_axis} and {len(ref.scenes)} physics scene(s) with their gravity kept",
                         "scene changes")


def _pair_scenes(cost: np.ndarray) -> list[tuple[int, int]]:
    """The cheapest one-to-one pairing of reference and candidate scenes (equal counts).
    One scene on each side (the usual stage) is its own pairing: scipy.optimize (with its
    linear programming and minimisers) is imported only to pair several."""
    if cost.shape == (1, 1):
        return [(0, 0)]
    from scipy.optimize import linear_sum_assignment

    finite = np.where(np.isfinite(cost), cost, 1e9)
    return list(zip(*linear_sum_assignment(finite)))


def _gravity_error(a: scene.PhysicsScene, b: scene.PhysicsScene) -> float:
    errors = [abs(x - y) for x, y in zip(a.gravity, b.gravity)]
    return max(errors) if all(math.isfinite(e) for e in errors) else math.inf


def _vec(v) -> str:
    return "(" + ", ".join(f"{c:.4g}" for c in v) + ")"


def static_scenery(measurements: Measurements, profile: Profile) -> GateResult:
    cmp = measurements.comparison
    ref, cand, match = cmp.reference, cmp.candidate, cmp.match
    exempt = exemptions.exempt_keys(profile, cmp)
    static_parts = [p for p, c in ref.components.items() if c.body is None]
    failures = []
    for name in ("placement", "shape"):
        keep = exemptions.keeps(exempt, "geometry", name)
        failures += failed(measurements.every("geometry", (name,), lambda t: t in static_parts and keep(t)))
    # A targeted static part moved too far to match shows up as an extra: that is its fault's.
    lost_to_faults = sum(1 for p in static_parts if p in profile.targeted and not match.components.get(p))
    added = [p for p in match.extra_components if cand.components[p].body is None]
    if len(added) > lost_to_faults:
        failures += [f"added visible part {p} (belongs to no body, nothing in the reference matches it)"
                     for p in added]
    for path, collider in ref.colliders.items():
        if collider.body is not None or any(("geometry", name, path) in exempt for name in ("placement", "shape")):
            continue   # a body's, or a targeted static part's own collider, moved or reshaped with it
        got = match.colliders.get(path)
        other = cand.colliders.get(got) if got else None
        problem = "missing" if other is None else _collider_difference(collider, other, cmp.tolerances)
        if problem:
            failures.append(f"static collider {path}: {problem}")
    failures += [f"added static collider {p} ({cand.colliders[p].shape})"
                 for p in match.extra_colliders if cand.colliders[p].body is None]
    n = len(static_parts) + sum(1 for c in ref.colliders.values() if c.body is None)
    return GateResult.from_failures("static_scenery", failures, f"all {n} static parts and colliders kept, none added",
                         "static scenery changes")


def _collider_difference(ref, cand, tolerances: dict) -> str:
    if (ref.shape, ref.enabled, ref.approximation) != (cand.shape, cand.enabled, cand.approximation):
        return (f"{ref.shape} enabled={ref.enabled} approximation={ref.approximation} became "
                f"{cand.shape} enabled={cand.enabled} approximation={cand.approximation}")
    if hasattr(ref.solid, "plane") and hasattr(cand.solid, "plane"):
        return _plane_difference(ref.solid.plane(), cand.solid.plane(), tolerances["geometry_position_m"])
    moved = spatial.distance(ref.centroid, cand.centroid)
    if not (moved <= tolerances["geometry_position_m"]):
        return f"moved by {moved:.4g} m"
    if math.isfinite(ref.volume) or math.isfinite(cand.volume):
        ratio = abs(math.log((cand.volume + 1e-300) / (ref.volume + 1e-300))) if ref.volume > 0 and cand.volume > 0 \
            else math.inf
        if not (ratio <= math.log1p(tolerances["geometry_area_relative"])):
            return f"volume {cand.volume:.4g} m^3, the reference's {ref.volume:.4g} m^3"
    return ""


def _plane_difference(ref: tuple, cand: tuple, position_m: float) -> str:
    """A ground plane (a half-space) is where its boundary is: tilted or moved along its normal,
    not slid or spun within itself."""
    (n_ref, d_ref), (n_cand, d_cand) = ref, cand
    tilt = math.degrees(math.acos(max(-1.0, min(1.0, float(n_ref @ n_cand)))))
    if not (tilt <= PLANE_TILT_DEG and abs(d_cand - d_ref) <= position_m):
        return (f"plane {_vec(n_cand)} . x = {d_cand:.4g} m, the reference's {_vec(n_ref)} . x = {d_ref:.4g} m "
                f"(tilted {tilt:.3g} degrees, moved {abs(d_cand - d_ref):.4g} m along its normal)")
    return ""


def _element_pairs(cmp: Comparison) -> list[tuple[str, str]]:
    """(reference key, candidate key) for every matched element that carries attributes."""
    match = cmp.match
    pairs = [(r, c) for table in (match.bodies, match.joints, match.colliders) for r, c in table.items() if c]
    ref_scenes = [s.path for s in cmp.reference.scenes]
    cand_scenes = [s.path for s in cmp.candidate.scenes]
    if len(ref_scenes) == len(cand_scenes):
        pairs += list(zip(ref_scenes, cand_scenes))   # sorted by path; unequal counts fail physics_scene
    # Articulation roots that are no body or joint (an Xform above the bodies): the one candidate
    # root at the same kind of location (articulation family); none or several fail that family.
    for root in cmp.reference.articulation_roots:
        if root.kind in ("ancestor", "other"):
            found = [c.path for c in cmp.candidate.articulation_roots if articulation.corresponds(cmp, root, c)]
            if len(found) == 1:
                pairs.append((root.path, found[0]))
    return pairs


def _attached_pairs(cmp: Comparison, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Keys of the form "<what> of <element>" (materials, actuators), through the element's match."""
    out = []
    cand_of = dict(pairs)
    for key in cmp.reference.simulator_attributes:
        what, sep, element = key.rpartition(" of ")
        if sep and element in cand_of:
            out.append((key, f"{what} of {cand_of[element]}"))
    return out


def _attribute_failures(label: str, ref: dict, cand: dict, losses_exempt: bool = False) -> list[str]:
    out = []
    for name, value in ref.items():
        if name not in cand:
            if not losses_exempt:
                out.append(f"{label}: {name} = {value!r} lost")
        elif not scene.values_equal(value, cand[name]):
            out.append(f"{label}: {name} = {cand[name]!r}, the reference's is {value!r}")
    out += [f"{label}: {name} = {cand[name]!r} added" for name in cand if name not in ref]
    return out


def simulator_attributes(measurements: Measurements, profile: Profile) -> GateResult:
    cmp = measurements.comparison
    ref_attrs, cand_attrs = cmp.reference.simulator_attributes, cmp.candidate.simulator_attributes
    pairs = _element_pairs(cmp)
    pairs += _attached_pairs(cmp, pairs)
    failures = []
    losses_exempt = exemptions.losses_exempt(profile, cmp)
    for ref_key, cand_key in sorted(pairs):
        ref_values = ref_attrs.get(ref_key)
        if ref_values is None:
            continue
        failures += _attribute_failures(ref_key, ref_values, cand_attrs.get(cand_key, {}), losses_exempt)
    # Attributes the candidate attaches to a healthy element that the reference attaches nothing to.
    ref_keys = {k for k, _ in pairs}
    for ref_element, cand_element in _element_pairs(cmp):
        for key in cand_attrs:
            what, sep, element = key.rpartition(" of ")
            if sep and element == cand_element and f"{what} of {ref_element}" not in ref_keys:
                failures += _attribute_failures(key, {}, cand_attrs[key])
    return GateResult.from_failures("simulator_attributes", failures,
                         f"simulator attributes of {len(pairs)} matched elements kept, none added",
                         "simulator attribute changes")


def healthy_materials(measurements: Measurements, profile: Profile) -> GateResult:
    """Healthy parts keep their resolved surface, healthy bodies their physics materials."""
    failures = exemptions.preserved_failures(measurements, profile, "healthy_materials")
    return GateResult.from_failures("healthy_materials", failures, "every healthy surface and physics material kept",
                         "material changes")
