"""Checks on the committed USD physics fixture packages in fixtures/assets/.

Every package: one root layer at the top, every dependency inside the package
with a relative path, no composition errors, the UsdPhysics parser finds >= 2
rigid bodies and >= 1 joint, each body has visible geometry and a collider,
and every joint's frame agrees from both sides at rest.  The hand-authored
packages (cabinet_cm, gripper_m) are also checked for the structure they are
meant to exercise, and rebuilt to prove the committed bytes are reproducible.
"""

from __future__ import annotations

import importlib.util
import math
import os
import struct
import zlib
from pathlib import Path

import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, UsdUtils

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO / "fixtures" / "assets"
USD_EXTS = (".usd", ".usda", ".usdc", ".usdz")

CONVERTED = ["ant", "hopper", "half_cheetah", "reacher", "inverted_double_pendulum",
             "cartpole", "cheetah", "ball_in_cup", "finger"]   # dm_control pendulum is dropped: 1 body
HAND_AUTHORED = ["cabinet_cm", "gripper_m"]
PACKAGES = sorted(CONVERTED + HAND_AUTHORED)

# Visual-only MJCF geoms (contype=conaffinity=0) get no CollisionAPI; the converter authors the
# body's mass and inertia instead.
BODIES_WITHOUT_COLLIDERS = {"reacher": {"/reacher/Geometry/target"}}

POS_TOL_M = 1e-6
ROT_TOL_DEG = 1e-4


def _load_builder():
    spec = importlib.util.spec_from_file_location("fixture_build_assets", REPO / "fixtures" / "build_assets.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def root_layer_of(pkg: Path) -> Path:
    roots = [p for p in pkg.iterdir() if p.is_file() and p.suffix in USD_EXTS]
    assert len(roots) == 1, f"{pkg.name}: top-level layers {sorted(p.name for p in roots)}"
    return roots[0]


_STAGES: dict[str, Usd.Stage] = {}


def open_stage(name: str) -> Usd.Stage:
    if name not in _STAGES:
        _STAGES[name] = Usd.Stage.Open(str(root_layer_of(ASSETS / name)))
    return _STAGES[name]


def parse(stage: Usd.Stage) -> dict[str, list]:
    """{type name: [(path, desc), ...]} from the UsdPhysics parser."""
    res = UsdPhysics.UsdPhysicsLoadStageFromPrimRange(stage, ["/"])
    return {str(k).rsplit(".", 1)[-1]: list(zip(v[0], v[1])) for k, v in res.items()}


def joints_of(parsed: dict) -> list:
    return [(k, p, d) for k, items in parsed.items() if k.endswith("Joint") for p, d in items]


def authored_asset_paths(layer: Sdf.Layer) -> list[str]:
    """Every asset path authored in a layer: sublayers, references, payloads, asset values."""
    out = list(layer.subLayerPaths)

    def visit(path):
        if path.IsPrimPath():
            spec = layer.GetPrimAtPath(path)
            for lst in (spec.referenceList, spec.payloadList):
                for item in lst.GetAddedOrExplicitItems():
                    if item.assetPath:
                        out.append(item.assetPath)
        elif path.IsPropertyPath():
            spec = layer.GetPropertyAtPath(path)
            if isinstance(spec, Sdf.AttributeSpec):
                if spec.typeName not in (Sdf.ValueTypeNames.Asset, Sdf.ValueTypeNames.AssetArray):
                    return
                vals = [spec.default] if spec.HasDefaultValue() else []
                vals += [layer.QueryTimeSample(path, t) for t in layer.ListTimeSamplesForPath(path)]
                for v in vals:
                    if isinstance(v, Sdf.AssetPath):
                        out.append(v.path)
                    elif v is not None:
                        out.extend(a.path for a in v)

    layer.Traverse(Sdf.Path.absoluteRootPath, visit)
    return [p for p in out if p]


def body_world(stage: Usd.Stage, cache: UsdGeom.XformCache, body: Sdf.Path) -> Gf.Matrix4d:
    if body.isEmpty:
        return Gf.Matrix4d(1.0)
    m = cache.GetLocalToWorldTransform(stage.GetPrimAtPath(body))
    return m.GetOrthonormalized()           # scale (and shear) removed, translation kept


def joint_world_frames(stage: Usd.Stage, desc) -> tuple[Gf.Matrix4d, Gf.Matrix4d]:
    """World frame of a joint from side 0 and from side 1 (stage units)."""
    cache = UsdGeom.XformCache()
    frames = []
    for body, pos, rot in ((desc.body0, desc.localPose0Position, desc.localPose0Orientation),
                           (desc.body1, desc.localPose1Position, desc.localPose1Orientation)):
        local = Gf.Matrix4d().SetTransform(Gf.Rotation(Gf.Quatd(rot)), Gf.Vec3d(pos))
        frames.append(local * body_world(stage, cache, body))
    return frames[0], frames[1]


def frame_disagreement(stage: Usd.Stage, desc) -> tuple[float, float]:
    """(position error in metres, rotation error in degrees) between the two sides."""
    f0, f1 = joint_world_frames(stage, desc)
    mpu = UsdGeom.GetStageMetersPerUnit(stage)
    pos_err = (f0.ExtractTranslation() - f1.ExtractTranslation()).GetLength() * mpu
    r0 = f0.ExtractRotationMatrix()
    r1 = f1.ExtractRotationMatrix()
    rel = Gf.Matrix4d(1.0).SetRotate(r0 * r1.GetTranspose()).ExtractRotationQuat()
    angle = 2.0 * math.degrees(math.atan2(rel.GetImaginary().GetLength(), abs(rel.GetReal())))
    return pos_err, angle


def owning_body(prim: Usd.Prim) -> Usd.Prim | None:
    while prim and not prim.IsPseudoRoot():
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            return prim
        prim = prim.GetParent()
    return None


def visible_gprims(stage: Usd.Stage, body: Usd.Prim) -> list[Usd.Prim]:
    out = []
    for prim in Usd.PrimRange(body):
        if prim != body and prim.HasAPI(UsdPhysics.RigidBodyAPI):
            continue
        if prim.IsA(UsdGeom.Gprim) and owning_body(prim) == body:
            img = UsdGeom.Imageable(prim)
            if (img.ComputeVisibility() != UsdGeom.Tokens.invisible
                    and img.ComputePurpose() in (UsdGeom.Tokens.default_, UsdGeom.Tokens.render)):
                out.append(prim)
    return out


def read_png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    w, h = struct.unpack(">II", data[16:24])
    # decode the IDAT payload to prove the file is whole
    pos, idat = 8, b""
    while pos < len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        tag = data[pos + 4:pos + 8]
        if tag == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = zlib.decompress(idat)
    assert len(raw) == h * (1 + 3 * w)
    return w, h


# --------------------------------------------------------------------------
# every package
# --------------------------------------------------------------------------

def test_package_set_is_complete():
    found = sorted(p.name for p in ASSETS.iterdir() if p.is_dir())
    assert found == PACKAGES


def test_total_size_is_small():
    total = sum(p.stat().st_size for p in ASSETS.rglob("*") if p.is_file())
    assert total < 5_000_000


@pytest.mark.parametrize("name", PACKAGES)
def test_exactly_one_root_layer(name):
    root = root_layer_of(ASSETS / name)
    assert root.name == f"{name}.usda" or name in HAND_AUTHORED
    assert root.stat().st_size < 1_000_000 and sum(
        p.stat().st_size for p in (ASSETS / name).rglob("*") if p.is_file()) < 1_000_000


@pytest.mark.parametrize("name", PACKAGES)
def test_dependencies_inside_package(name):
    pkg = ASSETS / name
    root = root_layer_of(pkg)
    layers, assets, unresolved = UsdUtils.ComputeAllDependencies(str(root))
    assert list(unresolved) == []
    pkg_real = os.path.realpath(pkg)
    deps = [layer.realPath for layer in layers] + list(assets)
    assert len(layers) >= 2
    for dep in deps:
        real = os.path.realpath(dep)
        assert real.startswith(pkg_real + os.sep), dep
        assert os.path.isfile(real), dep
    # every file in the package is used, and every authored path is relative and stays inside
    files = {os.path.realpath(p) for p in pkg.rglob("*") if p.is_file()}
    assert files == {os.path.realpath(d) for d in deps}
    for layer in layers:
        for asset_path in authored_asset_paths(layer):
            assert asset_path.startswith("./"), (layer.identifier, asset_path)
            assert ".." not in Path(asset_path).parts, (layer.identifier, asset_path)
            assert "://" not in asset_path and not os.path.isabs(asset_path)


@pytest.mark.parametrize("name", PACKAGES)
def test_no_composition_errors(name):
    stage = open_stage(name)
    assert [str(e) for e in stage.GetCompositionErrors()] == []
    # also with payloads unloaded and then loaded explicitly
    stage2 = Usd.Stage.Open(str(root_layer_of(ASSETS / name)), Usd.Stage.LoadNone)
    stage2.Load("/")
    assert [str(e) for e in stage2.GetCompositionErrors()] == []


@pytest.mark.parametrize("name", PACKAGES)
def test_physics_parser_finds_bodies_and_joints(name):
    stage = open_stage(name)
    parsed = parse(stage)
    bodies = parsed.get("RigidBody", [])
    joints = joints_of(parsed)
    assert len(bodies) >= 2
    assert len(joints) >= 1
    body_paths = {p for p, _ in bodies}
    for kind, path, desc in joints:
        assert desc.isValid, path
        assert desc.body1 in body_paths or desc.body0 in body_paths, path
        assert desc.body0 != desc.body1, path
        # relationship targets exist (the parser would silently attach a missing one to the world)
        joint = UsdPhysics.Joint(stage.GetPrimAtPath(path))
        for rel in (joint.GetBody0Rel(), joint.GetBody1Rel()):
            for target in rel.GetTargets():
                assert stage.GetPrimAtPath(target).IsValid(), (path, target)


@pytest.mark.parametrize("name", PACKAGES)
def test_every_body_has_visible_geometry_and_a_collider(name):
    stage = open_stage(name)
    parsed = parse(stage)
    for path, desc in parsed["RigidBody"]:
        body = stage.GetPrimAtPath(path)
        assert visible_gprims(stage, body), f"{path}: no visible geometry"
        if str(path) in BODIES_WITHOUT_COLLIDERS.get(name, ()):
            assert not list(desc.collisions)
            assert UsdPhysics.MassAPI(body).GetMassAttr().HasAuthoredValue()   # the converter authors mass
        else:
            assert list(desc.collisions), f"{path}: no collider"


@pytest.mark.parametrize("name", PACKAGES)
def test_joint_frames_agree(name):
    stage = open_stage(name)
    for kind, path, desc in joints_of(parse(stage)):
        pos_err, rot_err = frame_disagreement(stage, desc)
        assert pos_err < POS_TOL_M, (path, pos_err)
        assert rot_err < ROT_TOL_DEG, (path, rot_err)


def test_frame_helper_detects_a_misaligned_frame():
    stage = Usd.Stage.Open(str(root_layer_of(ASSETS / "cabinet_cm")))
    stage.SetEditTarget(stage.GetSessionLayer())
    hinge = UsdPhysics.Joint(stage.GetPrimAtPath("/Cabinet/Joints/DoorHinge"))
    hinge.GetLocalPos1Attr().Set(Gf.Vec3f(-1.0, 27.0, 0.0))      # 1 cm off
    hinge.GetLocalRot1Attr().Set(Gf.Quatf(Gf.Rotation(Gf.Vec3d(0, 0, 1), 5.0).GetQuat()))
    desc = dict((str(p), d) for k, p, d in joints_of(parse(stage)))["/Cabinet/Joints/DoorHinge"]
    pos_err, rot_err = frame_disagreement(stage, desc)
    assert pos_err == pytest.approx(0.01, abs=1e-6)
    assert rot_err == pytest.approx(5.0, abs=1e-3)


# --------------------------------------------------------------------------
# cabinet_cm
# --------------------------------------------------------------------------

def _by_path(items):
    return {str(p): d for p, d in items}


def test_cabinet_layers_and_units():
    pkg = ASSETS / "cabinet_cm"
    stage = open_stage("cabinet_cm")
    assert UsdGeom.GetStageMetersPerUnit(stage) == pytest.approx(0.01)
    assert UsdPhysics.GetStageKilogramsPerUnit(stage) == pytest.approx(1.0)
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    root = stage.GetRootLayer()
    assert root.realPath == str(pkg / "cabinet.usda")
    assert list(root.subLayerPaths) == ["./layers/physics.usda"]
    refs = root.GetPrimAtPath("/Cabinet").referenceList.GetAddedOrExplicitItems()
    assert [r.assetPath for r in refs] == ["./layers/geometry.usda"]
    layer_files = {Path(layer.realPath).relative_to(pkg).as_posix()
                   for layer in stage.GetUsedLayers() if layer.realPath}
    assert layer_files == {"cabinet.usda", "layers/physics.usda", "layers/geometry.usda"}


def test_cabinet_bodies_and_articulation():
    stage = open_stage("cabinet_cm")
    parsed = parse(stage)
    assert sorted(str(p) for p, _ in parsed["RigidBody"]) == [
        "/Cabinet/Carcass", "/Cabinet/Door", "/Cabinet/Drawer"]
    assert stage.GetPrimAtPath("/Cabinet").HasAPI(UsdPhysics.ArticulationRootAPI)
    assert len(parsed["Articulation"]) == 1
    arts = parsed["Articulation"][0][1]
    assert len(arts.articulatedJoints) == 3


def test_cabinet_joints():
    stage = open_stage("cabinet_cm")
    parsed = parse(stage)
    mpu = UsdGeom.GetStageMetersPerUnit(stage)
    fixed = _by_path(parsed["FixedJoint"])
    assert list(fixed) == ["/Cabinet/Joints/CarcassAnchor"]
    anchor = fixed["/Cabinet/Joints/CarcassAnchor"]
    assert anchor.body0.isEmpty and str(anchor.body1) == "/Cabinet/Carcass"
    assert UsdPhysics.Joint(stage.GetPrimAtPath("/Cabinet/Joints/CarcassAnchor")).GetBody0Rel().GetTargets() == []

    slide = _by_path(parsed["PrismaticJoint"])["/Cabinet/Joints/DrawerSlide"]
    assert (str(slide.body0), str(slide.body1)) == ("/Cabinet/Carcass", "/Cabinet/Drawer")
    assert slide.axis == UsdPhysics.Axis.X
    assert slide.limit.enabled
    assert (slide.limit.lower * mpu, slide.limit.upper * mpu) == (pytest.approx(0.0), pytest.approx(0.40))
    assert slide.drive.enabled and slide.drive.stiffness > 0 and slide.drive.damping > 0
    assert UsdPhysics.DriveAPI.Get(stage.GetPrimAtPath("/Cabinet/Joints/DrawerSlide"), "linear")

    hinge = _by_path(parsed["RevoluteJoint"])["/Cabinet/Joints/DoorHinge"]
    assert (str(hinge.body0), str(hinge.body1)) == ("/Cabinet/Carcass", "/Cabinet/Door")
    assert hinge.axis == UsdPhysics.Axis.Z
    assert (hinge.limit.lower, hinge.limit.upper) == (pytest.approx(0.0), pytest.approx(110.0))   # degrees
    # the hinge frame sits on the door's edge, not at the door's origin
    assert Gf.Vec3d(hinge.localPose1Position).GetLength() * mpu > 0.2


def test_cabinet_colliders():
    stage = open_stage("cabinet_cm")
    parsed = parse(stage)
    cubes = _by_path(parsed["CubeShape"])
    assert len(cubes) == 12
    for path in cubes:
        prim = stage.GetPrimAtPath(path)
        assert prim.IsA(UsdGeom.Cube)
        scale = prim.GetAttribute("xformOp:scale").Get()
        assert scale is not None and min(scale) > 0 and max(scale) > 1
        assert UsdGeom.Imageable(prim).ComputePurpose() == UsdGeom.Tokens.guide
    meshes = _by_path(parsed["MeshShape"])
    assert set(meshes) == {"/Cabinet/Drawer/Handle", "/Cabinet/Door/Knob"}
    assert meshes["/Cabinet/Drawer/Handle"].approximation == UsdPhysics.Tokens.convexHull
    assert str(meshes["/Cabinet/Drawer/Handle"].rigidBody) == "/Cabinet/Drawer"
    assert meshes["/Cabinet/Door/Knob"].approximation == UsdPhysics.Tokens.convexDecomposition
    assert str(meshes["/Cabinet/Door/Knob"].rigidBody) == "/Cabinet/Door"
    for path in meshes:   # the handle and knob are visible render geometry too
        img = UsdGeom.Imageable(stage.GetPrimAtPath(path))
        assert img.ComputeVisibility() == UsdGeom.Tokens.inherited
        assert img.ComputePurpose() == UsdGeom.Tokens.default_


def test_cabinet_mass_authoring():
    stage = open_stage("cabinet_cm")
    drawer = stage.GetPrimAtPath("/Cabinet/Drawer")
    assert UsdPhysics.MassAPI(drawer).GetMassAttr().Get() == pytest.approx(3.5)
    door_colliders = [p for p in Usd.PrimRange(stage.GetPrimAtPath("/Cabinet/Door"))
                      if p.HasAPI(UsdPhysics.CollisionAPI)]
    assert len(door_colliders) == 2
    for prim in door_colliders:
        assert prim.HasAPI(UsdPhysics.MassAPI)
        assert UsdPhysics.MassAPI(prim).GetDensityAttr().HasAuthoredValue()
    assert not stage.GetPrimAtPath("/Cabinet/Door").HasAPI(UsdPhysics.MassAPI)
    for prim in Usd.PrimRange(stage.GetPrimAtPath("/Cabinet/Carcass")):
        assert not prim.HasAPI(UsdPhysics.MassAPI), prim.GetPath()
    # and the carcass's physics material carries no density either: defaults decide its mass
    for prim in Usd.PrimRange(stage.GetPrimAtPath("/Cabinet/Carcass")):
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            mat, _ = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial("physics")
            assert not UsdPhysics.MaterialAPI(mat.GetPrim()).GetDensityAttr().HasAuthoredValue()


def test_cabinet_materials():
    pkg = ASSETS / "cabinet_cm"
    stage = open_stage("cabinet_cm")
    png = pkg / "textures" / "wood.png"
    assert png.is_file()
    assert read_png_size(png) == (16, 16)
    # every visible gprim has a UsdPreviewSurface material with the three parameters
    textured = []
    for body in ("/Cabinet/Carcass", "/Cabinet/Drawer", "/Cabinet/Door"):
        for prim in visible_gprims(stage, stage.GetPrimAtPath(body)):
            mat, _ = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial()
            assert mat, prim.GetPath()
            surface = mat.ComputeSurfaceSource()[0]
            assert surface.GetIdAttr().Get() == "UsdPreviewSurface"
            for name in ("diffuseColor", "roughness", "metallic"):
                assert surface.GetInput(name), (prim.GetPath(), name)
            diffuse = surface.GetInput("diffuseColor")
            for attr in diffuse.GetValueProducingAttributes():
                shader = UsdShade.Shader(attr.GetPrim())
                if shader.GetIdAttr().Get() == "UsdUVTexture":
                    asset = shader.GetInput("file").Get()
                    textured.append(str(prim.GetPath()))
                    assert Path(asset.resolvedPath) == png.resolve()
                    assert UsdGeom.PrimvarsAPI(prim).GetPrimvar("st").HasValue()
    assert sorted(textured) == ["/Cabinet/Door/Visuals/Panel", "/Cabinet/Drawer/Visuals/Front"]


def test_cabinet_physics_materials():
    stage = open_stage("cabinet_cm")
    full = []
    for prim in stage.Traverse():
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            binding = UsdShade.MaterialBindingAPI(prim).GetDirectBinding("physics")
            assert binding.GetMaterialPath(), f"{prim.GetPath()}: no physics-purpose binding"
            mat = binding.GetMaterial().GetPrim()
            assert mat.HasAPI(UsdPhysics.MaterialAPI)
            api = UsdPhysics.MaterialAPI(mat)
            attrs = [api.GetStaticFrictionAttr(), api.GetDynamicFrictionAttr(),
                     api.GetRestitutionAttr(), api.GetDensityAttr()]
            if all(a.HasAuthoredValue() for a in attrs):
                full.append(str(prim.GetPath()))
    assert "/Cabinet/Drawer/Handle" in full and "/Cabinet/Door/Colliders/Panel" in full


def test_cabinet_mass_properties_compute():
    """The authored mass data feed ComputeMassProperties (units: kg, cm)."""
    stage = open_stage("cabinet_cm")
    drawer = UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Cabinet/Drawer"))

    def no_colliders(path):
        info = UsdPhysics.RigidBodyAPI.MassInformation()
        info.volume = -1.0
        return info

    mass = drawer.ComputeMassProperties(no_colliders)[0]
    assert mass == pytest.approx(3.5)

    # door: collider densities (kg/cm^3) times collider volumes (cm^3); carcass: nothing authored,
    # so ComputeMassProperties falls back to 1000 kg/m^3, converted to 0.001 kg/cm^3.
    trimesh = pytest.importorskip("trimesh")
    volumes = {}

    def volume_of(prim):
        if prim.IsA(UsdGeom.Cube):
            sx, sy, sz = prim.GetAttribute("xformOp:scale").Get()
            return sx * sy * sz * prim.GetAttribute("size").Get() ** 3
        mesh = UsdGeom.Mesh(prim)
        counts, idx = mesh.GetFaceVertexCountsAttr().Get(), mesh.GetFaceVertexIndicesAttr().Get()
        tris, k = [], 0
        for n in counts:
            tris += [[idx[k], idx[k + i], idx[k + i + 1]] for i in range(1, n - 1)]
            k += n
        return trimesh.Trimesh([tuple(p) for p in mesh.GetPointsAttr().Get()], tris).volume

    def info(prim):
        mi = UsdPhysics.RigidBodyAPI.MassInformation()
        mi.volume = volumes.setdefault(str(prim.GetPath()), volume_of(prim))
        mi.inertia = Gf.Matrix3f(1.0)
        mi.centerOfMass = Gf.Vec3f(0.0)
        mi.localPos = Gf.Vec3f(0.0)
        mi.localRot = Gf.Quatf(1.0)
        return mi

    door = UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Cabinet/Door")).ComputeMassProperties(info)[0]
    assert door == pytest.approx(volumes["/Cabinet/Door/Colliders/Panel"] * 0.0006
                                 + volumes["/Cabinet/Door/Knob"] * 0.0085, rel=1e-5)
    carcass = UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Cabinet/Carcass")).ComputeMassProperties(info)[0]
    carcass_volume = sum(v for k, v in volumes.items() if k.startswith("/Cabinet/Carcass/"))
    assert carcass == pytest.approx(carcass_volume * 0.001, rel=1e-5)


# --------------------------------------------------------------------------
# gripper_m
# --------------------------------------------------------------------------

def test_gripper_layers_and_units():
    pkg = ASSETS / "gripper_m"
    stage = open_stage("gripper_m")
    assert UsdGeom.GetStageMetersPerUnit(stage) == pytest.approx(1.0)
    assert UsdPhysics.GetStageKilogramsPerUnit(stage) == pytest.approx(1.0)
    root = stage.GetRootLayer()
    assert list(root.subLayerPaths) == ["./layers/physics.usda", "./layers/materials.usda"]
    payloads = root.GetPrimAtPath("/Gripper").payloadList.GetAddedOrExplicitItems()
    assert [p.assetPath for p in payloads] == ["./layers/geometry.usda"]
    layer_files = {Path(layer.realPath).relative_to(pkg).as_posix()
                   for layer in stage.GetUsedLayers() if layer.realPath}
    assert layer_files == {"gripper.usda", "layers/physics.usda", "layers/materials.usda",
                           "layers/geometry.usda"}


def test_gripper_structure():
    stage = open_stage("gripper_m")
    parsed = parse(stage)
    bodies = sorted(str(p) for p, _ in parsed["RigidBody"])
    assert bodies == ["/Gripper/Base", "/Gripper/Palm", "/Gripper/Palm/FingerLeft", "/Gripper/Palm/FingerRight"]
    for path in bodies:
        assert UsdPhysics.MassAPI(stage.GetPrimAtPath(path)).GetMassAttr().HasAuthoredValue(), path
    # floating articulation rooted at the palm: no joint to the world
    assert stage.GetPrimAtPath("/Gripper/Palm").HasAPI(UsdPhysics.ArticulationRootAPI)
    assert [str(p) for p, _ in parsed["Articulation"]] == ["/Gripper/Palm"]
    joints = joints_of(parsed)
    assert all(not d.body0.isEmpty and not d.body1.isEmpty for _, _, d in joints)

    wrist = _by_path(parsed["RevoluteJoint"])
    assert list(wrist) == ["/Gripper/Joints/Wrist"]
    w = wrist["/Gripper/Joints/Wrist"]
    assert (str(w.body0), str(w.body1)) == ("/Gripper/Base", "/Gripper/Palm")
    assert (w.limit.lower, w.limit.upper) == (pytest.approx(-170.0), pytest.approx(170.0))

    slides = _by_path(parsed["PrismaticJoint"])
    assert sorted(slides) == ["/Gripper/Joints/FingerLeftSlide", "/Gripper/Joints/FingerRightSlide"]
    for path, d in slides.items():
        assert str(d.body0) == "/Gripper/Palm"
        assert (d.limit.lower, d.limit.upper) == (pytest.approx(0.0), pytest.approx(0.015))
    assert len(joints) == 3


def _world_joint_axis(stage, desc):
    f0, _ = joint_world_frames(stage, desc)
    axis = {UsdPhysics.Axis.X: Gf.Vec3d(1, 0, 0), UsdPhysics.Axis.Y: Gf.Vec3d(0, 1, 0),
            UsdPhysics.Axis.Z: Gf.Vec3d(0, 0, 1)}[desc.axis]
    return f0.TransformDir(axis)


def test_gripper_fingers_close_toward_each_other_and_leave_a_gap():
    stage = open_stage("gripper_m")
    parsed = parse(stage)
    slides = _by_path(parsed["PrismaticJoint"])
    cache = UsdGeom.XformCache()
    centre = {}
    for name in ("FingerLeft", "FingerRight"):
        centre[name] = cache.GetLocalToWorldTransform(
            stage.GetPrimAtPath(f"/Gripper/Palm/{name}")).ExtractTranslation()
    left_axis = _world_joint_axis(stage, slides["/Gripper/Joints/FingerLeftSlide"])
    right_axis = _world_joint_axis(stage, slides["/Gripper/Joints/FingerRightSlide"])
    towards_right = (centre["FingerRight"] - centre["FingerLeft"]).GetNormalized()
    assert Gf.Dot(left_axis, towards_right) == pytest.approx(1.0)      # +travel closes
    assert Gf.Dot(right_axis, -towards_right) == pytest.approx(1.0)

    # finger colliders: convex hulls, with free space between them
    meshes = _by_path(parsed["MeshShape"])
    assert sorted(meshes) == ["/Gripper/Palm/FingerLeft/Mesh", "/Gripper/Palm/FingerRight/Mesh"]
    assert all(m.approximation == UsdPhysics.Tokens.convexHull for m in meshes.values())
    # express both fingers' points in the palm frame and measure the gap along the palm's Y
    palm_inv = cache.GetLocalToWorldTransform(stage.GetPrimAtPath("/Gripper/Palm")).GetInverse()
    ys = {}
    for path in meshes:
        prim = stage.GetPrimAtPath(path)
        to_palm = cache.GetLocalToWorldTransform(prim) * palm_inv
        pts = [to_palm.Transform(Gf.Vec3d(p)) for p in UsdGeom.Mesh(prim).GetPointsAttr().Get()]
        ys[path] = (min(p[1] for p in pts), max(p[1] for p in pts))
    left = ys["/Gripper/Palm/FingerLeft/Mesh"]
    right = ys["/Gripper/Palm/FingerRight/Mesh"]
    gap = left[0] - right[1]
    assert gap == pytest.approx(0.035, abs=1e-6)
    assert 2 * 0.015 < gap        # full travel does not make the pads collide


def test_gripper_materials():
    stage = open_stage("gripper_m")
    for prim in stage.Traverse():
        if prim.IsA(UsdGeom.Gprim) and UsdGeom.Imageable(prim).ComputePurpose() == UsdGeom.Tokens.default_:
            mat, _ = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial()
            assert mat and mat.ComputeSurfaceSource()[0].GetIdAttr().Get() == "UsdPreviewSurface"
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            binding = UsdShade.MaterialBindingAPI(prim).GetDirectBinding("physics")
            assert binding.GetMaterial().GetPrim().HasAPI(UsdPhysics.MaterialAPI), prim.GetPath()


# --------------------------------------------------------------------------
# reproducibility of the hand-authored packages
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name", HAND_AUTHORED)
def test_hand_authored_rebuild_is_byte_identical(name, tmp_path):
    builder = _load_builder()
    builder.HAND_AUTHORED[name](tmp_path / name)
    built = sorted(p.relative_to(tmp_path / name) for p in (tmp_path / name).rglob("*") if p.is_file())
    committed = sorted(p.relative_to(ASSETS / name) for p in (ASSETS / name).rglob("*") if p.is_file())
    assert built == committed
    for rel in built:
        assert (tmp_path / name / rel).read_bytes() == (ASSETS / name / rel).read_bytes(), rel
