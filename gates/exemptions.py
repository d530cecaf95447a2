"""What a case's faults exempt from preservation: properties, not whole elements.

A fault's own checks grade its properties; every other property of a targeted element
is preserved like a healthy one, so damaging it is never free. The exemptions are the
(family, measure, target) triples of the profile's checks, plus the knock-on effects a
fault cannot avoid, as each measure's entry in the family table declares them
(profiles/families.py `knock_on`): e.g. a visible part moved also moves its body's
collision and mass, a joint deleted loses its frame, range and state.

A file missing from the package loses what it carried: while the candidate still has a
composition error (that fault left unrepaired), authored values it lacks are not counted
against it; once it composes cleanly (the error repaired or the arc deleted), everything the
reference has must be there. Which checks make that exception is the table's
(`measures_layout`).
"""
from __future__ import annotations

from collections.abc import Callable

from usd_repair_verifier.checks.measurement import Comparison
from usd_repair_verifier.checks.registry import Measurements
from usd_repair_verifier.profiles.families import BY_NAME, KnockOn, measure_entry, measure_names, preserved_measures
from usd_repair_verifier.profiles.schema import Profile

from .differences import failing_measurements

Key = tuple[str, str, str]   # (family, measure, target)


def _related(cmp: Comparison, relation: str, target: str) -> list[str]:
    """The elements a knock-on reaches from a fault's target."""
    reference = cmp.reference
    if relation == "same":
        return [target]
    if relation in ("owner_body", "collider_owner_body"):
        component = reference.components.get(target)
        if component is None or component.body is None:
            return []
        if relation == "collider_owner_body" and target not in reference.colliders:
            return []   # free space is the colliders' alone: a visible-only part leaves it alone
        return [component.body]
    if relation == "asset":
        return ["*"]
    if relation == "parallel_joints":
        joint = reference.joints.get(target)
        if joint is None:
            return []
        return [path for path, other in reference.joints.items()
                if path != target and {other.body0, other.body1} == {joint.body0, joint.body1}]
    if relation == "attached_joints":
        return [path for path, joint in reference.joints.items() if target in (joint.body0, joint.body1)]
    raise ValueError(f"unknown relation {relation!r}")


def _knock_on(cmp: Comparison, knock: KnockOn, target: str) -> set[Key]:
    names = knock.measures or measure_names(knock.family)
    return {(knock.family, name, element) for element in _related(cmp, knock.relation, target) for name in names}


def knock_on_keys(cmp: Comparison, *keys: Key, failed: Callable[[Key], set[str]] | None = None) -> set[Key]:
    """What faults graded by these checks also change, as the table declares it (one step).

    `failed`: the components of a check that fail on the broken input; a knock-on that names the
    components it follows from (`when`: a body disabled, not made kinematic) applies only where one
    of them fails. None: every knock-on applies."""
    return {found for family, name, target in keys for knock in measure_entry(family, name).knock_on
            if failed is None or not knock.when or (set(knock.when) | {"*"}) & failed((family, name, target))
            for found in _knock_on(cmp, knock, target)}


def exempt_keys(profile: Profile, cmp: Comparison) -> frozenset[Key]:
    """The profile's checks and their knock-ons, each conditional one only where its cause's
    component failed on the input (the frozen input error)."""
    checks = {(c.family, c.measure, c.target): c for c in profile.checks}
    return frozenset(set(checks) | knock_on_keys(cmp, *checks, failed=lambda key: _input_failed(checks[key])))


def _input_failed(check) -> set[str]:
    errors = getattr(check, "input_error", None)
    if not errors:   # nothing frozen to tell by: every knock-on applies
        return {"*"}
    return {name for name, error in errors.items() if not (error is not None and error <= 0)}


def losses_exempt(profile: Profile, cmp: Comparison) -> bool:
    """A fault that loses content (a missing file) left unrepaired: what it carried may be absent."""
    excusing = any(measure_entry(c.family, c.measure).measures_layout for c in profile.checks
                   if c.family in BY_NAME)
    return excusing and bool(cmp.candidate.composition_errors)


def keeps(exempt: frozenset[Key], family: str, name: str):
    """A predicate on targets: is (family, name, target) preserved (not exempt)?"""
    return lambda target: (family, name, target) not in exempt


def preserved_failures(measurements: Measurements, profile: Profile, gate: str) -> list:
    """Every failing measurement, on a target no fault exempts, of the measures the family
    table puts under this preservation gate (profiles/families.py)."""
    exempt = exempt_keys(profile, measurements.comparison)
    return failing_measurements(measurements, preserved_measures(gate),
                                lambda family, name, target: (family, name, target) not in exempt)
