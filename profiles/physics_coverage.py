"""Which check or gate measures each property of every physics schema, or why none does.

One row per property (attribute and relationship) of every physics schema the USD schema
registry lists: usd-core's UsdPhysics schemas (`Physics*`, typed and applied, the multiple-apply
`PhysicsDriveAPI` and `PhysicsLimitAPI` under their instance-name template
`drive:__INSTANCE_NAME__:...`) and the schemas an installed physics package registers
(newton-usd-schemas, the physical extra: `Newton*`). A property a schema gets from an API schema
it builds in (NewtonCollisionAPI brings PhysicsCollisionAPI) has its own row, decided as the
built-in schema's row (`via` names it).

Each row either names what measures the property (`measured_by`: a check family's measure as
`family.measure`, or a gate by name, see `KNOWN_MEASURES`) or gives the one reason it is ignored.
tests/test_physics_coverage.py walks the registry at run time: a physics property with no row, or
a row for a property the registry no longer has, fails the suite; tools/physics_coverage.py writes
docs/physics-coverage.md from this table. tests/test_newton_differential.py mutates rows of it on
fixture references and checks the grade against what Newton builds.

Plain data, free of pxr: `registered_physics_properties()` imports pxr only when called.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

USD_CORE = "usd-core"
NEWTON_SCHEMAS = "newton-usd-schemas"
# Which registered schemas are physics schemas: by the plugin that registers them, or by name.
PHYSICS_PLUGINS = {"usdPhysics": USD_CORE, "newton": NEWTON_SCHEMAS}
PHYSICS_NAME_PREFIXES = ("Physics", "Physx", "PhysX", "Newton", "Mjc")
# The Python module whose import registers a package's schemas with USD's plugin registry.
REGISTERING_MODULES = {NEWTON_SCHEMAS: "newton_usd_schemas"}

# What a row may name besides the family measures (`family.measure`) and gates of this checkout:
# the gates and measures that read the physics model beyond attributes (contact pairs, owners,
# inertia orientation, every simulator relationship, joint body order). They are listed here so
# that the table can name them where the gates are not yet merged; tests/test_physics_coverage.py
# accepts a name from this list or from the family table and gates/names.py.
CONTACT_PAIRS = "contact_pairs"                       # which collider pairs may touch, through the correspondence
SIMULATION_OWNERS = "simulation_owners"               # each object's owning scenes, through the correspondence
INERTIA_TENSOR = "mass.inertia_orientation"           # the inertia tensor's orientation in a common frame
SIMULATOR_RELATIONSHIPS = "simulator_relationships"   # every simulator relationship, targets mapped
JOINT_BODY_ORDER = "joint_body_order"                 # body0/body1 as authored (Newton refuses reversed joints)
KNOWN_MEASURES = (CONTACT_PAIRS, SIMULATION_OWNERS, INERTIA_TENSOR, SIMULATOR_RELATIONSHIPS, JOINT_BODY_ORDER)

ATTRIBUTE, RELATIONSHIP = "attribute", "relationship"


@dataclass(frozen=True)
class Row:
    schema: str                        # the schema's registered name, e.g. "PhysicsRevoluteJoint"
    property: str                      # as its prim definition lists it (instance-name template kept)
    kind: str                          # ATTRIBUTE or RELATIONSHIP
    package: str                       # the distribution that registers the schema
    measured_by: tuple[str, ...] = ()  # `family.measure` or a gate or reading named above
    ignored: str = ""                  # why nothing measures it (exactly one of the two is set)
    via: str = ""                      # the built-in API schema the property comes from

    @property
    def key(self) -> tuple[str, str]:
        return (self.schema, self.property)


@dataclass(frozen=True)
class _Decision:
    property: str
    kind: str
    measured_by: tuple[str, ...] = ()
    ignored: str = ""


def _m(prop: str, *measured_by: str, kind: str = ATTRIBUTE) -> _Decision:
    return _Decision(prop, kind, tuple(measured_by))


def _rel(prop: str, *measured_by: str) -> _Decision:
    return _Decision(prop, RELATIONSHIP, tuple(measured_by))


def _ignored(prop: str, why: str, kind: str = ATTRIBUTE) -> _Decision:
    return _Decision(prop, kind, (), why)


def _schema(schema: str, package: str, *decisions: _Decision) -> tuple[Row, ...]:
    return tuple(Row(schema, d.property, d.kind, package, d.measured_by, d.ignored) for d in decisions)


def _builtin(schema: str, package: str, rows: tuple[Row, ...], *properties: str) -> tuple[Row, ...]:
    """`schema`'s rows for properties that a built-in API schema's `rows` already decide."""
    by_property = {r.property: r for r in rows}
    return tuple(replace(by_property[p], schema=schema, package=package, via=by_property[p].schema) for p in properties)


SIM = "simulator_attributes"     # every authored simulator attribute of a matched element, in SI
IMAGEABLE = "inherited from UsdGeomImageable: how a joint is drawn, which no simulator reads"

# --- usd-core: UsdPhysics -------------------------------------------------------------

COLLISION = _schema(
    "PhysicsCollisionAPI", USD_CORE,
    _m("physics:collisionEnabled", "collision.coverage", "collision.free_space", "mass.mass", "static_scenery",
       CONTACT_PAIRS),
    _rel("physics:simulationOwner", SIMULATION_OWNERS, SIMULATOR_RELATIONSHIPS),
)
MESH_COLLISION = _schema(
    "PhysicsMeshCollisionAPI", USD_CORE,
    _m("physics:approximation", "collision.free_space", "collision.coverage", "mass.mass", "static_scenery"),
)
MASS = _schema(
    "PhysicsMassAPI", USD_CORE,
    _m("physics:mass", "mass.mass", "mass.inertia"),
    _m("physics:density", "mass.mass", "mass.inertia"),
    _m("physics:centerOfMass", "mass.center_of_mass"),
    _m("physics:diagonalInertia", "mass.inertia", INERTIA_TENSOR),
    _m("physics:principalAxes", INERTIA_TENSOR),
)
MATERIAL = _schema(
    "PhysicsMaterialAPI", USD_CORE,
    _m("physics:density", "material.physics", "mass.mass"),
    _m("physics:staticFriction", "material.physics"),
    _m("physics:dynamicFriction", "material.physics"),
    _m("physics:restitution", "material.physics"),
)
RIGID_BODY = _schema(
    "PhysicsRigidBodyAPI", USD_CORE,
    _m("physics:rigidBodyEnabled", "body.state"),
    _m("physics:kinematicEnabled", "body.state"),
    _m("physics:velocity", SIM),
    _m("physics:angularVelocity", SIM),
    _m("physics:startsAsleep", SIM),
    _rel("physics:simulationOwner", SIMULATION_OWNERS, SIMULATOR_RELATIONSHIPS),
)
SCENE = _schema(
    "PhysicsScene", USD_CORE,
    _m("physics:gravityDirection", "physics_scene"),
    _m("physics:gravityMagnitude", "physics_scene"),
)
COLLISION_GROUP = _schema(
    "PhysicsCollisionGroup", USD_CORE,
    # The group's membership is its built-in collection "colliders", expanded by its own rule.
    _m("collection:colliders", CONTACT_PAIRS),
    _rel("collection:colliders:includes", CONTACT_PAIRS),
    _rel("collection:colliders:excludes", CONTACT_PAIRS),
    _m("collection:colliders:expansionRule", CONTACT_PAIRS),
    _m("collection:colliders:includeRoot", CONTACT_PAIRS),
    _m("collection:colliders:membershipExpression", CONTACT_PAIRS),
    _m("collection:colliders:mode", CONTACT_PAIRS),
    _rel("physics:filteredGroups", CONTACT_PAIRS),
    _m("physics:invertFilteredGroups", CONTACT_PAIRS),
    _m("physics:mergeGroup", CONTACT_PAIRS),
)
FILTERED_PAIRS = _schema(
    "PhysicsFilteredPairsAPI", USD_CORE,
    _rel("physics:filteredPairs", CONTACT_PAIRS),
)
ARTICULATION_ROOT = ()   # PhysicsArticulationRootAPI has no property; where it is applied: articulation.roots
DRIVE = _schema(
    "PhysicsDriveAPI", USD_CORE,
    *(_m(f"drive:__INSTANCE_NAME__:physics:{name}", "joint.state")
      for name in ("type", "maxForce", "targetPosition", "targetVelocity", "damping", "stiffness")),
)
LIMIT = _schema(
    "PhysicsLimitAPI", USD_CORE,
    _m("limit:__INSTANCE_NAME__:physics:low", "joint.range"),
    _m("limit:__INSTANCE_NAME__:physics:high", "joint.range"),
)

_JOINT = (
    _rel("physics:body0", "joint.graph", JOINT_BODY_ORDER),
    _rel("physics:body1", "joint.graph", JOINT_BODY_ORDER),
    _m("physics:localPos0", "joint.frame"),
    _m("physics:localPos1", "joint.frame"),
    _m("physics:localRot0", "joint.frame"),
    _m("physics:localRot1", "joint.frame"),
    _m("physics:jointEnabled", "joint.state", "degrees_of_freedom"),
    _m("physics:collisionEnabled", "joint.state", CONTACT_PAIRS),
    _m("physics:excludeFromArticulation", "joint.state"),
    _m("physics:breakForce", SIM),
    _m("physics:breakTorque", SIM),
    _ignored("proxyPrim", IMAGEABLE, RELATIONSHIP),
    _ignored("purpose", IMAGEABLE),
    _ignored("visibility", IMAGEABLE),
)
_AXIS = _m("physics:axis", "joint.frame", "joint.range")
_TRAVEL = (_m("physics:lowerLimit", "joint.range"), _m("physics:upperLimit", "joint.range"))
JOINTS = (
    _schema("PhysicsJoint", USD_CORE, *_JOINT)
    + _schema("PhysicsFixedJoint", USD_CORE, *_JOINT)
    + _schema("PhysicsRevoluteJoint", USD_CORE, *_JOINT, _AXIS, *_TRAVEL)
    + _schema("PhysicsPrismaticJoint", USD_CORE, *_JOINT, _AXIS, *_TRAVEL)
    + _schema("PhysicsSphericalJoint", USD_CORE, *_JOINT, _AXIS,
              _m("physics:coneAngle0Limit", "joint.range", SIM), _m("physics:coneAngle1Limit", "joint.range", SIM))
    + _schema("PhysicsDistanceJoint", USD_CORE, *_JOINT,
              _m("physics:minDistance", "joint.range", SIM), _m("physics:maxDistance", "joint.range", SIM))
)

USD_PHYSICS = (COLLISION + MESH_COLLISION + MASS + MATERIAL + RIGID_BODY + SCENE + COLLISION_GROUP + FILTERED_PAIRS
               + ARTICULATION_ROOT + DRIVE + LIMIT + JOINTS)

# --- newton-usd-schemas ---------------------------------------------------------------

_N = NEWTON_SCHEMAS
# On a matched element (body, joint, collider, scene), the physics material bound to a collider,
# or a prim whose relationship names one (an actuator): simulator_attributes compares every
# authored newton: attribute in SI where UsdPhysics gives the unit, and flags any one added.
_SCENE_COMMON = ("newton:gravityEnabled", "newton:maxSolverIterations", "newton:timeStepsPerSecond")
_MATERIAL_BUILTINS = ("physics:density", "physics:dynamicFriction", "physics:restitution", "physics:staticFriction")
_COLLISION_BUILTINS = ("physics:collisionEnabled", "physics:simulationOwner")


def _newton_sim(schema: str, *attributes: str) -> tuple[Row, ...]:
    return _schema(schema, _N, *(_m(a, SIM) for a in attributes))


NEWTON = (
    _schema("NewtonActuator", _N, _rel("newton:targets", SIMULATOR_RELATIONSHIPS))
    + _newton_sim("NewtonActuatorDelayAPI", "newton:delaySteps")
    + _newton_sim("NewtonArticulationRootAPI", "newton:jointsAddMobility", "newton:selfCollisionEnabled")
    + _newton_sim("NewtonCollisionAPI", "newton:contactGap", "newton:contactMargin")
    + _builtin("NewtonCollisionAPI", _N, COLLISION, *_COLLISION_BUILTINS)
    + _newton_sim("NewtonCurvesDeformableMaterialAPI", "newton:curvesBendDamping", "newton:curvesShearDamping",
                  "newton:curvesStretchDamping", "newton:curvesTwistDamping")
    + _builtin("NewtonCurvesDeformableMaterialAPI", _N, MATERIAL, *_MATERIAL_BUILTINS)
    + _newton_sim("NewtonDCMotorClampingAPI", "newton:maxMotorEffort", "newton:saturationEffort",
                  "newton:velocityLimit")
    + _newton_sim("NewtonJointAPI", "newton:armature", "newton:damping", "newton:friction", "newton:velocityLimit",
                  "newton:limitStiffness", "newton:limitDamping")
    + _newton_sim("NewtonKaminoSceneAPI", *_SCENE_COMMON, "newton:kamino:constraints:alpha",
                  "newton:kamino:constraints:beta", "newton:kamino:constraints:gamma",
                  "newton:kamino:constraints:usePreconditioning", "newton:kamino:jointCorrection",
                  "newton:kamino:padmm:complementarityTolerance", "newton:kamino:padmm:dualTolerance",
                  "newton:kamino:padmm:primalTolerance", "newton:kamino:padmm:useAcceleration",
                  "newton:kamino:padmm:warmstarting")
    + _newton_sim("NewtonMPMMaterialAPI", *(f"newton:mpm:{n}" for n in (
        "dilatancy", "elasticDamping", "hardening", "hardeningRate", "initialPlasticVolumeStrain",
        "internalFriction", "poissonsRatio", "softeningRate", "tensileYieldRatio", "viscosity", "yieldPressure",
        "yieldStress", "youngsModulus")))
    + _builtin("NewtonMPMMaterialAPI", _N, MATERIAL, *_MATERIAL_BUILTINS)
    + _newton_sim("NewtonMPMSceneAPI", *_SCENE_COMMON, *(f"newton:mpm:{n}" for n in (
        "airDrag", "colliderBasisOrder", "colliderBasisType", "colliderDiscontinuousBasis", "criticalFraction",
        "gridPadding", "gridType", "integrationScheme", "maxActiveCellCount", "rheologySolvers",
        "strainBasisOrder", "strainBasisType", "strainDiscontinuousBasis", "tolerance", "transferScheme",
        "velocityBasisOrder", "velocityBasisType", "voxelSize")))
    + _schema("NewtonMassAPI", _N, _m("newton:inertia", SIM, INERTIA_TENSOR), _m("newton:massModel", SIM),
              _m("newton:shellThickness", SIM))
    + _builtin("NewtonMassAPI", _N, MASS, "physics:centerOfMass", "physics:density", "physics:diagonalInertia",
               "physics:mass", "physics:principalAxes")
    + _newton_sim("NewtonMaterialAPI", "newton:contactAdhesion", "newton:contactDamping",
                  "newton:contactFrictionGain", "newton:contactStiffness", "newton:rollingFriction",
                  "newton:torsionalFriction")
    + _builtin("NewtonMaterialAPI", _N, MATERIAL, *_MATERIAL_BUILTINS)
    + _newton_sim("NewtonMaxEffortClampingAPI", "newton:maxEffort")
    + _newton_sim("NewtonMeshCollisionAPI", "newton:contactGap", "newton:contactMargin", "newton:maxHullVertices")
    + _builtin("NewtonMeshCollisionAPI", _N, MESH_COLLISION, "physics:approximation")
    + _builtin("NewtonMeshCollisionAPI", _N, COLLISION, *_COLLISION_BUILTINS)
    + _schema("NewtonMimicAPI", _N, _m("newton:mimicEnabled", SIM), _rel("newton:mimicJoint", SIMULATOR_RELATIONSHIPS),
              _m("newton:mimicCoef0", SIM), _m("newton:mimicCoef1", SIM))
    + _newton_sim("NewtonNeuralControlAPI", "newton:modelPath")
    + _newton_sim("NewtonPDControlAPI", "newton:constEffort", "newton:kd", "newton:kp")
    + _newton_sim("NewtonPIDControlAPI", "newton:constEffort", "newton:integralMax", "newton:kd", "newton:ki",
                  "newton:kp")
    # Per-point masses of a deformable, which the grade does not model: on a matched element it
    # is still an authored simulator attribute, and compared as one.
    + _newton_sim("NewtonPointsDeformableSimAPI", "physics:masses")
    + _newton_sim("NewtonPositionBasedClampingAPI", "newton:lookupEfforts", "newton:lookupPositions")
    + _newton_sim("NewtonSDFCollisionAPI", "newton:contactGap", "newton:contactMargin", "newton:hydroelasticEnabled",
                  "newton:hydroelasticStiffness", "newton:sdfMaxResolution", "newton:sdfNarrowBandInner",
                  "newton:sdfNarrowBandOuter", "newton:sdfPadding", "newton:sdfTargetVoxelSize",
                  "newton:sdfTextureFormat")
    + _builtin("NewtonSDFCollisionAPI", _N, COLLISION, *_COLLISION_BUILTINS)
    + _newton_sim("NewtonSceneAPI", *_SCENE_COMMON)
    + _newton_sim("NewtonVbdSceneAPI", *_SCENE_COMMON, "newton:vbd:rigid:contactHistory",
                  "newton:vbd:rigid:jointAngularDamping", "newton:vbd:rigid:jointAngularStiffness",
                  "newton:vbd:rigid:jointLinearDamping", "newton:vbd:rigid:jointLinearStiffness")
    + _newton_sim("NewtonXpbdSceneAPI", *_SCENE_COMMON, *(f"newton:xpbd:{n}" for n in (
        "angularDamping", "jointAngularCompliance", "jointAngularRelaxation", "jointLinearCompliance",
        "jointLinearRelaxation", "restitutionEnabled", "rigidContactConWeighting", "rigidContactRelaxation",
        "softBodyRelaxation", "softContactRelaxation")))
)

ROWS: tuple[Row, ...] = tuple(sorted(USD_PHYSICS + NEWTON, key=lambda r: (r.package != USD_CORE, r.key)))
BY_KEY: dict[tuple[str, str], Row] = {r.key: r for r in ROWS}
# Schemas with no property of their own (what matters is where they are applied), so that a
# property added to one of them later is noticed too.
SCHEMAS_WITHOUT_PROPERTIES = {
    "PhysicsArticulationRootAPI": USD_CORE,      # where it is applied: articulation.roots
    "NewtonActuatorClampingBaseAPI": NEWTON_SCHEMAS,
    "NewtonActuatorControlBaseAPI": NEWTON_SCHEMAS,
    "NewtonSiteAPI": NEWTON_SCHEMAS,
}
SCHEMAS = sorted({r.schema for r in ROWS} | set(SCHEMAS_WITHOUT_PROPERTIES))


def _check_table() -> None:
    """Fail at import, naming the row, on a table that contradicts itself."""
    assert len(BY_KEY) == len(ROWS), "a (schema, property) is listed twice"
    for r in ROWS:
        assert r.kind in (ATTRIBUTE, RELATIONSHIP), f"{r.schema} {r.property}: bad kind {r.kind!r}"
        assert bool(r.measured_by) != bool(r.ignored), f"{r.schema} {r.property}: measured or ignored, exactly one"
        assert r.package in PHYSICS_PLUGINS.values(), f"{r.schema} {r.property}: unknown package {r.package!r}"


_check_table()


@dataclass(frozen=True)
class RegisteredProperty:
    schema: str
    property: str
    kind: str
    package: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.schema, self.property)


def registered_physics_properties() -> tuple[list[RegisteredProperty], set[str], list[str]]:
    """What the schema registry lists now: (every property of every physics schema, the physics
    schemas' names, packages whose registering module could not be imported). Imports each
    package's registering module first (its schemas exist only then) and pxr."""
    import importlib

    missing = []
    for package, module in sorted(REGISTERING_MODULES.items()):
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(package)
    from pxr import Plug, Tf, Usd

    registry = Usd.SchemaRegistry()
    found: list[RegisteredProperty] = []
    schemas: set[str] = set()
    for schema_type in Tf.Type.FindByName("UsdSchemaBase").GetAllDerivedTypes():
        name = Usd.SchemaRegistry.GetSchemaTypeName(schema_type)
        if not name:
            continue
        plugin = Plug.Registry().GetPluginForType(schema_type)
        plugin_name = plugin.name if plugin else ""
        if plugin_name not in PHYSICS_PLUGINS and not name.startswith(PHYSICS_NAME_PREFIXES):
            continue
        package = PHYSICS_PLUGINS.get(plugin_name, plugin_name or "unknown")
        definition = registry.FindConcretePrimDefinition(name) or registry.FindAppliedAPIPrimDefinition(name)
        if definition is None:   # an abstract typed schema: its concrete ones list its properties
            continue
        schemas.add(name)
        for prop in definition.GetPropertyNames():
            kind = ATTRIBUTE if definition.GetSchemaAttributeSpec(prop) else RELATIONSHIP
            found.append(RegisteredProperty(name, str(prop), kind, package))
    return sorted(found, key=lambda p: (p.schema, p.property)), schemas, missing
