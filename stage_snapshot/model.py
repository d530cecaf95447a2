"""Plain data describing one composed stage, in SI units and world space.

Nothing here holds a pxr object: a snapshot pickles (pytest-xdist workers build
their own, but tests and tools may ship them around) and compares with `==`.
Prim paths are kept only to report and to address a reference element from a
profile; comparisons between stages never rely on them (see correspondence.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]  # (w, x, y, z), unit length


@dataclass(frozen=True)
class Pose:
    """A rigid placement in world space: metres and a unit quaternion."""

    position: Vec3
    rotation: Quat


@dataclass(frozen=True)
class BodyShape:
    """What a body's own geometry looks like, independent of where it is.

    Used to tell bodies apart in correspondence; `extents` are the sorted edge
    lengths (metres) of the body-frame box around the body's own gprims
    (nested bodies excluded), so they do not depend on orientation conventions.
    `local_center` is the centre of that geometry in the body's frame (metres):
    bodies authored at the same origin (a MuJoCo ant's four legs) are told apart
    by where their geometry is, and a body that moved as a whole keeps it.
    `center` is the same point in world space, for reports.
    """

    extents: Vec3
    center: Vec3
    local_center: Vec3
    gprim_count: int
    collider_count: int


@dataclass(frozen=True)
class Body:
    path: str
    name: str
    pose: Pose                 # world, scale removed
    scale: Vec3
    parent_body: str | None    # nearest ancestor prim that is a rigid body
    enabled: bool              # physics:rigidBodyEnabled
    kinematic: bool            # physics:kinematicEnabled
    colliders: tuple[str, ...]
    shape: BodyShape


@dataclass(frozen=True)
class Drive:
    """One joint drive in SI (metres or degrees for targets)."""

    dof: str                   # "angular", "linear", or a D6 axis token
    kind: str                  # "force" or "acceleration"
    target_position: float
    target_velocity: float
    stiffness: float
    damping: float
    max_force: float


@dataclass(frozen=True)
class Limit:
    """Travel of one degree of freedom in SI: metres, or degrees for rotations."""

    dof: str
    lower: float
    upper: float


@dataclass(frozen=True)
class Joint:
    path: str
    name: str
    type: str                  # revolute | prismatic | spherical | fixed | distance | d6 | custom
    body0: str | None          # resolved rigid body, None for the world
    body1: str | None
    targets0: tuple[str, ...]  # authored relationship targets, as composed
    targets1: tuple[str, ...]
    problems: tuple[str, ...]  # what is wrong with the relationships (missing prim, body0 == body1 ...)
    frame0: Pose               # the joint frame in world space, seen from body0's side
    frame1: Pose               # ... and from body1's side; they agree in a healthy rest pose
    axis: str | None           # "X" | "Y" | "Z" for single-axis joints
    limits: tuple[Limit, ...]  # only enabled (finite) limits
    enabled: bool
    collision_enabled: bool
    exclude_from_articulation: bool
    drives: tuple[Drive, ...]

    @property
    def linear(self) -> bool:
        return self.type in ("prismatic", "distance")


@dataclass(frozen=True)
class ArticulationRoot:
    path: str
    kind: str                  # "body", "joint", "ancestor" (an Xform above bodies) or "other"
    bodies: tuple[str, ...]    # bodies the parser articulated from this root
    joints: tuple[str, ...]
    problems: tuple[str, ...]  # why the location is not valid, empty when it is


@dataclass(frozen=True)
class VisualComponent:
    """A visible gprim (default or render purpose, not invisible), in world space.

    `samples` are seeded, area-weighted surface points drawn over the triangles in
    canonical order: the same triangles, in any order, give the same samples (parts.py).
    """

    path: str
    name: str
    body: str | None           # the rigid body that owns it, None for static scenery
    type: str                  # Mesh, Cube, Sphere, Capsule, ...
    triangle_count: int
    area: float                # m^2
    centroid: Vec3
    samples: Any = field(compare=False, repr=False)   # (n, 3) float64 numpy array, metres
    material: Any = None       # materials.VisualMaterial (the bound one, or the display colour)
    surface: Any = field(default=None, compare=False, repr=False)  # surface_fit.Surface: world triangles, canonical


@dataclass(frozen=True)
class Collider:
    path: str
    name: str
    body: str | None
    enabled: bool              # physics:collisionEnabled
    shape: str                 # prim type, e.g. "Capsule", "Mesh"
    approximation: str | None  # mesh approximation token
    volume: float              # m^3 of the solid as the simulator sees it (inf for planes)
    centroid: Vec3
    solid: Any = field(compare=False, repr=False)     # colliders.Solid (contains(points)), or None
    material: Any = None       # materials.PhysicsMaterial or None
    digest: str = ""           # what the solid is built from (parts._collider_digest); "" when none


@dataclass(frozen=True)
class StageSnapshot:
    root_layer: str
    meters_per_unit: float
    kilograms_per_unit: float
    up_axis: str
    bodies: dict[str, Body]
    joints: dict[str, Joint]
    articulation_roots: tuple[ArticulationRoot, ...]
    composition_errors: tuple[str, ...]
    size: float                # characteristic size of the asset (m): normalizes distances in costs
    components: dict[str, VisualComponent] = field(default_factory=dict)
    colliders: dict[str, Collider] = field(default_factory=dict)
    mass: dict[str, Any] = field(default_factory=dict)           # body -> mass.MassProperties | None
    sampling: dict = field(default_factory=dict)                 # the profile's sampling settings
    free_space: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # body -> (n, 3) samples of the empty space its colliders leave in their bounds, computed
    # ahead by parts.with_free_space (a cached reference); empty otherwise, and never filled in
    # place: parts.free_space computes what a snapshot does not carry
    solid_samples: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # body -> (points, weights) inside its enabled colliders (parts.solid_samples), ahead as above
    memo: dict = field(default_factory=dict, compare=False, repr=False)
    # values derived from this snapshot alone, computed once when first asked (parts.reference_coverage)
    timings: dict[str, float] = field(default_factory=dict, compare=False, repr=False)
    # seconds spent reading each part (bench/ and grade.json "timings"); not content
    authoring_problems: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    # prim path -> ((attribute, why), ...): values the snapshot could not use (wrong type,
    # shape, non-finite) or that are ambiguous (default and start-time value disagree);
    # see authoring_problems.py. The checks fail every property such a value feeds.
    scenes: tuple = ()                                           # scene.PhysicsScene, by path
    simulator_attributes: dict[str, dict] = field(default_factory=dict)
    # element key -> {attribute: plain value} of the simulator namespaces (see scene.py)
    variant_selections: dict[str, dict[str, str]] = field(default_factory=dict)
    # the case's selections the stage was composed with (prim path -> set -> selection)
    variant_problems: tuple[tuple[str, str, str], ...] = ()
    # those the stage cannot take: (prim path, set, `PRIM:SET=SELECTION: why`): no such prim, set or variant
    hidden_physics: str | None = None
    # a stage that composes no physics: which variant sets hold some (variant_selections.py)
    contact: Any = None
    # physics_model.ContactModel: collision groups, filtered pairs, the collider pairs they keep apart
    simulation_owners: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # body, collider, joint or articulation root path -> its physics:simulationOwner targets (sorted)
    simulator_relationships: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    # prim path -> {relationship: targets} a simulator reads, not measured elsewhere (physics_model.py)

    def body_components(self, body: str | None) -> list[VisualComponent]:
        return [c for c in self.components.values() if c.body == body]

    def body_colliders(self, body: str | None) -> list[Collider]:
        return [c for c in self.colliders.values() if c.body == body]
