"""Contact family: which colliders a simulator lets touch, compared through the correspondence.

The snapshot lists the collider pairs the filters keep apart (collision groups with their
filtered groups, `invertFilteredGroups` and merge groups; `physics:filteredPairs` at body,
collider or articulation level; stage_snapshot/physics_model.py). A pair of reference
colliders, both matched, is compared when neither stage says it can never touch anyway (two
colliders of one body, two static ones, a disabled collider, jointed bodies whose joint keeps
them apart: those are other families' properties). It is *lost* when the reference lets it
touch and the candidate filters it, *added* when the reference filters it and the candidate
lets it touch. So another group layout with the same pairs, a collection naming a parent
instead of each child, a group that filters nothing, or filtering a pair that can never touch
measure the same as the reference.

One measure on the whole asset ("*"): a filter concerns two elements at once.
"""
from __future__ import annotations

import os

from usd_repair_verifier.stage_snapshot.physics_model import never_touch

from .measurement import Comparison, Component

WHOLE_ASSET = "*"
SHOWN = 5   # pairs named in a component's values


def pair_changes(cmp: Comparison) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(lost, added): reference collider pairs, sorted, that the candidate filters where the
    reference lets them touch, and that it lets touch where the reference filters them. Only
    pairs of matched colliders are asked: the reference's size bounds the work."""
    ref, cand, match = cmp.reference, cmp.candidate, cmp.match.colliders
    if ref.contact is None or cand.contact is None:
        return [], []
    names = sorted(r for r in ref.colliders if match.get(r) in cand.colliders)
    lost, added = [], []
    for i, ra in enumerate(names):
        for rb in names[i + 1:]:
            ca, cb = match[ra], match[rb]
            was, now = ref.contact.blocked(ra, rb), cand.contact.blocked(ca, cb)
            if was == now or never_touch(ref.colliders[ra], ref.colliders[rb], ref.joints) \
                    or never_touch(cand.colliders[ca], cand.colliders[cb], cand.joints):
                continue
            (added if was else lost).append((ra, rb))
    return lost, added


def unread(cmp: Comparison) -> list[str]:
    """Filters a stage holds that the grader does not read (too many groups), as failures."""
    return [f"{side}: {snapshot.contact.unread}" for side, snapshot in
            (("reference", cmp.reference), ("candidate", cmp.candidate))
            if snapshot.contact is not None and snapshot.contact.unread]


def element(snapshot, collider: str) -> str:
    """What a person calls a collider's side of a contact: its body, or the static collider."""
    body = snapshot.colliders[collider].body
    return body if body is not None else collider


def describe(snapshot, pairs: list[tuple[str, str]], verb: str) -> list[str]:
    """Sentences naming the changed contacts by element, the element with most partners first:
    "the static collider /World/floor no longer collides with 13 bodies of /ant"."""
    partners: dict[str, set[str]] = {}
    for a, b in pairs:
        ea, eb = element(snapshot, a), element(snapshot, b)
        partners.setdefault(ea, set()).add(eb)
        partners.setdefault(eb, set()).add(ea)
    out, done = [], set()
    while partners:
        name = min(partners, key=lambda e: (-len(partners[e]), e))
        others = sorted(partners.pop(name) - done)
        done.add(name)
        if not others:
            continue
        for other in others:
            partners.get(other, set()).discard(name)
        out.append(f"{_what(snapshot, name)} {verb} {_group(snapshot, others)}")
        partners = {e: p for e, p in partners.items() if p}
    return out


def _what(snapshot, name: str) -> str:
    return f"body {name}" if name in snapshot.bodies else f"the static collider {name}"


def _group(snapshot, names: list[str]) -> str:
    if len(names) == 1:
        return _what(snapshot, names[0])
    bodies = [n for n in names if n in snapshot.bodies]
    kind = "bodies" if len(bodies) == len(names) else "elements"
    common = os.path.commonpath(names) if all(n.startswith("/") for n in names) else ""
    return f"{len(names)} {kind}" + (f" of {common}" if common not in ("", "/") else "")


def pairs(cmp: Comparison, target: str):
    lost, added = pair_changes(cmp)
    ref = cmp.reference
    problems = unread(cmp)
    return {
        "filters_read": Component(float(len(problems)), 0.0, None, problems or None, unit="count"),
        "pairs_lost": Component(float(len(lost)), 0.0, describe(ref, lost[:SHOWN], "no longer collides with") or None,
                                None, unit="count"),
        "pairs_added": Component(float(len(added)), 0.0, describe(ref, added[:SHOWN], "now collides with") or None,
                                 None, unit="count"),
    }


MEASURES = {"pairs": pairs}


def targets(reference, measure: str | None = None) -> list[str]:
    return [WHOLE_ASSET] if len(reference.colliders) > 1 else []
