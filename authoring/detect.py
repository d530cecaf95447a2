"""Finding a broken input's faults by comparing it with its reference (freeze without --faults,
and the collateral of an inject manifest).

What differs is what the grade's gates would report for the input graded as a candidate with no
fault declared: every measure of every family on every reference target, read through the same
function the gates read (gates/differences.py), so freeze and the grade cannot disagree on what
is a difference. A failing check that the family table declares a knock-on of another failing
check (a body's collision moved with its visible part, a deleted joint's frame and range) is that
fault's consequence, not a fault of its own, where the cause alone makes it on this asset: on
another element, checked by making the cause alone (`Detector.brings`), so a body's own fault
beside its part's is not excused as the part's. Each target's remaining failing measures become fault
kinds, the kind that explains most of them (its checks and their knock-ons) first. A kind is named
where its injector accepts the target (what `usdgrade inject --targets` lists; where none does,
the first kind that fits, so every difference is a fault). Among kinds that explain as much: one
whose injector reproduces the input's difference exactly (injected into a copy of the reference
with a few seeds and measured like the input), else alike in form with near errors; then the one
whose own checks fail most; else the family's general kind, the first in table order (a mass
edited alone is `mass_changed`, whatever its inertia does). An edited limit (110 -> 95) is
`joint_limits`, not `joint_limit_units`, whose injector would have turned both limits into radians.

What the preservation gates find that is no measure on a target (an extra body, a gravity, a
static collider, a simulator attribute or relationship, a joint's two bodies swapped) is a
difference too, read by running those gates on the input with no fault declared; once the faults
are named, the gates run again with them declared, and what they still fail is a difference no
fault kind names: freeze refuses and says which.
"""
from __future__ import annotations

import math
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pxr import Sdf, Tf

from usd_repair_verifier.checks.measurement import Comparison
from usd_repair_verifier.checks.registry import FAMILIES, Measurements
from usd_repair_verifier.gates.differences import declaring, every_difference, gate_sentences
from usd_repair_verifier.gates.exemptions import knock_on_keys
from usd_repair_verifier.profiles.families import FaultKind
from usd_repair_verifier.profiles.result_record import CheckResult, GateFailure
from usd_repair_verifier.profiles.errors import Refused
from usd_repair_verifier.profiles.schema import CheckSpec, Fault
from usd_repair_verifier.profiles.vocabulary import DEFAULT_CORRESPONDENCE, DEFAULT_SAMPLING, DEFAULT_TOLERANCES, FAULT_KINDS
from usd_repair_verifier.stage_snapshot.correspondence import correspond
from usd_repair_verifier.stage_snapshot.read import read_snapshot
from usd_repair_verifier.stage_snapshot.scene import is_simulator_attribute
from usd_repair_verifier.stage_snapshot.variant_selections import applied_selections, open_selected

from usd_repair_verifier.authoring.inject import InjectionError, inject, root_layer_of
from usd_repair_verifier.authoring.inject_targets import try_inject
from usd_repair_verifier.authoring.usd_messages import muted

Key = tuple[str, str, str]
LIKENESS_SEEDS = (0, 1, 2)   # an injector that draws is tried with these seeds
# A difference alike in form is near when its failing components' errors are within this share of
# each other on average: a centre of mass moved another way (0.09), not one limit of a revolute
# joint read as radians for one edited by 15 degrees.
# The same bound tells a knock-on on another element from a fault of its own there: the cause
# alone, transplanted onto the reference at the input's magnitude, makes it with errors this near
# (two faults on one measure interplay a little: a hull over-approximated beside a part reshaped;
# a body's own fault, a mass x1000 or a centre moved 9 cm, is far).
NEAR = 0.5


def target_kind(reference, target: str) -> str | None:
    """What `target` names in a reference snapshot: "asset" (*), a joint, body or component; None: nothing."""
    if target == "*":
        return "asset"
    for kind, table in (("joint", reference.joints), ("body", reference.bodies), ("component", reference.components)):
        if target in table:
            return kind
    return None


def _measurements(reference_snapshot, package: Path, tolerances: dict) -> Measurements:
    candidate = read_snapshot(root_layer_of(package), DEFAULT_SAMPLING,
                              variant_selections=reference_snapshot.variant_selections)
    match = correspond(reference_snapshot, candidate, DEFAULT_CORRESPONDENCE["max_body_cost"],
                       DEFAULT_CORRESPONDENCE["max_joint_cost"])
    return Measurements(Comparison(reference_snapshot, candidate, match, tolerances))


class CheckUnmeasurable(Refused):
    """A fault's check cannot be measured on its target (the reference does not establish it)."""


def measured_checks(measurements: Measurements, faults: list[Fault]) -> list[CheckSpec]:
    """Each fault's checks with the input's error on what the fault breaks (the measure alone, no
    authoring component): what a profile records and the gates' exemptions read."""
    specs = []
    for fault in faults:
        for family, measure in FAULT_KINDS[fault.kind].checks:
            result = FAMILIES[family].MEASURES[measure](measurements.view(family, measure), fault.target)
            if not isinstance(result, dict):
                raise CheckUnmeasurable(f"{fault.id}: {family}.{measure} cannot be measured on {fault.target}: "
                                        f"{result.reason}", site=fault.target)
            specs.append(CheckSpec(id=f"{fault.id}-{family}.{measure}", fault=fault.id, family=family, measure=measure,
                                   target=fault.target, input_error={name: c.error for name, c in result.items()}))
    return specs


def input_state(snapshot) -> dict:
    """The input's counts a profile bounds the candidate's by."""
    return {"joint_count": len(snapshot.joints), "composition_errors": len(snapshot.composition_errors)}


def gate_differences(measurements: Measurements, faults: list[Fault], selections: dict) -> list[GateFailure]:
    """What the preservation gates fail beyond measures on targets, for this input graded with
    these faults declared (none: everything that differs; the found faults: what none explains)."""
    try:
        checks = measured_checks(measurements, faults)
    except CheckUnmeasurable:
        return [GateFailure(reason=f"{f.kind} on {f.target}: its checks cannot be measured") for f in faults]
    profile = declaring(faults, checks, input_state(measurements.comparison.candidate), selections)
    return gate_sentences(measurements, profile)


def _failing_components(measurements: Measurements, keys: list[Key]) -> set[tuple[str, str, str]]:
    """(family, measure, component) of every failing component of these checks."""
    return {(key[0], key[1], name) for key in keys for name in measurements.check(*key).failing()}


def _distance(found: Measurements, made: Measurements, keys: list[Key]) -> float:
    """How far apart two differences of the same form are: the failing components' errors, each
    relative to the larger of the two (0: the same errors)."""
    total = 0.0
    for key in keys:
        made_components = made.check(*key).components
        for name, c in found.check(*key).failing().items():
            a, b = c.error, made_components[name].error
            if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
                total += 0.0 if a == b else 1.0
            else:
                total += abs(a - b) / max(abs(a), abs(b), 1e-12)
    return total


def _close(a, b, tolerance: float) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=max(tolerance, 1e-9))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return all(_close(x, y, tolerance) for x, y in zip(a, b))
    return a == b


def reproduces(found: list[CheckResult], made: list[CheckResult]) -> bool:
    """An injected copy shows the input's difference: the same components fail, with the same
    candidate values."""
    for a, b in zip(found, made):
        if set(a.components) != set(b.components):
            return False
        for name, c in a.components.items():
            d = b.components[name]
            if c.passed != d.passed or not (c.passed or _close(c.candidate, d.candidate, c.tolerance)):
                return False
    return True


class Detector:
    def __init__(self, reference: Path, input_: Path, tolerances: dict | None = None,
                 variant_selections: dict | None = None):
        self.reference, self.tolerances = Path(reference), {**DEFAULT_TOLERANCES, **(tolerances or {})}
        self.case_selections = dict(variant_selections or {})   # as the profile will record them
        # The case's selections (and the named prims' other sets held): every stage here is read with them.
        self.selections = applied_selections(root_layer_of(self.reference), self.case_selections)
        self.snapshot = read_snapshot(root_layer_of(self.reference), DEFAULT_SAMPLING,
                                      variant_selections=self.selections)
        self.input_path = Path(input_)
        self.input = _measurements(self.snapshot, self.input_path, self.tolerances)
        self._scratch = Path(tempfile.mkdtemp(prefix="usdgrade-detect-"))
        self._made: dict[tuple[str, str], list[Measurements]] = {}
        self._transplants: dict[str, Measurements | None] = {}

    def close(self) -> None:
        shutil.rmtree(self._scratch, ignore_errors=True)

    def applies(self, kind: FaultKind, target: str) -> bool:
        """The kind's injector accepts the target (as `inject --targets` would list it)."""
        with muted():       # a try on a private copy: what USD says of it names no package of the author's
            return try_inject(root_layer_of(self.reference), kind.name, target, self.selections) is None

    def likeness(self, kind: FaultKind, target: str) -> tuple[int, float]:
        """How well the kind's injector, on the reference, makes the input's difference: (2, 0)
        exactly (its checks' failing components with the same values); (1, -distance) in form (the
        same components fail across its checks and knock-ons on the target, their errors `NEAR`),
        nearer first; (0, 0) not at all. An injector that draws (which flag, which direction) is tried with a
        few seeds."""
        checks = [(family, measure, target) for family, measure in kind.checks]
        reach = [(family, measure, target) for family, measure in sorted(self.reach(kind, target))]
        best = (0, 0.0)
        form = _failing_components(self.input, reach)
        for made in self.made(kind, target):
            if reproduces([self.input.check(*key) for key in checks], [made.check(*key) for key in checks]):
                return (2, 0.0)
            if form == _failing_components(made, reach):
                distance = _distance(self.input, made, reach) / max(len(form), 1)
                if distance <= NEAR:
                    best = max(best, (1, -distance))
        return best

    def made(self, kind: FaultKind, target: str):
        """The kind injected alone on the reference's target with each of LIKENESS_SEEDS, measured
        like the input (each copy made once); none where its injector refuses."""
        key = (kind.name, target)
        if key not in self._made:
            self._made[key] = []
            for seed in LIKENESS_SEEDS:
                out = self._scratch / f"{len(self._made)}-{seed}"
                with muted():       # the copy in the scratch folder is broken on purpose
                    try:
                        inject(self.reference, out, [(kind.name, target)], seed=seed, variant_selections=self.selections)
                    except InjectionError:
                        break
                    self._made[key].append(_measurements(self.snapshot, out, self.tolerances))
        return self._made[key]

    def transplanted(self, target: str) -> Measurements | None:
        """The reference with the input's composed values of one visible part's prim (its own
        attributes, at its matched path in the input) in a new strongest
        sublayer, measured like the input: that part's change alone, at the input's magnitude.
        None where the part has no match in the input or its values cannot be written."""
        if target not in self._transplants:
            self._transplants[target] = None
            source_path = self.input.comparison.match.components.get(target)
            if source_path:
                out = self._scratch / f"transplant-{len(self._transplants)}"
                with muted():       # both stages are read on purpose; one of them is broken
                    try:
                        if _transplant(self.input_path, source_path, self.reference, out, target, self.selections):
                            self._transplants[target] = _measurements(self.snapshot, out, self.tolerances)
                    except (InjectionError, Tf.ErrorException, OSError, ValueError, TypeError):
                        pass
        return self._transplants[target]

    def brings(self, cause: Key, effect: Key) -> bool:
        """A knock-on on another element is the cause's consequence on this asset only where the
        cause alone makes it. For a visible part (whose knock-ons reach its body's collision and
        mass), its prim's own values in the input, transplanted onto the reference, must make the
        effect with the same failing components and near errors: a part moved changes its body's
        centre of mass where that comes from the part's geometry, and by as much as the input's
        does, so a body whose own centre was moved too keeps its own fault. A cause that cannot be
        transplanted (a joint, a body: their knock-ons are their own graph's) keeps the table's word."""
        if target_kind(self.snapshot, cause[2]) != "component":
            return True
        made = self.transplanted(cause[2])
        if made is None:
            return True
        wanted = self.failed(effect)
        return wanted <= set(made.check(*effect).failing()) and \
            _distance(self.input, made, [effect]) / max(len(wanted), 1) <= NEAR

    def reach(self, kind: FaultKind, target: str) -> set[tuple[str, str]]:
        """The measures on the target a fault of this kind fails: its checks and their knock-ons."""
        keys = [(family, measure, target) for family, measure in kind.checks]
        return set(kind.checks) | {(f, m) for f, m, t in knock_on_keys(self.input.comparison, *keys, failed=self.failed)
                                   if t == target}

    def failed(self, key: Key) -> set[str]:
        """The components of a check that fail on the input."""
        return set(self.input.check(*key).failing())

    def choose(self, candidates: list[FaultKind], target: str, measures: set[tuple[str, str]]) -> FaultKind:
        """The kind that explains most of the target's failing measures; among equals, one whose
        injector reproduces the difference exactly, else in form (`likeness`); then the one whose own checks fail most; else
        the first in table order (the general kind of a family comes before its special cases)."""
        widest = max(len(self.reach(k, target) & measures) for k in candidates)
        tied = [k for k in candidates if len(self.reach(k, target) & measures) == widest]
        if len(tied) > 1:
            likeness = {k.name: self.likeness(k, target) for k in tied}
            closest = max(likeness.values())
            tied = [k for k in tied if likeness[k.name] == closest]
        most = max(len(k.checks) for k in tied)
        return next(k for k in tied if len(k.checks) == most)


def _transplant(source_package: Path, source_path: str, reference: Path, out: Path, target: str,
                selections: dict) -> bool:
    """Copy `reference` to `out` with the composed values of `source_path` in `source_package`
    written over `target` in a new strongest sublayer: every attribute of the part's own with an
    authored value there (one the reference authors and the source does not is blocked)."""
    source = open_selected(root_layer_of(source_package), selections)
    prim = source.GetPrimAtPath(source_path) if source else None
    if prim is None or not prim.IsValid():
        return False
    shutil.copytree(reference, out, symlinks=True)
    root_path = root_layer_of(out)
    root = Sdf.Layer.FindOrOpen(str(root_path))
    (out / "usdgrade_transplant").mkdir()
    layer = Sdf.Layer.CreateNew(str(out / "usdgrade_transplant" / "values.usda"))
    root.subLayerPaths.insert(0, "./usdgrade_transplant/values.usda")
    root.Save()
    stage = open_selected(root_path, selections)
    stage.SetEditTarget(layer)
    into = stage.GetPrimAtPath(target)
    if not into.IsValid():
        return False
    for attribute in _geometry(prim.GetAttributes()):
        if attribute.HasAuthoredValue():      # not a schema's fallback, which is no opinion
            made = into.GetAttribute(attribute.GetName()) or into.CreateAttribute(
                attribute.GetName(), attribute.GetTypeName(), attribute.IsCustom())
            made.Set(attribute.Get())
    for attribute in _geometry(into.GetAttributes()):
        if attribute.HasAuthoredValue() and not prim.GetAttribute(attribute.GetName()).HasAuthoredValue():
            attribute.Block()
    layer.Save()
    return True


def _geometry(attributes):
    """A part's own values: its shape and placement, not what a simulator reads of the same prim
    (a part that is also a collider carries its body's collision and mass, another fault's)."""
    return [a for a in attributes if not is_simulator_attribute(a.GetName())]


@dataclass(frozen=True)
class Detection:
    """What freeze found: the faults, every difference they were chosen from, and what was compared."""

    faults: list[Fault]
    differences: list[GateFailure]
    compared: str       # "8 bodies, 8 joints, 41 visible parts, 12 colliders"
    unnamed: list[GateFailure]   # differences that are no fault's and no fault's knock-on

    def refusal(self) -> str:
        """Why nothing can be frozen from this comparison, saying what was compared."""
        if self.unnamed:
            shown = "; ".join(f.reason for f in self.unnamed[:3])
            more = f"; and {len(self.unnamed) - 3} more" if len(self.unnamed) > 3 else ""
            return (f"the input differs from the reference in {len(self.unnamed)} way(s) that no fault kind names "
                    f"(compared {self.compared}): {shown}{more}")
        return (f"the input does not differ from the reference in anything measured "
                f"(compared {self.compared}: no difference above tolerance)")


def compared_text(reference) -> str:
    """What a comparison covers, counted on the reference (each with its unit of count)."""
    counts = ((len(reference.bodies), "body", "bodies"), (len(reference.joints), "joint", "joints"),
              (len(reference.components), "visible part", "visible parts"),
              (len(reference.colliders), "collider", "colliders"))
    return ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in counts)


def detect(reference: Path, input_: Path, tolerances: dict | None = None,
           variant_selections: dict | None = None) -> Detection:
    """Find what differs between reference and input, as faults of the vocabulary (see above),
    both composed with the case's `variant_selections`."""
    detector = Detector(reference, input_, tolerances, variant_selections)
    try:
        measured, unnamed = every_difference(detector.input), []
        sentences = gate_differences(detector.input, [], detector.case_selections)
        faults = _faults(detector, measured, unnamed)
        # What the gates still fail with the found faults declared is no fault's, nor any one's
        # knock-on (with none found, what they failed with none declared).
        unnamed += gate_differences(detector.input, faults, detector.case_selections) if faults else sentences
        found = measured + sentences
        return Detection(faults, found, compared_text(detector.snapshot), unnamed)
    finally:
        detector.close()


def detect_faults(reference: Path, input_: Path, tolerances: dict | None = None,
                  variant_selections: dict | None = None) -> list[Fault]:
    """The faults `detect` finds."""
    return detect(reference, input_, tolerances, variant_selections).faults


def _note(kind: FaultKind, found: list[GateFailure]) -> str:
    """The fault's note: its checks' measured values as the gates state them."""
    own = [f.reason.replace(f" {f.target}: ", ": ", 1) for f in found if (f.family, f.measure) in kind.checks]
    return "found by comparison: " + "; ".join(own)


def _faults(detector: Detector, found: list[GateFailure], unnamed: list[GateFailure]) -> list[Fault]:
    """The faults that explain `found`; the differences no kind names are added to `unnamed`."""
    cmp = detector.input.comparison
    failing = {(f.family, f.measure, f.target) for f in found}
    # A failure another target's failure brings with it is that fault's consequence, where the
    # cause alone would bring it on this asset.
    consequences = {k for key in failing for k in knock_on_keys(cmp, key, failed=detector.failed)
                    if k[2] != key[2] and k in failing and detector.brings(key, k)}
    faults: list[Fault] = []
    for target in sorted({t for _, _, t in failing}):
        measures = {(f, m) for f, m, t in failing if t == target and (f, m, t) not in consequences}
        kind_of_target = target_kind(cmp.reference, target)
        while measures:
            fitting = [k for k in FAULT_KINDS.values() if k.target == kind_of_target and set(k.checks) <= measures]
            # A kind whose injector takes the target; where none does, the difference is still a
            # fault: of its family's general kind (the first that fits, in table order).
            candidates = [k for k in fitting if detector.applies(k, target)] or fitting[:1]
            if not candidates:
                # No kind selects these checks alone (a joint lost but not its frame): said, not frozen.
                unnamed.extend(f for f in found if f.target == target and (f.family, f.measure) in measures)
                break
            best = detector.choose(candidates, target, measures)
            faults.append(Fault(id=f"f{len(faults) + 1}", kind=best.name, target=target,
                                note=_note(best, [f for f in found if f.target == target])))
            measures -= detector.reach(best, target)
    return faults
