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
* ``established["inertia"]``: a non-zero ``physics:diagonalInertia`` is authored
  on the body or on one of its colliders, or mass is established and the body has
  a collider the API used. A body with a mass but no collider and no authored
  inertia gets the API's fallback, a 0.1 m sphere's inertia: a number the
  reference does not establish, so its inertia is ``unmeasured``.
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
* The schema ignores a diagonal inertia of (0, 0, 0); the API tests that with a
  tolerance of 1e-5 in *stage units* (kg/kilogramsPerUnit x (m/metersPerUnit)^2),
  so the same authored inertia of 1e-8 kg m^2 is ignored in metres (colliders'
  or the sphere's instead) and honoured in centimetres (1e-4). Where a non-zero
  authored body inertia was ignored, this module puts the authored moments back
  (what the API returns when it honours them: the principal axes and everything
  else do not depend on that choice), so the result is the schema's rule and does
  not depend on the stage's units. A collider's own authored inertia is left to
  the API.
* A body with no colliders: mass = -1 (the API's "unset" sentinel) unless a
  body mass is authored; inertia (1, 1, 1) stage units or, with a mass, a
  0.1 m sphere approximation; centre of mass (0, 0, 0) or authored; the
  principal axes come back as *uninitialised memory* unless authored (this
  module substitutes the identity and notes it).

Per-collider shapes (mass_shapes.py) follow UsdPhysics' own parser for scale and local
pose: the local position is the collider's translation relative to the body multiplied by the
body's scale. Mesh colliders use the one collider model that collision uses too
(collider_model.py): by ``physics:approximation``, the closed mesh, its convex hull, the hulls
of its components, its bounding cube or its smallest bounding sphere. Mesh models are built
once per mesh (per prototype for instance proxies) within one store; a snapshot shares its
store between the colliders and the mass properties.

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
from .collider_model import ColliderModels
from .mass_shapes import ShapeMass, model_mass, primitive_mass

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

    @property
    def inertia_tensor(self) -> tuple[tuple[float, float, float], ...]:
        """The inertia tensor about the centre of mass in world axes (kg m^2): R diag(moments) R^T
        with R the principal axes (its columns in the order of the sorted moments). Two bodies
        compare by it without choosing eigenvectors, which equal moments leave undetermined."""
        w, x, y, z = self.principal_axes
        r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                      [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                      [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
        tensor = r @ np.diag(self.principal_inertia) @ r.T
        return tuple(tuple(float(v) for v in row) for row in tensor)



# --------------------------------------------------------------------------
# context shared across bodies
# --------------------------------------------------------------------------


class _Context:
    def __init__(self, stage: Usd.Stage, xform_cache: UsdGeom.XformCache | None = None,
                 models: ColliderModels | None = None):
        self.stage = stage
        self.models = models if models is not None else ColliderModels()
        self.xf = xform_cache if xform_cache is not None else UsdGeom.XformCache()
        self.mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
        self.kpu = float(UsdPhysics.GetStageKilogramsPerUnit(stage))
        self.shapes: dict[tuple, ShapeMass] = {}

    # -- shape in its own (scaled) frame --------------------------------
    def shape_mass(self, prim: Usd.Prim, world_scale: Gf.Vec3d) -> ShapeMass | None:
        s = np.array([float(world_scale[0]), float(world_scale[1]), float(world_scale[2])])
        if not prim.IsA(UsdGeom.Mesh):
            return primitive_mass(prim, np.abs(s))
        model = self.models.mesh(prim)
        key = (id(model), tuple(np.round(s, 12)))  # the store keeps every model alive: ids are unique
        hit = self.shapes.get(key)
        if hit is None:
            hit = self.shapes[key] = model_mass(model, s)
        return hit

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
    return _authored_inertia(prim, name) is not None


def _authored_inertia(prim: Usd.Prim, name: str = "physics:diagonalInertia") -> np.ndarray | None:
    """An authored, finite, non-zero diagonal inertia (stage units), or None: the schema's
    rule, (0, 0, 0) is "not set", without the API's tolerance in stage units."""
    v = typed_read.prim_value(prim, name, "vec3", authored_only=True)
    if v is None or not any(x != 0.0 for x in v):
        return None
    return np.array([float(x) for x in v])


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


def _principal_axes(q: np.ndarray, visited: bool, authored_axes: bool, notes: list[str]) -> np.ndarray:
    """The API's principal-axes quaternion (w, x, y, z), made usable or noted as not."""
    if not visited and not authored_axes:
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
    return q


def _world_frame(ctx: _Context, prim: Usd.Prim, com: Gf.Vec3d, diag: np.ndarray, q: np.ndarray):
    """(centre of mass in world space, sorted principal moments, world principal axes (w, x, y, z)).
    The body frame is the body's world transform without scale."""
    tb = Gf.Transform(ctx.xf.GetLocalToWorldTransform(prim))
    frame = Gf.Matrix4d().SetTransform(tb.GetRotation(), tb.GetTranslation())
    com_world = frame.Transform(com) if all(math.isfinite(c) for c in com) else com
    r_body = _rot_matrix(tb.GetRotation().GetQuat())
    if np.all(np.isfinite(q)):
        r_world = r_body @ _rot_matrix(Gf.Quatd(q[0], Gf.Vec3d(q[1], q[2], q[3])))
    else:
        r_world = np.full((3, 3), math.nan)
    order = np.argsort(diag, kind="stable")
    r_sorted = r_world[:, order]
    if np.all(np.isfinite(r_sorted)) and np.linalg.det(r_sorted) < 0:
        r_sorted[:, 0] = -r_sorted[:, 0]
    return com_world, diag[order], _quat_wxyz_from_matrix(r_sorted)


def _collider_source(cprim: Usd.Prim, material: Usd.Prim | None, body_density: bool) -> str:
    if cprim.HasAPI(UsdPhysics.MassAPI) and _positive(cprim, "physics:mass"):
        return "collider mass"
    if cprim.HasAPI(UsdPhysics.MassAPI) and _positive(cprim, "physics:density"):
        return "collider density"
    if body_density:
        return "body density"
    if material is not None and _positive(material, "physics:density"):
        return "material density"
    return "default density"


def _sources(prim: Usd.Prim, visited: list[Usd.Prim]) -> tuple[str, dict[str, str], dict[str, bool]]:
    """(source, per-collider sources, established) by the establishment rule above."""
    body_mass_api = prim.HasAPI(UsdPhysics.MassAPI)
    body_density = body_mass_api and _positive(prim, "physics:density")
    mass_est = body_mass_api and (
        _positive(prim, "physics:mass", True) or (bool(visited) and _positive(prim, "physics:density", True))
    )
    com_est = body_mass_api and _finite_vec(prim, "physics:centerOfMass")
    inertia_est = body_mass_api and _nonzero_vec(prim, "physics:diagonalInertia")
    collider_sources: dict[str, str] = {}
    for cprim, mat in zip(visited, _physics_materials(visited)):
        collider_sources[str(cprim.GetPath())] = _collider_source(cprim, mat, body_density)
        if cprim.HasAPI(UsdPhysics.MassAPI):
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
    # Without a collider and an authored inertia, the API's inertia is its 0.1 m sphere's.
    established = {"mass": mass_est, "center_of_mass": bool(mass_est or com_est),
                   "inertia": bool(inertia_est or (mass_est and visited))}
    return source, collider_sources, established


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
    authored = _authored_inertia(prim) if prim.HasAPI(UsdPhysics.MassAPI) else None
    if authored is not None and not np.array_equal(diag, authored):
        # ignored by the API's tolerance in stage units: the schema's rule honours it
        notes.append("authored diagonal inertia within the API's 1e-5 stage-unit tolerance of zero: honoured")
        diag = authored
    elif authored is None and not visited and mass > 0:
        notes.append("no collider and no authored inertia: the API's 0.1 m sphere inertia (not established)")
    com = Gf.Vec3d(float(com[0]), float(com[1]), float(com[2]))
    q = np.array([float(pa.GetReal())] + [float(x) for x in pa.GetImaginary()])
    q = _principal_axes(q, bool(visited), prim.HasAPI(UsdPhysics.MassAPI) and _authored_pa(prim), notes)
    if not np.all(np.isfinite(diag)) or not all(math.isfinite(c) for c in com) or not math.isfinite(mass):
        notes.append("non-finite mass properties from the API")
    com_world, diag_sorted, axes = _world_frame(ctx, prim, com, diag, q)
    source, collider_sources, established = _sources(prim, visited)
    mpu, kpu = ctx.mpu, ctx.kpu
    return MassProperties(
        mass=mass * kpu,
        center_of_mass=tuple(float(c) * mpu for c in com_world),
        principal_inertia=tuple(float(d) * kpu * mpu * mpu for d in diag_sorted),
        principal_axes=axes,
        source=source,
        established=established,
        colliders=tuple(str(c.GetPath()) for c in visited),
        collider_sources=collider_sources,
        notes=tuple(notes),
    )


def body_mass_properties(
    stage: Usd.Stage, body_path: str, xform_cache: UsdGeom.XformCache | None = None
) -> MassProperties | None:
    """Mass properties of one rigid body (None if the prim is not a RigidBodyAPI prim)."""
    return _compute(_Context(stage, xform_cache), body_path)


def stage_mass_properties(stage: Usd.Stage, body_paths: list[str],
                          models: ColliderModels | None = None) -> dict[str, MassProperties | None]:
    """Mass properties of many bodies, sharing the transform cache and the mesh collider models
    (``models``: the store the snapshot's collision solids were built from, so each mesh's
    hull is computed once for both)."""
    ctx = _Context(stage, models=models)
    t0 = time.perf_counter()
    out = {str(p): _compute(ctx, str(p)) for p in body_paths}
    log.debug("mass properties of %d bodies in %.1f ms", len(out), (time.perf_counter() - t0) * 1e3)
    return out
