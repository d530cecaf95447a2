"""What a simulator reads from relationships, collections, owners and orientations, attacked.

Each submission is a fixture case's reference (or a committed partial repair) with one more
sublayer, the strongest, holding the attack: a collision group or filtered pair that keeps the
robot from the floor, an inverted group naming a parent, a turned or permuted inertia, a
simulation owner where no scene is, a joint with its bodies swapped. Each must fail preservation
(0); the equivalent layouts beside them (the same pairs, a group that filters nothing, an owner
that is the only scene) must keep the grade the submission had without them.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from pxr import Sdf

from usd_repair_verifier.authoring.inject import root_layer_of
from usd_repair_verifier.scoring.reward import Status
from tests import variants
from tests.test_hostile_preservation import assert_fails
from tests.grade_in_process import grade

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
ONE_REPAIR = ROOT / "fixtures" / "submissions" / "ant_two_joint_faults_one_repair"
ANT = "ant_two_joint_faults"
FINGER = "gen_finger_4"
ANT_BODIES = ["/ant/Geometry/torso"] + [f"/ant/Geometry/torso/{leg}{part}" for leg, aux in (
    ("front_left_leg", "aux_1"), ("front_right_leg", "aux_2"), ("back_leg", "aux_3"), ("right_back_leg", "aux_4"))
    for part in ("", f"/{aux}", f"/{aux}/Body")]
DISTAL = "/finger/Geometry/proximal/distal"


def with_sublayer(tmp_path: Path, source: Path, text: str) -> Path:
    """`source` copied, with `text` as a new strongest sublayer of its root layer."""
    sub = variants.copy_package(source, tmp_path / "submission")
    root = Sdf.Layer.FindOrOpen(str(root_layer_of(sub)))
    (sub / "attack").mkdir()
    (sub / "attack" / "attack.usda").write_text("#usda 1.0\n" + text, encoding="utf-8")
    root.subLayerPaths.insert(0, "./attack/attack.usda")
    root.Save()
    return sub


def overs(path: str, body: str, api: str | None = None) -> str:
    """`body` authored on the prim at `path` through nested overs (with `api` prepended)."""
    names = path.strip("/").split("/")
    text = body
    for depth, name in reversed(list(enumerate(names))):
        meta = f' (prepend apiSchemas = ["{api}"])' if api and depth == len(names) - 1 else ""
        text = f'over "{name}"{meta}\n{{\n{text}\n}}'
    return "\n" + text + "\n"


def graded(tmp_path: Path, case: str, text: str, start: Path | None = None):
    return grade(CASES / case, with_sublayer(tmp_path, start or CASES / case / "reference", text))


def assert_keeps(decision, reward: float = 1.0):
    assert decision.authored_usd == pytest.approx(reward), decision.reasons


NO_CONTACTS = '''
def PhysicsCollisionGroup "NoContacts"
{
    rel collection:colliders:includes = </ant/Geometry>
    rel physics:filteredGroups = </NoContacts>
}
'''
FLOOR_PAIRS = overs("/ant/Geometry/floor", "rel physics:filteredPairs = [%s]" % ", ".join(f"<{b}>" for b in ANT_BODIES),
                    "PhysicsFilteredPairsAPI")
# Inverted: the group collides only with the groups it lists; it lists the floor's group only.
INVERTED_PARENT = '''
def PhysicsCollisionGroup "Robot"
{
    rel collection:colliders:includes = </ant/Geometry/torso>
    bool physics:invertFilteredGroups = 1
    rel physics:filteredGroups = </Robot>
}
def PhysicsCollisionGroup "Floor"
{
    rel collection:colliders:includes = </ant/Geometry/floor>
}
'''


@pytest.mark.parametrize("attack", [NO_CONTACTS, FLOOR_PAIRS, INVERTED_PARENT],
                         ids=["group_filters_itself", "floor_filtered_pairs", "inverted_group_parent_path"])
def test_robot_kept_from_the_floor_fails(tmp_path, attack):
    assert_fails(graded(tmp_path, ANT, attack), "contact_pairs", "no longer collides with")


def test_group_on_top_of_the_honest_partial_repair_fails(tmp_path):
    honest = grade(CASES / ANT, ONE_REPAIR)
    assert 0.0 < honest.authored_usd < 1.0, honest.reasons
    assert_fails(graded(tmp_path, ANT, NO_CONTACTS, start=ONE_REPAIR), "contact_pairs")


def test_the_reason_names_the_floor_and_the_bodies(tmp_path):
    decision = graded(tmp_path, ANT, FLOOR_PAIRS)
    assert_fails(decision, "contact_pairs", "/ant/Geometry/floor", f"{len(ANT_BODIES)} bodies of /ant/Geometry/torso")


# Equivalents: the same pairs may touch.
GROUP_FILTERS_NOTHING_BY_CHILDREN = '''
def PhysicsCollisionGroup "Everything"
{
    rel collection:colliders:includes = [%s]
    bool physics:invertFilteredGroups = 1
    rel physics:filteredGroups = </Everything>
}
''' % ", ".join(f"<{b}>" for b in ANT_BODIES + ["/ant/Geometry/floor"])
GROUP_FILTERS_NOTHING_BY_PARENT = '''
def PhysicsCollisionGroup "Everything"
{
    rel collection:colliders:includes = </ant/Geometry>
    bool physics:invertFilteredGroups = 1
    rel physics:filteredGroups = </Everything>
}
'''
# The torso and a hip are jointed (collisionEnabled false): they never touch anyway.
JOINTED_PAIR_FILTERED = overs("/ant/Geometry/torso/front_left_leg",
                              "rel physics:filteredPairs = </ant/Geometry/torso/front_left_leg/aux_1>",
                              "PhysicsFilteredPairsAPI")
TWO_GROUPS_NO_FILTER = '''
def PhysicsCollisionGroup "Legs"
{
    rel collection:colliders:includes = </ant/Geometry/torso/back_leg>
}
def PhysicsCollisionGroup "Rest"
{
    rel collection:colliders:includes = </ant/Geometry/floor>
}
'''


@pytest.mark.parametrize("layout", [GROUP_FILTERS_NOTHING_BY_CHILDREN, GROUP_FILTERS_NOTHING_BY_PARENT,
                                    JOINTED_PAIR_FILTERED, TWO_GROUPS_NO_FILTER],
                         ids=["inverted_self_by_children", "inverted_self_by_parent", "jointed_pair",
                              "groups_filtering_nothing"])
def test_layouts_with_the_same_pairs_keep_the_grade(tmp_path, layout):
    assert_keeps(graded(tmp_path, ANT, layout))


# --- inertia as a tensor ------------------------------------------------------------------------

def _distal(text: str) -> str:
    return overs(DISTAL, text)


@pytest.mark.parametrize("edit", ["quatf physics:principalAxes = (0.70710677, 0.70710677, 0, 0)",
                                  "float3 physics:diagonalInertia = (0.0024333384, 0.0002634739, 0.0024333384)"],
                         ids=["axes_turned", "moments_permuted"])
def test_inertia_turned_fails(tmp_path, edit):
    assert_fails(graded(tmp_path, FINGER, _distal(edit)), "healthy_body_properties", "inertia_orientation", DISTAL)


def test_inertia_turned_about_its_axis_of_equal_moments_keeps_the_grade(tmp_path):
    # (a, a, c): any turn about the third axis leaves the tensor as it is.
    assert_keeps(graded(tmp_path, FINGER, _distal("quatf physics:principalAxes = (0.8660254, 0, 0, 0.5)")),
                 grade(CASES / FINGER, CASES / FINGER / "reference").authored_usd)


# --- simulation owners ----------------------------------------------------------------------------

def _owner(path: str, owner: str) -> str:
    return overs(path, f"rel physics:simulationOwner = <{owner}>")


@pytest.mark.parametrize("path", ["/ant/Geometry/torso/back_leg/aux_3", "/ant/Geometry/torso",
                                  "/ant/Geometry/torso/back_leg/aux_3/Body/third_ankle_geom"],
                         ids=["body", "articulation_root", "collider"])
def test_owner_where_no_scene_is_fails(tmp_path, path):
    assert_fails(graded(tmp_path, ANT, _owner(path, "/NoSuchScene")), "simulation_owners", "no scene")


def test_owner_on_a_joint_fails(tmp_path):
    joint = "/ant/Geometry/torso/back_leg/aux_3/hip_3"
    assert_fails(graded(tmp_path, ANT, _owner(joint, "/NoSuchScene")), "simulation_owners", joint)


def test_owner_naming_the_only_scene_keeps_the_grade(tmp_path):
    assert_keeps(graded(tmp_path, ANT, _owner("/ant/Geometry/torso", "/PhysicsScene")))


# --- relationships and joint body order ------------------------------------------------------------

def test_actuator_retargeted_to_another_joint_fails(tmp_path):
    attack = overs("/ant/Physics/Actuator_0", "rel mjc:target = </ant/Geometry/torso/back_leg/aux_3/hip_3>")
    assert_fails(graded(tmp_path, ANT, attack), "simulator_relationships", "mjc:target")


def test_new_simulator_relationship_on_a_healthy_body_fails(tmp_path):
    attack = _owner("/ant/Geometry/torso", "/PhysicsScene").replace("physics:simulationOwner", "newton:contactPartner")
    assert_fails(graded(tmp_path, ANT, attack), "simulator_relationships", "newton:contactPartner")


def test_joint_bodies_swapped_fails(tmp_path):
    joint = "/ant/Geometry/torso/back_leg/aux_3/hip_3"
    swapped = ('rel physics:body0 = </ant/Geometry/torso/back_leg/aux_3>\n'
               'rel physics:body1 = </ant/Geometry/torso/back_leg>')
    decision = graded(tmp_path, ANT, overs(joint, swapped))
    assert decision.status is Status.PRESERVATION_FAILED, decision.reasons
    assert any(r.startswith("joint_body_order") and "swapped" in r for r in decision.reasons), decision.reasons


# --- the fault kinds: found by freeze's comparison ------------------------------------------------

@pytest.mark.parametrize("case", ["ant_filter_and_owner", "finger_inertia_and_owner"])
def test_freeze_finds_the_new_fault_kinds_by_comparison(case):
    import json

    from usd_repair_verifier.authoring.freeze import detect_faults

    found = detect_faults(CASES / case / "reference", CASES / case / "input")
    frozen = json.loads((CASES / case / "profile.json").read_text())["faults"]
    assert sorted((f.kind, f.target) for f in found) == sorted((f["kind"], f["target"]) for f in frozen)


def test_hundreds_of_self_filtering_groups_cost_little_and_fail(tmp_path):
    """Filters are asked per pair of matched colliders, never expanded: many groups and a group
    of every collider read in bounded time; this many groups is more than the grader reads."""
    import time

    from usd_repair_verifier.stage_snapshot.physics_model import MAX_GROUPS

    text = "".join(f'''
def PhysicsCollisionGroup "G{i}"
{{
    rel collection:colliders:includes = </ant/Geometry>
    rel physics:filteredGroups = </G{i}>
}}
''' for i in range(MAX_GROUPS + 1))
    start = time.perf_counter()
    decision = graded(tmp_path, ANT, text)
    assert time.perf_counter() - start < 60
    assert_fails(decision, "contact_pairs", f"{MAX_GROUPS + 1} collision groups")


def test_inverted_group_of_the_parent_filtering_nothing_listed_fails(tmp_path):
    """Inverted with no filtered group: the group collides with no group, itself included."""
    attack = '''
def PhysicsCollisionGroup "Robot"
{
    rel collection:colliders:includes = </ant/Geometry>
    bool physics:invertFilteredGroups = 1
}
'''
    assert_fails(graded(tmp_path, ANT, attack), "contact_pairs", "no longer collides with")


def test_floor_pairs_on_top_of_the_honest_partial_repair_fail(tmp_path):
    assert_fails(graded(tmp_path, ANT, FLOOR_PAIRS, start=ONE_REPAIR), "contact_pairs")
    assert_fails(graded(tmp_path / "owner", ANT, _owner("/ant/Geometry/torso", "/NoSuchScene"), start=ONE_REPAIR),
                 "simulation_owners")


def test_inverted_group_of_the_robot_alone_fails_as_newton_reads_it(tmp_path):
    """The robot's group collides with itself only; the floor is in no group. UsdPhysics's table
    has no answer for a collider in no group; Newton keeps it apart from an inverted group's."""
    attack = '''
def PhysicsCollisionGroup "Robot"
{
    rel collection:colliders:includes = </ant/Geometry/torso>
    bool physics:invertFilteredGroups = 1
    rel physics:filteredGroups = </Robot>
}
'''
    assert_fails(graded(tmp_path, ANT, attack), "contact_pairs", "/ant/Geometry/floor", "no longer collides with")


def test_filtered_pairs_without_their_api_schema_fail_as_newton_reads_them(tmp_path):
    attack = overs("/ant/Geometry/torso", "rel physics:filteredPairs = </ant/Geometry/floor>")
    assert_fails(graded(tmp_path, ANT, attack), "contact_pairs", "/ant/Geometry/floor")


CABINET = "cabinet_drawer_door"


@pytest.mark.parametrize("edit, gate", [
    ('rel physics:simulationOwner = </NoSuchScene>', "simulation_owners"),
    ('bool physxArticulation:enabledSelfCollisions = 0', "simulator_attributes"),
], ids=["owner", "self_collisions"])
def test_an_articulation_root_above_the_bodies_keeps_what_a_simulator_reads(tmp_path, edit, gate):
    assert_fails(graded(tmp_path, CABINET, overs("/Cabinet", edit)), gate, "/Cabinet")


def test_a_relationship_added_to_a_targeted_joint_fails(tmp_path):
    """A fault exempts its own checks, not every other property of its element."""
    joint = "/ant/Geometry/torso/front_left_leg/aux_1/hip_1"   # the case's joint_frame target
    attack = overs(joint, "rel newton:mimicJoint = </ant/Geometry/torso/back_leg/aux_3/hip_3>")
    assert_fails(graded(tmp_path, ANT, attack), "simulator_relationships", "newton:mimicJoint")
