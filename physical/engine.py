"""Load a USD package into Newton and run it: the only module that imports the engine.

Runs inside the runtime pytest session (physical/runtime_tests), never in the authored-USD grade.
Everything returned is plain numpy/float data in SI units (positions in metres), so the
comparisons (physical/compare.py) are pure functions that never see the engine.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .corrections import correct
from .settings import RunSettings

# Newton joint types (newton.JointType values): prismatic and revolute carry one driven coordinate;
# a fixed joint to the world welds its child.
PRISMATIC, REVOLUTE, FIXED = 0, 1, 3
UNLIMITED = 1e9   # Newton stores "no limit" as +-1e10


class EngineRefusal(Exception):
    """The engine cannot load or run this asset: a measured outcome, never a verifier fault."""


def configure_warp() -> None:
    """Kernel cache from WARP_CACHE_PATH (the CLI sets a project-local default); quiet output."""
    import warp as wp

    cache = os.environ.get("WARP_CACHE_PATH")
    if cache:
        wp.config.kernel_cache_dir = cache
    wp.config.quiet = True
    wp.config.verbose = False


@dataclass
class UsdFacts:
    """What the engine run needs from the composed stage, read with pxr (not the engine)."""
    meters_per_unit: float
    lowest_collider_z: float | None      # stage units; planes excluded
    has_plane_collider: bool
    colliders: list[str]                 # enabled collider prims (paths)
    kinematic_non_root: list[str]        # kinematic bodies that a joint attaches to another body


def open_for_engine(root_layer: Path, variant_selections: dict | None = None):
    """The composed stage the engine loads: every payload, the case's variant selections in its
    session layer (Newton reads the stage as given, so it sees what the grade sees)."""
    from usd_repair_verifier.stage_snapshot.variant_selections import open_selected

    try:
        stage = open_selected(root_layer, variant_selections)
    except Exception as error:  # Tf.ErrorException: a layer USD cannot read
        raise EngineRefusal(f"USD cannot open {root_layer}: {error}") from error
    if stage is None:
        raise EngineRefusal(f"USD cannot open {root_layer}")
    return stage


def read_usd_facts(stage) -> UsdFacts:
    from pxr import Usd, UsdGeom, UsdPhysics
    mpu = UsdGeom.GetStageMetersPerUnit(stage) or 1.0
    cache = UsdGeom.BBoxCache(Usd.TimeCode.Default(), [UsdGeom.Tokens.default_, UsdGeom.Tokens.render,
                                                      UsdGeom.Tokens.proxy, UsdGeom.Tokens.guide])
    lowest, has_plane, colliders, kinematic, bodies = None, False, [], set(), set()
    for prim in stage.Traverse():
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            api = UsdPhysics.RigidBodyAPI(prim)
            bodies.add(str(prim.GetPath()))
            if api.GetKinematicEnabledAttr().Get() and api.GetRigidBodyEnabledAttr().Get() is not False:
                kinematic.add(str(prim.GetPath()))
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            if UsdPhysics.CollisionAPI(prim).GetCollisionEnabledAttr().Get() is False:
                continue
            colliders.append(str(prim.GetPath()))
            if prim.IsA(UsdGeom.Plane):
                has_plane = True
                continue
            box = cache.ComputeWorldBound(prim).ComputeAlignedRange()
            if not box.IsEmpty():
                z = float(box.GetMin()[2])
                lowest = z if lowest is None else min(lowest, z)
    kinematic_non_root = []
    for prim in stage.Traverse():
        if prim.IsA(UsdPhysics.Joint):
            joint = UsdPhysics.Joint(prim)
            b0 = [str(t) for t in joint.GetBody0Rel().GetTargets()]
            b1 = [str(t) for t in joint.GetBody1Rel().GetTargets()]
            if b0 and b1 and b0[0] in bodies and b1[0] in bodies:
                kinematic_non_root += [b for b in (b1[0],) if b in kinematic and b0[0] not in kinematic]
    return UsdFacts(float(mpu), lowest, has_plane, sorted(colliders), sorted(set(kinematic_non_root)))


@dataclass
class Loaded:
    """A package the engine accepted: the finalized model and what was read to build it."""
    root_layer: str
    model: object
    facts: UsdFacts
    ground_height_m: float | None        # the plane we added (None: the asset has its own)
    body_labels: list[str]
    joint_labels: list[str]
    body_mass_kg: np.ndarray
    joint_type: np.ndarray
    joint_q_start: np.ndarray
    joint_qd_start: np.ndarray
    joint_dof_count: int
    collision_shapes: list[str]          # labels of engine shapes that collide (our ground excluded)
    collision_shape_body: list[int]
    limit_lower: np.ndarray              # per dof, engine units (rad, stage units)
    limit_upper: np.ndarray
    warnings: list[str] = field(default_factory=list)
    inertia_diagonal: np.ndarray | None = None   # joint-space M_ii per dof at the initial pose
    corrections: list[dict] = field(default_factory=list)   # physical/corrections.py, as applied


GRASP_BOX = "usdgrade_grasp_box"


def load(root_layer: Path, settings: RunSettings, variant_selections: dict | None = None,
         grasp_box: dict | None = None) -> Loaded:
    """Import, add the ground, finalize, build the solver once: raises EngineRefusal with the reason.
    The stage is composed with the case's `variant_selections` (a SimReady asset's engine)."""
    import warnings

    import newton

    configure_warp()
    stage = open_for_engine(root_layer, variant_selections)
    facts = read_usd_facts(stage)
    if facts.kinematic_non_root:
        # MuJoCo has no kinematic body inside a kinematic tree: the conversion fails or the body
        # silently becomes dynamic; either way the run would not test the authored asset.
        raise EngineRefusal(f"kinematic non-root bodies (unsupported by the MuJoCo solver): "
                            f"{', '.join(facts.kinematic_non_root)}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        builder = import_usd(stage, settings)
        # what the MuJoCo solver refuses in real assets, made loadable by one rule for both sides
        corrections = correct(builder, facts.meters_per_unit)
        if grasp_box is not None:
            _add_grasp_box(builder, grasp_box)
        ground = None
        if not facts.has_plane_collider and facts.lowest_collider_z is not None:
            builder.add_ground_plane(height=facts.lowest_collider_z, label="usdgrade_ground")
            ground = facts.lowest_collider_z * facts.meters_per_unit
        try:
            model = builder.finalize(device=settings.device)
        except Exception as error:
            raise EngineRefusal(f"the engine could not build the model: {type(error).__name__}: {error}") from error
    shape_labels = list(model.shape_label)
    flags = model.shape_flags.numpy()
    shape_body = model.shape_body.numpy()
    collide = int(newton.ShapeFlags.COLLIDE_SHAPES)
    collision = [i for i in range(model.shape_count) if flags[i] & collide and shape_labels[i] != "usdgrade_ground"]
    loaded = Loaded(
        root_layer=str(root_layer), model=model, facts=facts, ground_height_m=ground,
        body_labels=list(model.body_label), joint_labels=list(model.joint_label),
        body_mass_kg=model.body_mass.numpy().astype(float) * 1.0,
        joint_type=model.joint_type.numpy().copy(), joint_q_start=model.joint_q_start.numpy().copy(),
        joint_qd_start=model.joint_qd_start.numpy().copy(), joint_dof_count=int(model.joint_dof_count),
        collision_shapes=[shape_labels[i] for i in collision],
        collision_shape_body=[int(shape_body[i]) for i in collision],
        limit_lower=model.joint_limit_lower.numpy().astype(float),
        limit_upper=model.joint_limit_upper.numpy().astype(float),
        warnings=sorted({str(w.message).splitlines()[0][:300] for w in caught}),
        corrections=corrections,
    )
    # the solver conversion is part of "the engine accepts the asset"; its MuJoCo model also
    # gives the joint-space inertia the programs are scaled by
    loaded.inertia_diagonal = _inertia_diagonal(loaded, make_solver(loaded, settings))
    return loaded


def import_usd(stage, settings: RunSettings):
    """A `newton.ModelBuilder` holding the composed stage as Newton's USD importer reads it, with
    the run's import settings (not finalized: the caller adds what it needs, then finalizes)."""
    import newton

    builder = newton.ModelBuilder()
    try:
        builder.add_usd(stage, parse_mujoco_options=settings.parse_mujoco_options,
                        collapse_fixed_joints=settings.collapse_fixed_joints,
                        joint_ordering=settings.joint_ordering)
    except Exception as error:  # the importer's own refusal: reversed joints, bad schemas...
        raise EngineRefusal(f"the USD importer refused the asset: {type(error).__name__}: {error}") from error
    return builder


def _add_grasp_box(builder, box: dict) -> None:
    """The object of the grasp test: a free box (stage units), placed and sized from the reference's
    gripper (physical/probes.py grasp_setup), of the given density."""
    import newton
    import warp as wp

    body = builder.add_body(xform=wp.transform(wp.vec3(*box["center"]), wp.quat(*box["rotation_xyzw"])),
                            label=GRASP_BOX)
    config = newton.ModelBuilder.ShapeConfig(density=box["density"])
    builder.add_shape_box(body, hx=box["half_extents"][0], hy=box["half_extents"][1], hz=box["half_extents"][2],
                          cfg=config, label=GRASP_BOX + "/shape")


def make_solver(loaded: Loaded, settings: RunSettings):
    import warnings

    import newton

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return newton.solvers.SolverMuJoCo(loaded.model, use_mujoco_cpu=settings.use_mujoco_cpu,
                                               use_mujoco_contacts=settings.use_mujoco_contacts)
        except Exception as error:
            raise EngineRefusal(f"the MuJoCo solver refused the model: {type(error).__name__}: {error}") from error


def _inertia_diagonal(loaded: Loaded, solver) -> np.ndarray:
    """M_ii at the initial pose for each Newton dof (MuJoCo's dense mass matrix, mapped back)."""
    import mujoco

    mj_model, mj_data = solver.mj_model, solver.mj_data
    mujoco.mj_forward(mj_model, mj_data)
    dense = np.zeros((mj_model.nv, mj_model.nv))
    mujoco.mj_fullM(mj_model, mj_data, dense)
    to_newton = np.asarray(_numpy(solver.mjc_dof_to_newton_dof)).reshape(-1)
    diagonal = np.zeros(loaded.joint_dof_count)
    for mj_dof, newton_dof in enumerate(to_newton[: mj_model.nv]):
        if 0 <= newton_dof < loaded.joint_dof_count:
            diagonal[int(newton_dof)] = dense[mj_dof, mj_dof]
    return diagonal


def _numpy(value):
    return value.numpy() if hasattr(value, "numpy") else value


@dataclass
class Trajectory:
    times_s: np.ndarray          # (n,)
    body_positions_m: np.ndarray  # (n, bodies, 3), world, metres
    joint_q: np.ndarray          # (n, coords), engine units (rad; prismatic in metres)
    steps: int
    body_rotations: np.ndarray | None = None   # (n, bodies, 4) world quaternions (x, y, z, w)
    contacts_max: int | None = None    # most contacts MuJoCo held at any step (None: not readable)


def simulate(loaded: Loaded, settings: RunSettings, duration_s: float, joint_force=None, gravity=None,
             before_step=None, joint_targets: dict[int, float] | None = None) -> Trajectory:
    """Step from the authored initial state; joint_force(t) -> per-dof generalized force, or None;
    gravity(g0) -> the gravity vector MuJoCo uses (engine units), from the model's own g0;
    before_step(k, t, state, solver) may hold coordinates or change gravity before each step;
    joint_targets: {coordinate: target} for the joints' drives (engine units), the rest as authored."""
    import newton

    model = loaded.model
    solver = make_solver(loaded, settings)
    if gravity is not None:   # the CPU solver steps MuJoCo's own model: its option is the gravity used
        solver.mj_model.opt.gravity[:] = np.asarray(gravity(np.array(solver.mj_model.opt.gravity, dtype=float)))
    state, next_state = model.state(), model.state()
    control = model.control()
    if joint_targets and control.joint_target_q is not None:
        targets = control.joint_target_q.numpy()
        for coord, value in joint_targets.items():
            targets[coord] = value
        control.joint_target_q.assign(targets)
    newton.eval_fk(model, model.joint_q, model.joint_qd, state)
    steps = int(round(duration_s / settings.dt_s))
    mpu = loaded.facts.meters_per_unit
    prismatic_coords = _prismatic_coords(loaded)
    times, positions, coords, rotations = [], [], [], []
    contacts_max = _contacts(solver)
    for k in range(steps):
        if joint_force is not None:
            control.joint_f.assign(np.asarray(joint_force(k * settings.dt_s), dtype=np.float32))
        if before_step is not None:
            before_step(k, k * settings.dt_s, state, solver)
        state.clear_forces()
        try:
            solver.step(state, next_state, control, None, settings.dt_s)
        except Exception as error:  # the engine's own failure on this asset, not the verifier's
            raise EngineRefusal(f"the engine failed at step {k + 1}: {type(error).__name__}: {error}") from error
        state, next_state = next_state, state
        now = _contacts(solver)
        contacts_max = None if now is None or contacts_max is None else max(contacts_max, now)
        if (k + 1) % settings.sample_every_steps == 0 or k + 1 == steps:
            times.append((k + 1) * settings.dt_s)
            body_q = state.body_q.numpy().astype(float)
            positions.append(body_q[:, :3] * mpu)
            rotations.append(body_q[:, 3:7])
            q = state.joint_q.numpy().astype(float)
            q[prismatic_coords] *= mpu
            coords.append(q)
    return Trajectory(np.array(times), np.array(positions), np.array(coords), steps, np.array(rotations),
                      contacts_max)


def _contacts(solver) -> int | None:
    """Active contacts in MuJoCo's data after the last step (its own collision pipeline, CPU)."""
    data = getattr(solver, "mj_data", None)
    count = getattr(data, "ncon", None)
    return None if count is None else int(count)


def _prismatic_coords(loaded: Loaded) -> list[int]:
    return [int(loaded.joint_q_start[j]) for j, t in enumerate(loaded.joint_type) if t == PRISMATIC]


def initial_body_poses(loaded: Loaded) -> tuple[np.ndarray, np.ndarray]:
    """World positions (m) and orientations (x, y, z, w) of the bodies at the authored initial state."""
    import newton

    model = loaded.model
    state = model.state()
    newton.eval_fk(model, model.joint_q, model.joint_qd, state)
    body_q = state.body_q.numpy().astype(float)
    return body_q[:, :3] * loaded.facts.meters_per_unit, body_q[:, 3:7]


def single_dof_joints(loaded: Loaded) -> dict[str, dict]:
    """Revolute and prismatic joints by label: coordinate, dof, type, limits (rad or metres)."""
    mpu = loaded.facts.meters_per_unit
    joints = {}
    for j, kind in enumerate(loaded.joint_type):
        if kind not in (PRISMATIC, REVOLUTE):
            continue
        dof = int(loaded.joint_qd_start[j])
        lower, upper = float(loaded.limit_lower[dof]), float(loaded.limit_upper[dof])
        limited = abs(lower) < UNLIMITED and abs(upper) < UNLIMITED and upper > lower
        scale = mpu if kind == PRISMATIC else 1.0
        joints[loaded.joint_labels[j]] = {
            "coord": int(loaded.joint_q_start[j]), "dof": dof,
            "type": "prismatic" if kind == PRISMATIC else "revolute",
            "limited": limited, "lower": lower * scale if limited else None,
            "upper": upper * scale if limited else None,
            "force_scale": mpu if kind == PRISMATIC else 1.0,
        }
    return joints


def versions() -> dict:
    from importlib import metadata

    from .settings import ENGINE_DISTRIBUTIONS

    found = {}
    for name in ENGINE_DISTRIBUTIONS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found
