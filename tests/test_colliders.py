"""Tests for usd_repair_verifier.stage_snapshot.colliders: solids, approximations, coverage, free space."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from pxr import Gf, Usd, UsdGeom, UsdPhysics

from usd_repair_verifier.stage_snapshot.colliders import (
    collider_solid,
    coverage,
    empty_space_samples,
    free_space_fill,
    hull_solid,
    inside_any,
    mesh_solid,
    union_solid,
)
from usd_repair_verifier.stage_snapshot.geometry import prim_triangles
from usd_repair_verifier.stage_snapshot.surface_sampling import sample_surface

from tests.mesh_assets import voxel_mesh

IDENTITY = Gf.Matrix4d(1.0)


def _stage(mpu: float = 1.0) -> Usd.Stage:
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageMetersPerUnit(stage, mpu)
    return stage


def _world(prim):
    return UsdGeom.XformCache().GetLocalToWorldTransform(prim)


def _solid(prim, mpu=1.0):
    return collider_solid(prim, _world(prim), mpu)


def _define(stage, type_name, path, **attrs):
    prim = getattr(UsdGeom, type_name).Define(stage, path).GetPrim()
    for name, value in attrs.items():
        prim.GetAttribute(name).Set(value)
    return prim


def _approx(prim, token):
    UsdPhysics.CollisionAPI.Apply(prim)
    UsdPhysics.MeshCollisionAPI.Apply(prim).CreateApproximationAttr().Set(token)
    return prim


def _check(solid, inside, outside, margin=0.0):
    assert solid.contains(np.array(inside, float), margin).all(), solid.contains(np.array(inside, float), margin)
    assert not solid.contains(np.array(outside, float), margin).any(), solid.contains(np.array(outside, float), margin)


# --------------------------------------------------------------------------- primitives


def test_cube_with_non_uniform_scale_and_rotation():
    stage = _stage()
    cube = UsdGeom.Cube.Define(stage, "/Box")
    cube.GetSizeAttr().Set(2.0)
    cube.AddTranslateOp().Set(Gf.Vec3d(1.0, 0.0, 0.0))
    cube.AddRotateZOp().Set(90.0)
    cube.AddScaleOp().Set(Gf.Vec3f(3.0, 1.0, 0.5))  # local x half 3 -> world y
    s = _solid(cube.GetPrim())
    assert s.kind == "cube"
    assert s.volume == pytest.approx(6.0 * 2.0 * 1.0)
    np.testing.assert_allclose(s.bounds, [[0.0, -3.0, -0.5], [2.0, 3.0, 0.5]], atol=1e-12)
    _check(s, inside=[[1.0, 2.9, 0.0], [1.9, -2.9, 0.49], [1.0, 0.0, 0.0]],
           outside=[[1.0, 3.1, 0.0], [2.1, 0.0, 0.0], [1.0, 0.0, 0.6]])
    # margin is a Euclidean world distance: 0.05 outside a face
    p = np.array([[2.05, 0.0, 0.0]])
    assert not s.contains(p, 0.04)[0] and s.contains(p, 0.06)[0]
    # near an edge: distance sqrt(2) * 0.05 = 0.0707
    q = np.array([[2.05, 3.05, 0.0]])
    assert not s.contains(q, 0.07)[0] and s.contains(q, 0.072)[0]


def test_sphere_becomes_ellipsoid_under_non_uniform_scale():
    stage = _stage()
    sph = UsdGeom.Sphere.Define(stage, "/Ball")
    sph.GetRadiusAttr().Set(1.0)
    sph.AddScaleOp().Set(Gf.Vec3f(2.0, 1.0, 1.0))
    s = _solid(sph.GetPrim())
    assert s.volume == pytest.approx(4 / 3 * math.pi * 2.0)
    _check(s, inside=[[1.9, 0, 0], [0, 0.95, 0], [1.0, 0.8, 0.0]], outside=[[2.1, 0, 0], [0, 1.05, 0], [1.5, 0.8, 0]])
    np.testing.assert_allclose(s.bounds, [[-2, -1, -1], [2, 1, 1]], atol=1e-12)


def test_capsule_axis_and_volume():
    stage = _stage()
    cap = _define(stage, "Capsule", "/Cap", radius=0.5, height=2.0, axis="X")
    s = _solid(cap)
    assert s.kind == "capsule"
    assert s.volume == pytest.approx(math.pi * 0.25 * 2.0 + 4 / 3 * math.pi * 0.125)
    _check(s, inside=[[1.45, 0, 0], [0, 0.49, 0], [1.2, 0.3, 0.3]],
           outside=[[1.55, 0, 0], [0, 0.51, 0], [1.0, 0.4, 0.4], [0, 0, 0.6]])
    np.testing.assert_allclose(s.bounds, [[-1.5, -0.5, -0.5], [1.5, 0.5, 0.5]], atol=1e-12)


def test_tapered_capsule_1():
    stage = _stage()
    cap = _define(stage, "Capsule_1", "/Cap", radiusBottom=1.0, radiusTop=0.5, height=3.0)
    s = _solid(cap)
    assert s.kind == "capsule_1"
    # bottom pole at -1.5 - 1.0, top pole at 1.5 + 0.5
    _check(s, inside=[[0, 0, -2.45], [0, 0, 1.95], [0.9, 0, -1.5], [0.45, 0, 1.5]],
           outside=[[0, 0, -2.55], [0, 0, 2.05], [1.05, 0, -1.5], [0.55, 0, 1.5]])
    # volume against the tessellation's (which is inscribed: slightly smaller)
    soup = prim_triangles(cap, IDENTITY, 1.0)
    assert soup.signed_volume == pytest.approx(s.volume, rel=0.01)
    assert soup.signed_volume < s.volume


def test_cylinder_cone_and_cylinder_1():
    stage = _stage()
    cyl = _solid(_define(stage, "Cylinder", "/Cyl", radius=0.5, height=2.0, axis="Y"))
    assert cyl.volume == pytest.approx(math.pi * 0.25 * 2.0)
    _check(cyl, inside=[[0.49, 0.99, 0], [0, -0.99, 0.49]], outside=[[0.51, 0, 0], [0, 1.01, 0], [0.4, 0, 0.4]])
    cone = _solid(_define(stage, "Cone", "/Cone", radius=1.0, height=2.0))
    assert cone.volume == pytest.approx(math.pi * 2.0 / 3)
    _check(cone, inside=[[0.95, 0, -0.99], [0, 0, 0.99], [0.45, 0, 0.0]],
           outside=[[0.55, 0, 0.0], [0, 0, 1.01], [1.01, 0, -0.99], [0, 0, -1.01]])
    fr = _solid(_define(stage, "Cylinder_1", "/Fr", radiusBottom=1.0, radiusTop=0.5, height=2.0))
    assert fr.volume == pytest.approx(math.pi * 2.0 / 3 * (1 + 0.5 + 0.25))
    _check(fr, inside=[[0.95, 0, -0.99], [0.48, 0, 0.99], [0.7, 0, 0.0]],
           outside=[[0.8, 0, 0.0], [0.55, 0, 0.99], [0, 0, 1.01]])
    # margin near the cone's slanted side: exact distance
    slant = np.array([2.0, 1.0]) / math.sqrt(5.0)  # outward normal of the side in (rho, z)
    p = np.array([[0.5 + 0.1 * slant[0], 0.0, 0.0 + 0.1 * slant[1]]])
    assert not cone.contains(p, 0.09)[0] and cone.contains(p, 0.11)[0]


def test_primitive_volumes_match_tessellation():
    stage = _stage()
    for name, attrs in [("Sphere", {"radius": 0.3}), ("Capsule", {"radius": 0.2, "height": 0.5}),
                        ("Cylinder", {"radius": 0.2, "height": 0.5}), ("Cone", {"radius": 0.2, "height": 0.5}),
                        ("Cube", {"size": 0.4})]:
        prim = _define(stage, name, "/" + name, **attrs)
        m = Gf.Matrix4d().SetScale(Gf.Vec3d(1.0, 2.0, 3.0)) * Gf.Matrix4d().SetRotate(
            Gf.Rotation(Gf.Vec3d(1, 2, 3), 40.0)) * Gf.Matrix4d().SetTranslate(Gf.Vec3d(1, 2, 3))
        solid = collider_solid(prim, m, 1.0)
        soup = prim_triangles(prim, m, 1.0)
        assert soup.signed_volume == pytest.approx(solid.volume, rel=0.01), name
        # the exact solid and the tessellated mesh agree on random points
        pts = np.random.Generator(np.random.PCG64(1)).uniform(soup.bounds[0] - 0.1, soup.bounds[1] + 0.1, (20000, 3))
        disagree = np.mean(solid.contains(pts) != mesh_solid(soup).contains(pts))
        assert disagree < 0.01, name


def test_plane_is_a_half_space():
    stage = _stage()
    plane = _define(stage, "Plane", "/Ground", axis="Z")
    s = _solid(plane)
    assert s.kind == "plane_halfspace" and math.isinf(s.volume)
    assert s.bounds[1, 2] == pytest.approx(0.0) and np.isinf(s.bounds[0]).all()
    _check(s, inside=[[100, -50, -0.01], [0, 0, -1000]], outside=[[0, 0, 0.01]])
    tilted = _define(stage, "Plane", "/Wall", axis="X")
    UsdGeom.Xformable(tilted).AddTranslateOp().Set(Gf.Vec3d(2.0, 0, 0))
    w = _solid(tilted)
    _check(w, inside=[[1.9, 5, 5]], outside=[[2.1, 0, 0]])


def test_meters_per_unit_for_colliders():
    stage = _stage(mpu=0.01)
    cube = UsdGeom.Cube.Define(stage, "/Box")
    cube.GetSizeAttr().Set(50.0)
    cube.AddTranslateOp().Set(Gf.Vec3d(100.0, 0.0, 0.0))
    s = _solid(cube.GetPrim(), UsdGeom.GetStageMetersPerUnit(stage))
    assert s.volume == pytest.approx(0.125)
    _check(s, inside=[[1.2, 0.2, 0.2]], outside=[[1.3, 0, 0], [0.7, 0, 0]])


def test_invalid_colliders_return_none():
    stage = _stage()
    assert _solid(UsdGeom.Xform.Define(stage, "/X").GetPrim()) is None
    assert _solid(_define(stage, "Sphere", "/Zero", radius=0.0)) is None
    cube = UsdGeom.Cube.Define(stage, "/Flat")
    cube.AddScaleOp().Set(Gf.Vec3f(1.0, 0.0, 1.0))
    assert _solid(cube.GetPrim()) is None  # singular transform
    bad = UsdGeom.Mesh.Define(stage, "/Bad")
    bad.GetPointsAttr().Set([Gf.Vec3f(0, 0, 0), Gf.Vec3f(1, 0, 0), Gf.Vec3f(0, 1, 0)])
    bad.GetFaceVertexCountsAttr().Set([3])
    bad.GetFaceVertexIndicesAttr().Set([0, 1, 9])
    for token in ("none", "convexHull", "convexDecomposition", "boundingCube", "boundingSphere"):
        _approx(bad.GetPrim(), token)
        assert _solid(bad.GetPrim()) is None, token
    empty = UsdGeom.Mesh.Define(stage, "/Empty")
    empty.GetPointsAttr().Set([])
    empty.GetFaceVertexCountsAttr().Set([3])
    empty.GetFaceVertexIndicesAttr().Set([0, 1, 2])
    assert _solid(empty.GetPrim()) is None
    line = UsdGeom.Mesh.Define(stage, "/Line")
    line.GetPointsAttr().Set([Gf.Vec3f(0, 0, 0), Gf.Vec3f(1, 0, 0), Gf.Vec3f(2, 0, 0)])
    line.GetFaceVertexCountsAttr().Set([3])
    line.GetFaceVertexIndicesAttr().Set([0, 1, 2])
    _approx(line.GetPrim(), "convexHull")
    assert _solid(line.GetPrim()) is None


# --------------------------------------------------------------------------- mesh approximations

L_CELLS = [(0, 0, 0), (1, 0, 0), (0, 1, 0)]  # notch at cell (1, 1, 0)
NOTCH = [[1.5, 1.5, 0.5]]
SOLID_PART = [[0.5, 0.5, 0.5], [1.5, 0.5, 0.5], [0.5, 1.5, 0.5]]
FAR = [[3.0, 3.0, 3.0], [-0.5, 0.5, 0.5], [0.5, 0.5, 1.5]]


@pytest.mark.parametrize("token,kind,notch_inside", [
    (None, "mesh", False),
    ("none", "mesh", False),
    ("meshSimplification", "mesh", False),
    ("sdf", "mesh", False),
    ("convexDecomposition", "mesh(convexDecomposition)", False),
    ("convexHull", "convex_hull", True),
    ("boundingCube", "bounding_cube", True),
    ("boundingSphere", "bounding_sphere", True),
])
def test_l_shaped_mesh_approximations(token, kind, notch_inside):
    stage = _stage()
    prim = voxel_mesh(stage, "/L", L_CELLS)
    if token is not None:
        _approx(prim, token)
    s = _solid(prim)
    assert s.kind == kind
    assert s.approximation == (token or "none")
    assert s.contains(np.array(SOLID_PART)).all()
    assert s.contains(np.array(NOTCH))[0] == notch_inside
    if token != "boundingSphere":
        assert not s.contains(np.array(FAR)).any()
    expected_volume = {"convex_hull": 3.5, "bounding_cube": 4.0,
                       "bounding_sphere": 4 / 3 * math.pi * (math.sqrt(2.0 ** 2 + 2.0 ** 2 + 1.0) / 2) ** 3}
    assert s.volume == pytest.approx(expected_volume.get(kind, 3.0))


def test_bounding_shapes_use_the_local_frame():
    stage = _stage()
    prim = voxel_mesh(stage, "/L", L_CELLS)
    UsdGeom.Xformable(prim).AddRotateZOp().Set(45.0)
    _approx(prim, "boundingCube")
    s = _solid(prim)
    assert s.volume == pytest.approx(4.0)  # the rotated local box, not the world AABB
    corner = np.array([[0.0, 2 * math.sqrt(2.0) - 0.01, 0.5]])  # local (2, 2) corner rotated 45 deg
    assert s.contains(corner)[0]


def test_flat_mesh_bounding_cube_is_a_zero_thickness_box():
    stage = _stage()
    quad = UsdGeom.Mesh.Define(stage, "/Quad")
    quad.GetPointsAttr().Set([Gf.Vec3f(0, 0, 0), Gf.Vec3f(1, 0, 0), Gf.Vec3f(1, 1, 0), Gf.Vec3f(0, 1, 0)])
    quad.GetFaceVertexCountsAttr().Set([4])
    quad.GetFaceVertexIndicesAttr().Set([0, 1, 2, 3])
    _approx(quad.GetPrim(), "boundingCube")
    s = _solid(quad.GetPrim())
    assert s.volume == 0.0
    assert s.contains(np.array([[0.5, 0.5, 0.0005]]), margin=0.001)[0]
    assert not s.contains(np.array([[0.5, 0.5, 0.01]]), margin=0.001)[0]
    _approx(quad.GetPrim(), "none")  # open: the flat hull, a zero-volume surface
    s = _solid(quad.GetPrim())
    assert s.volume == 0.0 and s.kind.startswith("surface")


def test_open_mesh_falls_back_to_hull():
    stage = _stage()
    prim = voxel_mesh(stage, "/L", L_CELLS)
    mesh = UsdGeom.Mesh(prim)
    counts = list(mesh.GetFaceVertexCountsAttr().Get())
    idx = list(mesh.GetFaceVertexIndicesAttr().Get())
    mesh.GetFaceVertexCountsAttr().Set(counts[:-1])  # drop one face: no longer closed
    mesh.GetFaceVertexIndicesAttr().Set(idx[:-4])
    s = _solid(prim)
    assert s.kind == "convex_hull(open_mesh)" and "not closed" in s.note
    assert s.contains(np.array(NOTCH))[0]


def test_inside_out_mesh_is_a_solid_and_a_non_manifold_one_is_not():
    """Watertight and consistently wound (trimesh's definitions): an inside-out mesh is a solid
    with a positive volume; two voxels sharing only an edge (four faces on it) are not
    watertight, so the hull is used."""
    stage = _stage()
    prim = voxel_mesh(stage, "/L", L_CELLS)
    mesh = UsdGeom.Mesh(prim)
    idx = np.array(mesh.GetFaceVertexIndicesAttr().Get()).reshape(-1, 4)[:, ::-1]
    mesh.GetFaceVertexIndicesAttr().Set(idx.reshape(-1).tolist())
    s = _solid(prim)
    assert s.kind == "mesh" and s.volume == pytest.approx(3.0)
    assert s.contains(np.array(SOLID_PART)).all() and not s.contains(np.array(NOTCH))[0]
    pinched = _solid(voxel_mesh(stage, "/Pinched", [(0, 0, 0), (1, 1, 0)]))
    assert pinched.kind == "convex_hull(open_mesh)" and "not watertight" in pinched.note
    assert pinched.volume == pytest.approx(3.0)  # the hull of the 2 x 2 x 1 box minus two corner prisms


def test_mesh_with_split_vertices_is_still_closed():
    """Duplicated vertices (per-face points, as OBJ/STL conversions write) are merged."""
    stage = _stage()
    src = voxel_mesh(stage, "/Src", L_CELLS)
    soup = prim_triangles(src, IDENTITY, 1.0)
    tris = soup.vertices[soup.faces].reshape(-1, 3)
    mesh = UsdGeom.Mesh.Define(stage, "/Split")
    mesh.GetPointsAttr().Set([Gf.Vec3f(*p) for p in tris.tolist()])
    mesh.GetFaceVertexCountsAttr().Set([3] * len(soup.faces))
    mesh.GetFaceVertexIndicesAttr().Set(list(range(len(tris))))
    s = _solid(mesh.GetPrim())
    assert s.kind == "mesh" and s.volume == pytest.approx(3.0)
    assert not s.contains(np.array(NOTCH))[0]


def test_ray_parity_on_shared_edges_and_vertices():
    """Query points whose vertical rays pass exactly through mesh edges and vertices."""
    stage = _stage()
    cells = [(i, j, k) for i in range(4) for j in range(4) for k in range(2) if not (i == 2 and j == 1)]
    cells += [(1, 1, 2), (1, 2, 2)]
    s = _solid(voxel_mesh(stage, "/Blob", cells))
    occupied = set(cells)
    pts, truth = [], []
    for x in np.arange(-0.5, 4.51, 0.5):
        for y in np.arange(-0.5, 4.51, 0.5):
            for z in (0.5, 1.5, 2.5, 3.5):
                around = {(int(math.floor(x + dx)), int(math.floor(y + dy)), int(math.floor(z)))
                          for dx in (-0.25, 0.25) for dy in (-0.25, 0.25)}
                full = all(c in occupied for c in around)
                empty = not any(c in occupied for c in around)
                if full or empty:  # skip points on the surface itself
                    pts.append((x, y, z))
                    truth.append(full)
    got = s.contains(np.array(pts))
    assert got.tolist() == truth
    assert s.volume == pytest.approx(len(cells))


def test_convex_decomposition_of_open_parts_uses_component_hulls():
    stage = _stage()
    # two fingers as one mesh with two separate open boxes (top faces removed)
    prim = voxel_mesh(stage, "/Fingers", [(0, 0, 0), (0, 0, 1), (2, 0, 0), (2, 0, 1)])
    mesh = UsdGeom.Mesh(prim)
    counts = np.array(mesh.GetFaceVertexCountsAttr().Get())
    idx = np.array(mesh.GetFaceVertexIndicesAttr().Get()).reshape(-1, 4)
    pts = np.array(mesh.GetPointsAttr().Get())
    top = np.all(pts[idx][:, :, 2] == 2.0, axis=1)
    mesh.GetFaceVertexCountsAttr().Set(counts[~top].tolist())
    mesh.GetFaceVertexIndicesAttr().Set(idx[~top].reshape(-1).tolist())
    _approx(prim, "convexDecomposition")
    s = _solid(prim)
    assert s.kind == "component_hulls" and s.volume == pytest.approx(4.0)
    assert s.contains(np.array([[0.5, 0.5, 1.5], [2.5, 0.5, 0.5]])).all()
    assert not s.contains(np.array([[1.5, 0.5, 1.0]]))[0]  # the gap


# --------------------------------------------------------------------------- coverage


def _box_prim(stage, path, size, center):
    cube = UsdGeom.Cube.Define(stage, path)
    cube.GetSizeAttr().Set(1.0)
    cube.AddTranslateOp().Set(Gf.Vec3d(*center))
    cube.AddScaleOp().Set(Gf.Vec3f(*size))
    return cube.GetPrim()


def test_coverage_of_a_box_surface():
    stage = _stage()
    box = _box_prim(stage, "/Visual", (0.2, 0.1, 0.1), (0.0, 0.0, 0.5))
    pts = sample_surface(prim_triangles(box, _world(box), 1.0), 5000, seed=3)
    own = _solid(box)
    assert coverage(pts, [own], tolerance=0.001) == pytest.approx(1.0)
    # the same box as a mesh collider (approximation none) and as a hull
    soup = prim_triangles(box, _world(box), 1.0)
    assert coverage(pts, [mesh_solid(soup, "none")], 0.001) == pytest.approx(1.0)
    assert coverage(pts, [mesh_solid(soup, "convexHull")], 0.001) == pytest.approx(1.0)
    # a collider over the -x half only
    half = _solid(_box_prim(stage, "/HalfCollider", (0.1, 0.1, 0.1), (-0.05, 0.0, 0.5)))
    c = coverage(pts, [half], tolerance=0.001)
    assert 0.4 < c <= 0.55
    assert coverage(pts, [], 0.001) == 0.0
    assert math.isnan(coverage(np.zeros((0, 3)), [own], 0.001))
    # shrunken collider (90 %): covered only with a tolerance larger than the gap
    small = _solid(_box_prim(stage, "/Small", (0.18, 0.09, 0.09), (0.0, 0.0, 0.5)))
    assert coverage(pts, [small], 0.001) < 0.05
    assert coverage(pts, [small], 0.011) < 1.0  # corners are sqrt(0.01^2 + 2 * 0.005^2) away
    assert coverage(pts, [small], 0.0125) == pytest.approx(1.0)


# --------------------------------------------------------------------------- free space


def _gripper(stage):
    """Palm (z 0..1) with two fingers (z 1..3) at x 0..1 and x 2..3; gap x 1..2."""
    palm = voxel_mesh(stage, "/Palm", [(0, 0, 0), (1, 0, 0), (2, 0, 0)], size=0.01)
    left = voxel_mesh(stage, "/Left", [(0, 0, 1), (0, 0, 2)], size=0.01)
    right = voxel_mesh(stage, "/Right", [(2, 0, 1), (2, 0, 2)], size=0.01)
    u = voxel_mesh(stage, "/U", [(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 0, 1), (0, 0, 2),
                                 (2, 0, 1), (2, 0, 2)], size=0.01)
    return palm, left, right, u


def test_free_space_of_a_gripper():
    stage = _stage()
    palm, left, right, u = _gripper(stage)
    for p in (palm, left, right):
        _approx(p, "convexHull")
    reference = [_solid(p) for p in (palm, left, right)]
    lo = np.min([s.bounds[0] for s in reference], axis=0)
    hi = np.max([s.bounds[1] for s in reference], axis=0)
    empty = empty_space_samples(lo, hi, reference, 2000, seed=5)
    assert empty.shape == (2000, 3)
    assert not inside_any(empty, reference).any()
    # the empty space is the gap between the fingers
    assert np.all((empty[:, 0] > 0.01) & (empty[:, 0] < 0.02) & (empty[:, 2] > 0.01))
    assert free_space_fill(empty, reference) == 0.0
    # candidate: two fingers + palm as convex pieces (the U as convexDecomposition: closed mesh)
    _approx(u, "convexDecomposition")
    assert free_space_fill(empty, [_solid(u)]) == pytest.approx(0.0, abs=0.01)
    # candidate: one convex hull over the whole gripper fills the gap
    _approx(u, "convexHull")
    assert free_space_fill(empty, [_solid(u)]) == pytest.approx(1.0)
    assert math.isnan(free_space_fill(np.zeros((0, 3)), reference))


def test_empty_space_samples_deterministic_and_clearance():
    stage = _stage()
    _, left, right, _ = _gripper(stage)
    reference = [_solid(left), _solid(right)]
    lo, hi = np.array([0.0, 0.0, 0.01]), np.array([0.03, 0.01, 0.03])
    a = empty_space_samples(lo, hi, reference, 500, seed=1)
    b = empty_space_samples(lo, hi, reference, 500, seed=1)
    c = empty_space_samples(lo, hi, reference, 500, seed=2)
    assert a.tobytes() == b.tobytes() and a.tobytes() != c.tobytes()
    far = empty_space_samples(lo, hi, reference, 500, seed=1, clearance=0.002)
    assert np.all((far[:, 0] > 0.012) & (far[:, 0] < 0.018))
    # a box that is all solid yields no samples (and does not loop forever)
    full = empty_space_samples([0.0, 0.0, 0.01], [0.01, 0.01, 0.03], reference, 100, seed=1, max_rounds=4)
    assert full.shape == (0, 3)


def test_union_and_pickle():
    stage = _stage()
    _, left, right, u = _gripper(stage)
    both = union_solid([_solid(left), None, _solid(right)])
    assert both.volume == pytest.approx(4e-6)
    assert both.contains(np.array([[0.005, 0.005, 0.015]]))[0]
    _approx(u, "none")
    for s in (both, _solid(u), hull_solid(np.random.Generator(np.random.PCG64(0)).random((50, 3)))):
        clone = pickle.loads(pickle.dumps(s))
        pts = np.random.Generator(np.random.PCG64(1)).uniform(-0.01, 1.0, (500, 3))
        assert clone.contains(pts).tolist() == s.contains(pts).tolist()


def test_flat_hull_is_a_surface():
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], float)
    s = hull_solid(pts)
    assert s.kind.startswith("surface") and s.volume == 0.0
    assert s.contains(np.array([[0.5, 0.5, 0.0005]]), margin=0.001)[0]
    assert not s.contains(np.array([[0.5, 0.5, 0.01]]), margin=0.001)[0]


# ------------------------------------------------- many solids at once (bench/bench_measures.py times it)


def test_inside_any_of_many_solids_is_their_union():
    stage = _stage()
    rng = np.random.Generator(np.random.PCG64(0))
    solids = []
    kinds = ["Cube", "Sphere", "Capsule", "Cylinder", "Cone"]
    for i in range(16):
        c = rng.uniform(-1, 1, 3)
        if i % 4 == 3:  # a closed mesh (~2k triangles) or its hull, alternately
            prim = _define(stage, "Sphere", f"/S{i}", radius=0.1)
            soup = prim_triangles(prim, Gf.Matrix4d().SetTranslate(Gf.Vec3d(*c)), 1.0)
            solids.append(mesh_solid(soup, "none" if i % 8 == 3 else "convexHull"))
            continue
        prim = getattr(UsdGeom, kinds[i % 5]).Define(stage, f"/P{i}")
        xf = UsdGeom.Xformable(prim)
        xf.AddTranslateOp().Set(Gf.Vec3d(*c))
        xf.AddRotateXYZOp().Set(Gf.Vec3f(*rng.uniform(0, 90, 3)))
        xf.AddScaleOp().Set(Gf.Vec3f(*rng.uniform(0.05, 0.15, 3)))
        solids.append(_solid(prim.GetPrim()))
    pts = rng.uniform(-1.2, 1.2, (2_000, 3))
    hit = inside_any(pts, solids, margin=0.0)
    hit_m = inside_any(pts, solids, margin=0.01)
    per_solid = [s.contains(pts, 0.01) for s in solids]
    assert hit.any()
    assert hit_m.tolist() == np.any(per_solid, axis=0).tolist()
    assert np.all(hit_m[hit])


def test_free_space_samples_are_a_value_not_a_memo():
    """with_free_space returns a snapshot carrying them; the snapshot read is never filled in."""
    from pathlib import Path

    from usd_repair_verifier.profiles.case import load_case
    from usd_repair_verifier.stage_snapshot.parts import free_space, free_space_samples, with_free_space
    from usd_repair_verifier.stage_snapshot.read import read_snapshot

    case = load_case(Path(__file__).resolve().parent.parent / "fixtures" / "cases" / "cabinet_drawer_door")
    read = read_snapshot(case.reference_root_layer, case.profile.sampling, case.profile.preserved_namespaces)
    ahead = with_free_space(read)
    bodies = sorted({c.body for c in read.colliders.values() if c.body})
    assert read.free_space == {} and sorted(ahead.free_space) == bodies
    for body in bodies:
        assert np.array_equal(free_space(read, body), ahead.free_space[body])
        assert np.array_equal(free_space_samples(read, body), ahead.free_space[body])
    assert read.free_space == {}
    assert any(len(ahead.free_space[b]) for b in bodies)
