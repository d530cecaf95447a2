"""The names of every gate, importable without the measuring code.

The xdist controller only parametrizes the tests and decides the outcome from
their records, so the plugin needs these names without importing pxr, scipy and
the check families (about a second of start-up). The gate modules check at import
that their tables list exactly these names.
"""
from __future__ import annotations

from .validity.rules import RULES

# The candidate must also compose and read; checked after the file-level rules.
STAGE_RULE = "stage_reads"
VALIDITY_RULES = tuple(RULES) + (STAGE_RULE,)

PRESERVATION_GATES = (
    "body_correspondence",
    "degrees_of_freedom",
    "healthy_joints",
    "healthy_body_properties",
    "retained_visible_components",
    "collision_support",
    "composition_errors",
    "joint_count",
    "physics_scene",
    "static_scenery",
    "simulator_attributes",
    "healthy_materials",
)
OBJECTIVE_GATES = ("all_joints", "all_bodies", "articulation_preserved", "composition_complete")


def _check_family_table() -> None:
    """Every gate the family table names exists (profiles/families.py is below the gates)."""
    from usd_repair_verifier.profiles.families import FAMILIES
    for family in FAMILIES:
        for m in family.measures:
            if m.objective_gate not in (None, *OBJECTIVE_GATES):
                raise ImportError(f"{family.name}.{m.name}: no objective gate {m.objective_gate!r}")
            if m.preservation_gate not in (None, *PRESERVATION_GATES):
                raise ImportError(f"{family.name}.{m.name}: no preservation gate {m.preservation_gate!r}")


_check_family_table()
