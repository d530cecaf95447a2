"""The inner loop (`pytest tests -m "not slow" -n 2`, docs/developing.md): which tests are slow.

A sweep over many cases keeps its representatives in the inner loop and marks the rest slow, so
that every family, gate and command still runs there at least once (tests/test_inner_loop.py
checks that) while the whole sweep runs in the full suite.
"""
from __future__ import annotations

from collections.abc import Iterable

import pytest

slow = pytest.mark.slow

# The committed cases the inner loop grades (reference 1.0, input 0.0): five hand-authored ones
# whose faults span every family of profiles/families.py (tests/test_inner_loop.py checks that);
# the other cases repeat those families on other assets and units and run in the full suite.
CASES_IN_THE_INNER_LOOP = (
    "ant_material_and_composition", "ant_redundant_and_root", "cabinet_handle_and_collider", "hopper_body_and_com",
    "ant_filter_and_owner",
)
# Cases whose single-fault repairs the inner loop grades (each strictly between 0 and 1).
SINGLE_REPAIRS_IN_THE_INNER_LOOP = ("hopper_body_and_com",)


def representatives(values: Iterable, keep: Iterable, ids=None) -> list:
    """`values` as parameters: those in `keep` in the inner loop, every other one marked slow.
    `keep` must name values of the sweep (a renamed case would otherwise silently leave it)."""
    values, keep = list(values), set(keep)
    missing = keep - set(values)
    if missing:
        raise ValueError(f"the inner loop's representatives are not in the sweep: {sorted(missing, key=str)}")
    ids = list(ids) if ids is not None else [None] * len(values)
    return [pytest.param(*(v if isinstance(v, tuple) else (v,)), id=i, marks=() if v in keep else slow)
            for v, i in zip(values, ids)]
