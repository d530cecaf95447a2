"""visual.json as a pydantic model: what every field holds (docs/visual-json.md,
docs/schemas/visual.schema.json).

visual/grade.py gathers the record as it goes and writes the file from this model (validated, then
dumped with exactly the fields it set); the published schema is generated from the same model.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["pass", "fail", "unclear"]
FinalVerdict = Literal["pass", "fail", "unclear", "error"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Objective(_Strict):
    """Read from grade.json."""

    status: str | None
    submission_valid: bool | None
    preservation_pass: bool | None
    objective_success: bool | None
    authored_usd: float | None


class Digests(_Strict):
    candidate_recorded: str = Field(description="the candidate digest grade.json records")
    candidate_now: str = Field(description="the submission's digest before rendering")
    candidate_after_render: str | None = Field(None, description="the submission's digest after rendering")
    reference: str | None = Field(None, description="the case's reference digest")


class Authorization(_Strict):
    authorized: bool
    source: Literal["--authorize", "USDGRADE_VISUAL_AUTHORIZE", "--judge fake"] | None


class Image(_Strict):
    file: str = Field(description="the PNG, relative to OUT (renders/<role>_<view>.png)")
    digest: str = Field(description="sha256 of the PNG")
    differing_pixels: int | None = Field(None, description="for `difference`: pixels that differ")


PerSide = dict[str, Any]


class Renders(_Strict):
    renderer: str = Field(description="the renderer's version")
    size: int
    supersample: int
    views: list[str]
    view_directions: dict[str, list[list[float]]] = Field(description="each view's look and up directions, "
                                                                      "chosen on the reference")
    bounds_m: list[list[float]]
    triangles: PerSide = Field(description="per side: triangles drawn")
    gprims: PerSide = Field(description="per side: gprims drawn")
    skipped_ground_planes: PerSide = Field(description="per side: ground planes left out of the framing")
    colour_sources: PerSide = Field(description="per side: how many parts took their colour from a `texture`, a "
                                                "`texture_fallback`, a `material`, a `display_color` or the "
                                                "`default`")
    textured_parts: PerSide = Field(description="per side: each textured part's prim path -> `texture` or "
                                                "`texture_fallback`")
    reference: dict[str, Image]
    candidate: dict[str, Image]
    difference: dict[str, Image]


class Rubric(_Strict):
    source: str = Field(description="`default` or the rubric file given")
    digest: str
    content: dict[str, Any] = Field(description="the rubric itself (visual/rubric.py validates it)")


class Judge(_Strict):
    kind: Literal["anthropic", "fake"]
    model_requested: str
    models_answered: list[str] | None = None
    request_ids: list[str] | None = None
    votes_requested: int
    prompt_version: str | None = None


class Evidence(_Strict):
    views: list[str]
    observation: str


class VoteVerdict(_Strict):
    rationale: str
    evidence: Evidence
    verdict: Verdict


class VoteError(_Strict):
    kind: str
    message: str


class VoteRecord(_Strict):
    index: int
    attempts: int = Field(description="answers asked for this vote")
    model: str | None
    request_id: str | None
    usage: dict[str, Any]
    stop_reason: str | None = None
    verdicts: dict[str, VoteVerdict] | None = Field(None, description="criterion -> verdict, when the vote answered")
    error: VoteError | None = Field(None, description="why the vote failed after its retries")


class FinalCriterion(_Strict):
    verdict: FinalVerdict
    rationale: str | None = Field(description="the majority's (the first majority vote's)")
    evidence: Evidence | None = Field(description="null for a tie or an error")
    tally: dict[str, int]
    importance: Literal["High", "Medium", "Low"]
    weight: int


class Cache(_Strict):
    key: str
    dir: str
    hit: bool


class VisualRecord(_Strict):
    """OUT/visual.json, written by `usdgrade visual`: a separate grade, never combined with the reward."""

    record_version: Literal["2"]
    status: Literal["graded", "not_eligible", "not_authorized", "infrastructure_error"]
    reason: str | None = Field(description="why not graded; null when graded")
    score: float | None = Field(ge=0, le=1, description="the rubric score when graded; null otherwise")
    rubric_score: float | None = Field(ge=0, le=1, description="the raw rubric score whenever the judge answered, "
                                                              "also when status is infrastructure_error")
    dry_run: bool = Field(description="true when the fake judge gave the verdicts: not a real grade")
    case: str
    submission: str
    grade_json: str = Field(description="the objective grade read")
    objective: Objective | None
    digests: Digests | None
    authorization: Authorization | None
    renders: Renders | None
    rubric: Rubric | None
    judge: Judge | None
    votes: list[VoteRecord]
    verdicts: dict[str, FinalCriterion] | None = Field(description="criterion -> final verdict")
    usage: dict[str, int] | None = Field(description="token counts summed over the votes")
    cache: Cache | None = Field(description="only graded results are cached")
    timings: dict[str, float] = Field(description="seconds: render, judge, total")
