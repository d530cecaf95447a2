"""Small rigid-transform helpers on plain tuples (quaternions are (w, x, y, z))."""
from __future__ import annotations

import math

import numpy as np

from .model import Pose, Quat, Vec3

AXIS_VECTORS = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}


NAN_QUAT = (math.nan, math.nan, math.nan, math.nan)


def normalized(q: Quat) -> Quat:
    """Unit quaternion; a zero or non-finite one stays NaN so that every comparison with it fails."""
    n = math.sqrt(sum(c * c for c in q))
    if n == 0.0 or not math.isfinite(n):
        return NAN_QUAT
    return tuple(c / n for c in q)  # type: ignore[return-value]


def multiply(a: Quat, b: Quat) -> Quat:
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


def rotate(q: Quat, v: Vec3) -> Vec3:
    w, x, y, z = q
    p = multiply(multiply(q, (0.0, *v)), (w, -x, -y, -z))
    return (p[1], p[2], p[3])


def compose(parent: Pose, local_position: Vec3, local_rotation: Quat) -> Pose:
    """parent * local: a frame given in the parent's (unscaled) frame, in world space."""
    offset = rotate(parent.rotation, local_position)
    position = tuple(p + o for p, o in zip(parent.position, offset))
    return Pose(position, normalized(multiply(parent.rotation, local_rotation)))  # type: ignore[arg-type]


def distance(a: Vec3, b: Vec3) -> float:
    return float(np.linalg.norm(np.subtract(a, b)))


def rotation_angle_deg(a: Quat, b: Quat) -> float:
    """Angle of the rotation taking a to b, in degrees (q and -q are the same rotation)."""
    dot = abs(sum(x * y for x, y in zip(normalized(a), normalized(b))))
    if not math.isfinite(dot):
        return math.nan  # min() would turn NaN into 1.0: a silent pass
    return math.degrees(2.0 * math.acos(min(1.0, dot)))


def vector_angle_deg(u: Vec3, v: Vec3) -> float:
    nu, nv = np.linalg.norm(u), np.linalg.norm(v)
    if not (math.isfinite(nu) and math.isfinite(nv)):
        return math.nan
    if nu == 0.0 or nv == 0.0:
        return 180.0
    c = float(np.dot(u, v) / (nu * nv))
    return math.degrees(math.acos(max(-1.0, min(1.0, c))))


def world_axis(pose: Pose, axis: str) -> Vec3:
    return rotate(pose.rotation, AXIS_VECTORS.get(axis, (1.0, 0.0, 0.0)))
