"""grade.json: its pydantic model (docs/grade-json.md, docs/schemas/grade.schema.json is generated
from it) and `build`, which makes one from the decision and the tests' typed records.

The checks and gates are the records their tests attached (profiles/result_record.py), so the same
model carries a result from the measure to the file; `read` parses a grade.json back (older ones
too: a gate failure written as a sentence is read as one).
"""
from __future__ import annotations

import os
import platform
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_serializer

from usd_repair_verifier.profiles.result_record import ComponentResult, GateResult
from usd_repair_verifier.profiles.case import Case
from usd_repair_verifier.profiles.digest import tree_digest
from usd_repair_verifier.profiles.errors import NotAGrade
from usd_repair_verifier.profiles.jsonable import jsonable
from usd_repair_verifier.profiles.schema import SCORING_VERSION

from . import VERIFIER_VERSION
from .json_report import NO_RESULTS, TestResults
from .reward import Decision, Expected, Status, decide

# Non-finite floats are written as strings (profiles/jsonable.py).
NonFinite = Literal["inf", "-inf", "nan"]
JsonNumber = int | float | NonFinite
Fraction = float


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _unset(value) -> bool:
    return value is None


class NetworkViolation(_Strict):
    trajectory: str = Field(description="the trajectory file, `/subagent:ID` for an embedded one")
    step_id: int
    tool_call_id: str
    tool: str
    kind: Literal["web_tool", "url", "network_command"]
    url: str | None
    excerpt: str = Field(description="the offending text, shortened")


class ClosedBook(_Strict):
    required: bool = Field(description="the case is closed book; the other fields are written only when it is")
    status: Literal["clean", "violation", "unverified"] | None = None
    reason: str | None = None
    trajectory: str | None = Field(None, description="the root trajectory file read, as given")
    run: dict[str, Any] | None = Field(None, description="`agent`, `schema_versions`, `files`, `trajectories`, "
                                                         "`steps`, `tool_calls`")
    violations: list[NetworkViolation] | None = None

    @model_serializer(mode="wrap")
    def _serialize(self, handler) -> dict:
        # An open-book case is written as `{"required": false}` alone.
        return handler(self) if self.required else {"required": False}


class GateSummary(_Strict):
    passed: bool | None
    reason: str | None


class Gates(_Strict):
    validity: dict[str, GateSummary]
    preservation: dict[str, GateSummary]
    objective: dict[str, GateSummary]


class CheckEntry(_Strict):
    id: str
    fault: str
    fault_kind: str | None = Field(None, description="the fault's kind (from the profile's faults)")
    family: str
    measure: str
    target: str = Field(description="the reference element, `*` for the whole asset")
    passed: bool | None = Field(description="every component within tolerance; null when unmeasured")
    progress: Fraction | None = Field(ge=0, le=1, description="semantic progress; null when unmeasured")
    details: str = Field(description="`within tolerance`, the failing components, `unmeasured: why` or `not run`")
    components: dict[str, ComponentResult]

    def failing(self) -> dict[str, ComponentResult]:
        return {name: c for name, c in self.components.items() if not c.passed}


class FaultEntry(_Strict):
    id: str
    kind: str
    target: str


class CandidateDigest(_Strict):
    digest: str | None = Field(description="profiles/digest.py tree_digest of the submission; null when not hashed")
    bytes: int | None = Field(None, exclude_if=_unset, description="the submission's size, when hashed")
    reason: str | None = Field(None, exclude_if=_unset, description="why it was not hashed")


class Digests(_Strict):
    candidate: CandidateDigest
    reference: str | None = Field(description="from the profile")
    input: str | None = Field(description="from the profile")


class ProfileSummary(_Strict):
    id: str | None
    version: str | None
    digest: str | None = Field(description="sha256 of profile.json")
    tolerances: dict[str, JsonNumber] | None


class Environment(_Strict):
    python: str


class Grade(_Strict):
    """OUT/grade.json, written by every full, partial or failed run."""

    status: Status = Field(description="the outcome: docs/grade-json.md says what each one means")
    authored_usd: Fraction | None = Field(ge=0, le=1, description="the reward; null on a partial run")
    raw_authored_usd: Fraction | None = Field(ge=0, le=1, description="the reward as measured, before the "
                                                                      "closed-book rule")
    network_violations: list[NetworkViolation] = Field(description="a closed-book case's violations, in "
                                                                   "trajectory order; empty otherwise")
    submission_valid: bool | None = Field(description="every validity rule passed")
    preservation_pass: bool | None = Field(description="every preservation gate passed")
    targeted_repair_fraction: Fraction | None = Field(ge=0, le=1, description="F: passed targeted checks / "
                                                                              "targeted checks")
    targeted_semantic_score: Fraction | None = Field(ge=0, le=1, description="S: mean semantic progress of "
                                                                             "the targeted checks")
    objective_success: bool | None = Field(description="every objective gate passed (lifts the cap)")
    infrastructure_error: str | None = Field(description="the cause, when status is infrastructure_error")
    reasons: list[str] = Field(description="why the status and reward are what they are")
    missing_tests: list[str] = Field(description="on a partial run, the required tests that did not run "
                                                 "(`kind:id`)")
    gates: Gates
    validity: dict[str, GateResult] = Field(description="validity rule name to its full result")
    preservation: dict[str, GateResult] = Field(description="preservation gate name to its full result")
    checks: list[CheckEntry] = Field(description="one per targeted check of the profile")
    faults: list[FaultEntry]
    digests: Digests
    profile: ProfileSummary
    scoring_version: str
    verifier_version: str
    environment: Environment
    timings: dict[str, float] = Field(description="seconds by stage (`total_s`, `validity_s`, ...): the only "
                                                  "part that differs between runs of the same bytes")
    variant_selections: dict[str, dict[str, str]] | None = Field(
        None, description="the case's variant selections every stage was composed with (prim path -> set -> "
                          "selection; `{}`: none); null when the case could not be loaded")
    closed_book: ClosedBook | None = Field(description="`{required: false}` for an open-book case; null when the "
                                                       "run ended before the rule was applied (time limit)")
    visual: None = Field(description="separate grades are never part of grade.json: always null")
    physical: None = Field(description="always null")

    def to_json(self) -> dict:
        """The file's content: the model's fields, non-finite numbers as strings."""
        return jsonable(self.model_dump())

    def failing_checks(self) -> list[CheckEntry]:
        """Checks that ran and failed, least progress first (a check that did not run is not failing)."""
        failing = [c for c in self.checks if c.passed is False]
        return sorted(failing, key=lambda c: (c.progress if c.progress is not None else -1.0, c.id))


def read(data: dict | str | bytes, source: str | os.PathLike | None = None) -> Grade:
    """A grade.json parsed; `NotAGrade` (its site `source`, the file it came from) when it is not
    a grade this verifier writes, with the number of problems and the first of them."""
    try:
        if isinstance(data, (str, bytes)):
            return Grade.model_validate_json(data)
        return Grade.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0] if error.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ())) or "the file"
        raise NotAGrade(f"not a usdgrade grade.json ({error.error_count()} problem(s); first: {where}: "
                        f"{first.get('msg', error)})", site=None if source is None else str(source)) from None


def load(path: str | os.PathLike) -> Grade:
    """The grade.json at `path` as a `Grade`: the one way every reader of a grade this verifier
    wrote loads it. `NotAGrade` (its site the path) when the file cannot be read or is not a grade."""
    try:
        text = Path(path).read_bytes()
    except OSError as error:
        raise NotAGrade(f"cannot read it: {error.strerror or error}", site=str(path)) from None
    return read(text, path)


# Hashing a hostile submission must stay cheap: beyond this many bytes it is not hashed.
MAX_DIGEST_BYTES = 1 << 30
# What a check that left no measurement says in grade.json (its "details").
NOT_RUN = "not run"


def candidate_digest(folder) -> CandidateDigest:
    total = 0
    try:
        for dirpath, _, filenames in os.walk(folder, followlinks=False):
            for name in filenames:
                info = os.lstat(os.path.join(dirpath, name))
                if stat.S_ISREG(info.st_mode):
                    total += info.st_size
        if total > MAX_DIGEST_BYTES:
            return CandidateDigest(digest=None, reason=f"{total} bytes: too large to hash")
        if not os.path.isdir(folder):
            return CandidateDigest(digest=None, reason="not a folder")
        return CandidateDigest(digest=tree_digest(folder), bytes=total)
    except Exception as error:  # an odd submission must not stop the report from being written
        return CandidateDigest(digest=None, reason=f"cannot hash: {type(error).__name__}: {error}")


@dataclass(frozen=True)
class GradeInputs:
    """What the grade file says besides the decision and the tests' records."""

    case: Case | None                  # None: the case could not be loaded
    submission: Path
    closed_book: ClosedBook | None = None   # the rule's verdict; None: the run ended before it was applied


def _check_entries(results: TestResults, case: Case | None) -> list[CheckEntry]:
    if case is None:
        return []
    kinds = {f.id: f.kind for f in case.profile.faults}
    entries = []
    for spec in case.profile.checks:
        m = results.checks.get(spec.id)
        entries.append(CheckEntry(
            id=spec.id, fault=spec.fault, fault_kind=kinds.get(spec.fault), family=spec.family,
            measure=spec.measure, target=spec.target, passed=m.passed if m else None,
            progress=m.progress if m else None, details=m.details if m else NOT_RUN,
            components=m.components if m else {},
        ))
    return entries


def build(decision: Decision, results: TestResults, inputs: GradeInputs, elapsed: float) -> Grade:
    case = inputs.case
    profile = case.profile if case else None
    closed = inputs.closed_book
    violations = list(closed.violations or []) if closed is not None else []
    timings = {"total_s": round(elapsed, 3), "tests_s": round(results.tests_seconds, 6)}
    timings.update({f"{k}_s": v for k, v in results.timings.items()})
    return Grade(
        status=decision.status,
        authored_usd=decision.authored_usd,
        raw_authored_usd=decision.authored_usd if decision.raw_authored_usd is None else decision.raw_authored_usd,
        network_violations=violations,
        submission_valid=decision.submission_valid,
        preservation_pass=decision.preservation_pass,
        targeted_repair_fraction=decision.targeted_repair_fraction,
        targeted_semantic_score=decision.targeted_semantic_score,
        objective_success=decision.objective_success,
        infrastructure_error=decision.infrastructure_error,
        reasons=decision.reasons,
        missing_tests=decision.missing,
        gates=Gates(**{kind: {name: GateSummary(passed=r.passed, reason=r.reason)
                              for name, r in results.by_kind(kind).items()}
                       for kind in ("validity", "preservation", "objective")}),
        validity=results.validity,
        preservation=results.preservation,
        checks=_check_entries(results, case),
        faults=[FaultEntry(id=f.id, kind=f.kind, target=f.target) for f in profile.faults] if profile else [],
        digests=Digests(candidate=candidate_digest(inputs.submission),
                        reference=profile.reference.digest if profile else None,
                        input=profile.input.digest if profile else None),
        profile=ProfileSummary(id=profile.id if profile else None, version=profile.version if profile else None,
                               digest=case.profile_digest if case else None,
                               tolerances=profile.tolerances if profile else None),
        scoring_version=SCORING_VERSION,
        verifier_version=VERIFIER_VERSION,
        environment=Environment(python=platform.python_version()),
        timings=timings,
        variant_selections=dict(profile.variant_selections) if profile else None,
        closed_book=closed,
        visual=None,
        physical=None,
    )


def infrastructure_grade(cause: str, inputs: GradeInputs, elapsed: float) -> Grade:
    """The grade of a run that could not grade (a time limit, a dead worker, a scoring fault):
    status infrastructure_error with its cause, never a score. The one builder the plugin, the
    warm re-grader and the sealed session use. When even the report's inputs fail (a case that
    cannot be read back), it says so and leaves the case out: the result is still a valid Grade."""
    try:
        return build(decide(NO_RESULTS, Expected({}), cause), NO_RESULTS, inputs, elapsed)
    except Exception as error:  # noqa: BLE001  the cause must reach grade.json whatever failed here
        cause = f"{cause}; report failed: {type(error).__name__}: {error}"
        return build(decide(NO_RESULTS, Expected({}), cause), NO_RESULTS, GradeInputs(None, inputs.submission), elapsed)
