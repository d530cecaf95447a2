"""The four runtime probes: run one loaded package with one program, return plain data.

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
