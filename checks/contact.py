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


def _blocked(snapshot) -> frozenset:
    return snapshot.contact.blocked if snapshot.contact is not None else frozenset()


def pair_changes(cmp: Comparison) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(lost, added): reference collider pairs, sorted, that the candidate filters where the
    reference lets them touch, and that it lets touch where the reference filters them."""
    ref, cand, match = cmp.reference, cmp.candidate, cmp.match.colliders
    back = {c: r for r, c in match.items() if c}

    def comparable(ra: str, rb: str, ca: str, cb: str) -> bool:
        return not (never_touch(ref.colliders[ra], ref.colliders[rb], ref.joints)
                    or never_touch(cand.colliders[ca], cand.colliders[cb], cand.joints))

    ref_blocked, cand_blocked = _blocked(ref), _blocked(cand)
    lost, added = set(), set()
    for ca, cb in cand_blocked:
        ra, rb = back.get(ca), back.get(cb)
        if ra and rb and tuple(sorted((ra, rb))) not in ref_blocked and comparable(ra, rb, ca, cb):
            lost.add(tuple(sorted((ra, rb))))
    for ra, rb in ref_blocked:
        ca, cb = match.get(ra), match.get(rb)
        if ca and cb and tuple(sorted((ca, cb))) not in cand_blocked and comparable(ra, rb, ca, cb):
            added.add((ra, rb))
    return sorted(lost), sorted(added)


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
    return {
        "pairs_lost": Component(float(len(lost)), 0.0, describe(ref, lost[:SHOWN], "no longer collides with") or None,
                                None, unit="count"),
        "pairs_added": Component(float(len(added)), 0.0, describe(ref, added[:SHOWN], "now collides with") or None,
                                 None, unit="count"),
    }


MEASURES = {"pairs": pairs}


def targets(reference, measure: str | None = None) -> list[str]:
    return [WHOLE_ASSET] if len(reference.colliders) > 1 else []
