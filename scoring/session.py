"""Everything one grading process needs, built once and then only read.

Serially one process builds it all; under pytest-xdist the workers share the
large units (scoring/work_share.py), so `-n 2` spreads one run's work over two
cores instead of doing it twice. Failures are sorted here into the two kinds that
must never be confused:
- the case or the verifier is broken  -> CaseError / any other exception:
  an infrastructure error, never a score;
- the submission is bad               -> a failed validity rule: reward 0 with a reason.
"""
from __future__ import annotations

import functools
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from usd_repair_verifier.checks.measurement import Comparison, DerivedValues
from usd_repair_verifier.checks.registry import Measurements, every_measurement, unmeasured
from usd_repair_verifier.profiles.result_record import CheckResult, GateResult
from usd_repair_verifier.gates.names import STAGE_RULE, evaluator
from usd_repair_verifier.gates.validity import ResourceLimits, ValidityReport, timed_validity
from usd_repair_verifier.profiles.case import Case, CaseError
from usd_repair_verifier.profiles.schema import CheckSpec, selection_text
from usd_repair_verifier.stage_snapshot.correspondence import correspond
from usd_repair_verifier.stage_snapshot.model import StageSnapshot
from usd_repair_verifier.stage_snapshot.read import StageOpenError, read_snapshot

from .reference_cache import ReferenceCache
from .work_share import LocalWork, SharedWork, VerifierFault

__all__ = ["GradingSession", "VerifierFault", "validity_limits"]

# Matching is quadratic in element counts: a candidate with far more elements than any
# repair of the reference could have is refused before matching, not left to time out.
FLOOD_FACTOR, FLOOD_SLACK = 10, 200
# Shared runs measure everything up front in this many units, claimed by whichever worker
# is free; all measures of one target fall in one unit (they share lazily built solids).
MEASUREMENT_UNITS = 8


def _flooded(reference, candidate) -> str | None:
    for what, ref_count, cand_count in (
        ("rigid bodies", len(reference.bodies), len(candidate.bodies)),
        ("joints", len(reference.joints), len(candidate.joints)),
        ("visible components", len(reference.components), len(candidate.components)),
        ("colliders", len(reference.colliders), len(candidate.colliders)),
    ):
        if cand_count > FLOOD_FACTOR * ref_count + FLOOD_SLACK:
            return (f"the candidate has {cand_count} {what}, the reference {ref_count}: more than "
                    f"{FLOOD_FACTOR} x {ref_count} + {FLOOD_SLACK}, beyond any repair of this asset")
    return None


def validity_limits(case: Case) -> ResourceLimits:
    try:
        return ResourceLimits.from_dict(case.profile.limits)
    except ValueError as error:
        raise CaseError(f"malformed profile limits: {error}") from error


@dataclass
class SubmissionRead:
    """The submission unit: its validity report and, when valid, its composed stage."""
    validity: ValidityReport
    candidate: StageSnapshot | None = None
    stage_error: str | None = None      # why the candidate did not compose or read
    timings: dict[str, float] = field(default_factory=dict)


class GradingSession:
    def __init__(self, case: Case, submission: Path, work: LocalWork | SharedWork | None = None,
                 validity: Future | None = None, references: ReferenceCache | None = None):
        """`validity`: the validity gate already running in the background (the plugin starts
        it before the heavy imports), or None to run it here. `references`: reference snapshots
        kept by a process that grades many submissions (scoring/reference_cache.py), or None."""
        self.case, self.submission = case, submission
        self.references = references
        self.work = work or LocalWork()
        self._validity_future = validity
        self.timings: dict[str, float] = {}
        self._gates: dict[tuple[str, str], GateResult] = {}
        profile = case.profile

        units = {"reference": self._read_reference, "submission": self._read_submission}
        # Serially the reference is read while the validity gate runs in its worker process;
        # shared, the worker that holds the submission (claimed at start-up) begins with it.
        order = ("submission", "reference") if self.work.shared else ("reference", "submission")
        for unit in order:
            if self.work.claim(unit):
                self.work.run(unit, units[unit])
        self.reference, self.timings["reference_snapshot"] = self.work.wait("reference")
        self.timings |= {f"reference_{stage}": s for stage, s in self.reference.timings.items()}
        read: SubmissionRead = self.work.wait("submission")
        self.validity = read.validity
        self.timings = {**read.timings, **self.timings}

        self.candidate = None
        self.stage_rule = GateResult.of(STAGE_RULE, False, "not checked: an earlier validity rule failed")
        if read.stage_error is not None:
            self.stage_rule = GateResult.of(STAGE_RULE, False, read.stage_error)
        elif read.candidate is not None:
            flood = _flooded(self.reference, read.candidate)
            if flood:
                self.stage_rule = GateResult.of(STAGE_RULE, False, flood)
            else:
                self.candidate = read.candidate
                self.stage_rule = GateResult.of(
                    STAGE_RULE, True,
                    f"composed: {len(read.candidate.bodies)} bodies, {len(read.candidate.joints)} joints"
                    + self._selections_note(),
                )

        self.comparison = None
        self.measurements: Measurements | None = None   # every measurement of the comparison, once
        if self.candidate is not None:
            start = time.perf_counter()
            match = correspond(
                self.reference,
                self.candidate,
                profile.correspondence["max_body_cost"],
                profile.correspondence["max_joint_cost"],
            )
            self.comparison = Comparison(self.reference, self.candidate, match, dict(profile.tolerances),
                                         DerivedValues())
            self.measurements = Measurements(self.comparison)
            self._lap("correspondence", start)
            if self.work.shared:
                self._measure_together()

    def _selections_note(self) -> str:
        named = self.case.profile.variant_selections
        if not named:
            return ""
        from usd_repair_verifier.stage_snapshot.variant_selections import held_selections

        held = held_selections(self.selections, named)
        return (f", with the case's variant selections {selection_text(named)}"
                + (f" (the other sets of those prims held at the reference's: {selection_text(held)})" if held else ""))

    @functools.cached_property
    def selections(self) -> dict[str, dict[str, str]]:
        """The case's variant selections and, on the prims they name, every other set held at the
        reference's selection: what each stage is composed with (stage_snapshot/variant_selections.py)."""
        from usd_repair_verifier.stage_snapshot.variant_selections import applied_selections

        return applied_selections(self.case.reference_root_layer, self.case.profile.variant_selections)

    def _lap(self, name: str, start: float) -> None:
        self.timings[name] = round(time.perf_counter() - start, 6)

    def _read_reference(self) -> tuple[StageSnapshot, float]:
        start = time.perf_counter()
        key = ReferenceCache.key(self.case) if self.references is not None else None
        snapshot = self.references.get(key) if key is not None else None
        if snapshot is None:
            try:
                snapshot = read_snapshot(self.case.reference_root_layer, self.case.profile.sampling,
                                         self.case.profile.preserved_namespaces, self.selections)
            except StageOpenError as error:
                raise CaseError(f"the reference does not open: {error}") from error
            if snapshot.variant_problems:   # a profile edited by hand: freeze refuses such a case
                raise CaseError(f"the reference cannot take the profile's variant selection "
                                f"{snapshot.variant_problems[0][2]}")
            if key is not None:
                snapshot = self.references.put(key, snapshot)  # with its free-space samples
        return snapshot, round(time.perf_counter() - start, 6)

    def _read_submission(self) -> SubmissionRead:
        if self._validity_future is not None:
            validity, seconds = self._validity_future.result()
        else:
            validity, seconds = timed_validity(self.submission, validity_limits(self.case),
                                               self.case.reference_root_layer, self.case.profile.variant_selections)
        read = SubmissionRead(validity, timings={"validity": seconds})
        if validity.infrastructure_error:
            # The validity worker itself failed (could not start, no pxr): our fault, not the agent's.
            raise VerifierFault(f"validity gate could not run: {validity.infrastructure_error}")
        if validity.valid:
            start = time.perf_counter()
            try:
                read.candidate = read_snapshot(validity.root_layer, self.case.profile.sampling,
                                               self.case.profile.preserved_namespaces, self.selections)
            except StageOpenError as error:
                read.stage_error = str(error)
            read.timings["candidate_snapshot"] = round(time.perf_counter() - start, 6)
            if read.candidate is not None:
                read.timings |= {f"candidate_{stage}": s for stage, s in read.candidate.timings.items()}
        return read

    def _measure_together(self) -> None:
        """Shared runs: every measurement of the run, once, spread over the workers.

        Measures are pure functions of (comparison, key), so a result computed in another
        worker is the one this worker would have computed.
        """
        start = time.perf_counter()
        checks = {(c.family, c.measure, c.target) for c in self.case.profile.checks}
        keys = sorted(set(every_measurement(self.reference)) | checks)
        targets = sorted({target for _, _, target in keys})
        unit_of = {target: i % MEASUREMENT_UNITS for i, target in enumerate(targets)}
        measurements = self.measurements

        def compute(unit: int) -> dict:
            return {key: measurements.raw(*key) for key in keys if unit_of[key[2]] == unit}

        for unit in range(MEASUREMENT_UNITS):
            if self.work.claim(f"measures-{unit}"):
                self.work.run(f"measures-{unit}", functools.partial(compute, unit))
        for unit in range(MEASUREMENT_UNITS):
            measurements.update(self.work.wait(f"measures-{unit}"))
        self._lap("measurements", start)

    @property
    def candidate_readable(self) -> bool:
        return self.comparison is not None

    def validity_rule(self, rule: str) -> GateResult:
        if rule == STAGE_RULE:
            return self.stage_rule
        for r in self.validity.rules:
            if r.rule == rule:
                return GateResult.of(r.rule, r.passed, r.reason, tuple(r.details))
        raise KeyError(rule)

    def measure_check(self, spec: CheckSpec) -> CheckResult:
        if not self.candidate_readable:
            return unmeasured(spec.family, spec.measure, spec.target, spec.id, "the submission is not valid")
        return self.measurements.check(spec.family, spec.measure, spec.target, spec.id, spec.input_error)

    # Each gate is evaluated once per session. The results live on the session, not in a
    # functools.cache: a cache on the method would hold every session (its snapshots and
    # measurements) for the life of a process that grades many submissions.
    def preservation_gate(self, gate: str) -> GateResult:
        return self._gate("preservation", gate)

    def objective_gate(self, gate: str) -> GateResult:
        return self._gate("objective", gate)

    def _gate(self, kind: str, gate: str) -> GateResult:
        key = (kind, gate)
        if key not in self._gates:
            self._gates[key] = (evaluator(kind, gate)(self.measurements, self.case.profile) if self.candidate_readable
                                else GateResult.of(gate, False, "not evaluated: the submission is not valid"))
        return self._gates[key]
