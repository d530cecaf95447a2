"""The check families, each declared once: the one table everything else derives from.

A family is a module of pure measure functions in checks/ (its `MEASURES`: measure name ->
function, and `targets(reference, measure)`) plus one entry here saying everything the grader
knows about it:
- its measures, and for each: what kind of target it is run on, the tolerances it reads (a
  measure reading any other fails, checks/registry.py), which objective gate requires it to
  pass on every target, which preservation gate keeps it on the targets no fault touches, and
  what a fault it grades also changes unavoidably (its knock-on exemptions from preservation);
- the defaults of its tolerances;
- the authored attributes that feed it (an attribute authored wrongly fails every check that
  reads it, checks/authoring_errors.py) and which prims around a target count;
- its fault kinds: the checks each selects, and the injector that makes it (`module:function`,
  so `usdgrade inject` and `--targets` reach it).

checks/registry.py loads the modules from here; profiles/vocabulary.py (what a profile may
name), gates/ (who gates and exempts what) and authoring/inject (the injectors) read the same
entries. Adding a family is its module plus its entry: tests/test_family_conformance.py runs
every family through the same suite, and adds a toy family in a copy of the repository with
one module and one entry, nothing else. docs/architecture.md lists the rules a family keeps.

This module stays free of pxr and of the measuring code: the pytest plugin's controller and
profile validation read it before anything is measured.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Target kinds: "joint" and "body" are reference prim paths, "component" a visible gprim's
# path, "asset" the whole asset ("*").
TARGET_KINDS = ("joint", "body", "component", "asset")
# How a knock-on exemption finds its elements from the fault's target: the target itself, the
# body that owns a visible component, that body only when the component is also one of its
# colliders, the joints attached to a body, the other joints between a joint's two bodies, the
# whole asset ("*").
RELATIONS = ("same", "owner_body", "collider_owner_body", "attached_joints", "parallel_joints", "asset")
# Which prims' authoring problems count against a check, beyond the element and the prims above
# it: the prims a body owns, the transforms above a joint's bodies, or (instead of the element's
# own) a part's or a body's colliders' bound materials.
SCOPES = ("element", "body_prims", "joint_bodies", "bound_materials")
# Attributes that feed no check: the physics_scene preservation gate reads them.
UNCHECKED_ATTRIBUTES = ("physics:gravityDirection", "physics:gravityMagnitude")
ALL = ()   # in a KnockOn: every measure of the family


class InjectionError(Exception):
    """The fault cannot be injected on this target (wrong kind of prim, nothing to break): what an
    injector the table names raises, wherever its module lives."""


@dataclass(frozen=True)
class KnockOn:
    """What a fault graded by a measure also changes: `measures` of `family` (ALL: every one) on the
    elements `relation` finds from the fault's target. Exempt from preservation, never from grading."""

    relation: str
    family: str
    measures: tuple[str, ...] = ALL
    # The cause's components it follows from: it applies only where one of them fails on the input
    # (a body disabled changes its joints, one made kinematic does not). Empty: always.
    when: tuple[str, ...] = ()


@dataclass(frozen=True)
class Measure:
    name: str
    target_kind: str
    objective_gate: str | None = None    # must pass on every target for the reward to lift the cap
    preservation_gate: str | None = None  # must still pass on every target no fault exempts
    tolerances: tuple[str, ...] = ()      # the tolerances it reads
    knock_on: tuple[KnockOn, ...] = ()
    # It measures the layer layout itself (how the files compose), the one thing another layout
    # may change: while a check of it still fails, content its fault lost (a missing file's
    # opinions) is not counted against the candidate by the attribute-preserving gates.
    measures_layout: bool = False


@dataclass(frozen=True)
class FaultKind:
    name: str
    target: str                          # a target kind
    checks: tuple[tuple[str, str], ...]  # (family, measure) pairs graded on the fault's target
    summary: str
    injector: str = ""                   # "module:function", the module by its full name


@dataclass(frozen=True)
class Family:
    name: str
    module: str                          # its module in checks/
    measures: tuple[Measure, ...]
    tolerances: dict[str, float] = field(default_factory=dict)
    fault_kinds: tuple[FaultKind, ...] = ()
    # Authored attributes that feed it: exact names, or prefixes ending in "*" ("*" alone: any
    # attribute no more specific pattern claims: points, sizes, transforms, visibility).
    reads: tuple[str, ...] = ()
    scope: str = "element"               # one of SCOPES


SHAPE = "*"   # geometry and transforms: everything that places or shapes a prim
JOINT_ATTRIBUTES = tuple(f"{p}*" for p in (
    "physics:localPos", "physics:localRot", "physics:lowerLimit", "physics:upperLimit", "physics:axis",
    "physics:jointEnabled", "physics:excludeFromArticulation", "physics:break", "physics:minDistance",
    "physics:maxDistance", "drive:", "limit:"))
COLLIDER_ATTRIBUTES = ("physics:collisionEnabled", "physics:approximation")
MASS_ATTRIBUTES = ("physics:mass", "physics:density", "physics:centerOfMass", "physics:diagonalInertia",
                   "physics:principalAxes")
BODY_ATTRIBUTES = ("physics:rigidBodyEnabled", "physics:kinematicEnabled", "physics:velocity",
                   "physics:angularVelocity")
# Each knock-on is what injecting a fault graded by its measure, alone, on a reference is measured
# to change (tests/test_knock_ons.py shows each one happen); nothing else is excused.
TRAVEL = ("limit_angle_deg", "limit_linear_m")
# Which bodies the articulation's joints join, and which joint or body is its root, move with any
# fault that changes what a joint joins or whether it or its body simulates.
ROOTS_MOVE = KnockOn("asset", "articulation", ("roots",))


def _inject(module: str, function: str) -> str:
    return f"usd_repair_verifier.authoring.inject.{module}:{function}"


def _joint(name: str, tolerances: tuple[str, ...] = (), knock_on: tuple[KnockOn, ...] = ()) -> Measure:
    return Measure(name, "joint", "all_joints", "healthy_joints", tolerances, knock_on)


FAMILIES: tuple[Family, ...] = (
    Family(
        "joint", "joints",
        (_joint("existence", knock_on=(KnockOn("same", "joint", ("graph", "frame", "range", "state")), ROOTS_MOVE)),
         _joint("graph", knock_on=(KnockOn("same", "joint", ("frame", "range", "state")), ROOTS_MOVE)),
         _joint("frame", ("joint_position_m", "joint_angle_deg")),
         _joint("range", TRAVEL),
         _joint("state", ("drive_relative", *TRAVEL), knock_on=(ROOTS_MOVE,)),
         # An extra joint is not a property of one reference joint: the joint_count gate bounds it.
         # The other joints between the same two bodies count the extra one too.
         Measure("redundant", "joint", knock_on=(KnockOn("parallel_joints", "joint", ("redundant",)),))),
        {"joint_position_m": 1e-3, "joint_angle_deg": 0.5, "limit_angle_deg": 0.5, "limit_linear_m": 1e-3,
         "drive_relative": 0.01},
        (FaultKind("joint_frame", "joint", (("joint", "frame"),),
                   "a joint frame moved or rotated on one side", _inject("joint", "joint_frame")),
         FaultKind("joint_limits", "joint", (("joint", "range"),),
                   "joint limits inverted or changed", _inject("joint", "joint_limits")),
         FaultKind("joint_limit_units", "joint", (("joint", "range"),),
                   "revolute limits authored in radians instead of degrees", _inject("joint", "joint_limit_units")),
         FaultKind("joint_graph", "joint", (("joint", "graph"),),
                   "a joint attached to the wrong body", _inject("joint", "joint_graph")),
         FaultKind("joint_type", "joint", (("joint", "graph"),),
                   "a joint's type changed", _inject("joint", "joint_type")),
         FaultKind("joint_state", "joint", (("joint", "state"),),
                   "a joint disabled, or its collision or articulation flags flipped", _inject("joint", "joint_state")),
         FaultKind("joint_drive", "joint", (("joint", "state"),),
                   "a joint drive removed or its gains changed", _inject("joint", "joint_drive")),
         FaultKind("joint_missing", "joint", (("joint", "existence"), ("joint", "frame")),
                   "a joint deleted", _inject("joint", "joint_missing")),
         FaultKind("redundant_constraint", "joint", (("joint", "redundant"),),
                   "an extra joint between two bodies the reference already joins",
                   _inject("joint", "redundant_constraint"))),
        reads=(*JOINT_ATTRIBUTES, SHAPE), scope="joint_bodies",
    ),
    Family(
        "articulation", "articulation",
        (Measure("roots", "asset", "articulation_preserved"),),
        {},
        (FaultKind("articulation_root", "asset", (("articulation", "roots"),),
                   "the articulation root removed, moved to an invalid prim or duplicated",
                   _inject("body", "articulation_root")),),
    ),
    Family(
        "body", "bodies",
        (Measure("state", "body", "all_bodies", "healthy_body_properties",
                 # A disabled body is no rigid body for the UsdPhysics parser: the joints attached
                 # to it join other bodies (their graph). A kinematic body changes neither; a joint
                 # beside it that is disabled or loses its drive is a fault of its own. (A nested
                 # disabled body's colliders also count towards the body above it; that is no
                 # knock-on, since it would excuse an independent mass fault there.)
                 knock_on=(KnockOn("attached_joints", "joint", ("graph",), when=("enabled",)),
                           KnockOn("asset", "articulation", ("roots",), when=("enabled",)))),
         Measure("hierarchy", "body", "all_bodies")),
        {},
        (FaultKind("body_state", "body", (("body", "state"),),
                   "a rigid body disabled or made kinematic", _inject("body", "body_state")),
         FaultKind("body_hierarchy", "body", (("body", "hierarchy"),),
                   "a rigid body nested under another body than in the reference", _inject("body", "body_hierarchy"))),
        reads=BODY_ATTRIBUTES, scope="body_prims",
    ),
    Family(
        "geometry", "geometry",
        # A visible part moved or reshaped also moves its body's collision coverage (the share of
        # the visible surface inside the colliders), and its free space and mass when the part is
        # also a collider (or its body's mass comes from its geometry). Free space is the
        # colliders' alone: a healthy collider beside a targeted visible part keeps its own.
        (Measure("placement", "component", "all_bodies", None,
                 ("geometry_position_m", "geometry_angle_deg"), knock_on=(
                     KnockOn("owner_body", "collision", ("coverage",)),
                     KnockOn("collider_owner_body", "collision", ("free_space",)),
                     KnockOn("owner_body", "mass", ("center_of_mass", "inertia")))),
         # A part scaled about its origin also moves its centroid.
         Measure("shape", "component", "all_bodies", "retained_visible_components",
                 ("geometry_shape_m", "geometry_area_relative"), knock_on=(
                     KnockOn("same", "geometry", ("placement",)),
                     KnockOn("owner_body", "collision", ("coverage",)),
                     KnockOn("collider_owner_body", "collision", ("free_space",)),
                     KnockOn("owner_body", "mass")))),
        {"geometry_position_m": 1e-3, "geometry_angle_deg": 0.5, "geometry_shape_m": 1e-3,
         "geometry_area_relative": 0.01},
        (FaultKind("component_moved", "component", (("geometry", "placement"),),
                   "a visible part translated or rotated", _inject("geometry", "component_moved")),
         FaultKind("component_reshaped", "component", (("geometry", "shape"),),
                   "a visible part scaled or its points corrupted", _inject("geometry", "component_reshaped"))),
        reads=(SHAPE,),
    ),
    Family(
        "collision", "collision",
        # A removed collider has no physics material left to compare.
        (Measure("coverage", "body", "all_bodies", "collision_support", ("collision_margin_m", "collision_coverage"),
                 knock_on=(KnockOn("same", "mass"), KnockOn("same", "material", ("physics",)))),
         Measure("free_space", "body", "all_bodies", "collision_support", ("collision_free_space", "collision_margin_m"),
                 knock_on=(KnockOn("same", "mass"),))),
        {"collision_margin_m": 1e-3, "collision_coverage": 0.02, "collision_free_space": 0.05},
        (FaultKind("collision_removed", "body", (("collision", "coverage"),),
                   "the body's colliders lose their CollisionAPI", _inject("collision", "collision_removed")),
         FaultKind("collision_disabled", "body", (("collision", "coverage"),),
                   "the body's colliders have collisionEnabled = false", _inject("collision", "collision_disabled")),
         FaultKind("collider_shrunk", "body", (("collision", "coverage"),),
                   "a collider (not itself visible) scaled down", _inject("collision", "collider_shrunk")),
         FaultKind("collision_over_approximated", "body", (("collision", "free_space"),),
                   "a mesh collider's approximation switched to one that fills free space",
                   _inject("collision", "collision_over_approximated"))),
        reads=(*COLLIDER_ATTRIBUTES, SHAPE), scope="body_prims",
    ),
    Family(
        "mass", "mass",
        # Unmeasured (so neither gating nor preserved) where the reference establishes nothing.
        # A mass moved by its density moves the centre of mass and inertia with it (a computed
        # inertia scales with the mass); a centre of mass moved, the inertia about it.
        (Measure("mass", "body", "all_bodies", "healthy_body_properties", ("mass_relative",),
                 (KnockOn("same", "mass", ("center_of_mass", "inertia")),)),
         Measure("center_of_mass", "body", "all_bodies", "healthy_body_properties", ("com_m",),
                 (KnockOn("same", "mass", ("inertia",)),)),
         Measure("inertia", "body", "all_bodies", "healthy_body_properties", ("inertia_relative",))),
        {"mass_relative": 0.01,      # |log ratio| <= log1p(.)
         "com_m": 1e-3,              # world distance, metres
         "inertia_relative": 0.02},  # max |log ratio| over sorted principal moments <= log1p(.)
        (FaultKind("mass_changed", "body", (("mass", "mass"),),
                   "a body's mass changed alone (x4 as a body mass; an authored inertia kept)",
                   _inject("mass", "mass_changed")),
         FaultKind("mass_unit_factor", "body", (("mass", "mass"), ("mass", "inertia")),
                   "a body's mass authored in grams for kilograms (mass and inertia x1000)",
                   _inject("mass", "mass_unit_factor")),
         FaultKind("density_misplaced", "body", (("mass", "mass"),),
                   "collider densities authored on the body instead, changing the controlling mass",
                   _inject("mass", "density_misplaced")),
         FaultKind("inertia_invalid", "body", (("mass", "inertia"),),
                   "a body's diagonal inertia authored with a zero and a negative moment",
                   _inject("mass", "inertia_invalid")),
         FaultKind("center_of_mass_moved", "body", (("mass", "center_of_mass"),),
                   "a body's centre of mass authored 20% of its size away", _inject("mass", "center_of_mass_moved"))),
        reads=(*MASS_ATTRIBUTES, *COLLIDER_ATTRIBUTES, SHAPE), scope="body_prims",
    ),
    Family(
        "material", "materials",
        (Measure("visual", "component", "all_bodies", "healthy_materials", ("material_color", "material_scalar")),
         Measure("physics", "body", "all_bodies", "healthy_materials", ("density_relative", "friction_abs"))),
        {"material_color": 0.02,     # max abs channel difference
         "material_scalar": 0.02,    # abs difference
         "density_relative": 0.01,   # physics material density, relative
         "friction_abs": 0.01},      # friction and restitution, abs difference
        (FaultKind("visual_material", "component", (("material", "visual"),),
                   "a component's material binding removed or swapped for another material",
                   _inject("material", "visual_material")),
         FaultKind("display_appearance", "component", (("material", "visual"),),
                   "an unbound part's display colour or opacity changed (what a renderer draws it with)",
                   _inject("material", "display_appearance")),
         FaultKind("physics_material", "body", (("material", "physics"),),
                   "the friction or restitution of a body's colliders' physics material changed",
                   _inject("material", "physics_material"))),
        # The display primvars, and every physics: attribute no other family claims (friction, restitution).
        reads=("primvars:display*", "physics:*"), scope="bound_materials",
    ),
    Family(
        "composition", "composition",
        # Gated without this measure: composition_complete requires no error at all, and the
        # composition_errors preservation gate bounds the count by the input's.
        (Measure("errors", "asset", measures_layout=True),),
        {},
        (FaultKind("broken_asset_path", "asset", (("composition", "errors"),),
                   "a sublayer, reference or payload pointed at a file missing from the package",
                   _inject("composition", "broken_asset_path")),),
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


def measure_entry(family: str, name: str) -> Measure:
    return next(m for m in BY_NAME[family].measures if m.name == name)


def _check_family(family: Family, measures: set[tuple[str, str]]) -> None:
    names = [m.name for m in family.measures]
    assert len(set(names)) == len(names), f"family {family.name} lists a measure twice"
    assert family.scope in SCOPES, f"family {family.name}: scope {family.scope!r} is not one of {SCOPES}"
    assert all(p == "*" or "*" not in p[:-1] for p in family.reads), f"family {family.name}: bad pattern in reads"
    read = set()
    for m in family.measures:
        assert m.target_kind in TARGET_KINDS, f"{family.name}.{m.name}: bad target kind {m.target_kind!r}"
        undeclared = set(m.tolerances) - set(family.tolerances)
        assert not undeclared, f"{family.name}.{m.name} reads tolerances {sorted(undeclared)} with no default"
        read |= set(m.tolerances)
        for k in m.knock_on:
            assert k.relation in RELATIONS, f"{family.name}.{m.name}: knock-on relation {k.relation!r}"
            assert k.family in BY_NAME, f"{family.name}.{m.name}: knock-on on unknown family {k.family!r}"
            unknown = [x for x in k.measures if (k.family, x) not in measures]
            assert not unknown, f"{family.name}.{m.name}: knock-on on undeclared measures {unknown}"
    unread = set(family.tolerances) - read
    assert not unread, f"family {family.name} declares tolerances no measure reads: {sorted(unread)}"


def _check_table() -> None:
    """Fail at import, naming the entry, on a table that contradicts itself."""
    measures = {(f.name, m.name) for f in FAMILIES for m in f.measures}
    tolerances: set[str] = set()
    kinds: set[str] = set()
    for family in FAMILIES:
        _check_family(family, measures)
        assert not tolerances & set(family.tolerances), f"family {family.name} redeclares a tolerance"
        tolerances |= set(family.tolerances)
        for kind in family.fault_kinds:
            assert kind.name not in kinds, f"fault kind {kind.name} declared twice"
            kinds.add(kind.name)
            assert kind.target in TARGET_KINDS, f"fault kind {kind.name}: bad target kind {kind.target}"
            unknown = [c for c in kind.checks if c not in measures]
            assert not unknown, f"fault kind {kind.name} selects undeclared measures {unknown}"
            module, _, function = kind.injector.partition(":")
            assert module and function, f"fault kind {kind.name}: injector {kind.injector!r} is not module:function"


_check_table()
