"""The anthropic judge on the real SDK client over a local mock transport (no network), and the fake."""
from __future__ import annotations

import json

import functools

import pytest

from usd_repair_verifier.visual import judge as judges
from usd_repair_verifier.visual import render
from usd_repair_verifier.visual.rubric import score
from tests.lazy_import import LazyModule

anthropic = LazyModule("anthropic")
httpx2 = LazyModule("httpx2")

RUBRIC = {"id": "t", "title": "test", "criteria": [
    {"id": "shape", "text": "same shape", "importance": "High"},
    {"id": "parts", "text": "same parts", "importance": "Medium"},
    {"id": "colour", "text": "same colour", "importance": "Low"},
]}


@functools.cache
def judged_images() -> list:
    """Four views of an empty scene, rendered once on first use (never at collection)."""
    png = render.encode_png(render.rasterize(render.Scene(*[__import__("numpy").zeros(s) for s in ((0, 3, 3), (0, 3))],
                                                          __import__("numpy").zeros(0, dtype=int), 0),
                                             render.camera("front", render.union_bounds(), 16)))
    return [judges.Image(role, view, png, render.sha256(png)) for role in ("reference", "candidate")
            for view in ("front", "top")]


MODEL_ASKED = "claude-test-20250101"
MODEL_ANSWERED = "claude-test-20250101-served"


# Any attempt to open a real connection fails the test (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("no_network")


def answer(verdicts: dict[str, str] | None = None, drop=(), views=("candidate/front",)) -> dict:
    verdicts = verdicts or {}
    return {c["id"]: {"rationale": f"looked at {c['id']}",
                      "evidence": {"views": list(views), "observation": "the same"},
                      "verdict": verdicts.get(c["id"], "pass")}
            for c in RUBRIC["criteria"] if c["id"] not in drop}


def message(payload, stop="end_turn", text=None) -> httpx2.Response:
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": MODEL_ANSWERED,
            "content": [{"type": "text", "text": text if text is not None else json.dumps(payload)}],
            "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 1200, "output_tokens": 80}}
    return httpx2.Response(200, json=body, headers={"request-id": "req_ok"})


def error(status: int, kind: str) -> httpx2.Response:
    return httpx2.Response(status, json={"type": "error", "error": {"type": kind, "message": kind}},
                           headers={"retry-after-ms": "1", "request-id": f"req_{status}"})


class Server:
    """A scripted mock: each call pops the next response (the last one repeats)."""

    def __init__(self, *script):
        self.script = list(script)
        self.requests: list[dict] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.host == "mock"
        self.requests.append(json.loads(request.content))
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, Exception):
            raise step
        return step


def make_judge(server: Server, max_retries: int = 2, answer_retries: int = 2) -> judges.AnthropicJudge:
    client = anthropic.Anthropic(api_key="test", base_url="http://mock", max_retries=max_retries,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    return judges.AnthropicJudge(MODEL_ASKED, client=client, answer_retries=answer_retries, sleep=lambda s: None)


@pytest.mark.slow
def test_success_sends_images_schema_and_records_ids():
    server = Server(message(answer({"parts": "fail"})))
    vote = make_judge(server).vote(RUBRIC, judged_images())
    assert {k: v["verdict"] for k, v in vote.verdicts.items()} == {"shape": "pass", "parts": "fail", "colour": "pass"}
    assert vote.verdicts["shape"]["evidence"]["views"] == ["candidate/front"]
    assert vote.request_id == "req_ok" and vote.model == MODEL_ANSWERED
    assert vote.usage["input_tokens"] == 1200 and vote.usage["output_tokens"] == 80
    (body,) = server.requests
    assert body["model"] == MODEL_ASKED
    assert body["output_config"]["format"]["type"] == "json_schema"
    schema = body["output_config"]["format"]["schema"]
    # an object keyed by criterion id, every criterion required, rationale before verdict
    assert schema["required"] == ["shape", "parts", "colour"] and schema["additionalProperties"] is False
    entry = schema["properties"]["shape"]
    assert list(entry["properties"]) == ["rationale", "evidence", "verdict"]
    assert entry["properties"]["evidence"]["properties"]["views"]["minItems"] == 1
    assert entry["properties"]["evidence"]["properties"]["views"]["items"]["enum"] == [i.label for i in judged_images()]
    blocks = body["messages"][0]["content"]
    images = [b for b in blocks if b["type"] == "image"]
    assert len(images) == len(judged_images()) and images[0]["source"]["media_type"] == "image/png"
    assert "temperature" not in body
    # the judge is told what the renders are and are not, and what a difference image is
    text = " ".join(b["text"] for b in blocks if b["type"] == "text") + body["system"]
    assert "DIFFERENCE" in text
    # textures are sampled, and what is still not shown is said
    assert "textures ARE sampled" in text and "average colour" not in text
    assert "no normal, bump, roughness" in text and "no lighting beyond" in text and "fallback" in text


def test_rate_limit_then_success_is_retried():
    server = Server(error(429, "rate_limit_error"), message(answer()))
    vote = make_judge(server).vote(RUBRIC, judged_images())
    assert len(server.requests) == 2 and all(v["verdict"] == "pass" for v in vote.verdicts.values())


def test_overload_then_success_is_retried():
    server = Server(error(529, "overloaded_error"), error(529, "overloaded_error"), message(answer()))
    vote = make_judge(server, max_retries=2).vote(RUBRIC, judged_images())
    assert len(server.requests) == 3 and vote.request_id == "req_ok"


@pytest.mark.parametrize("status,kind", [(529, "overloaded_error"), (500, "api_error"), (503, "api_error")])
def test_errors_past_the_retries_are_an_error(status, kind):
    server = Server(error(status, kind))
    with pytest.raises(judges.JudgeError) as caught:
        make_judge(server, max_retries=2).vote(RUBRIC, judged_images())
    assert caught.value.kind == f"http_{status}"
    assert len(server.requests) == 3                     # first try + 2 retries


def test_timeout_is_retried_then_an_error():
    server = Server(httpx2.ReadTimeout("slow"))
    with pytest.raises(judges.JudgeError) as caught:
        make_judge(server, max_retries=1).vote(RUBRIC, judged_images())
    assert caught.value.kind == "timeout" and len(server.requests) == 2


def test_non_retryable_client_error():
    server = Server(error(400, "invalid_request_error"))
    with pytest.raises(judges.JudgeError) as caught:
        make_judge(server).vote(RUBRIC, judged_images())
    assert caught.value.kind == "http_400" and len(server.requests) == 1


BAD_ANSWERS = [
    (message(answer(), stop="max_tokens"), "truncated"),
    (message(None, text='{"shape": {"rationale": '), "malformed"),           # invalid JSON
    (message({"criteria": []}), "malformed"),                                 # the old array shape
    (message(answer(drop=("colour",))), "missing_criterion"),
    (message(answer({"shape": "maybe"})), "malformed"),
    (message(answer(views=())), "malformed"),                                 # evidence cites no view
    (message(answer(views=("candidate/side",))), "malformed"),               # cites a view that was not sent
]


@pytest.mark.parametrize("response,kind", BAD_ANSWERS)
def test_bad_answers_are_retried_then_an_error_never_partial(response, kind):
    server = Server(response)
    with pytest.raises(judges.JudgeError) as caught:
        make_judge(server, answer_retries=2).vote(RUBRIC, judged_images())
    assert caught.value.kind == kind
    assert caught.value.request_id == "req_ok"           # the failed answer is still identifiable
    assert caught.value.attempts == 3 and len(server.requests) == 3     # first answer + 2 retries


@pytest.mark.parametrize("response,kind", BAD_ANSWERS)
def test_a_bad_answer_then_a_good_one_is_a_vote(response, kind):
    server = Server(response, message(answer({"parts": "fail"})))
    vote = make_judge(server).vote(RUBRIC, judged_images())
    assert len(server.requests) == 2 and vote.attempts == 2
    assert vote.verdicts["parts"]["verdict"] == "fail"


def test_backoff_between_answer_retries_doubles():
    waits = []
    server = Server(message(None, text="not json"))
    client = anthropic.Anthropic(api_key="test", base_url="http://mock", max_retries=0,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    judge = judges.AnthropicJudge(MODEL_ASKED, client=client, answer_retries=3, backoff_s=0.5, sleep=waits.append)
    with pytest.raises(judges.JudgeError):
        judge.vote(RUBRIC, judged_images())
    assert waits == [0.5, 1.0, 2.0]


def test_a_refusal_is_not_retried():
    server = Server(message(None, stop="refusal", text=""))
    with pytest.raises(judges.JudgeError) as caught:
        make_judge(server).vote(RUBRIC, judged_images())
    assert caught.value.kind == "refusal" and len(server.requests) == 1


def test_no_key_is_a_clear_error_at_construction(monkeypatch):
    for name in judges.CREDENTIAL_ENVS:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(judges.JudgeError) as caught:
        judges.AnthropicJudge(MODEL_ASKED)
    assert caught.value.kind == "no_credentials" and "ANTHROPIC_API_KEY" in caught.value.message


def test_an_sdk_fault_at_request_time_is_a_vote_error(monkeypatch):
    """The real SDK with no key raises TypeError when it builds the request: a JudgeError, not a crash."""
    for name in judges.CREDENTIAL_ENVS:
        monkeypatch.delenv(name, raising=False)
    server = Server(message(answer()))
    client = anthropic.Anthropic(api_key=None, base_url="http://mock",
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    with pytest.raises(judges.JudgeError) as caught:
        judges.AnthropicJudge(MODEL_ASKED, client=client, sleep=lambda s: None).vote(RUBRIC, judged_images())
    assert caught.value.kind == "sdk" and not server.requests


def _vote(verdicts):
    return judges.Vote(verdicts={k: {"verdict": v, "rationale": f"why {k} {v}",
                                     "evidence": {"views": ["candidate/front"], "observation": f"saw {v}"}}
                                 for k, v in verdicts.items()})


def _final(result):
    return {k: v["verdict"] for k, v in result.items()}


def test_majority_ties_and_errors():
    a = _vote({"shape": "pass", "parts": "pass", "colour": "unclear"})
    b = _vote({"shape": "fail", "parts": "pass", "colour": "unclear"})
    c = _vote({"shape": "pass", "parts": "fail", "colour": "pass"})
    assert _final(judges.aggregate(RUBRIC, [a, b])) == {"shape": "unclear", "parts": "pass", "colour": "unclear"}
    assert _final(judges.aggregate(RUBRIC, [a, b, c])) == {"shape": "pass", "parts": "pass", "colour": "unclear"}
    assert _final(judges.aggregate(RUBRIC, [a])) == {"shape": "pass", "parts": "pass", "colour": "unclear"}
    # any error vote makes every criterion of the grade error, whatever the other votes say
    assert _final(judges.aggregate(RUBRIC, [a, None, c])) == {"shape": "error", "parts": "error", "colour": "error"}


def test_the_majority_keeps_its_rationale_and_evidence():
    a = _vote({"shape": "fail", "parts": "pass", "colour": "pass"})
    b = _vote({"shape": "pass", "parts": "pass", "colour": "fail"})
    c = _vote({"shape": "pass", "parts": "fail", "colour": "fail"})
    final = judges.aggregate(RUBRIC, [a, b, c])
    assert final["shape"]["rationale"] == "why shape pass"
    assert final["shape"]["evidence"] == {"views": ["candidate/front"], "observation": "saw pass"}
    assert final["colour"]["rationale"] == "why colour fail" and final["colour"]["tally"]["fail"] == 2
    tie = judges.aggregate(RUBRIC, [a, b])["shape"]
    assert tie["verdict"] == "unclear" and tie["evidence"] is None and "no majority" in tie["rationale"]


def test_score_weights_and_unclear_counts_zero():
    assert score(RUBRIC, {"shape": "pass", "parts": "pass", "colour": "pass"}) == 1.0
    assert score(RUBRIC, {"shape": "pass", "parts": "unclear", "colour": "fail"}) == pytest.approx(3 / 6)
    assert score(RUBRIC, {"shape": "unclear", "parts": "pass"}) == pytest.approx(2 / 6)
    # a criterion in error earns nothing and still counts in the total
    assert score(RUBRIC, {"shape": "error", "parts": "pass", "colour": "pass"}) == pytest.approx(3 / 6)


def test_fake_judge_is_deterministic():
    fake = judges.FakeJudge(rule="fail", mapping={"shape": "pass"})
    one, two = fake.vote(RUBRIC, judged_images()), fake.vote(RUBRIC, judged_images())
    assert one.verdicts == two.verdicts
    assert {k: v["verdict"] for k, v in one.verdicts.items()} == {"shape": "pass", "parts": "fail", "colour": "fail"}
    assert one.verdicts["shape"]["evidence"]["views"] == ["candidate/front"]
    with pytest.raises(judges.JudgeError):
        judges.FakeJudge(mapping={"parts": "error"}).vote(RUBRIC, judged_images())
    with pytest.raises(judges.JudgeError):
        judges.FakeJudge(rule="error").vote(RUBRIC, judged_images())
    with pytest.raises(ValueError):
        judges.FakeJudge(rule="maybe")
    with pytest.raises(ValueError):
        judges.FakeJudge(mapping={"shape": "maybe"})


def test_model_resolution_defaults_to_opus_5_5():
    assert judges.resolve_model("m-flag", {judges.MODEL_ENV: "m-env"}) == "m-flag"
    assert judges.resolve_model(None, {judges.MODEL_ENV: "m-env"}) == "m-env"
    assert judges.resolve_model(None, {}) == "claude-opus-5-5"
