"""Open a USD package's root layer and read its composed stage into a StageSnapshot.

The UsdPhysics parser (`UsdPhysicsLoadStageFromPrimRange`) does the schema work:
it resolves joint relationships to rigid bodies and expresses local joint poses
in each body's unscaled frame. What it leaves to us:
world-space joint frames, SI units, relationship problems (a missing target comes
back as "the world"; body0 == body1 comes back valid), articulation root
locations, and composition errors.
"""
from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

from pxr import Gf, Sdf, Tf, Usd, UsdGeom, UsdPhysics

from . import authoring_problems, spatial, variant_selections as selected
from .parts import owner_body, read_parts
from .physics_model import read_physics_model
from .scene import read_scenes, read_simulator_attributes
from .texture_digest import texture_digest_scope
from .model import ArticulationRoot, Body, BodyShape, Drive, Joint, Limit, Pose, StageSnapshot

JOINT_TYPES = {
    UsdPhysics.ObjectType.RevoluteJoint: "revolute",
    UsdPhysics.ObjectType.PrismaticJoint: "prismatic",
    UsdPhysics.ObjectType.SphericalJoint: "spherical",
    UsdPhysics.ObjectType.FixedJoint: "fixed",
    UsdPhysics.ObjectType.DistanceJoint: "distance",
    UsdPhysics.ObjectType.D6Joint: "d6",
    UsdPhysics.ObjectType.CustomJoint: "custom",
}
# A limit beyond this magnitude is the schema's "unlimited" (it authors +-inf or FLT_MAX).
UNLIMITED = 1e30
UNIT_RANGE = (1e-6, 1e6)
BOUND_PURPOSES = [UsdGeom.Tokens.default_, UsdGeom.Tokens.render, UsdGeom.Tokens.proxy, UsdGeom.Tokens.guide]


class StageOpenError(Exception):
    """The root layer could not be composed into a stage (malformed layer, ...)."""


def open_stage(root_layer: str | Path, variant_selections: dict[str, dict[str, str]] | None = None) -> Usd.Stage:
    """The composed stage, every payload loaded; `variant_selections` (profile: prim path -> set ->
    selection) authored in its session layer, stronger than anything in the package."""
    try:
        stage = selected.open_selected(root_layer, variant_selections)
    except Tf.ErrorException as error:
        raise StageOpenError(f"cannot open {root_layer}: {str(error).strip()}") from error
    if stage is None:
        raise StageOpenError(f"cannot open {root_layer}")
    return stage


def read_snapshot(root_layer: str | Path, sampling: dict | None = None, namespaces: tuple[str, ...] = (),
                  variant_selections: dict[str, dict[str, str]] | None = None) -> StageSnapshot:
    """The snapshot of the stage composed with `variant_selections` (see open_stage), with what they
    did: the selections the stage cannot take, and where physics hides when none is composed."""
    start = time.perf_counter()
    stage = open_stage(root_layer, variant_selections)
    opened = round(time.perf_counter() - start, 6)
    try:
        with texture_digest_scope():
            result = snapshot(stage, str(root_layer), sampling, namespaces)
        composed_none = not (result.bodies or result.joints or result.colliders or result.scenes)
        result = dataclasses.replace(
            result, variant_selections={p: dict(s) for p, s in (variant_selections or {}).items()},
            variant_problems=selected.selection_problems(stage, variant_selections or {}),
            hidden_physics=selected.hidden_physics(stage) if composed_none else None)
    except Tf.ErrorException as error:  # USD itself refused a value of this stage
        raise StageOpenError(f"cannot read {root_layer}: {str(error).strip()}") from error
    result.timings["open"] = opened
    return result


def snapshot(stage: Usd.Stage, root_layer: str = "", sampling: dict | None = None,
             namespaces: tuple[str, ...] = ()) -> StageSnapshot:
    """Read everything the checks measure. `sampling` (profile: seed, sample counts) seeds surface samples;
    `namespaces` (profile: preserved_namespaces) are read as simulator attributes besides the built-in ones."""
    mpu = UsdGeom.GetStageMetersPerUnit(stage)
    kgpu = UsdPhysics.GetStageKilogramsPerUnit(stage)
    for name, value in (("metersPerUnit", mpu), ("kilogramsPerUnit", kgpu)):
        # Zero, negative or absurd units break every SI conversion (and qhull on 1e300 coordinates).
        if not (math.isfinite(value) and UNIT_RANGE[0] <= value <= UNIT_RANGE[1]):
            raise StageOpenError(f"{name} = {value!r} is not a physical unit (allowed {UNIT_RANGE[0]:g} to {UNIT_RANGE[1]:g})")
    start = time.perf_counter()
    parsed = UsdPhysics.UsdPhysicsLoadStageFromPrimRange(stage, [Sdf.Path.absoluteRootPath])
    body_descs = _descriptors(parsed, UsdPhysics.ObjectType.RigidBody)
    body_paths = {str(path) for path, _ in body_descs}

    bbox_cache = UsdGeom.BBoxCache(Usd.TimeCode.Default(), BOUND_PURPOSES, useExtentsHint=False)
    bodies = {}
    for path, desc in body_descs:
        key = str(path)
        pose = Pose(
            tuple(c * mpu for c in desc.position),
            _quat(desc.rotation),
        )
        bodies[key] = Body(
            path=key,
            name=path.name,
            pose=pose,
            scale=tuple(float(c) for c in desc.scale),
            parent_body=_nearest_ancestor(key, body_paths),
            enabled=bool(desc.rigidBodyEnabled),
            kinematic=bool(desc.kinematicBody),
            colliders=tuple(sorted(str(p) for p in desc.collisions)),
            shape=_body_shape(stage.GetPrimAtPath(path), body_paths, bbox_cache, desc.scale, mpu, len(desc.collisions)),
        )

    joints = {}
    for object_type, type_name in JOINT_TYPES.items():
        for path, desc in _descriptors(parsed, object_type):
            joints[str(path)] = _joint(stage, path, desc, type_name, bodies, mpu, kgpu)

    articulations = _descriptors(parsed, UsdPhysics.ObjectType.Articulation)
    roots = _articulation_roots(stage, articulations, body_paths, joints)
    errors = tuple(sorted(str(e).strip() for e in stage.GetCompositionErrors()))
    timings = {"bodies_and_joints": round(time.perf_counter() - start, 6)}
    components, colliders, masses = read_parts(stage, body_paths, mpu, kgpu, sampling or {}, timings)
    lap = time.perf_counter()
    problems = authoring_problems.problems(stage)
    timings["authoring"] = round(time.perf_counter() - lap, 6)
    start = time.perf_counter()
    scenes = read_scenes(parsed, mpu)
    simulator = read_simulator_attributes(stage, set(bodies) | set(joints) | {r.path for r in roots}, set(colliders),
                                          {s.path for s in scenes}, mpu, kgpu, tuple(namespaces))
    timings["scene"] = round(time.perf_counter() - start, 6)
    start = time.perf_counter()
    physics_model = read_physics_model(stage, parsed, colliders, joints, roots)
    timings["physics_model"] = round(time.perf_counter() - start, 6)

    return StageSnapshot(
        root_layer=str(root_layer),
        meters_per_unit=mpu,
        kilograms_per_unit=kgpu,
        up_axis=str(UsdGeom.GetStageUpAxis(stage)),
        bodies=dict(sorted(bodies.items())),
        joints=dict(sorted(joints.items())),
        articulation_roots=roots,
        composition_errors=errors,
        size=_characteristic_size(bodies),
        components=components,
        colliders=colliders,
        mass=masses,
        sampling=dict(sampling or {}),
        timings=timings,
        authoring_problems=problems,
        scenes=scenes,
        simulator_attributes=simulator,
        **physics_model,
    )


def _descriptors(parsed: dict, object_type) -> list:
    paths, descs = parsed.get(object_type, ([], []))
    return sorted(zip(paths, descs), key=lambda pair: str(pair[0]))


def _quat(q) -> tuple[float, float, float, float]:
    imaginary = q.GetImaginary() if hasattr(q, "GetImaginary") else q.imaginary
    real = q.GetReal() if hasattr(q, "GetReal") else q.real
    return spatial.normalized((float(real), float(imaginary[0]), float(imaginary[1]), float(imaginary[2])))


def _nearest_ancestor(path: str, body_paths: set[str]) -> str | None:
    """The nearest rigid body strictly above `path` (the body it is nested in)."""
    return owner_body(str(Sdf.Path(path).GetParentPath()), body_paths)


def _own_prims(body_prim: Usd.Prim, body_paths: set[str]):
    """The body's prims, not descending into nested bodies (they are bodies of their own)."""
    it = iter(Usd.PrimRange(body_prim, Usd.TraverseInstanceProxies()))
    for prim in it:
        if prim != body_prim and str(prim.GetPath()) in body_paths:
            it.PruneChildren()
            continue
        yield prim


def _body_shape(body_prim, body_paths, bbox_cache, scale, mpu, collider_count) -> BodyShape:
    box = world_box = None
    gprims = 0
    for prim in _own_prims(body_prim, body_paths):
        if not prim.IsA(UsdGeom.Gprim):
            continue
        gprims += 1
        bound = bbox_cache.ComputeRelativeBound(prim, body_prim).ComputeAlignedRange()
        if bound.IsEmpty():
            continue
        box = bound if box is None else Gf.Range3d.GetUnion(box, bound)
        world = bbox_cache.ComputeWorldBound(prim).ComputeAlignedRange()
        world_box = world if world_box is None else Gf.Range3d.GetUnion(world_box, world)
    if box is None:
        origin = UsdGeom.Xformable(body_prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()).ExtractTranslation()
        return BodyShape((0.0, 0.0, 0.0), tuple(c * mpu for c in origin), (0.0, 0.0, 0.0), gprims, collider_count)
    size = box.GetSize()
    extents = tuple(sorted(abs(size[i] * scale[i]) * mpu for i in range(3)))
    center = tuple(c * mpu for c in world_box.GetMidpoint())
    local_center = tuple(box.GetMidpoint()[i] * scale[i] * mpu for i in range(3))
    return BodyShape(extents=extents, center=center, local_center=local_center,
                     gprim_count=gprims, collider_count=collider_count)


def _characteristic_size(bodies: dict[str, Body]) -> float:
    if not bodies:
        return 1.0
    positions = [b.pose.position for b in bodies.values()]
    spread = max(
        max(p[i] for p in positions) - min(p[i] for p in positions) for i in range(3)
    )
    largest_part = max(max(b.shape.extents) for b in bodies.values())
    return max(spread, largest_part, 1e-3)


def _targets(prim: Usd.Prim, name: str) -> tuple[str, ...]:
    rel = prim.GetRelationship(name)
    return tuple(str(t) for t in rel.GetTargets()) if rel else ()


def _joint(stage, path, desc, type_name, bodies, mpu, kgpu) -> Joint:
    prim = stage.GetPrimAtPath(path)
    targets0 = _targets(prim, "physics:body0")
    targets1 = _targets(prim, "physics:body1")
    body0 = str(desc.body0) if not desc.body0.isEmpty and str(desc.body0) in bodies else None
    body1 = str(desc.body1) if not desc.body1.isEmpty and str(desc.body1) in bodies else None
    problems = []
    for side, targets, body in (("body0", targets0, body0), ("body1", targets1, body1)):
        if len(targets) > 1:
            problems.append(f"{side} has {len(targets)} targets")
        for target in targets:
            # A target outside any rigid body (a static Xform) legitimately means the world;
            # a target that does not exist is an authoring error the parser hides.
            if not stage.GetPrimAtPath(target):
                problems.append(f"{side} target {target} does not exist")
    if body0 is not None and body0 == body1:
        problems.append(f"body0 and body1 are the same body {body0}")
    if body0 is None and body1 is None:
        problems.append("both sides are attached to the world")

    frames = []
    for body, position, rotation in (
        (body0, desc.localPose0Position, desc.localPose0Orientation),
        (body1, desc.localPose1Position, desc.localPose1Orientation),
    ):
        parent = bodies[body].pose if body else Pose((0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
        frames.append(spatial.compose(parent, tuple(c * mpu for c in position), _quat(rotation)))

    linear_scale = mpu if type_name in ("prismatic", "distance") else 1.0
    return Joint(
        path=str(path),
        name=path.name,
        type=type_name,
        body0=body0,
        body1=body1,
        targets0=targets0,
        targets1=targets1,
        problems=tuple(problems),
        frame0=frames[0],
        frame1=frames[1],
        axis=str(desc.axis) if hasattr(desc, "axis") else None,
        limits=_limits(desc, type_name, linear_scale, mpu),
        enabled=bool(desc.jointEnabled),
        collision_enabled=bool(desc.collisionEnabled),
        exclude_from_articulation=bool(desc.excludeFromArticulation),
        drives=_drives(desc, type_name, mpu, kgpu),
    )


def _limit(dof: str, limit, scale: float) -> Limit | None:
    if not limit.enabled:
        return None
    lower, upper = float(limit.lower), float(limit.upper)
    if abs(lower) >= UNLIMITED and abs(upper) >= UNLIMITED:
        return None
    return Limit(dof, lower * scale if math.isfinite(lower) else lower, upper * scale if math.isfinite(upper) else upper)


def _dof_name(dof) -> str:
    return getattr(dof, "name", None) or str(dof).split(".")[-1]


def _limits(desc, type_name: str, linear_scale: float, mpu: float) -> tuple[Limit, ...]:
    found = []
    if type_name in ("revolute", "prismatic", "spherical"):
        dof = {"revolute": "angular", "prismatic": "linear", "spherical": "cone"}[type_name]
        limit = _limit(dof, desc.limit, linear_scale)
        if limit:
            found.append(limit)
    elif type_name == "distance":
        # The parser flags distance limits with minEnabled/maxEnabled, not limit.enabled.
        lower = float(desc.limit.lower) * linear_scale if desc.minEnabled else -math.inf
        upper = float(desc.limit.upper) * linear_scale if desc.maxEnabled else math.inf
        if desc.minEnabled or desc.maxEnabled:
            found.append(Limit("distance", lower, upper))
    elif type_name == "d6":
        for pair in desc.jointLimits:  # JointLimitDOFPair: .first the axis, .second the limit
            name = _dof_name(pair.first)
            scale = mpu if name.startswith("Trans") or name == "Distance" else 1.0
            parsed = _limit(name, pair.second, scale)
            if parsed:
                found.append(parsed)
    return tuple(sorted(found, key=lambda l: l.dof))


def _drive(dof: str, drive, linear: bool, mpu: float, kgpu: float) -> Drive | None:
    if not drive.enabled:
        return None
    # Force units are kg*m/s^2 scaled by the stage's units; linear targets are lengths,
    # angular ones degrees (by schema).
    length = mpu if linear else 1.0
    force = kgpu * mpu * (1.0 if linear else mpu)  # force for linear, torque for angular
    return Drive(
        dof=dof,
        kind="acceleration" if drive.acceleration else "force",
        target_position=float(drive.targetPosition) * length,
        target_velocity=float(drive.targetVelocity) * length,
        stiffness=float(drive.stiffness) * force / length,
        damping=float(drive.damping) * force / length,
        max_force=float(drive.forceLimit) * force,
    )


def _drives(desc, type_name: str, mpu: float, kgpu: float) -> tuple[Drive, ...]:
    found = []
    if type_name in ("revolute", "prismatic"):
        d = _drive("angular" if type_name == "revolute" else "linear", desc.drive, type_name == "prismatic", mpu, kgpu)
        if d:
            found.append(d)
    elif type_name == "d6":
        for pair in desc.jointDrives:  # JointDriveDOFPair: .first the axis, .second the drive
            name = _dof_name(pair.first)
            d = _drive(name, pair.second, name.startswith("Trans"), mpu, kgpu)
            if d:
                found.append(d)
    return tuple(sorted(found, key=lambda d: d.dof))


def _articulation_roots(stage, articulations, body_paths, joints) -> tuple[ArticulationRoot, ...]:
    parsed_by_root = {}
    for path, desc in articulations:
        for root in list(desc.rootPrims) or [path]:
            parsed_by_root[str(root)] = desc
        parsed_by_root.setdefault(str(path), desc)

    root_paths = sorted(
        str(prim.GetPath())
        for prim in Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies())
        if prim.HasAPI(UsdPhysics.ArticulationRootAPI)
    )
    roots = []
    for path in root_paths:
        problems = []
        sdf_path = Sdf.Path(path)
        if path in body_paths:
            kind = "body"
        elif path in joints:
            kind = "joint"
            joint = joints[path]
            if joint.body0 is not None and joint.body1 is not None:
                problems.append("a joint root must attach its articulation to the world")
        elif any(Sdf.Path(b).HasPrefix(sdf_path) for b in body_paths):
            kind = "ancestor"
        else:
            kind = "other"
            problems.append("not on a rigid body, a joint, or a prim above rigid bodies")
        for other in root_paths:
            if other != path and sdf_path.HasPrefix(Sdf.Path(other)):
                problems.append(f"nested under another articulation root {other}")
        desc = parsed_by_root.get(path)
        # The parser lists the world as an empty path among articulated bodies: drop it.
        bodies = tuple(sorted(str(b) for b in desc.articulatedBodies if not b.isEmpty)) if desc else ()
        joint_paths = tuple(sorted(str(j) for j in desc.articulatedJoints if not j.isEmpty)) if desc else ()
        if kind != "other" and not bodies:
            problems.append("the UsdPhysics parser articulates no bodies from it")
        roots.append(ArticulationRoot(path, kind, bodies, joint_paths, tuple(problems)))
    return tuple(roots)
