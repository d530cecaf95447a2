"""What a case's faults exempt from preservation: properties, not whole elements.

A fault's own checks grade its properties; every other property of a targeted element
is preserved like a healthy one, so damaging it is never free. The exemptions are the
(family, measure, target) triples of the profile's checks, plus the knock-on effects
a fault cannot avoid:
- a visible part moved or reshaped also moves its body's collision coverage (the share of the
  visible surface inside the colliders), and its free space and mass when the part is also a
  collider (or its body's mass comes from its geometry);
- a body disabled or made kinematic is no longer a dynamic body for the UsdPhysics
  parser, so the joints attached to it resolve differently (their graph and state);
- any fault on a body (its state, mass, collision or physics material) moves its mass
  properties, which come from all of them;
- a joint deleted or retyped loses or changes its degrees of freedom, its frame, range
  and state;
- a file missing from the package loses what it carried: while the candidate still has
  a composition error (the fault left unrepaired), authored values it lacks are not
  counted against it; once it composes cleanly (the error repaired or the arc deleted),
  everything the reference has must be there.
"""
from __future__ import annotations

from usd_repair_verifier.checks.measurement import Comparison
from usd_repair_verifier.profiles.families import measure_names, preserved_measures
from usd_repair_verifier.profiles.schema import Profile

from .objective import failed, measure_all

Key = tuple[str, str, str]   # (family, measure, target)

# Measures of a joint whose change follows from a check on the same joint.
JOINT_KNOCK_ON = {
    "existence": ("graph", "frame", "range", "state", "redundant"),
    "graph": ("frame", "range", "state"),
}
# What a fault measured on a body does to the joints attached to it.
BODY_TO_JOINTS = {("body", "state"): ("graph", "state")}
MASS = measure_names("mass")   # mass properties come from a body's state, geometry, colliders and materials


def exempt_keys(profile: Profile, cmp: Comparison) -> frozenset[Key]:
    keys: set[Key] = {(c.family, c.measure, c.target) for c in profile.checks}
    for family, name, target in list(keys):
        if family == "geometry":
            component = cmp.reference.components.get(target)
            body = component.body if component is not None else None
            if body is not None:
                keys.add(("collision", "coverage", body))       # the visible surface it measures moved
                if target in cmp.reference.colliders:           # free space is the colliders' alone
                    keys.add(("collision", "free_space", body))
                keys |= {("mass", m, body) for m in MASS} | {("material", "physics", body)}
        elif family == "collision":
            keys.add(("material", "physics", target))   # a removed collider has no material to compare
        elif family == "joint":
            keys |= {("joint", m, target) for m in JOINT_KNOCK_ON.get(name, ())}
        if (family, name) in BODY_TO_JOINTS:
            for path, joint in cmp.reference.joints.items():
                if target in (joint.body0, joint.body1):
                    keys |= {("joint", m, path) for m in BODY_TO_JOINTS[(family, name)]}
        if target in cmp.reference.bodies:
            keys |= {("mass", m, target) for m in MASS}
    return frozenset(keys)


def losses_exempt(profile: Profile, cmp: Comparison) -> bool:
    """A composition fault left unrepaired: content its missing file carried may be absent."""
    targeted = any(c.family == "composition" for c in profile.checks)
    return targeted and bool(cmp.candidate.composition_errors)


def keeps(exempt: frozenset[Key], family: str, name: str):
    """A predicate on targets: is (family, name, target) preserved (not exempt)?"""
    return lambda target: (family, name, target) not in exempt


def element_touched(exempt: frozenset[Key], target: str) -> bool:
    """Does some exemption name this element (for gates that compare whole elements)?"""
    return any(t == target for _, _, t in exempt)


def preserved_failures(cmp: Comparison, profile: Profile, gate: str) -> list[str]:
    """Every failing measurement, on a target no fault exempts, of the measures the family
    table puts under this preservation gate (profiles/families.py)."""
    exempt = exempt_keys(profile, cmp)
    return [failure for family, name in preserved_measures(gate)
            for failure in failed(measure_all(cmp, family, (name,), keeps(exempt, family, name)))]
