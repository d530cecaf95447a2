"""Collision family: does a body's collision still hold what the reference's holds, and nothing
more?

Targets are reference rigid bodies. Colliders are solids as the simulator sees them
(usd_repair_verifier.stage_snapshot.colliders: primitives exactly, meshes through their
approximation); only enabled colliders count. The reference defines healthy, so both measures
compare the candidate's solids with the reference's, in both directions:
- coverage: the share of the reference body's visible surface samples inside the candidate's
  colliders (within collision_margin_m), against the reference's own share; and the share of the
  reference colliders' volume that the candidate's colliders do not hold (`volume_lost`): a
  removed, disabled, shrunk or moved collider loses them;
- free_space: the share of the reference's empty space inside its colliders' bounds (samples its
  colliders leave free) that candidate colliders fill (`filled`: a convex hull over a handle's
  opening or a gripper's gap), and the share of the candidate colliders' volume that lies outside
  the reference's colliders (`excess`: a collider grown, moved, re-approximated to a bounding box
  or replaced by its bounding sphere). Free space sampled only inside the reference's bounds
  cannot see a collider that grows beyond them; `excess` samples where the candidate has them.
Another decomposition of the same solid (two half boxes for one box) holds exactly the same
volume and passes both, whatever the sampling: every sample of one side lies in the other.
"""
from __future__ import annotations

import numpy as np

from usd_repair_verifier.stage_snapshot import colliders as solids
from usd_repair_verifier.stage_snapshot import parts

from .measurement import Comparison, Component, Unmeasured, boolean


def _surface(snapshot, body: str) -> np.ndarray:
    found = [c.samples for c in snapshot.body_components(body) if len(c.samples)]
    return np.concatenate(found) if found else np.zeros((0, 3))


def _same(cmp: Comparison, target: str) -> bool:
    """The candidate body's enabled colliders build exactly the reference's solids: every share
    below is then the reference's own, with no sampling (the usual healthy body)."""
    return parts.same_solids(cmp.reference, cmp.candidate, target, cmp.match.bodies.get(target))


def coverage(cmp: Comparison, target: str):
    ref_solids = parts.enabled_solids(cmp.reference, target)
    if not ref_solids:
        return Unmeasured("the reference body has no enabled collider")
    cand_solids = parts.enabled_solids(cmp.candidate, cmp.match.bodies.get(target))
    margin = cmp.tolerances["collision_margin_m"]
    same = _same(cmp, target)
    out = {"has_collision": boolean(bool(cand_solids), len(ref_solids), len(cand_solids))}
    surface = _surface(cmp.reference, target)
    if len(surface):
        ref_share = parts.reference_coverage(cmp.reference, target, margin)
        cand_share = ref_share if same else solids.coverage(surface, cand_solids, margin) if cand_solids else 0.0
        out["coverage"] = Component(max(0.0, ref_share - cand_share), cmp.tolerances["collision_coverage"],
                                    ref_share, cand_share, unit="share", value_unit="share")
    held = parts.solid_samples(cmp.reference, target)
    if len(held[0]):
        lost = 0.0 if same else solids.outside_share(held, cand_solids, margin)
        out["volume_lost"] = Component(lost, cmp.tolerances["collision_coverage"], 0.0, lost, unit="share",
                                       value_unit="share")
    return out


def free_space(cmp: Comparison, target: str):
    empty = parts.free_space(cmp.reference, target)
    cand_body = cmp.match.bodies.get(target)
    cand_solids = parts.enabled_solids(cmp.candidate, cand_body)
    same = _same(cmp, target)
    out = {}
    if len(empty):   # the reference's empty space lies outside every reference solid by construction
        filled = 0.0 if same or not cand_solids else solids.free_space_fill(empty, cand_solids)
        out["filled"] = Component(filled, cmp.tolerances["collision_free_space"], 0.0, filled, unit="share",
                                  value_unit="share")
    if parts.enabled_solids(cmp.reference, target) or cand_solids:
        held = ((np.zeros((0, 3)), np.zeros(0)) if same or not cand_body
                else parts.body_solid_samples(cmp.candidate, cand_body))
        excess = solids.outside_share(held, parts.enabled_solids(cmp.reference, target),
                                      cmp.tolerances["collision_margin_m"]) if len(held[0]) else 0.0
        out["excess"] = Component(excess, cmp.tolerances["collision_free_space"], 0.0, excess, unit="share",
                                  value_unit="share")
    if not out:
        return Unmeasured("the reference body has no free space to keep (no collider or no visible bounds)")
    return out


MEASURES = {"coverage": coverage, "free_space": free_space}


def targets(reference, measure: str | None = None) -> list[str]:
    return list(reference.bodies)
