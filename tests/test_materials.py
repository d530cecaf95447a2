"""Resolved visual and physics materials (stage_snapshot/materials.py, texture_digest.py) and their
comparison (checks/materials.py).

Stages are built in memory or under tmp_path; the last section sweeps the
committed fixture packages.  The physics binding rule is pinned against
UsdPhysics' own parser (shape descriptor ``materials``) on every collider.
"""
from __future__ import annotations

import hashlib
import math
import pickle
import shutil
import struct
import zlib
from pathlib import Path

import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, UsdUtils

from fixtures import build_assets
from usd_repair_verifier.checks.materials import LARGE_ERROR, compare_physics, compare_visual
from usd_repair_verifier.stage_snapshot import materials as M
from usd_repair_verifier.stage_snapshot import texture_digest as T
from usd_repair_verifier.stage_snapshot.materials import (
    PREVIEW_SURFACE_DEFAULTS,
    PhysicsMaterial,
    VisualMaterial,
    display_surface,
    physics_material,
    visual_material,
)

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO / "fixtures" / "assets"
USD_EXTS = (".usd", ".usda", ".usdc", ".usdz")


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def png_bytes(rgb: tuple[int, int, int], size: int = 2) -> bytes:
    """A valid size x size RGB PNG of one colour."""
    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + bytes(rgb) * size for _ in range(size))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def preview_material(stage, path, **inputs) -> tuple[UsdShade.Material, UsdShade.Shader]:
    mat = UsdShade.Material.Define(stage, path)
    sh = UsdShade.Shader.Define(stage, f"{path}/PreviewSurface")
    sh.CreateIdAttr("UsdPreviewSurface")
    mat.CreateSurfaceOutput().ConnectToSource(sh.ConnectableAPI(), "surface")
    types = {tuple: Sdf.ValueTypeNames.Color3f, float: Sdf.ValueTypeNames.Float, int: Sdf.ValueTypeNames.Int}
    for name, value in inputs.items():
        tn = types[type(value)]
        sh.CreateInput(name, tn).Set(Gf.Vec3f(*value) if tn == Sdf.ValueTypeNames.Color3f else value)
    return mat, sh


def bind(prim_or_schema, material, purpose=UsdShade.Tokens.allPurpose,
         strength=UsdShade.Tokens.fallbackStrength):
    prim = prim_or_schema.GetPrim() if hasattr(prim_or_schema, "GetPrim") else prim_or_schema
    UsdShade.MaterialBindingAPI.Apply(prim).Bind(material, strength, purpose)


def textured_material(stage, path, file: str, roughness=0.6):
    """A preview surface whose diffuse colour is `file` read at the st primvar, authored as the
    fixture packages author theirs."""
    return build_assets.preview_material(stage, path, (0.5, 0.5, 0.5), roughness, 0.0, texture=file)


def physics_mat(stage, path, *, api=True, sf=None, df=None, rest=None, density=None):
    mat = UsdShade.Material.Define(stage, path)
    if api:
        a = UsdPhysics.MaterialAPI.Apply(mat.GetPrim())
        for value, create in ((sf, a.CreateStaticFrictionAttr), (df, a.CreateDynamicFrictionAttr),
                              (rest, a.CreateRestitutionAttr), (density, a.CreateDensityAttr)):
            if value is not None:
                create(value)
    return mat


def parser_materials(stage) -> dict[str, list[str]]:
    """Collider path -> the UsdPhysics parser's shape `materials`."""
    out = {}
    for _, (paths, descs) in UsdPhysics.UsdPhysicsLoadStageFromPrimRange(stage, ["/"]).items():
        for p, d in zip(paths, descs):
            if hasattr(d, "materials"):
                out[str(p)] = [str(x) for x in d.materials]
    return out


def assert_agrees_with_parser(stage):
    mpu = UsdGeom.GetStageMetersPerUnit(stage)
    kpu = UsdPhysics.GetStageKilogramsPerUnit(stage)
    parsed = parser_materials(stage)
    colliders = [p for p in stage.Traverse(Usd.TraverseInstanceProxies())
                 if p.HasAPI(UsdPhysics.CollisionAPI)]
    assert colliders
    for prim in colliders:
        pm = physics_material(prim, mpu, kpu)
        mine = [pm.path] if pm else []
        assert parsed[str(prim.GetPath())] == mine, prim.GetPath()
    return len(colliders)


def errors(components) -> dict[str, float]:
    return {k: e for k, (e, _) in components.items()}


def failing(components) -> set[str]:
    return {k for k, (e, t) in components.items() if not e <= t}


def new_stage(mpu=1.0, kpu=1.0):
    s = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageMetersPerUnit(s, mpu)
    UsdPhysics.SetStageKilogramsPerUnit(s, kpu)
    UsdGeom.Xform.Define(s, "/World")
    return s


def collider_stage(mpu=1.0, kpu=1.0):
    s = new_stage(mpu, kpu)
    body = UsdGeom.Xform.Define(s, "/World/Body")
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    cube = UsdGeom.Cube.Define(s, "/World/Body/Collider")
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    return s, body.GetPrim(), cube.GetPrim()


# --------------------------------------------------------------------------
# visual materials
# --------------------------------------------------------------------------

def test_authored_inputs_and_schema_defaults():
    s = new_stage()
    mat, _ = preview_material(s, "/World/Looks/Red", diffuseColor=(0.8, 0.1, 0.1), roughness=0.25,
                              metallic=1.0, opacity=0.5, emissiveColor=(0.0, 0.2, 0.0), useSpecularWorkflow=1)
    cube = UsdGeom.Cube.Define(s, "/World/Cube")
    bind(cube, mat)
    vm = visual_material(cube.GetPrim())
    assert vm.path == "/World/Looks/Red" and vm.shader == "UsdPreviewSurface" and vm.textures == {}
    assert set(vm.surface) == set(PREVIEW_SURFACE_DEFAULTS)
    assert vm.surface["diffuseColor"] == pytest.approx((0.8, 0.1, 0.1))
    assert vm.surface["emissiveColor"] == pytest.approx((0.0, 0.2, 0.0))
    assert vm.surface["roughness"] == pytest.approx(0.25)
    assert vm.surface["metallic"] == 1.0 and vm.surface["opacity"] == 0.5
    assert vm.surface["useSpecularWorkflow"] == 1.0
    # unauthored inputs: the UsdPreviewSurface defaults
    for name in ("ior", "clearcoat", "clearcoatRoughness", "specularColor", "normal", "occlusion",
                 "opacityThreshold", "opacityMode", "displacement"):
        assert vm.surface[name] == PREVIEW_SURFACE_DEFAULTS[name], name
    # plain data: pickles and compares by value
    assert pickle.loads(pickle.dumps(vm)) == vm


def test_preview_surface_defaults_match_sdr_definition():
    from pxr import Sdr

    node = Sdr.Registry().GetShaderNodeByIdentifier("UsdPreviewSurface")
    if not node:
        pytest.skip("usdShaders Sdr definitions not available")
    assert set(node.GetShaderInputNames()) == set(PREVIEW_SURFACE_DEFAULTS)
    for name, value in PREVIEW_SURFACE_DEFAULTS.items():
        sdr = M._plain(node.GetShaderInput(name).GetDefaultValue())
        if isinstance(value, str):
            assert sdr == value
        else:
            assert sdr == pytest.approx(value, abs=1e-6), name


def test_unbound_gprim_is_none_and_display_surface():
    s = new_stage()
    cube = UsdGeom.Cube.Define(s, "/World/Cube")
    assert visual_material(cube.GetPrim()) is None
    cube.CreateDisplayColorPrimvar(UsdGeom.Tokens.constant).Set([Gf.Vec3f(0.8, 0.6, 0.4)])
    ds = display_surface(cube.GetPrim())
    assert ds.surface["diffuseColor"] == pytest.approx((0.8, 0.6, 0.4)) and ds.surface["opacity"] == 1.0
    other = UsdGeom.Cube.Define(s, "/World/Other")
    other.CreateDisplayColorPrimvar(UsdGeom.Tokens.constant).Set([Gf.Vec3f(0.1, 0.6, 0.4)])
    assert failing(compare_visual(ds, display_surface(other.GetPrim()))) == {"diffuseColor"}
    # a binding to a prim that is not a Material (or is missing) resolves to no material
    sphere = UsdGeom.Sphere.Define(s, "/World/Sphere")
    UsdShade.MaterialBindingAPI.Apply(sphere.GetPrim())
    sphere.GetPrim().CreateRelationship("material:binding").SetTargets(["/World/Missing"])
    assert visual_material(sphere.GetPrim()) is None


def test_material_interface_inputs_are_followed():
    """MuJoCo converter style: shader inputs connected to the Material's own inputs."""
    s = new_stage()
    mat = UsdShade.Material.Define(s, "/World/Looks/Iface")
    sh = UsdShade.Shader.Define(s, "/World/Looks/Iface/PreviewSurface")
    sh.CreateIdAttr("UsdPreviewSurface")
    mat.CreateSurfaceOutput().ConnectToSource(sh.ConnectableAPI(), "surface")
    mat.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).Set(Gf.Vec3f(0.2, 0.3, 0.4))
    mat.CreateInput("roughness", Sdf.ValueTypeNames.Float)          # declared, no value
    sh.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).ConnectToSource(mat.GetInput("diffuseColor"))
    rough = sh.CreateInput("roughness", Sdf.ValueTypeNames.Float)
    rough.Set(0.7)
    rough.ConnectToSource(mat.GetInput("roughness"))
    cube = UsdGeom.Cube.Define(s, "/World/Cube")
    bind(cube, mat)
    vm = visual_material(cube.GetPrim())
    assert vm.surface["diffuseColor"] == pytest.approx((0.2, 0.3, 0.4))
    # a connection to an interface input without a value: UsdShade falls back to the shader's own value
    assert vm.surface["roughness"] == pytest.approx(0.7)


def test_primvar_reader_and_constant_node_are_followed():
    s = new_stage()
    mat, sh = preview_material(s, "/World/Looks/Pv")
    reader = UsdShade.Shader.Define(s, "/World/Looks/Pv/Reader")
    reader.CreateIdAttr("UsdPrimvarReader_float3")
    reader.CreateInput("varname", Sdf.ValueTypeNames.String).Set("displayColor")
    reader.CreateInput("fallback", Sdf.ValueTypeNames.Float3).Set(Gf.Vec3f(0.5, 0.5, 0.5))
    sh.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).ConnectToSource(
        reader.ConnectableAPI().CreateOutput("result", Sdf.ValueTypeNames.Float3))
    const = UsdShade.Shader.Define(s, "/World/Looks/Pv/Const")
    const.CreateIdAttr("ND_constant_float")
    const.CreateInput("value", Sdf.ValueTypeNames.Float).Set(0.35)
    sh.CreateInput("roughness", Sdf.ValueTypeNames.Float).ConnectToSource(
        const.ConnectableAPI().CreateOutput("out", Sdf.ValueTypeNames.Float))

    red = UsdGeom.Cube.Define(s, "/World/Red")
    red.CreateDisplayColorPrimvar(UsdGeom.Tokens.constant).Set([Gf.Vec3f(1, 0, 0)])
    plain = UsdGeom.Cube.Define(s, "/World/Plain")
    mesh = UsdGeom.Mesh.Define(s, "/World/Mesh")
    mesh.CreateDisplayColorPrimvar(UsdGeom.Tokens.vertex).Set([Gf.Vec3f(1, 0, 0), Gf.Vec3f(0, 1, 0)])
    for g in (red, plain, mesh):
        bind(g, mat)
    vr = visual_material(red.GetPrim())
    assert vr.surface["diffuseColor"] == (1.0, 0.0, 0.0) and vr.surface["roughness"] == pytest.approx(0.35)
    assert visual_material(plain.GetPrim()).surface["diffuseColor"] == pytest.approx((0.5, 0.5, 0.5))
    vm = visual_material(mesh.GetPrim())
    assert "diffuseColor" not in vm.surface and vm.textures["diffuseColor"].startswith("primvar:sha256:")


def test_inherited_binding_strength_collection_and_purpose():
    s = new_stage()
    red, _ = preview_material(s, "/World/Looks/Red", diffuseColor=(1.0, 0.0, 0.0))
    blue, _ = preview_material(s, "/World/Looks/Blue", diffuseColor=(0.0, 0.0, 1.0))
    green, _ = preview_material(s, "/World/Looks/Green", diffuseColor=(0.0, 1.0, 0.0))
    group = UsdGeom.Xform.Define(s, "/World/Group")
    child = UsdGeom.Cube.Define(s, "/World/Group/Arm/Child")
    bind(group, red)
    vm = visual_material(child.GetPrim())
    assert vm.path == "/World/Looks/Red"                      # inherited from the ancestor
    # a descendant's own binding beats the ancestor's default-strength binding ...
    bind(child, blue)
    assert visual_material(child.GetPrim()).path == "/World/Looks/Blue"
    # ... unless the ancestor binds strongerThanDescendants
    bind(group, red, strength=UsdShade.Tokens.strongerThanDescendants)
    assert visual_material(child.GetPrim()).path == "/World/Looks/Red"
    bind(group, red)
    # a collection-based binding on an ancestor
    other = UsdGeom.Sphere.Define(s, "/World/Group/Other")
    coll = Usd.CollectionAPI.Apply(group.GetPrim(), "greens")
    coll.GetIncludesRel().AddTarget(other.GetPath())
    UsdShade.MaterialBindingAPI(group.GetPrim()).Bind(coll, green, "greenBinding")
    assert visual_material(other.GetPrim()).path == "/World/Looks/Green"
    # purposes: "preview" (Hydra's default) beats all-purpose; "full" does not apply to preview
    bind(child, green, purpose=UsdShade.Tokens.full)
    assert visual_material(child.GetPrim()).path == "/World/Looks/Blue"
    assert visual_material(child.GetPrim(), purpose=UsdShade.Tokens.full).path == "/World/Looks/Green"
    bind(child, red, purpose=UsdShade.Tokens.preview)
    assert visual_material(child.GetPrim()).path == "/World/Looks/Red"
    # a physics-purpose binding never changes the visual material
    bind(other, physics_mat(s, "/World/Phys", sf=0.5), purpose="physics")
    assert visual_material(other.GetPrim()).path == "/World/Looks/Green"


def test_renamed_and_moved_material_compares_equal():
    inputs = dict(diffuseColor=(0.3, 0.4, 0.5), roughness=0.4, metallic=0.2, ior=1.3)
    s1 = new_stage()
    m1, _ = preview_material(s1, "/World/Looks/Paint", **inputs)
    c1 = UsdGeom.Cube.Define(s1, "/World/Part")
    bind(c1, m1)
    s2 = new_stage()
    m2, _ = preview_material(s2, "/Materials/Library/SomethingElse", **inputs)
    c2 = UsdGeom.Cube.Define(s2, "/World/Part")
    bind(UsdGeom.Xform.Get(s2, "/World"), m2)                  # bound on the ancestor instead
    v1, v2 = visual_material(c1.GetPrim()), visual_material(c2.GetPrim())
    assert v1.path != v2.path
    comps = compare_visual(v1, v2)
    assert set(comps) >= {"bound", "shader", "diffuseColor", "roughness", "metallic", "ior", "opacity"}
    assert all(e == 0 for e in errors(comps).values()), comps
    # a changed colour is caught by name, with its tolerance
    s3 = new_stage()
    m3, _ = preview_material(s3, "/M", **{**inputs, "diffuseColor": (0.3, 0.4, 0.6)})
    c3 = UsdGeom.Cube.Define(s3, "/World/Part")
    bind(c3, m3)
    comps = compare_visual(v1, visual_material(c3.GetPrim()))
    assert comps["diffuseColor"] == (pytest.approx(0.1), 0.02) and failing(comps) == {"diffuseColor"}
    assert not failing(compare_visual(v1, visual_material(c3.GetPrim()), color_tolerance=0.2))


def test_texture_digest_by_content_not_path(tmp_path):
    a, b = png_bytes((200, 120, 40)), png_bytes((10, 20, 30))
    assert a != b
    (tmp_path / "ref" / "textures").mkdir(parents=True)
    (tmp_path / "ref" / "textures" / "wood.png").write_bytes(a)
    (tmp_path / "cand" / "maps").mkdir(parents=True)
    (tmp_path / "cand" / "maps" / "renamed_wood.png").write_bytes(a)
    (tmp_path / "cand" / "maps" / "other.png").write_bytes(b)

    def build(folder: Path, mat_path: str, file: str, layer_dir: str | None = None):
        """Root layer at folder/root.usda; the material optionally in a sublayer under layer_dir."""
        root = Usd.Stage.CreateNew(str(folder / "root.usda"))
        UsdGeom.SetStageMetersPerUnit(root, 1.0)
        target = root
        if layer_dir:
            (folder / layer_dir).mkdir(exist_ok=True)
            sub = Usd.Stage.CreateNew(str(folder / layer_dir / "looks.usda"))
            textured_material(sub, mat_path, file)
            sub.GetRootLayer().Save()
            root.GetRootLayer().subLayerPaths.append(f"./{layer_dir}/looks.usda")
        else:
            textured_material(target, mat_path, file)
        cube = UsdGeom.Cube.Define(root, "/World/Panel")
        bind(cube, UsdShade.Material.Get(root, mat_path))
        root.GetRootLayer().Save()
        stage = Usd.Stage.Open(str(folder / "root.usda"))
        return visual_material(stage.GetPrimAtPath("/World/Panel"))

    ref = build(tmp_path / "ref", "/World/Looks/Wood", "./textures/wood.png")
    digest = "sha256:" + hashlib.sha256(a).hexdigest()
    assert ref.textures == {"diffuseColor": digest}
    assert "diffuseColor" not in ref.surface and ref.surface["roughness"] == pytest.approx(0.6)
    # same bytes under another file name, another material path, authored in a sublayer one
    # folder down (the asset path is anchored to the layer that authors it)
    same = build(tmp_path / "cand", "/Looks/Deep/Renamed", "../maps/renamed_wood.png", layer_dir="layers")
    assert same.textures == {"diffuseColor": digest} and same.path != ref.path
    assert all(e == 0 for e in errors(compare_visual(ref, same)).values())
    # different bytes
    (tmp_path / "cand2").mkdir()
    shutil.copytree(tmp_path / "cand" / "maps", tmp_path / "cand2" / "maps")
    diff = build(tmp_path / "cand2", "/World/Looks/Wood", "./maps/other.png")
    comps = compare_visual(ref, diff)
    assert comps["texture.diffuseColor"] == (1.0, 0.0) and failing(comps) == {"texture.diffuseColor"}
    # a missing file, and a plain colour in place of the texture
    (tmp_path / "cand3").mkdir()
    miss = build(tmp_path / "cand3", "/World/Looks/Wood", "./maps/nothere.png")
    assert miss.textures == {"diffuseColor": "missing:./maps/nothere.png"}
    assert failing(compare_visual(ref, miss)) == {"texture.diffuseColor"}
    s = new_stage()
    m, _ = preview_material(s, "/M", diffuseColor=(0.5, 0.3, 0.1), roughness=0.6)
    c = UsdGeom.Cube.Define(s, "/World/Panel")
    bind(c, m)
    comps = compare_visual(ref, visual_material(c.GetPrim()))
    assert "diffuseColor" not in comps and failing(comps) == {"texture.diffuseColor"}


def test_texture_size_limit_and_cache(tmp_path, monkeypatch):
    data = png_bytes((1, 2, 3), size=8)
    (tmp_path / "big.png").write_bytes(data)
    s = Usd.Stage.CreateNew(str(tmp_path / "root.usda"))
    textured_material(s, "/Looks/Big", "./big.png")
    c = UsdGeom.Cube.Define(s, "/World/Cube")
    bind(c, UsdShade.Material.Get(s, "/Looks/Big"))
    monkeypatch.setattr(T, "MAX_TEXTURE_BYTES", len(data) - 1)
    assert visual_material(c.GetPrim()).textures == {"diffuseColor": f"too_large:{len(data)}"}
    monkeypatch.setattr(T, "MAX_TEXTURE_BYTES", 64 * 1024 * 1024)
    (tmp_path / "big.png").write_bytes(data + b"\0")          # rewritten: the cache must not go stale
    with T.texture_digest_scope():                            # the cache of one stage read
        got = visual_material(c.GetPrim()).textures["diffuseColor"]
        assert got == "sha256:" + hashlib.sha256(data + b"\0").hexdigest()
        assert any(k[0] == str(tmp_path / "big.png") for k in T._DIGESTS.get())
    assert T._DIGESTS.get() is None                           # nothing outlives the read


def test_udim_and_usdz_textures(tmp_path):
    tiles = {1001: png_bytes((1, 1, 1)), 1002: png_bytes((2, 2, 2))}
    (tmp_path / "tex").mkdir()
    for n, data in tiles.items():
        (tmp_path / "tex" / f"body.{n}.png").write_bytes(data)
    s = Usd.Stage.CreateNew(str(tmp_path / "root.usda"))
    textured_material(s, "/Looks/Udim", "./tex/body.<UDIM>.png")
    textured_material(s, "/Looks/Plain", "./tex/body.1001.png")
    c = UsdGeom.Cube.Define(s, "/World/Cube")
    bind(c, UsdShade.Material.Get(s, "/Looks/Udim"))
    d = UsdGeom.Cube.Define(s, "/World/Other")
    bind(d, UsdShade.Material.Get(s, "/Looks/Plain"))
    s.GetRootLayer().Save()
    udim = visual_material(c.GetPrim()).textures["diffuseColor"]
    assert udim.startswith("sha256:") and udim != visual_material(d.GetPrim()).textures["diffuseColor"]
    # the same package zipped: packaged textures hash to the same bytes
    usdz = tmp_path / "pkg.usdz"
    assert UsdUtils.CreateNewUsdzPackage(Sdf.AssetPath(str(tmp_path / "root.usda")), str(usdz))
    z = Usd.Stage.Open(str(usdz))
    assert visual_material(z.GetPrimAtPath("/World/Other")).textures == \
        {"diffuseColor": "sha256:" + hashlib.sha256(tiles[1001]).hexdigest()}


def test_compare_visual_edge_cases():
    base = VisualMaterial(path="/a", surface=dict(PREVIEW_SURFACE_DEFAULTS), textures={}, shader="UsdPreviewSurface")
    assert compare_visual(None, None) == {"bound": (0.0, 0.0)}
    assert compare_visual(base, None) == {"bound": (1.0, 0.0)}
    assert compare_visual(None, base) == {"bound": (1.0, 0.0)}
    # an input present on one side only compares against the schema default
    only = VisualMaterial(path="/b", surface={"roughness": 0.5, "diffuseColor": (0.18, 0.18, 0.18),
                                               "metallic": 0.3}, textures={}, shader="UsdPreviewSurface")
    sparse = VisualMaterial(path="/c", surface={}, textures={}, shader="UsdPreviewSurface")
    comps = compare_visual(only, sparse)
    assert errors(comps)["roughness"] == 0 and errors(comps)["metallic"] == pytest.approx(0.3)
    assert failing(comps) == {"metallic"}
    other_shader = VisualMaterial(path="/d", surface=dict(PREVIEW_SURFACE_DEFAULTS), textures={}, shader="")
    assert failing(compare_visual(base, other_shader)) == {"shader"}
    # tokens compare 0/1
    tok = VisualMaterial(path="/e", surface={**PREVIEW_SURFACE_DEFAULTS, "opacityMode": "presence"},
                         textures={}, shader="UsdPreviewSurface")
    assert compare_visual(base, tok)["opacityMode"] == (1.0, 0.0)
    # two missing textures both render the fallback
    m1 = VisualMaterial(path=None, surface={}, textures={"diffuseColor": "missing:a.png"}, shader="UsdPreviewSurface")
    m2 = VisualMaterial(path=None, surface={}, textures={"diffuseColor": "missing:b.png"}, shader="UsdPreviewSurface")
    assert compare_visual(m1, m2)["texture.diffuseColor"] == (0.0, 0.0)
    # NaN never passes
    nan = VisualMaterial(path="/f", surface={**PREVIEW_SURFACE_DEFAULTS, "roughness": float("nan")},
                         textures={}, shader="UsdPreviewSurface")
    assert "roughness" in failing(compare_visual(base, nan))


# --------------------------------------------------------------------------
# physics materials
# --------------------------------------------------------------------------

def test_physics_purpose_binding_wins_over_all_purpose():
    s, body, col = collider_stage()
    phys = physics_mat(s, "/World/Phys/Steel", sf=0.7, df=0.6, rest=0.2, density=7800.0)
    allp = physics_mat(s, "/World/Phys/Rubber", sf=1.0, df=0.9)
    bind(col, allp)
    bind(col, phys, purpose="physics")
    pm = physics_material(col, 1.0, 1.0)
    assert pm == PhysicsMaterial("/World/Phys/Steel", pytest.approx(0.7), pytest.approx(0.6),
                                 pytest.approx(0.2), pytest.approx(7800.0))
    assert pickle.loads(pickle.dumps(pm)) == pm
    # the physics binding on an ancestor still wins over the collider's own all-purpose one
    s2, body2, col2 = collider_stage()
    bind(col2, physics_mat(s2, "/World/Phys/Rubber", sf=1.0))
    bind(body2, physics_mat(s2, "/World/Phys/Steel", sf=0.7), purpose="physics")
    assert physics_material(col2, 1.0, 1.0).path == "/World/Phys/Steel"
    assert assert_agrees_with_parser(s) == 1 and assert_agrees_with_parser(s2) == 1


def test_all_purpose_material_with_material_api_counts():
    s, _, col = collider_stage()
    mat, _ = preview_material(s, "/World/Looks/Wood", diffuseColor=(0.5, 0.3, 0.1))
    api = UsdPhysics.MaterialAPI.Apply(mat.GetPrim())
    api.CreateStaticFrictionAttr(0.5)
    bind(col, mat)
    pm = physics_material(col, 1.0, 1.0)
    assert pm.path == "/World/Looks/Wood" and pm.static_friction == 0.5
    # unauthored: the schema defaults
    assert (pm.dynamic_friction, pm.restitution, pm.density) == (0.0, 0.0, 0.0)
    assert visual_material(col).path == "/World/Looks/Wood"        # the same prim serves both
    assert_agrees_with_parser(s)


def test_render_only_material_is_not_a_physics_material():
    s, _, col = collider_stage()
    mat, _ = preview_material(s, "/World/Looks/Paint", diffuseColor=(0.5, 0.3, 0.1))
    bind(col, mat)
    assert physics_material(col, 1.0, 1.0) is None
    assert visual_material(col).path == "/World/Looks/Paint"
    assert_agrees_with_parser(s)


def test_no_fallback_past_a_physics_binding_to_a_render_material():
    """A physics-purpose binding to a material without MaterialAPI hides an all-purpose physics
    material: ComputeBoundMaterial("physics") returns the render material and the parser drops it."""
    s, _, col = collider_stage()
    render, _ = preview_material(s, "/World/Looks/Paint")
    bind(col, physics_mat(s, "/World/Phys/Rubber", sf=1.0))
    bind(col, render, purpose="physics")
    assert physics_material(col, 1.0, 1.0) is None
    assert parser_materials(s)["/World/Body/Collider"] == []
    assert_agrees_with_parser(s)


def test_binding_api_must_be_applied_on_the_collider():
    """The parser only resolves bindings for colliders that have MaterialBindingAPI applied;
    ComputeMassProperties does use the inherited material (require_binding_api=False)."""
    s, body, col = collider_stage()
    bind(body, physics_mat(s, "/World/Phys/Steel", sf=0.7, density=7.0), purpose="physics")
    assert not col.HasAPI(UsdShade.MaterialBindingAPI)
    assert physics_material(col, 1.0, 1.0) is None
    assert physics_material(col, 1.0, 1.0, require_binding_api=False).path == "/World/Phys/Steel"
    assert_agrees_with_parser(s)
    UsdShade.MaterialBindingAPI.Apply(col)                     # now the inherited binding counts
    assert physics_material(col, 1.0, 1.0).path == "/World/Phys/Steel"
    assert_agrees_with_parser(s)


def test_broken_physics_binding_targets():
    # a physics binding to a missing prim, or to a prim that is not a Material, resolves to
    # nothing (UsdShade does not fall back to the all-purpose binding) -> None, like the parser
    for target in ("/World/Missing", "/World/NotAMaterial"):
        s, _, col = collider_stage()
        x = UsdGeom.Xform.Define(s, "/World/NotAMaterial")
        UsdPhysics.MaterialAPI.Apply(x.GetPrim())
        bind(col, physics_mat(s, "/World/Phys/Rubber", sf=1.0))
        col.GetRelationship("material:binding:physics") or col.CreateRelationship("material:binding:physics")
        col.GetRelationship("material:binding:physics").SetTargets([target])
        assert physics_material(col, 1.0, 1.0) is None, target
        assert_agrees_with_parser(s)


def test_collection_and_strength_agree_with_parser():
    s, body, col = collider_stage()
    other = UsdGeom.Sphere.Define(s, "/World/Body/Other").GetPrim()
    UsdPhysics.CollisionAPI.Apply(other)
    UsdShade.MaterialBindingAPI.Apply(other)
    world = s.GetPrimAtPath("/World")
    coll = Usd.CollectionAPI.Apply(world, "slippery")
    coll.GetIncludesRel().AddTarget(other.GetPath())
    UsdShade.MaterialBindingAPI.Apply(world).Bind(coll, physics_mat(s, "/World/Phys/Ice", sf=0.05),
                                                  "ice", UsdShade.Tokens.fallbackStrength, "physics")
    bind(col, physics_mat(s, "/World/Phys/Rubber", sf=1.0), purpose="physics")
    bind(body, physics_mat(s, "/World/Phys/Steel", sf=0.7), purpose="physics",
         strength=UsdShade.Tokens.strongerThanDescendants)
    assert physics_material(col, 1.0, 1.0).path == "/World/Phys/Steel"
    assert physics_material(other, 1.0, 1.0).path == "/World/Phys/Steel"
    assert assert_agrees_with_parser(s) == 2


def test_density_unit_conversion_cm_stage():
    s, _, col = collider_stage(mpu=0.01, kpu=1.0)
    bind(col, physics_mat(s, "/World/Phys/Water", density=0.001), purpose="physics")   # 1 g/cm^3
    pm = physics_material(col, UsdGeom.GetStageMetersPerUnit(s), UsdPhysics.GetStageKilogramsPerUnit(s))
    assert pm.density == pytest.approx(1000.0, rel=1e-6)
    # grams and millimetres: 1e-3 g/mm^3 = 1000 kg/m^3
    assert physics_material(col, 0.001, 0.001).density == pytest.approx(1e-3 * 1e-3 / 1e-9, rel=1e-6)
    # and it compares equal to the same material authored in SI
    s2, _, col2 = collider_stage()
    bind(col2, physics_mat(s2, "/Elsewhere/Renamed", density=1000.0), purpose="physics")
    comps = compare_physics(pm, physics_material(col2, 1.0, 1.0))
    assert not failing(comps) and set(comps) == {"bound", "static_friction", "dynamic_friction",
                                                 "restitution", "density"}


def test_compare_physics_components():
    a = PhysicsMaterial("/a", 0.5, 0.4, 0.1, 1000.0)
    assert compare_physics(None, None) == {"bound": (0.0, 0.0)}
    assert compare_physics(a, None) == {"bound": (1.0, 0.0)}
    same = PhysicsMaterial("/somewhere/else", 0.5, 0.4, 0.1, 1000.0)
    assert all(e == 0 for e in errors(compare_physics(a, same)).values())
    b = PhysicsMaterial("/b", 0.52, 0.4, 0.1, 1005.0)
    comps = compare_physics(a, b)
    assert comps["static_friction"] == (pytest.approx(0.02), 0.01)
    assert comps["density"] == (pytest.approx(math.log(1005 / 1000)), pytest.approx(math.log(1.01)))
    assert failing(comps) == {"static_friction"}
    assert failing(compare_physics(a, PhysicsMaterial("/c", 0.5, 0.4, 0.1, 1020.0))) == {"density"}
    assert not failing(compare_physics(a, PhysicsMaterial("/c", 0.5, 0.4, 0.1, 1020.0), relative_tolerance=0.05))
    unset = PhysicsMaterial("/d", 0.5, 0.4, 0.1, 0.0)
    assert compare_physics(a, unset)["density"][0] == LARGE_ERROR
    assert compare_physics(unset, unset)["density"][0] == 0.0


# --------------------------------------------------------------------------
# the committed fixture packages
# --------------------------------------------------------------------------

PACKAGES = sorted(p.name for p in ASSETS.iterdir() if p.is_dir()) if ASSETS.is_dir() else []
MUJOCO = [n for n in PACKAGES if n not in ("cabinet_cm", "gripper_m")]


def open_package(name: str) -> Usd.Stage:
    roots = [p for p in (ASSETS / name).iterdir() if p.is_file() and p.suffix in USD_EXTS]
    assert len(roots) == 1
    return Usd.Stage.Open(str(roots[0]))


def visible_gprims(stage):
    for prim in stage.Traverse(Usd.TraverseInstanceProxies()):
        if prim.IsA(UsdGeom.Gprim):
            img = UsdGeom.Imageable(prim)
            if img.ComputeVisibility() != UsdGeom.Tokens.invisible and \
                    img.ComputePurpose() in (UsdGeom.Tokens.default_, UsdGeom.Tokens.render):
                yield prim


@pytest.mark.parametrize("name", PACKAGES)
def test_fixture_packages_read_and_agree_with_parser(name):
    stage = open_package(name)
    mpu, kpu = UsdGeom.GetStageMetersPerUnit(stage), UsdPhysics.GetStageKilogramsPerUnit(stage)
    gprims = list(visible_gprims(stage))
    assert gprims
    for prim in gprims:
        vm = visual_material(prim)
        if vm is None:
            ds = display_surface(prim)
            assert compare_visual(ds, ds) and not failing(compare_visual(ds, ds))
            continue
        assert vm.shader == "UsdPreviewSurface", prim.GetPath()
        assert not failing(compare_visual(vm, vm))
        assert all(v.startswith("sha256:") for v in vm.textures.values()), vm.textures
    n = assert_agrees_with_parser(stage)
    for prim in stage.Traverse(Usd.TraverseInstanceProxies()):
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            pm = physics_material(prim, mpu, kpu)
            assert pm is not None, prim.GetPath()             # every fixture collider has one
            assert not failing(compare_physics(pm, pm))
    assert n >= 1


def test_cabinet_fixture_materials():
    stage = open_package("cabinet_cm")
    png = ASSETS / "cabinet_cm" / "textures" / "wood.png"
    digest = "sha256:" + hashlib.sha256(png.read_bytes()).hexdigest()
    textured = {str(p.GetPath()) for p in visible_gprims(stage) if visual_material(p).textures}
    assert textured == {"/Cabinet/Door/Visuals/Panel", "/Cabinet/Drawer/Visuals/Front"}
    vm = visual_material(stage.GetPrimAtPath("/Cabinet/Door/Visuals/Panel"))
    assert vm.textures == {"diffuseColor": digest} and vm.surface["roughness"] == pytest.approx(0.6)
    # the drawer front's wood is 0.0007 kg/cm^3 = 700 kg/m^3
    wood = physics_material(stage.GetPrimAtPath("/Cabinet/Drawer/Colliders/Front"), 0.01, 1.0)
    assert wood.path == "/Cabinet/PhysicsMaterials/Wood" and wood.density == pytest.approx(700.0, rel=1e-5)


@pytest.mark.parametrize("name", MUJOCO)
def test_converted_mujoco_physics_bindings(name):
    """Converted models bind physics materials with purpose physics on every collider (one
    material per distinct MJCF friction: most models have one, cheetah and hopper more)."""
    stage = open_package(name)
    for prim in stage.Traverse(Usd.TraverseInstanceProxies()):
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            binding = UsdShade.MaterialBindingAPI(prim).GetDirectBinding("physics")
            pm = physics_material(prim, 1.0, 1.0)
            assert str(binding.GetMaterialPath()) == pm.path
            assert pm.path.split("/")[-1].startswith("PhysicsMaterial")
            assert pm.restitution == 0.0 and pm.density == 0.0     # density is on the colliders


# --- display colours that vary over a part ----------------------------------------------

def _graded_display_colour(interpolation_ref: str, interpolation_cand: str, indices=None):
    """Grade the typed-reader test asset's mesh coloured per vertex or per face (4 each)."""
    from pxr import Usd, UsdGeom, Vt

    from tests.test_typed_read import MESH, SAMPLING, grade_in_memory, healthy_layer
    from usd_repair_verifier.stage_snapshot.read import snapshot

    colours = Vt.Vec3fArray([(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0)])

    def coloured(interpolation, indices=None):
        stage = Usd.Stage.Open(healthy_layer())
        primvar = UsdGeom.PrimvarsAPI(stage.GetPrimAtPath(MESH)).GetPrimvar("displayColor")
        primvar.Set(colours if indices is None else Vt.Vec3fArray([(0, 0, 0), *colours]))
        primvar.SetInterpolation(interpolation)
        if indices is not None:
            primvar.SetIndices(Vt.IntArray(indices))
        return stage

    reference = snapshot(coloured(interpolation_ref), "", SAMPLING)
    results = grade_in_memory(reference, coloured(interpolation_cand, indices))
    return next(r for r in results if getattr(r, "check", "") == f"material.visual:{MESH}")


def test_the_same_colours_spread_per_face_instead_of_per_vertex_differ():
    assert _graded_display_colour("vertex", "vertex").passed is True
    assert _graded_display_colour("vertex", "uniform").passed is False


def test_the_same_varying_colours_authored_through_indices_are_the_same_surface():
    assert _graded_display_colour("vertex", "vertex", indices=[1, 2, 3, 4]).passed is True
    assert _graded_display_colour("vertex", "vertex", indices=[2, 1, 3, 4]).passed is False
