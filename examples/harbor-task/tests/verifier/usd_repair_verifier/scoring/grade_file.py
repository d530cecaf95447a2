"""grade.json as a pydantic model: what every field holds (docs/grade-json.md, docs/schemas/grade.schema.json).

The writer (scoring/report.py `build`) builds a plain dict; this model is the file's description,
and the tests validate every grade they produce and every fixture grade against it. Nothing on the
grading path imports this module: a grade does not pay for pydantic.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .reward import Status

# Non-finite floats are written as strings (profiles/jsonable.py).
NonFinite = Literal["inf", "-inf", "nan"]
JsonNumber = float | NonFinite
Fraction = float


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Open(BaseModel):
    """A part whose producer may add fields (a gate's result, the closed-book run summary)."""

    model_config = ConfigDict(extra="allow", frozen=True)


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


class GateSummary(_Strict):
    passed: bool | None
    reason: str | None


class Gates(_Strict):
    validity: dict[str, GateSummary]
    preservation: dict[str, GateSummary]
    objective: dict[str, GateSummary]


class GateResult(_Open):
    gate: str
    passed: bool
    reason: str
    failures: list[Any] = Field(description="each offending part or file (at most 50)")


class Component(_Strict):
    error: JsonNumber | None = Field(description="on the quantity's scale: metres, degrees, an absolute log-ratio "
                                                 "for positive magnitudes, 0/1 for booleans")
    tolerance: JsonNumber | None = Field(description="the strict tolerance, on the error's scale")
    input_error: JsonNumber | None = Field(description="the frozen error of the broken input (null for a "
                                                       "component the profile did not freeze)")
    passed: bool
    reference: Any = Field(description="the measured value on the reference")
    candidate: Any = Field(description="the measured value on the candidate")
    voids_progress: Literal[True] | None = Field(None, description="written (true) for a component whose failure "
                                                                   "makes the check's progress 0")


class CheckEntry(_Strict):
    id: str
    fault: str
    family: str
    measure: str
    target: str = Field(description="the reference element, `*` for the whole asset")
    passed: bool | None = Field(description="every component within tolerance; null when unmeasured")
    progress: Fraction | None = Field(ge=0, le=1, description="semantic progress; null when unmeasured")
    details: str = Field(description="`within tolerance`, the failing components, `unmeasured: why` or `not run`")
    components: dict[str, Component]


class FaultEntry(_Strict):
    id: str
    kind: str
    target: str


class CandidateDigest(_Strict):
    digest: str | None = Field(description="profiles/digest.py tree_digest of the submission; null when not hashed")
    bytes: int | None = Field(None, description="the submission's size, when hashed")
    reason: str | None = Field(None, description="why it was not hashed")


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
    closed_book: ClosedBook | None = Field(description="`{required: false}` for an open-book case; null when the "
                                                       "run ended before the rule was applied (time limit)")
    visual: None = Field(description="separate grades are never part of grade.json: always null")
    physical: None = Field(description="always null")
