"""Visible parts that the candidate split or merged: which reference and candidate components are
compared as one surface.

Parts are matched one to one within matched bodies (correspondence.part_cost). A re-export may
split a mesh into two meshes of the same body, or merge two into one: the surface a renderer
draws is unchanged, but one side then has a component the other lacks. So, after the one-to-one
match, a component left unmatched on one side joins the other side's components it lies on:
every one of its samples within ``ON_SURFACE_M`` of the other side's surfaces in the same body
(exact distances: a split or merged mesh keeps its coordinates, so its samples lie on the other
side's surface to rounding). Components joined this way, directly or through each other, form
one group, compared as the union of its surfaces (checks/geometry.py): a half kept and a half
deleted, a piece moved off the surface, or a part duplicated on top of itself still changes the
group's area or shape. A component that lies on nothing stays unmatched (missing, or added).
"""
from __future__ import annotations

import numpy as np

ON_SURFACE_M = 1e-6
_FIRST_LOOK = 16   # samples tried before all of them: a part that lies on nothing is told cheaply


def _lies_on(part, others) -> list[str] | None:
    """The paths of `others` that `part`'s samples lie on (each sample's nearest), or None when
    some sample is off all of them."""
    if not others or not len(part.samples):
        return None
    low = np.min([o.surface.vertices.min(axis=0) for o in others], axis=0) - ON_SURFACE_M
    high = np.max([o.surface.vertices.max(axis=0) for o in others], axis=0) + ON_SURFACE_M
    if (part.samples < low).any() or (part.samples > high).any():
        return None   # outside every other part's bounds: cheap to rule out (added clutter)
    first = part.samples[:_FIRST_LOOK]
    if not (np.min([o.surface.index.closest(first)[0] for o in others], axis=0) <= ON_SURFACE_M).all():
        return None
    distances = np.stack([o.surface.index.closest(part.samples)[0] for o in others], axis=1)
    nearest = np.argmin(distances, axis=1)
    if not (distances[np.arange(len(nearest)), nearest] <= ON_SURFACE_M).all():
        return None
    return [others[i].path for i in sorted(set(nearest.tolist()))]


def _find(parent: dict, node):
    while parent[node] != node:
        parent[node] = parent[parent[node]]
        node = parent[node]
    return node


def group_parts(reference, candidate, candidate_body, components: dict, extras: tuple):
    """(groups, components, extras): `groups` maps every reference component in a group of more
    than one pair to (reference paths, candidate paths); a reference component merged into a
    candidate one maps to it in `components`; candidate components absorbed into a group leave
    `extras`."""
    matched_cands = {c for c in components.values() if c}
    lonely_refs = [p for p, c in components.items() if not c]
    if not lonely_refs and not extras:
        return {}, components, extras
    parent = {("r", p): ("r", p) for p in components}
    parent.update({("c", p): ("c", p) for p in candidate.components})
    for r, c in components.items():
        if c:
            parent[_find(parent, ("c", c))] = _find(parent, ("r", r))
    joined = False
    for path in extras:
        part = candidate.components[path]
        refs = [c for c in reference.components.values() if candidate_body(c.body) == part.body]
        for r in _lies_on(part, refs) or ():
            parent[_find(parent, ("c", path))] = _find(parent, ("r", r))
            joined = True
    for path in lonely_refs:
        part = reference.components[path]
        want = candidate_body(part.body)
        cands = [c for c in candidate.components.values() if c.body == want and c.path in matched_cands]
        for c in _lies_on(part, cands) or ():
            parent[_find(parent, ("r", path))] = _find(parent, ("c", c))
            joined = True
    if not joined:
        return {}, components, extras
    members: dict = {}
    for node in parent:
        members.setdefault(_find(parent, node), []).append(node)
    groups, components = {}, dict(components)
    for nodes in members.values():
        refs = tuple(sorted(p for kind, p in nodes if kind == "r"))
        cands = tuple(sorted(p for kind, p in nodes if kind == "c"))
        if len(refs) + len(cands) <= 2 or not refs or not cands:
            continue
        for r in refs:
            groups[r] = (refs, cands)
            components[r] = components.get(r) or cands[0]
    grouped = {c for _, cands in groups.values() for c in cands}
    return groups, components, tuple(p for p in extras if p not in grouped)
