"""The check families, each declared once: the one table everything else derives from.

A family is a module of pure measure functions in checks/ (its `MEASURES`: measure name ->
function, and `targets(reference, measure)`) plus one entry here saying
- which measures it has, and for each: what kind of target it is run on, which objective
  gate requires it to pass on every target, and which preservation gate keeps it on the
  targets no fault touches;
- the tolerances its measures read, with their defaults;
- the fault kinds that break it, and the checks each one selects.

checks/registry.py loads the modules from here; profiles/vocabulary.py (what a profile may
name), gates/objective.py and gates/preservation.py (who gates what) read the same entries.
Adding a family is its module plus its entry: tests/test_toy_family.py adds one in a copy of
the repository and shows it graded, gated and preserved.

This module stays free of pxr and of the measuring code: the pytest plugin's controller and
profile validation read it before anything is measured.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Target kinds: "joint" and "body" are reference prim paths, "component" a visible gprim's
# path, "asset" the whole asset ("*").
TARGET_KINDS = ("joint", "body", "component", "asset")


@dataclass(frozen=True)
class Measure:
    name: str
    target_kind: str
    objective_gate: str | None = None    # must pass on every target for the reward to lift the cap
    preservation_gate: str | None = None  # must still pass on every target no fault exempts


@dataclass(frozen=True)
class FaultKind:
    name: str
    target: str                          # a target kind
    checks: tuple[tuple[str, str], ...]  # (family, measure) pairs graded on the fault's target
    summary: str


@dataclass(frozen=True)
class Family:
    name: str
    module: str                          # its module in checks/
    measures: tuple[Measure, ...]
    tolerances: dict[str, float] = field(default_factory=dict)
    fault_kinds: tuple[FaultKind, ...] = ()


def _joint(name: str, preserved: bool = True) -> Measure:
    return Measure(name, "joint", "all_joints", "healthy_joints" if preserved else None)


FAMILIES: tuple[Family, ...] = (
    Family(
        "joint", "joints",
        (_joint("existence"), _joint("graph"), _joint("frame"), _joint("range"), _joint("state"),
         # An extra joint is not a property of one reference joint: the joint_count gate bounds it.
         Measure("redundant", "joint")),
        {"joint_position_m": 1e-3, "joint_angle_deg": 0.5, "limit_angle_deg": 0.5, "limit_linear_m": 1e-3,
         "drive_relative": 0.01},
        (FaultKind("joint_frame", "joint", (("joint", "frame"),),
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
                   "an extra joint between two bodies the reference already joins")),
    ),
    Family(
        "articulation", "articulation",
        (Measure("roots", "asset", "articulation_preserved"),),
        {},
        (FaultKind("articulation_root", "asset", (("articulation", "roots"),),
                   "the articulation root removed, moved to an invalid prim or duplicated"),),
    ),
    Family(
        "body", "bodies",
        (Measure("state", "body", "all_bodies", "healthy_body_properties"),
         Measure("hierarchy", "body", "all_bodies")),
        {},
        (FaultKind("body_state", "body", (("body", "state"),),
                   "a rigid body disabled or made kinematic"),
         FaultKind("body_hierarchy", "body", (("body", "hierarchy"),),
                   "a rigid body nested under another body than in the reference")),
    ),
    Family(
        "geometry", "geometry",
        (Measure("placement", "component", "all_bodies"),
         Measure("shape", "component", "all_bodies", "retained_visible_components")),
        {"geometry_position_m": 1e-3, "geometry_angle_deg": 0.5, "geometry_shape_m": 1e-3,
         "geometry_area_relative": 0.01},
        (FaultKind("component_moved", "component", (("geometry", "placement"),),
                   "a visible part translated or rotated"),
         FaultKind("component_reshaped", "component", (("geometry", "shape"),),
                   "a visible part scaled or its points corrupted")),
    ),
    Family(
        "collision", "collision",
        (Measure("coverage", "body", "all_bodies", "collision_support"),
         Measure("free_space", "body", "all_bodies", "collision_support")),
        {"collision_margin_m": 1e-3, "collision_coverage": 0.02, "collision_free_space": 0.05},
        (FaultKind("collision_removed", "body", (("collision", "coverage"),),
                   "the body's colliders lose their CollisionAPI"),
         FaultKind("collision_disabled", "body", (("collision", "coverage"),),
                   "the body's colliders have collisionEnabled = false"),
         FaultKind("collider_shrunk", "body", (("collision", "coverage"),),
                   "a collider (not itself visible) scaled down"),
         FaultKind("collision_over_approximated", "body", (("collision", "free_space"),),
                   "a mesh collider's approximation switched to one that fills free space")),
    ),
    Family(
        "mass", "mass",
        # Unmeasured (so neither gating nor preserved) where the reference establishes nothing.
        (Measure("mass", "body", "all_bodies", "healthy_body_properties"),
         Measure("center_of_mass", "body", "all_bodies", "healthy_body_properties"),
         Measure("inertia", "body", "all_bodies", "healthy_body_properties")),
        {"mass_relative": 0.01,      # |log ratio| <= log1p(.)
         "com_m": 1e-3,              # world distance, metres
         "inertia_relative": 0.02},  # max |log ratio| over sorted principal moments <= log1p(.)
        (FaultKind("mass_unit_factor", "body", (("mass", "mass"), ("mass", "inertia")),
                   "a body's mass authored in grams for kilograms (mass and inertia x1000)"),
         FaultKind("density_misplaced", "body", (("mass", "mass"),),
                   "collider densities authored on the body instead, changing the controlling mass"),
         FaultKind("inertia_invalid", "body", (("mass", "inertia"),),
                   "a body's diagonal inertia authored with a zero and a negative moment"),
         FaultKind("center_of_mass_moved", "body", (("mass", "center_of_mass"),),
                   "a body's centre of mass authored 20% of its size away")),
    ),
    Family(
        "material", "materials",
        (Measure("visual", "component", "all_bodies", "healthy_materials"),
         Measure("physics", "body", "all_bodies", "healthy_materials")),
        {"material_color": 0.02,     # max abs channel difference
         "material_scalar": 0.02,    # abs difference
         "density_relative": 0.01,   # physics material density, relative
         "friction_abs": 0.01},      # friction and restitution, abs difference
        (FaultKind("visual_material", "component", (("material", "visual"),),
                   "a component's material binding removed or swapped for another material"),
         FaultKind("display_appearance", "component", (("material", "visual"),),
                   "an unbound part's display colour or opacity changed (what a renderer draws it with)"),
         FaultKind("physics_material", "body", (("material", "physics"),),
                   "the friction or restitution of a body's colliders' physics material changed")),
    ),
    Family(
        "composition", "composition",
        # Gated without this measure: composition_complete requires no error at all, and the
        # composition_errors preservation gate bounds the count by the input's.
        (Measure("errors", "asset"),),
        {},
        (FaultKind("broken_asset_path", "asset", (("composition", "errors"),),
                   "a sublayer, reference or payload pointed at a file missing from the package"),),
    ),
)

BY_NAME = {family.name: family for family in FAMILIES}


def gated_measures(gate: str) -> tuple[tuple[str, str], ...]:
    """(family, measure) pairs an objective gate requires on every target, in table order."""
    return tuple((f.name, m.name) for f in FAMILIES for m in f.measures if m.objective_gate == gate)


def preserved_measures(gate: str) -> tuple[tuple[str, str], ...]:
    """(family, measure) pairs a preservation gate keeps on every healthy target, in table order."""
    return tuple((f.name, m.name) for f in FAMILIES for m in f.measures if m.preservation_gate == gate)


def measure_names(family: str) -> tuple[str, ...]:
    return tuple(m.name for m in BY_NAME[family].measures)


def _check_table() -> None:
    """Fail at import, naming the entry, on a table that contradicts itself."""
    measures = {(f.name, m.name) for f in FAMILIES for m in f.measures}
    tolerances: set[str] = set()
    kinds: set[str] = set()
    for family in FAMILIES:
        names = [m.name for m in family.measures]
        assert len(set(names)) == len(names), f"family {family.name} lists a measure twice"
        assert all(m.target_kind in TARGET_KINDS for m in family.measures), f"family {family.name}: bad target kind"
        assert not tolerances & set(family.tolerances), f"family {family.name} redeclares a tolerance"
        tolerances |= set(family.tolerances)
        for kind in family.fault_kinds:
            assert kind.name not in kinds, f"fault kind {kind.name} declared twice"
            kinds.add(kind.name)
            assert kind.target in TARGET_KINDS, f"fault kind {kind.name}: bad target kind {kind.target}"
            unknown = [c for c in kind.checks if c not in measures]
            assert not unknown, f"fault kind {kind.name} selects undeclared measures {unknown}"


_check_table()
