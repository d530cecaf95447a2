"""Mass properties as the UsdPhysics rules yield them (usd_repair_verifier.stage_snapshot.mass)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade
from scipy.spatial.transform import Rotation

from usd_repair_verifier.stage_snapshot import collider_model, mesh_math
from usd_repair_verifier.stage_snapshot import mass as mass_mod
from usd_repair_verifier.stage_snapshot.mass import MassProperties, body_mass_properties, stage_mass_properties

# ---------------------------------------------------------------- helpers


def make_stage(mpu: float = 1.0, kpu: float | None = None) -> Usd.Stage:
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageMetersPerUnit(stage, mpu)
    if kpu is not None:
        UsdPhysics.SetStageKilogramsPerUnit(stage, kpu)
    return stage


def body(stage, path="/b", translate=None, rotate_xyz=None, scale=None):
    x = UsdGeom.Xform.Define(stage, path)
    UsdPhysics.RigidBodyAPI.Apply(x.GetPrim())
    _xform(x, translate, rotate_xyz, scale)
    return x.GetPrim()


def _xform(x, translate=None, rotate_xyz=None, scale=None):
    if translate is not None:
        x.AddTranslateOp().Set(Gf.Vec3d(*translate))
    if rotate_xyz is not None:
        x.AddRotateXYZOp().Set(Gf.Vec3f(*rotate_xyz))
    if scale is not None:
        x.AddScaleOp().Set(Gf.Vec3f(*scale))


def collider(stage, path, cls=UsdGeom.Cube, translate=None, rotate_xyz=None, scale=None, **attrs):
    g = cls.Define(stage, path)
    UsdPhysics.CollisionAPI.Apply(g.GetPrim())
    _xform(g, translate, rotate_xyz, scale)
    for name, value in attrs.items():
        getattr(g, f"Create{name[0].upper()}{name[1:]}Attr")(value)
    return g.GetPrim()


def mass_api(prim, **attrs):
    api = UsdPhysics.MassAPI.Apply(prim)
    for name, value in attrs.items():
        getattr(api, f"Create{name[0].upper()}{name[1:]}Attr")(value)
    return api


def physics_material(stage, path="/mat", density=None, purpose="physics", bind_to=()):
    mat = UsdShade.Material.Define(stage, path)
    api = UsdPhysics.MaterialAPI.Apply(mat.GetPrim())
    if density is not None:
        api.CreateDensityAttr(density)
    for prim in bind_to:
        UsdShade.MaterialBindingAPI.Apply(prim).Bind(mat, UsdShade.Tokens.weakerThanDescendants, purpose)
    return mat


def axes_matrix(mp: MassProperties) -> np.ndarray:
    w, x, y, z = mp.principal_axes
    return Rotation.from_quat([x, y, z, w]).as_matrix()


def world_tensor(mp: MassProperties) -> np.ndarray:
    r = axes_matrix(mp)
    return r @ np.diag(mp.principal_inertia) @ r.T


def box_inertia(m, dims):
    a, b, c = dims
    return np.diag([m * (b * b + c * c) / 12, m * (a * a + c * c) / 12, m * (a * a + b * b) / 12])


def mesh_prim(stage, path, tm: trimesh.Trimesh, approximation=None, translate=None):
    m = UsdGeom.Mesh.Define(stage, path)
    m.CreatePointsAttr([Gf.Vec3f(*map(float, p)) for p in tm.vertices])
    m.CreateFaceVertexCountsAttr([3] * len(tm.faces))
    m.CreateFaceVertexIndicesAttr([int(i) for i in tm.faces.reshape(-1)])
    UsdPhysics.CollisionAPI.Apply(m.GetPrim())
    if approximation is not None:
        UsdPhysics.MeshCollisionAPI.Apply(m.GetPrim()).CreateApproximationAttr(approximation)
    _xform(m, translate)
    return m.GetPrim()


def approx(x, rel=2e-6, abs=1e-9):  # noqa: A002 - mirrors pytest.approx
    return pytest.approx(x, rel=rel, abs=abs)


# ---------------------------------------------------------------- units


def test_centimetre_stage_default_density_10cm_cube_is_1kg():
    s = make_stage(0.01)
    b = body(s)
    collider(s, "/b/c", size=10.0)
    mp = body_mass_properties(s, "/b")
    assert mp.mass == approx(1.0)
    assert mp.source == "default density"
    # I = m (0.1^2 + 0.1^2) / 12 in kg m^2
    assert mp.principal_inertia == approx((0.02 / 12,) * 3)
    assert mp.established == {"mass": False, "center_of_mass": False, "inertia": False}
    assert b.HasAPI(UsdPhysics.RigidBodyAPI)


def test_metre_stage_default_density_1m_cube_is_1000kg():
    s = make_stage(1.0)
    body(s)
    collider(s, "/b/c", size=1.0)
    mp = body_mass_properties(s, "/b")
    assert mp.mass == approx(1000.0)
    assert mp.principal_inertia == approx((1000 * 2 / 12,) * 3)


def test_unauthored_units_are_centimetres_and_kilograms():
    s = Usd.Stage.CreateInMemory()
    body(s)
    collider(s, "/b/c", size=10.0)
    mp = body_mass_properties(s, "/b")
    assert mp.mass == approx(1.0)


def test_gram_centimetre_stage():
    s = make_stage(0.01, kpu=0.001)
    b = body(s)
    c = collider(s, "/b/c", size=10.0, translate=(100.0, 0.0, 0.0))
    mp = body_mass_properties(s, "/b")
    assert mp.mass == approx(1.0)  # default density still 1000 kg/m^3
    assert mp.center_of_mass == approx((1.0, 0.0, 0.0))
    assert mp.principal_inertia == approx((0.02 / 12,) * 3)
    # authored densities are stage units: 1 g/cm^3 == 1000 kg/m^3
    mass_api(c, density=1.0)
    mp = body_mass_properties(s, "/b")
    assert mp.mass == approx(1.0)
    assert mp.source == "collider density"
    # authored mass in grams
    mass_api(b, mass=500.0)
    mp = body_mass_properties(s, "/b")
    assert mp.mass == approx(0.5)
    assert mp.principal_inertia == approx((0.5 * 0.02 / 12,) * 3)


def test_kilograms_per_unit_on_metre_stage():
    s = make_stage(1.0, kpu=0.001)
    b = body(s)
    collider(s, "/b/c", size=1.0)
    assert body_mass_properties(s, "/b").mass == approx(1000.0)
    mass_api(b, mass=2000.0)  # grams
    assert body_mass_properties(s, "/b").mass == approx(2.0)


# ---------------------------------------------------------------- precedence


def _precedence_stage():
    s = make_stage(1.0)
    b = body(s)
    c = collider(s, "/b/c", size=1.0)
    return s, b, c


def test_precedence_each_rule_controls():
    s, b, c = _precedence_stage()
    mp = body_mass_properties(s, "/b")
    assert (mp.source, mp.mass) == ("default density", approx(1000.0))

    physics_material(s, density=7.0, bind_to=[c])
    mp = body_mass_properties(s, "/b")
    assert (mp.source, mp.mass) == ("material density", approx(7.0))

    mass_api(b, density=5.0)
    mp = body_mass_properties(s, "/b")
    assert (mp.source, mp.mass) == ("body density", approx(5.0))

    mass_api(c, density=3.0)
    mp = body_mass_properties(s, "/b")
    assert (mp.source, mp.mass) == ("collider density", approx(3.0))

    UsdPhysics.MassAPI(c).CreateMassAttr(2.0)
    mp = body_mass_properties(s, "/b")
    assert (mp.source, mp.mass) == ("collider mass", approx(2.0))
    assert mp.principal_inertia == approx((2.0 / 6,) * 3)

    UsdPhysics.MassAPI(b).CreateMassAttr(1.5)
    mp = body_mass_properties(s, "/b")
    assert (mp.source, mp.mass) == ("body mass", approx(1.5))
    assert mp.principal_inertia == approx((1.5 / 6,) * 3)  # collider inertia rescaled to body mass


def test_material_bound_all_purpose_or_on_ancestor_counts():
    s, b, c = _precedence_stage()
    physics_material(s, density=7.0, purpose=UsdShade.Tokens.allPurpose, bind_to=[c])
    assert body_mass_properties(s, "/b").mass == approx(7.0)
    s, b, c = _precedence_stage()
    physics_material(s, density=9.0, bind_to=[b])
    mp = body_mass_properties(s, "/b")
    assert (mp.source, mp.mass) == ("material density", approx(9.0))


def test_material_without_material_api_is_ignored():
    s, b, c = _precedence_stage()
    mat = UsdShade.Material.Define(s, "/plain")
    mat.GetPrim().CreateAttribute("physics:density", Sdf.ValueTypeNames.Float).Set(9.0)
    UsdShade.MaterialBindingAPI.Apply(c).Bind(mat, UsdShade.Tokens.weakerThanDescendants, "physics")
    mp = body_mass_properties(s, "/b")
    assert (mp.source, mp.mass) == ("default density", approx(1000.0))
    assert mp.established["mass"] is False


def test_non_positive_authored_values_fall_through():
    s, b, c = _precedence_stage()
    physics_material(s, density=7.0, bind_to=[c])
    mass_api(b, mass=-4.0, density=5.0)
    mass_api(c, mass=0.0, density=-3.0)
    mp = body_mass_properties(s, "/b")
    assert (mp.source, mp.mass) == ("body density", approx(5.0))
    UsdPhysics.MassAPI(b).GetDensityAttr().Set(0.0)
    mp = body_mass_properties(s, "/b")
    assert (mp.source, mp.mass) == ("material density", approx(7.0))


def test_negative_authored_inertia_reported_faithfully():
    s, b, c = _precedence_stage()
    mass_api(b, mass=2.0, diagonalInertia=Gf.Vec3f(-1.0, 2.0, 3.0))
    mp = body_mass_properties(s, "/b")
    assert mp.mass == approx(2.0)
    assert mp.principal_inertia == approx((-1.0, 2.0, 3.0))
    assert mp.established == {"mass": True, "center_of_mass": True, "inertia": True}


def test_mixed_collider_sources_report_highest_precedence():
    s = make_stage(1.0)
    body(s)
    a = collider(s, "/b/a", size=1.0, translate=(-1, 0, 0))
    collider(s, "/b/d", size=1.0, translate=(1, 0, 0))
    mass_api(a, density=10.0)
    mp = body_mass_properties(s, "/b")
    assert mp.collider_sources == {"/b/a": "collider density", "/b/d": "default density"}
    assert mp.source == "collider density"
    assert mp.mass == approx(1010.0)


# ---------------------------------------------------------------- geometry


def test_two_offset_boxes_parallel_axis():
    s = make_stage(1.0)
    body(s)
    collider(s, "/b/big", size=1.0, translate=(1, 0, 0), scale=(2, 1, 1))  # 2x1x1 at x=+1
    collider(s, "/b/small", size=1.0, translate=(-1, 0, 0))  # 1x1x1 at x=-1
    mp = body_mass_properties(s, "/b")
    m1, m2 = 2000.0, 1000.0
    cx = (m1 * 1 - m2 * 1) / (m1 + m2)
    assert mp.mass == approx(3000.0)
    assert mp.center_of_mass == approx((cx, 0.0, 0.0), abs=1e-6)
    ixx = m1 * 2 / 12 + m2 * 2 / 12
    iyy = m1 * (4 + 1) / 12 + m1 * (1 - cx) ** 2 + m2 * 2 / 12 + m2 * (-1 - cx) ** 2
    assert mp.principal_inertia == approx((ixx, iyy, iyy), rel=1e-5)
    # smallest principal axis is world x
    assert abs(axes_matrix(mp)[:, 0] @ [1, 0, 0]) == approx(1.0, rel=1e-6)


def test_rotated_translated_scaled_body_world_com_and_axes():
    s = make_stage(0.01)
    body(s, translate=(100, 200, 300), rotate_xyz=(0, 0, 90), scale=(2, 2, 2))
    # 1 x 2 x 4 box, offset +10 along the body's local x
    collider(s, "/b/c", size=1.0, translate=(10, 0, 0), scale=(1, 2, 4))
    mp = body_mass_properties(s, "/b")
    dims = np.array([1, 2, 4]) * 2 * 0.01  # body scale 2, centimetres
    m = 1000.0 * np.prod(dims)
    assert mp.mass == approx(m, rel=1e-5)
    # local +x offset of 10 cm * body scale 2, rotated 90 deg about z -> world +y
    assert mp.center_of_mass == approx((1.0, 2.0 + 0.2, 3.0), rel=1e-6)
    r = Rotation.from_euler("z", 90, degrees=True).as_matrix()
    expected = r @ box_inertia(m, dims) @ r.T
    assert np.allclose(world_tensor(mp), expected, rtol=1e-5, atol=1e-12)
    assert list(mp.principal_inertia) == sorted(mp.principal_inertia)
    # world extents 2 x 1 x 4 (cm * 2): smallest moment about the long world z,
    # largest about world y (thinnest)
    assert abs(axes_matrix(mp)[:, 0] @ [0, 0, 1]) == approx(1.0, rel=1e-6)
    assert abs(axes_matrix(mp)[:, 2] @ [0, 1, 0]) == approx(1.0, rel=1e-6)


def test_oblique_collider_principal_axes():
    s = make_stage(1.0)
    body(s, rotate_xyz=(10, 20, 30))
    collider(s, "/b/c", size=1.0, translate=(0.5, 0, 0), rotate_xyz=(30, 45, 0), scale=(1, 2, 4))
    mp = body_mass_properties(s, "/b")
    m = 8000.0
    rb = Rotation.from_euler("xyz", [10, 20, 30], degrees=True).as_matrix()
    rc = Rotation.from_euler("xyz", [30, 45, 0], degrees=True).as_matrix()
    r = rb @ rc
    assert np.allclose(world_tensor(mp), r @ box_inertia(m, (1, 2, 4)) @ r.T, rtol=1e-4, atol=1e-2)
    assert mp.center_of_mass == approx(tuple(rb @ [0.5, 0, 0]), rel=1e-5, abs=1e-6)
    assert mp.principal_inertia == approx(tuple(sorted(np.diag(box_inertia(m, (1, 2, 4))))), rel=1e-5)


def test_authored_body_center_of_mass_is_scaled_and_world():
    s = make_stage(1.0)
    b = body(s, translate=(1, 0, 0), scale=(2, 3, 4))
    collider(s, "/b/c", size=1.0)
    mass_api(b, centerOfMass=Gf.Vec3f(1, 1, 1))
    mp = body_mass_properties(s, "/b")
    assert mp.center_of_mass == approx((3.0, 3.0, 4.0))
    assert mp.established == {"mass": False, "center_of_mass": True, "inertia": False}


def _mesh_volume_props(tm):
    mp = tm.mass_properties
    return mp.volume, np.asarray(mp.center_mass), np.asarray(mp.inertia)


@pytest.mark.parametrize(
    "cls, attrs, reference",
    [
        (UsdGeom.Sphere, {"radius": 0.3}, lambda: trimesh.creation.icosphere(subdivisions=6, radius=0.3)),
        (UsdGeom.Capsule, {"radius": 0.2, "height": 0.6}, lambda: trimesh.creation.capsule(height=0.6, radius=0.2, count=[256, 256])),
        (UsdGeom.Cylinder, {"radius": 0.2, "height": 0.6}, lambda: trimesh.creation.cylinder(radius=0.2, height=0.6, sections=1024)),
        (UsdGeom.Cone, {"radius": 0.2, "height": 0.6}, lambda: trimesh.creation.cone(radius=0.2, height=0.6, sections=1024).apply_translation([0, 0, -0.3])),
    ],
    ids=["sphere", "capsule", "cylinder", "cone"],
)
def test_analytic_shapes_against_tessellation(cls, attrs, reference):
    s = make_stage(1.0)
    body(s)
    collider(s, "/b/c", cls=cls, **attrs)
    mp = body_mass_properties(s, "/b")
    vol, com, inertia = _mesh_volume_props(reference())
    assert mp.mass == approx(1000 * vol, rel=2e-3)
    assert mp.center_of_mass == approx(tuple(com), rel=1e-3, abs=1e-4)
    assert mp.principal_inertia == approx(tuple(sorted(np.linalg.eigvalsh(1000 * inertia))), rel=3e-3)


def test_capsule_volume_analytic_with_axis_and_scale():
    s = make_stage(1.0)
    body(s)
    collider(s, "/b/c", cls=UsdGeom.Capsule, radius=0.5, height=1.0, axis="X", scale=(2, 3, 1))
    mp = body_mass_properties(s, "/b")
    r, h = 0.5 * 3, 1.0 * 2  # radius * max off-axis scale, height * axis scale
    vol = math.pi * r * r * h + 4 / 3 * math.pi * r**3
    assert mp.mass == approx(1000 * vol, rel=1e-6)
    # the long axis is x: smallest moment about x
    assert abs(axes_matrix(mp)[:, 0] @ [1, 0, 0]) == approx(1.0, rel=1e-6)


def test_mesh_convex_hull_volume():
    s = make_stage(1.0)
    body(s)
    sphere = trimesh.creation.icosphere(subdivisions=4, radius=0.5)
    mesh_prim(s, "/b/m", sphere, approximation="convexHull", translate=(0, 0, 1))
    mp = body_mass_properties(s, "/b")
    assert mp.mass == approx(1000 * sphere.volume, rel=1e-6)  # float32 API
    assert mp.mass == approx(1000 * 4 / 3 * math.pi * 0.125, rel=2e-2)
    assert mp.center_of_mass == approx((0, 0, 1), abs=1e-9)


def test_mesh_approximations():
    # one watertight, non-convex mesh: two unit cubes centred at (-1,-1,0) and (1,1,0)
    c1 = trimesh.creation.box(extents=(1, 1, 1)).apply_translation((-1, -1, 0))
    c2 = trimesh.creation.box(extents=(1, 1, 1)).apply_translation((1, 1, 0))
    two = trimesh.Trimesh(
        np.concatenate([c1.vertices, c2.vertices]), np.concatenate([c1.faces, c2.faces + len(c1.vertices)]), process=False
    )
    assert two.is_watertight and abs(two.volume - 2.0) < 1e-9
    results = {}
    for approx_token in (None, "none", "meshSimplification", "convexHull", "convexDecomposition", "boundingCube", "boundingSphere"):
        s = make_stage(1.0)
        body(s)
        mesh_prim(s, "/b/m", two, approximation=approx_token)
        results[approx_token] = body_mass_properties(s, "/b").mass
    assert results[None] == approx(2000.0) and results["none"] == approx(2000.0)
    assert results["meshSimplification"] == approx(2000.0)
    # hull = cube swept along (2,2,0): 1 + sqrt(2) * 2 sqrt(2)
    assert results["convexHull"] == approx(5000.0)
    # a decomposition fits the closed mesh (the collision solid is the mesh too), not its hull
    assert results["convexDecomposition"] == approx(2000.0)
    assert results["boundingCube"] == approx(9000.0)  # 3 x 3 x 1 box
    r = math.sqrt(1.5**2 + 1.5**2 + 0.5**2)  # minimal sphere through the far corners
    assert results["boundingSphere"] == approx(1000 * 4 / 3 * math.pi * r**3, rel=1e-6)


def test_open_mesh_uses_convex_hull_and_notes_it():
    s = make_stage(1.0)
    body(s)
    box = trimesh.creation.box(extents=(1, 1, 1))
    open_box = trimesh.Trimesh(box.vertices, box.faces[:-2], process=False)
    mesh_prim(s, "/b/m", open_box)  # approximation none
    mp = body_mass_properties(s, "/b")
    assert mp.mass == approx(1000.0)
    assert any("not watertight" in n for n in mp.notes)


def test_local_pose_and_dims_match_usdphysics_parser():
    s = make_stage(1.0)
    body(s, translate=(1, 2, 3), rotate_xyz=(0, 30, 0), scale=(2, 1, 1))
    shapes = {
        "/b/cube": collider(s, "/b/cube", translate=(1, 0, 0), rotate_xyz=(0, 0, 90), scale=(1, 2, 3)),
        "/b/caps": collider(s, "/b/caps", cls=UsdGeom.Capsule, translate=(0, 1, 0), rotate_xyz=(45, 0, 0), scale=(1, 2, 3)),
    }
    parsed = UsdPhysics.UsdPhysicsLoadStageFromPrimRange(s, ["/"])
    descs = {}
    for paths, ds in parsed.values():
        descs.update({str(p): d for p, d in zip(paths, ds)})
    ctx = mass_mod._Context(s)
    bprim = s.GetPrimAtPath("/b")
    for path, prim in shapes.items():
        mi = ctx.mass_information(prim, bprim, [])
        d = descs[path]
        assert np.allclose(list(mi.localPos), list(d.localPos), atol=1e-5)
        q1, q2 = mi.localRot, d.localRot
        dot = q1.GetReal() * q2.GetReal() + Gf.Dot(q1.GetImaginary(), q2.GetImaginary())
        assert abs(dot) == approx(1.0, rel=1e-5)
        if path == "/b/cube":
            assert mi.volume == approx(8 * np.prod(list(d.halfExtents)), rel=1e-5)
        else:
            r, hh = d.radius, d.halfHeight
            assert mi.volume == approx(math.pi * r * r * 2 * hh + 4 / 3 * math.pi * r**3, rel=1e-5)


# ---------------------------------------------------------------- establishment


def _disabled_collider_density(s, b, c):
    # the API skips colliders with collisionEnabled = false
    d = collider(s, "/b/d", size=1.0)
    mass_api(d, density=3.0)
    UsdPhysics.CollisionAPI(d).CreateCollisionEnabledAttr(False)


# what is authored on a stage of one body b with one collider c -> (mass, centre of mass, inertia) established
ESTABLISHMENT = {
    "nothing": (lambda s, b, c: None, (False, False, False)),
    "body mass": (lambda s, b, c: mass_api(b, mass=3.0), (True, True, True)),
    "body density": (lambda s, b, c: mass_api(b, density=3.0), (True, True, True)),
    "body com": (lambda s, b, c: mass_api(b, centerOfMass=Gf.Vec3f(0, 0, 0)), (False, True, False)),
    "body inertia": (lambda s, b, c: mass_api(b, diagonalInertia=Gf.Vec3f(1, 1, 1)), (False, False, True)),
    "body zero inertia": (lambda s, b, c: mass_api(b, diagonalInertia=Gf.Vec3f(0, 0, 0)), (False, False, False)),
    "collider mass": (lambda s, b, c: mass_api(c, mass=3.0), (True, True, True)),
    "collider density": (lambda s, b, c: mass_api(c, density=3.0), (True, True, True)),
    "collider com": (lambda s, b, c: mass_api(c, centerOfMass=Gf.Vec3f(0.1, 0, 0)), (False, True, False)),
    "material density": (lambda s, b, c: physics_material(s, density=3.0, bind_to=[c]), (True, True, True)),
    "material zero density": (lambda s, b, c: physics_material(s, density=0.0, bind_to=[c]), (False, False, False)),
    "negative body mass": (lambda s, b, c: mass_api(b, mass=-3.0), (False, False, False)),
    "mass without MassAPI": (lambda s, b, c: b.CreateAttribute("physics:mass", Sdf.ValueTypeNames.Float).Set(3.0),
                             (False, False, False)),
    "disabled collider density": (_disabled_collider_density, (False, False, False)),
}


@pytest.mark.parametrize("pattern", list(ESTABLISHMENT))
def test_established_flags(pattern):
    author, expected = ESTABLISHMENT[pattern]
    s = make_stage(1.0)
    b = body(s)
    c = collider(s, "/b/c", size=1.0)
    author(s, b, c)
    mp = body_mass_properties(s, "/b")
    got = (mp.established["mass"], mp.established["center_of_mass"], mp.established["inertia"])
    assert got == expected


def test_body_density_without_colliders_does_not_establish():
    s = make_stage(1.0)
    b = body(s)
    mass_api(b, density=3.0)
    mp = body_mass_properties(s, "/b")
    assert mp.established["mass"] is False


# ---------------------------------------------------------------- special bodies


def test_body_without_colliders():
    s = make_stage(0.01)
    b = body(s, rotate_xyz=(0, 0, 45))
    mp = body_mass_properties(s, "/b")
    assert mp.mass == -1.0  # the API's "unset" sentinel, in stage mass units (kpu 1)
    assert mp.source == "none"
    assert mp.colliders == ()
    assert mp.established == {"mass": False, "center_of_mass": False, "inertia": False}
    assert mp.principal_inertia == approx((1e-4,) * 3)  # (1,1,1) kg cm^2
    assert all(math.isfinite(q) for q in mp.principal_axes)
    assert any("uninitialised" in n for n in mp.notes)
    # with an authored mass: 0.1 m sphere approximation of the inertia, a fallback the body
    # does not establish (unmeasured)
    mass_api(b, mass=5.0)
    mp = body_mass_properties(s, "/b")
    assert mp.mass == approx(5.0)
    assert mp.source == "body mass"
    assert mp.principal_inertia == approx((0.4 * 5.0 * 0.01,) * 3, rel=1e-5)
    assert mp.established == {"mass": True, "center_of_mass": True, "inertia": False}
    assert any("0.1 m sphere" in n for n in mp.notes)


@pytest.mark.parametrize("colliders", [False, True])
def test_a_small_authored_inertia_counts_in_any_unit(colliders):
    """The schema ignores only (0, 0, 0); the API ignores anything within 1e-5 of zero in stage
    units, so 1e-8 kg m^2 (a converted URDF's sensor link, a dummy link's negative moment) would
    count in centimetres and not in metres. Measured, it is the authored value in both."""
    for moments in [(1e-8, 2e-8, 3e-8), (-4.4e-22, 1.9e-23, 3e-6)]:
        found = []
        for mpu in (1.0, 0.01):
            s = make_stage(mpu)
            b = body(s)
            mass_api(b, mass=2.0, diagonalInertia=Gf.Vec3f(*[m / mpu**2 for m in moments]))
            if colliders:
                collider(s, "/b/c", size=0.1 / mpu)
            mp = body_mass_properties(s, "/b")
            assert mp.established["inertia"] is True
            found.append(mp.principal_inertia)
        assert found[0] == approx(sorted(moments), rel=1e-6) and found[1] == approx(sorted(moments), rel=1e-6)


def test_nested_bodies_and_disabled_colliders_are_excluded():
    s = make_stage(1.0)
    body(s)
    collider(s, "/b/c", size=1.0)
    body(s, "/b/child")
    collider(s, "/b/child/c", size=2.0)
    off = collider(s, "/b/off", size=1.0, translate=(5, 0, 0))
    UsdPhysics.CollisionAPI(off).CreateCollisionEnabledAttr(False)
    res = stage_mass_properties(s, ["/b", "/b/child", "/nope"])
    assert res["/b"].mass == approx(1000.0)
    assert res["/b"].colliders == ("/b/c",)
    assert res["/b/child"].mass == approx(8000.0)
    assert res["/nope"] is None


def test_unrecognised_collider_contributes_nothing_and_is_noted():
    s = make_stage(1.0)
    body(s)
    collider(s, "/b/c", size=1.0)
    x = UsdGeom.Xform.Define(s, "/b/x")
    UsdPhysics.CollisionAPI.Apply(x.GetPrim())
    mp = body_mass_properties(s, "/b")
    assert mp.mass == approx(1000.0)
    assert "/b/x" in mp.colliders
    assert any("/b/x" in n and "unrecognised" in n for n in mp.notes)


def test_callback_failure_is_contained(monkeypatch):
    s = make_stage(1.0)
    body(s)
    collider(s, "/b/c", size=1.0)
    collider(s, "/b/d", cls=UsdGeom.Sphere, radius=0.5)

    real = mass_mod._Context.shape_mass

    def flaky(self, prim, scale):
        if prim.GetName() == "d":
            raise RuntimeError("boom")
        return real(self, prim, scale)

    monkeypatch.setattr(mass_mod._Context, "shape_mass", flaky)
    mp = body_mass_properties(s, "/b")
    assert mp.mass == approx(1000.0)
    assert any("boom" in n for n in mp.notes)


def test_instanced_meshes_share_the_hull_cache(monkeypatch):
    s = make_stage(1.0)
    proto = s.DefinePrim("/Proto", "Xform")
    proto.SetSpecifier(Sdf.SpecifierClass)
    mesh_prim(s, "/Proto/m", trimesh.creation.icosphere(subdivisions=3, radius=0.5), approximation="convexHull")
    paths = []
    for i in range(3):
        body(s, f"/b{i}", translate=(i * 2.0, 0, 0))
        inst = UsdGeom.Xform.Define(s, f"/b{i}/geo").GetPrim()
        inst.GetReferences().AddInternalReference("/Proto")
        inst.SetInstanceable(True)
        paths.append(f"/b{i}")
    calls = []
    real = collider_model.convex_hull
    monkeypatch.setattr(collider_model, "convex_hull", lambda pts: calls.append(len(pts)) or real(pts))
    res = stage_mass_properties(s, paths)
    assert len(calls) == 1
    for i, p in enumerate(paths):
        assert res[p].center_of_mass == approx((i * 2.0, 0, 0), abs=1e-9)
        assert res[p].mass == approx(res[paths[0]].mass)


# ------------------------------------------- several hull bodies (bench/bench_measures.py times 60)


def test_bodies_with_5k_triangle_hulls_all_get_a_mass():
    s = make_stage(1.0)
    base = trimesh.creation.icosphere(subdivisions=4)  # 5120 triangles
    rng = np.random.default_rng(7)
    paths = []
    for i in range(3):
        tm = trimesh.Trimesh(base.vertices * rng.uniform(0.5, 1.5, 3), base.faces, process=False)
        body(s, f"/b{i}", translate=(i, 0, 0))
        mesh_prim(s, f"/b{i}/m", tm, approximation="convexHull")
        paths.append(f"/b{i}")
    res = stage_mass_properties(s, paths)
    assert all(r is not None and r.mass > 0 for r in res.values())


def test_triangle_integrator_corrects_inverted_winding():
    tm = trimesh.creation.icosphere(subdivisions=3)
    tm.vertices = tm.vertices * [1, 2, 3] + [1, -2, 5]
    tm.apply_transform(trimesh.transformations.random_rotation_matrix(np.random.default_rng(3).random(3)))
    ref = tm.mass_properties
    vol, com, inertia = mesh_math.triangles_mass(tm.triangles)
    assert vol == approx(ref.volume, rel=1e-12)
    assert np.allclose(com, ref.center_mass, atol=1e-12)
    assert np.allclose(inertia, ref.inertia, rtol=1e-10, atol=1e-10)
    # inverted winding gives the same result
    vol2, com2, inertia2 = mesh_math.triangles_mass(tm.triangles[:, ::-1])
    assert vol2 == approx(vol, rel=1e-12) and np.allclose(inertia2, inertia, rtol=1e-10, atol=1e-10)
    assert np.allclose(com2, com, atol=1e-12)


def test_collision_and_mass_share_one_hull_per_mesh(monkeypatch):
    """The snapshot's colliders and mass properties build each mesh's hull once, together."""
    from usd_repair_verifier.stage_snapshot import parts

    s = make_stage(1.0)
    body(s)
    mesh_prim(s, "/b/m", trimesh.creation.icosphere(subdivisions=2, radius=0.5), approximation="convexHull")
    calls = []
    real = collider_model.convex_hull
    monkeypatch.setattr(collider_model, "convex_hull", lambda pts: calls.append(len(pts)) or real(pts))
    _, colliders, masses = parts.read_parts(s, {"/b"}, 1.0, 1.0, {"seed": 0})
    assert len(calls) == 1
    assert colliders["/b/m"].volume == approx(masses["/b"].mass / 1000.0, rel=1e-6)


@pytest.mark.parametrize("token", [None, "convexHull", "convexDecomposition", "boundingCube", "boundingSphere"])
@pytest.mark.parametrize("closed", [True, False])
def test_collision_and_mass_measure_the_same_solid(token, closed):
    """One collider model: the collision solid's volume is the mass's (default density, kg/1000),
    for every approximation, a closed or an open mesh, under rotation and non-uniform scale."""
    from usd_repair_verifier.stage_snapshot import parts

    c1 = trimesh.creation.box(extents=(1, 1, 1)).apply_translation((-1, -1, 0))
    c2 = trimesh.creation.box(extents=(1, 2, 1)).apply_translation((1, 1, 0))
    two = trimesh.Trimesh(np.concatenate([c1.vertices, c2.vertices]),
                          np.concatenate([c1.faces, c2.faces + len(c1.vertices)]), process=False)
    if not closed:
        two = trimesh.Trimesh(two.vertices, two.faces[:-1], process=False)
    s = make_stage(1.0)
    body(s, rotate_xyz=(10, 20, 30))
    m = mesh_prim(s, "/b/m", two, approximation=token)
    _xform(UsdGeom.Xformable(m), rotate_xyz=(0, 45, 0), scale=(1.0, 2.0, 0.5))
    _, colliders, masses = parts.read_parts(s, {"/b"}, 1.0, 1.0, {"seed": 0})
    assert colliders["/b/m"].volume == approx(masses["/b"].mass / 1000.0, rel=1e-6)
    if token in (None, "convexDecomposition") and closed:
        assert masses["/b"].mass == approx(3000.0, rel=1e-6)  # the mesh itself: 1 + 2 boxes, |det s| = 1


def test_mirrored_mesh_collider_world_centroid():
    s = make_stage(1.0)
    body(s, translate=(0, 0, 5), rotate_xyz=(30, 0, 0), scale=(2, 1, 1))
    tet = trimesh.Trimesh([(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)], [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)])
    m = mesh_prim(s, "/b/m", tet, approximation="convexHull")
    UsdGeom.Xformable(m).AddTranslateOp().Set(Gf.Vec3d(1, 1, 0))
    UsdGeom.Xformable(m).AddScaleOp().Set(Gf.Vec3f(1, -2, 3))
    mp = body_mass_properties(s, "/b")
    world = np.array(UsdGeom.XformCache().GetLocalToWorldTransform(m))
    pts = np.c_[tet.vertices, np.ones(4)] @ world
    assert mp.center_of_mass == approx(tuple(pts[:, :3].mean(axis=0)), rel=1e-6)
    assert mp.mass == approx(1000 * 2 * 2 * 3 / 6, rel=1e-6)  # |det| = 12 times 1/6


def test_tapered_cylinder_and_capsule():
    s = make_stage(1.0)
    body(s)
    collider(s, "/b/c", cls=UsdGeom.Cylinder_1, radiusTop=0.2, radiusBottom=0.4, height=1.0)
    mp = body_mass_properties(s, "/b")
    big_r, small_r, h = 0.4, 0.2, 1.0
    assert mp.mass == approx(1000 * math.pi * h / 3 * (big_r**2 + big_r * small_r + small_r**2), rel=1e-3)
    # centroid of a frustum, from the big end: h (R^2 + 2Rr + 3r^2) / (4 (R^2 + Rr + r^2))
    zc = h * (big_r**2 + 2 * big_r * small_r + 3 * small_r**2) / (4 * (big_r**2 + big_r * small_r + small_r**2))
    assert mp.center_of_mass == approx((0, 0, -h / 2 + zc), abs=1e-3)
    assert any("tessellated" in n for n in mp.notes)
    # equal radii: the analytic capsule
    s = make_stage(1.0)
    body(s)
    collider(s, "/b/c", cls=UsdGeom.Capsule_1, radiusTop=0.3, radiusBottom=0.3, height=1.0)
    r = 0.3
    assert body_mass_properties(s, "/b").mass == approx(1000 * (math.pi * r * r + 4 / 3 * math.pi * r**3), rel=1e-6)


def test_unrecognised_collider_with_its_own_mass_is_reported_not_raised():
    s = make_stage(1.0)
    body(s)
    collider(s, "/b/c", size=1.0)
    x = UsdGeom.Xform.Define(s, "/b/x").GetPrim()
    UsdPhysics.CollisionAPI.Apply(x)
    mass_api(x, mass=5.0)
    mp = body_mass_properties(s, "/b")  # the API divides by the zero volume
    assert mp.mass == approx(1005.0)
    assert not all(math.isfinite(v) for v in mp.principal_inertia)
    assert any("non-finite" in n for n in mp.notes)


# --- principal axes: the quaternion of a rotation matrix, without scipy.spatial -----------------

def _rotations(count: int, seed: int):
    """Random rotations, axis-aligned and near-axis ones (as assets author them), and the
    column-permuted, sign-fixed matrices mass.py builds from them."""
    rng = np.random.default_rng(seed)
    for n in range(count):
        q = rng.normal(size=4)
        if n % 4 == 1:
            q = np.zeros(4)
            q[rng.integers(4)] = 1.0
            q[rng.integers(4)] += rng.choice([0.0, 1.0, 0.5, 1e-9])
        r = Rotation.from_quat(q / np.linalg.norm(q)).as_matrix()
        if n % 3 == 2:
            r = r[:, rng.permutation(3)]
            if np.linalg.det(r) < 0:
                r[:, 0] = -r[:, 0]
        yield r


@pytest.mark.slow
def test_the_quaternion_of_a_rotation_is_scipys_bit_for_bit():
    """Grades must not move: every principal-axes quaternion is the one scipy computed before."""
    for r in _rotations(20_000, seed=3):
        assert list(mass_mod._quat_xyzw_of_rotation(r)) == Rotation.from_matrix(r).as_quat().tolist(), r.tolist()
    # each of Shepperd's four formulas is exercised: identity (trace) and a half turn about each axis
    for r in (np.eye(3), np.diag([1.0, -1.0, -1.0]), np.diag([-1.0, 1.0, -1.0]), np.diag([-1.0, -1.0, 1.0])):
        assert list(mass_mod._quat_xyzw_of_rotation(r)) == Rotation.from_matrix(r).as_quat().tolist()


def test_a_matrix_that_is_not_a_rotation_goes_to_scipy():
    skewed = np.array([[0.0, -0.5, 0.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.5]])  # scipy orthogonalises it
    assert list(mass_mod._quat_xyzw_of_rotation(skewed)) == Rotation.from_matrix(skewed).as_quat().tolist()
    with pytest.raises(ValueError):  # a reflection: scipy's own refusal, unchanged
        mass_mod._quat_xyzw_of_rotation(np.diag([1.0, 1.0, -1.0]))
