"""SimReady assets as published: physics behind per-engine variant sets, graded under the case's
selection (fixtures/simready/, built by fixtures/build_simready.py from the gripper fixtures).

Every grade here is the operator's session run by the warm grader (the re-grading engine), so
these also show that re-grading honours the selections.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fixtures.build_simready import CASE_ID, SELECTION, simready_package
from tests.grade_in_process import grade_warm
from usd_repair_verifier.authoring.inject import inject
from usd_repair_verifier.profiles.digest import tree_digest
from usd_repair_verifier.profiles.schema import load_profile

ROOT = Path(__file__).resolve().parent.parent
SIMREADY = ROOT / "fixtures" / "simready"
CASE = SIMREADY / "cases" / CASE_ID
STANDARD_CASE = ROOT / "fixtures" / "cases" / "gripper_missing_and_drive"
GRIPPER = ROOT / "fixtures" / "assets" / "gripper_m"
PHYSX, NEWTON = Path("runnables/physics/physx.usd"), Path("runnables/physics/newton.usd")
SEED = 7   # fixtures/build_cases.py: the seed the standard case's faults were injected with


def _copy(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    return dest


def _edited_reference(dest: Path, *replacements: tuple[str, str]) -> Path:
    """A copy of the reference with each (old, new) replaced in its root layer's text."""
    root = _copy(CASE / "reference", dest) / "gripper.usda"
    text = root.read_text()
    for old, new in replacements:
        text = text.replace(old, new)
    root.write_text(text)
    return dest


def _select(package: Path, **choices: str) -> Path:
    """Author the package's own selections in its root layer (what an agent may edit)."""
    root = package / "gripper.usda"
    text = root.read_text()
    for name, choice in choices.items():
        for old in ("Disabled", "Enabled"):
            text = text.replace(f'string {name} = "{old}"', f'string {name} = "{choice}"')
    root.write_text(text)
    return package


def test_the_case_records_its_selection():
    profile = load_profile(CASE / "profile.json")
    assert profile.variant_selections == SELECTION == {"/Gripper": {"PhysX": "Enabled"}}
    assert json.loads((CASE / "profile.json").read_text())["variant_selections"] == SELECTION
    # The published default: every engine Disabled in the package itself.
    text = (CASE / "reference" / "gripper.usda").read_text()
    assert text.count('= "Disabled"') == 3 and 'string PhysX = "Enabled"' not in text


def test_reference_scores_one_and_reports_its_selection(tmp_path):
    r = grade_warm(CASE, CASE / "reference", tmp_path / "out")
    g = r.grade
    assert r.reward == {"authored_usd": 1.0} and g["objective_success"] is True, g["reasons"]
    assert g["variant_selections"] == SELECTION
    assert "with the case's variant selections /Gripper:PhysX=Enabled" in g["validity"]["stage_reads"]["reason"]
    # Validity says which layers the selected variants compose and which sit apart.
    layers = g["validity"]["layers_parse"]["reason"]
    composed, apart = layers.split("; not composed")
    assert "runnables/physics/physx.usd" in composed and "newton.usd" not in composed
    assert "runnables/physics/newton.usd" in apart and "runnables/physics/mujoco.usd" in apart
    assert "variants      /Gripper:PhysX=Enabled" in r.stdout


def test_input_scores_zero(tmp_path):
    r = grade_warm(CASE, CASE / "input", tmp_path / "out")
    assert r.reward == {"authored_usd": 0.0} and r.grade["status"] == "graded"
    assert all(c["passed"] is False for c in r.grade["checks"])


def test_a_repair_only_in_an_unselected_variant_earns_nothing(tmp_path):
    candidate = _copy(CASE / "input", tmp_path / "candidate")
    shutil.copyfile(CASE / "reference" / NEWTON, candidate / NEWTON)   # Newton repaired, PhysX not
    r = grade_warm(CASE, candidate, tmp_path / "out")
    assert r.reward == {"authored_usd": 0.0}, r.grade["reasons"]
    assert all(c["passed"] is False for c in r.grade["checks"])


@pytest.mark.parametrize("repaired", [0, 1], ids=["f1", "f2"])
def test_a_partial_repair_in_the_selected_payload_scores_as_in_the_standard_layout(repaired, tmp_path):
    """The standard gripper with one fault left, graded against the standard case, and the
    SimReady input with only its PhysX payload rebuilt from that package: the same reward."""
    faults = load_profile(STANDARD_CASE / "profile.json").faults
    left = [(f.kind, f.target) for i, f in enumerate(faults) if i != repaired]
    standard = tmp_path / "standard"
    inject(GRIPPER, standard, left, SEED)
    flat = grade_warm(STANDARD_CASE, standard, tmp_path / "standard-out")
    rebuilt = simready_package(standard, tmp_path / "rebuilt")
    candidate = _copy(CASE / "input", tmp_path / "candidate")
    shutil.copyfile(rebuilt / PHYSX, candidate / PHYSX)
    layered = grade_warm(CASE, candidate, tmp_path / "simready-out")
    assert 0.0 < flat.reward["authored_usd"] < 1.0
    assert layered.reward == flat.reward, layered.grade["reasons"]
    for key in ("status", "targeted_repair_fraction", "targeted_semantic_score", "objective_success"):
        assert layered.grade[key] == flat.grade[key], key
    assert [c["passed"] for c in layered.grade["checks"]] == [c["passed"] for c in flat.grade["checks"]]


@pytest.mark.slow
def test_a_candidate_that_selects_other_engines_is_graded_under_the_case_selection(tmp_path):
    # The honest repair (the reference) with the package's own selection moved to Newton and MuJoCo.
    moved = _select(_copy(CASE / "reference", tmp_path / "moved"), PhysX="Disabled", Newton="Enabled", MuJoCo="Enabled")
    r = grade_warm(CASE, moved, tmp_path / "moved-out")
    assert r.reward == {"authored_usd": 1.0}, r.grade["reasons"]
    assert ("other sets of those prims held at the reference's: /Gripper:MuJoCo=Disabled, /Gripper:Newton=Disabled"
            in r.grade["validity"]["stage_reads"]["reason"])
    assert "newton.usd" not in r.grade["validity"]["layers_parse"]["reason"].split("; not composed")[0]
    # The input, its Newton payload repaired and selected instead of PhysX: still the broken PhysX.
    escaped = _select(_copy(CASE / "input", tmp_path / "escaped"), PhysX="Disabled", Newton="Enabled")
    shutil.copyfile(CASE / "reference" / NEWTON, escaped / NEWTON)
    r = grade_warm(CASE, escaped, tmp_path / "escaped-out")
    assert r.reward == {"authored_usd": 0.0} and all(c["passed"] is False for c in r.grade["checks"])


def test_a_candidate_without_the_selected_variant_fails_preservation(tmp_path):
    # Same physics composed, but the variant set the case selects is renamed away.
    renamed = _edited_reference(tmp_path / "renamed", ('variantSet "PhysX"', 'variantSet "PhysXEngine"'),
                                ('"PhysX", "Newton"', '"PhysXEngine", "Newton"'),
                                ('string PhysX = "Disabled"', 'string PhysXEngine = "Enabled"'))
    r = grade_warm(CASE, renamed, tmp_path / "out")
    g = r.grade
    assert g["status"] == "preservation_failed" and r.reward == {"authored_usd": 0.0}
    reason = g["preservation"]["composition_errors"]["reason"]
    assert "variant selection /Gripper:PhysX=Enabled: /Gripper has no variant set PhysX" in reason
    assert any(x.startswith("composition_errors:") for x in g["reasons"])
    # Every other gate passes: the selection alone fails it.
    assert [k for k, v in g["gates"]["preservation"].items() if not v["passed"]] == ["composition_errors"]


def test_a_renamed_default_prim_lacks_the_selection(tmp_path):
    """A selection is keyed by the reference's prim path: a candidate that renames that prim no
    longer takes it (docs/simready.md)."""
    renamed = _edited_reference(tmp_path / "renamed", ('defaultPrim = "Gripper"', 'defaultPrim = "Robot"'),
                                ('def Xform "Gripper"', 'def Xform "Robot"'),
                                ('string PhysX = "Disabled"', 'string PhysX = "Enabled"'))
    r = grade_warm(CASE, renamed, tmp_path / "out")
    assert r.grade["status"] == "preservation_failed" and r.reward == {"authored_usd": 0.0}
    assert "/Gripper:PhysX=Enabled: no prim /Gripper" in r.grade["preservation"]["composition_errors"]["reason"]


def test_an_escape_behind_an_unselected_variant_is_still_invalid(tmp_path):
    candidate = _edited_reference(tmp_path / "candidate", ("physics/mujoco.usd@", "physics/mujoco.usda@"))
    (candidate / "runnables" / "physics" / "mujoco.usd").unlink()
    (candidate / "runnables" / "physics" / "mujoco.usda").write_text(
        '#usda 1.0\n(\n    defaultPrim = "Gripper"\n    subLayers = [@../../../outside.usda@]\n)\nover "Gripper"\n{\n}\n')
    r = grade_warm(CASE, candidate, tmp_path / "out")
    assert r.grade["status"] == "invalid" and r.reward == {"authored_usd": 0.0}
    assert "outside.usda" in r.grade["validity"]["dependencies_inside"]["reason"]


def _unselected_case(tmp_path: Path) -> Path:
    """The case as an operator might have made it before selections existed: PhysX = Enabled baked
    into the root layers of reference and input, no selection in the profile."""
    case = tmp_path / "baked_case"
    for side in ("reference", "input"):
        _select(_copy(CASE / side, case / side), PhysX="Enabled")
    profile = load_profile(CASE / "profile.json")
    profile = profile.model_copy(update={
        "variant_selections": {},
        "reference": profile.reference.model_copy(update={"digest": tree_digest(case / "reference")}),
        "input": profile.input.model_copy(update={"digest": tree_digest(case / "input")})})
    (case / "profile.json").write_text(profile.dumps())
    return case


@pytest.mark.slow
def test_a_grade_says_where_the_physics_hides(tmp_path):
    case = _unselected_case(tmp_path)
    assert grade_warm(case, case / "reference", tmp_path / "baked").reward == {"authored_usd": 1.0}
    r = grade_warm(case, CASE / "reference", tmp_path / "published")   # the published default
    g = r.grade
    assert g["status"] == "preservation_failed" and g["variant_selections"] == {}
    assert g["reasons"][0].startswith(
        "body_correspondence: 5 correspondence failures: the candidate composes no physics: physics found only "
        "behind /Gripper variant sets PhysX, Newton, MuJoCo, all selected Disabled: freeze with --variant "
        "/Gripper:PhysX=Enabled; reference body")
    assert "not composed" in g["validity"]["layers_parse"]["reason"]


@pytest.mark.slow
def test_instanced_parts_are_graded_through_their_instances(tmp_path):
    from usd_repair_verifier.stage_snapshot.read import read_snapshot

    snapshot = read_snapshot(CASE / "reference" / "gripper.usda", {}, variant_selections=SELECTION)
    bolts = sorted(p for p in snapshot.components if "/Bolt" in p)
    assert bolts == ["/Gripper/Palm/BoltA/Head", "/Gripper/Palm/BoltB/Head"]
    assert {snapshot.components[b].body for b in bolts} == {"/Gripper/Palm"}
    assert len(snapshot.bodies) == 4 and len(snapshot.joints) == 3 and snapshot.variant_problems == ()
    # A moved bolt (an edit inside the instance's prototype moves both) is a reshaped healthy part.
    candidate = _copy(CASE / "reference", tmp_path / "candidate")
    bolt = candidate / "payloads" / "bolt.usda"
    bolt.write_text(bolt.read_text().replace("double radius = 0.004", "double radius = 0.012"))
    r = grade_warm(CASE, candidate, tmp_path / "out")
    assert r.grade["status"] == "preservation_failed"
    assert "BoltA/Head" in r.grade["preservation"]["retained_visible_components"]["reason"]


def test_without_a_selection_the_snapshot_composes_no_physics():
    from usd_repair_verifier.stage_snapshot.read import read_snapshot

    published = read_snapshot(CASE / "reference" / "gripper.usda", {})
    assert not published.bodies and not published.joints and not published.scenes
    assert published.hidden_physics == ("physics found only behind /Gripper variant sets PhysX, Newton, MuJoCo, "
                                        "all selected Disabled: freeze with --variant /Gripper:PhysX=Enabled")
    selected = read_snapshot(CASE / "reference" / "gripper.usda", {}, variant_selections=SELECTION)
    assert selected.hidden_physics is None and len(selected.scenes) == 1


def test_the_committed_fixture_is_what_the_script_builds(tmp_path):
    """fixtures/build_simready.py rebuilds the package and the case's input byte for byte (crate
    layers included); the case's reference is the package."""
    from fixtures.build_simready import _differences

    built = simready_package(GRIPPER, tmp_path / "gripper")
    assert _differences(SIMREADY / "gripper", built) == []
    assert _differences(CASE / "reference", built) == []
    assert _differences(CASE / "input", simready_package(STANDARD_CASE / "input", tmp_path / "input")) == []
    assert load_profile(CASE / "profile.json").reference.digest == tree_digest(built)


def test_a_profile_naming_a_selection_its_reference_lacks_is_an_infrastructure_error(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(CASE, case)
    profile = load_profile(case / "profile.json")
    (case / "profile.json").write_text(profile.model_copy(
        update={"variant_selections": {"/Gripper": {"PhysX": "Turbo"}}}).dumps())
    r = grade_warm(case, CASE / "reference", tmp_path / "out")
    assert r.grade["status"] == "infrastructure_error" and r.reward == {"authored_usd": 0.0}
    assert ("the reference cannot take the profile's variant selection /Gripper:PhysX=Turbo: variant set PhysX of "
            "/Gripper has no variant Turbo") in r.grade["infrastructure_error"]
