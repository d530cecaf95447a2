"""Authoring and operating SimReady cases: `variant_selections` in profile.json (and the bytes of
every profile without them), `usdgrade freeze --variant` and its refusals, `usdgrade inject
--variant`, `usdgrade doctor --case`, `usdgrade task`, `usdgrade regrade`, the visual render and
the explain pictures under the case's selections (the physical grade: test_simready_physical.py).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from fixtures.build_simready import CASE_ID, SELECTION
from tests.command_runner import usdgrade
from usd_repair_verifier.profiles.digest import file_digest
from usd_repair_verifier.profiles.schema import ProfileError, load_profile, profile_from_json

ROOT = Path(__file__).resolve().parent.parent
SIMREADY = ROOT / "fixtures" / "simready"
CASE = SIMREADY / "cases" / CASE_ID
PHYSX, NEWTON = Path("runnables/physics/physx.usd"), Path("runnables/physics/newton.usd")
HINT = ("refusing to freeze: the reference composes no physics: physics found only behind /Gripper variant sets "
        "PhysX, Newton, MuJoCo, all selected Disabled: freeze with --variant /Gripper:PhysX=Enabled")


def _committed_profiles() -> list[Path]:
    return sorted(p for p in ROOT.rglob("profile.json") if ".git" not in p.parts)


def test_every_committed_profile_writes_back_byte_for_byte():
    """Cases (and Harbor job records) are found by their profile's digest: a profile without
    variant selections serializes exactly as it did before the field existed."""
    profiles = _committed_profiles()
    assert len(profiles) > 50
    for path in profiles:
        assert load_profile(path).dumps() == path.read_text(), path
    plain = json.loads((ROOT / "fixtures" / "cases" / "ant_two_joint_faults" / "profile.json").read_text())
    assert "variant_selections" not in plain


def test_selections_are_part_of_the_profile_and_its_digest(tmp_path):
    data = json.loads((CASE / "profile.json").read_text())
    profile = profile_from_json(data)
    assert profile.variant_selections == SELECTION
    other = profile_from_json({**data, "variant_selections": {"/Gripper": {"PhysX": "Disabled"}}})
    none = profile_from_json({k: v for k, v in data.items() if k != "variant_selections"})
    texts = {profile.dumps(), other.dumps(), none.dumps()}
    assert len(texts) == 3 and '"variant_selections"' not in none.dumps()
    written = [tmp_path / f"{i}.json" for i in range(3)]
    for path, text in zip(written, sorted(texts)):
        path.write_text(text)
    assert len({file_digest(p) for p in written}) == 3
    # Sorted: the same selections in another order are the same bytes.
    shuffled = profile_from_json({**data, "variant_selections": {"/Gripper": {"Newton": "Disabled", "PhysX": "Enabled"},
                                                                   "/A": {"B": "c"}}})
    assert list(shuffled.variant_selections) == ["/A", "/Gripper"]
    assert list(shuffled.variant_selections["/Gripper"]) == ["Newton", "PhysX"]


@pytest.mark.parametrize("value, message", [
    ({"Gripper": {"PhysX": "Enabled"}}, "expected an absolute prim path"),
    ({"/Gripper.attr": {"PhysX": "Enabled"}}, "expected an absolute prim path"),
    ({"/Gripper": {}}, "names no variant set"),
    ({"/Gripper": {"Phys X": "Enabled"}}, "expected a variant set name"),
    ({"/Gripper": {"PhysX": ""}}, "expected a variant name"),
    ({"/Gripper": {"PhysX": 1}}, "expected str"),
    (["/Gripper"], "expected an object"),
])
def test_a_malformed_selection_is_refused_with_its_field(value, message):
    data = {**json.loads((CASE / "profile.json").read_text()), "variant_selections": value}
    with pytest.raises(ProfileError, match="profile.variant_selections") as error:
        profile_from_json(data)
    assert message in str(error.value)


def test_the_published_schema_describes_the_field():
    schema = json.loads((ROOT / "docs" / "schemas" / "profile.schema.json").read_text())
    validator = Draft202012Validator(schema)
    data = json.loads((CASE / "profile.json").read_text())
    assert not list(validator.iter_errors(data))
    assert list(validator.iter_errors({**data, "variant_selections": {"Gripper": {"PhysX": "Enabled"}}}))
    assert list(validator.iter_errors({**data, "variant_selections": {"/Gripper": {}}}))
    grade = json.loads((ROOT / "docs" / "schemas" / "grade.schema.json").read_text())
    assert "variant_selections" in grade["properties"]


def test_freeze_without_a_selection_says_which_flag_to_add(tmp_path):
    r = usdgrade("freeze", "--reference", str(CASE / "reference"), "--input", str(CASE / "input"),
                 "--out", str(tmp_path / "case"))
    assert r.returncode == 1 and r.stderr.strip().splitlines() == [HINT]
    assert not (tmp_path / "case").exists()


@pytest.mark.parametrize("flag, code, line", [
    ("/Gripper:Bogus=Enabled", 1, "refusing to freeze: the reference cannot take --variant /Gripper:Bogus=Enabled: "
                                  "/Gripper has no variant set Bogus (its variant sets: PhysX, Newton, MuJoCo)"),
    ("/Gripper:PhysX=On", 1, "refusing to freeze: the reference cannot take --variant /Gripper:PhysX=On: variant set "
                             "PhysX of /Gripper has no variant On (its variants: Disabled, Enabled)"),
    ("/Robot:PhysX=Enabled", 1, "refusing to freeze: the reference cannot take --variant /Robot:PhysX=Enabled: "
                                "no prim /Robot"),
    ("Gripper-PhysX", 2, "cannot freeze: --variant 'Gripper-PhysX': expected PRIM:SET=SELECTION, "
                         "e.g. /Gripper:PhysX=Enabled"),
    ("Gripper:PhysX=Enabled", 2, "cannot freeze: --variant.Gripper: expected an absolute prim path such as "
                                 "'/Gripper', got 'Gripper'"),
])
def test_freeze_refuses_a_selection_the_reference_lacks_in_one_line(flag, code, line, tmp_path):
    r = usdgrade("freeze", "--reference", str(CASE / "reference"), "--input", str(CASE / "input"),
                 "--out", str(tmp_path / "case"), "--variant", flag)
    assert r.returncode == code and r.stderr.strip().splitlines() == [line], r.stderr
    assert not (tmp_path / "case").exists()


@pytest.mark.slow
def test_freeze_with_the_flag_finds_the_faults_and_records_the_selection(tmp_path):
    r = usdgrade("freeze", "--reference", str(CASE / "reference"), "--input", str(CASE / "input"),
                 "--out", str(tmp_path / "case"), "--variant", "/Gripper:PhysX=Enabled")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == (f"froze {tmp_path / 'case'}: 2 fault(s), 3 check(s), "
                                                  "variant selections /Gripper:PhysX=Enabled")
    frozen, committed = load_profile(tmp_path / "case" / "profile.json"), load_profile(CASE / "profile.json")
    assert frozen.variant_selections == SELECTION
    assert [(f.kind, f.target) for f in frozen.faults] == [(f.kind, f.target) for f in committed.faults]
    assert [(c.id, c.input_error) for c in frozen.checks] == [(c.id, c.input_error) for c in committed.checks]


def test_an_input_without_the_selected_variant_is_refused(tmp_path):
    broken = tmp_path / "input"
    shutil.copytree(CASE / "input", broken)
    root = broken / "gripper.usda"
    root.write_text(root.read_text().replace('"Enabled" (\n            prepend payload = @./runnables/physics/physx.usd@',
                                             '"On" (\n            prepend payload = @./runnables/physics/physx.usd@'))
    r = usdgrade("freeze", "--reference", str(CASE / "reference"), "--input", str(broken),
                 "--out", str(tmp_path / "case"), "--variant", "/Gripper:PhysX=Enabled")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == ["refusing to freeze: the input cannot take --variant "
                                             "/Gripper:PhysX=Enabled: variant set PhysX of /Gripper has no variant "
                                             "Enabled (its variants: Disabled, On)"]


def test_inject_with_the_flag_breaks_the_selected_payload_only(tmp_path):
    out = tmp_path / "broken"
    r = usdgrade("inject", "--reference", str(CASE / "reference"), "--fault", "joint_limits:/Gripper/Joints/Wrist",
                 "--variant", "/Gripper:PhysX=Enabled", "--out", str(out))
    assert r.returncode == 0, r.stderr
    changed = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()
                     and p.read_bytes() != (CASE / "reference" / p.relative_to(out)).read_bytes())
    assert changed == [str(PHYSX)]
    # Without it there is nothing to break: the physics is behind the unselected variants.
    r = usdgrade("inject", "--reference", str(CASE / "reference"), "--fault", "joint_limits:/Gripper/Joints/Wrist",
                 "--out", str(tmp_path / "nothing"))
    assert r.returncode == 1 and not (tmp_path / "nothing").exists()
    r = usdgrade("inject", "--targets", str(CASE / "reference"), "--fault", "joint_limits",
                 "--variant", "/Gripper:PhysX=Enabled")
    assert r.returncode == 0 and "  /Gripper/Joints/Wrist" in r.stdout.splitlines()


@pytest.mark.slow
def test_doctor_shows_a_cases_selections_and_grades_its_reference():
    r = usdgrade("doctor", "--case", str(CASE))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert ("ok    selections       /Gripper:PhysX=Enabled (composed into reference, input and candidate through "
            "the session layer)") in lines
    assert f"ok    case             {CASE_ID} (version 1): 2 fault(s), 3 check(s)" in lines
    assert any(line.startswith(f"ok    fixture grade    {CASE_ID}: reward 1.0 as expected") for line in lines)
    plain = usdgrade("doctor", "--case", str(ROOT / "fixtures" / "cases" / "ant_two_joint_faults"), "--skip-grade")
    assert "ok    selections       none" in plain.stdout.splitlines()
    assert usdgrade("doctor", "--submission", str(CASE / "reference")).returncode == 2


@pytest.mark.slow
def test_the_task_keeps_the_selection_and_tells_the_agent(tmp_path):
    from usd_repair_verifier.authoring.task import TaskOptions, write_task

    task = write_task(CASE, tmp_path / "task")
    # The task's case (closed book by default: its profile says so) keeps the selection.
    assert load_profile(task / "tests" / "case" / "profile.json").variant_selections == SELECTION
    open_book = write_task(CASE, tmp_path / "open", TaskOptions(closed_book=False))
    assert (open_book / "tests" / "case" / "profile.json").read_bytes() == (CASE / "profile.json").read_bytes()
    instruction = (task / "instruction.md").read_text()
    assert "the grade composes the package with `/Gripper:PhysX=Enabled`" in instruction
    assert "changing a selection in the package changes nothing that is graded" in instruction
    # A case without selections keeps the instruction it had.
    plain = write_task(ROOT / "fixtures" / "cases" / "cabinet_drawer_door", tmp_path / "plain")
    assert "Variant selections" not in (plain / "instruction.md").read_text()
    r = usdgrade("task", "--check", str(task))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == f"{task}: sound: oracle 1.0 (graded), untouched input 0.0 (graded), closed book"


def _job(tmp_path: Path, submissions: dict[str, Path]) -> Path:
    """A Harbor job folder of trials of the SimReady task, each with its stored /app."""
    job = tmp_path / "job"
    for trial, package in submissions.items():
        (job / trial).mkdir(parents=True)
        (job / trial / "result.json").write_text(json.dumps({"task_name": CASE_ID, "trial_name": trial}))
        shutil.copytree(package, job / trial / "artifacts" / "app")
    return job


@pytest.mark.slow
def test_regrade_grades_stored_submissions_under_the_case_selection(tmp_path):
    moved = tmp_path / "moved"
    shutil.copytree(CASE / "reference", moved)
    root = moved / "gripper.usda"
    root.write_text(root.read_text().replace('string Newton = "Disabled"', 'string Newton = "Enabled"'))
    job = _job(tmp_path, {"t-reference": CASE / "reference", "t-input": CASE / "input", "t-moved": moved})
    r = usdgrade("regrade", str(job), "--cases", str(SIMREADY / "cases"), "--out", str(tmp_path / "out"),
                 "-j", "1", "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    rewards = {}
    for grade_file in (tmp_path / "out").rglob("grade.json"):
        grade = json.loads(grade_file.read_text())
        assert grade["variant_selections"] == SELECTION
        rewards[grade_file.parent.name] = grade["authored_usd"]
    assert rewards == {"t-reference": 1.0, "t-input": 0.0, "t-moved": 1.0}


def test_visual_render_composes_the_case_selection(tmp_path):
    from usd_repair_verifier.visual import render

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "shape.usda").write_text('''#usda 1.0
(
    defaultPrim = "Thing"
    metersPerUnit = 1
    upAxis = "Z"
)

def Xform "Thing" (
    variants = {
        string Look = "Small"
    }
    prepend variantSets = "Look"
)
{
    variantSet "Look" = {
        "Large" {
            def Cube "Box"
            {
                double size = 2
            }
        }
        "Small" {
            def Cube "Box"
            {
                double size = 0.5
            }
        }
    }
}
''')
    small = render.load_scene(pkg)
    large = render.load_scene(pkg, {"/Thing": {"Look": "Large"}})
    assert small.triangles.max() == pytest.approx(0.25) and large.triangles.max() == pytest.approx(1.0)
    # render_pair applies the case's selection to both sides.
    pair = render.render_pair(pkg, pkg, views=("front",), size=32, variant_selections={"/Thing": {"Look": "Large"}})
    assert pair["bounds_m"][1][0] == pytest.approx(1.0)


def test_explain_pictures_read_both_stages_under_the_case_selection():
    from usd_repair_verifier.commands.explain_pictures import Pictures

    profile = load_profile(CASE / "profile.json")
    pictures = Pictures(CASE / "reference", CASE / "input", dict(profile.sampling), dict(profile.correspondence),
                        dict(profile.variant_selections))
    assert len(pictures.reference.bodies) == 4 and len(pictures.candidate.joints) == 2
    # The input lost that joint, which changes nothing visible: the part is drawn once, from the reference.
    drawn = pictures.draw("/Gripper/Joints/Wrist", views=1, size=64)
    assert not drawn.differs and drawn.views
    assert all(set(roles) == {"reference"} for roles in drawn.views.values())


@pytest.mark.slow
def test_refreeze_keeps_the_selection(tmp_path):
    from usd_repair_verifier.regrade.command import refreeze

    old = tmp_path / "old"
    shutil.copytree(CASE, old)
    data = json.loads((old / "profile.json").read_text())
    (old / "profile.json").write_text(json.dumps({**data, "scoring_version": "0"}))
    frozen, why = refreeze(old, tmp_path / "out" / "cases")
    assert why is None and frozen is not None
    profile = load_profile(frozen / "profile.json")
    assert profile.variant_selections == SELECTION and profile.version.endswith("+scoring-" + profile.scoring_version)


def _stage(text: str):
    from pxr import Sdf, Usd

    layer = Sdf.Layer.CreateAnonymous(".usda")
    layer.ImportFromString(text)
    return Usd.Stage.Open(layer)


PHYSICS_IN_VARIANTS = '''#usda 1.0
(
    defaultPrim = "Robot"
)

def Xform "Robot" (
    variants = {
        string Engine = "Off"
    }
    prepend variantSets = ["Engine", "Extra"]
)
{
    variantSet "Engine" = {
        "Off" {
        }
        "On" {
            def Cube "Body" (
                prepend apiSchemas = ["PhysicsRigidBodyAPI"]
            )
            {
            }
        }
    }
    variantSet "Extra" = {
        "Joints" {
            def PhysicsRevoluteJoint "Hinge"
            {
            }
        }
    }
}
'''


def test_hidden_physics_names_each_set_and_its_own_selection():
    from usd_repair_verifier.stage_snapshot.variant_selections import composes_physics, hidden_physics

    stage = _stage(PHYSICS_IN_VARIANTS)
    assert not composes_physics(stage)
    assert hidden_physics(stage) == ("physics found only behind /Robot variant sets Engine, Extra, Engine selected "
                                     "Off, Extra selected nothing: freeze with --variant /Robot:Engine=On")
    assert hidden_physics(_stage(PHYSICS_IN_VARIANTS.replace('string Engine = "Off"', 'string Engine = "On"'))) is None
    assert hidden_physics(_stage('#usda 1.0\ndef Xform "Robot"\n{\n    def Cube "Box"\n    {\n    }\n}\n')) is None


def test_two_variants_bringing_in_the_same_layer_are_both_named(tmp_path):
    from pxr import Usd

    from usd_repair_verifier.stage_snapshot.variant_selections import hidden_physics

    package = tmp_path / "pkg"
    shutil.copytree(CASE / "reference", package)
    root = package / "gripper.usda"
    root.write_text(root.read_text().replace("physics/newton.usd@", "physics/physx.usd@"))
    found = hidden_physics(Usd.Stage.Open(str(root)))
    assert found.startswith("physics found only behind /Gripper variant sets PhysX, Newton, MuJoCo, all selected Disabled")


def test_validity_alone_composes_with_the_selection():
    from usd_repair_verifier.gates.validity import ResourceLimits, check_submission

    reference = CASE / "reference" / "gripper.usda"
    report = check_submission(CASE / "input", ResourceLimits(), reference=reference, variant_selections=SELECTION)
    assert report.valid
    reason = report.rule("layers_parse").reason
    assert "composed under the case's variant selections: 4 layers (gripper.usda, runnables/physics/physx.usd" in reason
    unselected = check_submission(CASE / "input", ResourceLimits(), reference=reference).rule("layers_parse").reason
    assert "composed with the variants the package selects: 3 layers" in unselected
    assert "6 layers (runnables/physics/physx.usd" not in unselected
