"""Generated meshes and small two-body packages around them, for the mesh tests.

`two_body_package` writes a package (metres, Z up; its content in a sublayer of a thin root layer): a fixed Base body with a box, and a moving
Link on a revolute joint whose visible part is the given mesh, whose collider is a guide-purpose
box (or the mesh itself with an approximation) and whose mass, centre of mass and inertia are
authored on the body (so collider changes move no mass property).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, Vt


def voxel_mesh(stage, path, cells, size=1.0, offset=(0.0, 0.0, 0.0)):
    """A closed quad mesh: the boundary of a union of axis-aligned voxels (outward)."""
    cells = [tuple(c) for c in cells]
    occupied = set(cells)
    index, points, counts, indices = {}, [], [], []

    def vid(p):
        if p not in index:
            index[p] = len(points)
            points.append(Gf.Vec3f(*(offset[i] + size * p[i] for i in range(3))))
        return index[p]

    for c in cells:
        for a in range(3):
            b, cc = (a + 1) % 3, (a + 2) % 3
            for sign in (1, -1):
                nb = list(c)
                nb[a] += sign
                if tuple(nb) in occupied:
                    continue
                quad = []
                for db, dc in ((0, 0), (1, 0), (1, 1), (0, 1)):
                    p = list(c)
                    p[a] += 1 if sign > 0 else 0
                    p[b] += db
                    p[cc] += dc
                    quad.append(vid(tuple(p)))
                if sign < 0:
                    quad.reverse()
                counts.append(4)
                indices.extend(quad)
    mesh = UsdGeom.Mesh.Define(stage, path)
    mesh.GetPointsAttr().Set(points)
    mesh.GetFaceVertexCountsAttr().Set(counts)
    mesh.GetFaceVertexIndicesAttr().Set(indices)
    return mesh.GetPrim()


def ellipsoid(radii=(0.08, 0.04, 0.02), rings: int = 16, segments: int = 32):
    """A UV ellipsoid (points, triangle faces), outward winding; 16 x 32 gives 960 triangles."""
    pts = [(0.0, 0.0, -radii[2])]
    for i in range(1, rings):
        lat = -math.pi / 2 + math.pi * i / rings
        for j in range(segments):
            lon = 2 * math.pi * j / segments
            pts.append((radii[0] * math.cos(lat) * math.cos(lon), radii[1] * math.cos(lat) * math.sin(lon),
                        radii[2] * math.sin(lat)))
    pts.append((0.0, 0.0, radii[2]))
    top = len(pts) - 1

    def ring(i, j):
        return 1 + i * segments + j % segments

    faces = [(0, ring(0, j + 1), ring(0, j)) for j in range(segments)]
    for i in range(rings - 2):
        for j in range(segments):
            faces.append((ring(i, j), ring(i, j + 1), ring(i + 1, j + 1)))
            faces.append((ring(i, j), ring(i + 1, j + 1), ring(i + 1, j)))
    faces += [(top, ring(rings - 2, j), ring(rings - 2, j + 1)) for j in range(segments)]
    return np.array(pts, dtype=np.float64), np.array(faces, dtype=np.int64)


def sphere(radius=0.05, rings: int = 16, segments: int = 32):
    return ellipsoid((radius, radius, radius), rings, segments)


def box_mesh(size=(0.1, 0.06, 0.04)):
    """A box as 6 quads (faceVertexCounts all 4)."""
    hx, hy, hz = (s / 2 for s in size)
    pts = np.array([[x, y, z] for x in (-hx, hx) for y in (-hy, hy) for z in (-hz, hz)])
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return pts, quads


def _mesh(stage, path, points, faces):
    mesh = UsdGeom.Mesh.Define(stage, path)
    mesh.CreatePointsAttr(Vt.Vec3fArray([Gf.Vec3f(*map(float, p)) for p in points]))
    mesh.CreateFaceVertexCountsAttr(Vt.IntArray([len(f) for f in faces]))
    mesh.CreateFaceVertexIndicesAttr(Vt.IntArray([int(i) for f in faces for i in f]))
    mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
    return mesh


def two_body_package(out: Path, points, faces, *, collider: str = "box", approximation: str = "convexHull",
                     link_at=(0.3, 0.0, 0.2), sibling: bool = False, extra_mesh_collider: bool = False) -> Path:
    """The package described in the module docstring; `collider` is "box" (a guide Cube around
    the mesh), "mesh" (the visible mesh itself with `approximation`) or "guide_mesh" (a hidden
    copy of the mesh with `approximation`). `sibling` adds a second visible mesh to the Link (a
    small box beside the first); `extra_mesh_collider` a hidden ellipsoid mesh collider on the
    Base (convexHull), so that an asset with a box collider also has a mesh one."""
    (out / "layers").mkdir(parents=True)
    top = Sdf.Layer.CreateNew(str(out / "robot.usda"))
    top.subLayerPaths.append("./layers/robot.usda")   # content below the root: variants override it
    stage = Usd.Stage.CreateNew(str(out / "layers" / "robot.usda"))
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    root = UsdGeom.Xform.Define(stage, "/Robot")
    stage.SetDefaultPrim(root.GetPrim())
    UsdPhysics.ArticulationRootAPI.Apply(root.GetPrim())
    scene = UsdPhysics.Scene.Define(stage, "/Robot/Scene")
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0, 0, -1))
    scene.CreateGravityMagnitudeAttr(9.81)
    for name, at, mass in (("Base", (0.0, 0.0, 0.0), 2.0), ("Link", link_at, 0.5)):
        body = UsdGeom.Xform.Define(stage, f"/Robot/{name}")
        body.AddTranslateOp().Set(Gf.Vec3d(*at))
        UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
        api = UsdPhysics.MassAPI.Apply(body.GetPrim())
        api.CreateMassAttr(mass)
        api.CreateCenterOfMassAttr(Gf.Vec3f(0, 0, 0))
        api.CreateDiagonalInertiaAttr(Gf.Vec3f(0.001, 0.002, 0.003))
    base = UsdGeom.Cube.Define(stage, "/Robot/Base/Box")
    base.CreateSizeAttr(0.2)
    UsdPhysics.CollisionAPI.Apply(base.GetPrim())
    mesh = _mesh(stage, "/Robot/Link/Visual", points, faces)
    pts = np.asarray(points, dtype=np.float64)
    if collider == "box":
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        cube = UsdGeom.Cube.Define(stage, "/Robot/Link/Collider")
        cube.CreateSizeAttr(1.0)
        cube.CreatePurposeAttr(UsdGeom.Tokens.guide)
        cube.AddTranslateOp().Set(Gf.Vec3d(*((lo + hi) / 2)))
        cube.AddScaleOp().Set(Gf.Vec3f(*(hi - lo)))
        UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    elif collider == "mesh":
        UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
        UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).CreateApproximationAttr(approximation)
    else:
        hidden = _mesh(stage, "/Robot/Link/ColliderMesh", points, faces)
        hidden.CreatePurposeAttr(UsdGeom.Tokens.guide)
        UsdPhysics.CollisionAPI.Apply(hidden.GetPrim())
        UsdPhysics.MeshCollisionAPI.Apply(hidden.GetPrim()).CreateApproximationAttr(approximation)
    if sibling:
        box_pts, quads = box_mesh((0.03, 0.03, 0.03))
        _mesh(stage, "/Robot/Link/Cap", box_pts + pts.max(axis=0) + 0.02, quads)
    if extra_mesh_collider:
        hull_pts, hull_faces = ellipsoid((0.12, 0.06, 0.05), rings=8, segments=16)
        hidden = _mesh(stage, "/Robot/Base/HullCollider", hull_pts + np.array([0.0, 0.0, 0.15]), hull_faces)
        hidden.CreatePurposeAttr(UsdGeom.Tokens.guide)
        UsdPhysics.CollisionAPI.Apply(hidden.GetPrim())
        UsdPhysics.MeshCollisionAPI.Apply(hidden.GetPrim()).CreateApproximationAttr("convexHull")
    joint = UsdPhysics.RevoluteJoint.Define(stage, "/Robot/Joint")
    joint.CreateBody0Rel().SetTargets([Sdf.Path("/Robot/Base")])
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Robot/Link")])
    joint.CreateLocalPos0Attr(Gf.Vec3f(*map(float, link_at)))
    joint.CreateLocalPos1Attr(Gf.Vec3f(0, 0, 0))
    joint.CreateAxisAttr("Z")
    joint.CreateLowerLimitAttr(-90.0)
    joint.CreateUpperLimitAttr(90.0)
    stage.GetRootLayer().Save()
    for key in ("metersPerUnit", "upAxis", "kilogramsPerUnit"):
        top.pseudoRoot.SetInfo(key, stage.GetRootLayer().pseudoRoot.GetInfo(key))
    top.defaultPrim = "Robot"
    top.Save()
    return out


def add_part(package: Path, path: str, points, faces, color=None) -> None:
    """Another visible mesh in the package's content layer (`two_body_package`), with a display
    colour when `color` is given."""
    stage = Usd.Stage.Open(str(package / "layers" / "robot.usda"))
    mesh = _mesh(stage, path, points, faces)
    if color is not None:
        mesh.CreateDisplayColorAttr([Gf.Vec3f(*color)])
    stage.GetRootLayer().Save()
