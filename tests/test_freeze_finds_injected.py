"""Generated authoring test: what `usdgrade inject` breaks, `usdgrade freeze` finds, exactly.

Over the fixture assets (centimetres and metres, meshes and capsules, one layer and six) and a
real robot: every fault kind on a seeded sample of the targets its injector takes is found by
comparison as that fault and nothing else; and pairs of kinds on adjacent targets (a body and a
joint attached to it, a visible part and its body) are both found, frozen into a case, and the
honest repair of each one alone earns its share: more than 0, less than 0.99 (the other fault is
still there), never the 0.99 of a repair capped only by the objective. Every kind on a body beside
every kind on one of its joints or visible parts is generated: where a fixture holds the two as
two faults, freeze finds both, each as its kind.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.grade_in_process import grade, grade_warm
from usd_repair_verifier.authoring.detect import Detector, detect
from usd_repair_verifier.authoring.freeze import freeze
from usd_repair_verifier.authoring.inject import InjectionError, inject, root_layer_of
from usd_repair_verifier.authoring.inject_targets import candidates
from usd_repair_verifier.authoring.usd_messages import muted
from usd_repair_verifier.gates.differences import every_difference
from usd_repair_verifier.profiles.families import measure_entry
from usd_repair_verifier.profiles.schema import Fault
from usd_repair_verifier.profiles.vocabulary import DEFAULT_SAMPLING, FAULT_KINDS
from usd_repair_verifier.stage_snapshot.read import read_snapshot

ROOT = Path(__file__).resolve().parent.parent
ASSETS = [ROOT / "fixtures" / "assets" / name for name in ("ant", "gripper_m", "cabinet_cm")]
ROBOT = ROOT / "fixtures" / "robot_cases" / "xarm7_drive_and_units" / "reference"
SEED = 7
SAMPLE = 2   # targets per kind and package
TRIES = 4    # adjacent target pairs tried per package for a pair of kinds
# Pairs on adjacent targets: (first kind, on a body; second kind, on a joint attached to it or on
# one of its visible parts). A pair where one fault's measure is the other's declared knock-on (a
# centre of mass moved beside a part moved) is one fault to the grade, so none is listed.
PAIRS = [("body_state", "joint_state"), ("mass_changed", "joint_limits"), ("collision_removed", "joint_drive"),
         ("center_of_mass_moved", "visual_material"), ("physics_material", "component_moved"),
         ("inertia_invalid", "joint_frame")]


def same_measurement(found: str, injected: str) -> bool:
    """Kinds the grade cannot tell apart on this input: the same checks with the same measured
    values (a collider whose CollisionAPI is removed and one disabled both leave no collision)."""
    return found == injected or FAULT_KINDS[found].checks == FAULT_KINDS[injected].checks


def layout(kind: str) -> bool:
    return any(measure_entry(family, measure).measures_layout for family, measure in FAULT_KINDS[kind].checks)


def snapshot(package: Path):
    return read_snapshot(root_layer_of(package), DEFAULT_SAMPLING)


def injected(reference: Path, out: Path, kind: str, targets: list[str]) -> str | None:
    """Inject the kind on the first of `targets` its injector takes; that target, or None."""
    for target in targets:
        try:
            with muted():
                inject(reference, out, [(kind, target)], SEED)
            return target
        except InjectionError:
            continue
    return None


def found(reference: Path, broken: Path) -> list[tuple[str, str]]:
    return sorted((f.target, f.kind) for f in detect(reference, broken).faults)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(FAULT_KINDS))
def test_an_injected_fault_is_found_as_itself(kind, tmp_path):
    tried = 0
    for package in [*ASSETS, ROBOT]:
        pool = candidates(snapshot(package), FAULT_KINDS[kind].target)
        random.Random(f"{SEED}:{kind}:{package.name}").shuffle(pool)
        for i in range(SAMPLE):
            out = tmp_path / f"{package.name}-{i}"
            target = injected(package, out, kind, pool)
            if target is None:
                break
            pool.remove(target)
            tried += 1
            detection = detect(package, out)
            faults = sorted((f.target, f.kind) for f in detection.faults)
            made = {(f.family, f.measure) for f in detection.differences if f.target == target}
            if not made & set(FAULT_KINDS[kind].checks):
                # The injector took the target but made nothing the grade measures (a small handle's
                # hull made a box inside a large drawer): freeze finds nothing, and invents nothing.
                assert faults == [], (package.name, kind, target, faults)
                continue
            if layout(kind):
                # A file missing from the package also loses what it carried: each loss the grade
                # measures is a fault of its own beside the missing file.
                faults = [(t, k) for t, k in faults if k == kind]
            above = snapshot(package).bodies[target].parent_body if kind == "body_state" else None
            if above:
                # A nested body disabled: its colliders count towards the body above it, whose mass
                # properties freeze names a fault of their own (no knock-on: it would excuse an
                # independent mass fault there).
                assert all(t == target or (t == above and FAULT_KINDS[k].checks[0][0] == "mass")
                           for t, k in faults), (package.name, kind, target, faults)
                faults = [(t, k) for t, k in faults if t == target]
            assert len(faults) == 1, (package.name, kind, target, faults)
            [(where, what)] = faults
            assert where == target and same_measurement(what, kind), (package.name, kind, target, faults)
    assert tried, f"no fixture package takes a fault of kind {kind}"


def injected_pair(reference: Path, here: Path, first: tuple[str, str], second: tuple[str, str]) -> bool:
    """Inject both faults (kind, target) into here/both, and each alone into here/first and
    here/second (a folder of its own for each try: USD keeps a layer it opened under its path);
    False where an injector refuses its target."""
    try:
        with muted():
            inject(reference, here / "both", [first, second], SEED)
            inject(reference, here / "first", [first], SEED)
            inject(reference, here / "second", [second], SEED)
    except InjectionError:
        return False
    return True


def adjacent(reference: Path, first: str, second: str) -> list[tuple[str, str]]:
    """(body, its joint or part) pairs of the reference for the two kinds' targets, seeded order."""
    snap = snapshot(reference)
    if FAULT_KINDS[second].target == "joint":
        pairs = [(body, path) for path, joint in snap.joints.items() for body in (joint.body0, joint.body1)
                 if body in snap.bodies]
    else:
        pairs = [(part.body, path) for path, part in snap.components.items() if part.body in snap.bodies]
    if first == "body_state":   # a nested body disabled moves the body above it too (see above)
        pairs = [(body, other) for body, other in pairs if not snap.bodies[body].parent_body]
    pairs.sort()
    random.Random(f"{SEED}:{first}:{second}").shuffle(pairs)
    return pairs


@pytest.mark.slow
@pytest.mark.parametrize(("first", "second"), PAIRS, ids=lambda k: k)
def test_two_faults_side_by_side_are_both_found_and_each_repair_earns_its_share(first, second, tmp_path,
                                                                                monkeypatch):
    monkeypatch.setattr("usd_repair_verifier.scoring.run.run_grade", grade_warm)
    for reference in [*ASSETS, ROBOT]:
        for n, (body, other) in enumerate(adjacent(reference, first, second)):
            here = tmp_path / f"{reference.parent.name}-{reference.name}-{n}"
            if injected_pair(reference, here, (first, body), (second, other)):
                break
        else:
            continue
        break
    else:
        pytest.fail(f"no fixture package takes {first} on a body and {second} beside it")
    both = found(reference, here / "both")
    assert [t for t, _ in both] == sorted([body, other]), both
    wanted = dict([(body, first), (other, second)])
    assert all(same_measurement(kind, wanted[target]) for target, kind in both), both
    faults = [Fault(id="f1", kind=first, target=body), Fault(id="f2", kind=second, target=other)]
    freeze(f"pair-{first}-{second}", reference, here / "both", tmp_path / "case", faults)
    for left in ("first", "second"):      # the package with only that fault left
        decision = grade(tmp_path / "case", here / left)
        assert decision.status == "graded", (left, decision.reasons)
        assert 0.0 < decision.authored_usd < 0.99, (left, decision.authored_usd, decision.reasons)


# Pairs no fixture package can hold as two faults (none of the first TRIES adjacent targets of any
# package takes both injectors with each fault measured apart): the test of each asserts that it is so.
NOT_ON_FIXTURES = {
    ("body_hierarchy", "component_moved"), ("body_hierarchy", "component_reshaped"),
    ("body_hierarchy", "display_appearance"), ("body_hierarchy", "visual_material"),
    ("collider_shrunk", "display_appearance"), ("collision_over_approximated", "display_appearance"),
    ("inertia_orientation", "display_appearance"), ("density_misplaced", "joint_drive"),
}
def generated_pairs() -> list[tuple[str, str]]:
    """Every kind on a body beside every kind on one of its joints or visible parts."""
    on = lambda target: sorted(k for k, kind in FAULT_KINDS.items() if kind.target == target)
    return [(first, second) for first in on("body") for second in (*on("joint"), *on("component"))]


def measured(reference: Path, package: Path) -> set[tuple[str, str, str]]:
    """(family, measure, target) of every failing measure of the package against the reference:
    freeze's differences before it names any fault (no injector is tried)."""
    detector = Detector(reference, package)
    try:
        return {(f.family, f.measure, f.target) for f in every_difference(detector.input)}
    finally:
        detector.close()


def checks_on(kind: str, target: str) -> set[tuple[str, str, str]]:
    return {(family, measure, target) for family, measure in FAULT_KINDS[kind].checks}


@pytest.mark.slow
@pytest.mark.parametrize(("first", "second"), generated_pairs())
def test_every_pair_of_kinds_on_adjacent_targets_is_found_as_two_faults(first, second, tmp_path):
    """On the first adjacent targets (seeded order) where both injectors take their target and
    neither fault alone fails the other's checks (then the grade cannot tell them apart: one
    fault), both are found, each as its kind, and nothing else on either target."""
    for reference in [*ASSETS, ROBOT]:
        for n, (body, other) in enumerate(adjacent(reference, first, second)[:TRIES]):
            here = tmp_path / f"{reference.parent.name}-{reference.name}-{n}"
            if not injected_pair(reference, here, (first, body), (second, other)):
                continue
            made = {name: measured(reference, here / name) for name in ("first", "second", "both")}
            if not (checks_on(first, body) <= made["first"] and checks_on(second, other) <= made["second"]) or \
                    made["first"] & checks_on(second, other) or made["second"] & checks_on(first, body) or \
                    not (checks_on(first, body) | checks_on(second, other)) <= made["both"]:
                # One made nothing measured, or the two are one fault to the grade (one fails the
                # other's checks, or together they undo one's: a hull over-approximated, then shrunk).
                continue
            both = [(t, k) for t, k in found(reference, here / "both") if t in (body, other)]
            wanted = {body: first, other: second}
            assert sorted(t for t, _ in both) == sorted(wanted), (reference.name, body, other, both)
            assert all(same_measurement(k, wanted[t]) for t, k in both), (reference.name, body, other, both)
            assert (first, second) not in NOT_ON_FIXTURES, "now on a fixture: take it off NOT_ON_FIXTURES"
            return
    assert (first, second) in NOT_ON_FIXTURES, f"no fixture package takes {first} on a body and {second} beside it"
