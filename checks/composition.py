"""Composition family: composition errors of the composed stage (unresolved sublayers,
references, payloads; invalid arcs), beyond those the reference itself has.

One target, the whole asset ("*"). The error is a count: 0 passes; semantic
progress is the share of the input's extra errors that the repair removed.
The messages are reported, never compared (they name absolute paths).
"""
from __future__ import annotations

from .measurement import Comparison, Component

WHOLE_ASSET = "*"


def errors(cmp: Comparison, target: str):
    ref = list(cmp.reference.composition_errors)
    cand = list(cmp.candidate.composition_errors)
    return {"errors": Component(float(max(0, len(cand) - len(ref))), 0.0, ref, cand, unit="count")}


MEASURES = {"errors": errors}


def targets(reference, measure: str | None = None) -> list[str]:
    return [WHOLE_ASSET]
