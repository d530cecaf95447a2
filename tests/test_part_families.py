"""Component geometry and collision families on real and hand-authored assets."""
from __future__ import annotations

from pathlib import Path

import pytest
from pxr import Gf, Usd, UsdGeom, UsdPhysics

from usd_repair_verifier.checks.measurement import Comparison, grade
from usd_repair_verifier.checks.registry import FAMILIES, measure
from usd_repair_verifier.authoring.inject import inject, root_layer_of
from usd_repair_verifier.profiles.vocabulary import DEFAULT_SAMPLING, DEFAULT_TOLERANCES
from usd_repair_verifier.stage_snapshot.correspondence import correspond
from usd_repair_verifier.stage_snapshot.read import read_snapshot
from tests import variants

ASSETS = Path(__file__).resolve().parent.parent / "fixtures" / "assets"
ALL_ASSETS = sorted(p.name for p in ASSETS.iterdir() if p.is_dir())


def snapshot(package: Path):
    return read_snapshot(root_layer_of(package), DEFAULT_SAMPLING)


def compare(reference: Path, candidate: Path) -> Comparison:
    a, b = snapshot(reference), snapshot(candidate)
    return Comparison(a, b, correspond(a, b), dict(DEFAULT_TOLERANCES))


def failures(cmp: Comparison, family: str) -> list[str]:
    module = FAMILIES[family]
    found = []
    for name in module.MEASURES:
        for target in module.targets(cmp.reference, name):
            m = measure(cmp, family, name, target)
            if m.passed is False:
                found.append(f"{name} {target}: {m.details}")
    return found


@pytest.mark.parametrize("asset", ALL_ASSETS)
@pytest.mark.parametrize("family", ["geometry", "collision"])
def test_reference_against_itself_and_its_flattening_passes(asset, family, tmp_path):
    assert failures(compare(ASSETS / asset, ASSETS / asset), family) == []
    flat = variants.flatten(ASSETS / asset, tmp_path / "flat")
    assert failures(compare(ASSETS / asset, flat), family) == []


FAULTS = [
    # asset, kind, target, (family, measure) that must fail, (family, measure) that must pass
    ("ant", "component_moved", "/ant/Geometry/torso/front_left_leg/aux_1_geom", ("geometry", "placement"), ("geometry", "shape")),
    ("ant", "component_reshaped", "/ant/Geometry/torso/front_left_leg/aux_1_geom", ("geometry", "shape"), None),
    ("cabinet_cm", "component_moved", "/Cabinet/Drawer/Handle", ("geometry", "placement"), ("geometry", "shape")),
    ("cabinet_cm", "component_reshaped", "/Cabinet/Door/Visuals/Panel", ("geometry", "shape"), None),
    ("ant", "collision_removed", "/ant/Geometry/torso/front_left_leg", ("collision", "coverage"), ("collision", "free_space")),
    ("hopper", "collision_disabled", "/hopper/Geometry/torso/thigh", ("collision", "coverage"), None),
    ("cabinet_cm", "collider_shrunk", "/Cabinet/Door", ("collision", "coverage"), ("collision", "free_space")),
    ("cabinet_cm", "collision_over_approximated", "/Cabinet/Door", ("collision", "free_space"), ("collision", "coverage")),
    ("gripper_m", "collision_over_approximated", "/Gripper/Palm/FingerLeft", ("collision", "free_space"), ("collision", "coverage")),
]


@pytest.mark.parametrize("asset, kind, target, broken, intact", FAULTS, ids=[f"{f[0]}-{f[1]}" for f in FAULTS])
def test_fault_fails_its_check_and_not_the_other(asset, kind, target, broken, intact, tmp_path, seed=3):
    inject(ASSETS / asset, tmp_path / "input", [(kind, target)], seed)
    cmp = compare(ASSETS / asset, tmp_path / "input")
    bad = measure(cmp, *broken, target)
    assert bad.passed is False, bad.details
    if intact:
        good = measure(cmp, *intact, target)
        assert good.passed is True, good.details
    # Nothing else in the asset broke: every other component/body still passes.
    family = broken[0]
    others = [f for f in failures(cmp, family) if target not in f]
    assert others == []


def test_moved_part_halfway_back_earns_partial_progress(tmp_path):
    target = "/Cabinet/Drawer/Handle"
    inject(ASSETS / "cabinet_cm", tmp_path / "input", [("component_moved", target)], 0)
    stage = Usd.Stage.Open(str(root_layer_of(tmp_path / "input")))
    # The fault is composed into the handle's own translate op (an input names nothing its reference lacks).
    ref_stage = Usd.Stage.Open(str(root_layer_of(ASSETS / "cabinet_cm")))
    ref_attr = ref_stage.GetPrimAtPath(target).GetAttribute("xformOp:translate")
    ref_value = ref_attr.Get() if ref_attr and ref_attr.Get() is not None else Gf.Vec3d(0, 0, 0)
    op = stage.GetPrimAtPath(target).GetAttribute("xformOp:translate")
    assert op and op.Get() != ref_value, "seed 0 must translate the handle"
    cmp_input = compare(ASSETS / "cabinet_cm", tmp_path / "input")
    input_errors = {k: c.error for k, c in FAMILIES["geometry"].MEASURES["placement"](cmp_input, target).items()}
    half = variants.copy_package(tmp_path / "input", tmp_path / "half")
    layer_stage = Usd.Stage.Open(str(root_layer_of(half)))
    attr = layer_stage.GetPrimAtPath(target).GetAttribute("xformOp:translate")
    spec = attr.GetPropertyStack()[0]
    spec.default = Gf.Vec3d(*(r + 0.5 * (c - r) for r, c in zip(ref_value, attr.Get())))
    spec.layer.Save()
    cmp = compare(ASSETS / "cabinet_cm", half)
    m = grade("c", "geometry", "placement", target, FAMILIES["geometry"].MEASURES["placement"](cmp, target), input_errors)
    assert m.passed is False
    assert 0.4 < m.progress < 0.6


def test_another_decomposition_that_covers_the_same_shape_passes(tmp_path):
    """Replace the door's panel box collider by two half boxes: same covered volume."""
    candidate = variants.flatten(ASSETS / "cabinet_cm", tmp_path / "split")
    root = root_layer_of(candidate)
    stage = Usd.Stage.Open(str(root))
    panel = UsdGeom.Cube(stage.GetPrimAtPath("/Cabinet/Door/Colliders/Panel"))
    xform = UsdGeom.Xformable(panel)
    local = xform.GetLocalTransformation()
    size = panel.GetSizeAttr().Get()
    scale = Gf.Vec3d(*(Gf.Vec3d(local.GetRow3(i)).GetLength() for i in range(3)))
    longest = max(range(3), key=lambda i: scale[i])
    parent = stage.GetPrimAtPath("/Cabinet/Door/Colliders")
    for sign, name in ((-1, "PanelA"), (1, "PanelB")):
        half = UsdGeom.Cube.Define(stage, parent.GetPath().AppendChild(name))
        half.GetSizeAttr().Set(size)
        half.GetPurposeAttr().Set(panel.GetPurposeAttr().Get())
        offset = Gf.Vec3d(0, 0, 0)
        offset[longest] = sign * 0.25 * size
        shifted = Gf.Matrix4d().SetTranslate(offset)
        half_scale = Gf.Vec3d(1, 1, 1)
        half_scale[longest] = 0.5
        UsdGeom.Xformable(half).AddTransformOp().Set(Gf.Matrix4d().SetScale(half_scale) * shifted * local)
        UsdPhysics.CollisionAPI.Apply(half.GetPrim())
    stage.RemovePrim(panel.GetPath())
    stage.GetRootLayer().Save()
    cmp = compare(ASSETS / "cabinet_cm", candidate)
    assert len(cmp.candidate.body_colliders(cmp.match.bodies["/Cabinet/Door"])) == 3
    assert measure(cmp, "collision", "coverage", "/Cabinet/Door").passed is True
    assert measure(cmp, "collision", "free_space", "/Cabinet/Door").passed is True


def test_hidden_healthy_part_is_unmatched(tmp_path):
    candidate = variants.copy_package(ASSETS / "cabinet_cm", tmp_path / "hidden")
    stage = Usd.Stage.Open(str(root_layer_of(candidate)))
    prim = stage.GetPrimAtPath("/Cabinet/Door/Knob")
    UsdGeom.Imageable(prim).MakeInvisible()
    stage.GetRootLayer().Save()
    cmp = compare(ASSETS / "cabinet_cm", candidate)
    assert cmp.match.components["/Cabinet/Door/Knob"] is None
    assert measure(cmp, "geometry", "shape", "/Cabinet/Door/Knob").passed is False


def _retriangulate(prim_path: str, package: Path) -> None:
    """Same surface, other triangles: every quad's fan starts at its next vertex."""
    root = root_layer_of(package)
    stage = Usd.Stage.Open(str(root))
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath(prim_path))
    counts = list(mesh.GetFaceVertexCountsAttr().Get())
    indices = list(mesh.GetFaceVertexIndicesAttr().Get())
    rotated, start = [], 0
    for n in counts:
        face = indices[start:start + n]
        rotated += face[1:] + face[:1]
        start += n
    assert rotated != indices
    mesh.GetFaceVertexIndicesAttr().Set(rotated)
    stage.GetRootLayer().Save()


def test_another_triangulation_of_the_same_surface_is_the_same_shape(tmp_path):
    candidate = variants.flatten(ASSETS / "cabinet_cm", tmp_path / "retri")
    for path in ("/Cabinet/Door/Visuals/Panel", "/Cabinet/Drawer/Visuals/Front", "/Cabinet/Drawer/Handle"):
        _retriangulate(path, candidate)
    cmp = compare(ASSETS / "cabinet_cm", candidate)
    assert failures(cmp, "geometry") == []
    assert failures(cmp, "collision") == []


def test_reshaped_part_still_fails_when_triangulated_differently(tmp_path):
    candidate = variants.flatten(ASSETS / "cabinet_cm", tmp_path / "retri")
    _retriangulate("/Cabinet/Door/Visuals/Panel", candidate)
    stage = Usd.Stage.Open(str(root_layer_of(candidate)))
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/Cabinet/Door/Visuals/Panel"))
    points = mesh.GetPointsAttr().Get()
    mesh.GetPointsAttr().Set([Gf.Vec3f(p[0], p[1], p[2] * 1.3) for p in points])
    stage.GetRootLayer().Save()
    cmp = compare(ASSETS / "cabinet_cm", candidate)
    assert measure(cmp, "geometry", "shape", "/Cabinet/Door/Visuals/Panel").passed is False
