"""What a simulator builds from relationships and collections: contacts, owners, relationships.

Read once, from the UsdPhysics parser's descriptors (`UsdPhysicsLoadStageFromPrimRange`) and
usd-core's own answers, into plain data:

- Contact filtering (`ContactModel`): each collision group with its expanded colliders (the
  parser expands `collection:colliders` with the collection's own includes, excludes,
  expansion rule, `includeRoot` and membership expression), the groups it filters, its
  `invertFilteredGroups` and `mergeGroup` as authored; every `physics:filteredPairs` (body,
  collider or articulation level, each side expanded to colliders); and from them the pairs of
  colliders a simulator lets touch. Which groups collide is `ComputeCollisionGroupTable`'s
  answer (it honours invert and merge groups); Newton's importer adds one rule (a collider in
  an inverted group never touches a collider in no group) and reads `physics:filteredPairs` on
  every body and collider whether FilteredPairsAPI is applied or not: a pair either reading
  keeps apart counts as kept apart. The parser's `CollisionGroupDesc` reports
  `invertFilteredGroups = True` for a group that authors nothing, so the authored value is read
  from the attribute itself (None when unauthored: the schema's fallback, false).
  Nothing is expanded into pairs: a pair's answer is asked (`ContactModel.blocked`), so a
  group of thousands of colliders costs no more to read than one of two.
- Pairs that can never touch whatever the filters say (`never_touch`): two colliders of
  one rigid body, two static colliders, a collider with `collisionEnabled = false`, and the two
  bodies of a joint whose `physics:collisionEnabled` is false (a joint's own property, which
  the joint family measures on the joint).
- Simulation owners: the `physics:simulationOwner` targets of every rigid body and collider as
  the parser reports them, and of joints and articulation roots as authored (the schema gives
  neither one, the parser reads neither, but an engine that honours owners may: an owner added
  there is a difference a simulator can see).
- Simulator relationships: every relationship in a simulator namespace (`physics:`, `physx*`,
  `newton:`, `mjc:`) or declared by an applied physics API schema, with its targets, on the
  elements (bodies, joints, colliders, scenes) and on any other prim that carries one (an
  actuator, a tendon). Those another part of the grade measures in its own terms are left out
  (`MEASURED_ELSEWHERE`): joint bodies, filters and groups, owners.

Paths are kept as they are; the gates map them through the correspondence.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pxr import Sdf, Usd, UsdPhysics

RELATIONSHIP_PREFIXES = ("physics:", "physx", "mjc:", "newton:")
# Applied API schemas whose relationships a simulator reads, by the schema's name.
PHYSICS_SCHEMA_PREFIXES = ("Physics", "Physx", "PhysX", "Newton", "Mjc")
OWNER = "physics:simulationOwner"
# Relationships measured elsewhere, in their own terms: joint bodies (joint family and the
# joint_body_order gate), contact filters and groups (contact family), owners (owner family).
MEASURED_ELSEWHERE = frozenset({"physics:body0", "physics:body1", "physics:filteredPairs", "physics:filteredGroups",
                                OWNER})
MEASURED_PREFIXES = ("collection:colliders",)


@dataclass(frozen=True)
class CollisionGroup:
    path: str
    colliders: tuple[str, ...]           # expanded membership, sorted
    filtered_groups: tuple[str, ...]
    invert_filtered_groups: bool | None  # as authored; None when unauthored (the schema's false)
    merge_group: str                     # "" when none


# More collision groups with colliders than this are not read (each pair of them is asked):
# a stage built to stall the grader, which the contact gate fails with the count.
MAX_GROUPS = 256


@dataclass(frozen=True)
class ContactModel:
    groups: tuple[CollisionGroup, ...] = ()
    filtered_pairs: tuple[tuple[str, str], ...] = ()    # (prim with FilteredPairsAPI, target) as authored
    shape_groups: dict = field(default_factory=dict)    # collider -> its groups (merged as the parser merges)
    group_filters: frozenset = frozenset()              # sorted (group, group) pairs that do not collide
    # collider -> (ids of the filtered pairs it is a source of, ids of those it is a target of)
    filter_sides: dict = field(default_factory=dict)
    unread: str = ""                                    # why the filters were not read ("" when they were)
    # Groups that are, or merge with, an inverted group: Newton keeps their colliders apart from
    # every collider in no group (UsdPhysics's table has no answer for a collider in no group).
    inverted: frozenset = frozenset()

    def blocked(self, a: str, b: str) -> bool:
        """Do the filters (groups, filtered pairs) keep colliders a and b apart, in the UsdPhysics
        reading or in Newton's? (Either engine keeping them apart is a contact lost.)"""
        ga, gb = self.shape_groups.get(a, ()), self.shape_groups.get(b, ())
        if any(((x, y) if x <= y else (y, x)) in self.group_filters for x in ga for y in gb):
            return True
        if bool(ga) != bool(gb) and any(g in self.inverted for g in ga or gb):
            return True
        none = (frozenset(), frozenset())
        (sa, ta), (sb, tb) = self.filter_sides.get(a, none), self.filter_sides.get(b, none)
        return bool(sa & tb or sb & ta)

    def blocked_pairs(self, colliders) -> int:
        """How many pairs of these colliders the filters keep apart."""
        names = sorted(colliders)
        return sum(self.blocked(a, b) for i, a in enumerate(names) for b in names[i + 1:])


def _expand(target: str, colliders: dict[str, str | None], articulated: dict[str, tuple[str, ...]]) -> set[str]:
    """The colliders a filtered-pairs target stands for: a collider itself, a body's colliders,
    an articulation's bodies' colliders, else every collider at or below the path (an engine
    that expands a parent would filter them all: the stricter reading)."""
    if target in colliders:
        return {target}
    found = {c for c, body in colliders.items() if body == target}
    if found:   # a body (an articulation root on a body is that body: the schema names bodies first)
        return found
    bodies = set(articulated.get(target, ()))
    found = {c for c, body in colliders.items() if body in bodies}
    if found:
        return found
    prefix = Sdf.Path(target)
    return {c for c in colliders if Sdf.Path(c).HasPrefix(prefix)}


def _shape_descs(parsed: dict) -> list:
    out = []
    for object_type, (paths, descs) in parsed.items():
        if "Shape" in str(object_type):
            out += list(zip(paths, descs))
    return sorted(out, key=lambda pair: str(pair[0]))


def _groups(stage: Usd.Stage, parsed: dict, members: dict[str, list[str]]) -> tuple[CollisionGroup, ...]:
    paths, descs = parsed.get(UsdPhysics.ObjectType.CollisionGroup, ([], []))
    groups = []
    for path, desc in sorted(zip(paths, descs), key=lambda pair: str(pair[0])):
        prim = stage.GetPrimAtPath(path)
        invert = UsdPhysics.CollisionGroup(prim).GetInvertFilteredGroupsAttr().Get() if prim else None
        groups.append(CollisionGroup(str(path), tuple(sorted(members.get(str(path), ()))),
                                     tuple(sorted(str(p) for p in desc.filteredGroups)),
                                     None if invert is None else bool(invert), str(desc.mergeGroupName)))
    return tuple(groups)


def read_contact_model(stage: Usd.Stage, parsed: dict, colliders: dict,
                       articulated: dict[str, tuple[str, ...]]) -> ContactModel:
    """`colliders`: the snapshot's (path -> Collider); `articulated`: articulation root path -> its
    bodies. Nothing is expanded into pairs here: a pair's answer is `ContactModel.blocked`."""
    body_of = {path: c.body for path, c in colliders.items()}
    members: dict[str, list[str]] = {}
    shape_groups: dict[str, tuple[str, ...]] = {}
    sources: list[tuple[str, str]] = []
    for path, desc in _shape_descs(parsed):
        shape_groups[str(path)] = tuple(sorted({str(g) for g in desc.collisionGroups}))
        for group in shape_groups[str(path)]:
            members.setdefault(group, []).append(str(path))
        sources += [(str(path), str(t)) for t in desc.filteredCollisions]
    for object_type in (UsdPhysics.ObjectType.RigidBody, UsdPhysics.ObjectType.Articulation):
        paths, descs = parsed.get(object_type, ([], []))
        for path, desc in zip(paths, descs):
            sources += [(str(path), str(t)) for t in desc.filteredCollisions]
    # Newton reads the relationship on every body and collider, FilteredPairsAPI applied or not.
    for path in sorted({*colliders, *(b for b in body_of.values() if b), *articulated}):
        prim = stage.GetPrimAtPath(path)
        rel = prim.GetRelationship("physics:filteredPairs") if prim else None
        sources += [(path, str(t)) for t in rel.GetTargets()] if rel else []
    sources = sorted(set(sources))
    sides: dict[str, tuple[set, set]] = {}
    for i, (source, target) in enumerate(sources):
        for collider in _expand(source, body_of, articulated):
            sides.setdefault(collider, (set(), set()))[0].add(i)
        for collider in _expand(target, body_of, articulated):
            sides.setdefault(collider, (set(), set()))[1].add(i)
    groups = _groups(stage, parsed, members)
    used = sorted(members)
    if len(used) > MAX_GROUPS:
        return ContactModel(groups, tuple(sources), unread=f"{len(used)} collision groups hold colliders, more "
                                                           f"than the grader reads ({MAX_GROUPS})")
    table = UsdPhysics.CollisionGroup.ComputeCollisionGroupTable(stage)
    known = {str(g) for g in table.GetGroups()}
    filters = frozenset((a, b) for i, a in enumerate(used) for b in used[i:]
                        if a in known and b in known and not table.IsCollisionEnabled(Sdf.Path(a), Sdf.Path(b)))
    return ContactModel(groups, tuple(sources), shape_groups, filters,
                        {c: (frozenset(s), frozenset(t)) for c, (s, t) in sorted(sides.items())},
                        inverted=_inverted(groups, used))


def _inverted(groups: tuple[CollisionGroup, ...], used: list[str]) -> frozenset:
    """The used groups that are inverted or share a merge group with an inverted one."""
    merged_inverted = {g.merge_group for g in groups if g.invert_filtered_groups and g.merge_group}
    return frozenset(g.path for g in groups if g.path in used and (
        g.invert_filtered_groups or (g.merge_group and g.merge_group in merged_inverted)))


def never_touch(a, b, joints) -> str:
    """Why two colliders (snapshot Colliders) can never touch whatever the filters say, or ""."""
    if not (a.enabled and b.enabled):
        return "a collider with collisionEnabled = false"
    if a.body is None and b.body is None:
        return "two static colliders"
    if a.body == b.body:
        return "two colliders of one rigid body"
    pair = {a.body, b.body}
    if any({j.body0, j.body1} == pair and not j.collision_enabled for j in joints.values()):
        return "jointed bodies (the joint's collisionEnabled is false)"
    return ""


def read_simulation_owners(stage: Usd.Stage, parsed: dict, joints, roots) -> dict[str, tuple[str, ...]]:
    """Element path -> its simulation owners (sorted paths; empty: the default scene)."""
    owners: dict[str, tuple[str, ...]] = {}
    for path, desc in _shape_descs(parsed):
        owners[str(path)] = tuple(sorted(str(p) for p in desc.simulationOwners))
    paths, descs = parsed.get(UsdPhysics.ObjectType.RigidBody, ([], []))
    for path, desc in zip(paths, descs):
        owners[str(path)] = tuple(sorted(str(p) for p in desc.simulationOwners))
    for path in sorted(set(joints) | set(roots)):
        prim = stage.GetPrimAtPath(path)
        rel = prim.GetRelationship(OWNER) if prim else None
        if path not in owners or rel:
            owners[path] = tuple(sorted(str(t) for t in rel.GetTargets())) if rel else ()
    return dict(sorted(owners.items()))


def simulator_relationship_names(prim: Usd.Prim) -> list[str]:
    """Relationships of the prim a simulator reads, not measured elsewhere (sorted)."""
    declared: set[str] = set()
    registry = Usd.SchemaRegistry()
    for schema in prim.GetAppliedSchemas():
        if schema.startswith(PHYSICS_SCHEMA_PREFIXES):
            definition = registry.FindAppliedAPIPrimDefinition(schema.split(":")[0])
            if definition:
                declared |= set(definition.GetPropertyNames())
    names = []
    for rel in prim.GetRelationships():
        name = rel.GetName()
        if not (name.startswith(RELATIONSHIP_PREFIXES) or name in declared):
            continue
        if name in MEASURED_ELSEWHERE or name.startswith(MEASURED_PREFIXES):
            continue
        if rel.HasAuthoredTargets():
            names.append(name)
    return sorted(names)


def read_simulator_relationships(stage: Usd.Stage) -> dict[str, dict[str, tuple[str, ...]]]:
    """Prim path -> {relationship: its targets as composed} for every prim with one (elements or
    not); collision groups are the contact model's."""
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for prim in Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies()):
        if prim.IsA(UsdPhysics.CollisionGroup):
            continue
        names = simulator_relationship_names(prim)
        if names:
            out[str(prim.GetPath())] = {n: tuple(str(t) for t in prim.GetRelationship(n).GetTargets())
                                        for n in names}
    return dict(sorted(out.items()))


def read_physics_model(stage: Usd.Stage, parsed: dict, colliders: dict, joints: dict, roots) -> dict:
    """The snapshot's fields this module fills: `contact`, `simulation_owners`,
    `simulator_relationships` (`roots`: the snapshot's ArticulationRoots)."""
    return {
        "contact": read_contact_model(stage, parsed, colliders, {r.path: r.bodies for r in roots}),
        "simulation_owners": read_simulation_owners(stage, parsed, joints, [r.path for r in roots]),
        "simulator_relationships": read_simulator_relationships(stage),
    }
