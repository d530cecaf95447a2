"""Match reference bodies and joints to candidate ones by structure, pose and shape.

Prim paths may differ between reference and candidate (renamed namespaces,
other layer layouts), so matching is an assignment problem (scipy's
`linear_sum_assignment`) over costs built from what the elements *are*:

body cost  = placement (body origin and orientation)      in [0, 1]
           + geometry  (where its geometry sits in the body's frame, its extents) in [0, 1]
           + a small name tie-breaker
joint cost = bodies (through the body match)                in [0, 1]
           + type                                           0 or 0.5
           + anchor position                                in [0, 0.5]
           + axis direction (single-axis joints)            in [0, 0.25]
           + a small name tie-breaker

A fault changes one property of an element (a moved part, a retargeted joint),
so one group may disagree entirely while the others agree; a pair whose cost
passes the profile's bound is no match. Symmetric parts (four identical legs)
differ in where their geometry is, which the costs see.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from . import part_groups, spatial
from .model import Body, Joint, StageSnapshot

NAME_TIE_BREAK = 0.01
# Distances are normalized by this share of the asset's size: beyond it two
# placements count as entirely different.
DISTANCE_SCALE = 0.1
DEFAULT_MAX_BODY_COST = 1.25
DEFAULT_MAX_JOINT_COST = 1.25
UNMATCHED = "<unmatched>"  # stands for a reference body with no candidate


@dataclass(frozen=True)
class Correspondence:
    bodies: dict[str, str | None]        # reference body path -> candidate body path or None
    joints: dict[str, str | None]        # reference joint path -> candidate joint path or None
    extra_bodies: tuple[str, ...]        # candidate bodies nobody in the reference matches
    extra_joints: tuple[str, ...]
    body_costs: dict[str, float]         # cost of each reference body's match (inf when unmatched)
    joint_costs: dict[str, float]
    components: dict[str, str | None] = field(default_factory=dict)   # visible components, within matched bodies
    extra_components: tuple[str, ...] = ()
    colliders: dict[str, str | None] = field(default_factory=dict)    # colliders, within matched bodies
    extra_colliders: tuple[str, ...] = ()
    # reference component -> (reference components, candidate components) compared as one surface:
    # one of each, unless the candidate split a part or merged several (part_groups.py)
    component_groups: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    # reference component -> symmetric mean distance (m, at most part_groups.ON_SURFACE_M) to its
    # candidate, for pairs proven the same surface without equal digests (part_groups.py)
    same_surface: dict[str, float] = field(default_factory=dict)

    def component_group(self, reference_component: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        found = self.component_groups.get(reference_component)
        if found is not None:
            return found
        cand = self.components.get(reference_component)
        return (reference_component,), ((cand,) if cand else ())

    def candidate_body(self, reference_body: str | None) -> str | None:
        """World maps to world; an unmatched body maps to a marker that equals no candidate body."""
        if reference_body is None:
            return None
        return self.bodies.get(reference_body) or UNMATCHED


def _capped(x: float) -> float:
    return min(1.0, x) if math.isfinite(x) else 1.0


def _extent_mismatch(a: float, b: float) -> float:
    """|log| of the ratio of two extents; infinite when either is not a finite size (a hostile
    point at infinity gives an infinite extent, whose ratio 0 has no logarithm)."""
    ratio = (a + 1e-6) / (b + 1e-6)
    return abs(math.log(ratio)) if math.isfinite(ratio) and ratio > 0 else math.inf


def body_cost(ref: Body, cand: Body, size: float) -> float:
    scale = DISTANCE_SCALE * size
    placement = _capped(
        spatial.distance(ref.pose.position, cand.pose.position) / scale
        + spatial.rotation_angle_deg(ref.pose.rotation, cand.pose.rotation) / 180.0
    )
    extents = [_extent_mismatch(a, b) for a, b in zip(ref.shape.extents, cand.shape.extents)]
    # In the body's frame: a body that moved as a whole disagrees in placement only.
    geometry = _capped(spatial.distance(ref.shape.local_center, cand.shape.local_center) / scale + sum(extents) / 3.0)
    return placement + geometry + (0.0 if ref.name == cand.name else NAME_TIE_BREAK)


def joint_cost(ref: Joint, cand: Joint, match: Correspondence, size: float) -> float:
    wanted = [match.candidate_body(ref.body0), match.candidate_body(ref.body1)]
    have = [cand.body0, cand.body1]
    if wanted == have or wanted == have[::-1]:
        body_term = 0.0
    elif any(w == h for w in wanted for h in have):
        body_term = 0.5
    else:
        body_term = 1.0
    type_term = 0.0 if ref.type == cand.type else 0.5
    anchor = min(
        spatial.distance(ref.frame1.position, cand.frame1.position),
        spatial.distance(ref.frame1.position, cand.frame0.position),
    )
    anchor_term = 0.5 * _capped(anchor / (DISTANCE_SCALE * size))
    # Converted MuJoCo bodies with several joints become several single-axis joints between
    # the same two bodies at the same anchor (hopper's rootx/rooty/rootz): the axis tells them apart.
    axis_term = 0.0
    if ref.axis and cand.axis:
        angle = spatial.vector_angle_deg(spatial.world_axis(ref.frame0, ref.axis), spatial.world_axis(cand.frame0, cand.axis))
        axis_term = 0.25 * min(angle, 180.0 - angle) / 90.0
    return body_term + type_term + anchor_term + axis_term + (0.0 if ref.name == cand.name else NAME_TIE_BREAK)


def _matched(refs: list, cands: list, cost: np.ndarray, max_cost: float):
    """The assignment of candidates to reference elements (by path) within max_cost: the mapping
    (None where unmatched), each pair's cost (inf where unmatched), and the unmatched candidates."""
    mapping = {r.path: None for r in refs}
    costs = {r.path: math.inf for r in refs}
    for r, c in _assign(cost, max_cost):
        mapping[refs[r].path] = cands[c].path
        costs[refs[r].path] = float(cost[r, c])
    matched = set(mapping.values())
    return mapping, costs, tuple(c.path for c in cands if c.path not in matched)


def _assign(cost: np.ndarray, bound: float) -> list[tuple[int, int]]:
    """Minimum-cost one-to-one matching in which "no match" costs `bound` for each side.

    The matrix is padded with explicit no-match options, so an element nothing fits
    (a deleted body, a NaN pose) simply goes unmatched instead of displacing a
    neighbour's correct match to avoid a huge entry. NaN costs are no match.
    """
    n, m = cost.shape
    if n == 0 or m == 0:
        return []
    never = 2.0 * bound + 1.0
    real = np.where(np.isfinite(cost) & (cost <= bound), cost, never)
    padded = np.full((n + m, m + n), never)
    padded[:n, :m] = real
    padded[:n, m:][np.diag_indices(n)] = bound          # row i unmatched
    padded[n:, :m][np.diag_indices(m)] = bound          # column j unmatched
    padded[n:, m:] = 0.0                                 # dummy to dummy
    obvious = _unique_best(real, bound)
    if obvious is not None:
        return obvious
    from scipy.optimize import linear_sum_assignment  # 60 ms of import: only when needed

    rows, cols = linear_sum_assignment(padded)
    return [(r, c) for r, c in zip(rows, cols) if r < n and c < m and real[r, c] <= bound]


def _unique_best(real: np.ndarray, bound: float) -> list[tuple[int, int]] | None:
    """The optimal matching when it is obvious, else None.

    The padded problem costs bound * (n + m) + sum over matched pairs of (cost - 2 bound),
    so no matching can do better than every row taking its own cheapest admissible
    column. When each row's cheapest column is strictly cheapest (no tie) and no two
    rows want the same column, that matching reaches the bound and is the unique
    optimum: exactly what the solver would return. The usual case (a repair of the
    reference) needs no solver.
    """
    admissible = real <= bound
    pairs = []
    for r in range(real.shape[0]):
        costs = np.where(admissible[r], real[r], np.inf)
        c = int(np.argmin(costs))
        if not np.isfinite(costs[c]):
            continue  # nothing fits this row: unmatched in every optimum
        if np.count_nonzero(costs == costs[c]) > 1:
            return None
        pairs.append((r, c))
    columns = [c for _, c in pairs]
    return pairs if len(set(columns)) == len(columns) else None


def correspond(
    reference: StageSnapshot,
    candidate: StageSnapshot,
    max_body_cost: float = DEFAULT_MAX_BODY_COST,
    max_joint_cost: float = DEFAULT_MAX_JOINT_COST,
) -> Correspondence:
    size = reference.size
    ref_bodies, cand_bodies = list(reference.bodies.values()), list(candidate.bodies.values())
    cost = np.array([[body_cost(r, c, size) for c in cand_bodies] for r in ref_bodies]).reshape(
        len(ref_bodies), len(cand_bodies)
    )
    bodies, body_costs, extra_bodies = _matched(ref_bodies, cand_bodies, cost, max_body_cost)

    partial = Correspondence(bodies, {}, extra_bodies, (), body_costs, {})
    ref_joints, cand_joints = list(reference.joints.values()), list(candidate.joints.values())
    cost = np.array(
        [[joint_cost(r, c, partial, size) for c in cand_joints] for r in ref_joints]
    ).reshape(len(ref_joints), len(cand_joints))
    joints, joint_costs, extra_joints = _matched(ref_joints, cand_joints, cost, max_joint_cost)
    match = Correspondence(bodies, joints, extra_bodies, extra_joints, body_costs, joint_costs)
    components, extra_components, groups, same = part_groups.match_parts(
        reference, candidate, match.candidate_body,
        lambda refs, cands: _pairs(refs, cands, size, part_cost, max_body_cost),
        lambda ref, cand: part_cost(ref, cand, size))
    colliders, extra_colliders = _within_bodies(
        reference.colliders, candidate.colliders, match, size, collider_cost, max_body_cost
    )
    return replace(match, components=components, extra_components=extra_components,
                   colliders=colliders, extra_colliders=extra_colliders, component_groups=groups,
                   same_surface=same)


def part_cost(ref, cand, size: float) -> float:
    """Visible components: where the surface is, how much of it, what kind of prim."""
    where = _capped(spatial.distance(ref.centroid, cand.centroid) / (DISTANCE_SCALE * size))
    amount = _capped(abs(math.log((ref.area + 1e-12) / (cand.area + 1e-12))))
    kind = 0.0 if ref.type == cand.type else 0.25
    return where + amount + kind + (0.0 if ref.name == cand.name else NAME_TIE_BREAK)


def collider_cost(ref, cand, size: float) -> float:
    where = _capped(spatial.distance(ref.centroid, cand.centroid) / (DISTANCE_SCALE * size))
    if math.isfinite(ref.volume) and math.isfinite(cand.volume):
        amount = _capped(abs(math.log((ref.volume + 1e-12) / (cand.volume + 1e-12))))
    else:
        amount = 0.0 if ref.volume == cand.volume else 1.0
    kind = 0.0 if ref.shape == cand.shape else 0.25
    return where + amount + kind + (0.0 if ref.name == cand.name else NAME_TIE_BREAK)


def _pairs(refs: list, cands: list, size: float, cost_fn, bound: float) -> list[tuple[int, int]]:
    """The bounded one-to-one assignment of two lists of parts by `cost_fn`."""
    cost = np.array([[cost_fn(r, c, size) for c in cands] for r in refs]).reshape(len(refs), len(cands))
    return _assign(cost, bound)


def _within_bodies(ref_parts: dict, cand_parts: dict, match: Correspondence, size: float, cost_fn, bound: float):
    """Match parts body by body (static parts, body None, with static parts)."""
    result = {path: None for path in ref_parts}
    by_body: dict = {}
    for part in ref_parts.values():
        by_body.setdefault(part.body, ([], []))[0].append(part)
    wanted = {match.candidate_body(b): b for b in by_body}
    for part in cand_parts.values():
        if part.body in wanted:
            by_body[wanted[part.body]][1].append(part)
    for refs, cands in by_body.values():
        for r, c in _pairs(refs, cands, size, cost_fn, bound):
            result[refs[r].path] = cands[c].path
    matched = set(result.values())
    extras = tuple(p for p in cand_parts if p not in matched)
    return result, extras
