"""The physical grade end to end, on the real engine (Newton + MuJoCo, CPU) and real fixtures.

These tests need the engine: `pip install -e '.[test]'` (the README's test command and .ci/run
install it; the tests never install anything). Without it they FAIL (test_engine_is_installed says
why); they never skip. Warp kernels compile once into
WARP_CACHE_PATH (default: ~/.cache/usd-repair-verifier/warp), about 20 s.

The runtime sessions fork from one runtime server per test process (physical/runtime_server.py),
as a sweep's do: about 2.5 s a grade instead of 6. test_same_bytes_same_record grades the same
bytes once forked and once in a fresh interpreter and finds the same record.
"""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from usd_repair_verifier.physical import runtime_server
from bench.calibrate_physical import split_door_panel
from usd_repair_verifier.physical.grade import PHYSICAL_FILE, run_physical, session_env
from usd_repair_verifier.physical.record import PhysicalRecord
from usd_repair_verifier.physical.property_results import PROPERTIES, TESTS, not_applicable
from usd_repair_verifier.physical.settings import ENGINE_MODULES, pinned_versions
from usd_repair_verifier.authoring.inject import root_layer_of
from tests import variants

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
ASSETS = ROOT / "fixtures" / "assets"
ANT = CASES / "ant_two_joint_faults"
CABINET = CASES / "cabinet_drawer_door"
ANT_RENAMES = {"ant": "robot", "torso": "trunk", "front_left_leg": "leg_a", "hip_1": "hip_a"}
CABINET_RENAMES = {"Cabinet": "Kitchen", "Drawer": "Box", "DoorHinge": "Hinge1", "Joints": "Constraints"}


@pytest.fixture(scope="session")
def forked_runtime_sessions():
    """One runtime server for every test of this process (session scope: xdist may split the
    module's tests in several runs on one worker)."""
    runtime_server.start_runtime_server(session_env())
    yield
    runtime_server.stop_runtime_server()


pytestmark = pytest.mark.usefixtures("forked_runtime_sessions")


@pytest.fixture(autouse=True)
def every_physical_json_written_matches_its_model(written_records_match):
    written_records_match(PHYSICAL_FILE, PhysicalRecord, "physical")


def properties(record: dict) -> list[dict]:
    return [p for t in TESTS for p in record["tests"][t].values()]


def failed(record: dict) -> set[str]:
    return {f"{p['test']}.{p['name']}" for p in properties(record) if p["passed"] is False}


def assert_all_pass(record: dict) -> None:
    """Every property passes, but a grasp test on an asset without a gripper (null, with that reason)."""
    assert record["status"] == "graded", record["reason"]
    bad = [(p["test"], p["name"], p["value"], p["threshold"], p["reason"]) for p in properties(record)
           if p["passed"] is not True and not (p["test"] == "grasp_and_lift" and p["reason"].startswith("no gripper"))]
    assert not bad, bad


def assert_all_null(record: dict, reason_part: str) -> None:
    for p in properties(record):
        assert p["passed"] is None and p["value"] is None, p
        assert reason_part in p["reason"], p["reason"]


def assert_all_pass_or_unexercised(record: dict) -> None:
    """The cabinet is anchored to the world and nothing in it touches the ground: its rest test is not
    exercised (null, with the reason), every other property passes."""
    assert record["status"] == "graded", record["reason"]
    rest = record["tests"]["rest_and_contact"]
    assert rest["finite"]["passed"] is True
    for name in ("settled", "rest_positions", "rest_rotations"):
        assert rest[name]["passed"] is None and "not exercised" in rest[name]["reason"]
    bad = [(p["test"], p["name"], p["value"], p["reason"]) for p in properties(record)
           if p["passed"] is not True and p["test"] != "rest_and_contact"
           and not (p["passed"] is None and not_applicable(p["reason"]))]
    assert not bad, bad


def without_timings(record: dict) -> dict:
    record = json.loads(json.dumps(record))
    record.pop("timings")
    record.pop("runtime_session", None)
    return record


def test_engine_is_installed():
    """The tests never install anything: without the engine this fails, and so does every grade test below."""
    missing = [m for m in ENGINE_MODULES if importlib.util.find_spec(m) is None]
    assert not missing, f"engine not installed ({', '.join(missing)}): pip install -e '.[test]'"


def test_installed_engine_matches_the_pins():
    from importlib import metadata

    found = {name: metadata.version(name) for name in pinned_versions()}
    assert found == pinned_versions(), "the installed engine differs from the pins: pip install -e '.[test]'"


STEPS: list[tuple[str, str]] = []    # the long steps ant_self's run showed (scoring/progress.py draws them)


@pytest.fixture(scope="module")
def ant_self(tmp_path_factory):
    from contextlib import contextmanager

    from usd_repair_verifier.physical import grade as physical_grade

    @contextmanager
    def working(desc, note=""):
        STEPS.append((desc, note))
        yield

    out = tmp_path_factory.mktemp("ant_self")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(physical_grade, "working", working)
        record = run_physical(ANT, ANT / "reference", out)
    PhysicalRecord.model_validate_json((out / PHYSICAL_FILE).read_bytes())
    return record


@pytest.mark.slow
def test_the_runtime_session_is_a_step_a_terminal_shows(ant_self):
    """The first run compiles the engine's kernels for about a minute: never in silence at a terminal."""
    assert [desc for desc, _ in STEPS] == ["physical: runtime tests of reference and candidate in Newton"]
    assert STEPS[0][1] in ("the first run compiles the engine's kernels, about a minute", "about 5 to 10 s")


def test_reference_against_itself_passes_every_test(ant_self):
    r = ant_self
    assert_all_pass(r)
    assert r["authored_usd_changed"] is False
    # the ant has no gripper: its grasp test alone is null, with that reason
    assert r["summary"]["passed"] == sum(len(PROPERTIES[t]) for t in TESTS if t != "grasp_and_lift")
    assert all(p["reason"].startswith("no gripper") for p in r["tests"]["grasp_and_lift"].values())
    assert r["tests"]["slope_drop"]["rest_positions"]["value"] == 0.0
    # identical bytes, identical runs: every error is exactly zero
    assert r["tests"]["rest_and_contact"]["rest_positions"]["value"] == 0.0
    assert r["tests"]["dynamic_response"]["trajectories"]["value"] == 0.0
    assert r["tests"]["dynamic_response"]["rotations"]["value"] == 0.0
    assert r["tests"]["joint_travel"]["travel"]["value"] == 0.0
    # the record says what ran and on what bytes
    assert r["engine"]["versions"]["newton"] and r["engine"]["versions"]["mujoco"]
    assert r["settings"]["solver"] == "SolverMuJoCo" and r["settings"]["dt_s"] > 0
    assert r["digests"]["candidate"] == r["digests"]["reference"]
    assert r["tests"]["load_and_cook"]["bodies"]["value"] == 13
    # 8 hinge joints, each pushed both ways, each reaching its limits like the reference's
    joints = r["tests"]["joint_travel"]["travel"]["details"]["joints"]
    assert len(joints) == 8


@pytest.mark.slow
def test_same_bytes_same_record(ant_self, tmp_path):
    """The same bytes, once forked from the runtime server and once in a fresh interpreter."""
    again = run_physical(ANT, ANT / "reference", tmp_path / "again", python=[sys.executable])
    assert ant_self["runtime_session"]["forked"] is True and again["runtime_session"]["forked"] is False
    assert without_timings(again) == {**without_timings(ant_self), "case": again["case"], "submission": again["submission"]}


@pytest.mark.slow
def test_a_forked_session_past_its_time_limit_is_killed_and_the_server_goes_on(tmp_path, monkeypatch):
    from usd_repair_verifier.physical import grade as physical_grade

    with monkeypatch.context() as patch:
        patch.setattr(physical_grade, "RUNTIME_TIMEOUT_S", 0.3)
        r = run_physical(CASES / "gen_cartpole_1", CASES / "gen_cartpole_1" / "reference", tmp_path / "limited")
    assert r["status"] == "infrastructure_error" and r["reason"] == "the runtime session ran past 0.3 s"
    assert_all_null(r, "ran past")
    after = run_physical(CASES / "gen_cartpole_1", CASES / "gen_cartpole_1" / "reference", tmp_path / "after")
    assert after["runtime_session"]["forked"] is True
    assert after["status"] == "graded" and after["summary"]["failed"] == 0 and after["summary"]["passed"] > 0


@pytest.mark.slow
def test_flattened_variant_passes_every_test(tmp_path):
    flat = variants.flatten(ANT / "reference", tmp_path / "flat")
    assert_all_pass(run_physical(ANT, flat, tmp_path / "out"))


@pytest.mark.slow
def test_renamed_namespace_variant_passes_every_test(tmp_path):
    renamed = variants.rename_namespace(ANT / "reference", tmp_path / "renamed", ANT_RENAMES)
    r = run_physical(ANT, renamed, tmp_path / "out")
    assert_all_pass(r)
    assert r["correspondence"]["bodies"]["/ant/Geometry/torso"] == "/robot/Geometry/trunk"


@pytest.mark.slow
def test_renamed_cabinet_with_another_collision_decomposition_passes_every_test(tmp_path):
    candidate = variants.rename_namespace(CABINET / "reference", tmp_path / "cab", CABINET_RENAMES)
    split_door_panel(candidate)
    r = run_physical(CABINET, candidate, tmp_path / "out")
    assert_all_pass_or_unexercised(r)
    cook = r["tests"]["load_and_cook"]
    assert cook["colliders_built"]["value"] == cook["colliders_built"]["threshold"]   # all built, one more than the reference's
    # the prismatic drawer and the revolute door were pushed both ways
    travel = r["tests"]["joint_travel"]["travel"]["details"]["joints"]
    assert {j["unit"] for j in travel.values()} == {"deg", "m"}


@pytest.mark.slow
def test_a_lost_collider_fails_colliders_built_against_the_reference(tmp_path):
    """One of the drawer's five colliders removed: everything the candidate authors is built, and the
    drawer still collides, but the reference's drawer has a collider the candidate's lacks."""
    from pxr import Usd

    package = variants.flatten(CABINET / "reference", tmp_path / "lost")
    stage = Usd.Stage.Open(str(root_layer_of(package)))
    stage.GetPrimAtPath("/Cabinet/Drawer/Colliders/Back").SetActive(False)
    stage.GetRootLayer().Save()
    r = run_physical(CABINET, package, tmp_path / "out")
    built = r["tests"]["load_and_cook"]["colliders_built"]
    assert built["passed"] is False and built["value"] == built["threshold"] - 1
    (short,) = built["details"]["short"]
    assert short["reference_body"].endswith("Drawer")
    assert short["reference_colliders"] - short["candidate_colliders"] == 1
    assert built["details"]["not_built"] == []                       # the old check passed this candidate
    assert r["tests"]["load_and_cook"]["collider_bodies"]["passed"] is True


# --- fault kinds of the case suite, detected by runtime tests (fixture inputs as candidates) -----

@pytest.mark.slow
def test_joint_frame_and_limit_units_faults_fail_motion_and_travel(tmp_path):
    """ant_two_joint_faults: hip_1's frame moved, ankle_2's limits authored in radians."""
    r = run_physical(ANT, ANT / "input", tmp_path / "out")
    assert r["status"] == "graded"
    assert {"joint_travel.travel", "dynamic_response.trajectories", "rest_and_contact.rest_positions"} <= failed(r)
    assert not {n for n in failed(r) if n.startswith("load_and_cook")}     # it loads and cooks like the reference
    travel = r["tests"]["joint_travel"]["travel"]
    ankle = next(j for label, j in travel["details"]["joints"].items() if label.endswith("ankle_2"))
    # the radians-as-degrees limit leaves about 1/57 of the reference's travel
    assert ankle["relative_error"] > 0.5
    assert r["tests"]["dynamic_response"]["trajectories"]["value"] > 5 * r["tests"]["dynamic_response"]["trajectories"]["threshold"]


@pytest.mark.slow
def test_inverted_joint_limits_are_an_engine_refusal_with_its_reason(tmp_path):
    """gen_ant_2: inverted limits: MuJoCo refuses the model; `loads` fails, the rest is null with why."""
    r = run_physical(CASES / "gen_ant_2", CASES / "gen_ant_2" / "input", tmp_path / "out")
    assert r["status"] == "graded"
    cook = r["tests"]["load_and_cook"]
    assert cook["loads"]["passed"] is False and "range" in cook["loads"]["reason"]
    others = [p for p in properties(r) if p["name"] != "loads"]
    assert all(p["passed"] is None and "engine refused the candidate" in p["reason"] for p in others)
    assert failed(r) == {"load_and_cook.loads"}


@pytest.mark.slow
def test_a_moving_body_that_lost_its_mass_loads_with_a_stand_in_and_fails_its_mass(tmp_path):
    """cheetah_visual_and_shape: fthigh's colliders disabled, so it has no mass and nothing to take
    one from: it gets the recorded stand-in (physical/corrections.py) on that side only, loads, and
    its mass is judged against the reference's."""
    case = CASES / "cheetah_visual_and_shape"
    r = run_physical(case, case / "input", tmp_path / "out")
    assert r["tests"]["load_and_cook"]["loads"]["passed"] is True
    stand_ins = [c for c in r["corrections"]["candidate"] if c["kind"] == "mass_stand_in"]
    assert [c["target"].rsplit("/", 1)[-1] for c in stand_ins] == ["fthigh"]
    assert not [c for c in r["corrections"]["reference"] if c["kind"] == "mass_stand_in"]
    assert "load_and_cook.body_masses" in failed(r)


def test_reference_itself_unloadable_gives_nulls_with_the_reason(tmp_path):
    """A case whose reference the engine refuses: nothing is measured, every property says why."""
    import shutil

    from usd_repair_verifier.profiles.digest import tree_digest

    case = tmp_path / "case"
    shutil.copytree(CASES / "gen_ant_2", case)
    shutil.rmtree(case / "reference")
    shutil.copytree(case / "input", case / "reference")
    profile = json.loads((case / "profile.json").read_text())
    profile["reference"]["digest"] = tree_digest(case / "reference")
    (case / "profile.json").write_text(json.dumps(profile))
    r = run_physical(case, CASES / "gen_ant_2" / "reference", tmp_path / "out")
    assert r["status"] == "graded"
    assert_all_null(r, "reference itself unloadable")


# --- not run: nulls with the reason, no engine needed --------------------------------------------

def test_engine_absent_gives_every_property_null_with_the_reason(tmp_path):
    """`python -S` has no site-packages: the engine is really absent from that interpreter."""
    r = run_physical(ANT, ANT / "reference", tmp_path / "out", python=[sys.executable, "-S"])
    assert r["status"] == "not_run"
    assert r["reason"].startswith("engine not installed: missing newton")
    assert_all_null(r, "engine not installed")
    assert json.loads((tmp_path / "out" / PHYSICAL_FILE).read_text()) == r


@pytest.mark.slow
def test_another_engine_version_is_refused(tmp_path, monkeypatch):
    """The thresholds hold for the pinned versions only: a runtime whose newton differs is not run."""
    from usd_repair_verifier.physical import grade as physical_grade

    pins = {**pinned_versions(), "newton": "0.0.1"}
    monkeypatch.setattr(physical_grade, "pinned_versions", lambda: pins)
    r = run_physical(ANT, ANT / "reference", tmp_path / "out")
    assert r["status"] == "not_run" and "calibrated" in r["reason"]
    assert f"newton {r['engine']['versions_probed']['newton']} (pinned 0.0.1)" in r["reason"]
    assert r["engine"]["versions_pinned"]["newton"] == "0.0.1"
    assert_all_null(r, "engine version differs")


def test_invalid_submission_is_not_run(tmp_path):
    sub = variants.copy_package(ANT / "reference", tmp_path / "sub")
    (sub / "second_root.usda").write_text("#usda 1.0\n")
    r = run_physical(ANT, sub, tmp_path / "out")
    assert r["status"] == "not_run"
    assert "not valid" in r["reason"]
    assert_all_null(r, "not valid")


def test_cli_writes_physical_json_and_never_a_reward(tmp_path, capsys):
    from usd_repair_verifier.commands.cli import main

    out = tmp_path / "out"
    code = main(["physical", "--case", str(ANT), "--submission", str(ANT / "reference"), "--out", str(out),
                 "--python", f"{sys.executable} -S"])
    assert code == 0
    assert "physical not_run" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == [PHYSICAL_FILE]


def test_out_inside_the_submission_is_refused(tmp_path):
    sub = variants.copy_package(ANT / "reference", tmp_path / "sub")
    with pytest.raises(ValueError):
        run_physical(ANT, sub, sub / "out")


@pytest.mark.slow
def test_reversed_joint_is_an_engine_refusal_with_its_reason(tmp_path):
    """A joint authored child-first (body0 = leg, body1 = thigh) is valid USD, but Newton's importer
    refuses it: `loads` fails with the importer's reason, nothing else is claimed."""
    from pxr import Usd, UsdPhysics

    case = CASES / "gen_hopper_2"
    package = variants.flatten(case / "reference", tmp_path / "reversed")
    stage = Usd.Stage.Open(str(root_layer_of(package)))
    joint = UsdPhysics.RevoluteJoint(next(p for p in stage.Traverse() if p.GetName() == "leg_joint"))
    b0, b1 = joint.GetBody0Rel().GetTargets(), joint.GetBody1Rel().GetTargets()
    joint.GetBody0Rel().SetTargets(b1)
    joint.GetBody1Rel().SetTargets(b0)
    for first, second in ((joint.GetLocalPos0Attr(), joint.GetLocalPos1Attr()),
                          (joint.GetLocalRot0Attr(), joint.GetLocalRot1Attr())):
        a, b = first.Get(), second.Get()
        first.Set(b)
        second.Set(a)
    lower, upper = joint.GetLowerLimitAttr().Get(), joint.GetUpperLimitAttr().Get()
    joint.GetLowerLimitAttr().Set(-upper)
    joint.GetUpperLimitAttr().Set(-lower)
    stage.GetRootLayer().Save()
    r = run_physical(case, package, tmp_path / "out")
    assert r["status"] == "graded"
    assert failed(r) == {"load_and_cook.loads"}
    assert "Reversed joints are not supported" in r["tests"]["load_and_cook"]["loads"]["reason"]
    assert all(p["passed"] is None and "engine refused the candidate" in p["reason"]
               for p in properties(r) if p["name"] != "loads")


@pytest.mark.slow
def test_a_finger_that_no_longer_collides_drops_the_box_in_the_grasp_test(tmp_path):
    """gripper_hull_and_mass's reference with the left finger's collider disabled: the gripper is
    found on the reference, its box is closed on by one finger only and falls."""
    import shutil

    from pxr import Sdf, Usd, UsdPhysics

    case = CASES / "gripper_hull_and_mass"
    candidate = tmp_path / "candidate"
    shutil.copytree(case / "reference", candidate)
    stage = Usd.Stage.Open(str(candidate / "gripper.usda"))
    stage.SetEditTarget(Usd.EditTarget(Sdf.Layer.FindOrOpen(str(candidate / "layers" / "physics.usda"))))
    UsdPhysics.CollisionAPI(stage.GetPrimAtPath("/Gripper/Palm/FingerLeft/Mesh")).CreateCollisionEnabledAttr(False)
    stage.GetEditTarget().GetLayer().Save()
    r = run_physical(case, candidate, tmp_path / "out")
    grasp = r["tests"]["grasp_and_lift"]
    assert grasp["held"]["passed"] is False and grasp["held"]["value"] > 10 * grasp["held"]["details"]["reference_slip_m"]
    assert grasp["box_trajectory"]["passed"] is False
