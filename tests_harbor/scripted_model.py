"""A scripted OpenAI-compatible model on 127.0.0.1, for Harbor's terminus-2 agent (which reaches
its model through LiteLLM from the host). Its replies are fixed in advance; it answers at most
len(replies) + EXTRA requests (then HTTP 400, which ends the agent's run) and stops with the test."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EXTRA = 2   # a terminus run may ask once or twice more (a confirmation) before it stops


def terminus_reply(commands: list[str], complete: bool, analysis: str = "") -> str:
    """A reply in terminus-2's JSON format: keystrokes to type (each given 6 s before the screen is
    read: a fetch the network holds times out in 5), and whether the task is done."""
    return json.dumps({"analysis": analysis or "scripted", "plan": "scripted",
                       "commands": [{"keystrokes": c, "duration": 6.0} for c in commands], "task_complete": complete})


class _BackgroundServer:
    """A ThreadingHTTPServer on its own thread while the `with` block runs."""

    def __init__(self, host: str, handler: type[BaseHTTPRequestHandler]):
        self.server = ThreadingHTTPServer((host, 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


class ScriptedModel(_BackgroundServer):
    def __init__(self, replies: list[str]):
        self.replies = list(replies)
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        super().__init__("127.0.0.1", self._handler())

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def _next(self, body: dict) -> str | None:
        with self.lock:
            self.requests.append(body)
            index = len(self.requests) - 1
            if index < len(self.replies):
                return self.replies[index]
            if index < len(self.replies) + EXTRA:   # a repeat of the closing reply
                return self.replies[-1]
            return None

    def _handler(self):
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                content = model._next(body)
                if content is None:
                    self._send(400, {"error": {"message": "scripted model: no more replies", "type": "invalid_request_error"}})
                    return
                self._send(200, {
                    "id": f"scripted-{len(model.requests)}", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}})

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


class CountingServer(_BackgroundServer):
    """A plain HTTP server (the target of a fetch the network policy must stop): counts requests."""

    def __init__(self, host: str):
        self.hits = 0
        counter = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                counter.hits += 1
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        super().__init__(host, Handler)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/reference/ant.usda"
