"""The typed reader and the authoring audit, fed wrong types, shapes and degenerate geometry.

Property-based (hypothesis): any value of any USD type, authored on any attribute the
snapshot reads, on a body, its collider, a mesh or a joint, must (1) never raise out of
the snapshot, (2) be recorded as an authoring problem when it is not of the expected
kind, and (3) when graded against the healthy asset, fail a check (never an exception,
never a silent pass).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, Vt

from usd_repair_verifier.checks.measurement import Comparison
from usd_repair_verifier.checks.registry import Measurements, every_measurement
from usd_repair_verifier.gates.names import OBJECTIVE_GATES, PRESERVATION_GATES, evaluator
from usd_repair_verifier.stage_snapshot import authoring_problems as authoring, typed_read
from usd_repair_verifier.stage_snapshot.correspondence import correspond
from usd_repair_verifier.stage_snapshot.read import snapshot
from usd_repair_verifier.profiles.vocabulary import DEFAULT_CORRESPONDENCE, DEFAULT_TOLERANCES

BODY, BOX, MESH, JOINT = "/World/Body", "/World/Body/Box", "/World/Body/Mesh", "/World/Joint"
SCENE = "/World/Scene"
SAMPLING = {"seed": 1, "surface_samples": 64, "free_space_samples": 32}


def healthy_layer() -> Sdf.Layer:
    """A fresh anonymous layer holding the healthy asset (the caller keeps it alive)."""
    layer = Sdf.Layer.CreateAnonymous(".usda")
    layer.ImportFromString(_HEALTHY_TEXT)
    return layer


def _healthy_text() -> str:
    """A body with a collider cube, a visible mesh (a tetrahedron, grey by its display colour) and a
    revolute joint to the world, in a physics scene with gravity authored."""
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdGeom.Xform.Define(stage, "/World")
    body = UsdGeom.Xform.Define(stage, BODY)
    body.AddTranslateOp().Set(Gf.Vec3d(0, 0, 1))
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    mass = UsdPhysics.MassAPI.Apply(body.GetPrim())
    mass.CreateMassAttr(2.0)
    box = UsdGeom.Cube.Define(stage, BOX)
    box.CreateSizeAttr(0.5)
    UsdPhysics.CollisionAPI.Apply(box.GetPrim())
    mesh = UsdGeom.Mesh.Define(stage, MESH)
    mesh.CreatePointsAttr([(0, 0, 0), (0.3, 0, 0), (0, 0.3, 0), (0, 0, 0.3)])
    mesh.CreateFaceVertexCountsAttr([3, 3, 3, 3])
    mesh.CreateFaceVertexIndicesAttr([0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3])
    mesh.CreateDisplayColorAttr([(0.5, 0.5, 0.5)])
    mesh.CreateDisplayOpacityAttr([1.0])
    scene = UsdPhysics.Scene.Define(stage, SCENE)
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0, 0, -1))
    scene.CreateGravityMagnitudeAttr(9.81)
    joint = UsdPhysics.RevoluteJoint.Define(stage, JOINT)
    joint.CreateBody1Rel().SetTargets([Sdf.Path(BODY)])
    joint.CreateAxisAttr("Z")
    joint.CreateLowerLimitAttr(-30.0)
    joint.CreateUpperLimitAttr(30.0)
    joint.CreateLocalPos1Attr(Gf.Vec3f(0, 0, 0))
    return stage.GetRootLayer().ExportToString()


_HEALTHY_TEXT = _healthy_text()


# Where each audited attribute is authored, and the kind the reader expects there.
SITES = [(BODY, name) for name in ("physics:mass", "physics:density", "physics:centerOfMass",
                                   "physics:diagonalInertia", "physics:principalAxes", "physics:rigidBodyEnabled",
                                   "physics:kinematicEnabled", "physics:velocity")]
SITES += [(BOX, name) for name in ("size", "physics:collisionEnabled", "physics:mass", "visibility", "purpose")]
SITES += [(MESH, name) for name in ("points", "faceVertexCounts", "faceVertexIndices", "primvars:displayColor",
                                    "primvars:displayOpacity", "primvars:displayColor:indices")]
SITES += [(SCENE, name) for name in ("physics:gravityDirection", "physics:gravityMagnitude")]
SITES += [(JOINT, name) for name in ("physics:localPos0", "physics:localPos1", "physics:localRot0",
                                     "physics:lowerLimit", "physics:upperLimit", "physics:axis",
                                     "physics:jointEnabled", "drive:angular:physics:stiffness")]

FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=32)
# (Sdf type, strategy of Python values for it): every shape a hostile layer can hold.
TYPED_VALUES = st.one_of(
    st.tuples(st.just(Sdf.ValueTypeNames.String), st.text(max_size=8)),
    st.tuples(st.just(Sdf.ValueTypeNames.Token), st.sampled_from(["", "Z", "none", "invisible", "guide", "abc"])),
    st.tuples(st.just(Sdf.ValueTypeNames.Bool), st.booleans()),
    st.tuples(st.just(Sdf.ValueTypeNames.Int), st.integers(-2**31, 2**31 - 1)),
    st.tuples(st.just(Sdf.ValueTypeNames.Float), FLOATS),
    st.tuples(st.just(Sdf.ValueTypeNames.Double), st.floats(allow_nan=True, allow_infinity=True)),
    st.tuples(st.just(Sdf.ValueTypeNames.Float3), st.tuples(FLOATS, FLOATS, FLOATS).map(lambda v: Gf.Vec3f(*v))),
    st.tuples(st.just(Sdf.ValueTypeNames.Float2), st.tuples(FLOATS, FLOATS).map(lambda v: Gf.Vec2f(*v))),
    st.tuples(st.just(Sdf.ValueTypeNames.Quatf),
              st.tuples(FLOATS, FLOATS, FLOATS, FLOATS).map(lambda v: Gf.Quatf(v[0], v[1], v[2], v[3]))),
    st.tuples(st.just(Sdf.ValueTypeNames.Point3fArray),
              st.lists(st.tuples(FLOATS, FLOATS, FLOATS), max_size=6).map(Vt.Vec3fArray)),
    st.tuples(st.just(Sdf.ValueTypeNames.IntArray),
              st.lists(st.integers(-5, 9), max_size=12).map(Vt.IntArray)),
    st.tuples(st.just(Sdf.ValueTypeNames.FloatArray), st.lists(FLOATS, max_size=6).map(Vt.FloatArray)),
    st.tuples(st.just(Sdf.ValueTypeNames.Matrix4d), st.just(Gf.Matrix4d(0.0))),
)


def author(layer: Sdf.Layer, prim: str, name: str, type_name, value, time: float | None = None) -> None:
    """Author through Sdf: USD's stage API would refuse a value of the wrong type, a hostile layer does not."""
    spec = layer.GetPrimAtPath(prim)
    attr = spec.properties.get(name) if spec else None
    if attr is not None:
        spec.RemoveProperty(attr)
    attr = Sdf.AttributeSpec(spec, name, type_name)
    if time is None:
        attr.default = value
    else:
        layer.SetTimeSample(attr.path, time, value)


def expected_ok(kind: str, type_name, value) -> bool:
    """Whether the reader must accept this value as `kind` (the oracle, written independently)."""
    if kind == "real":
        return type_name in (Sdf.ValueTypeNames.Int, Sdf.ValueTypeNames.Float, Sdf.ValueTypeNames.Double) \
            and math.isfinite(float(value))
    if kind == "bound":  # a limit: infinite means "no limit", NaN is an error
        return type_name in (Sdf.ValueTypeNames.Int, Sdf.ValueTypeNames.Float, Sdf.ValueTypeNames.Double) \
            and not math.isnan(float(value))
    if kind == "vec3":
        return type_name == Sdf.ValueTypeNames.Float3 and all(math.isfinite(c) for c in value)
    if kind == "quat":
        parts = [value.GetReal(), *value.GetImaginary()] if type_name == Sdf.ValueTypeNames.Quatf else []
        return bool(parts) and all(math.isfinite(c) for c in parts) and math.hypot(*parts) >= 1e-12
    if kind == "points":
        return type_name == Sdf.ValueTypeNames.Point3fArray and bool(np.isfinite(np.asarray(value)).all())
    if kind == "ints":
        return type_name == Sdf.ValueTypeNames.IntArray
    if kind == "colors":
        return type_name in (Sdf.ValueTypeNames.Point3fArray, Sdf.ValueTypeNames.Float3) \
            and bool(np.isfinite(np.asarray(value, dtype=float)).all())
    if kind == "reals":  # integers are numbers, one or an array of them (as for "real")
        return type_name in (Sdf.ValueTypeNames.Int, Sdf.ValueTypeNames.Float, Sdf.ValueTypeNames.Double,
                             Sdf.ValueTypeNames.IntArray, Sdf.ValueTypeNames.FloatArray) \
            and bool(np.isfinite(np.asarray(value, dtype=float)).all())
    if kind == "token":
        return type_name in (Sdf.ValueTypeNames.String, Sdf.ValueTypeNames.Token)
    if kind == "bool":
        return type_name == Sdf.ValueTypeNames.Bool
    raise AssertionError(kind)


def grade_in_memory(reference, candidate_stage) -> list:
    """Every measurement and gate of a grade, in process: any exception is the verifier's fault."""
    candidate = snapshot(candidate_stage, "", SAMPLING)
    match = correspond(reference, candidate, DEFAULT_CORRESPONDENCE["max_body_cost"],
                       DEFAULT_CORRESPONDENCE["max_joint_cost"])
    measurements = Measurements(Comparison(reference, candidate, match, dict(DEFAULT_TOLERANCES)))
    results = [measurements.check(*key) for key in every_measurement(reference)]
    gates = [evaluator("preservation", gate)(measurements, _NoFaults()) for gate in PRESERVATION_GATES]
    gates += [evaluator("objective", gate)(measurements, _NoFaults()) for gate in OBJECTIVE_GATES]
    return results + gates


class _NoFaults:
    """The profile of a case with no fault: everything is healthy."""
    targeted: frozenset = frozenset()
    input_state: dict = {}
    checks: tuple = ()


@pytest.fixture(scope="module")
def reference():
    return snapshot(Usd.Stage.Open(healthy_layer()), "", SAMPLING)


def test_the_healthy_asset_has_no_authoring_problem_and_grades_clean(reference):
    assert reference.authoring_problems == {}
    results = grade_in_memory(reference, Usd.Stage.Open(healthy_layer()))
    failing = [r for r in results if getattr(r, "passed", True) is False]
    assert not failing, failing


# Derandomized: the same examples in every run (CI never meets an example no run here met).
@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(site=st.sampled_from(SITES), typed=TYPED_VALUES)
# A point at infinity gives the body an infinite extent, whose ratio to a finite one once raised
# in the correspondence's cost (found by this test, kept as a fixed example).
@example(site=(MESH, "points"), typed=(Sdf.ValueTypeNames.Point3fArray, Vt.Vec3fArray([(0.0, 0.0, math.inf)])))
# Opacities authored as integers: numbers the reader takes (the oracle once refused them).
@example(site=(MESH, "primvars:displayOpacity"), typed=(Sdf.ValueTypeNames.IntArray, Vt.IntArray([])))
@example(site=(MESH, "primvars:displayOpacity"), typed=(Sdf.ValueTypeNames.IntArray, Vt.IntArray([1, 0])))
# A joint frame at infinity: the joint no longer corresponds, its checks fail as missing (found here).
@example(site=("/World/Joint", "physics:localRot0"),
         typed=(Sdf.ValueTypeNames.Quatf, Gf.Quatf(0.0, Gf.Vec3f(0.0, 0.0, math.inf))))
@pytest.mark.slow
def test_any_value_on_any_read_attribute_never_raises_and_is_graded(reference, site, typed):
    prim, name = site
    type_name, raw = typed
    layer = healthy_layer()
    author(layer, prim, name, type_name, raw)
    stage = Usd.Stage.Open(layer)
    kind = authoring.kind_of(name)
    found, why = typed_read.read(stage.GetPrimAtPath(prim).GetAttribute(name), kind)
    problems = dict(authoring.problems(stage).get(prim, ()))
    if not expected_ok(kind, type_name, raw):
        assert found is None and why, (found, why)
        assert name in problems and problems[name] == why
    elif name.endswith(":indices") and any(not 0 <= i < 1 for i in raw):   # one colour to index
        assert why is None and "do not all point into" in problems.get(name, ""), problems
    else:
        assert why is None and name not in problems, (why, problems)
    # Through the grade: nothing raises; an authoring problem fails every check that reads it.
    results = grade_in_memory(reference, stage)
    if name in problems and prim == SCENE:   # no check reads gravity: the scene gate names it
        scene_gate = next(r for r in results if getattr(r, "gate", None) == "physics_scene")
        assert scene_gate.passed is False and any(name in f.reason for f in scene_gate.failures), scene_gate
    elif name in problems:
        flagged = [r for r in results if hasattr(r, "components") and "authoring" in r.components]
        # A value that leaves its element unmatched (a joint frame at infinity) fails every check of
        # that element as missing instead of naming the attribute.
        on_prim = [r for r in results if hasattr(r, "components") and r.target == prim]
        assert (flagged and all(r.passed is False for r in flagged)) or \
            (on_prim and all(r.passed is False for r in on_prim)), \
            [(getattr(r, "check", None) or r.gate, r.passed) for r in results]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(scale=st.tuples(*[st.sampled_from([0.0, 1e-30, -1.0, 1.0, math.inf, math.nan, 1e30])] * 3),
       where=st.sampled_from([BODY, BOX, MESH]))
@pytest.mark.slow
def test_degenerate_scales_never_raise(reference, scale, where):
    """Zero, tiny, mirrored, huge and non-finite scales on a body, its collider or its mesh."""
    layer = healthy_layer()
    author(layer, where, "xformOp:scale", Sdf.ValueTypeNames.Float3, Gf.Vec3f(*scale))
    author(layer, where, "xformOpOrder", Sdf.ValueTypeNames.TokenArray, Vt.TokenArray(["xformOp:scale"]))
    stage = Usd.Stage.Open(layer)
    results = grade_in_memory(reference, stage)
    if any(c != 1.0 and abs(c) != 1.0 for c in scale):  # a part shrunk, blown up or made NaN: some check sees it
        assert any(getattr(r, "passed", True) is False for r in results), scale


DEGENERATE_GEOMETRY = {
    "mesh_collapsed_to_a_point": (MESH, "points", Sdf.ValueTypeNames.Point3fArray, Vt.Vec3fArray([(0, 0, 0)] * 4)),
    "mesh_flattened_to_a_line": (MESH, "points", Sdf.ValueTypeNames.Point3fArray,
                                 Vt.Vec3fArray([(0, 0, 0), (0.1, 0, 0), (0.2, 0, 0), (0.3, 0, 0)])),
    "mesh_without_faces": (MESH, "faceVertexCounts", Sdf.ValueTypeNames.IntArray, Vt.IntArray([])),
    "mesh_faces_of_one_and_two_vertices": (MESH, "faceVertexCounts", Sdf.ValueTypeNames.IntArray,
                                           Vt.IntArray([1, 2, 0, 9])),
    "mesh_indices_out_of_range": (MESH, "faceVertexIndices", Sdf.ValueTypeNames.IntArray, Vt.IntArray([99] * 12)),
    "mesh_negative_indices": (MESH, "faceVertexIndices", Sdf.ValueTypeNames.IntArray, Vt.IntArray([-1] * 12)),
    "collider_of_size_zero": (BOX, "size", Sdf.ValueTypeNames.Double, 0.0),
    "collider_of_negative_size": (BOX, "size", Sdf.ValueTypeNames.Double, -0.5),
    "collider_of_enormous_size": (BOX, "size", Sdf.ValueTypeNames.Double, 1e30),
}


@pytest.mark.parametrize("name", list(DEGENERATE_GEOMETRY))
def test_degenerate_geometry_never_raises_and_fails_a_check(reference, name):
    """Well-typed values that describe no solid or no surface: the snapshot reads them without an
    exception, and the grade sees the part or collider changed."""
    prim, attribute, type_name, value = DEGENERATE_GEOMETRY[name]
    layer = healthy_layer()
    author(layer, prim, attribute, type_name, value)
    results = grade_in_memory(reference, Usd.Stage.Open(layer))
    assert any(getattr(r, "passed", True) is False for r in results), name


@pytest.mark.parametrize("site, start_value", [
    ((BODY, "physics:mass"), 7.0),
    ((JOINT, "physics:upperLimit"), 90.0),
    ((MESH, "points"), Vt.Vec3fArray([(0, 0, 0), (0.6, 0, 0), (0, 0.6, 0), (0, 0, 0.6)])),
    ((BOX, "size"), 2.0),
])
def test_default_and_start_time_disagreeing_fail_the_property(reference, site, start_value):
    """The healthy default, a different value sampled at the start time: ambiguous, so the property fails."""
    prim, name = site
    layer = healthy_layer()
    stage = Usd.Stage.Open(layer)
    attr = stage.GetPrimAtPath(prim).GetAttribute(name)
    attr.Set(start_value, Usd.TimeCode(0.0))
    problems = dict(authoring.problems(stage).get(prim, ()))
    assert "ambiguous time samples" in problems.get(name, ""), problems
    flagged = [r for r in grade_in_memory(reference, stage) if hasattr(r, "components") and "authoring" in r.components]
    assert flagged and all(r.passed is False for r in flagged)
    assert any("ambiguous time samples" in r.details for r in flagged)


def test_a_spline_disagreeing_with_the_default_is_ambiguous():
    """Splines (animation curves) are not time samples: USD reports none, the value at a time still differs."""
    from pxr import Ts

    layer = healthy_layer()
    stage = Usd.Stage.Open(layer)
    attr = stage.GetPrimAtPath(BODY).GetAttribute("physics:mass")
    spline = Ts.Spline("float")
    spline.SetKnot(Ts.Knot("float", time=0.0, value=7.0))
    attr.SetSpline(spline)
    assert attr.GetNumTimeSamples() == 0 and attr.Get() == 2.0
    assert "ambiguous time samples" in dict(authoring.problems(stage)[BODY])["physics:mass"]


def test_time_samples_that_agree_with_the_default_are_not_a_problem(reference):
    layer = healthy_layer()
    stage = Usd.Stage.Open(layer)
    attr = stage.GetPrimAtPath(BODY).GetAttribute("physics:mass")
    attr.Set(2.0, Usd.TimeCode(0.0))
    attr.Set(9.0, Usd.TimeCode(50.0))   # later samples: not the start time
    assert authoring.problems(stage) == {}


def test_a_time_varying_transform_at_the_start_time_is_ambiguous():
    layer = healthy_layer()
    stage = Usd.Stage.Open(layer)
    op = UsdGeom.Xformable(stage.GetPrimAtPath(BODY)).GetOrderedXformOps()[0]
    op.Set(Gf.Vec3d(0, 0, 5), Usd.TimeCode(0.0))
    assert "ambiguous time samples" in dict(authoring.problems(stage)[BODY])[authoring.TRANSFORM]


@pytest.mark.parametrize("kind, raw, ok", [
    ("real", True, False), ("real", "1", False), ("real", float("nan"), False), ("real", 3, True),
    ("bound", float("inf"), True), ("bound", float("-inf"), True), ("bound", float("nan"), False),
    ("vec3", Gf.Vec3f(1, 2, 3), True), ("vec3", 1.0, False), ("vec3", Gf.Vec2f(1, 2), False),
    ("quat", Gf.Quatf(0, 0, 0, 0), False), ("quat", Gf.Quatd(1, 0, 0, 0), True), ("quat", "x", False),
    ("points", Vt.Vec3fArray([(0, 0, 0)]), True), ("points", Vt.FloatArray([1, 2, 3]), False),
    ("ints", Vt.IntArray([3]), True), ("ints", Vt.FloatArray([3.0]), False),
    ("token", "Z", True), ("token", 1, False), ("bool", False, True), ("bool", 0, False),
])
def test_convert_table(kind, raw, ok):
    if ok:
        typed_read.convert(raw, kind)
    else:
        with pytest.raises(typed_read.Unusable):
            typed_read.convert(raw, kind)


# --- through the grading session of a real case -----------------------------------------

CABINET_CASE = Path(__file__).resolve().parent.parent / "fixtures" / "cases" / "cabinet_drawer_door"
CABINET_SITES = [
    ("/Cabinet/Drawer", "physics:mass"), ("/Cabinet/Drawer", "physics:centerOfMass"),
    ("/Cabinet/Drawer", "physics:diagonalInertia"), ("/Cabinet/Drawer", "physics:principalAxes"),
    ("/Cabinet/Door/Visuals/Panel", "points"), ("/Cabinet/Door/Visuals/Panel", "faceVertexCounts"),
    ("/Cabinet/Carcass/Visuals/Shelf", "size"), ("/Cabinet/Drawer/Handle", "physics:approximation"),
    ("/Cabinet/Door/Knob", "physics:collisionEnabled"),
    ("/PhysicsScene", "physics:gravityMagnitude"), ("/PhysicsScene", "physics:gravityDirection"),
    ("/Cabinet/Carcass/Visuals/Shelf", "primvars:displayColor"),
    ("/Cabinet/Carcass/Visuals/Shelf", "primvars:displayOpacity"),
]


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(site=st.sampled_from(CABINET_SITES), typed=TYPED_VALUES)
@pytest.mark.slow
def test_hostile_values_through_a_grading_session_are_scores(tmp_path_factory, site, typed):
    """The plugin's session (validity worker, both snapshots, every check and gate): an exception
    anywhere here would be an infrastructure error, so none may escape."""
    from usd_repair_verifier.profiles.case import load_case
    from tests import grade_in_process, variants

    case = load_case(CABINET_CASE)
    submission = variants.copy_package(CABINET_CASE / "reference", tmp_path_factory.mktemp("hostile") / "pkg")
    prim, name = site
    type_name, raw = typed

    def edit(stage):
        Sdf.CreatePrimInLayer(stage.GetRootLayer(), prim)  # an over in the root layer, the strongest opinion
        author(stage.GetRootLayer(), prim, name, type_name, raw)
    variants.author_in_root_layer(submission, edit)
    session = grade_in_process.grading_session(case, submission)   # the reference read once
    assert session.validity.infrastructure_error is None, session.validity.infrastructure_error
    if not session.validity.valid:
        # Refused with a reason (e.g. a face count that composes past the triangle budget): an
        # invalid grade, reward 0, is a score; only an escaping exception would not be.
        assert session.validity.reason
        return
    assert session.candidate_readable, session.stage_rule
    for spec in case.profile.checks:
        session.measure_check(spec)
    for gate in PRESERVATION_GATES:
        session.preservation_gate(gate)
    for gate in OBJECTIVE_GATES:
        session.objective_gate(gate)
