"""Mass faults: a body's mass in the wrong unit, its density misplaced, its inertia invalid, its
centre of mass moved.

They are checked against what the UsdPhysics rules yield (usd_repair_verifier.stage_snapshot.mass):
each injector refuses a body whose reference does not establish the property it breaks (the check
would be unmeasured), and verifies the composed effect.
"""
from __future__ import annotations

import math

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usd_repair_verifier.stage_snapshot import mass as mass_properties

from usd_repair_verifier.authoring.inject.edits import (
    InjectionError, asset_size_units, ensure_api, own_prims, rigid_body, set_attribute, writable,
)


MASS_UNIT_FACTOR = 1000.0   # grams authored where kilograms are meant
MASS_CHANGE = 4.0           # a mass edited alone: no unit factor (1000, 2.2) nor the x10 of density_misplaced
DENSITY_CHANGE = math.log(1.1)  # a misplaced density must move the mass by at least 10%


def _established_mass(stage: Usd.Stage, target: str, prop: str):
    props = mass_properties.body_mass_properties(stage, target)
    if props is None:
        raise InjectionError(f"{target} has no mass properties")
    if not props.established.get(prop):
        raise InjectionError(
            f"the reference does not establish the {prop.replace('_', ' ')} of {target} "
            f"(source: {props.source}): the mass checks would be unmeasured"
        )
    return props


def _authored(prim: Usd.Prim, name: str):
    attr = prim.GetAttribute(name)
    return attr.Get() if attr and attr.HasAuthoredValue() else None


def _scale_authored(prim: Usd.Prim, name: str, factor: float, dirty: set) -> bool:
    """Multiply an authored float or vector attribute by factor (in its strongest spec)."""
    attr = prim.GetAttribute(name)
    value = _authored(prim, name)
    if value is None:
        return False
    if isinstance(value, (int, float)):
        scaled = float(value) * factor
    else:
        if not any(abs(float(c)) > 1e-12 for c in value):
            return False  # (0, 0, 0) is "unset" for the API: nothing to scale
        scaled = type(value)(*(float(c) * factor for c in value))
    set_attribute(writable(prim), name, scaled, attr.GetTypeName(), dirty)
    return True


def _log_ratio(a: float, b: float) -> float:
    if a <= 0 or b <= 0 or not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(math.log(a / b))


def mass_unit_factor(stage, target, rng, dirty) -> str:
    """The body's mass authored in grams for kilograms: every mass-bearing value x1000.

    Where the mass comes from decides what is scaled: an authored body mass; else
    the colliders' own masses / densities when every collider has one; else a body
    mass of 1000 x the computed mass is authored. Authored diagonal inertias (mass
    x length^2) are scaled too, so the inertia is x1000 like the mass.
    """
    prim = writable(rigid_body(stage, target))
    before = _established_mass(stage, target, "mass")
    kpu = UsdPhysics.GetStageKilogramsPerUnit(stage)
    scaled = []
    if before.source == "body mass":
        _scale_authored(prim, "physics:mass", MASS_UNIT_FACTOR, dirty)
        scaled.append("body physics:mass")
    elif before.collider_sources and all(
        s in ("collider mass", "collider density") for s in before.collider_sources.values()
    ):
        for path, source in sorted(before.collider_sources.items()):
            collider = stage.GetPrimAtPath(path)
            name = "physics:mass" if source == "collider mass" else "physics:density"
            _scale_authored(collider, name, MASS_UNIT_FACTOR, dirty)
            scaled.append(f"{name} of {collider.GetName()}")
            if _scale_authored(collider, "physics:diagonalInertia", MASS_UNIT_FACTOR, dirty):
                scaled.append(f"physics:diagonalInertia of {collider.GetName()}")
    else:
        ensure_api(prim, "PhysicsMassAPI", UsdPhysics.MassAPI, dirty)
        set_attribute(prim, "physics:mass", float(before.mass / kpu * MASS_UNIT_FACTOR), Sdf.ValueTypeNames.Float, dirty)
        scaled.append(f"body physics:mass authored (was {before.source})")
    if prim.HasAPI(UsdPhysics.MassAPI) and _scale_authored(prim, "physics:diagonalInertia", MASS_UNIT_FACTOR, dirty):
        scaled.append("body physics:diagonalInertia")
    after = mass_properties.body_mass_properties(stage, target)
    if after is None or abs(_log_ratio(after.mass, before.mass) - math.log(MASS_UNIT_FACTOR)) > 1e-3:
        raise InjectionError(f"scaling {', '.join(scaled)} did not multiply the mass of {target} by {MASS_UNIT_FACTOR:g}")
    return f"mass x{MASS_UNIT_FACTOR:g} ({before.mass:.6g} -> {after.mass:.6g} kg): " + ", ".join(scaled)


def mass_changed(stage, target, rng, dirty) -> str:
    """The body's mass changed alone: a body mass of 4 x the established mass authored, an
    authored inertia and centre of mass left as they are (a computed inertia scales with it)."""
    prim = writable(rigid_body(stage, target))
    before = _established_mass(stage, target, "mass")
    kpu = UsdPhysics.GetStageKilogramsPerUnit(stage)
    ensure_api(prim, "PhysicsMassAPI", UsdPhysics.MassAPI, dirty)
    set_attribute(prim, "physics:mass", float(before.mass / kpu * MASS_CHANGE), Sdf.ValueTypeNames.Float, dirty)
    after = mass_properties.body_mass_properties(stage, target)
    if after is None or abs(_log_ratio(after.mass, before.mass) - math.log(MASS_CHANGE)) > 1e-3:
        raise InjectionError(f"authoring a body mass on {target} did not multiply its mass by {MASS_CHANGE:g}")
    return f"mass x{MASS_CHANGE:g} ({before.mass:.6g} -> {after.mass:.6g} kg), authored as the body mass"


def density_misplaced(stage, target, rng, dirty) -> str:
    """The colliders' densities authored once on the body instead (blocked on the colliders).

    Body density ranks below collider mass/density but above material density, so
    the body's mass changes wherever the colliders differed; when it would change
    by less than 10%, the moved density is also scaled x10 (said in the note).
    """
    prim = writable(rigid_body(stage, target))
    before = _established_mass(stage, target, "mass")
    if before.source == "body mass":
        raise InjectionError(f"the mass of {target} is its authored body mass: a density cannot change it")
    dense = sorted(p for p, s in before.collider_sources.items() if s == "collider density")
    if not dense:
        raise InjectionError(f"no collider of {target} has an authored density to misplace")
    chosen = rng.choice(dense)
    value = float(stage.GetPrimAtPath(chosen).GetAttribute("physics:density").Get())
    for path in dense:
        set_attribute(writable(stage.GetPrimAtPath(path)), "physics:density", Sdf.ValueBlock(),
                      Sdf.ValueTypeNames.Float, dirty)
    ensure_api(prim, "PhysicsMassAPI", UsdPhysics.MassAPI, dirty)
    set_attribute(prim, "physics:density", value, Sdf.ValueTypeNames.Float, dirty)
    after = mass_properties.body_mass_properties(stage, target)
    note = f"density {value:g} of {Sdf.Path(chosen).name} moved to the body ({len(dense)} collider densities blocked)"
    if _log_ratio(after.mass, before.mass) < DENSITY_CHANGE:
        set_attribute(prim, "physics:density", value * 10.0, Sdf.ValueTypeNames.Float, dirty)
        after = mass_properties.body_mass_properties(stage, target)
        note += "; scaled x10 because moving it alone would not change the mass"
        if _log_ratio(after.mass, before.mass) < DENSITY_CHANGE:
            raise InjectionError(f"moving the density of {target} does not change its mass")
    return note + f" (mass {before.mass:.6g} -> {after.mass:.6g} kg)"


def inertia_invalid(stage, target, rng, dirty) -> str:
    """An invalid diagonal inertia on the body: (0, -1, 0) x the current moments (one zero, one negative)."""
    prim = writable(rigid_body(stage, target))
    before = _established_mass(stage, target, "inertia")
    # The effective moments (stage units) as the snapshot measures them: colliders' or authored.
    si = UsdPhysics.GetStageKilogramsPerUnit(stage) * UsdGeom.GetStageMetersPerUnit(stage) ** 2
    current = [float(c) / si for c in before.principal_inertia]
    invalid = Gf.Vec3f(0.0, -current[1], 0.0)
    ensure_api(prim, "PhysicsMassAPI", UsdPhysics.MassAPI, dirty)
    set_attribute(prim, "physics:diagonalInertia", invalid, Sdf.ValueTypeNames.Float3, dirty)
    after = mass_properties.body_mass_properties(stage, target)
    if after is None or min(after.principal_inertia) > 0:
        raise InjectionError(f"the authored inertia of {target} did not take effect")
    return f"physics:diagonalInertia = ({invalid[0]:g}, {invalid[1]:.6g}, {invalid[2]:g}) stage units"


def _own_size_units(stage: Usd.Stage, prim: Usd.Prim) -> float:
    """Largest world extent (stage units) of the body's own gprims, nested bodies excluded."""
    cache = UsdGeom.BBoxCache(Usd.TimeCode.Default(), [UsdGeom.Tokens.default_, UsdGeom.Tokens.render,
                                                      UsdGeom.Tokens.proxy, UsdGeom.Tokens.guide])
    box = Gf.Range3d()
    for p in own_prims(prim):
        if p.IsA(UsdGeom.Gprim):
            box = Gf.Range3d.GetUnion(box, cache.ComputeWorldBound(p).ComputeAlignedRange())
    size = max(box.GetSize()) if not box.IsEmpty() else 0.0
    return size if size > 0 else asset_size_units(stage)


def center_of_mass_moved(stage, target, rng, dirty) -> str:
    """physics:centerOfMass authored on the body, 20% of the body's size away from where it was."""
    prim = writable(rigid_body(stage, target))
    before = _established_mass(stage, target, "center_of_mass")
    mpu = UsdGeom.GetStageMetersPerUnit(stage)
    size = _own_size_units(stage, prim)
    direction = [rng.uniform(-1, 1) for _ in range(3)]
    norm = math.sqrt(sum(c * c for c in direction)) or 1.0
    offset = [0.2 * size * c / norm for c in direction]
    com = Gf.Vec3d(*(c / mpu for c in before.center_of_mass))
    wanted = com + Gf.Vec3d(*offset)
    world = UsdGeom.XformCache(Usd.TimeCode.Default()).GetLocalToWorldTransform(prim)
    local = world.GetInverse().Transform(wanted)
    ensure_api(prim, "PhysicsMassAPI", UsdPhysics.MassAPI, dirty)
    set_attribute(prim, "physics:centerOfMass", Gf.Vec3f(*local), Sdf.ValueTypeNames.Point3f, dirty)
    after = mass_properties.body_mass_properties(stage, target)
    moved = math.dist(after.center_of_mass, before.center_of_mass) / mpu
    if not math.isfinite(moved) or moved < 0.1 * size:
        raise InjectionError(f"the authored centre of mass of {target} did not take effect")
    return f"centre of mass moved by {moved:.4g} stage units (20% of the body's size {size:.4g})"



def inertia_orientation(stage, target, rng, dirty) -> str:
    """The body's authored principal axes turned 90 degrees about the principal axis whose two
    other moments differ most: the same moments, about other body axes."""
    prim = writable(rigid_body(stage, target))
    if not prim.HasAPI(UsdPhysics.MassAPI):
        raise InjectionError(f"{target} authors no inertia to turn (no MassAPI)")
    moments = prim.GetAttribute("physics:diagonalInertia").Get()
    if moments is None or not all(math.isfinite(m) and m > 0 for m in moments):
        raise InjectionError(f"{target} authors no positive diagonal inertia to turn")
    spread = [abs(moments[(k + 1) % 3] - moments[(k + 2) % 3]) for k in range(3)]
    axis = max(range(3), key=lambda k: (spread[k], -k))
    if spread[axis] <= 0.1 * max(moments):
        raise InjectionError(f"{target}'s moments are too close to tell its principal axes apart")
    before = mass_properties.body_mass_properties(stage, target)
    authored = prim.GetAttribute("physics:principalAxes").Get()
    old = Gf.Quatf(authored) if authored is not None else Gf.Quatf(1, 0, 0, 0)
    axis_vector = Gf.Vec3d(0, 0, 0)
    axis_vector[axis] = 1.0
    turn = Gf.Quatf(Gf.Rotation(axis_vector, 90.0).GetQuat())
    new = (old * turn).GetNormalized()
    set_attribute(prim, "physics:principalAxes", new, Sdf.ValueTypeNames.Quatf, dirty)
    after = mass_properties.body_mass_properties(stage, target)
    if before is None or after is None or after.inertia_tensor == before.inertia_tensor:
        raise InjectionError(f"the turned principal axes of {target} did not take effect")
    im = new.GetImaginary()
    return (f"physics:principalAxes turned 90 deg about principal axis {'XYZ'[axis]}: "
            f"({new.GetReal():.4g}, {im[0]:.4g}, {im[1]:.4g}, {im[2]:.4g})")
