"""A local OpenAI-compatible HTTP server for tests, driven by the real ``langchain-openai`` client.

It listens on ``127.0.0.1`` (a free port), serves ``POST /v1/chat/completions`` — plain JSON
or streaming SSE, as the request asks — and records every request body so tests can assert
on exactly what the agent sent (window size, secrets). Replies come from a script of *steps*,
then from ``responder`` once the script is used up:

* ``{"content": "...", "tool_calls": [{"name": ..., "args": {...} | "raw json", "id": ...}]}``
* ``{"error": 400, "code": "context_length_exceeded", "message": "...", "type": "..."}`` (also 429,
  500, …; ``type`` as the server names it, e.g. llama.cpp's ``exceed_context_size_error``)
* ``{"sleep": 2.0, ...reply}`` — wait first (past a client timeout, to test one)
* a callable ``step(body) -> step`` that decides from the request.

A tool call whose ``args`` is a string is sent verbatim, so invalid JSON can be injected.

Server quirks (``quirks=``, as real servers have them — docs/servers.md):

* ``tools_need_tool_choice`` — tools are ignored (prose reply) unless ``tool_choice`` is sent;
* ``empty_stream_with_tools`` — a streamed request with tools gets an empty 200;
* ``null_content_500`` — an assistant turn with ``content: null`` is answered with a 500;
* ``html_escape`` — strings inside tool arguments come back HTML-escaped;
* ``one_slot=True`` serves one request at a time (a one-slot llama-server);
* ``models=`` is the ``GET /v1/models`` answer (404 without it); ``props=`` llama.cpp's ``GET /props``
  and ``show=`` Ollama's ``POST /api/show`` (both beside ``/v1``); a ``str`` answer is served as an
  HTML page (a proxy's login form);
* a ``{"ramble": 0.05}`` step streams text every 0.05 s until the client hangs up.
Usage numbers are counted exactly from the request with the o200k tokenizer.
"""

from __future__ import annotations

import html
import json
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mtagent.context.tokens import count_text_tokens

Step = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


def request_text(body: dict[str, Any]) -> str:
    """Everything in a request a model would read: message contents, tool calls, tool schemas."""
    parts: list[str] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(block.get("text", "")) for block in content if isinstance(block, dict))
        for call in message.get("tool_calls") or []:
            fn = call.get("function", {})
            parts.append(f"{fn.get('name')}({fn.get('arguments')})")
    return "\n".join(parts)


def request_tokens(body: dict[str, Any]) -> int:
    """Tokens of the messages of a request (without tool schemas)."""
    return count_text_tokens(request_text(body))


class StubOpenAI:
    """Start with ``with StubOpenAI(script) as stub:``; point a client at ``stub.base_url``."""

    def __init__(self, script: list[Step] | None = None,
                 responder: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
                 model: str = "stub-model", quirks: set[str] | frozenset[str] = frozenset(),
                 one_slot: bool = False, models: dict[str, Any] | None = None,
                 props: dict[str, Any] | str | None = None, show: dict[str, Any] | str | None = None) -> None:
        self.quirks = frozenset(quirks)
        self.models = models
        self.props = props
        self.show = show
        self.probes: list[str] = []  # every GET path and non-chat POST path, in order
        self.slot = threading.Lock() if one_slot else None
        self.model_probes = 0
        self.arrivals = 0
        self.script: list[Step] = list(script or [])
        self.responder = responder
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.raw_bodies: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> StubOpenAI:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        stub = self

        class Handler(_Handler):
            owner = stub

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start the stub first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def push(self, *steps: Step) -> None:
        with self._lock:
            self.script.extend(steps)

    # the chat completions endpoint -----------------------------------------------------
    def _next_step(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            step: Step | None = self.script.pop(0) if self.script else None
        if step is None:
            if self.responder is None:
                return {"error": 500, "code": "stub_script_exhausted", "message": "stub script exhausted"}
            step = self.responder
        return step(body) if callable(step) else step


class _Handler(BaseHTTPRequestHandler):
    owner: StubOpenAI

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self.owner.probes.append(self.path)
        if self.path.rstrip("/").endswith("/models"):
            self.owner.model_probes += 1
        if self.path.rstrip("/").endswith("/models") and self.owner.models is not None:
            self._json(200, self.owner.models)
        elif self.path.rstrip("/") == "/props" and self.owner.props is not None:
            self._answer(self.owner.props)
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def _answer(self, answer: dict[str, Any] | str) -> None:
        if isinstance(answer, dict):
            self._json(200, answer)
            return
        data = answer.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path.rstrip("/") == "/api/show":
            self.owner.probes.append(self.path)
            if self.owner.show is None:
                self._json(404, {"error": "no route /api/show"})
            else:
                self._answer(self.owner.show)
            return
        self.owner.arrivals += 1  # before the slot: tests can wait until a request is queued
        if self.owner.slot is None:
            self._post(raw)
            return
        with self.owner.slot:
            self._post(raw)

    def _quirky(self, body: dict[str, Any], step: dict[str, Any]) -> dict[str, Any]:
        quirks = self.owner.quirks
        if "null_content_500" in quirks and any(
                m.get("role") == "assistant" and m.get("content") is None for m in body.get("messages", [])):
            return {"error": 500, "message": "Internal Server Error: content must be a string"}
        if "error" in step or "ramble" in step:
            return step
        if "tools_need_tool_choice" in quirks and body.get("tools") and "tool_choice" not in body:
            return {"content": step.get("content") or "I would use a tool here."}
        if "html_escape" in quirks and step.get("tool_calls"):
            step = {**step, "tool_calls": [{**c, "args": {k: html.escape(v) if isinstance(v, str) else v
                                                          for k, v in c.get("args", {}).items()}}
                                           for c in step["tool_calls"]]}
        return step

    def _post(self, raw: bytes) -> None:
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        body = json.loads(raw or b"{}")
        self.owner.raw_bodies.append(raw)
        self.owner.headers.append(dict(self.headers.items()))
        step = self._quirky(body, self.owner._next_step(body))
        try:
            if step.get("sleep"):
                time.sleep(float(step["sleep"]))
            if "ramble" in step:
                self._ramble(float(step["ramble"]))
            elif body.get("stream") and body.get("tools") and "empty_stream_with_tools" in self.owner.quirks:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.write(b"data: [DONE]\n\n")
            elif "error" in step:
                self._error(step)
            elif body.get("stream"):
                self._stream(body, step)
            else:
                self._json(200, self._completion(body, step))
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up (a timeout test); nothing to answer

    def _ramble(self, every: float) -> None:
        """Stream words until the client hangs up (a model that never stops), 120 s at most."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        end = time.monotonic() + 120
        while time.monotonic() < end:
            chunk = {"id": "chatcmpl-ramble", "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": self.owner.model,
                     "choices": [{"index": 0, "delta": {"content": "and so on "}, "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            time.sleep(every)

    def _error(self, step: dict[str, Any]) -> None:
        status = int(step["error"])
        kind = step.get("type") or {400: "invalid_request_error", 401: "authentication_error",
                                    429: "rate_limit_error"}.get(status, "server_error")
        self._json(status, {"error": {
            "message": step.get("message", f"stub error {status}"),
            "type": kind, "param": None, "code": step.get("code"),
        }})

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    @staticmethod
    def _calls(step: dict[str, Any]) -> list[dict[str, Any]]:
        calls = []
        for i, call in enumerate(step.get("tool_calls") or []):
            args = call.get("args", {})
            calls.append({
                "index": i,
                "id": call.get("id") or f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": call["name"], "arguments": args if isinstance(args, str) else json.dumps(args)},
            })
        return calls

    def _usage(self, body: dict[str, Any], step: dict[str, Any], calls: list[dict[str, Any]]) -> dict[str, int]:
        prompt = request_tokens(body) + count_text_tokens(json.dumps(body.get("tools", []), sort_keys=True))
        out_text = step.get("content") or ""
        out_text += "".join(c["function"]["name"] + c["function"]["arguments"] for c in calls)
        completion = count_text_tokens(out_text)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def _completion(self, body: dict[str, Any], step: dict[str, Any]) -> dict[str, Any]:
        calls = self._calls(step)
        message: dict[str, Any] = {"role": "assistant", "content": step.get("content") or ("" if calls else "")}
        if calls:
            message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:10]}", "object": "chat.completion", "created": int(time.time()),
            "model": self.owner.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": self._usage(body, step, calls),
        }

    def _stream(self, body: dict[str, Any], step: dict[str, Any]) -> None:
        calls = self._calls(step)
        cid = f"chatcmpl-{uuid.uuid4().hex[:10]}"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()

        def send(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> None:
            chunk = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": self.owner.model,
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()

        send({"role": "assistant", "content": ""})
        text = step.get("content") or ""
        for start in range(0, len(text), 16):
            send({"content": text[start:start + 16]})
        for call in calls:
            args = call["function"]["arguments"]
            send({"tool_calls": [{"index": call["index"], "id": call["id"], "type": "function",
                                  "function": {"name": call["function"]["name"], "arguments": ""}}]})
            for start in range(0, len(args), 20):
                send({"tool_calls": [{"index": call["index"], "function": {"arguments": args[start:start + 20]}}]})
        send({}, "tool_calls" if calls else "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            usage_chunk = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                           "model": self.owner.model, "choices": [], "usage": self._usage(body, step, calls)}
            self.wfile.write(f"data: {json.dumps(usage_chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
