"""Every gate, listed once: its name, its kind and the function that evaluates it.

The xdist controller only parametrizes the tests and decides the outcome from their records,
so the plugin needs the names without importing pxr, scipy and the check families (about a
second of start-up): the functions are named here (`module:function` in gates/) and imported
only when a gate is evaluated (`evaluator`). The order is the tests' order.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from .validity.rules import RULES

# The candidate must also compose and read; checked after the file-level rules.
STAGE_RULE = "stage_reads"
VALIDITY_RULES = tuple(RULES) + (STAGE_RULE,)


@dataclass(frozen=True)
class Gate:
    name: str
    function: str    # "module:function" in gates/; it takes (measurements, profile)


PRESERVATION = (
    Gate("body_correspondence", "preservation:body_correspondence"),
    Gate("degrees_of_freedom", "preservation:degrees_of_freedom"),
    Gate("healthy_joints", "preservation:healthy_joints"),
    Gate("healthy_body_properties", "preservation:healthy_body_properties"),
    Gate("retained_visible_components", "preservation:retained_visible_components"),
    Gate("collision_support", "preservation:collision_support"),
    Gate("composition_errors", "preservation:composition_errors"),
    Gate("joint_count", "preservation:joint_count"),
    Gate("physics_scene", "scene_preservation:physics_scene"),
    Gate("static_scenery", "scene_preservation:static_scenery"),
    Gate("simulator_attributes", "scene_preservation:simulator_attributes"),
    Gate("healthy_materials", "scene_preservation:healthy_materials"),
    Gate("contact_pairs", "physics_model_preservation:contact_pairs"),
    Gate("simulation_owners", "physics_model_preservation:simulation_owners"),
    Gate("simulator_relationships", "physics_model_preservation:simulator_relationships"),
    Gate("joint_body_order", "physics_model_preservation:joint_body_order"),
)
OBJECTIVE = (
    Gate("all_joints", "objective:all_joints"),
    Gate("all_bodies", "objective:all_bodies"),
    Gate("articulation_preserved", "objective:articulation_preserved"),
    Gate("composition_complete", "objective:composition_complete"),
)
PRESERVATION_GATES = tuple(g.name for g in PRESERVATION)
OBJECTIVE_GATES = tuple(g.name for g in OBJECTIVE)
_BY_KIND = {"preservation": {g.name: g for g in PRESERVATION}, "objective": {g.name: g for g in OBJECTIVE}}


def evaluator(kind: str, name: str) -> Callable:
    """The function that evaluates a preservation or objective gate (imported on first use)."""
    module, _, function = _BY_KIND[kind][name].function.partition(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), function)


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
