"""Generate a large synthetic articulated USD package: N bodies in a chain, T triangles in all.

Each body: a visible mesh (a subdivided, slightly squashed sphere) that is also its
collider (convexHull approximation), mass from a density, a revolute joint to the
previous body, articulation root on the first.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from pxr import Gf, Usd, UsdGeom, UsdPhysics, Vt


def sphere_mesh(triangles: int):
    """A UV sphere with about `triangles` triangles as (points, counts, indices)."""
    rings = max(3, int(np.sqrt(triangles / 2)))
    segments = max(3, triangles // (2 * rings))
    theta = np.linspace(0, np.pi, rings + 1)
    phi = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    points = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p) * 0.7, np.cos(t)], axis=-1).reshape(-1, 3)
    quads = []
    for r in range(rings):
        for s in range(segments):
            a, b = r * segments + s, r * segments + (s + 1) % segments
            quads += [a, b, b + segments, a + segments]
    indices = np.array(quads, dtype=np.int32)
    counts = np.full(len(indices) // 4, 4, dtype=np.int32)
    return points, counts, indices


def generate(out: Path, bodies: int, triangles: int, fmt: str = "usda") -> Path:
    """Write the package to `out` with root layer robot.<fmt> (usda text or usdc crate)."""
    if fmt not in ("usda", "usdc"):
        raise ValueError(f"format must be usda or usdc, not {fmt!r}")
    out.mkdir(parents=True, exist_ok=True)
    root = out / f"robot.{fmt}"
    stage = Usd.Stage.CreateNew(str(root))
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    robot = UsdGeom.Xform.Define(stage, "/Robot")
    stage.SetDefaultPrim(robot.GetPrim())
    points, counts, indices = sphere_mesh(max(8, triangles // bodies))
    counts, indices = Vt.IntArray.FromNumpy(counts), Vt.IntArray.FromNumpy(indices)
    previous = None
    for i in range(bodies):
        body = UsdGeom.Xform.Define(stage, f"/Robot/Link{i:03d}")
        body.AddTranslateOp().Set(Gf.Vec3d(0.25 * i, 0.0, 1.0))
        UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
        if i == 0:
            UsdPhysics.ArticulationRootAPI.Apply(body.GetPrim())
        mesh = UsdGeom.Mesh.Define(stage, f"/Robot/Link{i:03d}/Shape")
        mesh.AddScaleOp().Set(Gf.Vec3f(0.1, 0.1, 0.1))
        # A per-body squash keeps every points array distinct (a crate file would share equal arrays).
        squashed = points * np.array([1.0, 1.0 + 0.001 * i, 1.0])
        mesh.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(squashed, dtype=np.float32)))
        mesh.GetFaceVertexCountsAttr().Set(counts)
        mesh.GetFaceVertexIndicesAttr().Set(indices)
        UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
        UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).CreateApproximationAttr("convexHull")
        UsdPhysics.MassAPI.Apply(mesh.GetPrim()).CreateDensityAttr(800.0)
        if previous is not None:
            joint = UsdPhysics.RevoluteJoint.Define(stage, f"/Robot/Joints/J{i:03d}")
            joint.CreateBody0Rel().SetTargets([previous])
            joint.CreateBody1Rel().SetTargets([body.GetPath()])
            joint.CreateLocalPos0Attr(Gf.Vec3f(0.125, 0, 0))
            joint.CreateLocalPos1Attr(Gf.Vec3f(-0.125, 0, 0))
            joint.CreateAxisAttr("Y")
            joint.CreateLowerLimitAttr(-90.0)
            joint.CreateUpperLimitAttr(90.0)
        previous = body.GetPath()
    stage.GetRootLayer().Save()
    return root


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--bodies", type=int, default=60)
    parser.add_argument("--triangles", type=int, default=300_000)
    parser.add_argument("--format", choices=("usda", "usdc"), default="usda")
    args = parser.parse_args()
    print(generate(args.out, args.bodies, args.triangles, args.format))
