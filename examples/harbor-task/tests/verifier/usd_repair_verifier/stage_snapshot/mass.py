"""Controlling mass properties of rigid bodies, as the UsdPhysics rules yield them.

The numbers come from ``UsdPhysics.RigidBodyAPI(prim).ComputeMassProperties(cb)``
(usd-core 26.11), which implements the precedence; this module supplies the
per-collider geometry through ``cb`` and converts the result to SI, world space.

Establishment rule (decides when a mass check is ``unmeasured``)
-----------------------------------------------------------------
"Authored" below means: the attribute ``HasAuthoredValue()`` on the composed
stage, its schema is applied (``PhysicsMassAPI`` on the body / collider,
``PhysicsMaterialAPI`` on the material; ComputeMassProperties ignores the
attributes otherwise), and the value is one the API honours.

* ``established["mass"]`` is True when any of these is authored with a value > 0:
  the body's ``physics:mass``; the body's ``physics:density`` (only if the body
  has at least one collider, otherwise a density determines nothing); the
  ``physics:mass`` or ``physics:density`` of a collider the API used; the
  ``physics:density`` of the physics material bound to such a collider
  (``ComputeBoundMaterial("physics")``, which falls back to the all-purpose
  binding, exactly as the API does).  Default density (1000 kg/m^3) alone
  never establishes mass.
* ``established["center_of_mass"]``: mass is established, or a finite
  ``physics:centerOfMass`` is authored on the body or on one of its colliders.
* ``established["inertia"]``: mass is established, or a non-zero
  ``physics:diagonalInertia`` is authored on the body or on one of its colliders
  (the API treats (0, 0, 0) as "not set").
  (The collider-level centre of mass / inertia is an extension of a
  body-only rule: the API honours those attributes, so they are authored
  determinants too.)

What ComputeMassProperties expects and returns (measured on usd-core 26.11)
---------------------------------------------------------------------------
* ``cb(prim: Usd.Prim) -> UsdPhysics.RigidBodyAPI.MassInformation`` is called
  once per collider prim (CollisionAPI) in ``UsdPrimRange(body)``, including
  the body prim itself and instance proxies; it skips colliders with
  ``physics:collisionEnabled = false`` (only that prim; its children are still
  visited), inactive prims, and the subtrees of nested rigid bodies that are
  enabled (kinematic or not); a nested body with ``rigidBodyEnabled = false``
  does not prune, its colliders count towards the enclosing body.
  Returning anything else raises TypeError; an exception in ``cb`` propagates
  to the Python caller.
* ``MassInformation``: ``volume`` (stage units^3), ``inertia`` (Gf.Matrix3f,
  unit-density inertia tensor about the shape's own centre of mass, in the
  shape frame), ``centerOfMass`` (shape frame), ``localPos`` / ``localRot``
  (shape frame -> body frame: ``p_body = localPos + rotate(localRot, p_shape)``).
  The body frame is the body's world transform with its scale removed
  (``Gf.Transform`` rotation + translation); lengths are stage units.
  A default-constructed MassInformation has volume 0 and a *zero* quaternion.
  ``volume < 0`` is "invalid": the API warns and adds a default
  UsdPhysicsMassProperties (mass 1, infinite centre of mass) -> garbage; so an
  unrecognised collider returns volume 0 (contributes 0 mass under density,
  NaN inertia if the collider has its own ``physics:mass``).
* Returns ``(mass, diagonalInertia, centerOfMass, principalAxes)`` as float32
  Gf values, all in **stage units** (mass in kg/kilogramsPerUnit, lengths in
  metres/metersPerUnit): mass; principal moments (unsorted) about the centre of
  mass; centre of mass in the body frame above; principal axes as a quaternion
  rotating the principal frame into the body frame
  (``I_body = R(q) diag(I) R(q)^T``, column-vector convention).
* Densities: authored densities (body, collider, material) are used as
  stage-unit densities (kg/kgPerUnit per unit^3) without conversion; the
  default is converted by the API: ``1000 * mpu^3 / kpu``.
* Precedence: body mass > 0 scales the collider-derived inertia to that mass;
  otherwise per collider: collider mass > 0, else density from collider
  density > 0, body density > 0, bound physics material density > 0, default.
  Negative / zero masses and densities are ignored (fall through); an authored
  diagonal inertia on the body overrides the computed one whatever its sign.
* A body with no colliders: mass = -1 (the API's "unset" sentinel) unless a
  body mass is authored; inertia (1, 1, 1) stage units or, with a mass, a
  0.1 m sphere approximation; centre of mass (0, 0, 0) or authored; the
  principal axes come back as *uninitialised memory* unless authored (this
  module substitutes the identity and notes it).

Shape rules follow UsdPhysics' own parser (``UsdPhysicsLoadStageFromPrimRange``):
scale is the collider's world ``Gf.Transform`` scale, baked into the shape
(sphere radius * max|s|; cube half extents * |s|; capsule/cylinder/cone radius
* max of the two off-axis |s|, height * |s_axis|; mesh points * s), and the
local position is the collider's translation relative to the body multiplied
by the body's scale.  Mesh colliders by ``physics:approximation``:
convexHull / convexDecomposition -> convex hull of the (scaled) points;
none / meshSimplification -> the mesh itself when watertight with consistent
winding, else the convex hull (noted); boundingCube -> the axis-aligned box of
the points in the mesh frame; boundingSphere -> the minimal enclosing sphere;
anything else is treated as none (noted).  Capsule_1 / Cylinder_1 with equal
radii are analytic, with unequal radii a tessellated convex hull (noted).
Hulls / mesh mass properties are cached per (mesh prim, or its prototype
prim for instance proxies; approximation; scale) within one context.

The API works in float32: expect ~1e-7 relative noise in every value.
Principal axes of equal moments are arbitrary within their eigenspace.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np
from pxr import Gf, Usd, UsdGeom, UsdPhysics, UsdShade

from . import typed_read

log = logging.getLogger(__name__)

__all__ = [
    "MassProperties",
    "SOURCES",
    "body_mass_properties",
    "stage_mass_properties",
]

#: ``MassProperties.source`` values, in precedence order; "none" when nothing
#: yields a mass (no body mass and no collider).
SOURCES = (
    "body mass",
    "collider mass",
    "collider density",
    "body density",
    "material density",
    "default density",
    "none",
)


@dataclass(frozen=True)
class MassProperties:
    mass: float  # kg (SI, after kilogramsPerUnit); -1*kpu is the API's "unset"
    center_of_mass: tuple[float, float, float]  # world space, metres
    principal_inertia: tuple[float, float, float]  # kg*m^2, sorted ascending
    principal_axes: tuple[float, float, float, float]  # world quaternion (w, x, y, z)
    source: str  # one of SOURCES
    established: dict[str, bool]  # {"mass", "center_of_mass", "inertia"}
    # Extras (not part of the comparison contract):
    colliders: tuple[str, ...] = ()  # collider prims the API used
    collider_sources: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # unrecognised colliders, fallbacks, API quirks


# --------------------------------------------------------------------------
# shape mass information (unit density, in the shape frame, scale baked in)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _ShapeMass:
    volume: float
    com: tuple[float, float, float]
    inertia: tuple[tuple[float, float, float], ...]  # 3x3 about com, shape axes
    note: str | None = None


_ZERO_SHAPE = _ShapeMass(0.0, (0.0, 0.0, 0.0), ((0.0,) * 3,) * 3)
_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}


def _diag_shape(volume, moments, com=(0.0, 0.0, 0.0), note=None) -> _ShapeMass:
    m = np.diag(np.asarray(moments, dtype=float))
    return _ShapeMass(float(volume), tuple(float(c) for c in com), tuple(map(tuple, m)), note)


def _axial_shape(axis: str, volume, i_axis, i_perp, com_along=0.0, note=None) -> _ShapeMass:
    k = _AXIS_INDEX.get(str(axis), 2)
    moments = [i_perp] * 3
    moments[k] = i_axis
    com = [0.0, 0.0, 0.0]
    com[k] = com_along
    return _diag_shape(volume, moments, com, note)


def _off_axis_max(scale, axis: str) -> float:
    k = _AXIS_INDEX.get(str(axis), 2)
    return max(abs(scale[i]) for i in range(3) if i != k)


def _box(half) -> _ShapeMass:
    a, b, c = (abs(float(x)) for x in half)
    v = 8.0 * a * b * c
    return _diag_shape(v, (v * (b * b + c * c) / 3.0, v * (a * a + c * c) / 3.0, v * (a * a + b * b) / 3.0))


def _sphere(r: float, center=(0.0, 0.0, 0.0)) -> _ShapeMass:
    v = 4.0 / 3.0 * math.pi * r**3
    i = 0.4 * v * r * r
    return _diag_shape(v, (i, i, i), center)


def _cylinder(r: float, h: float, axis: str) -> _ShapeMass:
    """Solid cylinder, radius r, total height h."""
    v = math.pi * r * r * h
    return _axial_shape(axis, v, 0.5 * v * r * r, v * (3.0 * r * r + h * h) / 12.0)


def _cone(r: float, h: float, axis: str) -> _ShapeMass:
    """UsdGeom.Cone: centred on the origin, apex towards +axis; centroid at -h/4."""
    v = math.pi * r * r * h / 3.0
    return _axial_shape(
        axis, v, 0.3 * v * r * r, v * (3.0 * r * r / 20.0 + 3.0 * h * h / 80.0), com_along=-h / 4.0
    )


def _capsule(r: float, h: float, axis: str) -> _ShapeMass:
    """Capsule, radius r, cylindrical part of length h (UsdGeom.Capsule.height)."""
    vc = math.pi * r * r * h
    vs = 4.0 / 3.0 * math.pi * r**3
    i_axis = 0.5 * vc * r * r + 0.4 * vs * r * r
    i_perp = vc * (h * h / 12.0 + r * r / 4.0) + vs * (0.4 * r * r + h * h / 4.0 + 3.0 * h * r / 8.0)
    return _axial_shape(axis, vc + vs, i_axis, i_perp)


def _tapered(r_top: float, r_bottom: float, h: float, axis: str, capsule: bool) -> _ShapeMass:
    """Capsule_1 / Cylinder_1 with unequal radii: convex hull of a fine tessellation."""
    if capsule:
        # hull of two spheres (top at +h/2, bottom at -h/2)
        u = _fibonacci_sphere(1500)
        pts = np.concatenate([u * r_top + [0, 0, h / 2.0], u * r_bottom - [0, 0, h / 2.0]])
    else:
        n = 512
        ang = np.linspace(0.0, 2.0 * math.pi, n, endpoint=False)
        circle = np.stack([np.cos(ang), np.sin(ang), np.zeros(n)], axis=1)
        pts = np.concatenate([circle * r_top + [0, 0, h / 2.0], circle * r_bottom - [0, 0, h / 2.0]])
    k = _AXIS_INDEX.get(str(axis), 2)
    # local w axis -> shape axis k (cyclic permutation keeps handedness)
    perm = [(k + 1) % 3, (k + 2) % 3, k]
    shape_pts = np.zeros_like(pts)
    shape_pts[:, perm[0]] = pts[:, 0]
    shape_pts[:, perm[1]] = pts[:, 1]
    shape_pts[:, perm[2]] = pts[:, 2]
    sm = _hull_mass(shape_pts)
    return _ShapeMass(sm.volume, sm.com, sm.inertia, "tapered shape: tessellated convex hull")


def _fibonacci_sphere(n: int) -> np.ndarray:
    i = np.arange(n) + 0.5
    phi = np.arccos(1.0 - 2.0 * i / n)
    theta = math.pi * (1.0 + 5.0**0.5) * i
    return np.stack([np.cos(theta) * np.sin(phi), np.sin(theta) * np.sin(phi), np.cos(phi)], axis=1)


def _triangles_mass(tris: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Unit-density volume, centre of mass and inertia (about the centre of mass)
    of a closed triangle surface (n, 3, 3): divergence-theorem integrals
    (Eberly, "Polyhedral Mass Properties"), the same as
    ``trimesh.triangles.mass_properties`` but about twice as fast.  Inverted
    winding is corrected (volume made positive)."""
    tris = np.asarray(tris, dtype=float)
    origin = tris.reshape(-1, 3).mean(axis=0)
    t = np.ascontiguousarray((tris - origin).transpose(1, 2, 0))  # (vertex, coord, n)
    p0, p1, p2 = t[0], t[1], t[2]
    e1, e2 = p1 - p0, p2 - p0
    d0 = e1[1] * e2[2] - e1[2] * e2[1]
    d1 = e1[2] * e2[0] - e1[0] * e2[2]
    d2 = e1[0] * e2[1] - e1[1] * e2[0]
    tmp0 = p0 + p1
    f1 = tmp0 + p2
    tmp1 = p0 * p0
    tmp2 = tmp1 + p1 * tmp0
    f2 = tmp2 + p2 * f1
    f3 = p0 * tmp1 + p1 * tmp2 + p2 * f2
    g0, g1, g2 = f2 + p0 * (f1 + p0), f2 + p1 * (f1 + p1), f2 + p2 * (f1 + p2)
    vol = float(d0 @ f1[0]) / 6.0
    if vol == 0.0 or not math.isfinite(vol):
        return 0.0, np.zeros(3), np.zeros((3, 3))
    first = np.array([d0 @ f2[0], d1 @ f2[1], d2 @ f2[2]]) / 24.0
    xx, yy, zz = d0 @ f3[0] / 60.0, d1 @ f3[1] / 60.0, d2 @ f3[2] / 60.0
    xy = d0 @ (p0[1] * g0[0] + p1[1] * g1[0] + p2[1] * g2[0]) / 120.0
    yz = d1 @ (p0[2] * g0[1] + p1[2] * g1[1] + p2[2] * g2[1]) / 120.0
    zx = d2 @ (p0[0] * g0[2] + p1[0] * g1[2] + p2[0] * g2[2]) / 120.0
    cx, cy, cz = first / vol
    inertia = np.array(
        [
            [yy + zz - vol * (cy * cy + cz * cz), -(xy - vol * cx * cy), -(zx - vol * cz * cx)],
            [-(xy - vol * cx * cy), xx + zz - vol * (cz * cz + cx * cx), -(yz - vol * cy * cz)],
            [-(zx - vol * cz * cx), -(yz - vol * cy * cz), xx + yy - vol * (cx * cx + cy * cy)],
        ]
    )
    if vol < 0.0:  # inverted winding
        vol, inertia = -vol, -inertia
    return vol, np.array([cx, cy, cz]) + origin, inertia


def _hull_mass(points: np.ndarray) -> _ShapeMass:
    from scipy.spatial import ConvexHull, QhullError

    pts = np.asarray(points, dtype=float)
    if len(pts) < 4:
        return _ShapeMass(0.0, _ZERO_SHAPE.com, _ZERO_SHAPE.inertia, "fewer than 4 points: no volume")
    try:
        hull = ConvexHull(pts)
    except (QhullError, ValueError) as exc:
        return _ShapeMass(0.0, _ZERO_SHAPE.com, _ZERO_SHAPE.inertia, f"degenerate convex hull: {exc.__class__.__name__}")
    simp = hull.simplices
    tri = pts[simp]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    flip = np.einsum("ij,ij->i", n, hull.equations[:, :3]) < 0.0
    simp = np.where(flip[:, None], simp[:, ::-1], simp)
    vol, com, inertia = _triangles_mass(pts[simp])
    return _ShapeMass(vol, tuple(map(float, com)), tuple(map(tuple, inertia)))


def _fan_triangles(counts: np.ndarray, indices: np.ndarray) -> np.ndarray | None:
    counts = np.asarray(counts, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    if counts.size == 0 or counts.sum() != indices.size or (counts < 0).any():
        return None
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    ntri = np.maximum(counts - 2, 0)
    total = int(ntri.sum())
    if total == 0:
        return None
    face = np.repeat(np.arange(counts.size), ntri)
    first_tri = np.concatenate([[0], np.cumsum(ntri)[:-1]])
    k = np.arange(total) - first_tri[face]
    s = starts[face]
    return np.stack([indices[s], indices[s + k + 1], indices[s + k + 2]], axis=1)


def _mesh_mass(prim: Usd.Prim, scale: np.ndarray, approximation: str) -> _ShapeMass:
    mesh = UsdGeom.Mesh(prim)
    pts = _get(mesh.GetPointsAttr(), "points")
    if pts is None or len(pts) == 0:
        return _ShapeMass(0.0, _ZERO_SHAPE.com, _ZERO_SHAPE.inertia, "mesh without points")
    pts = np.asarray(pts, dtype=float) * scale
    approx = str(approximation or "none")
    if approx == "boundingCube":
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        b = _box((hi - lo) / 2.0)
        return _ShapeMass(b.volume, tuple(map(float, (hi + lo) / 2.0)), b.inertia, None)
    if approx == "boundingSphere":
        import trimesh

        center, radius = trimesh.nsphere.minimum_nsphere(pts)
        return _sphere(float(radius), tuple(map(float, center)))
    if approx in ("convexHull", "convexDecomposition"):
        return _hull_mass(pts)
    note = None
    if approx not in ("none", "meshSimplification"):
        note = f"unknown approximation {approx!r}: treated as 'none'"
    counts = _get(mesh.GetFaceVertexCountsAttr(), "ints")
    indices = _get(mesh.GetFaceVertexIndicesAttr(), "ints")
    tris = _fan_triangles([] if counts is None else counts, [] if indices is None else indices)
    if tris is not None and (tris.min() < 0 or tris.max() >= len(pts)):
        tris = None
    if tris is not None:
        import trimesh

        tm = trimesh.Trimesh(vertices=pts, faces=tris, process=True)
        if tm.is_watertight and tm.is_winding_consistent:
            vol, com, inertia = _triangles_mass(tm.triangles)
            return _ShapeMass(vol, tuple(map(float, com)), tuple(map(tuple, inertia)), note)
    sm = _hull_mass(pts)
    why = "malformed topology" if tris is None else "not watertight"
    return _ShapeMass(sm.volume, sm.com, sm.inertia, "; ".join(x for x in (note, f"mesh {why}: convex hull used", sm.note) if x))


def _get(attr, kind: str):
    """The typed value (typed_read): the default, else the earliest time sample; None if unusable."""
    if not attr:
        return None
    val = typed_read.value(attr, kind)
    if val is None and attr.GetNumTimeSamples():
        val = typed_read.value(attr, kind, time=Usd.TimeCode.EarliestTime())
    return val


def _length(attr) -> float:
    """A size, radius or height: 0 (no volume) when it is unusable."""
    return _get(attr, "real") or 0.0


# --------------------------------------------------------------------------
# context shared across bodies
# --------------------------------------------------------------------------


class _Context:
    def __init__(self, stage: Usd.Stage, xform_cache: UsdGeom.XformCache | None = None):
        self.stage = stage
        self.xf = xform_cache if xform_cache is not None else UsdGeom.XformCache()
        self.mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
        self.kpu = float(UsdPhysics.GetStageKilogramsPerUnit(stage))
        self.shapes: dict[tuple, _ShapeMass] = {}

    # -- shape in its own (scaled) frame --------------------------------
    def shape_mass(self, prim: Usd.Prim, world_scale: Gf.Vec3d) -> _ShapeMass | None:
        s = np.array([float(world_scale[0]), float(world_scale[1]), float(world_scale[2])])
        a = np.abs(s)
        if prim.IsA(UsdGeom.Cube):
            size = _length(UsdGeom.Cube(prim).GetSizeAttr())
            return _box(a * size / 2.0)
        if prim.IsA(UsdGeom.Sphere):
            return _sphere(_length(UsdGeom.Sphere(prim).GetRadiusAttr()) * float(a.max()))
        for cls, fn in ((UsdGeom.Capsule, _capsule), (UsdGeom.Cylinder, _cylinder), (UsdGeom.Cone, _cone)):
            if prim.IsA(cls):
                g = cls(prim)
                axis = _get(g.GetAxisAttr(), "token") or "Z"
                r = _length(g.GetRadiusAttr()) * _off_axis_max(a, axis)
                h = _length(g.GetHeightAttr()) * float(a[_AXIS_INDEX.get(axis, 2)])
                return fn(r, h, axis)
        for cls, capsule in ((UsdGeom.Capsule_1, True), (UsdGeom.Cylinder_1, False)):
            if prim.IsA(cls):
                g = cls(prim)
                axis = _get(g.GetAxisAttr(), "token") or "Z"
                m = _off_axis_max(a, axis)
                rt = _length(g.GetRadiusTopAttr()) * m
                rb = _length(g.GetRadiusBottomAttr()) * m
                h = _length(g.GetHeightAttr()) * float(a[_AXIS_INDEX.get(axis, 2)])
                if abs(rt - rb) <= 1e-12 * max(rt, rb, 1e-30):
                    return (_capsule if capsule else _cylinder)(rt, h, axis)
                return _tapered(rt, rb, h, axis, capsule)
        if prim.IsA(UsdGeom.Mesh):
            approx = typed_read.prim_value(prim, "physics:approximation", "token", "none")
            src = prim.GetPrimInPrototype() if prim.IsInstanceProxy() else prim
            key = (str(src.GetPath()), approx, tuple(np.round(s, 12)))
            hit = self.shapes.get(key)
            if hit is None:
                hit = self.shapes[key] = _mesh_mass(prim, s, approx)
            return hit
        return None

    # -- MassInformation for a collider of a body -----------------------
    def mass_information(self, prim: Usd.Prim, body: Usd.Prim, notes: list[str]):
        mc = self.xf.GetLocalToWorldTransform(prim)
        world_scale = Gf.Transform(mc).GetScale()
        shape = self.shape_mass(prim, world_scale)
        path = str(prim.GetPath())
        if shape is None:
            notes.append(f"{path}: unrecognised collider type {prim.GetTypeName()!r}: volume 0")
            return _invalid_info()
        if shape.note:
            notes.append(f"{path}: {shape.note}")
        if shape.volume <= 0.0:
            notes.append(f"{path}: zero volume")
        mi = UsdPhysics.RigidBodyAPI.MassInformation()
        mi.volume = float(shape.volume)
        mi.inertia = Gf.Matrix3f(*[float(x) for row in shape.inertia for x in row])
        mi.centerOfMass = Gf.Vec3f(*shape.com)
        if prim == body:
            mi.localPos = Gf.Vec3f(0.0)
            mi.localRot = Gf.Quatf(1.0)
        else:
            mb = self.xf.GetLocalToWorldTransform(body)
            rel = Gf.Transform(mc * mb.GetInverse())
            bs = Gf.Transform(mb).GetScale()
            t = rel.GetTranslation()
            mi.localPos = Gf.Vec3f(t[0] * bs[0], t[1] * bs[1], t[2] * bs[2])
            mi.localRot = Gf.Quatf(rel.GetRotation().GetQuat())
        return mi


def _invalid_info():
    mi = UsdPhysics.RigidBodyAPI.MassInformation()
    mi.volume = 0.0
    mi.inertia = Gf.Matrix3f(0.0)
    mi.centerOfMass = Gf.Vec3f(0.0)
    mi.localPos = Gf.Vec3f(0.0)
    mi.localRot = Gf.Quatf(1.0)
    return mi


# --------------------------------------------------------------------------
# authored-value helpers (source / established)
# --------------------------------------------------------------------------


# Through the typed reader: a wrong-typed, misshapen or non-finite value counts as not
# authored here (it establishes nothing); the authoring audit records it as an error.

def _positive(prim: Usd.Prim, name: str, authored_only: bool = False) -> bool:
    v = typed_read.prim_value(prim, name, "real", authored_only=authored_only)
    return v is not None and v > 0.0


def _finite_vec(prim: Usd.Prim, name: str) -> bool:
    return typed_read.prim_value(prim, name, "vec3", authored_only=True) is not None


def _nonzero_vec(prim: Usd.Prim, name: str) -> bool:
    v = typed_read.prim_value(prim, name, "vec3", authored_only=True)
    return v is not None and any(abs(x) > 1e-5 for x in v)


def _authored_pa(prim: Usd.Prim) -> bool:
    v = typed_read.prim_value(prim, "physics:principalAxes", "quat", authored_only=True)
    return v is not None and any(abs(x) > 1e-5 for x in v)


def _physics_materials(prims: list[Usd.Prim]) -> list[Usd.Prim | None]:
    if not prims:
        return []
    try:
        mats, _ = UsdShade.MaterialBindingAPI.ComputeBoundMaterials(prims, "physics")
    except Exception:  # pragma: no cover - fallback per prim
        mats = [UsdShade.MaterialBindingAPI(p).ComputeBoundMaterial("physics")[0] for p in prims]
    out = []
    for m in mats:
        p = m.GetPrim() if m else None
        out.append(p if p and p.HasAPI(UsdPhysics.MaterialAPI) else None)
    return out


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------


def _quat_xyzw_of_rotation(r: np.ndarray) -> tuple[float, float, float, float]:
    """scipy's `Rotation.from_matrix(r).as_quat()`, bit for bit, without importing scipy.spatial
    (about a quarter of a small grade's imports, and nothing else in a grade of primitives needs it).

    A matrix that is orthonormal to 1e-12 with a positive determinant (every matrix this module
    builds: products of unit-quaternion rotations) is converted by scipy as it is, with
    Shepperd's method: the largest of the trace and the three diagonal entries picks the
    formula, then the quaternion is divided by its norm. The same operations in the same order
    on the same doubles give the same bits (tests/test_mass.py compares the two). Any other
    matrix goes to scipy, which orthogonalises it first or refuses it."""
    gram_error = float(np.abs(r @ r.T - np.eye(3)).max())
    if not (gram_error <= 1e-12 and np.linalg.det(r) > 0):
        from scipy.spatial.transform import Rotation

        return tuple(float(c) for c in Rotation.from_matrix(r).as_quat())
    m = r.tolist()
    trace = m[0][0] + m[1][1] + m[2][2]
    decision = (m[0][0], m[1][1], m[2][2], trace)
    choice = max(range(4), key=decision.__getitem__)  # the first maximum, as scipy's argmax
    q = [0.0] * 4
    if choice != 3:
        i = choice
        j, k = (i + 1) % 3, (i + 2) % 3
        q[i] = 1 - trace + 2 * m[i][i]
        q[j] = m[j][i] + m[i][j]
        q[k] = m[k][i] + m[i][k]
        q[3] = m[k][j] - m[j][k]
    else:
        q[0] = m[2][1] - m[1][2]
        q[1] = m[0][2] - m[2][0]
        q[2] = m[1][0] - m[0][1]
        q[3] = 1 + trace
    norm = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    return tuple(c / norm for c in q)


def _quat_wxyz_from_matrix(r: np.ndarray) -> tuple[float, float, float, float]:
    if not np.all(np.isfinite(r)):
        return (math.nan,) * 4
    x, y, z, w = _quat_xyzw_of_rotation(r)
    q = np.array([w, x, y, z])
    if q[0] < 0 or (q[0] == 0 and next((c for c in q[1:] if c != 0), 0) < 0):
        q = -q
    return tuple(float(c) for c in q)


def _rot_matrix(q: Gf.Quatd) -> np.ndarray:
    """Column-vector rotation matrix of a Gf quaternion (active rotation)."""
    return np.array(Gf.Matrix3d(Gf.Rotation(q)), dtype=float).T


def _compute(ctx: _Context, body_path: str) -> MassProperties | None:
    prim = ctx.stage.GetPrimAtPath(str(body_path))
    if not prim or not prim.IsValid() or not prim.HasAPI(UsdPhysics.RigidBodyAPI):
        return None
    notes: list[str] = []
    visited: list[Usd.Prim] = []

    def callback(cprim):
        visited.append(cprim)
        try:
            return ctx.mass_information(cprim, prim, notes)
        except Exception as exc:  # never raise into C++
            log.exception("mass information failed for %s", cprim.GetPath())
            notes.append(f"{cprim.GetPath()}: mass information failed ({exc!r}): volume 0")
            return _invalid_info()

    mass, diag, com, pa = UsdPhysics.RigidBodyAPI(prim).ComputeMassProperties(callback)
    mass = float(mass)
    diag = np.array([float(diag[0]), float(diag[1]), float(diag[2])])
    com = Gf.Vec3d(float(com[0]), float(com[1]), float(com[2]))
    q = np.array([float(pa.GetReal())] + [float(x) for x in pa.GetImaginary()])

    body_mass_api = prim.HasAPI(UsdPhysics.MassAPI)
    if not visited and not (body_mass_api and _authored_pa(prim)):
        q = np.array([1.0, 0.0, 0.0, 0.0])
        notes.append("no colliders: API principal axes are uninitialised, identity used")
    norm = float(np.linalg.norm(q))
    if not np.all(np.isfinite(q)):
        notes.append("non-finite principal axes from the API")
    elif norm < 1e-6:
        q = np.array([1.0, 0.0, 0.0, 0.0])
        notes.append("zero principal-axes quaternion: identity used")
    else:
        q = q / norm
    if not np.all(np.isfinite(diag)) or not all(math.isfinite(c) for c in com) or not math.isfinite(mass):
        notes.append("non-finite mass properties from the API")

    # frames: body frame = body world transform without scale
    mb = ctx.xf.GetLocalToWorldTransform(prim)
    tb = Gf.Transform(mb)
    frame = Gf.Matrix4d().SetTransform(tb.GetRotation(), tb.GetTranslation())
    com_world = frame.Transform(com) if all(math.isfinite(c) for c in com) else com
    r_body = _rot_matrix(tb.GetRotation().GetQuat())
    if np.all(np.isfinite(q)):
        r_pa = _rot_matrix(Gf.Quatd(q[0], Gf.Vec3d(q[1], q[2], q[3])))
        r_world = r_body @ r_pa
    else:
        r_world = np.full((3, 3), math.nan)
    order = np.argsort(diag, kind="stable")
    diag_sorted = diag[order]
    r_sorted = r_world[:, order]
    if np.all(np.isfinite(r_sorted)) and np.linalg.det(r_sorted) < 0:
        r_sorted[:, 0] = -r_sorted[:, 0]
    axes = _quat_wxyz_from_matrix(r_sorted)

    # source and establishment
    collider_paths = tuple(str(c.GetPath()) for c in visited)
    materials = _physics_materials(visited)
    body_density = body_mass_api and _positive(prim, "physics:density")
    collider_sources: dict[str, str] = {}
    mass_est = body_mass_api and (
        _positive(prim, "physics:mass", True) or (bool(visited) and _positive(prim, "physics:density", True))
    )
    com_est = body_mass_api and _finite_vec(prim, "physics:centerOfMass")
    inertia_est = body_mass_api and _nonzero_vec(prim, "physics:diagonalInertia")
    for cprim, mat in zip(visited, materials):
        capi = cprim.HasAPI(UsdPhysics.MassAPI)
        if capi and _positive(cprim, "physics:mass"):
            src = "collider mass"
        elif capi and _positive(cprim, "physics:density"):
            src = "collider density"
        elif body_density:
            src = "body density"
        elif mat is not None and _positive(mat, "physics:density"):
            src = "material density"
        else:
            src = "default density"
        collider_sources[str(cprim.GetPath())] = src
        if capi:
            mass_est = mass_est or _positive(cprim, "physics:mass", True) or _positive(cprim, "physics:density", True)
            com_est = com_est or _finite_vec(cprim, "physics:centerOfMass")
            inertia_est = inertia_est or _nonzero_vec(cprim, "physics:diagonalInertia")
        if mat is not None:
            mass_est = mass_est or _positive(mat, "physics:density", True)
    if body_mass_api and _positive(prim, "physics:mass"):
        source = "body mass"
    elif collider_sources:
        source = min(collider_sources.values(), key=SOURCES.index)
    else:
        source = "none"
    mass_est = bool(mass_est)

    mpu, kpu = ctx.mpu, ctx.kpu
    return MassProperties(
        mass=mass * kpu,
        center_of_mass=tuple(float(c) * mpu for c in com_world),
        principal_inertia=tuple(float(d) * kpu * mpu * mpu for d in diag_sorted),
        principal_axes=axes,
        source=source,
        established={
            "mass": mass_est,
            "center_of_mass": bool(mass_est or com_est),
            "inertia": bool(mass_est or inertia_est),
        },
        colliders=collider_paths,
        collider_sources=collider_sources,
        notes=tuple(notes),
    )


def body_mass_properties(
    stage: Usd.Stage, body_path: str, xform_cache: UsdGeom.XformCache | None = None
) -> MassProperties | None:
    """Mass properties of one rigid body (None if the prim is not a RigidBodyAPI prim)."""
    return _compute(_Context(stage, xform_cache), body_path)


def stage_mass_properties(stage: Usd.Stage, body_paths: list[str]) -> dict[str, MassProperties | None]:
    """Mass properties of many bodies, sharing the transform and mesh-shape caches."""
    ctx = _Context(stage)
    t0 = time.perf_counter()
    out = {str(p): _compute(ctx, str(p)) for p in body_paths}
    log.debug("mass properties of %d bodies in %.1f ms", len(out), (time.perf_counter() - t0) * 1e3)
    return out
