"""Preservation gates: protect every property the profile does not target.

A targeted property left broken costs fault credit in its checks, never
preservation; so each gate here skips only the (family, measure, target) triples a
fault's checks grade and their unavoidable knock-on effects (gates/exemptions.py).
The other properties of a targeted element are preserved like healthy ones. The
counting gates bound the candidate by the input.
"""
from __future__ import annotations

from usd_repair_verifier.checks import joints
from usd_repair_verifier.checks.measurement import Comparison
from usd_repair_verifier.checks.registry import Measurements
from usd_repair_verifier.profiles.schema import Profile

from . import exemptions
from usd_repair_verifier.profiles.result_record import GateResult

DOF = {"revolute": 1, "prismatic": 1, "spherical": 3, "fixed": 0, "distance": 5, "d6": None, "custom": None}


def body_correspondence(measurements: Measurements, profile: Profile) -> GateResult:
    cmp = measurements.comparison
    failures = [f"reference body {r} has no candidate body" for r, c in cmp.match.bodies.items() if c is None]
    failures += [f"extra candidate body {p} (no reference body matches it)" for p in cmp.match.extra_bodies]
    if failures and cmp.candidate.hidden_physics:
        # No physics composed at all, but some behind variant sets: say where, first.
        failures.insert(0, f"the candidate composes no physics: {cmp.candidate.hidden_physics}")
    return GateResult.from_failures(
        "body_correspondence", failures, f"all {len(cmp.match.bodies)} bodies correspond one to one", "correspondence failures"
    )


def degrees_of_freedom(measurements: Measurements, profile: Profile) -> GateResult:
    cmp = measurements.comparison
    failures = []
    exempt = exemptions.exempt_keys(profile, cmp)
    # A joint keeps its degrees of freedom unless a fault's checks measure its existence, graph or state.
    changes_dof = [exemptions.keeps(exempt, "joint", m) for m in ("existence", "graph", "state")]
    for target in (t for t in joints.targets(cmp.reference) if all(keep(t) for keep in changes_dof)):
        ref = cmp.reference.joints[target]
        cand_path = cmp.match.joints.get(target)
        cand = cmp.candidate.joints.get(cand_path) if cand_path else None
        if cand is None:
            failures.append(f"joint {target}: missing, its {DOF.get(ref.type)} degree(s) of freedom changed")
        elif (DOF.get(ref.type), ref.enabled) != (DOF.get(cand.type), cand.enabled):
            failures.append(
                f"joint {target}: {ref.type} (enabled={ref.enabled}) became {cand.type} (enabled={cand.enabled})"
            )
    return GateResult.from_failures("degrees_of_freedom", failures, "healthy joints keep their degrees of freedom", "changes")


def healthy_joints(measurements: Measurements, profile: Profile) -> GateResult:
    failures = exemptions.preserved_failures(measurements, profile, "healthy_joints")
    return GateResult.from_failures("healthy_joints", failures, "every healthy joint passes its joint checks", "healthy joint failures")


def healthy_body_properties(measurements: Measurements, profile: Profile) -> GateResult:
    # Established mass properties only: where the reference authors nothing they are unmeasured.
    failures = exemptions.preserved_failures(measurements, profile, "healthy_body_properties")
    return GateResult.from_failures("healthy_body_properties", failures, "healthy bodies keep their state and established mass",
                         "body property changes")


def retained_visible_components(measurements: Measurements, profile: Profile) -> GateResult:
    """No healthy visible part deleted, hidden (unmatched) or reshaped; none added to a body."""
    cmp = measurements.comparison
    failures = exemptions.preserved_failures(measurements, profile, "retained_visible_components")
    failures += added_body_parts(cmp, profile)
    return GateResult.from_failures("retained_visible_components", failures,
                         f"all {len(cmp.reference.components)} healthy visible components retained",
                         "component changes")


def added_body_parts(cmp: Comparison, profile: Profile) -> list[str]:
    """Visible parts the candidate adds to its bodies (static ones are static_scenery's).

    A targeted part moved or reshaped beyond matching leaves its candidate unmatched: that
    one extra per such part is its fault's (graded by its checks), not an addition.
    """
    ref, cand, match = cmp.reference, cmp.candidate, cmp.match
    lost_to_faults = sum(1 for p, c in ref.components.items()
                         if c.body is not None and p in profile.targeted and not match.components.get(p))
    added = [p for p in match.extra_components if cand.components[p].body is not None]
    if len(added) <= lost_to_faults:
        return []
    return [f"added visible part {p} on body {cand.components[p].body} (nothing in the reference matches it)"
            for p in added]


def collision_support(measurements: Measurements, profile: Profile) -> GateResult:
    """No healthy body loses (removes, disables, shrinks, moves) its collision or gains any (a
    collider grown, moved or re-approximated to a larger solid)."""
    failures = exemptions.preserved_failures(measurements, profile, "collision_support")
    return GateResult.from_failures("collision_support", failures,
                                    "healthy bodies keep their collision, no more and no less", "collision changes")


def composition_errors(measurements: Measurements, profile: Profile) -> GateResult:
    """No more composition errors than the input had, and every variant selection of the case
    composes: the case grades the physics its selections bring in, which a candidate must keep
    (at the reference's prim path: a selection is keyed by it)."""
    cmp = measurements.comparison
    # Only the case's own selections must take; a set held at the reference's selection that the
    # candidate lacks composes nothing either way.
    lacking = [f"variant selection {text}: the case grades that selection, the candidate must keep it"
               for path, name, text in cmp.candidate.variant_problems
               if name in profile.variant_selections.get(path, {})]
    if lacking:
        return GateResult.of("composition_errors", False,
                             f"the candidate cannot take {len(lacking)} of the case's variant selections: "
                             + "; ".join(lacking), tuple(lacking))
    allowed = int(profile.input_state.get("composition_errors", 0))
    errors = list(cmp.candidate.composition_errors)
    if len(errors) <= allowed:
        return GateResult.of("composition_errors", True, f"{len(errors)} composition error(s), the input had {allowed}")
    return GateResult.of(
        "composition_errors", False, f"{len(errors)} composition errors, more than the input's {allowed}", tuple(errors)
    )


def joint_count(measurements: Measurements, profile: Profile) -> GateResult:
    cmp = measurements.comparison
    # A redundant joint the input had may remain; a joint the input lost may come back.
    bound = max(int(profile.input_state.get("joint_count", 0)), len(cmp.reference.joints))
    count = len(cmp.candidate.joints)
    if count <= bound:
        return GateResult.of("joint_count", True, f"{count} joints, within the bound {bound} (max of input and reference)")
    added = ", ".join(cmp.match.extra_joints[:5])
    return GateResult.of("joint_count", False, f"{count} joints, more than the bound {bound} (unmatched: {added})",
                      tuple(cmp.match.extra_joints))
