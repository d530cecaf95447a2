"""Rubric judges: the Anthropic Messages API (images + structured JSON output) and a fake.

A judge call (one *vote*) returns every criterion's verdict (pass, fail, unclear) with a
rationale and evidence citing the views it was shown, or raises ``JudgeError``. Transient
API errors (429, 5xx, 529, timeouts) are retried by the SDK with backoff (``max_retries``);
truncated or malformed answers (bad JSON, a missing or unknown criterion, evidence citing a
view that was not sent) are asked again here with backoff (``answer_retries``). After the
retries, or on a refusal or a missing key, the vote is an error: never a partial pass.
"""
from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import dataclass, field

from .rubric import VERDICTS

PROMPT_VERSION = "visual-judge-3"
MODEL_ENV = "USDGRADE_JUDGE_MODEL"
DEFAULT_MODEL = "claude-opus-5-5"
DEFAULT_MAX_RETRIES = 3          # the SDK's own retries of 408/409/429/5xx/529 and connection errors
DEFAULT_ANSWER_RETRIES = 2       # ours: a truncated or malformed answer is asked again
DEFAULT_BACKOFF_S = 0.5          # doubling, capped at MAX_BACKOFF_S, between answer retries
MAX_BACKOFF_S = 8.0
DEFAULT_TIMEOUT_S = 300.0
MAX_TOKENS = 8192
CREDENTIAL_ENVS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
# answers worth asking again: the model may well answer properly the next time
RETRIED_KINDS = ("truncated", "malformed", "missing_criterion", "unexpected_stop")


class JudgeError(Exception):
    """A vote that produced no usable verdicts. ``kind`` names the failure."""

    def __init__(self, kind: str, message: str, *, request_id: str | None = None, model: str | None = None,
                 usage: dict | None = None, attempts: int = 1):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.request_id = request_id
        self.model = model
        self.usage = usage
        self.attempts = attempts


@dataclass(frozen=True)
class Image:
    role: str      # "reference" | "candidate" | "difference"
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
    attempts: int = 1


def resolve_model(flag: str | None, env: dict | None = None) -> str:
    env = os.environ if env is None else env
    return flag or env.get(MODEL_ENV) or DEFAULT_MODEL


def response_schema(rubric: dict, labels: list[str]) -> dict:
    """An object keyed by criterion id, every criterion required (none missing, none twice); in each,
    the rationale comes before the verdict so the model explains before it commits."""
    criterion = {
        "type": "object",
        "properties": {
            "rationale": {"type": "string"},
            "evidence": {
                "type": "object",
                "properties": {
                    "views": {"type": "array", "items": {"type": "string", "enum": labels}, "minItems": 1},
                    "observation": {"type": "string"},
                },
                "required": ["views", "observation"],
                "additionalProperties": False,
            },
            "verdict": {"type": "string", "enum": list(VERDICTS)},
        },
        "required": ["rationale", "evidence", "verdict"],
        "additionalProperties": False,
    }
    ids = [c["id"] for c in rubric["criteria"]]
    return {"type": "object", "properties": {cid: criterion for cid in ids}, "required": ids,
            "additionalProperties": False}


SYSTEM = (
    "You are a strict visual inspector for a 3D asset-repair benchmark. You are shown renders of a "
    "REFERENCE asset (the intact original) and a CANDIDATE asset (a repair), made by the grader itself "
    "from the exact files being graded, from the same orthographic cameras with the same framing, lighting "
    "and scale, so corresponding views are directly comparable pixel for pixel. For each view you also get "
    "a DIFFERENCE image: black where the two renders agree, and the candidate's pixel where they differ, so "
    "any bright area marks a difference (a moved, missing, extra, reshaped or recoloured part). "
    "Judge only what the images show. For each criterion first write a short rationale, then the evidence "
    "(the labels of the views you relied on, exactly as given, and what you saw in them), then the verdict: "
    "pass (the candidate clearly satisfies it), fail (it clearly does not) or unclear (the images cannot "
    "settle it)."
)

RENDER_NOTE = (
    "What the renders are: a small software rasterizer (no GPU), flat two-sided Lambert shading from one "
    "fixed light (one brightness per triangle), dark outlines where parts meet, anti-aliased (3 x 3 samples "
    "a pixel), orthographic, Z up. 'front' looks at the side of the reference that shows the most parts. "
    "Colour is the material's diffuse colour (else the display colour). Diffuse textures ARE sampled: a "
    "part whose diffuse colour comes from an image texture shows that image's pattern (wood grain, decals, "
    "labels) where its texture coordinates put it, bilinearly filtered, with its wrap mode, colour space, "
    "scale and bias; when the texture file does not load, the part shows the texture's flat fallback colour. "
    "What they are not: only the diffuse colour is textured (no normal, bump, roughness, metallic, opacity "
    "or emissive maps), no specular highlights, reflections, transparency or shadows, no lighting beyond "
    "that one light and a constant ambient, and no physics: joints, masses and colliders are invisible "
    "here. The background is neutral grey."
)


def build_content(rubric: dict, images: list[Image]) -> list[dict]:
    content: list[dict] = [{"type": "text", "text": RENDER_NOTE + " Images follow, each preceded by its "
                                                                   "label (role/view)."}]
    for image in images:
        content.append({"type": "text", "text": f"View {image.label}:"})
        content.append({"type": "image", "source": {
            "type": "base64", "media_type": "image/png", "data": base64.b64encode(image.png).decode("ascii")}})
    lines = [f"- {c['id']} ({c['importance']}): {c['text']}" for c in rubric["criteria"]]
    content.append({"type": "text", "text": (
        f"Rubric: {rubric.get('title', rubric.get('id', ''))}\nCriteria:\n" + "\n".join(lines) +
        "\n\nAnswer with one entry per criterion id, every criterion. Cite only these view labels: "
        + ", ".join(i.label for i in images) + ".")})
    return content


def parse_verdicts(payload, rubric: dict, labels: list[str]) -> dict[str, dict]:
    """Validate a judge's JSON answer; raise JudgeError('malformed' | 'missing_criterion')."""
    if not isinstance(payload, dict):
        raise JudgeError("malformed", "the answer is not a JSON object keyed by criterion id")
    ids = [c["id"] for c in rubric["criteria"]]
    unknown_ids = sorted(set(payload) - set(ids))
    if unknown_ids:
        raise JudgeError("malformed", f"unknown criteria {unknown_ids}")
    missing = [cid for cid in ids if cid not in payload]
    if missing:
        raise JudgeError("missing_criterion", f"no verdict for {missing}")
    return {cid: _criterion(cid, payload[cid], labels) for cid in ids}


def _criterion(cid: str, item, labels: list[str]) -> dict:
    if not isinstance(item, dict):
        raise JudgeError("malformed", f"criterion {cid!r} is not an object")
    verdict, rationale, evidence = item.get("verdict"), item.get("rationale"), item.get("evidence")
    if verdict not in VERDICTS:
        raise JudgeError("malformed", f"criterion {cid!r}: verdict {verdict!r}")
    if not isinstance(rationale, str) or not rationale.strip():
        raise JudgeError("malformed", f"criterion {cid!r}: no rationale")
    if (not isinstance(evidence, dict) or not isinstance(evidence.get("views"), list) or not evidence["views"]
            or not isinstance(evidence.get("observation"), str) or not evidence["observation"].strip()):
        raise JudgeError("malformed", f"criterion {cid!r}: evidence must cite at least one view and an observation")
    unknown = [v for v in evidence["views"] if v not in labels]
    if unknown:
        raise JudgeError("malformed", f"criterion {cid!r}: evidence cites views that were not sent: {unknown}")
    return {"verdict": verdict, "rationale": rationale,
            "evidence": {"views": list(evidence["views"]), "observation": evidence["observation"]}}


def _usage(usage) -> dict:
    if usage is None:
        return {}
    return {k: getattr(usage, k, None) for k in
            ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")}


def has_credentials(env=None) -> bool:
    env = os.environ if env is None else env
    return any(str(env.get(name, "")).strip() for name in CREDENTIAL_ENVS)


class AnthropicJudge:
    """The default judge. ``client`` may be injected (tests pass one on a mock transport).

    Without an injected client it needs ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``): checked
    here, so a missing key is a clear ``JudgeError('no_credentials')`` and never a traceback at request
    time. ``sleep`` is the backoff between answer retries (tests pass a no-op)."""

    kind = "anthropic"

    def __init__(self, model: str, client=None, max_retries: int = DEFAULT_MAX_RETRIES,
                 timeout: float = DEFAULT_TIMEOUT_S, max_tokens: int = MAX_TOKENS,
                 answer_retries: int = DEFAULT_ANSWER_RETRIES, backoff_s: float = DEFAULT_BACKOFF_S,
                 sleep=time.sleep, env=None):
        self.model = model
        self.max_tokens = max_tokens
        self.answer_retries = answer_retries
        self.backoff_s = backoff_s
        self.sleep = sleep
        if client is None:
            if not has_credentials(env):
                raise JudgeError("no_credentials", "no ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the environment")
            try:
                import anthropic  # optional extra: only needed when this judge really runs
            except ImportError as error:
                raise JudgeError("sdk_missing", f"the anthropic SDK is not installed: {error}") from error
            client = anthropic.Anthropic(max_retries=max_retries, timeout=timeout)
        self.client = client

    def vote(self, rubric: dict, images: list[Image]) -> Vote:
        """One vote; a truncated or malformed answer is asked again (with backoff) up to answer_retries times."""
        attempt = 0
        while True:
            attempt += 1
            try:
                vote = self._ask(rubric, images)
                vote.attempts = attempt
                return vote
            except JudgeError as error:
                error.attempts = attempt
                if error.kind not in RETRIED_KINDS or attempt > self.answer_retries:
                    raise
                self.sleep(min(self.backoff_s * 2 ** (attempt - 1), MAX_BACKOFF_S))

    def _ask(self, rubric: dict, images: list[Image]) -> Vote:
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
        except Exception as error:  # the SDK's own faults (e.g. no credentials resolved): a vote error, never a crash
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

    ``rule`` and ``mapping`` values are verdicts or ``"error"`` (the vote fails: exercises the error
    path); ``mapping`` entries override ``rule``; ``sequence`` gives one mapping per successive vote.
    """

    kind = "fake"

    def __init__(self, rule: str = "pass", mapping: dict[str, str] | None = None,
                 sequence: list[dict[str, str]] | None = None):
        allowed = (*VERDICTS, "error")
        for value in [rule, *(mapping or {}).values(), *(v for m in sequence or [] for v in m.values())]:
            if value not in allowed:
                raise ValueError(f"a fake verdict must be one of {allowed}, not {value!r}")
        self.rule = rule
        self.mapping = dict(mapping or {})
        self.sequence = list(sequence or [])
        self.calls = 0
        self.model = f"fake:{rule}" + ("+mapping" if self.mapping or self.sequence else "")

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


def load_fake_mapping(path) -> dict[str, str]:
    """A fake judge's mapping file: a JSON object {criterion id: pass | fail | unclear | error}."""
    from pathlib import Path

    try:
        mapping = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read the fake mapping {path}: {error}") from error
    if not isinstance(mapping, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
        raise ValueError(f"the fake mapping {path} must be a JSON object of criterion id -> verdict")
    return mapping


def aggregate(rubric: dict, votes: list[Vote | None]) -> dict[str, dict]:
    """Each criterion's final verdict over K votes (None: a vote that failed after its retries).

    Any error vote makes the criterion ``error``; else the verdict of a strict majority, keeping the
    rationale and evidence of the first vote in that majority; else (a tie) ``unclear``."""
    k = len(votes)
    out = {}
    for c in rubric["criteria"]:
        cid = c["id"]
        given = [None if v is None else v.verdicts[cid] for v in votes]
        tally = {v: sum(1 for g in given if g is not None and g["verdict"] == v) for v in VERDICTS}
        tally["error"] = sum(1 for g in given if g is None)
        if tally["error"]:
            out[cid] = {"verdict": "error", "rationale": f"{tally['error']} of {k} vote(s) failed after the retries",
                        "evidence": None, "tally": tally}
            continue
        winner = next((v for v in VERDICTS if tally[v] * 2 > k), None)
        if winner is None:
            out[cid] = {"verdict": "unclear", "rationale": "no majority: " + ", ".join(
                f"{v} {n}" for v, n in tally.items() if n), "evidence": None, "tally": tally}
            continue
        first = next(g for g in given if g["verdict"] == winner)
        out[cid] = {"verdict": winner, "rationale": first["rationale"], "evidence": first["evidence"], "tally": tally}
    return out
