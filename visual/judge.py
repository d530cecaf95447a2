"""Rubric judges: the Anthropic Messages API (images + structured JSON output) and a fake.

A judge call (one *vote*) returns every criterion's verdict (pass, fail, unclear) with a
rationale and evidence citing the views it was shown, or raises ``JudgeError``. Transient
API errors are retried by the SDK with backoff (``max_retries``); after the retries, and on
truncated output, a refusal, malformed JSON, an unknown or missing criterion, or evidence
citing a view that was not sent, the vote is an error: never a partial pass.
"""
from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field

from .rubric import VERDICTS

PROMPT_VERSION = "visual-judge-1"
MODEL_ENV = "USDGRADE_JUDGE_MODEL"
DEFAULT_MODEL = "claude-opus-4-5-20251101"
DEFAULT_MAX_RETRIES = 3
DEFAULT_TIMEOUT_S = 300.0
MAX_TOKENS = 4096


class JudgeError(Exception):
    """A vote that produced no usable verdicts. ``kind`` names the failure."""

    def __init__(self, kind: str, message: str, *, request_id: str | None = None, model: str | None = None,
                 usage: dict | None = None):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.request_id = request_id
        self.model = model
        self.usage = usage


@dataclass(frozen=True)
class Image:
    role: str      # "reference" | "candidate"
    view: str      # "front", "side", ...
    png: bytes
    digest: str

    @property
    def label(self) -> str:
        return f"{self.role}/{self.view}"


@dataclass
class Vote:
    verdicts: dict[str, dict]          # criterion id -> {verdict, rationale, evidence}
    model: str | None = None           # the model that answered
    request_id: str | None = None
    usage: dict = field(default_factory=dict)
    stop_reason: str | None = None


def resolve_model(flag: str | None, env: dict | None = None) -> str:
    env = os.environ if env is None else env
    return flag or env.get(MODEL_ENV) or DEFAULT_MODEL


def response_schema(rubric: dict, labels: list[str]) -> dict:
    ids = [c["id"] for c in rubric["criteria"]]
    return {
        "type": "object",
        "properties": {
            "criteria": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "enum": ids},
                        "verdict": {"type": "string", "enum": list(VERDICTS)},
                        "rationale": {"type": "string"},
                        "evidence": {
                            "type": "object",
                            "properties": {
                                "views": {"type": "array", "items": {"type": "string", "enum": labels}},
                                "observation": {"type": "string"},
                            },
                            "required": ["views", "observation"],
                            "additionalProperties": False,
                        },
                    },
                    "required": ["id", "verdict", "rationale", "evidence"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["criteria"],
        "additionalProperties": False,
    }


SYSTEM = (
    "You are a strict visual inspector for a 3D asset-repair benchmark. You are shown trusted renders "
    "of a REFERENCE asset (the intact original) and a CANDIDATE asset (a repair), from the same fixed "
    "orthographic cameras with the same framing, lighting and scale, so corresponding views are directly "
    "comparable pixel for pixel. Judge only what the images show. For each criterion answer pass (the "
    "candidate clearly satisfies it), fail (it clearly does not) or unclear (the images cannot settle it). "
    "Give a short rationale and evidence: the labels of the views you relied on (exactly as given) and "
    "what you saw in them."
)


def build_content(rubric: dict, images: list[Image]) -> list[dict]:
    content: list[dict] = [{"type": "text", "text": (
        "Images follow, each preceded by its label (role/view). The background is neutral grey; dark lines "
        "outline where one part meets another or the background.")}]
    for image in images:
        content.append({"type": "text", "text": f"View {image.label}:"})
        content.append({"type": "image", "source": {
            "type": "base64", "media_type": "image/png", "data": base64.b64encode(image.png).decode("ascii")}})
    lines = [f"- {c['id']} ({c['importance']}): {c['text']}" for c in rubric["criteria"]]
    content.append({"type": "text", "text": (
        f"Rubric: {rubric.get('title', rubric.get('id', ''))}\nCriteria:\n" + "\n".join(lines) +
        "\n\nAnswer every criterion exactly once, using its id. Cite only these view labels: "
        + ", ".join(i.label for i in images) + ".")})
    return content


def parse_verdicts(payload, rubric: dict, labels: list[str]) -> dict[str, dict]:
    """Validate a judge's JSON answer; raise JudgeError('malformed' | 'missing_criterion' ...)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("criteria"), list):
        raise JudgeError("malformed", "answer is not an object with a 'criteria' list")
    ids = [c["id"] for c in rubric["criteria"]]
    out: dict[str, dict] = {}
    for item in payload["criteria"]:
        if not isinstance(item, dict):
            raise JudgeError("malformed", "a criterion entry is not an object")
        cid, verdict, rationale, evidence = (item.get("id"), item.get("verdict"), item.get("rationale"),
                                             item.get("evidence"))
        if cid not in ids:
            raise JudgeError("malformed", f"unknown criterion {cid!r}")
        if cid in out:
            raise JudgeError("malformed", f"criterion {cid!r} answered twice")
        if verdict not in VERDICTS:
            raise JudgeError("malformed", f"criterion {cid!r}: verdict {verdict!r}")
        if not isinstance(rationale, str) or not rationale.strip():
            raise JudgeError("malformed", f"criterion {cid!r}: no rationale")
        if (not isinstance(evidence, dict) or not isinstance(evidence.get("views"), list)
                or not evidence["views"] or not isinstance(evidence.get("observation"), str)):
            raise JudgeError("malformed", f"criterion {cid!r}: evidence must cite views and an observation")
        unknown = [v for v in evidence["views"] if v not in labels]
        if unknown:
            raise JudgeError("malformed", f"criterion {cid!r}: evidence cites views that were not sent: {unknown}")
        out[cid] = {"verdict": verdict, "rationale": rationale,
                    "evidence": {"views": list(evidence["views"]), "observation": evidence["observation"]}}
    missing = [cid for cid in ids if cid not in out]
    if missing:
        raise JudgeError("missing_criterion", f"no verdict for {missing}")
    return {cid: out[cid] for cid in ids}


def _usage(usage) -> dict:
    if usage is None:
        return {}
    return {k: getattr(usage, k, None) for k in
            ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")}


class AnthropicJudge:
    """The default judge. ``client`` may be injected (tests pass one on a mock transport)."""

    kind = "anthropic"

    def __init__(self, model: str, client=None, max_retries: int = DEFAULT_MAX_RETRIES,
                 timeout: float = DEFAULT_TIMEOUT_S, max_tokens: int = MAX_TOKENS):
        self.model = model
        self.max_tokens = max_tokens
        if client is None:
            import anthropic  # optional extra: only needed when this judge really runs

            client = anthropic.Anthropic(max_retries=max_retries, timeout=timeout)
        self.client = client

    def vote(self, rubric: dict, images: list[Image]) -> Vote:
        import anthropic

        labels = [i.label for i in images]
        try:
            message = self.client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=SYSTEM,
                messages=[{"role": "user", "content": build_content(rubric, images)}],
                output_config={"format": {"type": "json_schema", "schema": response_schema(rubric, labels)}},
            )
        except anthropic.APITimeoutError as error:
            raise JudgeError("timeout", f"no answer after the retries: {error}") from error
        except anthropic.APIConnectionError as error:
            raise JudgeError("connection", f"no answer after the retries: {error}") from error
        except anthropic.APIStatusError as error:
            raise JudgeError(f"http_{error.status_code}", f"{type(error).__name__}: {error.message}",
                             request_id=getattr(error, "request_id", None)) from error
        except anthropic.AnthropicError as error:
            raise JudgeError("sdk", f"{type(error).__name__}: {error}") from error
        meta = {"request_id": getattr(message, "_request_id", None), "model": getattr(message, "model", None),
                "usage": _usage(getattr(message, "usage", None))}
        stop = getattr(message, "stop_reason", None)
        if stop == "max_tokens":
            raise JudgeError("truncated", "the answer hit max_tokens", **meta)
        if stop == "refusal":
            raise JudgeError("refusal", "the model refused", **meta)
        if stop not in ("end_turn", "stop_sequence"):
            raise JudgeError("unexpected_stop", f"stop_reason {stop!r}", **meta)
        text = "".join(getattr(b, "text", "") for b in message.content if getattr(b, "type", None) == "text")
        try:
            payload = json.loads(text)
        except ValueError as error:
            raise JudgeError("malformed", f"answer is not JSON: {error}", **meta) from error
        try:
            verdicts = parse_verdicts(payload, rubric, labels)
        except JudgeError as error:
            raise JudgeError(error.kind, error.message, **meta) from error
        return Vote(verdicts=verdicts, stop_reason=stop, **meta)


class FakeJudge:
    """Deterministic verdicts for tests and dry runs: a fixed rule or a per-criterion mapping.

    ``mapping`` entries override ``rule``; a mapping value of ``"error"`` makes the vote fail
    (exercises the error path). ``sequence`` gives one mapping per successive vote.
    """

    kind = "fake"

    def __init__(self, rule: str = "pass", mapping: dict[str, str] | None = None,
                 sequence: list[dict[str, str]] | None = None):
        if rule not in VERDICTS:
            raise ValueError(f"fake rule must be one of {VERDICTS}")
        self.rule = rule
        self.mapping = dict(mapping or {})
        self.sequence = list(sequence or [])
        self.calls = 0
        self.model = f"fake:{rule}"

    def vote(self, rubric: dict, images: list[Image]) -> Vote:
        mapping = self.sequence[self.calls] if self.calls < len(self.sequence) else self.mapping
        self.calls += 1
        cited = [next((i.label for i in images if i.role == "candidate"), images[0].label if images else "none")]
        verdicts = {}
        for c in rubric["criteria"]:
            verdict = mapping.get(c["id"], self.rule)
            if verdict == "error":
                raise JudgeError("fake_error", f"fake judge told to fail on {c['id']!r}", model=self.model)
            verdicts[c["id"]] = {"verdict": verdict, "rationale": f"fake judge: {verdict}",
                                 "evidence": {"views": cited, "observation": "fake judge: no inspection"}}
        return Vote(verdicts=verdicts, model=self.model, request_id=None, usage={}, stop_reason="end_turn")


def aggregate(rubric: dict, votes: list[Vote]) -> dict[str, str]:
    """Strict majority per criterion over K successful votes; anything else is unclear."""
    k = len(votes)
    out = {}
    for c in rubric["criteria"]:
        tally = {v: 0 for v in VERDICTS}
        for vote in votes:
            tally[vote.verdicts[c["id"]]["verdict"]] += 1
        out[c["id"]] = next((v for v in ("pass", "fail") if tally[v] * 2 > k), "unclear")
    return out
