"""The anthropic judge on the real SDK client over a local mock transport (no network), and the fake."""
from __future__ import annotations

import json

import anthropic
import httpx2
import pytest

from visual import judge as judges
from visual import render
from visual.rubric import score

RUBRIC = {"id": "t", "title": "test", "criteria": [
    {"id": "shape", "text": "same shape", "importance": "High"},
    {"id": "parts", "text": "same parts", "importance": "Medium"},
    {"id": "colour", "text": "same colour", "importance": "Low"},
]}
PNG = render.encode_png(render.rasterize(render.Scene(*[__import__("numpy").zeros(s) for s in ((0, 3, 3), (0, 3))],
                                                      __import__("numpy").zeros(0, dtype=int), 0),
                                         render.camera("front", render.union_bounds(), 16)))
IMAGES = [judges.Image(role, view, PNG, render.sha256(PNG)) for role in ("reference", "candidate")
          for view in ("front", "top")]
MODEL_ASKED = "claude-test-20250101"
MODEL_ANSWERED = "claude-test-20250101-served"


# Any attempt to open a real connection fails the test (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("no_network")


def answer(verdicts: dict[str, str] | None = None, drop=(), views=("candidate/front",)) -> dict:
    verdicts = verdicts or {}
    return {"criteria": [
        {"id": c["id"], "verdict": verdicts.get(c["id"], "pass"), "rationale": f"looked at {c['id']}",
         "evidence": {"views": list(views), "observation": "the same"}}
        for c in RUBRIC["criteria"] if c["id"] not in drop]}


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


def make_judge(server: Server, max_retries: int = 2) -> judges.AnthropicJudge:
    client = anthropic.Anthropic(api_key="test", base_url="http://mock", max_retries=max_retries,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    return judges.AnthropicJudge(MODEL_ASKED, client=client)


def test_success_sends_images_schema_and_records_ids():
    server = Server(message(answer({"parts": "fail"})))
    vote = make_judge(server).vote(RUBRIC, IMAGES)
    assert {k: v["verdict"] for k, v in vote.verdicts.items()} == {"shape": "pass", "parts": "fail", "colour": "pass"}
    assert vote.verdicts["shape"]["evidence"]["views"] == ["candidate/front"]
    assert vote.request_id == "req_ok" and vote.model == MODEL_ANSWERED
    assert vote.usage["input_tokens"] == 1200 and vote.usage["output_tokens"] == 80
    (body,) = server.requests
    assert body["model"] == MODEL_ASKED
    assert body["output_config"]["format"]["type"] == "json_schema"
    schema = body["output_config"]["format"]["schema"]
    assert schema["properties"]["criteria"]["items"]["properties"]["id"]["enum"] == ["shape", "parts", "colour"]
    blocks = body["messages"][0]["content"]
    images = [b for b in blocks if b["type"] == "image"]
    assert len(images) == len(IMAGES) and images[0]["source"]["media_type"] == "image/png"
    assert "temperature" not in body


def test_rate_limit_then_success_is_retried():
    server = Server(error(429, "rate_limit_error"), message(answer()))
    vote = make_judge(server).vote(RUBRIC, IMAGES)
    assert len(server.requests) == 2 and all(v["verdict"] == "pass" for v in vote.verdicts.values())


def test_overload_then_success_is_retried():
    server = Server(error(529, "overloaded_error"), error(529, "overloaded_error"), message(answer()))
    vote = make_judge(server, max_retries=2).vote(RUBRIC, IMAGES)
    assert len(server.requests) == 3 and vote.request_id == "req_ok"


@pytest.mark.parametrize("status,kind", [(529, "overloaded_error"), (500, "api_error"), (503, "api_error")])
def test_errors_past_the_retries_are_an_error(status, kind):
    server = Server(error(status, kind))
    with pytest.raises(judges.JudgeError) as caught:
        make_judge(server, max_retries=2).vote(RUBRIC, IMAGES)
    assert caught.value.kind == f"http_{status}"
    assert len(server.requests) == 3                     # first try + 2 retries


def test_timeout_is_retried_then_an_error():
    server = Server(httpx2.ReadTimeout("slow"))
    with pytest.raises(judges.JudgeError) as caught:
        make_judge(server, max_retries=1).vote(RUBRIC, IMAGES)
    assert caught.value.kind == "timeout" and len(server.requests) == 2


def test_non_retryable_client_error():
    server = Server(error(400, "invalid_request_error"))
    with pytest.raises(judges.JudgeError) as caught:
        make_judge(server).vote(RUBRIC, IMAGES)
    assert caught.value.kind == "http_400" and len(server.requests) == 1


@pytest.mark.parametrize("response,kind", [
    (message(answer(), stop="max_tokens"), "truncated"),
    (message(None, stop="refusal", text=""), "refusal"),
    (message(None, text='{"criteria": [ {"id": "shape", '), "malformed"),
    (message({"verdicts": []}), "malformed"),
    (message(answer(drop=("colour",))), "missing_criterion"),
    (message(answer({"shape": "maybe"})), "malformed"),
    (message(answer(views=("candidate/side",))), "malformed"),   # cites a view that was not sent
])
def test_bad_answers_are_errors_never_partial(response, kind):
    server = Server(response)
    with pytest.raises(judges.JudgeError) as caught:
        make_judge(server).vote(RUBRIC, IMAGES)
    assert caught.value.kind == kind
    assert caught.value.request_id == "req_ok"           # the failed answer is still identifiable
    assert len(server.requests) == 1                     # not a transient error: no retry


def _vote(verdicts):
    return judges.Vote(verdicts={k: {"verdict": v} for k, v in verdicts.items()})


def test_majority_and_ties():
    a = _vote({"shape": "pass", "parts": "pass", "colour": "unclear"})
    b = _vote({"shape": "fail", "parts": "pass", "colour": "unclear"})
    c = _vote({"shape": "pass", "parts": "fail", "colour": "pass"})
    assert judges.aggregate(RUBRIC, [a, b]) == {"shape": "unclear", "parts": "pass", "colour": "unclear"}
    assert judges.aggregate(RUBRIC, [a, b, c]) == {"shape": "pass", "parts": "pass", "colour": "unclear"}
    assert judges.aggregate(RUBRIC, [a]) == {"shape": "pass", "parts": "pass", "colour": "unclear"}


def test_score_weights_and_unclear_counts_zero():
    assert score(RUBRIC, {"shape": "pass", "parts": "pass", "colour": "pass"}) == 1.0
    assert score(RUBRIC, {"shape": "pass", "parts": "unclear", "colour": "fail"}) == pytest.approx(3 / 6)
    assert score(RUBRIC, {"shape": "unclear", "parts": "pass"}) == pytest.approx(2 / 6)


def test_fake_judge_is_deterministic():
    fake = judges.FakeJudge(rule="fail", mapping={"shape": "pass"})
    one, two = fake.vote(RUBRIC, IMAGES), fake.vote(RUBRIC, IMAGES)
    assert one.verdicts == two.verdicts
    assert {k: v["verdict"] for k, v in one.verdicts.items()} == {"shape": "pass", "parts": "fail", "colour": "fail"}
    assert one.verdicts["shape"]["evidence"]["views"] == ["candidate/front"]
    with pytest.raises(judges.JudgeError):
        judges.FakeJudge(mapping={"parts": "error"}).vote(RUBRIC, IMAGES)
    with pytest.raises(ValueError):
        judges.FakeJudge(rule="maybe")


def test_model_resolution_has_a_dated_default():
    assert judges.resolve_model("m-flag", {judges.MODEL_ENV: "m-env"}) == "m-flag"
    assert judges.resolve_model(None, {judges.MODEL_ENV: "m-env"}) == "m-env"
    default = judges.resolve_model(None, {})
    assert default == judges.DEFAULT_MODEL and default[-8:].isdigit()
