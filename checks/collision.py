"""Collision family: does a body's collision still cover its visible surface, and
does it leave the reference's empty space empty?

Targets are reference rigid bodies. Colliders are solids as the simulator sees
them (usd_repair_verifier.stage_snapshot.colliders: primitives exactly, meshes through their
approximation); only enabled colliders count.
- coverage: the share of the reference body's visible surface samples inside
  the candidate's colliders (within collision_margin_m), against the
  reference's own share: a removed, disabled or shrunk collider loses it.
- free_space: the share of the reference's empty space inside the body's
  bounds (samples its colliders leave free) that candidate colliders fill: a
  convex hull over a handle's opening or a gripper's gap fills it.
A different decomposition that covers the same shape passes both.
"""
from __future__ import annotations

import numpy as np

from usd_repair_verifier.stage_snapshot import colliders as solids
from usd_repair_verifier.stage_snapshot import parts

from .measurement import Comparison, Component, Unmeasured, boolean


def _solids(snapshot, body: str | None) -> list:
    if body is None:
        return []
    return [c.solid for c in snapshot.body_colliders(body) if c.enabled and c.solid is not None]


def _surface(snapshot, body: str) -> np.ndarray:
    parts = [c.samples for c in snapshot.body_components(body) if len(c.samples)]
    return np.concatenate(parts) if parts else np.zeros((0, 3))


def coverage(cmp: Comparison, target: str):
    ref_solids = _solids(cmp.reference, target)
    if not ref_solids:
        return Unmeasured("the reference body has no enabled collider")
    surface = _surface(cmp.reference, target)
    cand_solids = _solids(cmp.candidate, cmp.match.bodies.get(target))
    has = boolean(bool(cand_solids), len(ref_solids), len(cand_solids))
    if not len(surface):
        return {"has_collision": has}
    margin = cmp.tolerances["collision_margin_m"]
    ref_share = solids.coverage(surface, ref_solids, margin)
    cand_share = solids.coverage(surface, cand_solids, margin) if cand_solids else 0.0
    return {
        "has_collision": has,
        "coverage": Component(max(0.0, ref_share - cand_share), cmp.tolerances["collision_coverage"], ref_share, cand_share,
                              unit="share", value_unit="share"),
    }


def free_space(cmp: Comparison, target: str):
    empty = parts.free_space(cmp.reference, target)
    if not len(empty):
        return Unmeasured("the reference body has no free space to keep (no collider or no visible bounds)")
    cand_solids = _solids(cmp.candidate, cmp.match.bodies.get(target))
    filled = solids.free_space_fill(empty, cand_solids) if cand_solids else 0.0
    return {"filled": Component(filled, cmp.tolerances["collision_free_space"], 0.0, filled, unit="share",
                                value_unit="share")}


MEASURES = {"coverage": coverage, "free_space": free_space}


def targets(reference, measure: str | None = None) -> list[str]:
    return list(reference.bodies)
