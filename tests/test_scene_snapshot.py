"""The scene reader: resolved gravity in SI and the simulator attributes it keys by element."""
from __future__ import annotations

import math

import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usd_repair_verifier.stage_snapshot import scene


def _stage(up: str = "Z", mpu: float = 1.0) -> Usd.Stage:
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, up)
    UsdGeom.SetStageMetersPerUnit(stage, mpu)
    return stage


def _scenes(stage):
    parsed = UsdPhysics.LoadUsdPhysicsFromRange(stage, ["/"])
    return scene.read_scenes(parsed, UsdGeom.GetStageMetersPerUnit(stage))


@pytest.mark.parametrize("up, expected", [("Z", (0, 0, -9.81)), ("Y", (0, -9.81, 0))])
def test_unauthored_gravity_is_earth_gravity_down_the_up_axis(up, expected):
    stage = _stage(up)
    UsdPhysics.Scene.Define(stage, "/World")
    (got,) = _scenes(stage)
    assert got.gravity == pytest.approx(expected, abs=1e-4)


def test_gravity_in_centimetres_reads_in_si():
    stage = _stage("Z", 0.01)
    s = UsdPhysics.Scene.Define(stage, "/World")
    s.CreateGravityMagnitudeAttr(981.0)
    s.CreateGravityDirectionAttr(Gf.Vec3f(0, 0, -2))   # not unit length: only the direction counts
    (got,) = _scenes(stage)
    assert got.gravity == pytest.approx((0, 0, -9.81), abs=1e-4)
    # The unauthored magnitude in a centimetre stage is also Earth's gravity.
    s.GetGravityMagnitudeAttr().Clear()
    (got,) = _scenes(stage)
    assert got.gravity == pytest.approx((0, 0, -9.81), abs=1e-3)


def test_zero_gravity_is_zero():
    stage = _stage()
    UsdPhysics.Scene.Define(stage, "/World").CreateGravityMagnitudeAttr(0.0)
    (got,) = _scenes(stage)
    assert all(c == 0 for c in got.gravity)


def test_simulator_attributes_by_element_and_attached_prim():
    stage = _stage()
    body = UsdGeom.Xform.Define(stage, "/Robot/Body").GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(body)
    body.CreateAttribute("newton:damping", Sdf.ValueTypeNames.Float).Set(0.5)
    body.CreateAttribute("physics:mass", Sdf.ValueTypeNames.Float).Set(2.0)        # measured by the mass family
    body.CreateAttribute("physics:velocity", Sdf.ValueTypeNames.Vector3f).Set(Gf.Vec3f(100, 0, 0))
    actuator = stage.DefinePrim("/Robot/Actuator", "MjcActuator")
    actuator.CreateAttribute("mjc:gear", Sdf.ValueTypeNames.DoubleArray).Set([2.0, 0, 0, 0, 0, 0])
    actuator.CreateRelationship("mjc:target").SetTargets(["/Robot/Body"])
    UsdGeom.SetStageMetersPerUnit(stage, 0.01)
    got = scene.read_simulator_attributes(stage, {"/Robot/Body"}, set(), set(), 0.01, 1.0)
    assert got["/Robot/Body"]["newton:damping"] == pytest.approx(0.5)
    assert "physics:mass" not in got["/Robot/Body"]
    assert got["/Robot/Body"]["physics:velocity"] == pytest.approx((1.0, 0.0, 0.0))   # cm/s -> m/s
    assert got["mjc:target of /Robot/Body"]["mjc:gear"] == (2.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize("a, b, equal", [
    (1.0, 1.0 + 1e-7, True), (1.0, 1.001, False), (math.nan, math.nan, True), (math.inf, math.inf, True),
    (math.inf, 1e30, False), ((1.0, 2.0), (1.0, 2.0), True), ((1.0,), (1.0, 2.0), False), ("rk4", "euler", False),
])
def test_values_equal(a, b, equal):
    assert scene.values_equal(a, b) is equal
