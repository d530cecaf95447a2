"""The words a profile may use: fault kinds, the checks each one selects, tolerances.

A fault kind names what was broken; its checks are (family, measure) pairs run on the
fault's target. All of them come from the family table (profiles/families.py); the
sampling and correspondence defaults are the grade's own.
"""
from __future__ import annotations

from .families import FAMILIES, FaultKind

# Every check a profile may name: family -> its measures. Derived from the family table, so
# reading a profile needs none of the measuring code (checks/registry.py runs them).
MEASURES = {family.name: tuple(m.name for m in family.measures) for family in FAMILIES}

FAULT_KINDS: dict[str, FaultKind] = {kind.name: kind for family in FAMILIES for kind in family.fault_kinds}

DEFAULT_TOLERANCES = {name: value for family in FAMILIES for name, value in family.tolerances.items()}

DEFAULT_SAMPLING = {"seed": 0, "surface_samples": 1024, "free_space_samples": 512}
DEFAULT_CORRESPONDENCE = {"max_body_cost": 1.25, "max_joint_cost": 1.25}
