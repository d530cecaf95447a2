"""The runtime probes: run one loaded package with one program, return plain data.

Each probe runs the reference and the candidate with the same settings and the same program;
programs are built from the reference (joint-space inertia at its initial pose) and carried to
the candidate through the joint correspondence.
"""
from __future__ import annotations

import math

import numpy as np

from . import engine
from .settings import RunSettings


def cook(loaded: engine.Loaded) -> dict:
    """Counts the engine built: bodies, dofs, colliders (built vs authored, and per body), masses."""
    shapes = list(zip(loaded.collision_shapes, loaded.collision_shape_body))
    built_on: dict[str, list[str]] = {}
    for collider in loaded.facts.colliders:
        # a collider is built when the engine holds a colliding shape for that prim (or for a part
        # of it: a decomposition yields several shapes labelled below the prim's path)
        owners = sorted({b for label, b in shapes if label == collider or label.startswith(collider + "/")})
        if owners:
            body = loaded.body_labels[owners[0]] if owners[0] >= 0 else "(world)"
            built_on.setdefault(body, []).append(collider)
    return {
        "bodies": len(loaded.body_labels),
        "dofs": loaded.joint_dof_count,
        "colliders_authored": list(loaded.facts.colliders),
        "colliders_built": sorted(c for cs in built_on.values() for c in cs),
        "colliders_built_per_body": {body: sorted(cs) for body, cs in sorted(built_on.items())},
        "body_mass": {label: float(m) for label, m in zip(loaded.body_labels, loaded.body_mass_kg)},
        "collider_bodies": sorted({loaded.body_labels[b] for b in loaded.collision_shape_body if b >= 0}),
    }


def _run(loaded, settings, duration, force=None) -> dict:
    trajectory = engine.simulate(loaded, settings, duration, force)
    return {"times": trajectory.times_s, "positions": trajectory.body_positions_m, "joint_q": trajectory.joint_q,
            "rotations": trajectory.body_rotations, "steps": trajectory.steps, "contacts": trajectory.contacts_max}


def rest(loaded: engine.Loaded, settings: RunSettings) -> dict:
    """The unactuated drop, with the authored start pose (to tell a run where nothing happened)."""
    run = _run(loaded, settings, settings.rest_duration_s)
    run["start_positions"], run["start_rotations"] = engine.initial_body_poses(loaded)
    return run


def dynamic_program(reference: engine.Loaded, settings: RunSettings) -> dict[str, dict]:
    """Per reference single-axis joint: amplitude (engine units) and phase of its sine torque."""
    diagonal = reference.inertia_diagonal
    joints = engine.single_dof_joints(reference)
    mpu = reference.facts.meters_per_unit
    program = {}
    labels = sorted(joints)
    for k, label in enumerate(labels):
        j = joints[label]
        accel = settings.dynamic_acceleration / (mpu if j["type"] == "prismatic" else 1.0)
        program[label] = {"amplitude": float(diagonal[j["dof"]] * accel),
                          "phase_rad": 2.0 * math.pi * k / max(len(labels), 1), "type": j["type"]}
    return program


def _force_function(loaded: engine.Loaded, per_joint: dict[str, object], settings: RunSettings):
    """per_joint: own joint label -> constant (float) or (amplitude, phase) sine."""
    joints = engine.single_dof_joints(loaded)
    entries = [(joints[label]["dof"], spec) for label, spec in per_joint.items() if label in joints]
    omega = 2.0 * math.pi * settings.dynamic_frequency_hz
    n = loaded.joint_dof_count

    def force(t: float) -> np.ndarray:
        f = np.zeros(n)
        for dof, spec in entries:
            f[dof] = spec if isinstance(spec, float) else spec[0] * math.sin(omega * t + spec[1])
        return f
    return force


def dynamic(loaded: engine.Loaded, settings: RunSettings, program: dict, joint_map: dict | None) -> dict:
    """joint_map: reference joint label -> this package's joint label (None for the reference itself)."""
    per_joint = {}
    for label, spec in program.items():
        own = label if joint_map is None else joint_map.get(label)
        if own is not None:
            per_joint[own] = (spec["amplitude"], spec["phase_rad"])
    return _run(loaded, settings, settings.dynamic_duration_s, _force_function(loaded, per_joint, settings))


def travel_program(reference: engine.Loaded, settings: RunSettings) -> dict[str, dict]:
    """Per limited reference joint: the constant push magnitude (engine units) and its limits."""
    diagonal = reference.inertia_diagonal
    mpu = reference.facts.meters_per_unit
    program = {}
    for label, j in sorted(engine.single_dof_joints(reference).items()):
        if not j["limited"]:
            continue
        span = j["upper"] - j["lower"]
        accel = max(settings.travel_acceleration_factor * span / settings.travel_duration_s ** 2,
                    settings.travel_min_acceleration if j["type"] == "revolute" else settings.travel_min_acceleration * span)
        accel_engine = accel / (mpu if j["type"] == "prismatic" else 1.0)
        program[label] = {"push": float(diagonal[j["dof"]] * accel_engine), "type": j["type"],
                          "lower": j["lower"], "upper": j["upper"], "range": span}
    return program


def travel(loaded: engine.Loaded, settings: RunSettings, program: dict, joint_map: dict | None) -> dict:
    """Push every limited joint one way, then (from the start again) the other: extremes reached."""
    joints = engine.single_dof_joints(loaded)
    own = {label: (label if joint_map is None else joint_map.get(label)) for label in program}
    reached = {}
    runs = {}
    for sign in (1.0, -1.0):
        per_joint = {own[l]: sign * p["push"] for l, p in program.items() if own[l] in joints}
        runs[sign] = _run(loaded, settings, settings.travel_duration_s, _force_function(loaded, per_joint, settings))
    for label, p in program.items():
        mine = own[label]
        if mine not in joints:
            reached[label] = None
            continue
        coord = joints[mine]["coord"]
        up = runs[1.0]["joint_q"][:, coord]
        down = runs[-1.0]["joint_q"][:, coord]
        reached[label] = {"type": p["type"], "range": p["range"], "lower": p["lower"], "upper": p["upper"],
                          "reached_max": float(np.max(up)) if np.all(np.isfinite(up)) else float("nan"),
                          "reached_min": float(np.min(down)) if np.all(np.isfinite(down)) else float("nan")}
    return reached


# --- slope drop -------------------------------------------------------------------------------------

def tilted(angle_deg: float):
    """gravity(g0) -> g0 turned by angle_deg about a horizontal axis: the drop on a slope of that
    angle, with the ground plane where the rest test puts it (one fixed axis: reproducible)."""
    def gravity(g0: np.ndarray) -> np.ndarray:
        down = g0 / max(np.linalg.norm(g0), 1e-12)
        pick = np.array([1.0, 0.0, 0.0]) if abs(down[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        axis = np.cross(down, pick)
        axis /= np.linalg.norm(axis)
        return _rotate_about(g0, axis, math.radians(angle_deg))
    return gravity


def _rotate_about(v: np.ndarray, axis: np.ndarray, angle: float) -> np.ndarray:
    return (v * math.cos(angle) + np.cross(axis, v) * math.sin(angle)
            + axis * np.dot(axis, v) * (1.0 - math.cos(angle)))


def slope(loaded: engine.Loaded, settings: RunSettings) -> dict:
    """The unactuated drop with gravity tilted by the slope angle (see tilted)."""
    trajectory = engine.simulate(loaded, settings, settings.slope_duration_s, gravity=tilted(settings.slope_angle_deg))
    run = {"times": trajectory.times_s, "positions": trajectory.body_positions_m, "joint_q": trajectory.joint_q,
           "rotations": trajectory.body_rotations, "steps": trajectory.steps, "contacts": trajectory.contacts_max}
    run["start_positions"], run["start_rotations"] = engine.initial_body_poses(loaded)
    return run


# --- grasp and lift -----------------------------------------------------------------------------------

def _quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate v by the unit quaternion q = (x, y, z, w)."""
    u, w = np.asarray(q[:3], dtype=float), float(q[3])
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def _shape_points(model, shape: int) -> np.ndarray:
    """Points whose hull bounds the shape, in its body's frame (stage units)."""
    import newton

    kind = int(model.shape_type.numpy()[shape])
    scale = np.asarray(model.shape_scale.numpy()[shape], dtype=float)
    if kind in (int(newton.GeoType.MESH), int(newton.GeoType.CONVEX_MESH)):
        local = np.asarray(model.shape_source[shape].vertices, dtype=float).reshape(-1, 3) * scale
    else:
        if kind == int(newton.GeoType.BOX):
            half = scale
        elif kind == int(newton.GeoType.SPHERE):
            half = np.full(3, scale[0])
        elif kind in (int(newton.GeoType.CAPSULE), int(newton.GeoType.CYLINDER), int(newton.GeoType.CONE)):
            half = np.array([scale[0], scale[0], scale[1] + (scale[0] if kind == int(newton.GeoType.CAPSULE) else 0.0)])
        else:
            half = np.abs(scale[:3])
        local = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float) * half
    transform = model.shape_transform.numpy()[shape].astype(float)
    return np.array([_quat_rotate(transform[3:7], p) for p in local]) + transform[:3]


def _world(points: np.ndarray, body_q: np.ndarray) -> np.ndarray:
    return np.array([_quat_rotate(body_q[3:7], p) for p in points]) + body_q[:3]


def _finger_points(loaded: engine.Loaded, body: int, body_q: np.ndarray) -> np.ndarray | None:
    model = loaded.model
    labels = set(loaded.collision_shapes)
    shape_label = list(model.shape_label)
    shape_body = model.shape_body.numpy()
    points = [_world(_shape_points(model, s), body_q[body]) for s in range(model.shape_count)
              if int(shape_body[s]) == body and shape_label[s] in labels]
    return np.vstack(points) if points else None


def gripper(loaded: engine.Loaded) -> dict | str:
    """The reference's gripper: two prismatic fingers on one parent body whose world axes are
    collinear and whose colliders face each other across that axis. Returns its description
    (joint labels, closing directions, the box between the open fingers in stage units) or why none."""
    model = loaded.model
    joints = engine.single_dof_joints(loaded)
    parent = model.joint_parent.numpy()
    joint_x_p = model.joint_X_p.numpy().astype(float)
    axis_of = model.joint_axis.numpy().astype(float)
    body_q = np.concatenate(engine.initial_body_poses(loaded), axis=1)
    body_q[:, :3] /= loaded.facts.meters_per_unit                       # stage units, as the model's
    prismatic = [j for j, t in enumerate(loaded.joint_type) if t == engine.PRISMATIC]
    why = []
    for a_index, a in enumerate(prismatic):
        for b in prismatic[a_index + 1:]:
            if parent[a] != parent[b] or parent[a] < 0:
                continue
            frame = body_q[parent[a]]
            axes = [_quat_rotate(frame[3:7], _quat_rotate(joint_x_p[j][3:7], axis_of[loaded.joint_qd_start[j]]))
                    for j in (a, b)]
            axes = [x / np.linalg.norm(x) for x in axes]
            if abs(float(np.dot(axes[0], axes[1]))) < 0.99:
                continue
            found = _box_between(loaded, (a, b), axes, body_q, joints)
            if isinstance(found, dict):
                return found
            why.append(f"{loaded.joint_labels[a]} and {loaded.joint_labels[b]}: {found}")
    return ("no gripper: no two prismatic fingers on one body moving along one axis with colliders facing each other"
            + (f" ({'; '.join(why)})" if why else ""))


def _box_between(loaded, pair, axes, body_q, joints) -> dict | str:
    model = loaded.model
    child = model.joint_child.numpy()
    u = axes[0]
    points = [_finger_points(loaded, int(child[j]), body_q) for j in pair]
    if any(p is None for p in points):
        return "a finger has no collider"
    order = sorted(range(2), key=lambda i: float(np.mean(points[i] @ u)))
    low, high = order
    labels = [loaded.joint_labels[j] for j in pair]
    info = [joints[label] for label in labels]
    if not all(i["limited"] for i in info):
        return "a finger joint has no limits"
    mpu = loaded.facts.meters_per_unit
    q = loaded.model.joint_q.numpy().astype(float)
    opening, closing_sign, open_q, alongs = [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, 1.0]
    for i, j in enumerate(pair):
        along = float(np.dot(axes[i], u))                 # +1 or -1: the finger's axis against u
        coord = q[int(loaded.joint_q_start[j])]
        lower, upper = info[i]["lower"] / mpu, info[i]["upper"] / mpu
        outward = -1.0 if i == low else 1.0               # the low finger opens towards -u
        closing_sign[i] = -outward * along
        opening[i] = (coord - lower if outward * along < 0 else upper - coord) * abs(along)
        open_q[i], alongs[i] = (lower if closing_sign[i] > 0 else upper), abs(along)
    inner_low = float(np.max(points[low] @ u)) - opening[low]
    inner_high = float(np.min(points[high] @ u)) + opening[high]
    gap = inner_high - inner_low
    if not gap > 0.0:
        return "the fingers' colliders do not open apart"
    pick = np.array([0.0, 0.0, 1.0]) if abs(u[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    v = np.cross(u, pick)
    v /= np.linalg.norm(v)
    w = np.cross(u, v)
    half, center = [0.0, 0.0, 0.0], (inner_low + inner_high) / 2.0 * u
    half[0] = 0.25 * gap                                  # the box fills half of the opening
    for k, direction in ((1, v), (2, w)):
        lo = max(float(np.min(points[0] @ direction)), float(np.min(points[1] @ direction)))
        hi = min(float(np.max(points[0] @ direction)), float(np.max(points[1] @ direction)))
        if not hi > lo:
            return "the fingers' colliders do not face each other"
        half[k] = min(0.4 * (hi - lo), gap / 2.0)
        center = center + (lo + hi) / 2.0 * direction
    rotation = np.column_stack((u, v, w))
    # the run starts with the fingers open; a driven finger's target is where its face meets the box
    # (a quarter of the gap from the open face) and 10 % of the box's width beyond: a firm grip
    grip_q = [open_q[i] + closing_sign[i] * (0.25 * gap + 0.2 * half[0]) / alongs[i] for i in range(2)]
    # an undriven finger is pushed as joint_travel pushes: a force that alone would cross its whole
    # range 16 times over the closing time (M_ii from the reference, like every program here)
    push = [float(loaded.inertia_diagonal[info[i]["dof"]]) * 16.0 * (info[i]["upper"] - info[i]["lower"]) / mpu
            for i in range(2)]
    return {"joints": labels, "push_per_s2": push, "closing_sign": closing_sign, "open_q": open_q, "grip_q": grip_q, "ranges_m": [i["upper"] - i["lower"] for i in info], "parent": loaded.body_labels[int(model.joint_parent.numpy()[pair[0]])],
            "box": {"center": [float(c) for c in center], "rotation_xyzw": _quat_of(rotation),
                    "half_extents": [float(h) for h in half]},
            "opening_m": gap * mpu}


def _quat_of(r: np.ndarray) -> list[float]:
    """(x, y, z, w) of a rotation matrix (columns: the box's axes in world)."""
    trace = float(np.trace(r))
    if trace > 0.0:
        s = math.sqrt(trace + 1.0) * 2.0
        q = [(r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, 0.25 * s]
    else:
        i = int(np.argmax(np.diag(r)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = math.sqrt(1.0 + r[i, i] - r[j, j] - r[k, k]) * 2.0
        q = [0.0, 0.0, 0.0, (r[k, j] - r[j, k]) / s]
        q[i], q[j], q[k] = 0.25 * s, (r[j, i] + r[i, j]) / s, (r[k, i] + r[i, k]) / s
    return [float(x) for x in q]


def _stiff_contacts(solver, settings: RunSettings) -> None:
    """MuJoCo scales a soft contact's stiffness by the bodies' effective mass: on a box of a few grams
    the fingers' grip is a few hundredths of a newton, and the box creeps out. For the grasp run
    only, every contact takes the stiffest time constant MuJoCo allows at this step (2 dt, critical
    damping; MuJoCo's contact override), and friction 1 (sliding), 0.005 (torsional), 0.0001 (rolling)."""
    import mujoco

    options = solver.mj_model.opt
    options.o_solref[:] = (2.0 * settings.dt_s, 1.0)
    options.o_margin = 0.0
    options.o_friction[:] = (1.0, 1.0, 0.005, 0.0001, 0.0001)
    options.enableflags |= int(mujoco.mjtEnableBit.mjENBL_OVERRIDE)


def grasp(loaded: engine.Loaded, settings: RunSettings, setup: dict, joint_map: dict | None) -> dict:
    """Close the fingers on the box with gravity off, then turn gravity on and lift: every coordinate
    but the fingers' and the box's is held at its start, and a floating root rises at the lift speed.
    Returns the box's and the fingers' parent body's positions (m) and the finger coordinates."""
    import newton

    joints = engine.single_dof_joints(loaded)
    mine = [label if joint_map is None else joint_map.get(label) for label in setup["joints"]]
    if any(label not in joints for label in mine):
        raise engine.EngineRefusal("the gripper's finger joints have no match in this package")
    model = loaded.model
    box = loaded.body_labels.index(engine.GRASP_BOX)
    palm_label = setup["parent"] if joint_map is None else setup.get("candidate_parent", setup["parent"])
    palm = loaded.body_labels.index(palm_label) if palm_label in loaded.body_labels else None
    free_joints = [j for j, t in enumerate(loaded.joint_type) if t == int(newton.JointType.FREE)]
    box_joint = [j for j in free_joints if int(model.joint_child.numpy()[j]) == box][0]
    finger_coords = [joints[label]["coord"] for label in mine]
    finger_dofs = [joints[label]["dof"] for label in mine]
    q_start, qd_start = loaded.joint_q_start, loaded.joint_qd_start
    box_coords = set(range(int(q_start[box_joint]), int(q_start[box_joint]) + 7))
    box_dofs = set(range(int(qd_start[box_joint]), int(qd_start[box_joint]) + 6))
    held_coords = np.array([c for c in range(model.joint_coord_count) if c not in box_coords and c not in finger_coords],
                           dtype=int)
    held_dofs = np.array([d for d in range(model.joint_dof_count) if d not in box_dofs and d not in finger_dofs], dtype=int)
    q0 = model.joint_q.numpy().astype(float)
    roots = [j for j in free_joints if j != box_joint and int(model.joint_parent.numpy()[j]) == -1]
    box_mass = float(loaded.body_mass_kg[box])
    g = 9.81 / loaded.facts.meters_per_unit
    weight_force = settings.grasp_force_weight_factor * box_mass * g    # engine units, per finger
    per_dof = np.zeros(loaded.joint_dof_count)
    for dof, sign, push in zip(finger_dofs, setup["closing_sign"], setup["push_per_s2"]):
        per_dof[dof] = sign * max(weight_force, push / settings.grasp_close_s ** 2)
    lift_speed = settings.grasp_lift_speed_mps / loaded.facts.meters_per_unit
    state_gravity = {}

    def before_step(k, t, state, solver):
        if "g" not in state_gravity:
            state_gravity["g"] = np.array(solver.mj_model.opt.gravity, dtype=float)
            _stiff_contacts(solver, settings)
            q = state.joint_q.numpy()
            q[finger_coords] = setup["open_q"]          # the box was placed between the open fingers
            state.joint_q.assign(q)
        lifting = t >= settings.grasp_close_s
        solver.mj_model.opt.gravity[:] = state_gravity["g"] if lifting else 0.0
        q = state.joint_q.numpy()
        qd = state.joint_qd.numpy()
        q[held_coords] = q0[held_coords]
        qd[held_dofs] = 0.0
        if lifting:
            up = -state_gravity["g"] / np.linalg.norm(state_gravity["g"])
            for j in roots:
                start = int(q_start[j])
                q[start:start + 3] = q0[start:start + 3] + up * lift_speed * (t - settings.grasp_close_s)
                # a free joint's velocity is (linear, angular), the linear part first (Newton's twist)
                qd[int(qd_start[j]):int(qd_start[j]) + 3] = up * lift_speed
        state.joint_q.assign(q)
        state.joint_qd.assign(qd)

    # driven fingers are commanded to grip the box (a finger without a drive ignores it)
    targets = dict(zip(finger_coords, setup["grip_q"]))
    trajectory = engine.simulate(loaded, settings, settings.grasp_close_s + settings.grasp_lift_s,
                                 lambda t: per_dof, before_step=before_step, joint_targets=targets)
    return {"times": trajectory.times_s, "box": trajectory.body_positions_m[:, box, :],
            "palm": None if palm is None else trajectory.body_positions_m[:, palm, :],
            "fingers": trajectory.joint_q[:, finger_coords], "positions": trajectory.body_positions_m,
            "lift_starts_s": settings.grasp_close_s, "floating_root": bool(roots), "box_mass_kg": box_mass}
