"""Visible parts matched within matched bodies, and the parts compared as one surface.

A re-export may reorder a mesh, split it into two meshes of the same body or merge two into one:
the surface a renderer draws is unchanged, but the parts no longer pair one to one, and a half
or a merged part can sit nearer (centroid, area) a sibling than its own counterpart. So parts are
matched by what they are before anything is guessed from their size and place, body by body:

1. The same triangles: parts with equal surface digests (world space, canonical order:
   surface_sampling.py) are paired; several with one digest are paired by cost among themselves.
2. The same surface: the parts left over are paired by cost (``assign``), and a pair is kept
   only where each part lies wholly on the other (every sample within ``ON_SURFACE_M`` of the
   other's surface, exactly: surface_index.py). Another triangulation, a baked scale or other
   units change a digest's last bits, not this; the pair's symmetric mean distance (at most
   ``ON_SURFACE_M``; for the same faces with vertices moved by at most that, the largest move,
   which bounds it without a search) is its shape residual, and no fit is needed
   (checks/geometry.py).
3. Parts that lie on others: a part still left over joins the other side's parts that hold its
   samples (a split or merged mesh keeps its coordinates, so its samples lie on the other side's
   surface to rounding), found by a greedy cover (the part holding most of the samples not yet
   held; ties: the nearest in area, then by digest) among the other side's parts still left over
   first, and only then among the paired ones: a half that also touches a neighbour where their
   surfaces meet joins its own part, and two plates merged into one join each other, not the
   large part whose surface they lie flat on. Parts joined this way, directly or through each
   other, form one group, compared as the union of its surfaces (checks/geometry.py): a half
   kept and a half deleted, a piece moved off the surface or a part duplicated on top of itself
   still changes the group's area or shape.
4. What is left (parts moved or reshaped by a fault) is matched by cost (correspondence.part_cost,
   through ``assign``), and a part that nothing fits stays unmatched (missing, or added).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .mesh_math import kd_tree

ON_SURFACE_M = 1e-6
_FIRST_LOOK = 16   # samples tried before all of them: a part that lies on nothing is told cheaply


@dataclass
class BodyParts:
    """One body's match: reference path -> candidate path; reference path -> (reference paths,
    candidate paths) of its group (groups of more than one pair); reference path -> residual (m)
    of a pair proven the same surface (step 2)."""

    pairs: dict = field(default_factory=dict)
    groups: dict = field(default_factory=dict)
    same_surface: dict = field(default_factory=dict)


def _overlaps(part, other) -> bool:
    low, high = part.samples.min(axis=0), part.samples.max(axis=0)
    o_low, o_high = other.surface.vertices.min(axis=0), other.surface.vertices.max(axis=0)
    return bool((o_low - ON_SURFACE_M <= high).all() and (low <= o_high + ON_SURFACE_M).all())


def _wholly_on(part, other) -> np.ndarray | None:
    """The distances (m, each at most ON_SURFACE_M) of `part`'s samples to `other`'s surface
    when every sample lies on it, else None."""
    if not len(part.samples) or not _overlaps(part, other):
        return None
    if not other.surface.index.within(part.samples[:_FIRST_LOOK], ON_SURFACE_M)[0].all():
        return None
    inside, distance = other.surface.index.within(part.samples, ON_SURFACE_M)
    return distance if inside.all() else None


class _Cover:
    """Which of `others` hold which samples of `part`; `lies` is False when some sample lies on
    none of them."""

    def __init__(self, part, others: list):
        self.part, self.near, self.lies = part, [], False
        samples = part.samples
        if not len(samples):
            return
        self.near = [o for o in others if _overlaps(part, o)]
        first = samples[:_FIRST_LOOK]
        if not self.near or not np.any([o.surface.index.within(first, ON_SURFACE_M)[0] for o in self.near],
                                       axis=0).all():
            return   # outside every other part's bounds, or off them at once: cheap to rule out
        self.on = np.stack([o.surface.index.within(samples, ON_SURFACE_M)[0] for o in self.near], axis=1)
        self.lies = bool(self.on.any(axis=1).all())

    def joins(self, free: set) -> list[str]:
        """Greedy cover: the part holding most of the samples not yet held (ties: the nearest in
        area, then by digest), among the `free` parts first, then among the others."""
        if not self.lies:
            return []
        area = max(self.part.area, 1e-300)
        chosen, left = [], np.ones(len(self.on), dtype=bool)
        for stage in (True, False):
            pool = [k for k in range(len(self.near)) if (self.near[k].path in free) == stage]
            while left.any() and pool:
                best = min(pool, key=lambda k: (-int(np.count_nonzero(self.on[left, k])),
                                                abs(np.log(max(self.near[k].area, 1e-300) / area)),
                                                self.near[k].surface.digest))
                if not self.on[left, best].any():
                    break
                chosen.append(self.near[best].path)
                left &= ~self.on[:, best]
        return sorted(chosen)


def _find(parent: dict, node):
    while parent[node] != node:
        parent[node] = parent[parent[node]]
        node = parent[node]
    return node


def _exact_pairs(refs: list, cands: list, assign) -> dict[str, str]:
    """Reference path -> candidate path for parts with the same triangles."""
    by_digest: dict = {}
    for part in refs:
        by_digest.setdefault(part.surface.digest, ([], []))[0].append(part)
    for part in cands:
        if part.surface.digest in by_digest:
            by_digest[part.surface.digest][1].append(part)
    pairs = {}
    for same_refs, same_cands in by_digest.values():
        if len(same_refs) == 1 and len(same_cands) == 1:
            pairs[same_refs[0].path] = same_cands[0].path
        elif same_cands:
            pairs.update((same_refs[r].path, same_cands[c].path) for r, c in assign(same_refs, same_cands))
    return pairs


def _vertices_moved(ref, cand) -> float | None:
    """The largest distance (m) between corresponding vertices of two parts made of the same
    triangles with their vertices moved by at most ON_SURFACE_M (a unit change or a baked scale
    moves only the last bits, which may reorder the canonical ranks of near-equal coordinates),
    or None. Vertices correspond by nearest neighbour, one to one, and the faces must map onto
    each other. Every point of a triangle moves by at most that distance: it bounds the distance
    of each side's surface to the other's, with no nearest-point search."""
    a, b = ref.surface, cand.surface
    if a.vertices.shape != b.vertices.shape or a.faces.shape != b.faces.shape or not len(a.vertices):
        return None
    if np.array_equal(a.faces, b.faces):
        return float(np.sqrt(((a.vertices - b.vertices) ** 2).sum(axis=1)).max())
    distance, nearest = kd_tree(a.vertices).query(b.vertices, k=1, workers=1)
    if not distance.max() <= ON_SURFACE_M or len(np.unique(nearest)) != len(nearest):
        return None
    mapped = np.sort(nearest[b.faces], axis=1)
    mapped = mapped[np.lexsort((mapped[:, 2], mapped[:, 1], mapped[:, 0]))]
    return float(distance.max()) if np.array_equal(mapped, a.faces) else None


def _same_surfaces(refs: list, cands: list, assign, found: BodyParts) -> None:
    """Step 2: the cost assignment of the parts left over, kept where each lies wholly on the
    other: the same faces with vertices moved by at most ON_SURFACE_M (that bound is the
    residual), else every sample of each on the other's surface (their mean distance)."""
    for r, c in assign(refs, cands) if refs and cands else ():
        moved = _vertices_moved(refs[r], cands[c])
        if moved is not None and moved <= ON_SURFACE_M:
            found.pairs[refs[r].path] = cands[c].path
            found.same_surface[refs[r].path] = moved
            continue
        there = _wholly_on(cands[c], refs[r])
        back = _wholly_on(refs[r], cands[c]) if there is not None else None
        if back is not None:
            found.pairs[refs[r].path] = cands[c].path
            found.same_surface[refs[r].path] = 0.5 * (float(there.mean()) + float(back.mean()))


def _join_lying_parts(refs: list, cands: list, pairs: dict[str, str]) -> dict:
    """Step 3: union-find over ("r", path) and ("c", path): the pairs, and every part left over
    with the other side's parts it lies on."""
    parent = {("r", p.path): ("r", p.path) for p in refs}
    parent.update({("c", p.path): ("c", p.path) for p in cands})
    for r, c in pairs.items():
        parent[_find(parent, ("c", c))] = _find(parent, ("r", r))
    paired = set(pairs.values())
    free = {"r": {p.path for p in refs if p.path not in pairs}, "c": {p.path for p in cands if p.path not in paired}}
    for side, parts, others in (("c", cands, refs), ("r", refs, cands)):
        other = "r" if side == "c" else "c"
        for part in parts:
            if part.path in free[side]:
                for target in _Cover(part, others).joins(free[other]):
                    parent[_find(parent, (side, part.path))] = _find(parent, (other, target))
    return parent


def _groups(parent: dict, refs: list, cands: list, cost, found: BodyParts) -> set:
    """Groups of more than one pair from the union-find; the nodes in any group (pairs too)."""
    members: dict = {}
    for node in parent:
        members.setdefault(_find(parent, node), []).append(node)
    ref_of, cand_of = {p.path: p for p in refs}, {p.path: p for p in cands}
    in_group: set = set()
    for nodes in members.values():
        group_refs = tuple(sorted(p for kind, p in nodes if kind == "r"))
        group_cands = tuple(sorted(p for kind, p in nodes if kind == "c"))
        if not group_refs or not group_cands:
            continue
        in_group.update(nodes)
        if len(group_refs) == 1 and len(group_cands) == 1:
            found.pairs[group_refs[0]] = group_cands[0]
            continue
        for r in group_refs:
            found.groups[r] = (group_refs, group_cands)
            found.same_surface.pop(r, None)
            if r not in found.pairs:
                found.pairs[r] = min(group_cands, key=lambda c: (cost(ref_of[r], cand_of[c]), c))
    return in_group


def match_body_parts(refs: list, cands: list, assign, cost) -> BodyParts:
    """One body's visible parts (module docstring). `assign(refs, cands)` -> [(i, j)] is the
    bounded cost assignment, `cost(ref, cand)` the pair cost (which candidate of a group stands
    for a reference part that has none)."""
    found = BodyParts(pairs=_exact_pairs(refs, cands, assign))

    def left_over(in_group=frozenset()):
        paired = set(found.pairs.values())
        return ([p for p in refs if p.path not in found.pairs and ("r", p.path) not in in_group],
                [p for p in cands if p.path not in paired and ("c", p.path) not in in_group])

    _same_surfaces(*left_over(), assign, found)
    left_refs, left_cands = left_over()
    if not left_refs and not left_cands:
        return found
    in_group = _groups(_join_lying_parts(refs, cands, found.pairs), refs, cands, cost, found)
    left_refs, left_cands = left_over(in_group)
    for r, c in assign(left_refs, left_cands) if left_refs and left_cands else ():
        found.pairs[left_refs[r].path] = left_cands[c].path
    return found


def match_parts(reference, candidate, candidate_body, assign, cost):
    """(components, extra components, groups, same-surface residuals) over every matched body
    (static parts, body None, with static parts): see match_body_parts."""
    result = {path: None for path in reference.components}
    groups: dict = {}
    same: dict = {}
    by_body: dict = {}
    for part in reference.components.values():
        by_body.setdefault(part.body, ([], []))[0].append(part)
    wanted = {candidate_body(b): b for b in by_body}
    for part in candidate.components.values():
        if part.body in wanted:
            by_body[wanted[part.body]][1].append(part)
    taken: set = set()
    for refs, cands in by_body.values():
        found = match_body_parts(refs, cands, assign, cost)
        result.update(found.pairs)
        groups.update(found.groups)
        same.update(found.same_surface)
        taken.update(found.pairs.values())
        taken.update(c for _, group_cands in found.groups.values() for c in group_cands)
    extras = tuple(p for p in candidate.components if p not in taken)
    return result, extras, groups, same
