"""Everything one grading process needs, built once and then only read.

Under pytest-xdist every worker builds its own GradingSession (the stages are
opened once per process, never per test). Failures are sorted here into the
two kinds that must never be confused:
- the case or the verifier is broken  -> CaseError / any other exception:
  an infrastructure error, never a score;
- the submission is bad               -> a failed validity rule: reward 0 with a reason.
"""
from __future__ import annotations

import functools
import time
from pathlib import Path

from checks.measurement import Comparison, Measurement
from checks.registry import measure, unmeasured
from gates import objective, preservation
from gates.results import GateResult
from gates.validity import RULES, ResourceLimits, check_submission
from profiles.case import Case, CaseError
from profiles.schema import CheckSpec
from stage_snapshot.correspondence import correspond
from stage_snapshot.read import StageOpenError, read_snapshot

class VerifierFault(Exception):
    """The verifier could not do its work: an infrastructure error, never a score."""


# The candidate must also compose and read; checked after the file-level rules.
STAGE_RULE = "stage_reads"
VALIDITY_RULES = tuple(RULES) + (STAGE_RULE,)


# Matching is quadratic in element counts: a candidate with far more elements than any
# repair of the reference could have is refused before matching, not left to time out.
FLOOD_FACTOR, FLOOD_SLACK = 10, 200


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


class GradingSession:
    def __init__(self, case: Case, submission: Path):
        self.case = case
        self.timings: dict[str, float] = {}
        profile = case.profile

        start = time.perf_counter()
        try:
            limits = ResourceLimits.from_dict(profile.limits)
        except ValueError as error:
            raise CaseError(f"malformed profile limits: {error}") from error
        self.validity = check_submission(submission, limits)
        self._lap("validity", start)
        if self.validity.infrastructure_error:
            # The validity worker itself failed (could not start, no pxr): our fault, not the agent's.
            raise VerifierFault(f"validity gate could not run: {self.validity.infrastructure_error}")

        start = time.perf_counter()
        try:
            self.reference = read_snapshot(self.case.reference_root_layer, profile.sampling)
        except StageOpenError as error:
            raise CaseError(f"the reference does not open: {error}") from error
        self._lap("reference_snapshot", start)

        self.candidate = None
        self.stage_rule = GateResult(STAGE_RULE, False, "not checked: an earlier validity rule failed")
        if self.validity.valid:
            start = time.perf_counter()
            try:
                candidate = read_snapshot(self.validity.root_layer, profile.sampling)
                flood = _flooded(self.reference, candidate)
                if flood:
                    self.stage_rule = GateResult(STAGE_RULE, False, flood)
                else:
                    self.candidate = candidate
                    self.stage_rule = GateResult(
                        STAGE_RULE, True, f"composed: {len(candidate.bodies)} bodies, {len(candidate.joints)} joints"
                    )
            except StageOpenError as error:
                self.stage_rule = GateResult(STAGE_RULE, False, str(error))
            self._lap("candidate_snapshot", start)

        self.comparison = None
        if self.candidate is not None:
            start = time.perf_counter()
            match = correspond(
                self.reference,
                self.candidate,
                profile.correspondence["max_body_cost"],
                profile.correspondence["max_joint_cost"],
            )
            self.comparison = Comparison(self.reference, self.candidate, match, dict(profile.tolerances))
            self._lap("correspondence", start)

    def _lap(self, name: str, start: float) -> None:
        self.timings[name] = round(time.perf_counter() - start, 6)

    @property
    def candidate_readable(self) -> bool:
        return self.comparison is not None

    def validity_rule(self, rule: str) -> GateResult:
        if rule == STAGE_RULE:
            return self.stage_rule
        for r in self.validity.rules:
            if r.rule == rule:
                return GateResult(r.rule, r.passed, r.reason, tuple(r.details))
        raise KeyError(rule)

    def measure_check(self, spec: CheckSpec) -> Measurement:
        if not self.candidate_readable:
            return unmeasured(spec.family, spec.measure, spec.target, spec.id, "the submission is not valid")
        return measure(self.comparison, spec.family, spec.measure, spec.target, spec.id, spec.input_error)

    @functools.cache
    def preservation_gate(self, gate: str) -> GateResult:
        if not self.candidate_readable:
            return GateResult(gate, False, "not evaluated: the submission is not valid")
        return preservation.GATES[gate](self.comparison, self.case.profile)

    @functools.cache
    def objective_gate(self, gate: str) -> GateResult:
        if not self.candidate_readable:
            return GateResult(gate, False, "not evaluated: the submission is not valid")
        return objective.GATES[gate](self.comparison)
