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

import enum
from dataclasses import dataclass, field

from .errors import Refused


class TargetKind(enum.StrEnum):
    """What a measure or a fault is aimed at: "joint" and "body" are reference prim paths,
    "component" a visible gprim's path, "asset" the whole asset ("*")."""

    JOINT = "joint"
    BODY = "body"
    COMPONENT = "component"
    ASSET = "asset"


class Relation(enum.StrEnum):
    """How a knock-on exemption finds its elements from the fault's target: the target itself, the
    body that owns a visible component, that body only when the component is also one of its
    colliders, the joints attached to a body, the other joints between a joint's two bodies, the
    whole asset ("*")."""

    SAME = "same"
    OWNER_BODY = "owner_body"
    COLLIDER_OWNER_BODY = "collider_owner_body"
    ATTACHED_JOINTS = "attached_joints"
    PARALLEL_JOINTS = "parallel_joints"
    ASSET = "asset"


class Scope(enum.StrEnum):
    """Which prims' authoring problems count against a check, beyond the element and the prims
    above it: the prims a body owns, the transforms above a joint's bodies, or (instead of the
    element's own) a part's or a body's colliders' bound materials."""

    ELEMENT = "element"
    BODY_PRIMS = "body_prims"
    JOINT_BODIES = "joint_bodies"
    BOUND_MATERIALS = "bound_materials"


TARGET_KINDS = tuple(TargetKind)
RELATIONS = tuple(Relation)
SCOPES = tuple(Scope)
# Attributes that feed no check: the physics_scene preservation gate reads them.
UNCHECKED_ATTRIBUTES = ("physics:gravityDirection", "physics:gravityMagnitude")
ALL = ()   # in a KnockOn: every measure of the family


class FamilyTableError(Exception):
    """The family table contradicts itself: raised at import, naming the entry (never an
    `assert`, which `python -O` removes)."""


class InjectionError(Refused):
    """The fault cannot be injected on this target (wrong kind of prim, nothing to break): what an
    injector the table names raises, wherever its module lives."""


@dataclass(frozen=True, kw_only=True)
class KnockOn:
    """What a fault graded by a measure also changes: `measures` of `family` (ALL: every one) on the
    elements `relation` finds from the fault's target. Exempt from preservation, never from grading."""

    relation: Relation
    family: str
    measures: tuple[str, ...] = ALL
    # The cause's components it follows from: it applies only where one of them fails on the input
    # (a body disabled changes its joints, one made kinematic does not). Empty: always.
    when: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Measure:
    name: str
    target_kind: TargetKind
    objective_gate: str | None = None    # must pass on every target for the reward to lift the cap
    preservation_gate: str | None = None  # must still pass on every target no fault exempts
    tolerances: tuple[str, ...] = ()      # the tolerances it reads
    knock_on: tuple[KnockOn, ...] = ()
    # It measures the layer layout itself (how the files compose), the one thing another layout
    # may change: while a check of it still fails, content its fault lost (a missing file's
    # opinions) is not counted against the candidate by the attribute-preserving gates.
    measures_layout: bool = False


@dataclass(frozen=True, kw_only=True)
class FaultKind:
    name: str
    target: TargetKind
    checks: tuple[tuple[str, str], ...]  # (family, measure) pairs graded on the fault's target
    summary: str
    injector: str = ""                   # "module:function", the module by its full name


@dataclass(frozen=True, kw_only=True)
class Family:
    name: str
    module: str                          # its module in checks/
    measures: tuple[Measure, ...]
    tolerances: dict[str, float] = field(default_factory=dict)
    fault_kinds: tuple[FaultKind, ...] = ()
    # Authored attributes that feed it: exact names, or prefixes ending in "*" ("*" alone: any
    # attribute no more specific pattern claims: points, sizes, transforms, visibility).
    reads: tuple[str, ...] = ()
    scope: Scope = Scope.ELEMENT


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
ROOTS_MOVE = KnockOn(relation=Relation.ASSET, family="articulation", measures=("roots",))


def _inject(module: str, function: str) -> str:
    return f"usd_repair_verifier.authoring.inject.{module}:{function}"


def _joint(*, name: str, tolerances: tuple[str, ...] = (), knock_on: tuple[KnockOn, ...] = ()) -> Measure:
    """A joint measure: required on every joint, kept on every healthy one."""
    return Measure(name=name, target_kind=TargetKind.JOINT, objective_gate="all_joints",
                   preservation_gate="healthy_joints", tolerances=tolerances, knock_on=knock_on)


FAMILIES: tuple[Family, ...] = (
    Family(
        name="joint", module="joints",
        measures=(_joint(name="existence", knock_on=(KnockOn(relation=Relation.SAME, family="joint", measures=("graph", "frame", "range", "state")), ROOTS_MOVE)),
         _joint(name="graph", knock_on=(KnockOn(relation=Relation.SAME, family="joint", measures=("frame", "range", "state")), ROOTS_MOVE)),
         _joint(name="frame", tolerances=("joint_position_m", "joint_angle_deg")),
         _joint(name="range", tolerances=TRAVEL),
         _joint(name="state", tolerances=("drive_relative", *TRAVEL), knock_on=(ROOTS_MOVE,)),
         # An extra joint is not a property of one reference joint: the joint_count gate bounds it.
         # The other joints between the same two bodies count the extra one too.
         Measure(name="redundant", target_kind=TargetKind.JOINT, knock_on=(KnockOn(relation=Relation.PARALLEL_JOINTS, family="joint", measures=("redundant",)),))),
        tolerances={"joint_position_m": 1e-3, "joint_angle_deg": 0.5, "limit_angle_deg": 0.5, "limit_linear_m": 1e-3,
         "drive_relative": 0.01},
        fault_kinds=(FaultKind(name="joint_frame", target=TargetKind.JOINT, checks=(("joint", "frame"),),
                   summary="a joint frame moved or rotated on one side", injector=_inject("joint", "joint_frame")),
         FaultKind(name="joint_limits", target=TargetKind.JOINT, checks=(("joint", "range"),),
                   summary="joint limits inverted or changed", injector=_inject("joint", "joint_limits")),
         FaultKind(name="joint_limit_units", target=TargetKind.JOINT, checks=(("joint", "range"),),
                   summary="revolute limits authored in radians instead of degrees", injector=_inject("joint", "joint_limit_units")),
         FaultKind(name="joint_graph", target=TargetKind.JOINT, checks=(("joint", "graph"),),
                   summary="a joint attached to the wrong body", injector=_inject("joint", "joint_graph")),
         FaultKind(name="joint_type", target=TargetKind.JOINT, checks=(("joint", "graph"),),
                   summary="a joint's type changed", injector=_inject("joint", "joint_type")),
         FaultKind(name="joint_state", target=TargetKind.JOINT, checks=(("joint", "state"),),
                   summary="a joint disabled, or its collision or articulation flags flipped", injector=_inject("joint", "joint_state")),
         FaultKind(name="joint_drive", target=TargetKind.JOINT, checks=(("joint", "state"),),
                   summary="a joint drive removed or its gains changed", injector=_inject("joint", "joint_drive")),
         FaultKind(name="joint_missing", target=TargetKind.JOINT, checks=(("joint", "existence"), ("joint", "frame")),
                   summary="a joint deleted", injector=_inject("joint", "joint_missing")),
         FaultKind(name="redundant_constraint", target=TargetKind.JOINT, checks=(("joint", "redundant"),),
                   summary="an extra joint between two bodies the reference already joins",
                   injector=_inject("joint", "redundant_constraint"))),
        reads=(*JOINT_ATTRIBUTES, SHAPE), scope=Scope.JOINT_BODIES,
    ),
    Family(
        name="articulation", module="articulation",
        measures=(Measure(name="roots", target_kind=TargetKind.ASSET, objective_gate="articulation_preserved"),),
        tolerances={},
        fault_kinds=(FaultKind(name="articulation_root", target=TargetKind.ASSET, checks=(("articulation", "roots"),),
                   summary="the articulation root removed, moved to an invalid prim or duplicated",
                   injector=_inject("body", "articulation_root")),),
    ),
    Family(
        name="body", module="bodies",
        measures=(Measure(name="state", target_kind=TargetKind.BODY, objective_gate="all_bodies", preservation_gate="healthy_body_properties",
                 # A disabled body is no rigid body for the UsdPhysics parser: the joints attached
                 # to it join other bodies (their graph). A kinematic body changes neither; a joint
                 # beside it that is disabled or loses its drive is a fault of its own. (A nested
                 # disabled body's colliders also count towards the body above it; that is no
                 # knock-on, since it would excuse an independent mass fault there.)
                 knock_on=(KnockOn(relation=Relation.ATTACHED_JOINTS, family="joint", measures=("graph",), when=("enabled",)),
                           KnockOn(relation=Relation.ASSET, family="articulation", measures=("roots",), when=("enabled",)))),
         Measure(name="hierarchy", target_kind=TargetKind.BODY, objective_gate="all_bodies")),
        tolerances={},
        fault_kinds=(FaultKind(name="body_state", target=TargetKind.BODY, checks=(("body", "state"),),
                   summary="a rigid body disabled or made kinematic", injector=_inject("body", "body_state")),
         FaultKind(name="body_hierarchy", target=TargetKind.BODY, checks=(("body", "hierarchy"),),
                   summary="a rigid body nested under another body than in the reference", injector=_inject("body", "body_hierarchy"))),
        reads=BODY_ATTRIBUTES, scope=Scope.BODY_PRIMS,
    ),
    Family(
        name="geometry", module="geometry",
        # A visible part moved or reshaped also moves its body's collision coverage (the share of
        # the visible surface inside the colliders), and its free space and mass when the part is
        # also a collider (or its body's mass comes from its geometry). Free space is the
        # colliders' alone: a healthy collider beside a targeted visible part keeps its own.
        measures=(Measure(name="placement", target_kind=TargetKind.COMPONENT, objective_gate="all_bodies", preservation_gate=None,
                 tolerances=("geometry_position_m", "geometry_angle_deg"), knock_on=(
                     KnockOn(relation=Relation.OWNER_BODY, family="collision", measures=("coverage",)),
                     KnockOn(relation=Relation.COLLIDER_OWNER_BODY, family="collision", measures=("free_space",)),
                     KnockOn(relation=Relation.OWNER_BODY, family="mass", measures=("center_of_mass", "inertia",
                                                                                  "inertia_orientation")))),
         # A part scaled about its origin also moves its centroid.
         Measure(name="shape", target_kind=TargetKind.COMPONENT, objective_gate="all_bodies", preservation_gate="retained_visible_components",
                 tolerances=("geometry_shape_m", "geometry_area_relative"), knock_on=(
                     KnockOn(relation=Relation.SAME, family="geometry", measures=("placement",)),
                     KnockOn(relation=Relation.OWNER_BODY, family="collision", measures=("coverage",)),
                     KnockOn(relation=Relation.COLLIDER_OWNER_BODY, family="collision", measures=("free_space",)),
                     KnockOn(relation=Relation.OWNER_BODY, family="mass")))),
        tolerances={"geometry_position_m": 1e-3, "geometry_angle_deg": 0.5, "geometry_shape_m": 1e-3,
         "geometry_area_relative": 0.01},
        fault_kinds=(FaultKind(name="component_moved", target=TargetKind.COMPONENT, checks=(("geometry", "placement"),),
                   summary="a visible part translated or rotated", injector=_inject("geometry", "component_moved")),
         FaultKind(name="component_reshaped", target=TargetKind.COMPONENT, checks=(("geometry", "shape"),),
                   summary="a visible part scaled or its points corrupted", injector=_inject("geometry", "component_reshaped"))),
        reads=(SHAPE,),
    ),
    Family(
        name="collision", module="collision",
        # A removed collider has no physics material left to compare.
        measures=(Measure(name="coverage", target_kind=TargetKind.BODY, objective_gate="all_bodies", preservation_gate="collision_support", tolerances=("collision_margin_m", "collision_coverage"),
                 knock_on=(KnockOn(relation=Relation.SAME, family="mass"), KnockOn(relation=Relation.SAME, family="material", measures=("physics",)))),
         Measure(name="free_space", target_kind=TargetKind.BODY, objective_gate="all_bodies", preservation_gate="collision_support", tolerances=("collision_free_space", "collision_margin_m"),
                 knock_on=(KnockOn(relation=Relation.SAME, family="mass"),))),
        tolerances={"collision_margin_m": 1e-3, "collision_coverage": 0.02, "collision_free_space": 0.05},
        fault_kinds=(FaultKind(name="collision_removed", target=TargetKind.BODY, checks=(("collision", "coverage"),),
                   summary="the body's colliders lose their CollisionAPI", injector=_inject("collision", "collision_removed")),
         FaultKind(name="collision_disabled", target=TargetKind.BODY, checks=(("collision", "coverage"),),
                   summary="the body's colliders have collisionEnabled = false", injector=_inject("collision", "collision_disabled")),
         FaultKind(name="collider_shrunk", target=TargetKind.BODY, checks=(("collision", "coverage"),),
                   summary="a collider (not itself visible) scaled down", injector=_inject("collision", "collider_shrunk")),
         FaultKind(name="collision_over_approximated", target=TargetKind.BODY, checks=(("collision", "free_space"),),
                   summary="a mesh collider's approximation switched to one that fills free space",
                   injector=_inject("collision", "collision_over_approximated"))),
        reads=(*COLLIDER_ATTRIBUTES, SHAPE), scope=Scope.BODY_PRIMS,
    ),
    Family(
        name="mass", module="mass",
        # Unmeasured (so neither gating nor preserved) where the reference establishes nothing.
        # A mass moved by its density moves the centre of mass and inertia with it (a computed
        # inertia scales with the mass, its orientation does not); a centre of mass moved, the
        # inertia and its axes about it; an inertia changed, its axes.
        measures=(Measure(name="mass", target_kind=TargetKind.BODY, objective_gate="all_bodies", preservation_gate="healthy_body_properties", tolerances=("mass_relative",),
                 knock_on=(KnockOn(relation=Relation.SAME, family="mass", measures=("center_of_mass", "inertia")),)),
         Measure(name="center_of_mass", target_kind=TargetKind.BODY, objective_gate="all_bodies", preservation_gate="healthy_body_properties", tolerances=("com_m",),
                 knock_on=(KnockOn(relation=Relation.SAME, family="mass", measures=("inertia", "inertia_orientation")),)),
         Measure(name="inertia", target_kind=TargetKind.BODY, objective_gate="all_bodies", preservation_gate="healthy_body_properties", tolerances=("inertia_relative",),
                 knock_on=(KnockOn(relation=Relation.SAME, family="mass", measures=("inertia_orientation",)),)),
         Measure(name="inertia_orientation", target_kind=TargetKind.BODY, objective_gate="all_bodies", preservation_gate="healthy_body_properties", tolerances=("inertia_relative",))),
        tolerances={"mass_relative": 0.01,      # |log ratio| <= log1p(.)
         "com_m": 1e-3,              # world distance, metres
         # max |log ratio| over sorted principal moments <= log1p(.); and for inertia_orientation
         # |I_c/tr I_c - I_r/tr I_r|_F / |I_r/tr I_r|_F <= (.) of the world tensors I
         "inertia_relative": 0.02},
        fault_kinds=(FaultKind(name="mass_changed", target=TargetKind.BODY, checks=(("mass", "mass"),),
                   summary="a body's mass changed alone (x4 as a body mass; an authored inertia kept)",
                   injector=_inject("mass", "mass_changed")),
         FaultKind(name="mass_unit_factor", target=TargetKind.BODY, checks=(("mass", "mass"), ("mass", "inertia")),
                   summary="a body's mass authored in grams for kilograms (mass and inertia x1000)",
                   injector=_inject("mass", "mass_unit_factor")),
         FaultKind(name="density_misplaced", target=TargetKind.BODY, checks=(("mass", "mass"),),
                   summary="collider densities authored on the body instead, changing the controlling mass",
                   injector=_inject("mass", "density_misplaced")),
         FaultKind(name="inertia_invalid", target=TargetKind.BODY, checks=(("mass", "inertia"),),
                   summary="a body's diagonal inertia authored with a zero and a negative moment",
                   injector=_inject("mass", "inertia_invalid")),
         FaultKind(name="center_of_mass_moved", target=TargetKind.BODY, checks=(("mass", "center_of_mass"),),
                   summary="a body's centre of mass authored 20% of its size away", injector=_inject("mass", "center_of_mass_moved")),
         FaultKind(name="inertia_orientation", target=TargetKind.BODY, checks=(("mass", "inertia_orientation"),),
                   summary="a body's principal axes of inertia turned 90 degrees where its moments differ (the same "
                   "moments about other axes)", injector=_inject("mass", "inertia_orientation"))),
        reads=(*MASS_ATTRIBUTES, *COLLIDER_ATTRIBUTES, SHAPE), scope=Scope.BODY_PRIMS,
    ),
    Family(
        name="material", module="materials",
        measures=(Measure(name="visual", target_kind=TargetKind.COMPONENT, objective_gate="all_bodies", preservation_gate="healthy_materials", tolerances=("material_color", "material_scalar")),
         Measure(name="physics", target_kind=TargetKind.BODY, objective_gate="all_bodies", preservation_gate="healthy_materials", tolerances=("density_relative", "friction_abs"))),
        tolerances={"material_color": 0.02,     # max abs channel difference
         "material_scalar": 0.02,    # abs difference
         "density_relative": 0.01,   # physics material density, relative
         "friction_abs": 0.01},      # friction and restitution, abs difference
        fault_kinds=(FaultKind(name="visual_material", target=TargetKind.COMPONENT, checks=(("material", "visual"),),
                   summary="a component's material binding removed or swapped for another material",
                   injector=_inject("material", "visual_material")),
         FaultKind(name="display_appearance", target=TargetKind.COMPONENT, checks=(("material", "visual"),),
                   summary="an unbound part's display colour or opacity changed (what a renderer draws it with)",
                   injector=_inject("material", "display_appearance")),
         FaultKind(name="physics_material", target=TargetKind.BODY, checks=(("material", "physics"),),
                   summary="the friction or restitution of a body's colliders' physics material changed",
                   injector=_inject("material", "physics_material"))),
        # The display primvars, and every physics: attribute no other family claims (friction, restitution).
        reads=("primvars:display*", "physics:*"), scope=Scope.BOUND_MATERIALS,
    ),
    Family(
        name="contact", module="contact",
        # The collider pairs a simulator lets touch (collision groups, filtered pairs), on the
        # whole asset: a filter concerns two elements at once.
        measures=(Measure(name="pairs", target_kind=TargetKind.ASSET, objective_gate="all_bodies", preservation_gate="contact_pairs"),),
        tolerances={},
        fault_kinds=(FaultKind(name="collision_filter", target=TargetKind.ASSET, checks=(("contact", "pairs"),),
                   summary="a body filtered from what it touches in the reference (physics:filteredPairs)",
                   injector=_inject("contact", "collision_filter")),),
        reads=("physics:filteredPairs", "physics:filteredGroups", "physics:invertFilteredGroups",
               "physics:mergeGroup", "collection:colliders*"),
    ),
    Family(
        name="owner", module="owners",
        measures=(Measure(name="owners", target_kind=TargetKind.BODY, objective_gate="all_bodies", preservation_gate="simulation_owners"),),
        tolerances={},
        fault_kinds=(FaultKind(name="simulation_owner", target=TargetKind.BODY, checks=(("owner", "owners"),),
                   summary="a body's physics:simulationOwner set to a scene that does not exist",
                   injector=_inject("contact", "simulation_owner")),),
        reads=("physics:simulationOwner",), scope=Scope.BODY_PRIMS,
    ),
    Family(
        name="composition", module="composition",
        # Gated without this measure: composition_complete requires no error at all, and the
        # composition_errors preservation gate bounds the count by the input's.
        measures=(Measure(name="errors", target_kind=TargetKind.ASSET, measures_layout=True),),
        tolerances={},
        fault_kinds=(FaultKind(name="broken_asset_path", target=TargetKind.ASSET, checks=(("composition", "errors"),),
                   summary="a sublayer, reference or payload pointed at a file missing from the package",
                   injector=_inject("composition", "broken_asset_path")),),
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


def _require(condition: bool, entry: str, problem: str) -> None:
    if not condition:
        raise FamilyTableError(f"profiles/families.py, {entry}: {problem}")


def _check_family(family: Family, measures: set[tuple[str, str]]) -> None:
    names = [m.name for m in family.measures]
    entry = f"family {family.name!r}"
    _require(len(set(names)) == len(names), entry, "lists a measure twice")
    _require(family.scope in SCOPES, entry, f"scope {family.scope!r} is not one of {[str(s) for s in SCOPES]}")
    _require(all(p == "*" or "*" not in p[:-1] for p in family.reads), entry, "a pattern in reads has '*' before its end")
    read = set()
    for m in family.measures:
        where = f"measure {family.name}.{m.name}"
        _require(m.target_kind in TARGET_KINDS, where, f"target kind {m.target_kind!r} is not a TargetKind")
        undeclared = set(m.tolerances) - set(family.tolerances)
        _require(not undeclared, where, f"reads tolerances {sorted(undeclared)} the family gives no default")
        read |= set(m.tolerances)
        for k in m.knock_on:
            _require(k.relation in RELATIONS, where, f"knock-on relation {k.relation!r} is not a Relation")
            _require(k.family in BY_NAME, where, f"knock-on on unknown family {k.family!r}")
            unknown = [x for x in k.measures if (k.family, x) not in measures]
            _require(not unknown, where, f"knock-on on measures {unknown} that {k.family!r} does not declare")
    unread = set(family.tolerances) - read
    _require(not unread, entry, f"declares tolerances no measure reads: {sorted(unread)}")


def _check_table() -> None:
    """Raise FamilyTableError at import, naming the entry, on a table that contradicts itself."""
    measures = {(f.name, m.name) for f in FAMILIES for m in f.measures}
    tolerances: set[str] = set()
    kinds: set[str] = set()
    _require(len(BY_NAME) == len(FAMILIES), "FAMILIES", "two families share a name")
    for family in FAMILIES:
        _check_family(family, measures)
        _require(not tolerances & set(family.tolerances), f"family {family.name!r}",
                 f"redeclares tolerances {sorted(tolerances & set(family.tolerances))}")
        tolerances |= set(family.tolerances)
        for kind in family.fault_kinds:
            entry = f"fault kind {kind.name!r}"
            _require(kind.name not in kinds, entry, "declared twice")
            kinds.add(kind.name)
            _require(kind.target in TARGET_KINDS, entry, f"target kind {kind.target!r} is not a TargetKind")
            unknown = [c for c in kind.checks if c not in measures]
            _require(not unknown, entry, f"selects measures no family declares: {unknown}")
            module, _, function = kind.injector.partition(":")
            _require(bool(module and function), entry, f"injector {kind.injector!r} is not 'module:function'")


_check_table()
