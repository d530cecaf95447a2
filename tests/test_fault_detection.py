"""Faults found by comparison (freeze without --faults, a manifest's collateral) are named by the kind
whose injector would make that difference, and only by kinds that can apply to the target."""
from __future__ import annotations

import shutil
from pathlib import Path

from pxr import Usd

from usd_repair_verifier.authoring.freeze import detect_faults
from usd_repair_verifier.authoring.inject_targets import list_targets

ROOT = Path(__file__).resolve().parent.parent
CABINET = ROOT / "fixtures" / "assets" / "cabinet_cm"
CASES = ROOT / "fixtures" / "cases"
HINGE, SLIDE = "/Cabinet/Joints/DoorHinge", "/Cabinet/Joints/DrawerSlide"


def edited(tmp_path: Path, joint: str, attribute: str, change: float) -> Path:
    """The cabinet with one limit of one joint edited where it is authored."""
    out = tmp_path / "edited"
    shutil.copytree(CABINET, out)
    stage = Usd.Stage.Open(str(out / "cabinet.usda"))
    spec = stage.GetPrimAtPath(joint).GetAttribute(attribute).GetPropertyStack()[0]
    spec.default = spec.default + change
    spec.layer.Save()
    return out


def kinds(found) -> list[tuple[str, str]]:
    return [(f.kind, f.target) for f in found]


def test_an_edited_revolute_limit_is_changed_limits_not_radians(tmp_path):
    # 110 -> 95: joint_limit_units' injector would have turned both limits into radians.
    assert kinds(detect_faults(CABINET, edited(tmp_path, HINGE, "physics:upperLimit", -15.0))) == [("joint_limits", HINGE)]


def test_limits_in_radians_are_found_as_such():
    case = CASES / "ant_two_joint_faults"
    found = kinds(detect_faults(case / "reference", case / "input"))
    assert ("joint_limit_units", "/ant/Geometry/torso/front_right_leg/aux_2/Body/ankle_2") in found


def test_a_kind_that_cannot_apply_is_never_named(tmp_path):
    # A prismatic joint's limit edited: joint_limit_units refuses a prismatic joint (inject --targets).
    refused = dict(list_targets(CABINET, ["joint_limit_units"])[0].refused)
    assert SLIDE in refused
    found = kinds(detect_faults(CABINET, edited(tmp_path, SLIDE, "physics:upperLimit", -5.0)))
    assert found == [("joint_limits", SLIDE)]


def test_what_a_fault_brings_with_it_is_not_a_fault_of_its_own():
    # A joint attached to the wrong body also has its frame and travel elsewhere: one fault, not three.
    case = CASES / "hopper_graph_and_state"
    found = kinds(detect_faults(case / "reference", case / "input"))
    assert found == [("joint_graph", "/hopper/Geometry/torso/thigh/leg/foot/foot_joint"),
                     ("joint_state", "/hopper/Geometry/torso/thigh/leg/leg_joint")]
