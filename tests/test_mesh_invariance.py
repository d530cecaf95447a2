"""Generated meshes: the same surface written another way grades as the reference, a healthy
collider that changes does not.

Two-body packages (tests/mesh_assets.py: a Base and a Link on a revolute joint, the Link's
visible part a 960-triangle ellipsoid or a sphere, its mass authored) in a case whose one fault
is the joint's limits. A candidate is the reference written another way (tests/mesh_variants.py)
or with one healthy collider changed; each is graded by the session in this process.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from usd_repair_verifier.authoring.freeze import build_profile, write_case
from usd_repair_verifier.authoring.inject import inject
from usd_repair_verifier.profiles.schema import Fault
from tests import mesh_assets, mesh_variants
from tests.grade_in_process import grade

JOINT = "/Robot/Joint"
LINK_PART = "/Robot/Link/Visual"


def make_case(reference: Path, out: Path) -> Path:
    """A case over `reference` whose fault is the joint's limits (not verified by a grade: the
    tests below grade the reference themselves)."""
    inject(reference, out / "input_src", [("joint_limits", JOINT)], seed=7)
    profile = build_profile("mesh", reference, out / "input_src", [Fault(id="f1", kind="joint_limits", target=JOINT)])
    write_case(out / "case", reference, out / "input_src", profile)
    return out / "case"


SHAPES = {
    "ellipsoid": lambda: mesh_assets.ellipsoid(),           # 16 x 8 x 4 cm, 960 triangles
    "sphere": lambda: mesh_assets.sphere(0.05),             # 5 cm: no preferred rotation
}


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    """shape -> (reference package, case); the references carry a sibling part (for merging), a
    hidden convex-hull mesh collider (for the explicit hull) and a box collider on the Link."""
    root = tmp_path_factory.mktemp("mesh")
    out = {}
    for name, make in SHAPES.items():
        pts, faces = make()
        ref = mesh_assets.two_body_package(root / name / "ref", pts, faces, sibling=True, extra_mesh_collider=True)
        out[name] = (ref, make_case(ref, root / name))
    return out


def test_the_repro_faces_in_reverse_order(packages, tmp_path):
    """A two-body asset whose moving link is the 16 x 8 x 4 cm ellipsoid with its faces in
    reverse order grades as the reference (it read 0.99, rotation 0.769 > 0.5)."""
    for shape in SHAPES:
        ref, case = packages[shape]
        pts, faces = SHAPES[shape]()
        cand = mesh_assets.two_body_package(tmp_path / shape, pts, faces[::-1], sibling=True,
                                            extra_mesh_collider=True)
        assert grade(case, ref).authored_usd == 1.0
        decision = grade(case, cand)
        assert decision.authored_usd == 1.0, decision.reasons


EQUIVALENTS = {
    "reordered": mesh_variants.reordered,
    "retriangulated": mesh_variants.retriangulated,
    "split": mesh_variants.split,
    "merged": mesh_variants.merged,
    "baked_scale": mesh_variants.baked_scale,
    "hull_mesh": mesh_variants.hull_mesh,
    "centimetres": mesh_variants.centimetres,
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_mesh_equivalents_grade_as_the_reference(shape, packages, tmp_path):
    ref, case = packages[shape]
    for name, make in EQUIVALENTS.items():
        decision = grade(case, make(ref, tmp_path / name))
        assert decision.authored_usd == 1.0, (name, decision.reasons)


def test_a_split_half_beside_a_sibling_with_its_very_surface(tmp_path):
    """Matching by what parts are, not by their size: the Link's ellipsoid has a red sibling made
    of its own second half (the size of either half of a split, lying on the ellipsoid, the same
    triangles as the split's second half). The ellipsoid split in two grades 1.0: its second half
    pairs with the sibling's triangles only once, and the split halves join the ellipsoid, not
    the red sibling whose surface they also lie on."""
    pts, faces = mesh_assets.ellipsoid()
    ref = mesh_assets.two_body_package(tmp_path / "ref", pts, faces)
    mesh_assets.add_part(ref, "/Robot/Link/Decal", pts, faces[len(faces) // 2:], color=(1.0, 0.0, 0.0))
    case = make_case(ref, tmp_path)
    assert grade(case, ref).authored_usd == 1.0
    decision = grade(case, mesh_variants.split(ref, tmp_path / "split"))
    assert decision.authored_usd == 1.0, decision.reasons


@pytest.fixture(scope="module")
def plates(tmp_path_factory):
    """(reference, case): two small red plates lying flat on the top face of the Link's grey box
    (every sample of each plate lies on the box too)."""
    root = tmp_path_factory.mktemp("plates")
    box_pts, quads = mesh_assets.box_mesh((0.2, 0.1, 0.04))
    ref = mesh_assets.two_body_package(root / "ref", box_pts, quads)
    top = 0.02
    for name, x in (("PlateA", -0.05), ("PlateB", 0.05)):
        plate = np.array([[x - 0.02, -0.02, top], [x + 0.02, -0.02, top], [x + 0.02, 0.02, top], [x - 0.02, 0.02, top]])
        mesh_assets.add_part(ref, f"/Robot/Link/{name}", plate, [(0, 1, 2, 3)], color=(1.0, 0.0, 0.0))
    case = make_case(ref, root)
    assert grade(case, ref).authored_usd == 1.0
    return ref, case


@pytest.mark.parametrize("variant", ["merged", "centimetres", "retriangulated"])
def test_plates_on_the_part_they_lie_flat_on(variant, plates, tmp_path):
    """The plates merged into one mesh, or everything in centimetres or another triangulation
    (no digest equal any more): 1.0. A merged plate joins the two plates, and a plate the same
    surface as a reference plate pairs with it, not with the box it also lies on."""
    ref, case = plates
    candidate = getattr(mesh_variants, variant)(ref, tmp_path / variant)
    if variant == "merged":
        from pxr import Usd

        assert not Usd.Stage.Open(str(candidate / "robot.usda")).GetPrimAtPath("/Robot/Link/PlateB").IsActive()
    decision = grade(case, candidate)
    assert decision.authored_usd == 1.0, decision.reasons


HOSTILES = ["grown", "moved", "approximation", "bounding_sphere"]


@pytest.mark.parametrize("how", HOSTILES)
def test_a_healthy_collider_changed_fails_preservation(how, packages, tmp_path):
    """The Link's box collider grown 1.5x (mass authored on the body, so nothing else moves: it
    graded 1.0), moved; the Base's hull mesh collider re-approximated to its bounding cube or
    replaced by its bounding sphere."""
    ref, case = packages["ellipsoid"]
    pick = (lambda found: next(p for p in found if p.GetName() == "Collider")) if how in ("grown", "moved") \
        else (lambda found: found[0])
    decision = grade(case, mesh_variants.collider_changed(ref, tmp_path / how, how, pick))
    assert decision.authored_usd == 0.0 and decision.preservation_pass is False, decision.reasons
    assert any("collision_support" in r for r in decision.reasons), decision.reasons


def _recolour(stage, path):
    from pxr import Gf, UsdGeom

    UsdGeom.Gprim(stage.GetPrimAtPath(path)).CreateDisplayColorAttr([Gf.Vec3f(1.0, 0.0, 0.0)])


def _shift(stage, path):
    from pxr import Gf, UsdGeom

    UsdGeom.Xformable(stage.GetPrimAtPath(path)).AddTranslateOp(opSuffix="off").Set(Gf.Vec3d(0.0, 0.0, 0.05))


@pytest.mark.parametrize("damage", ["recoloured half", "moved half", "duplicate"])
def test_a_split_or_duplicated_part_that_changes_the_look_fails(damage, packages, tmp_path):
    """Grouping split meshes is no loophole: a half that looks different, a half moved off the
    surface, or the part duplicated on top of itself (twice the area) still fail preservation."""
    from pxr import Sdf, Usd

    ref, case = packages["ellipsoid"]
    cand = mesh_variants.split(ref, tmp_path / "cand")
    stage = Usd.Stage.Open(str(cand / "robot.usda"))
    stage.SetEditTarget(Usd.EditTarget(Sdf.Layer.FindOrOpen(str(cand / "variant" / "edits.usdc"))))
    half = LINK_PART + "_part2"
    if damage == "recoloured half":
        _recolour(stage, half)
    elif damage == "moved half":
        _shift(stage, half)
    else:   # the whole part again, beside its two halves
        mesh_variants._copy_prim(stage, stage.GetPrimAtPath(LINK_PART), Sdf.Path("/Robot/Link/Copy"))
        mesh_variants._copy_prim(stage, stage.GetPrimAtPath(half), Sdf.Path("/Robot/Link/Copy2"))
    stage.GetEditTarget().GetLayer().Save()
    decision = grade(case, cand)
    assert decision.authored_usd == 0.0 and decision.preservation_pass is False, decision.reasons
