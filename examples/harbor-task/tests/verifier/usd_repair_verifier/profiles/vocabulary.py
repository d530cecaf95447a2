"""The words a profile may use: fault kinds, the checks each one selects, tolerances.

A fault kind names what was broken; its checks are (family, measure) pairs run
on the fault's target. Target kinds: "joint", "body" and "component" (a
visible gprim) are reference prim paths, "asset" is the whole asset ("*").
"""
from __future__ import annotations

from dataclasses import dataclass


# Every check a profile may name: family -> its measures (checks/registry.py runs them; a
# test keeps the two equal). Here so that reading a profile needs none of the measuring code.
MEASURES = {
    "joint": ("existence", "graph", "frame", "range", "state", "redundant"),
    "body": ("state", "hierarchy"),
    "articulation": ("roots",),
    "geometry": ("placement", "shape"),
    "collision": ("coverage", "free_space"),
    "mass": ("mass", "center_of_mass", "inertia"),
    "material": ("visual", "physics"),
    "composition": ("errors",),
}


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
              "a rigid body nested under another body than in the reference"),
    FaultKind("component_moved", "component", (("geometry", "placement"),),
              "a visible part translated or rotated"),
    FaultKind("component_reshaped", "component", (("geometry", "shape"),),
              "a visible part scaled or its points corrupted"),
    FaultKind("collision_removed", "body", (("collision", "coverage"),),
              "the body's colliders lose their CollisionAPI"),
    FaultKind("collision_disabled", "body", (("collision", "coverage"),),
              "the body's colliders have collisionEnabled = false"),
    FaultKind("collider_shrunk", "body", (("collision", "coverage"),),
              "a collider (not itself visible) scaled down"),
    FaultKind("collision_over_approximated", "body", (("collision", "free_space"),),
              "a mesh collider's approximation switched to one that fills free space"),
    FaultKind("mass_unit_factor", "body", (("mass", "mass"), ("mass", "inertia")),
              "a body's mass authored in grams for kilograms (mass and inertia x1000)"),
    FaultKind("density_misplaced", "body", (("mass", "mass"),),
              "collider densities authored on the body instead, changing the controlling mass"),
    FaultKind("inertia_invalid", "body", (("mass", "inertia"),),
              "a body's diagonal inertia authored with a zero and a negative moment"),
    FaultKind("center_of_mass_moved", "body", (("mass", "center_of_mass"),),
              "a body's centre of mass authored 20% of its size away"),
    FaultKind("visual_material", "component", (("material", "visual"),),
              "a component's material binding removed or swapped for another material"),
    FaultKind("display_appearance", "component", (("material", "visual"),),
              "an unbound part's display colour or opacity changed (what a renderer draws it with)"),
    FaultKind("physics_material", "body", (("material", "physics"),),
              "the friction or restitution of a body's colliders' physics material changed"),
    FaultKind("broken_asset_path", "asset", (("composition", "errors"),),
              "a sublayer, reference or payload pointed at a file missing from the package"),
]}

DEFAULT_TOLERANCES = {
    "joint_position_m": 1e-3,
    "joint_angle_deg": 0.5,
    "limit_angle_deg": 0.5,
    "limit_linear_m": 1e-3,
    "drive_relative": 0.01,
    "geometry_position_m": 1e-3,
    "geometry_angle_deg": 0.5,
    "geometry_shape_m": 1e-3,
    "geometry_area_relative": 0.01,
    "collision_margin_m": 1e-3,
    "collision_coverage": 0.02,
    "collision_free_space": 0.05,
    "mass_relative": 0.01,      # |log ratio| <= log1p(.)
    "com_m": 1e-3,              # world distance, metres
    "inertia_relative": 0.02,   # max |log ratio| over sorted principal moments <= log1p(.)
    "material_color": 0.02,     # max abs channel difference
    "material_scalar": 0.02,    # abs difference
    "density_relative": 0.01,   # physics material density, relative
    "friction_abs": 0.01,       # friction and restitution, abs difference
}

DEFAULT_SAMPLING = {"seed": 0, "surface_samples": 1024, "free_space_samples": 512}
DEFAULT_CORRESPONDENCE = {"max_body_cost": 1.25, "max_joint_cost": 1.25}
