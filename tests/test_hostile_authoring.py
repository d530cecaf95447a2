"""Hostile authoring: wrong types, shapes, non-finite values, degenerate geometry and
ambiguous time samples, graded end to end through the operator's command.

A submission is never a verifier fault: each of these once ended (or could end) as an
infrastructure error or as a silent pass. Every value the snapshot reads goes through
one typed reader; what it cannot use, and a property whose default and start-time
value disagree, fails the checks that read it: preservation fails when the property
was healthy, fault credit is lost when it was targeted. Shares the helpers and the
outcome table of test_hostile_submissions.py.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable

import pytest
from pxr import Gf, Sdf, Usd, UsdGeom

from tests.test_hostile_submissions import (  # noqa: F401 (outcome_table is a fixture)
    ANT,
    ANT_HIP_1,
    ANT_HIP_3,
    ANT_TIP,
    ANT_TIP_GEOM,
    CABINET,
    CAB_DRAWER,
    CAB_PANEL,
    assert_graded_no_better,
    assert_rejected,
    copy_of,
    grade,
    in_root,
    outcome_table,
)

CAB_SHELF = "/Cabinet/Carcass/Visuals/Shelf"
CHEETAH = ANT.parent / "cheetah_visual_and_shape"


def typed(path: str, name: str, type_name, value) -> Callable[[Usd.Stage], None]:
    """Author `value` as `type_name` in the root layer through Sdf: a hostile layer may hold any
    type for a schema attribute (USD's stage API would refuse it)."""
    def edit(stage: Usd.Stage) -> None:
        spec = Sdf.CreatePrimInLayer(stage.GetRootLayer(), path)
        old = spec.properties.get(name)
        if old is not None:
            spec.RemoveProperty(old)
        Sdf.AttributeSpec(spec, name, type_name).default = value
    return edit


def sampled_at_start(path: str, name: str, change: Callable) -> Callable[[Usd.Stage], None]:
    """Keep the default, add a time sample at the start time holding change(default)."""
    def edit(stage: Usd.Stage) -> None:
        attr = stage.GetPrimAtPath(path).GetAttribute(name)
        attr.Set(change(attr.Get()), Usd.TimeCode(stage.GetStartTimeCode()))
    return edit


def zero_scale(path: str) -> Callable[[Usd.Stage], None]:
    def edit(stage: Usd.Stage) -> None:
        UsdGeom.Xformable(stage.GetPrimAtPath(path)).AddScaleOp(opSuffix="hostile").Set(Gf.Vec3f(0, 0, 0))
    return edit


def moved_at_start(path: str) -> Callable[[Usd.Stage], None]:
    def edit(stage: Usd.Stage) -> None:
        op = UsdGeom.Xformable(stage.GetPrimAtPath(path)).AddTranslateOp(opSuffix="hostile")
        op.Set(Gf.Vec3d(0, 0, 0))
        op.Set(Gf.Vec3d(0, 0, 0.5), Usd.TimeCode(0.0))
    return edit


T = Sdf.ValueTypeNames
NAN = float("nan")

# name -> (case, edit of the reference's root layer, preservation gate, words its report must name)
ATTACKS = {
    # class 1: wrong types, shapes, non-finite values, degenerate geometry
    "ant_visible_part_scaled_to_zero": (ANT, zero_scale(ANT_TIP_GEOM), "retained_visible_components",
                                        ("third_ankle_geom",)),
    "cabinet_shelf_scaled_to_zero": (CABINET, zero_scale(CAB_SHELF), "retained_visible_components", ("Shelf",)),
    "cabinet_drawer_center_of_mass_string": (
        CABINET, typed(CAB_DRAWER, "physics:centerOfMass", T.String, "abc"), "healthy_body_properties",
        (CAB_DRAWER, "physics:centerOfMass", "authored as string")),
    "cabinet_drawer_diagonal_inertia_float": (
        CABINET, typed(CAB_DRAWER, "physics:diagonalInertia", T.Float, 1.0), "healthy_body_properties",
        (CAB_DRAWER, "physics:diagonalInertia", "expected three numbers")),
    "cabinet_drawer_principal_axes_string": (
        CABINET, typed(CAB_DRAWER, "physics:principalAxes", T.String, "x"), "healthy_body_properties",
        (CAB_DRAWER, "physics:principalAxes", "expected a quaternion")),
    "cabinet_drawer_mass_infinite": (
        CABINET, typed(CAB_DRAWER, "physics:mass", T.Float, math.inf), "healthy_body_properties",
        (CAB_DRAWER, "physics:mass", "not finite")),
    "cabinet_drawer_mass_as_array": (
        CABINET, typed(CAB_DRAWER, "physics:mass", T.FloatArray, [3.5, 3.5]), "healthy_body_properties",
        (CAB_DRAWER, "physics:mass", "expected a number")),
    "cabinet_panel_points_with_nan": (
        CABINET, typed(CAB_PANEL, "points", T.Point3fArray, [(NAN, 0, 0)] * 8), "retained_visible_components",
        ("Panel",)),
    "cabinet_shelf_size_as_string": (
        CABINET, typed(CAB_SHELF, "size", T.String, "big"), "retained_visible_components", ("Shelf",)),
    "ant_healthy_joint_local_pos_string": (
        ANT, typed(ANT_HIP_3, "physics:localPos0", T.String, "0 0 0"), "healthy_joints",
        ("hip_3", "physics:localPos0")),
    "ant_healthy_joint_lower_limit_nan": (
        ANT, typed(ANT_HIP_3, "physics:lowerLimit", T.Float, NAN), "healthy_joints", ("hip_3", "physics:lowerLimit")),
    "ant_collision_enabled_as_string": (
        ANT, typed(ANT_TIP_GEOM, "physics:collisionEnabled", T.String, "no"), "collision_support",
        (ANT_TIP, "physics:collisionEnabled")),
    "ant_body_kinematic_as_int": (
        ANT, typed(ANT_TIP, "physics:kinematicEnabled", T.Int, 1), "healthy_body_properties",
        (ANT_TIP, "physics:kinematicEnabled", "expected a bool")),
    # class 5: a default that is healthy, and a different value at the start time
    "ant_healthy_joint_limit_sampled_at_start": (
        ANT, sampled_at_start(ANT_HIP_3, "physics:lowerLimit", lambda v: v - 40.0), "healthy_joints",
        ("hip_3", "ambiguous time samples")),
    "cabinet_drawer_mass_sampled_at_start": (
        CABINET, sampled_at_start(CAB_DRAWER, "physics:mass", lambda v: v * 10.0), "healthy_body_properties",
        (CAB_DRAWER, "ambiguous time samples")),
    "cabinet_panel_points_sampled_at_start": (
        CABINET, sampled_at_start(CAB_PANEL, "points", lambda v: [(2 * p[0], 2 * p[1], 2 * p[2]) for p in v]),
        "retained_visible_components", ("Panel",)),
    "ant_visible_part_moved_at_start": (ANT, moved_at_start(ANT_TIP_GEOM), "retained_visible_components",
                                        ("third_ankle_geom",)),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_hostile_authoring_fails_preservation_never_infrastructure(name, tmp_path, outcome_table):
    case, edit, gate, words = ATTACKS[name]
    submission = in_root(copy_of(case, "reference", tmp_path), edit)
    r = grade(name, case, submission, tmp_path / "out", outcome_table)
    assert_rejected(r, "preservation_failed", gate, words)


def test_time_samples_agreeing_with_the_default_still_score_one(tmp_path, outcome_table):
    """Control: a sample at the start time equal to the default, another later: not ambiguous."""
    def edit(stage):
        attr = stage.GetPrimAtPath(CAB_DRAWER).GetAttribute("physics:mass")
        attr.Set(attr.Get(), Usd.TimeCode(stage.GetStartTimeCode()))
        attr.Set(attr.Get() * 10.0, Usd.TimeCode(stage.GetStartTimeCode() + 100.0))
    submission = in_root(copy_of(CABINET, "reference", tmp_path), edit)
    r = grade("cabinet_drawer_mass_sampled_later_only", CABINET, submission, tmp_path / "out", outcome_table)
    assert r.grade["status"] == "graded" and r.reward == {"authored_usd": 1.0}, r.grade["reasons"]


def _repair_f1(stage: Usd.Stage, reference: Path, keep_broken_sample: bool) -> None:
    healthy = Usd.Stage.Open(str(reference))
    good = healthy.GetPrimAtPath(ANT_HIP_1).GetAttribute("physics:localPos1").Get()
    attr = stage.GetPrimAtPath(ANT_HIP_1).GetAttribute("physics:localPos1")
    broken = attr.Get()
    attr.Set(good)
    if keep_broken_sample:
        attr.Set(broken, Usd.TimeCode(stage.GetStartTimeCode()))


def test_repair_as_default_under_a_broken_start_sample_earns_no_fault_credit(tmp_path, outcome_table):
    """The repaired default over the broken value sampled at the start time is not a repair."""
    reference = ANT / "reference" / "ant.usda"
    honest = in_root(copy_of(ANT, "input", tmp_path, "honest"), lambda s: _repair_f1(s, reference, False))
    hidden = in_root(copy_of(ANT, "input", tmp_path, "hidden"), lambda s: _repair_f1(s, reference, True))
    honest_r = grade("ant_f1_repaired_honestly", ANT, honest, tmp_path / "out_honest", outcome_table)
    hidden_r = grade("ant_f1_repaired_under_broken_start_sample", ANT, hidden, tmp_path / "out_hidden", outcome_table)
    assert honest_r.reward["authored_usd"] > 0.0, honest_r.grade["reasons"]
    # The ambiguous limits also feed the joint's other checks, which are preserved like a healthy
    # joint's (the exemption is per property): preservation fails, reward 0.
    assert hidden_r.grade["status"] == "preservation_failed", hidden_r.grade["reasons"]
    assert hidden_r.reward["authored_usd"] < honest_r.reward["authored_usd"]
    f1 = [c for c in hidden_r.grade["checks"] if c["fault"] == "f1"]
    assert f1 and not any(c["passed"] for c in f1) and all(c["progress"] == 0.0 for c in f1), f1
    # As if f1 had not been touched at all: the input with nothing repaired scores the same.
    assert hidden_r.reward["authored_usd"] == 0.0, hidden_r.grade["reasons"]
    assert any("ambiguous time samples" in json.dumps(c) for c in f1), f1


def test_cheetah_body_enabled_as_string_fails_preservation(tmp_path, outcome_table):
    """Another asset (converted MuJoCo cheetah): a healthy body's rigidBodyEnabled authored as a string."""
    body = "/cheetah/Geometry/torso/bthigh/bshin/bfoot"   # untargeted by the case's two faults
    submission = in_root(copy_of(CHEETAH, "reference", tmp_path),
                         typed(body, "physics:rigidBodyEnabled", T.String, "true"))
    r = grade("cheetah_body_enabled_as_string", CHEETAH, submission, tmp_path / "out", outcome_table)
    assert_rejected(r, "preservation_failed", "healthy_body_properties", (body, "physics:rigidBodyEnabled"))
