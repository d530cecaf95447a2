"""No candidate earns more than the honest repair of the same faults.

For every committed case, each honest partial repair (every fault left broken: the
input; and, with several faults, each fault repaired alone) is damaged further on the
elements the faults target (one damage kind at a time, on every targeted element of
its kind), and graded: the damaged
submission never scores above the honest one. A fault exempts only its own properties
from preservation; every other property of a targeted element is preserved, and a
value invalid in itself earns no progress.

Grading is in process (tests/grade_in_process.py). The damage is authored in the root
layer of a copy of the honest partial and adds no file, so the validity gate's report
is the honest partial's (computed once per partial); everything else is graded anew. A
damage that leaves the root layer as it was (no limits to swap, no simulator values to
zero: about a quarter of them) is not graded again: its package is the honest partial.
"""
from __future__ import annotations

import dataclasses
import shutil
from concurrent.futures import Future
from pathlib import Path

import pytest
from pxr import Gf, Usd, UsdGeom, UsdPhysics, Vt

from fixtures.build_cases import CASE_TABLE, SEED
from usd_repair_verifier.gates.validity import timed_validity
from usd_repair_verifier.profiles.case import load_case
from usd_repair_verifier.authoring.inject import inject, root_layer_of
from usd_repair_verifier.profiles.vocabulary import FAULT_KINDS
from usd_repair_verifier.scoring.session import validity_limits
from tests import grade_in_process
from tests.inner_loop import representatives

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
ASSETS = ROOT / "fixtures" / "assets"
SIMULATOR_PREFIXES = ("newton:", "mjc:", "physx")


# --- damage kinds, by the kind of element a fault targets ------------------------------

def _joint_made_fixed(stage, prim):
    prim.SetTypeName("PhysicsFixedJoint")


def _joint_limits_swapped(stage, prim):
    lower, upper = prim.GetAttribute("physics:lowerLimit"), prim.GetAttribute("physics:upperLimit")
    if lower and upper and lower.Get() is not None and upper.Get() is not None:
        low, high = lower.Get(), upper.Get()
        lower.Set(high)
        upper.Set(low)


def _joint_disabled(stage, prim):
    UsdPhysics.Joint(prim).CreateJointEnabledAttr(False)


def _joint_on_one_body(stage, prim):
    joint = UsdPhysics.Joint(prim)
    body0 = joint.GetBody0Rel().GetTargets()
    if body0:
        joint.GetBody1Rel().SetTargets(body0)


def _simulator_values_zeroed(stage, prim):
    for attr in prim.GetAuthoredAttributes():
        if attr.GetName().startswith(SIMULATOR_PREFIXES) and isinstance(attr.Get(), float):
            attr.Set(0.0)


def _own_prims(prim):
    it = iter(Usd.PrimRange(prim))
    for p in it:
        if p != prim and p.HasAPI(UsdPhysics.RigidBodyAPI):
            it.PruneChildren()
            continue
        yield p


def _body_collision_disabled(stage, prim):
    for p in _own_prims(prim):
        if p.HasAPI(UsdPhysics.CollisionAPI):
            UsdPhysics.CollisionAPI(p).CreateCollisionEnabledAttr(False)


def _body_kinematic(stage, prim):
    UsdPhysics.RigidBodyAPI(prim).CreateKinematicEnabledAttr(True)


def _body_mass_scaled(stage, prim):
    UsdPhysics.MassAPI.Apply(prim)
    mass = UsdPhysics.RigidBodyAPI(prim).ComputeMassProperties(lambda _: UsdPhysics.RigidBodyAPI.MassInformation())[0]
    UsdPhysics.MassAPI(prim).CreateMassAttr(10.0 * mass if mass > 0 else 10.0)


def _body_joints_disabled(stage, prim):
    for p in stage.Traverse():
        if p.IsA(UsdPhysics.Joint):
            joint = UsdPhysics.Joint(p)
            if prim.GetPath() in joint.GetBody0Rel().GetTargets() + joint.GetBody1Rel().GetTargets():
                joint.CreateJointEnabledAttr(False)


def _part_hidden(stage, prim):
    UsdGeom.Imageable(prim).MakeInvisible()


def _part_recoloured(stage, prim):
    UsdGeom.Gprim(prim).CreateDisplayColorAttr(Vt.Vec3fArray([Gf.Vec3f(1.0, 0.0, 1.0)]))


def _part_scaled(stage, prim):
    UsdGeom.Xformable(prim).AddScaleOp(UsdGeom.XformOp.PrecisionFloat, "damage").Set(Gf.Vec3f(0.5, 0.5, 0.5))


# The (family, measure) each damage kind changes: on an element whose fault that measure
# grades, the damage is an attempt at the fault's own property (swapping inverted limits
# back is the repair), graded by the fault's checks, so it is not applied there.
TOUCHES = {
    "made_fixed": ("joint", "graph"), "limits_swapped": ("joint", "range"), "disabled": ("joint", "state"),
    "on_one_body": ("joint", "graph"), "simulator_values_zeroed": None,
    "collision_disabled": ("collision", "coverage"), "kinematic": ("body", "state"), "mass_scaled": ("mass", "mass"),
    "joints_disabled": None, "hidden": ("geometry", "shape"), "recoloured": ("material", "visual"),
    "scaled": ("geometry", "shape"),
}

DAMAGES = {
    "joint": {"made_fixed": _joint_made_fixed, "limits_swapped": _joint_limits_swapped,
              "disabled": _joint_disabled, "on_one_body": _joint_on_one_body,
              "simulator_values_zeroed": _simulator_values_zeroed},
    "body": {"collision_disabled": _body_collision_disabled, "kinematic": _body_kinematic,
             "mass_scaled": _body_mass_scaled, "joints_disabled": _body_joints_disabled,
             "simulator_values_zeroed": _simulator_values_zeroed},
    "component": {"hidden": _part_hidden, "recoloured": _part_recoloured, "scaled": _part_scaled},
}


# --- honest partial repairs ------------------------------------------------------------

def _partials(case_id: str) -> list[tuple[str, list[int]]]:
    """(name, indices of the faults left broken): the input, and each fault repaired alone."""
    n = len(CASE_TABLE[case_id][1])
    out = [("input", list(range(n)))]
    if n > 1:
        out += [(f"f{i + 1}_repaired", [j for j in range(n) if j != i]) for i in range(n)]
    return out


def _done(value) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future


def _grade(case, submission: Path, validity: tuple):
    return grade_in_process.grade(case, submission, validity=_done(validity))


# The inner loop damages one case (its joints); the full suite every case.
@pytest.mark.parametrize("case_id", representatives(sorted(CASE_TABLE), ["hopper_graph_and_state"]))
def test_damage_to_targeted_elements_never_beats_the_honest_partial_repair(case_id, tmp_path):
    asset, faults = CASE_TABLE[case_id]
    case = load_case(CASES / case_id)
    targets = sorted({(FAULT_KINDS[kind].target, target) for _, kind, target in faults
                      if FAULT_KINDS[kind].target != "asset"})
    graded_measures = {(target, check) for _, kind, target in faults for check in FAULT_KINDS[kind].checks}
    beaten = []
    graded, landed = 0, False   # damaged packages graded; whether any damage found its element
    for name, left in _partials(case_id):
        honest_dir = tmp_path / name
        inject(ASSETS / asset, honest_dir, [(faults[i][1], faults[i][2]) for i in left], SEED)
        grade_in_process.start_validity_server()   # its worker forked, not a fresh interpreter
        validity = timed_validity(honest_dir, validity_limits(case))
        honest = _grade(case, honest_dir, validity)
        assert honest.status.value in ("graded", "preservation_failed"), honest.reasons
        for kind in sorted({k for k, _ in targets}):
            for damage, apply in DAMAGES[kind].items():
                # One damage kind at a time, on every targeted element of its kind at once.
                damaged_dir = tmp_path / "damaged"
                shutil.rmtree(damaged_dir, ignore_errors=True)
                shutil.copytree(honest_dir, damaged_dir)
                stage = Usd.Stage.Open(str(root_layer_of(damaged_dir)), Usd.Stage.LoadAll)
                stage.SetEditTarget(stage.GetRootLayer())
                before = stage.GetRootLayer().ExportToString()
                prims = [stage.GetPrimAtPath(t) for k, t in targets
                         if k == kind and (t, TOUCHES[damage]) not in graded_measures]
                for prim in prims:
                    if prim:          # else the partial lost it (a deleted joint left broken)
                        apply(stage, prim)
                        landed = True
                unchanged = stage.GetRootLayer().ExportToString() == before
                stage.GetRootLayer().Save()
                del stage
                if unchanged:
                    # Nothing to damage here (no limits to swap, no simulator values...): the
                    # package is the honest partial's, byte for byte, and so is its grade.
                    continue
                # Same files at the same paths: the honest partial's validity report stands.
                moved = (dataclasses.replace(validity[0], root_layer=str(root_layer_of(damaged_dir).resolve())),
                         validity[1])
                got = _grade(case, damaged_dir, moved)
                graded += 1
                assert got.status.value != "infrastructure_error", got.infrastructure_error
                if got.authored_usd > honest.authored_usd + 1e-9:
                    beaten.append(f"{name} + {damage} on its {kind}s: {got.authored_usd:.4f} > "
                                  f"{honest.authored_usd:.4f} ({got.status.value}; {got.reasons[:1]})")
    # A case whose faults all target the whole asset (articulation root, a missing file), or whose
    # targeted elements no honest partial has (a deleted joint, a body moved elsewhere in the
    # hierarchy), has nothing to damage: its honest partials are still graded above.
    assert graded > 0 or not landed
    assert not beaten, "\n".join(beaten)
