"""Preservation of what a simulator builds from relationships and collections.

The reference defines healthy; everything is compared through the correspondence (bodies,
joints and colliders matched by structure, pose and shape; scenes paired), never by path.
- contact_pairs: the collider pairs a simulator lets touch (checks/contact.py): none the
  reference lets touch is filtered, none it filters is let touch. Another group layout with
  the same pairs, a collection naming a parent instead of its children, a group that filters
  nothing, a filter on a pair that can never touch: all keep it.
- simulation_owners: the scene that simulates each body and collider (checks/owners.py), and
  each joint and articulation root that authors an owner, read the same way.
- simulator_relationships: every relationship a simulator reads (`physics:`, `physx*`,
  `newton:`, `mjc:`, an applied physics API's) that no family measures in its own terms, on
  every element and on any other prim (an actuator, a tendon), its targets mapped through the
  correspondence: none lost, none changed, none added.
- joint_body_order: a matched joint keeps which body is body0 and which body1 (Newton refuses a
  joint whose bodies are swapped, even with its frames swapped to match).
"""
from __future__ import annotations

from collections import Counter

from usd_repair_verifier.checks import articulation, contact, owners
from usd_repair_verifier.checks.measurement import Comparison
from usd_repair_verifier.checks.registry import Measurements
from usd_repair_verifier.profiles.result_record import GateResult
from usd_repair_verifier.profiles.schema import Profile

from . import exemptions

OUTSIDE = "<a prim that is no matched element>"


def contact_pairs(measurements: Measurements, profile: Profile) -> GateResult:
    cmp = measurements.comparison
    exempt = exemptions.exempt_keys(profile, cmp)
    failures = []
    if ("contact", "pairs", contact.WHOLE_ASSET) not in exempt:
        failures += contact.unread(cmp)
        lost, added = contact.pair_changes(cmp)
        failures += contact.describe(cmp.reference, lost, "no longer collides with")
        if not exemptions.losses_exempt(profile, cmp):   # a missing file's filters may be missing
            failures += contact.describe(cmp.reference, added, "now collides with")
    blocked = cmp.reference.contact.blocked_pairs(cmp.reference.colliders) if cmp.reference.contact else 0
    return GateResult.from_failures("contact_pairs", failures,
                                    f"the collider pairs that may touch kept ({blocked} pair(s) filtered)",
                                    "contact filtering changes")


def simulation_owners(measurements: Measurements, profile: Profile) -> GateResult:
    cmp = measurements.comparison
    ref, match = cmp.reference, cmp.match
    exempt = exemptions.exempt_keys(profile, cmp)
    failures = []
    for path, body in ref.bodies.items():
        if ("owner", "owners", path) in exempt or not match.bodies.get(path):
            continue   # a targeted body's owners are its fault's; an unmatched one fails body_correspondence
        why = owners.owner_difference(cmp, path, match.bodies[path])
        failures += [f"body {path}: {why}"] if why else []
    for path, collider in ref.colliders.items():
        if collider.body is None or ("owner", "owners", collider.body) not in exempt:
            why = owners.owner_difference(cmp, path, match.colliders.get(path))
            failures += [f"{'static ' if collider.body is None else ''}collider {path}: {why}"] if why else []
    for path, got in match.joints.items():
        why = owners.owner_difference(cmp, path, got)
        failures += [f"joint {path}: {why}"] if why else []
    failures += _root_owner_failures(cmp)
    return GateResult.from_failures("simulation_owners", failures,
                                    "every body, collider, joint and articulation root simulated by the same scene",
                                    "simulation owner changes")


def _root_owner_failures(cmp: Comparison) -> list[str]:
    """Each articulation root's owners, against the one candidate root at the same kind of location
    (the articulation family grades a root missing, added or moved)."""
    out = []
    for root in cmp.reference.articulation_roots:
        found = [c.path for c in cmp.candidate.articulation_roots if articulation.corresponds(cmp, root, c)]
        why = owners.owner_difference(cmp, root.path, found[0]) if len(found) == 1 else ""
        out += [f"articulation root {root.path}: {why}"] if why else []
    return out


def _path_map(cmp: Comparison) -> dict[str, str | None]:
    match = cmp.match
    out: dict[str, str | None] = {}
    for table in (match.bodies, match.joints, match.colliders, match.components):
        out.update(table)
    out.update(owners.scene_map(cmp))
    return out


def _mapped(targets, forward: dict[str, str | None], elements: set[str]) -> tuple[str, ...]:
    """Reference targets as candidate paths: an element by its match, anything else as OUTSIDE."""
    out = []
    for t in targets:
        if t in forward:
            out.append(forward[t] or f"<no match for {t}>")
        else:
            out.append(OUTSIDE if t not in elements else t)
    return tuple(sorted(out))


def _candidate(targets, candidate_elements: set[str]) -> tuple[str, ...]:
    return tuple(sorted(t if t in candidate_elements else OUTSIDE for t in targets))


def _record(rels: dict, convert) -> tuple:
    return tuple(sorted((name, convert(targets)) for name, targets in rels.items()))


def simulator_relationships(measurements: Measurements, profile: Profile) -> GateResult:
    cmp = measurements.comparison
    ref, cand = cmp.reference, cmp.candidate
    forward = _path_map(cmp)
    cand_elements = {p for p in forward.values() if p}
    targeted = set(profile.targeted)
    touches_fault = lambda rels, back: any(back.get(t, t) in targeted for ts in rels.values() for t in ts)
    back = {c: r for r, c in forward.items() if c}
    failures = []
    ref_elements = set(forward)
    for ref_path, cand_path in sorted(forward.items()):
        if not cand_path:
            continue
        ref_rels = ref.simulator_relationships.get(ref_path, {})
        cand_rels = cand.simulator_relationships.get(cand_path, {})
        # A relationship naming a targeted element is its fault's (an actuator's deleted joint).
        if touches_fault(ref_rels, {}) or touches_fault(cand_rels, back):
            continue
        for name in sorted(set(ref_rels) | set(cand_rels)):
            want = _mapped(ref_rels[name], forward, ref_elements) if name in ref_rels else None
            got = _candidate(cand_rels[name], cand_elements) if name in cand_rels else None
            if want != got:
                failures.append(f"{ref_path}: relationship {name} -> {_shown(got)}, the reference's -> {_shown(want)}")
    others = lambda snapshot, elements: {p: r for p, r in snapshot.simulator_relationships.items() if p not in elements}
    ref_others = {p: r for p, r in others(ref, ref_elements).items() if not touches_fault(r, {})}
    cand_others = {p: r for p, r in others(cand, cand_elements).items() if not touches_fault(r, back)}
    want = Counter(_record(r, lambda ts: _mapped(ts, forward, ref_elements)) for r in ref_others.values())
    got = Counter(_record(r, lambda ts: _candidate(ts, cand_elements)) for r in cand_others.values())
    if not exemptions.losses_exempt(profile, cmp):
        failures += [f"lost: a prim with {_rels(rec)}" for rec in sorted((want - got).elements())]
    failures += [f"added: a prim with {_rels(rec)}" for rec in sorted((got - want).elements())]
    return GateResult.from_failures("simulator_relationships", failures,
                                    f"simulator relationships of {len(ref.simulator_relationships)} prims kept, "
                                    "none added", "simulator relationship changes")


def _shown(targets) -> str:
    return "(none)" if targets is None else "[" + ", ".join(targets) + "]"


def _rels(record: tuple) -> str:
    return "; ".join(f"{name} -> {_shown(targets)}" for name, targets in record)


def joint_body_order(measurements: Measurements, profile: Profile) -> GateResult:
    cmp = measurements.comparison
    exempt = exemptions.exempt_keys(profile, cmp)
    failures = []
    for path, got in sorted(cmp.match.joints.items()):
        if not got or any(("joint", m, path) in exempt for m in ("graph", "existence")):
            continue
        ref, cand = cmp.reference.joints[path], cmp.candidate.joints[got]
        b0, b1 = cmp.match.candidate_body(ref.body0), cmp.match.candidate_body(ref.body1)
        if ref.body0 != ref.body1 and (b0, b1) == (cand.body1, cand.body0):
            failures.append(f"joint {path}: body0 and body1 swapped (body0 {cand.body0}, body1 {cand.body1}; "
                            f"the reference's body0 is {ref.body0}, body1 {ref.body1})")
    return GateResult.from_failures("joint_body_order", failures, f"all {len(cmp.match.joints)} joints keep body0 "
                                    "and body1", "joint body order changes")
