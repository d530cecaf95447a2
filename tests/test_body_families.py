"""The mass, material and composition check families, and their fault injectors.

Every measure is run through its module's MEASURES on a Comparison built the
way the session builds it (read_snapshot + correspond): the reference against
itself passes everywhere, each injected fault fails the checks its kind selects
and nothing unrelated, partial repairs earn progress strictly between 0 and 1,
and equivalent layouts (renamed namespace, flattened) pass.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from pathlib import Path

import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usd_repair_verifier.checks import composition as composition_family
from usd_repair_verifier.checks import mass as mass_family
from usd_repair_verifier.checks import materials as material_family
from usd_repair_verifier.checks.measurement import MAX_LOG_RATIO, Comparison, grade
from usd_repair_verifier.authoring.inject import INJECTORS, InjectionError, inject, root_layer_of
from usd_repair_verifier.profiles.vocabulary import DEFAULT_TOLERANCES, FAULT_KINDS
from usd_repair_verifier.stage_snapshot.correspondence import correspond
from usd_repair_verifier.stage_snapshot.read import read_snapshot
from tests import variants

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "fixtures" / "assets"
ASSET_NAMES = sorted(p.name for p in ASSETS.iterdir() if p.is_dir())
SAMPLING = {"seed": 0}
SEED = 7

NEW_KINDS = ["mass_unit_factor", "density_misplaced", "inertia_invalid", "center_of_mass_moved",
             "visual_material", "physics_material", "broken_asset_path"]
TOLERANCES = dict(DEFAULT_TOLERANCES)
FAMILIES = {"mass": mass_family, "material": material_family, "composition": composition_family}


# --------------------------------------------------------------------------- helpers


@functools.lru_cache(maxsize=None)
def reference(asset: str):
    return read_snapshot(root_layer_of(ASSETS / asset), SAMPLING)


def snap(package: Path):
    return read_snapshot(root_layer_of(package), SAMPLING)


def compare(ref, cand) -> Comparison:
    return Comparison(ref, cand, correspond(ref, cand), TOLERANCES)


def run(cmp: Comparison, family: str, measure: str, target: str, input_errors=None):
    result = FAMILIES[family].MEASURES[measure](cmp, target)
    return grade(f"{family}.{measure}:{target}", family, measure, target, result, input_errors)


def run_all(cmp: Comparison) -> dict:
    return {
        (family, measure, target): run(cmp, family, measure, target)
        for family, module in FAMILIES.items()
        for measure in module.MEASURES
        for target in module.targets(cmp.reference, measure)
    }


def input_errors(cmp: Comparison, family: str, measure: str, target: str) -> dict:
    result = FAMILIES[family].MEASURES[measure](cmp, target)
    assert isinstance(result, dict), result
    return {name: c.error for name, c in result.items()}


def unestablished(ref, measure: str, target: str) -> bool:
    props = ref.mass.get(target)
    # the inertia's orientation is established with the inertia
    return props is None or not props.established[{"inertia_orientation": "inertia"}.get(measure, measure)]


def assert_all_pass(cmp: Comparison, allowed=lambda key: False):
    """Every measure passes, except the allowed; unmeasured only where the reference establishes nothing."""
    results = run_all(cmp)
    assert results
    bad = []
    for key, m in results.items():
        family, measure, target = key
        if m.passed is None:
            if not (family == "mass" and unestablished(cmp.reference, measure, target)):
                bad.append(f"{key} unmeasured: {m.details}")
        elif not m.passed and not allowed(key):
            bad.append(f"{key}: {m.details}")
    assert not bad, "\n".join(bad)
    return results


def break_package(asset: str, faults: list[tuple[str, str]], out: Path, seed: int = SEED):
    return inject(ASSETS / asset, out, faults, seed)


def strongest_spec(stage: Usd.Stage, prim_path: str, name: str) -> Sdf.AttributeSpec:
    return stage.GetPrimAtPath(prim_path).GetAttribute(name).GetPropertyStack()[0]


def author(package: Path, prim_path: str, name: str, value, type_name=Sdf.ValueTypeNames.Float) -> None:
    """Set an attribute where it is the effective opinion (its strongest spec, else the root layer)."""
    stage = Usd.Stage.Open(str(root_layer_of(package)), Usd.Stage.LoadAll)
    attr = stage.GetPrimAtPath(prim_path).GetAttribute(name)
    stack = attr.GetPropertyStack() if attr else []
    if stack:
        stack[0].default = value
        stack[0].layer.Save()
        return
    layer = stage.GetRootLayer()
    spec = Sdf.CreatePrimInLayer(layer, prim_path)
    Sdf.AttributeSpec(spec, name, type_name).default = value
    layer.Save()


# --------------------------------------------------------------------------- targets


def test_targets():
    ref = reference("cabinet_cm")
    assert mass_family.targets(ref) == list(ref.bodies)
    assert material_family.targets(ref) == list(ref.components)
    assert material_family.targets(ref, "visual") == list(ref.components)
    assert material_family.targets(ref, "physics") == material_family.physics_targets(ref)
    assert set(material_family.physics_targets(ref)) == {c.body for c in ref.colliders.values()}
    assert composition_family.targets(ref) == ["*"]
    reacher = reference("reacher")  # its target body has no collider: no physics target
    assert "/reacher/Geometry/target" in reacher.bodies
    assert "/reacher/Geometry/target" not in material_family.physics_targets(reacher)


# --------------------------------------------------------------------------- the reference


@pytest.mark.parametrize("asset", ASSET_NAMES)
def test_reference_against_itself_passes(asset):
    ref = reference(asset)
    again = snap(ASSETS / asset)  # a second read: nothing depends on object identity
    results = assert_all_pass(compare(ref, again))
    measured = [k for k, m in results.items() if m.passed]
    assert {k[0] for k in measured} >= {"material", "composition"}
    assert len([k for k in results if k[:2] == ("material", "visual")]) == len(ref.components)


def test_unestablished_mass_is_unmeasured():
    ref = reference("cabinet_cm")
    cmp = compare(ref, ref)
    for measure in mass_family.MEASURES:
        carcass = run(cmp, "mass", measure, "/Cabinet/Carcass", input_errors={})
        assert carcass.passed is None and carcass.progress is None
        assert "does not establish" in carcass.details and "default density" in carcass.details
        for body in ("/Cabinet/Drawer", "/Cabinet/Door"):
            assert run(cmp, "mass", measure, body).passed is True


def test_unmatched_candidates_are_at_the_cap():
    ref = reference("ant")
    cmp = compare(ref, ref)
    body = "/ant/Geometry/torso/front_left_leg/aux_1"
    lost = dataclasses.replace(
        cmp.match,
        bodies={**cmp.match.bodies, body: None},
        components={k: None for k in cmp.match.components},
        colliders={k: None for k in cmp.match.colliders},
    )
    broken = Comparison(ref, ref, lost, TOLERANCES)
    assert mass_family.mass(broken, body)["mass"].error == MAX_LOG_RATIO
    assert mass_family.center_of_mass(broken, body)["offset_m"].error == math.inf
    assert mass_family.inertia(broken, body)["principal_inertia"].error == MAX_LOG_RATIO
    component = next(iter(ref.components))
    assert material_family.visual(broken, component) == {"matched": material_family.boolean(False, component, None)}
    physics = material_family.physics(broken, body)
    assert physics["physics.bound"].error == 1.0
    # Other bodies lost their collider match but kept their body: the nearest collider stands in.
    other = "/ant/Geometry/torso/back_leg"
    assert all(c.error <= c.tolerance for c in material_family.physics(broken, other).values())


def test_physics_compares_a_redecomposed_collider_with_the_nearest():
    """A candidate whose colliders were split: the direct match is None, the nearest candidate collider stands in."""
    ref = reference("cabinet_cm")
    cmp = compare(ref, ref)
    body = "/Cabinet/Drawer"
    keep = "/Cabinet/Drawer/Colliders/Bottom"
    cand_colliders = {p: c for p, c in ref.colliders.items() if c.body != body or p == keep}
    cand = dataclasses.replace(ref, colliders=cand_colliders)
    match = dataclasses.replace(cmp.match, colliders={
        k: (v if v in cand_colliders else None) for k, v in cmp.match.colliders.items()})
    result = material_family.physics(Comparison(ref, cand, match, TOLERANCES), body)
    assert all(c.error <= c.tolerance for c in result.values()), result
    # ... and a body whose candidate has no collider left at all is unbound.
    bare = dataclasses.replace(ref, colliders={p: c for p, c in ref.colliders.items() if c.body != body})
    match = dataclasses.replace(cmp.match, colliders={
        k: (v if v in bare.colliders else None) for k, v in cmp.match.colliders.items()})
    result = material_family.physics(Comparison(ref, bare, match, TOLERANCES), body)
    assert result["physics.bound"].error == 1.0


def test_a_zero_or_negative_moment_fails():
    ref = reference("hopper")
    body = "/hopper/Geometry/torso/thigh"
    props = ref.mass[body]
    for moments in [(0.0,) + props.principal_inertia[1:], (-1.0,) + props.principal_inertia[1:]]:
        bad = dataclasses.replace(ref, mass={**ref.mass, body: dataclasses.replace(props, principal_inertia=moments)})
        result = mass_family.inertia(compare(ref, bad), body)
        assert result["principal_inertia"].error == MAX_LOG_RATIO


def test_composition_counts_only_errors_beyond_the_reference():
    ref = reference("ant")
    cmp = compare(ref, dataclasses.replace(ref, composition_errors=("a", "b")))
    errors = composition_family.errors(cmp, "*")["errors"]
    assert errors.error == 2.0 and errors.tolerance == 0.0
    worse_ref = dataclasses.replace(ref, composition_errors=("x",))
    cmp = Comparison(worse_ref, dataclasses.replace(ref, composition_errors=("a",)), cmp.match, TOLERANCES)
    assert composition_family.errors(cmp, "*")["errors"].error == 0.0


# --------------------------------------------------------------------------- injected faults

ANT_LEG = "/ant/Geometry/torso/front_left_leg"
FAULT_CASES = [
    # (asset, kind, target, collateral measures allowed to fail on the target besides the kind's checks)
    ("ant", "mass_unit_factor", "/ant/Geometry/torso", ()),                      # collider density
    ("cabinet_cm", "mass_unit_factor", "/Cabinet/Drawer", ()),                   # body mass, material densities
    ("cabinet_cm", "mass_unit_factor", "/Cabinet/Door", ()),                     # two collider densities
    ("cartpole", "mass_unit_factor", "/tn__cartpole_bC/Geometry/cart/pole_1", ()),  # collider mass
    ("finger", "mass_unit_factor", "/finger/Geometry/proximal/distal", ()),      # body mass + authored inertia
    ("ant", "density_misplaced", "/ant/Geometry/torso", ("inertia", "inertia_orientation")),
    ("cabinet_cm", "density_misplaced", "/Cabinet/Door", ("center_of_mass", "inertia", "inertia_orientation")),
    ("hopper", "inertia_invalid", "/hopper/Geometry/torso/thigh", ("inertia_orientation",)),
    ("reacher", "inertia_invalid", "/reacher/Geometry/target", ("inertia_orientation",)),  # no collider
    ("cheetah", "center_of_mass_moved", "/cheetah/Geometry/torso/bthigh", ("inertia", "inertia_orientation")),  # parallel axis
    ("cabinet_cm", "center_of_mass_moved", "/Cabinet/Drawer", ("inertia", "inertia_orientation")),
    ("finger", "center_of_mass_moved", "/finger/Geometry/proximal/distal", ()),  # authored inertia stays
    ("cabinet_cm", "visual_material", "/Cabinet/Drawer/Visuals/Front", ()),
    ("ant", "visual_material", "/ant/Geometry/torso/torso_geom", ()),            # display colour -> a material
    ("ball_in_cup", "visual_material", "/tn__ballincup_j97/Geometry/cup/cup_part_0", ()),
    ("inverted_double_pendulum", "visual_material", "/cartpole/Geometry/cart/cart", ()),  # no material at all
    ("ant", "physics_material", ANT_LEG, ()),                                    # shared: copied
    ("cabinet_cm", "physics_material", "/Cabinet/Carcass", ()),                  # unshared: in place
    ("gripper_m", "physics_material", "/Gripper/Palm", ()),
    ("ant", "broken_asset_path", "*", ()),
    ("hopper", "broken_asset_path", "*", ()),
]


@pytest.mark.parametrize("asset,kind,target,collateral", FAULT_CASES,
                         ids=[f"{a}-{k}-{t.rsplit('/', 1)[-1] or t}" for a, k, t, _ in FAULT_CASES])
def test_fault_fails_its_checks_and_nothing_unrelated(asset, kind, target, collateral, tmp_path):
    done = break_package(asset, [(kind, target)], tmp_path / "input")
    assert done[0].note
    ref = reference(asset)
    cmp = compare(ref, snap(tmp_path / "input"))
    wanted = {(family, measure, target) for family, measure in FAULT_KINDS[kind].checks}
    for family, measure, t in wanted:
        m = run(cmp, family, measure, t)
        assert m.passed is False, f"{kind} on {t}: {family}.{measure} passes ({done[0].note})"
    allowed = wanted | {("mass", measure, target) for measure in collateral}
    assert_all_pass(cmp, allowed=lambda key: key in allowed)


def test_broken_asset_path_on_a_package_whose_arcs_all_carry_the_asset(tmp_path):
    """The cabinet's only arcs bring in its geometry or its physics: the least damaging is still a composition error."""
    done = break_package("cabinet_cm", [("broken_asset_path", "*")], tmp_path / "input")
    assert "-> @./layers/layers/" in done[0].note  # a path to nothing, made of the arc's own words
    cmp = compare(reference("cabinet_cm"), snap(tmp_path / "input"))
    assert run(cmp, "composition", "errors", "*").passed is False


def test_injection_refuses_what_the_checks_could_not_measure(tmp_path):
    for kind in ("mass_unit_factor", "center_of_mass_moved", "inertia_invalid", "density_misplaced"):
        with pytest.raises(InjectionError, match="does not establish"):
            break_package("cabinet_cm", [(kind, "/Cabinet/Carcass")], tmp_path / kind)
    with pytest.raises(InjectionError, match="body mass"):  # its body mass controls: a density changes nothing
        break_package("cabinet_cm", [("density_misplaced", "/Cabinet/Drawer")], tmp_path / "drawer")
    with pytest.raises(InjectionError, match="not a rigid body"):
        break_package("ant", [("physics_material", "/ant/Geometry/floor")], tmp_path / "floor")


def test_density_misplaced_scales_when_moving_alone_changes_nothing(tmp_path):
    done = break_package("hopper", [("density_misplaced", "/hopper/Geometry/torso/thigh")], tmp_path / "input")
    assert "x10" in done[0].note  # one collider: its density on the body gives the same mass
    stage = Usd.Stage.Open(str(root_layer_of(tmp_path / "input")))
    body = stage.GetPrimAtPath("/hopper/Geometry/torso/thigh")
    assert body.HasAPI(UsdPhysics.MassAPI) and body.GetAttribute("physics:density").Get() > 0
    collider = stage.GetPrimAtPath("/hopper/Geometry/torso/thigh/thigh_geom")
    assert not collider.GetAttribute("physics:density").HasAuthoredValue()  # blocked


def test_physics_material_keeps_healthy_bodies_materials(tmp_path):
    break_package("ant", [("physics_material", ANT_LEG)], tmp_path / "input")
    stage = Usd.Stage.Open(str(root_layer_of(tmp_path / "input")))
    shared = stage.GetPrimAtPath("/ant/Physics/PhysicsMaterial")
    ref_stage = Usd.Stage.Open(str(root_layer_of(ASSETS / "ant")))
    ref_shared = ref_stage.GetPrimAtPath("/ant/Physics/PhysicsMaterial")
    for name in ("physics:staticFriction", "physics:dynamicFriction", "physics:restitution"):
        assert shared.GetAttribute(name).Get() == ref_shared.GetAttribute(name).Get()


@pytest.mark.parametrize("kind,target", [("broken_asset_path", "*"), ("physics_material", ANT_LEG),
                                         ("visual_material", "/ant/Geometry/torso/torso_geom")])
def test_injection_is_deterministic(kind, target, tmp_path):
    break_package("ant", [(kind, target)], tmp_path / "a")
    break_package("ant", [(kind, target)], tmp_path / "b")
    for path in sorted((tmp_path / "a").rglob("*")):
        if path.is_file():
            assert path.read_bytes() == (tmp_path / "b" / path.relative_to(tmp_path / "a")).read_bytes(), path


def test_new_kinds_have_injectors():
    assert set(NEW_KINDS) <= set(INJECTORS)


# --------------------------------------------------------------------------- partial repairs


def graded(cmp: Comparison, family: str, measure: str, target: str, before: dict):
    return run(cmp, family, measure, target, input_errors=before)


def test_partial_mass_unit_repair_earns_partial_progress(tmp_path):
    asset, body = "cabinet_cm", "/Cabinet/Drawer"
    break_package(asset, [("mass_unit_factor", body)], tmp_path / "input")
    ref = reference(asset)
    before = {m: input_errors(compare(ref, snap(tmp_path / "input")), "mass", m, body) for m in ("mass", "inertia")}
    partial = variants.copy_package(tmp_path / "input", tmp_path / "partial")
    author(partial, body, "physics:mass", 35.0)  # 3500 -> 35: a factor 10 left of the 1000
    cmp = compare(ref, snap(partial))
    for measure in ("mass", "inertia"):
        m = graded(cmp, "mass", measure, body, before[measure])
        assert m.passed is False and 0.0 < m.progress < 1.0, m
        assert m.progress == pytest.approx((math.log(1000) - math.log(10)) / (math.log(1000) - m.components[
            next(iter(m.components))].tolerance), rel=1e-3)
    fixed = variants.copy_package(tmp_path / "input", tmp_path / "fixed")
    author(fixed, body, "physics:mass", 3.5)
    cmp = compare(ref, snap(fixed))
    for measure in ("mass", "inertia"):
        m = graded(cmp, "mass", measure, body, before[measure])
        assert m.passed is True and m.progress == 1.0
    unchanged = graded(compare(ref, snap(tmp_path / "input")), "mass", "mass", body, before["mass"])
    assert unchanged.passed is False and unchanged.progress == 0.0


def test_partial_center_of_mass_repair(tmp_path):
    asset, body = "cheetah", "/cheetah/Geometry/torso/bthigh"
    break_package(asset, [("center_of_mass_moved", body)], tmp_path / "input")
    ref = reference(asset)
    before = input_errors(compare(ref, snap(tmp_path / "input")), "mass", "center_of_mass", body)
    # Halfway back: the authored local centre of mass between the broken one and the reference's.
    stage = Usd.Stage.Open(str(root_layer_of(tmp_path / "input")))
    prim = stage.GetPrimAtPath(body)
    broken = Gf.Vec3d(prim.GetAttribute("physics:centerOfMass").Get())
    world = UsdGeom.XformCache().GetLocalToWorldTransform(prim)
    wanted = world.GetInverse().Transform(Gf.Vec3d(*ref.mass[body].center_of_mass))  # metres per unit is 1
    del stage
    partial = variants.copy_package(tmp_path / "input", tmp_path / "partial")
    author(partial, body, "physics:centerOfMass", Gf.Vec3f((broken + wanted) / 2), Sdf.ValueTypeNames.Point3f)
    m = graded(compare(ref, snap(partial)), "mass", "center_of_mass", body, before)
    assert m.passed is False and m.progress == pytest.approx(0.5, abs=0.02)


def test_partial_inertia_repair(tmp_path):
    asset, body = "hopper", "/hopper/Geometry/torso/thigh"
    break_package(asset, [("inertia_invalid", body)], tmp_path / "input")
    ref = reference(asset)
    before = input_errors(compare(ref, snap(tmp_path / "input")), "mass", "inertia", body)
    assert before["principal_inertia"] == MAX_LOG_RATIO
    partial = variants.copy_package(tmp_path / "input", tmp_path / "partial")
    moments = [1.5 * c for c in ref.mass[body].principal_inertia]  # positive, 50% too large (kg m^2, mpu 1)
    author(partial, body, "physics:diagonalInertia", Gf.Vec3f(*moments), Sdf.ValueTypeNames.Float3)
    m = graded(compare(ref, snap(partial)), "mass", "inertia", body, before)
    assert m.passed is False and 0.0 < m.progress < 1.0
    assert m.components["principal_inertia"].error == pytest.approx(math.log(1.5), rel=1e-4)


def test_partial_physics_material_repair(tmp_path):
    break_package("ant", [("physics_material", ANT_LEG)], tmp_path / "input")
    ref = reference("ant")
    before = input_errors(compare(ref, snap(tmp_path / "input")), "material", "physics", ANT_LEG)
    assert before["physics.restitution"] == pytest.approx(0.9)
    copy = "/ant/Physics/PhysicsMaterial_front_left_leg"
    partial = variants.copy_package(tmp_path / "input", tmp_path / "partial")
    author(partial, copy, "physics:restitution", 0.45)
    m = graded(compare(ref, snap(partial)), "material", "physics", ANT_LEG, before)
    assert m.passed is False and m.progress == pytest.approx((0.9 - 0.45) / (0.9 - 0.01), rel=1e-3)


def test_partial_visual_material_repair(tmp_path):
    asset, knob = "cabinet_cm", "/Cabinet/Door/Knob"
    done = break_package(asset, [("visual_material", knob)], tmp_path / "input", seed=3)
    assert "emptied" in done[0].note
    ref = reference(asset)
    before = input_errors(compare(ref, snap(tmp_path / "input")), "material", "visual", knob)
    # Bound again, but to the laminate rather than the brushed steel: the shader is right, the look is not.
    partial = variants.copy_package(tmp_path / "input", tmp_path / "partial")
    stage = Usd.Stage.Open(str(root_layer_of(partial)))
    rel = stage.GetPrimAtPath(knob).GetRelationship("material:binding")
    spec = rel.GetPropertyStack()[0]
    spec.targetPathList.explicitItems = ["/Cabinet/Looks/WhiteLaminate"]
    spec.layer.Save()
    del stage
    m = graded(compare(ref, snap(partial)), "material", "visual", knob, before)
    assert m.passed is False and 0.0 < m.progress < 1.0
    assert m.components["visual.shader"].passed and not m.components["visual.metallic"].passed


def test_partial_composition_repair(tmp_path):
    faults = [("broken_asset_path", "*"), ("broken_asset_path", "*")]
    done = break_package("ant", faults, tmp_path / "input")
    assert done[0].note != done[1].note
    ref = reference("ant")
    before = input_errors(compare(ref, snap(tmp_path / "input")), "composition", "errors", "*")
    assert before == {"errors": 2.0}
    break_package("ant", faults[:1], tmp_path / "partial")  # the second arc repaired
    m = graded(compare(ref, snap(tmp_path / "partial")), "composition", "errors", "*", before)
    assert m.passed is False and m.progress == pytest.approx(0.5)
    m = graded(compare(ref, ref), "composition", "errors", "*", before)
    assert m.passed is True and m.progress == 1.0


# --------------------------------------------------------------------------- equivalent layouts

RENAMES = {
    "ant": {"ant": "robot", "torso": "trunk", "front_left_leg": "leg_a", "hip_1": "hip_a",
            "PhysicsMaterial": "Grip", "Materials": "Looks"},
    "cabinet_cm": {"Cabinet": "Kitchen", "Drawer": "Box", "DoorHinge": "Hinge1", "Joints": "Constraints",
                   "Looks": "Shading", "WoodTextured": "Oak", "PhysicsMaterials": "Contact"},
    "gripper_m": {"Gripper": "Hand", "Palm": "Body", "Looks": "Shading"},
}


@pytest.mark.parametrize("asset", sorted(RENAMES))
def test_renamed_namespace_passes(asset, tmp_path):
    renamed = variants.rename_namespace(ASSETS / asset, tmp_path / "renamed", RENAMES[asset])
    stage = Usd.Stage.Open(str(root_layer_of(renamed)))
    names = {p.GetName() for p in stage.Traverse()}
    assert set(RENAMES[asset].values()) <= names
    assert_all_pass(compare(reference(asset), snap(renamed)))


@pytest.mark.parametrize("asset", ["ant", "cabinet_cm", "ball_in_cup", "gripper_m"])
def test_flattened_passes(asset, tmp_path):
    flat = variants.flatten(ASSETS / asset, tmp_path / "flat")
    assert len(list(flat.glob("*.usd*"))) == 1
    assert_all_pass(compare(reference(asset), snap(flat)))


def test_physics_material_moved_into_another_layer_passes(tmp_path):
    """The same friction authored on a differently named material in a new sublayer: not a fault."""
    package = variants.copy_package(ASSETS / "cabinet_cm", tmp_path / "pkg")
    stage = Usd.Stage.Open(str(root_layer_of(package)))
    layer = Sdf.Layer.CreateNew(str(package / "layers" / "contact.usda"))
    for name in ("Laminate",):
        src = stage.GetPrimAtPath(f"/Cabinet/PhysicsMaterials/{name}")
        spec = Sdf.CreatePrimInLayer(layer, f"/Cabinet/Contact/{name}Copy")
        spec.specifier, spec.typeName = Sdf.SpecifierDef, "Material"
        spec.SetInfo("apiSchemas", Sdf.TokenListOp.Create(prependedItems=["PhysicsMaterialAPI"]))
        for attr in src.GetAttributes():
            if attr.HasAuthoredValue():
                Sdf.AttributeSpec(spec, attr.GetName(), attr.GetTypeName()).default = attr.Get()
    for collider in stage.GetPrimAtPath("/Cabinet/Carcass/Colliders").GetChildren():
        over = Sdf.CreatePrimInLayer(layer, collider.GetPath())
        rel = Sdf.RelationshipSpec(over, "material:binding:physics")
        rel.targetPathList.explicitItems = ["/Cabinet/Contact/LaminateCopy"]
    layer.Save()
    root = Sdf.Layer.FindOrOpen(str(root_layer_of(package)))
    root.subLayerPaths.insert(0, "./layers/contact.usda")
    root.Save()
    cand = snap(package)
    assert {c.material.path for c in cand.colliders.values() if c.body == "/Cabinet/Carcass"} == {
        "/Cabinet/Contact/LaminateCopy"}
    assert_all_pass(compare(reference("cabinet_cm"), cand))
