"""The words a profile may use: fault kinds, the checks each one selects, tolerances.

A fault kind names what was broken; its checks are (family, measure) pairs run
on the fault's target. Target kinds: "joint" and "body" are reference prim
paths, "asset" is the whole asset ("*").
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FaultKind:
    name: str
    target: str                          # "joint" | "body" | "asset"
    checks: tuple[tuple[str, str], ...]  # (family, measure)
    summary: str


FAULT_KINDS = {k.name: k for k in [
    FaultKind("joint_frame", "joint", (("joint", "frame"),),
              "a joint frame moved or rotated on one side"),
    FaultKind("joint_limit_units", "joint", (("joint", "range"),),
              "revolute limits authored in radians instead of degrees"),
    FaultKind("joint_limits", "joint", (("joint", "range"),),
              "joint limits inverted or changed"),
    FaultKind("joint_graph", "joint", (("joint", "graph"),),
              "a joint attached to the wrong body"),
    FaultKind("joint_type", "joint", (("joint", "graph"),),
              "a joint's type changed"),
    FaultKind("joint_state", "joint", (("joint", "state"),),
              "a joint disabled, or its collision or articulation flags flipped"),
    FaultKind("joint_drive", "joint", (("joint", "state"),),
              "a joint drive removed or its gains changed"),
    FaultKind("joint_missing", "joint", (("joint", "existence"), ("joint", "frame")),
              "a joint deleted"),
    FaultKind("redundant_constraint", "joint", (("joint", "redundant"),),
              "an extra joint between two bodies the reference already joins"),
    FaultKind("articulation_root", "asset", (("articulation", "roots"),),
              "the articulation root removed, moved to an invalid prim or duplicated"),
    FaultKind("body_state", "body", (("body", "state"),),
              "a rigid body disabled or made kinematic"),
    FaultKind("body_hierarchy", "body", (("body", "hierarchy"),),
              "a rigid body re-parented under another body"),
]}

DEFAULT_TOLERANCES = {
    "joint_position_m": 1e-3,
    "joint_angle_deg": 0.5,
    "limit_angle_deg": 0.5,
    "limit_linear_m": 1e-3,
    "drive_relative": 0.01,
}

DEFAULT_SAMPLING = {"seed": 0, "surface_samples": 2048}
DEFAULT_CORRESPONDENCE = {"max_body_cost": 1.25, "max_joint_cost": 1.25}
