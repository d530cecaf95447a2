"""The simulator as a differential oracle: if Newton sees a change, the grade sees it.

For a few committed case references, a seeded generator takes rows of the physics coverage table
(profiles/physics_coverage.py), and for each mutates ONE healthy property of the reference (a prim
no fault of the case targets): values scaled or rotated, booleans flipped, tokens switched,
relationships retargeted or cleared, collision groups and filtered pairs added. Each mutation is a
new strongest sublayer of a copy of the reference, so the package is otherwise byte for byte the
reference. Reference and mutant are imported by Newton's USD importer (physical/engine.import_usd,
the physical grade's settings) and the finalized models compared: body masses, inertia tensors and
centres of mass, which shapes collide, their collision groups and filtered pairs, joint types,
parents, children, frames, axes, limits and drives. Then:
- whenever Newton's model differs beyond tolerance (or Newton refuses the mutant), the mutant,
  graded as a candidate of the case (its reference is the fixture reference, so only the mutation
  can lower its 1.0), scores below 1.0;
- a row the table calls ignored leaves Newton's model unchanged.

A miss is reported with the property, the mutation and what Newton saw change. The sample is fixed
by SEED (USDGRADE_DIFFERENTIAL_SEED and USDGRADE_DIFFERENTIAL_ROWS explore others).
"""
from __future__ import annotations

import math
import os
import random
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
from pxr import Gf, Sdf, Tf, Usd, UsdGeom, UsdPhysics

from tests import variants
from tests.grade_in_process import grade
from usd_repair_verifier.profiles import physics_coverage as table
from usd_repair_verifier.profiles.case import load_case

pytest.importorskip("newton")

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
FIXTURES = {
    "ant": CASES / "ant_two_joint_faults",           # MuJoCo-converted: Newton and MuJoCo schemas, no scene
    "finger": CASES / "gen_finger_4",                # hinges with limits, a spinner
    "gripper": CASES / "gripper_missing_and_drive",  # drives, mesh colliders, a scene, masses on bodies
}
SEED = int(os.environ.get("USDGRADE_DIFFERENTIAL_SEED", "20261207"))
ROWS_PER_FIXTURE = int(os.environ.get("USDGRADE_DIFFERENTIAL_ROWS", "18"))
# Newton stores float32: a relative difference above this (and an absolute one above ABS) is a change.
REL, ABS = 1e-4, 1e-7
# Rows forced into every sample: the ways a simulator's model changes that attributes alone do not show.
ALWAYS = (
    ("PhysicsFilteredPairsAPI", "physics:filteredPairs"),
    ("PhysicsCollisionGroup", "collection:colliders:includes"),
    ("PhysicsCollisionGroup", "physics:invertFilteredGroups"),
    ("PhysicsMassAPI", "physics:principalAxes"),
    ("PhysicsMassAPI", "physics:diagonalInertia"),
    ("PhysicsJoint", "physics:collisionEnabled"),
    ("PhysicsRigidBodyAPI", "physics:simulationOwner"),
    ("PhysicsJoint", "physics:body0"),
)


# --- what Newton builds ------------------------------------------------------------------

def newton_model(root_layer: Path) -> dict | str:
    """The finalized model's facts, keyed by prim path; or why Newton refused the stage."""
    from usd_repair_verifier.physical import engine
    from usd_repair_verifier.physical.settings import SETTINGS

    engine.configure_warp()
    import newton

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            stage = engine.open_for_engine(root_layer)
            model = engine.import_usd(stage, SETTINGS).finalize(device=SETTINGS.device)
        except engine.EngineRefusal as refusal:
            return str(refusal)
        except Exception as error:   # finalize's own refusal
            return f"{type(error).__name__}: {error}"
    bodies, shapes, joints = list(model.body_label), list(model.shape_label), list(model.joint_label)
    facts: dict[str, object] = {}
    mass, inertia, com = model.body_mass.numpy(), model.body_inertia.numpy(), model.body_com.numpy()
    for i, label in enumerate(bodies):
        facts[f"body {label}: mass"] = float(mass[i])
        facts[f"body {label}: inertia tensor"] = np.asarray(inertia[i], float).round(12)
        facts[f"body {label}: centre of mass"] = np.asarray(com[i], float)
    flags, group, shape_body = model.shape_flags.numpy(), model.shape_collision_group.numpy(), model.shape_body.numpy()
    placed = model.shape_transform.numpy()
    collide = int(newton.ShapeFlags.COLLIDE_SHAPES)
    for i, label in enumerate(shapes):
        facts[f"shape {label}: collides"] = bool(flags[i] & collide)
        facts[f"shape {label}: collision group"] = int(group[i])
        facts[f"shape {label}: body"] = bodies[shape_body[i]] if shape_body[i] >= 0 else "world"
        if shape_body[i] < 0:   # a static shape (a floor) is placed in the world by its transform
            facts[f"shape {label}: world transform"] = _canonical_transform(placed[i]).round(6)
    # Only pairs that could touch otherwise: two colliding shapes on different bodies (shapes of one
    # body, or of the static world, never collide whatever the filters say).
    facts["filtered shape pairs"] = tuple(sorted(
        tuple(sorted((shapes[a], shapes[b]))) for a, b in model.shape_collision_filter_pairs
        if flags[a] & collide and flags[b] & collide and shape_body[a] != shape_body[b]))
    jtype, parent, child = model.joint_type.numpy(), model.joint_parent.numpy(), model.joint_child.numpy()
    x_p, x_c = model.joint_X_p.numpy(), model.joint_X_c.numpy()
    qd_start = model.joint_qd_start.numpy()
    per_dof = {name: getattr(model, name).numpy() for name in (
        "joint_axis", "joint_limit_lower", "joint_limit_upper", "joint_target_ke", "joint_target_kd",
        "joint_effort_limit")}
    enabled = model.joint_enabled.numpy()
    for j, label in enumerate(joints):
        facts[f"joint {label}: type"] = int(jtype[j])
        facts[f"joint {label}: parent"] = bodies[parent[j]] if parent[j] >= 0 else "world"
        facts[f"joint {label}: child"] = bodies[child[j]] if child[j] >= 0 else "world"
        facts[f"joint {label}: enabled"] = bool(enabled[j])
        facts[f"joint {label}: parent frame"] = _canonical_transform(x_p[j])
        facts[f"joint {label}: child frame"] = _canonical_transform(x_c[j])
        dofs = slice(qd_start[j], qd_start[j + 1])
        for name, values in per_dof.items():
            facts[f"joint {label}: {name.removeprefix('joint_').replace('_', ' ')}"] = \
                np.asarray(values[dofs], float).clip(-1e9, 1e9)
    return facts


def _canonical_transform(x) -> np.ndarray:
    x = np.asarray(x, float)
    q = x[3:7] if x[6] >= 0 else -x[3:7]      # a quaternion and its negative are one rotation
    return np.concatenate([x[:3], q])


def model_differences(ref: dict | str, mutant: dict | str) -> list[str]:
    if isinstance(ref, str):
        raise AssertionError(f"Newton refuses the fixture reference: {ref}")
    if isinstance(mutant, str):
        return [f"Newton refuses the mutant: {mutant[:300]}"]
    out = []
    for key in sorted(set(ref) | set(mutant)):
        a, b = ref.get(key), mutant.get(key)
        if a is None or b is None:
            out.append(f"{key}: {'added' if a is None else 'gone'}")
        elif key == "filtered shape pairs" and a != b:
            added, removed = sorted(set(b) - set(a)), sorted(set(a) - set(b))
            out.append(f"{key}: {len(added)} added (e.g. {' / '.join(added[0]) if added else '-'}), "
                       f"{len(removed)} removed (e.g. {' / '.join(removed[0]) if removed else '-'})")
        elif not _same(a, b):
            out.append(f"{key}: {_short(a)} -> {_short(b)}")
    return out


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a, float), np.asarray(b, float)
        return a.shape == b.shape and bool(np.allclose(a, b, rtol=REL, atol=ABS))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=REL, abs_tol=ABS)
    return a == b


def _short(v) -> str:
    if isinstance(v, np.ndarray):
        return np.array2string(v.round(6), separator=",", max_line_width=200)
    text = repr(v)
    return text if len(text) <= 120 else text[:117] + "..."


# --- the mutation generator ----------------------------------------------------------------

@dataclass(frozen=True)
class Mutation:
    row: table.Row
    prim: str
    says: str                                   # what was done, for a person
    apply: Callable[[Usd.Stage], None]          # authors it (the edit target is the mutation layer)


class NotApplicable(Exception):
    """The fixture has no healthy prim the row's property can be mutated on."""


def _schema_type(name: str) -> Tf.Type:
    return Usd.SchemaRegistry.GetTypeFromSchemaTypeName(name)


def _has_schema(prim: Usd.Prim, schema: str) -> list[str]:
    """The instance names ("" for a single-apply or typed schema) under which `prim` has `schema`."""
    kind = Usd.SchemaRegistry.GetSchemaKind(_schema_type(schema))
    if kind in (Usd.SchemaKind.ConcreteTyped, Usd.SchemaKind.AbstractTyped):
        return [""] if prim.IsA(_schema_type(schema)) else []
    applied = [str(s) for s in prim.GetAppliedSchemas()]
    if kind == Usd.SchemaKind.MultipleApplyAPI:
        return [s.split(":", 1)[1] for s in applied if s.startswith(schema + ":")]
    return [""] if schema in applied else []


def _healthy(stage: Usd.Stage, targeted: set[str]) -> list[Usd.Prim]:
    out = []
    for prim in stage.Traverse():
        path = str(prim.GetPath())
        if not any(path == t or path.startswith(t + "/") for t in targeted):
            out.append(prim)
    return out


def _bodies(prims) -> list[Usd.Prim]:
    return [p for p in prims if p.HasAPI(UsdPhysics.RigidBodyAPI)]


def _colliders(prims) -> list[Usd.Prim]:
    return [p for p in prims if p.HasAPI(UsdPhysics.CollisionAPI)]


# The prims a schema that the fixture applies nowhere would be applied to: the first row naming a
# word of the schema's name.
HOSTS = (
    (("Scene",), lambda p: p.IsA(UsdPhysics.Scene)),
    (("Material",), lambda p: p.HasAPI(UsdPhysics.MaterialAPI)),
    (("Collision",), lambda p: p.HasAPI(UsdPhysics.CollisionAPI)),
    (("Joint", "Mimic", "Drive", "Limit"), lambda p: p.IsA(UsdPhysics.Joint)),
    (("ArticulationRoot",), lambda p: p.HasAPI(UsdPhysics.ArticulationRootAPI)),
    (("Mass", "RigidBody", "FilteredPairs", "Deformable"), lambda p: p.HasAPI(UsdPhysics.RigidBodyAPI)),
)


def _hosts(prims: list[Usd.Prim], schema: str) -> list[Usd.Prim]:
    for words, hosts in HOSTS:
        if any(w in schema for w in words):
            return [p for p in prims if hosts(p)]
    return []


def _rotated(q, axis: int, degrees: float = 90.0):
    turn = Gf.Rotation(Gf.Vec3d(*[1.0 if i == axis else 0.0 for i in range(3)]), degrees).GetQuat()
    q = Gf.Quatd(q.GetReal(), Gf.Vec3d(q.GetImaginary())) if q is not None else Gf.Quatd(1.0)
    return q * turn


def _changed_value(attr_name: str, type_name: str, value, allowed: list[str], rng: random.Random):
    """A value of the same type that is not `value` (the authored or fallback one)."""
    t = type_name
    if t == "bool":
        return not bool(value)
    if t == "token":
        options = [a for a in allowed if a != value] or [f"{value}_mutant"]
        return rng.choice(sorted(options))
    if t in ("string",):
        return f"{value or ''}_mutant"
    if t == "asset":
        return Sdf.AssetPath("mutant_model.onnx")
    if t in ("int", "uint"):
        return int(value or 0) + 3
    if t in ("float", "double", "half"):
        v = float(value) if value is not None else 0.0
        if not math.isfinite(v):   # unlimited, or a schema's "not set" (-inf): a plausible finite value
            return -30.0 if attr_name.endswith(("lowerLimit", ":low")) else 30.0
        return v * 3.0 if v != 0.0 else 0.5
    if t.startswith(("quat",)):
        # (0, 0, 0, 0) is principalAxes' "not set": the identity, as UsdPhysics reads it
        q = Gf.Quatd(value.GetReal(), Gf.Vec3d(value.GetImaginary())) \
            if value is not None and value.GetLength() > 0 else None
        rotated = _rotated(q, rng.randrange(3))
        return Gf.Quatf(rotated) if t == "quatf" else rotated
    if t in ("token[]", "string[]"):
        return [*list(value or []), "mutant"]
    if t.endswith("[]"):
        items = list(value or [])
        return [x * 3 for x in items] if items else [1.0, 2.0]
    if t in ("float3", "double3", "vector3f", "point3f", "vector3d", "point3d", "normal3f", "color3f"):
        v = [float(c) for c in value] if value is not None else [0.0, 0.0, 0.0]
        if attr_name.endswith("diagonalInertia") and len(set(v)) > 1 and all(math.isfinite(c) for c in v):
            permuted = v[1:] + v[:1]
            return Gf.Vec3f(*permuted)
        if attr_name.endswith("gravityDirection"):
            return Gf.Vec3f(v[1], v[2], v[0]) if any(v) else Gf.Vec3f(1, 0, 0)
        if not all(math.isfinite(c) for c in v):
            v = [0.0, 0.0, 0.0]
        if attr_name.endswith("diagonalInertia") and not any(v):   # unset: plausible moments, kg m^2
            return Gf.Vec3f(1e-3, 2e-3, 3e-3)
        offset = [0.031, -0.017, 0.023]
        scale = max(abs(c) for c in v) or 1.0
        new = [c * 1.5 + o * scale for c, o in zip(v, offset)]
        return Gf.Vec3f(*new) if t.endswith("f") else Gf.Vec3d(*new)
    raise NotApplicable(f"no mutation for a {t} value")


def _attribute_mutation(row, prim, name, rng) -> tuple[str, Callable]:
    definition = Usd.SchemaRegistry().FindConcretePrimDefinition(row.schema) or \
        Usd.SchemaRegistry().FindAppliedAPIPrimDefinition(row.schema)
    spec = definition.GetSchemaAttributeSpec(row.property)
    type_name = str(spec.typeName) if spec else ""
    if type_name in ("opaque", "pathExpression", ""):
        raise NotApplicable(f"a {type_name or 'typeless'} attribute holds no value to change")
    attr = prim.GetAttribute(name)
    value = attr.Get() if attr and attr.HasValue() else (spec.default if spec else None)
    allowed = [str(t) for t in (spec.GetInfo("allowedTokens") or [])] if spec else []
    new = _changed_value(name, type_name, value, allowed, rng)

    def apply(stage):
        p = stage.GetPrimAtPath(prim.GetPath())
        _apply_schema(p, row.schema, name)
        a = p.GetAttribute(name) or p.CreateAttribute(name, Sdf.ValueTypeNames.Find(type_name))
        a.Set(new)

    return f"{name} = {_short(value)} -> {_short(new)}", apply


def _apply_schema(prim: Usd.Prim, schema: str, property_name: str) -> None:
    kind = Usd.SchemaRegistry.GetSchemaKind(_schema_type(schema))
    if kind == Usd.SchemaKind.SingleApplyAPI and schema not in prim.GetAppliedSchemas():
        prim.AddAppliedSchema(schema)
    elif kind == Usd.SchemaKind.MultipleApplyAPI:
        instance = property_name.split(":")[1]
        if f"{schema}:{instance}" not in prim.GetAppliedSchemas():
            prim.AddAppliedSchema(f"{schema}:{instance}")


def _group(stage, path: str, includes=(), excludes=(), filtered=(), invert: bool | None = None,
           merge: str | None = None, expansion: str | None = None, include_root: bool | None = None,
           expression: str | None = None, mode: str | None = None) -> None:
    group = UsdPhysics.CollisionGroup.Define(stage, path)
    collection = Usd.CollectionAPI(group.GetPrim(), "colliders")
    for target in includes:
        collection.CreateIncludesRel().AddTarget(Sdf.Path(target))
    for target in excludes:
        collection.CreateExcludesRel().AddTarget(Sdf.Path(target))
    for target in filtered:
        group.CreateFilteredGroupsRel().AddTarget(Sdf.Path(target))
    if invert is not None:
        group.CreateInvertFilteredGroupsAttr(invert)
    if merge is not None:
        group.CreateMergeGroupNameAttr(merge)
    if expansion is not None:
        collection.CreateExpansionRuleAttr(expansion)
    if include_root is not None:
        collection.CreateIncludeRootAttr(include_root)
    if expression is not None:
        collection.CreateMembershipExpressionAttr(Sdf.PathExpression(expression))
    if mode is not None:
        group.GetPrim().CreateAttribute("collection:colliders:mode", Sdf.ValueTypeNames.Token).Set(mode)


def _group_mutation(row, stage, prims, rng) -> tuple[str, str, Callable]:
    """A collision group that changes which of the fixture's healthy bodies may touch."""
    bodies = sorted(str(p.GetPath()) for p in _bodies(prims))
    if len(bodies) < 2:
        raise NotApplicable("fewer than two healthy bodies")
    root = str(stage.GetDefaultPrim().GetPath())
    a, b = rng.sample(bodies, 2)
    g, h = f"{root}/MutantGroupA", f"{root}/MutantGroupB"
    prop = row.property
    if prop in ("collection:colliders:includes", "physics:filteredGroups"):
        says = f"group {g} includes {root} and filters itself"
        make = lambda s: _group(s, g, includes=[root], filtered=[g])
    elif prop == "collection:colliders:excludes":
        says = f"group {g} includes {root}, excludes {a}, filters itself"
        make = lambda s: _group(s, g, includes=[root], excludes=[a], filtered=[g])
    elif prop == "physics:invertFilteredGroups":
        says = f"group {g} includes {root}, invertFilteredGroups = true, filters only {h} (holding {a})"
        make = lambda s: (_group(s, g, includes=[root], filtered=[h], invert=True), _group(s, h, includes=[a]))
    elif prop == "collection:colliders:expansionRule":
        says = f"group {g} includes {a} with expansionRule explicitOnly, filters group {h} (holding {b})"
        make = lambda s: (_group(s, g, includes=[a], filtered=[h], expansion="explicitOnly"), _group(s, h, includes=[b]))
    elif prop == "collection:colliders:includeRoot":
        says = f"group {g} with includeRoot = true (the whole stage), filters itself"
        make = lambda s: _group(s, g, filtered=[g], include_root=True)
    elif prop == "physics:mergeGroup":
        says = f"groups {g} (holding {a}, filters itself) and {h} (holding {b}) merged as one"
        make = lambda s: (_group(s, g, includes=[a], filtered=[g], merge="merged"),
                          _group(s, h, includes=[b], merge="merged"))
    elif prop == "collection:colliders:membershipExpression":
        says = f"group {g} with membershipExpression {root}//* (no includes), filters itself"
        make = lambda s: _group(s, g, filtered=[g], expression=f"{root}//*")
    elif prop == "collection:colliders:mode":
        says = f"group {g} in mode 'expression' with membershipExpression {root}//* and includes {a}, filters itself"
        make = lambda s: _group(s, g, includes=[a], filtered=[g], expression=f"{root}//*", mode="expression")
    else:   # collection:colliders itself is an opaque attribute: no value to author
        raise NotApplicable(f"{prop}: an opaque attribute, the collection's name only")
    return g, says, make


def _relationship_mutation(row, prim, prims, stage, rng) -> tuple[str, Callable]:
    name = row.property
    path = prim.GetPath()
    bodies = [str(p.GetPath()) for p in _bodies(prims)]
    if name == "physics:body0":
        joint = UsdPhysics.Joint(prim)
        b0, b1 = joint.GetBody0Rel().GetTargets(), joint.GetBody1Rel().GetTargets()
        if not b0 or not b1:
            raise NotApplicable("a joint to the world: nothing to swap")
        attrs = {n: prim.GetAttribute(n).Get() for n in ("physics:localPos0", "physics:localPos1",
                                                         "physics:localRot0", "physics:localRot1")}

        def apply(stage):
            j = UsdPhysics.Joint(stage.GetPrimAtPath(path))
            j.GetBody0Rel().SetTargets(b1)
            j.GetBody1Rel().SetTargets(b0)
            for side, other in (("0", "1"), ("1", "0")):
                for what in ("localPos", "localRot"):
                    value = attrs[f"physics:{what}{other}"]
                    if value is not None:
                        stage.GetPrimAtPath(path).GetAttribute(f"physics:{what}{side}").Set(value)
        return f"body0 {b0} and body1 {b1} swapped, frames swapped to match", apply
    if name == "physics:body1":
        current = UsdPhysics.Joint(prim).GetBody1Rel().GetTargets()
        others = sorted(b for b in bodies if Sdf.Path(b) not in current
                        and Sdf.Path(b) not in UsdPhysics.Joint(prim).GetBody0Rel().GetTargets())
        if not others:
            raise NotApplicable("no other body")
        new = rng.choice(others)
        return f"body1 {current} -> {new}", lambda s: UsdPhysics.Joint(s.GetPrimAtPath(path)).GetBody1Rel() \
            .SetTargets([Sdf.Path(new)])
    if name == "physics:simulationOwner":
        def apply(stage):
            p = stage.GetPrimAtPath(path)
            _apply_schema(p, row.schema, name)
            p.CreateRelationship(name).SetTargets([Sdf.Path("/NoSuchScene")])
        return "simulationOwner -> </NoSuchScene>", apply
    if name == "physics:filteredPairs":
        root = stage.GetDefaultPrim()
        others = sorted(str(p.GetPath()) for p in _colliders(stage.Traverse())
                        if p.HasAPI(UsdPhysics.CollisionAPI) and not _owned_by(p, bodies))
        others = others or sorted(b for b in bodies if b != str(path))
        new = [Sdf.Path(p) for p in others]

        def apply(stage):
            p = stage.GetPrimAtPath(path)
            _apply_schema(p, row.schema, name)
            p.CreateRelationship(name).SetTargets(new)
        return f"filteredPairs of {path} -> {[str(p) for p in new][:4]} (root {root.GetPath()})", apply
    if name == "proxyPrim":
        new = sorted(bodies)[0] if bodies else str(stage.GetDefaultPrim().GetPath())
        return f"proxyPrim -> {new}", lambda s: s.GetPrimAtPath(path).CreateRelationship(name).SetTargets([Sdf.Path(new)])
    if name in ("newton:mimicJoint", "newton:targets"):
        raise NotApplicable(f"{name}: the fixture has no such relationship to retarget")
    raise NotApplicable(f"{name}: no relationship mutation")


def _owned_by(prim: Usd.Prim, bodies: list[str]) -> bool:
    path = str(prim.GetPath())
    return any(path == b or path.startswith(b + "/") for b in bodies)


def mutation_for(row: table.Row, stage: Usd.Stage, targeted: set[str], rng: random.Random) -> Mutation:
    prims = _healthy(stage, targeted)
    if row.schema == "PhysicsCollisionGroup":
        where, says, make = _group_mutation(row, stage, prims, rng)
        return Mutation(row, where, says, make)
    hosts = [(p, i) for p in prims for i in _has_schema(p, row.schema)]
    if not hosts:
        candidates = _hosts(prims, row.schema)
        if Usd.SchemaRegistry.GetSchemaKind(_schema_type(row.schema)) == Usd.SchemaKind.MultipleApplyAPI:
            candidates = [p for p in candidates if p.IsA(UsdPhysics.RevoluteJoint) or p.IsA(UsdPhysics.PrismaticJoint)]
            hosts = [(p, "angular" if p.IsA(UsdPhysics.RevoluteJoint) else "linear") for p in candidates]
        elif Usd.SchemaRegistry.GetSchemaKind(_schema_type(row.schema)) == Usd.SchemaKind.SingleApplyAPI:
            hosts = [(p, "") for p in candidates]
    if not hosts:
        raise NotApplicable(f"no healthy prim has or takes {row.schema}")
    if row.property in ("physics:principalAxes", "physics:diagonalInertia"):
        # An orientation or moments mean something where the moments are authored.
        authored = [h for h in hosts if h[0].GetAttribute("physics:diagonalInertia").HasAuthoredValue()]
        hosts = authored or hosts
    prim, instance = rng.choice(sorted(hosts, key=lambda h: (str(h[0].GetPath()), h[1])))
    name = row.property.replace("__INSTANCE_NAME__", instance)
    if row.kind == table.RELATIONSHIP:
        says, apply = _relationship_mutation(row, prim, prims, stage, rng)
    else:
        says, apply = _attribute_mutation(row, prim, name, rng)
    return Mutation(row, str(prim.GetPath()), says, apply)


def write_mutant(reference: Path, folder: Path, mutation: Mutation) -> Path:
    """A copy of the reference with the mutation as its root layer's strongest sublayer."""
    pkg = variants.copy_package(reference, folder)
    root = variants.root_layer_of(pkg)
    layer_path = pkg / "mutation" / "mutation.usda"   # beside the root layer it would be a second root
    layer_path.parent.mkdir()
    Sdf.Layer.CreateNew(str(layer_path)).Save()
    root_layer = Sdf.Layer.FindOrOpen(str(root))
    root_layer.subLayerPaths = ["./mutation/mutation.usda", *root_layer.subLayerPaths]
    root_layer.Save()
    stage = Usd.Stage.Open(str(root))
    stage.SetEditTarget(Usd.EditTarget(Sdf.Layer.FindOrOpen(str(layer_path))))
    mutation.apply(stage)
    stage.GetEditTarget().GetLayer().Save()
    return pkg


def sample(rows: list[table.Row], rng: random.Random) -> list[table.Row]:
    """ALWAYS, then a seeded sample that visits the schemas in turn (one row of each, shuffled,
    then a second of each...), so the many solver settings of a few scene schemas do not crowd
    out the rest. A row a built-in API repeats (`via`) is the same property: mutated once."""
    # The rows the table ignores too, once each: they must leave Newton's model as it was.
    ignored: dict[str, table.Row] = {}
    for r in sorted(rows, key=lambda r: (r.schema != "PhysicsJoint", r.key)):   # the base joint fits any joint
        if r.ignored and not r.via:
            ignored.setdefault(r.property, r)
    forced = [table.BY_KEY[k] for k in ALWAYS] + sorted(ignored.values(), key=lambda r: r.key)
    by_schema: dict[str, list[table.Row]] = {}
    for r in sorted(rows, key=lambda r: r.key):
        if not r.via and r not in forced:
            by_schema.setdefault(r.schema, []).append(r)
    schemas = sorted(by_schema)
    rng.shuffle(schemas)
    for rows_of in by_schema.values():
        rng.shuffle(rows_of)
    rounds = max(len(v) for v in by_schema.values())
    return forced + [by_schema[s][i] for i in range(rounds) for s in schemas if i < len(by_schema[s])]


# --- the test ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reports():
    lines: list[str] = []
    yield lines
    if lines:
        print("\n\nNewton differential: each mutation, what Newton saw, what the grade said\n" + "\n".join(lines))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_what_newton_sees_the_grade_sees(name, tmp_path, reports):
    case_dir = FIXTURES[name]
    case = load_case(case_dir)
    targeted = {f.target for f in case.profile.faults}
    reference = case_dir / "reference"
    ref_model = newton_model(variants.root_layer_of(reference))
    stage = Usd.Stage.Open(str(variants.root_layer_of(reference)))
    rng = random.Random(f"{SEED}:{name}")
    misses, done, skipped = [], 0, []
    for row in sample(list(table.ROWS), rng):
        if done >= ROWS_PER_FIXTURE:
            break
        try:
            mutation = mutation_for(row, stage, targeted, rng)
        except NotApplicable as why:
            skipped.append(f"{row.schema} {row.property}: {why}")
            continue
        done += 1
        pkg = write_mutant(reference, tmp_path / f"mutant{done}", mutation)
        changed = model_differences(ref_model, newton_model(variants.root_layer_of(pkg)))
        decision = grade(case, pkg)
        reward = decision.authored_usd
        what = f"{name}: {row.schema} {row.property} on {mutation.prim}: {mutation.says}"
        reports.append(f"{what}\n    Newton: {len(changed)} change(s) {changed[:3]}\n    grade: {reward} "
                       f"{decision.status.value} {(decision.reasons or [''])[0][:160]}")
        if changed and not (reward is not None and reward < 1.0):
            misses.append(f"MISSED  {what}\n    Newton saw: {'; '.join(changed[:4])}\n    grade: {reward} "
                          f"({decision.status.value})")
        if row.ignored and changed and not isinstance(ref_model, str):
            misses.append(f"IGNORED ROW CHANGES NEWTON  {what} (the table: {row.ignored})\n"
                          f"    Newton saw: {'; '.join(changed[:4])}")
    assert done >= min(ROWS_PER_FIXTURE, 6), f"only {done} rows could be mutated on {name}: {skipped[:10]}"
    assert not misses, f"{len(misses)} of {done} mutations Newton sees and the grade does not:\n" + "\n".join(misses)


@pytest.mark.slow
@pytest.mark.parametrize("move", ["raised", "tilted"])
def test_a_floor_placed_elsewhere_changes_newtons_model_and_the_grade(move, tmp_path):
    """A ground plane has no centre: raised or tilted, Newton places it elsewhere, and the grade's
    static scenery names the collider (not only the visible part on the same prim)."""
    case_dir = FIXTURES["ant"]
    reference = case_dir / "reference"
    pkg = variants.copy_package(reference, tmp_path / move)
    stage = Usd.Stage.Open(str(variants.root_layer_of(pkg)))
    stage.SetEditTarget(stage.GetRootLayer())
    floor = UsdGeom.Xformable(stage.GetPrimAtPath("/ant/Geometry/floor"))
    if move == "raised":
        floor.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble, "moved").Set(Gf.Vec3d(0, 0, 0.5))
    else:
        floor.AddRotateXOp(UsdGeom.XformOp.PrecisionDouble, "moved").Set(3.0)
    stage.GetRootLayer().Save()
    changed = model_differences(newton_model(variants.root_layer_of(reference)), newton_model(variants.root_layer_of(pkg)))
    assert [c.split(":")[0] for c in changed] == ["shape /ant/Geometry/floor"], changed
    decision = grade(load_case(case_dir), pkg)
    assert decision.authored_usd == 0.0, decision.reasons
    assert any(r.startswith("static_scenery") and "static collider /ant/Geometry/floor: plane" in r
               for r in decision.reasons), decision.reasons


# --- the harness itself (fast) ----------------------------------------------------------------

def test_a_change_in_the_built_model_is_named_and_float32_noise_is_not():
    ref = {"body /a: mass": 1.0, "body /a: inertia tensor": np.eye(3), "filtered shape pairs": (("/a/s", "/b/s"),)}
    assert model_differences(ref, dict(ref)) == []
    noisy = dict(ref, **{"body /a: mass": 1.0 + 1e-6, "body /a: inertia tensor": np.eye(3) * (1 + 1e-6)})
    assert model_differences(ref, noisy) == []
    changed = dict(ref, **{"body /a: mass": 3.0, "filtered shape pairs": (("/a/s", "/b/s"), ("/a/s", "/floor"))})
    said = model_differences(ref, changed)
    assert said == ["body /a: mass: 1.0 -> 3.0", "filtered shape pairs: 1 added (e.g. /a/s / /floor), 0 removed (e.g. -)"]
    assert model_differences(ref, "the USD importer refused the asset: Reversed joints") == [
        "Newton refuses the mutant: the USD importer refused the asset: Reversed joints"]


def test_the_sample_is_fixed_by_the_seed_and_starts_with_the_forced_rows():
    first = sample(list(table.ROWS), random.Random(f"{SEED}:ant"))
    again = sample(list(table.ROWS), random.Random(f"{SEED}:ant"))
    other = sample(list(table.ROWS), random.Random(f"{SEED + 1}:ant"))
    assert [r.key for r in first] == [r.key for r in again] != [r.key for r in other]
    assert [r.key for r in first[:len(ALWAYS)]] == list(ALWAYS)
    assert {r.key for r in first} >= {r.key for r in table.ROWS if r.ignored and r.schema == "PhysicsJoint"}
    # every row the table decides on its own (not a built-in's repeat) is reached by some run
    assert {r.key for r in first} == {r.key for r in table.ROWS if not r.via}
