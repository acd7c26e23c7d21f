"""A scripted model server that speaks the Anthropic Messages, OpenAI Chat Completions and Responses, and Gemini APIs.

Why it exists: the project drives real agent CLIs and real provider SDKs in its tests and benchmarks,
but must never call a real model. This server answers them on 127.0.0.1 from a declarative
:class:`~skillopt.testing.script.Script`, with the same SSE event sequences, tool-call shapes, error
bodies and headers as the real providers, so the clients cannot tell the difference. Every request is
logged so tests can assert what the model was shown (for example, that a skill's body reached it).

Use it from Python::

    with ScriptedServer(script, expected_key="sk-test") as server:
        client = openai.OpenAI(base_url=server.base_url_openai, api_key="sk-test")
        ...
        assert server.requests_matching(api="responses", rule="make-file")

or from a shell: ``python -m skillopt_lib.testing.scripted_server --script script.yaml --port 8123``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from skillopt_lib.testing.prompt_cache import CacheRequestError, CacheUsage, PromptCache
from skillopt_lib.testing.script import (
    ApiName,
    ConcreteCall,
    Conversation,
    Fault,
    Message,
    Script,
    Selection,
    ToolSpec,
    collect_strings,
    is_injected_text,
    resolve_tool_calls,
    strip_injected,
)
from skillopt_lib.testing.tokens import estimate_tokens, tokens_in_chars

__all__ = ["RecordedRequest", "ScriptedServer", "main"]

_SECRET_HEADERS = re.compile(r"authorization|api-key|apikey|cookie|token|secret", re.IGNORECASE)
_CWD_PATTERNS = (
    re.compile(r"Primary working directory: *(\S[^\n]*)"),
    re.compile(r"<cwd>([^<]+)</cwd>"),
)
_API_ROUTES: dict[str, ApiName] = {
    "/v1/messages": "anthropic",
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
}
# Gemini API: /v1beta/models/<model>:generateContent, :streamGenerateContent (?alt=sse), :countTokens
_GEMINI_ROUTE = re.compile(
    r"^/(v1|v1beta|v1alpha)/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$"
)
_AZURE_ROUTE = re.compile(r"^/openai/deployments/([^/]+)/(chat/completions|responses)$")
_CHUNK = 24  # characters per streamed delta: small enough that clients really assemble deltas


@dataclass
class RecordedRequest:
    """One request as the server saw it, plus how it was answered (secrets are redacted)."""

    index: int
    time: float
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    api: str | None = None
    stream: bool = False
    rule: str | None = None
    step: str | None = None
    turn: int | None = None
    last_user_text: str = ""
    status: int = 200
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    auth_ok: bool = True
    deployment: str | None = None  # Azure OpenAI: the deployment named in the URL
    # The prompt tokens the answer reported as fresh, written to the cache and read from it, and its output
    # tokens: what a benchmark adds up per kind of request (e.g. per family replayed).
    tokens: dict[str, int] = field(default_factory=dict)

    def text(self) -> str:
        """Every string in the request body, joined: what the model was shown."""
        return "\n".join(collect_strings(self.body))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silence the default stderr access log: the request log is the record."""

    def do_GET(self) -> None:
        self.server.owner._handle(self, "GET")

    def do_POST(self) -> None:
        self.server.owner._handle(self, "POST")

    def do_PUT(self) -> None:
        self.server.owner._handle(self, "PUT")

    def do_DELETE(self) -> None:
        self.server.owner._handle(self, "DELETE")


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], owner: ScriptedServer) -> None:
        self.owner = owner
        super().__init__(address, _Handler)


class _ClientGone(Exception):
    """The client closed the connection while we were answering (normal for timeouts and aborts)."""


class ScriptedServer:
    """A deterministic model server for tests, bound to 127.0.0.1 on a free port by default.

    ``expected_key``: when set, requests must carry it (``x-api-key`` or ``Authorization: Bearer``)
    or get a 401 in the provider's error shape, which lets tests prove a client sent its key.
    ``log_path``: also append each :class:`RecordedRequest` as a JSON line to this file.
    ``clock``: seconds for the prompt cache's lifetimes (monotonic time by default), so a test can move
    time instead of sleeping; see :mod:`skillopt_lib.testing.prompt_cache`.
    """

    def __init__(
        self,
        script: Script | None = None,
        *,
        expected_key: str | None = None,
        log_path: str | Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        models: tuple[str, ...] = ("claude-sonnet-4-6", "gpt-5.5"),
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.script = script if script is not None else Script()
        self.expected_key = expected_key
        self.log_path = Path(log_path) if log_path is not None else None
        self.host = host
        self.models = models
        self._requested_port = port
        self._httpd: _HTTPServer | None = None
        self._port: int | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._log: list[RecordedRequest] = []
        self._fault_counts: dict[str, int] = {}
        self._stopping = threading.Event()
        self._idle = threading.Condition(self._lock)
        self._inflight = 0
        # Prompt caching as the providers do it, so clients report realistic cache reads and writes;
        # ``clock`` (seconds) lets a test move time to check the cache's lifetimes.
        self.prompt_cache = PromptCache(clock)

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> ScriptedServer:
        """Bind and serve in a background thread; returns self, so ``ScriptedServer(...).start()`` works."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer((self.host, self._requested_port), self)
        self._port = int(self._httpd.server_address[1])
        # A short poll interval keeps stop() fast: tests start and stop a server each.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="scripted-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release hanging requests; safe to call twice."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            # Let in-flight requests finish writing their log records before callers read the log.
            with self._idle:
                self._idle.wait_for(lambda: self._inflight == 0, timeout=5)
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (still readable after :meth:`stop`, for messages about a finished test)."""
        if self._port is None:
            raise RuntimeError("server was never started")
        return self._port

    @property
    def url(self) -> str:
        """Base URL for Anthropic clients (``ANTHROPIC_BASE_URL``); no trailing slash."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url_openai(self) -> str:
        """Base URL for OpenAI clients and Codex providers: ``<url>/v1``."""
        return f"{self.url}/v1"

    def set_script(self, script: Script) -> None:
        """Swap the script (e.g. between phases of a test) without restarting; resets fault counters."""
        with self._lock:
            self.script = script
            self._fault_counts.clear()

    # ---------------------------------------------------------------- log and assertions
    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request so far, in arrival order."""
        with self._lock:
            return list(self._log)

    def clear_requests(self) -> None:
        with self._lock:
            self._log.clear()

    def requests_matching(
        self,
        *,
        path: str | None = None,
        api: str | None = None,
        rule: str | None = None,
        text: str | None = None,
        user: str | None = None,
        status: int | None = None,
        predicate: Callable[[RecordedRequest], bool] | None = None,
    ) -> list[RecordedRequest]:
        """Requests meeting every given condition.

        ``path`` is a prefix of the URL path; ``text`` and ``user`` are regular expressions searched in
        the request's text (:meth:`RecordedRequest.text`) and in its latest real user text.
        """
        out = []
        for r in self.requests:
            if path is not None and not r.path.startswith(path):
                continue
            if api is not None and r.api != api:
                continue
            if rule is not None and r.rule != rule:
                continue
            if status is not None and r.status != status:
                continue
            if text is not None and not re.search(text, r.text(), re.DOTALL):
                continue
            if user is not None and not re.search(user, r.last_user_text, re.DOTALL):
                continue
            if predicate is not None and not predicate(r):
                continue
            out.append(r)
        return out

    def all_text(self) -> str:
        """Every string of every request body, joined: assert that something reached the model."""
        return "\n".join(r.text() for r in self.requests)

    def wait_for(self, predicate: Callable[[list[RecordedRequest]], bool], timeout: float = 30.0) -> bool:
        """Poll the log until ``predicate(requests)`` holds (for agents driven asynchronously, as in tmux)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.requests):
                return True
            time.sleep(0.05)
        return predicate(self.requests)

    def _register(self, rec: RecordedRequest) -> None:
        """Log a request on arrival, so hanging and in-flight requests are visible to assertions."""
        with self._lock:
            rec.index = len(self._log)
            self._log.append(rec)
            self._inflight += 1

    def _write_log_line(self, rec: RecordedRequest) -> None:
        """Append the finished record to the JSONL log file, if one was asked for."""
        with self._lock:
            if self.log_path is not None:
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
                with self.log_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(rec.to_dict(), ensure_ascii=False, default=str) + "\n")

    # ---------------------------------------------------------------- request handling
    def _handle(self, h: _Handler, method: str) -> None:
        raw_path, _, query = h.path.partition("?")
        path = raw_path.rstrip("/") or "/"
        azure = _AZURE_ROUTE.match(path)
        gemini = _GEMINI_ROUTE.match(path)
        if gemini is not None:
            pass  # its own versioned paths
        elif azure is not None:
            # Azure OpenAI: /openai/deployments/<deployment>/chat/completions?api-version=...
            path = "/v1/" + azure.group(2)
        if gemini is None and not path.startswith("/v1/") and path != "/v1":
            path = "/v1" + path  # tolerate clients whose base URL lacks /v1
        headers = {k.lower(): v for k, v in h.headers.items()}
        rec = RecordedRequest(
            index=-1,
            time=time.time(),
            method=method,
            path=path,
            query=query,
            headers={k: ("<redacted>" if _SECRET_HEADERS.search(k) else v) for k, v in headers.items()},
            body=None,
            deployment=azure.group(1) if azure is not None else (gemini.group(2) if gemini else None),
        )
        provider = (
            "gemini"
            if gemini is not None
            else "anthropic"
            if ("anthropic-version" in headers or path.startswith("/v1/messages"))
            else "openai"
        )
        self._register(rec)
        try:
            raw = self._read_body(h, headers)
            if raw:
                try:
                    rec.body = json.loads(raw)
                except ValueError:
                    rec.body = raw.decode("utf-8", "replace")
                    rec.error = "request body is not JSON"
                    self._send_error(h, rec, provider, 400, "request body is not valid JSON")
                    return
            rec.auth_ok = self._auth_ok(headers, query)
            if azure is not None and "api-version=" not in query:
                self._send_error(h, rec, provider, 404, "Resource not found (no api-version in the query)")
                return
            if not rec.auth_ok:
                message = {
                    "anthropic": "invalid x-api-key",
                    "gemini": "API key not valid. Please pass a valid API key.",
                }.get(provider, "Incorrect API key provided.")
                self._send_error(h, rec, provider, 401, message)
                return
            self._route(h, rec, method, path, provider)
        except (BrokenPipeError, ConnectionResetError, _ClientGone):
            rec.error = rec.error or "client closed the connection"
        finally:
            self._write_log_line(rec)
            with self._idle:
                self._inflight -= 1
                self._idle.notify_all()

    @staticmethod
    def _read_body(h: _Handler, headers: Mapping[str, str]) -> bytes:
        length = int(headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        if headers.get("content-encoding", "").lower() == "gzip":
            raw = gzip.decompress(raw)
        return raw

    def _auth_ok(self, headers: Mapping[str, str], query: str = "") -> bool:
        if self.expected_key is None:
            return True
        bearer = headers.get("authorization", "")
        return (
            headers.get("x-api-key") == self.expected_key
            or headers.get("api-key") == self.expected_key  # Azure OpenAI
            or headers.get("x-goog-api-key") == self.expected_key  # Gemini
            or f"key={self.expected_key}" in query.split("&")
            or bearer == f"Bearer {self.expected_key}"
        )

    def _route(self, h: _Handler, rec: RecordedRequest, method: str, path: str, provider: str) -> None:
        if method == "GET" and (path == "/v1/models" or path.startswith("/v1/models/")):
            self._send_json(h, rec, 200, self._models_body(path))
            return
        gemini = _GEMINI_ROUTE.match(path)
        if method == "POST" and isinstance(rec.body, dict) and gemini is not None:
            rec.api = "gemini"
            if gemini.group(3) == "countTokens":
                self._send_json(
                    h, rec, 200, {"totalTokens": estimate_tokens("\n".join(collect_strings(rec.body)))}
                )
                return
            rec.stream = gemini.group(3) == "streamGenerateContent"
            self._answer(h, rec, "gemini")
            return
        if method == "POST" and isinstance(rec.body, dict):
            if path == "/v1/messages/count_tokens":
                rec.api = "anthropic"
                tokens = estimate_tokens("\n".join(collect_strings(rec.body)))
                self._send_json(h, rec, 200, {"input_tokens": tokens})
                return
            api = _API_ROUTES.get(path)
            if api is not None:
                self._answer(h, rec, api)
                return
        self._send_error(h, rec, provider, 404, f"no route for {method} {path}")

    def _models_body(self, path: str) -> dict[str, Any]:
        def model(mid: str) -> dict[str, Any]:
            # One object carrying both providers' fields, so either SDK can parse it.
            return {
                "id": mid,
                "object": "model",
                "type": "model",
                "created": 0,
                "created_at": "2025-01-01T00:00:00Z",
                "owned_by": "skillopt-scripted",
                "display_name": mid,
            }

        if path.startswith("/v1/models/"):
            return model(path[len("/v1/models/") :])
        data = [model(m) for m in self.models]
        return {
            "object": "list",
            "data": data,
            "has_more": False,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
        }

    def _answer(self, h: _Handler, rec: RecordedRequest, api: ApiName) -> None:
        body: dict[str, Any] = rec.body
        rec.api = api
        provider = {"anthropic": "anthropic", "gemini": "gemini"}.get(api, "openai")
        conv = parse_request(api, body)
        if api == "gemini":  # the URL says whether to stream, and names the model
            conv.stream = rec.stream
            conv.model = rec.deployment or conv.model
        rec.stream = conv.stream
        rec.last_user_text = conv.last_user_text
        with self._lock:
            script = self.script
        selection = script.select(conv)
        rec.rule = selection.rule.name if selection.rule is not None else None
        rec.step = selection.path
        rec.turn = selection.turn
        step = selection.step
        if step.fault is not None and self._fault_active(selection, step.fault):
            fault = step.fault
            if fault.delay and self._stopping.wait(fault.delay):
                return
            if fault.hang:
                rec.error = "hung by script"
                self._stopping.wait()
                return
            if fault.status is not None:
                self._send_error(
                    h,
                    rec,
                    provider,
                    fault.status,
                    fault.message or _default_message(fault.status),
                    retry_after=fault.retry_after,
                )
                return
            if fault.malformed:
                self._send_malformed(h, rec, conv.stream)
                return
        skipped: list[str] = []
        calls = resolve_tool_calls(step.tool_calls, conv, skipped=skipped) if conv.tools else []
        if step.tool_calls and not conv.tools:
            skipped.append("the request offered no tools")
        if skipped:
            rec.warnings = [f"tool calls left out: {reason}" for reason in skipped]
        text = step.text if (step.text or calls) else script.default_text
        reply = _Reply(conv=conv, selection=selection, text=text, calls=calls)
        try:
            reply.cache = self._cache_usage(api, body, dict(h.headers.items()))
        except CacheRequestError as e:
            self._send_error(h, rec, provider, 400, str(e))
            return
        cached = reply.cache.read + (reply.cache.write if api == "anthropic" else 0)
        rec.tokens = {
            "fresh": max(0, reply.input_tokens - cached),
            "cache_write": reply.cache.write if api == "anthropic" else 0,  # OpenAI's writes are not billed
            "cache_read": reply.cache.read,
            "output": reply.output_tokens,
        }
        if api == "anthropic":
            if conv.stream:
                self._send_sse(h, rec, _anthropic_events(reply))
            else:
                self._send_json(h, rec, 200, _anthropic_message(reply))
        elif api == "gemini":
            if conv.stream:
                self._send_sse(h, rec, _gemini_chunks(reply))
            else:
                self._send_json(h, rec, 200, _gemini_response(reply, reply.text, reply.calls, final=True))
        elif api == "chat":
            if conv.stream:
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                self._send_sse(h, rec, _chat_chunks(reply, include_usage), done_marker=True)
            else:
                self._send_json(h, rec, 200, _chat_completion(reply))
        else:
            if conv.stream:
                self._send_sse(h, rec, _responses_events(reply))
            else:
                self._send_json(h, rec, 200, _response_object(reply, "completed"))

    def _cache_usage(self, api: ApiName, body: Mapping[str, Any], headers: Mapping[str, str]) -> CacheUsage:
        """What the provider's prompt cache served and stored for one request (scoped to the key used)."""
        scope = _credential_digest(headers)
        if api == "anthropic":
            return self.prompt_cache.anthropic(body, scope)
        if api in ("chat", "responses"):
            return self.prompt_cache.openai(api, body, scope)
        return CacheUsage()

    def _fault_active(self, selection: Selection, fault: Fault) -> bool:
        if fault.times is None:
            return True
        with self._lock:
            count = self._fault_counts.get(selection.path, 0)
            self._fault_counts[selection.path] = count + 1
        return count < fault.times

    # ---------------------------------------------------------------- writers
    def _send_json(
        self,
        h: _Handler,
        rec: RecordedRequest,
        status: int,
        payload: Any,
        extra_headers: Mapping[str, str] | None = None,
    ) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        rec.status = status
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        h.send_header("request-id", f"req_scripted_{rec.index if rec.index >= 0 else id(rec)}")
        for k, v in (extra_headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)
        h.wfile.flush()

    def _send_error(
        self,
        h: _Handler,
        rec: RecordedRequest,
        provider: str,
        status: int,
        message: str,
        retry_after: float | None = None,
    ) -> None:
        rec.error = rec.error or message
        extra: dict[str, str] = {}
        if retry_after is not None:
            extra["retry-after"] = str(max(0, math.ceil(retry_after)))
            extra["retry-after-ms"] = str(int(retry_after * 1000))
        if provider == "anthropic":
            payload: dict[str, Any] = {
                "type": "error",
                "error": {"type": _anthropic_error_type(status), "message": message},
            }
        elif provider == "gemini":
            payload = {"error": {"code": status, "message": message, "status": _gemini_status(status)}}
        else:
            err_type, code = _openai_error_type(status)
            payload = {"error": {"message": message, "type": err_type, "param": None, "code": code}}
        self._send_json(h, rec, status, payload, extra)

    def _send_malformed(self, h: _Handler, rec: RecordedRequest, stream: bool) -> None:
        rec.status = 200
        rec.error = "malformed reply by script"
        h.send_response(200)
        if stream:
            data = b'event: message_start\ndata: {"type": "message_start", "message": {"id": \n\n'
            h.send_header("content-type", "text/event-stream")
        else:
            data = b'{"id": "broken", "content": [ this is not JSON'
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
        h.wfile.flush()

    def _send_sse(
        self,
        h: _Handler,
        rec: RecordedRequest,
        events: Iterator[tuple[str | None, Any]],
        done_marker: bool = False,
    ) -> None:
        rec.status = 200
        h.send_response(200)
        h.send_header("content-type", "text/event-stream")
        h.send_header("cache-control", "no-cache")
        h.send_header("request-id", f"req_scripted_{id(rec)}")
        h.end_headers()
        for name, data in events:
            if self._stopping.is_set():
                raise _ClientGone
            chunk = (f"event: {name}\n" if name else "") + f"data: {json.dumps(data, ensure_ascii=False)}\n\n"
            h.wfile.write(chunk.encode("utf-8"))
        if done_marker:
            h.wfile.write(b"data: [DONE]\n\n")
        h.wfile.flush()


# ==================================================================================================
# Request parsing: wire protocol -> Conversation
# ==================================================================================================


def parse_request(api: ApiName, body: Mapping[str, Any]) -> Conversation:
    """Turn a request body of the given API into the protocol-neutral conversation scripts match on."""
    if api == "anthropic":
        conv = _parse_anthropic(body)
    elif api == "gemini":
        conv = _parse_gemini(body)
    elif api == "chat":
        conv = _parse_chat(body)
    else:
        conv = _parse_responses(body)
    conv.request_text = "\n".join(collect_strings(body))
    conv.stream = bool(body.get("stream"))
    for pattern in _CWD_PATTERNS:
        m = pattern.search(conv.system) or pattern.search(conv.request_text)
        if m:
            conv.cwd = m.group(1).strip()
            break
    return conv


def _text_of(content: Any) -> str:
    """Text of a content value that may be a string or a list of typed parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, Mapping):
                if isinstance(p.get("text"), str):
                    parts.append(p["text"])
                elif p.get("type") in ("tool_result",) or "content" in p:
                    parts.append(_text_of(p.get("content")))
        return "\n".join(x for x in parts if x)
    return ""


def _user_message(texts: list[str]) -> Message:
    real = [strip_injected(t) for t in texts if not is_injected_text(t)]
    real = [t for t in real if t]
    if real:
        return Message("user", "\n".join(real))
    return Message("user", "\n".join(texts), injected=True)


def _parse_anthropic(body: Mapping[str, Any]) -> Conversation:
    system_parts = [_text_of(body.get("system"))]
    messages: list[Message] = []
    for m in body.get("messages") or []:
        role, content = m.get("role"), m.get("content")
        if role == "assistant":
            messages.append(Message("assistant", _text_of(content)))
        elif role == "system":
            text = _text_of(content)
            system_parts.append(text)
            messages.append(Message("system", text))
        elif isinstance(content, list) and any(
            isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content
        ):
            # Text next to tool results is always harness-injected (reminders, loaded skill bodies).
            results = [b for b in content if isinstance(b, Mapping) and b.get("type") == "tool_result"]
            messages.append(Message("tool", "\n".join(_text_of(b.get("content")) for b in results)))
        elif isinstance(content, list):
            texts = [b.get("text", "") for b in content if isinstance(b, Mapping) and b.get("type") == "text"]
            messages.append(_user_message(texts))
        else:
            messages.append(_user_message([_text_of(content)]))
    tools = []
    for t in body.get("tools") or []:
        schema = t.get("input_schema")
        if isinstance(schema, Mapping):
            tools.append(ToolSpec(str(t.get("name")), "function", dict(schema.get("properties") or {})))
        else:
            tools.append(ToolSpec(str(t.get("name")), "other"))
    return Conversation(
        api="anthropic",
        model=str(body.get("model", "")),
        system="\n".join(p for p in system_parts if p),
        tools=tools,
        messages=messages,
        request_text="",
    )


def _parse_chat(body: Mapping[str, Any]) -> Conversation:
    system_parts: list[str] = []
    messages: list[Message] = []
    for m in body.get("messages") or []:
        role, text = m.get("role"), _text_of(m.get("content"))
        if role in ("system", "developer"):
            system_parts.append(text)
            messages.append(Message("system", text))
        elif role == "assistant":
            messages.append(Message("assistant", text))
        elif role in ("tool", "function"):
            messages.append(Message("tool", text))
        else:
            messages.append(_user_message([text]))
    tools = []
    for t in body.get("tools") or []:
        if t.get("type") == "function" and isinstance(t.get("function"), Mapping):
            fn = t["function"]
            props = (fn.get("parameters") or {}).get("properties") or {}
            tools.append(ToolSpec(str(fn.get("name")), "function", dict(props)))
        elif t.get("type") == "custom" and isinstance(t.get("custom"), Mapping):
            tools.append(ToolSpec(str(t["custom"].get("name")), "custom"))
    for fn in body.get("functions") or []:  # the legacy function-calling field
        tools.append(
            ToolSpec(
                str(fn.get("name")), "function", dict((fn.get("parameters") or {}).get("properties") or {})
            )
        )
    return Conversation(
        api="chat",
        model=str(body.get("model", "")),
        system="\n".join(system_parts),
        tools=tools,
        messages=messages,
        request_text="",
    )


def _gemini_text(parts: Any) -> str:
    if isinstance(parts, str):
        return parts
    if isinstance(parts, Mapping):
        return _gemini_text(parts.get("parts"))
    if isinstance(parts, list):
        return "\n".join(
            p["text"] for p in parts if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        )
    return ""


def _parse_gemini(body: Mapping[str, Any]) -> Conversation:
    """Gemini's `generateContent` body: `contents` of user and model turns made of parts (text,
    functionCall, functionResponse), `systemInstruction`, and `tools[].functionDeclarations`."""
    system = _gemini_text(body.get("systemInstruction"))
    messages: list[Message] = [Message("system", system)] if system else []
    for c in body.get("contents") or []:
        if not isinstance(c, Mapping):
            continue
        parts = [p for p in c.get("parts") or [] if isinstance(p, Mapping)]
        if c.get("role") == "model":
            messages.append(Message("assistant", _gemini_text(parts)))
        elif any("functionResponse" in p for p in parts):
            responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
            messages.append(Message("tool", "\n".join("\n".join(collect_strings(r)) for r in responses)))
        else:
            messages.append(_user_message([p["text"] for p in parts if isinstance(p.get("text"), str)]))
    tools = []
    for t in body.get("tools") or []:
        for fd in (t.get("functionDeclarations") or []) if isinstance(t, Mapping) else []:
            schema = fd.get("parameters") or fd.get("parametersJsonSchema") or {}
            tools.append(ToolSpec(str(fd.get("name")), "function", dict(schema.get("properties") or {})))
    return Conversation(
        api="gemini", model="", system=system, tools=tools, messages=messages, request_text=""
    )


_RESPONSES_OUTPUT_ITEMS = {
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "reasoning",
    "web_search_call",
    "file_search_call",
    "computer_call",
    "image_generation_call",
    "tool_search_call",
}
_RESPONSES_TOOL_OUTPUTS = {
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "computer_call_output",
    "tool_search_output",
}


def _parse_responses(body: Mapping[str, Any]) -> Conversation:
    system_parts = [_text_of(body.get("instructions"))]
    messages: list[Message] = []
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    prev_assistant = False
    for item in items or []:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type") or ("message" if "role" in item else "")
        role = item.get("role")
        is_assistant = kind in _RESPONSES_OUTPUT_ITEMS or (kind == "message" and role == "assistant")
        if is_assistant:
            # Items of one reply are replayed back to back: together they are one assistant turn.
            text = _text_of(item.get("content")) if kind == "message" else ""
            if prev_assistant:
                last = messages[-1]
                last.text = "\n".join(x for x in (last.text, text) if x)
            else:
                messages.append(Message("assistant", text))
            prev_assistant = True
            continue
        prev_assistant = False
        if kind in _RESPONSES_TOOL_OUTPUTS:
            messages.append(Message("tool", _text_of(item.get("output"))))
        elif kind == "message" and role in ("system", "developer"):
            text = _text_of(item.get("content"))
            system_parts.append(text)
            messages.append(Message("system", text))
        elif kind == "message":
            content = item.get("content")
            texts = (
                [content]
                if isinstance(content, str)
                else [
                    p.get("text", "")
                    for p in content or []
                    if isinstance(p, Mapping) and isinstance(p.get("text"), str)
                ]
            )
            messages.append(_user_message(texts))
    tools = []
    for t in body.get("tools") or []:
        if t.get("type") == "function":
            tools.append(
                ToolSpec(
                    str(t.get("name")), "function", dict((t.get("parameters") or {}).get("properties") or {})
                )
            )
        elif t.get("type") == "custom":
            tools.append(ToolSpec(str(t.get("name")), "custom"))
        else:
            tools.append(ToolSpec(str(t.get("name") or t.get("type")), "other"))
    return Conversation(
        api="responses",
        model=str(body.get("model", "")),
        system="\n".join(p for p in system_parts if p),
        tools=tools,
        messages=messages,
        request_text="",
    )


# ==================================================================================================
# Reply rendering: step -> wire protocol
# ==================================================================================================


def _credential_digest(headers: Mapping[str, str]) -> str:
    """A digest of the key a request carried: the providers keep each account's prompt cache apart."""
    lower = {k.lower(): v for k, v in headers.items()}
    key = next(
        (lower[k] for k in ("x-api-key", "api-key", "x-goog-api-key", "authorization") if lower.get(k)), ""
    )
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _chunks(text: str) -> list[str]:
    return [text[i : i + _CHUNK] for i in range(0, len(text), _CHUNK)] or [""]


@dataclass
class _Reply:
    conv: Conversation
    selection: Selection
    text: str
    calls: list[ConcreteCall]
    cache: CacheUsage = field(default_factory=CacheUsage)
    _digest: str = field(default="", init=False)

    def __post_init__(self) -> None:
        key = "|".join(
            [
                self.conv.api,
                str(len(self.conv.messages)),
                self.selection.path,
                str(self.selection.turn),
                self.conv.last_user_text,
            ]
        )
        self._digest = hashlib.sha256(key.encode("utf-8")).hexdigest()

    def ident(self, prefix: str, n: int | None = None) -> str:
        """Ids derived from the request, so a replayed request gets the same ids."""
        return f"{prefix}_{self._digest[:24]}" + (f"{n:02d}" if n is not None else "")

    @property
    def input_tokens(self) -> int:
        return estimate_tokens(self.conv.request_text)

    @property
    def output_tokens(self) -> int:
        size = len(self.text) + sum(len(c.name) + len(c.input or c.arguments_json()) for c in self.calls)
        return max(1, tokens_in_chars(size))

    @property
    def model(self) -> str:
        return self.conv.model or "scripted-model"


def _anthropic_content(reply: _Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for i, c in enumerate(reply.calls):
        args = dict(c.arguments) if c.arguments is not None else {"input": c.input or ""}
        blocks.append({"type": "tool_use", "id": reply.ident("toolu", i), "name": c.name, "input": args})
    return blocks


def _anthropic_usage(reply: _Reply) -> dict[str, Any]:
    """``input_tokens`` is the part after the last cache breakpoint; the cached parts are reported apart."""
    cache = reply.cache
    cached = cache.read + cache.write
    return {
        "input_tokens": max(1, reply.input_tokens - cached) if cached else reply.input_tokens,
        "output_tokens": reply.output_tokens,
        "cache_creation_input_tokens": cache.write,
        "cache_read_input_tokens": cache.read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": cache.write_5m,
            "ephemeral_1h_input_tokens": cache.write_1h,
        },
    }


def _anthropic_message(reply: _Reply) -> dict[str, Any]:
    return {
        "id": reply.ident("msg"),
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": _anthropic_content(reply),
        "stop_reason": "tool_use" if reply.calls else "end_turn",
        "stop_sequence": None,
        "usage": _anthropic_usage(reply),
    }


def _anthropic_events(reply: _Reply) -> Iterator[tuple[str | None, Any]]:
    start = _anthropic_message(reply)
    start.update(content=[], stop_reason=None, usage=dict(_anthropic_usage(reply), output_tokens=1))
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(_anthropic_content(reply)):
        if block["type"] == "text":
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            for piece in _chunks(block["text"]):
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
        else:
            shell = dict(block, input={})
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": shell},
            )
            for piece in _chunks(json.dumps(block["input"], ensure_ascii=False)):
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use" if reply.calls else "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": reply.output_tokens},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _chat_tool_calls(reply: _Reply) -> list[dict[str, Any]]:
    out = []
    for i, c in enumerate(reply.calls):
        if c.kind == "custom":
            out.append(
                {
                    "id": reply.ident("call", i),
                    "type": "custom",
                    "custom": {"name": c.name, "input": c.input or ""},
                }
            )
        else:
            out.append(
                {
                    "id": reply.ident("call", i),
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments_json()},
                }
            )
    return out


def _chat_usage(reply: _Reply) -> dict[str, Any]:
    prompt = max(reply.input_tokens, reply.cache.read)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": reply.output_tokens,
        "total_tokens": prompt + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cache.read},
    }


def _chat_completion(reply: _Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
    if reply.calls:
        message["tool_calls"] = _chat_tool_calls(reply)
    return {
        "id": reply.ident("chatcmpl"),
        "object": "chat.completion",
        "created": 0,
        "model": reply.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if reply.calls else "stop",
            }
        ],
        "usage": _chat_usage(reply),
    }


def _chat_chunks(reply: _Reply, include_usage: bool) -> Iterator[tuple[str | None, Any]]:
    base = {
        "id": reply.ident("chatcmpl"),
        "object": "chat.completion.chunk",
        "created": 0,
        "model": reply.model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return dict(base, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])

    yield None, chunk({"role": "assistant", "content": ""})
    if reply.text:
        for piece in _chunks(reply.text):
            yield None, chunk({"content": piece})
    for i, call in enumerate(_chat_tool_calls(reply)):
        if call["type"] == "custom":
            yield None, chunk({"tool_calls": [dict(call, index=i)]})
            continue
        head = dict(call, index=i, function={"name": call["function"]["name"], "arguments": ""})
        yield None, chunk({"tool_calls": [head]})
        for piece in _chunks(call["function"]["arguments"]):
            yield None, chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    yield None, chunk({}, "tool_calls" if reply.calls else "stop")
    if include_usage:
        yield None, dict(base, choices=[], usage=_chat_usage(reply))


def _responses_items(reply: _Reply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": reply.ident("msg"),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}],
            }
        )
    for i, c in enumerate(reply.calls):
        if c.kind == "custom":
            items.append(
                {
                    "type": "custom_tool_call",
                    "id": reply.ident("ctc", i),
                    "call_id": reply.ident("call", i),
                    "name": c.name,
                    "input": c.input or "",
                    "status": "completed",
                }
            )
        else:
            items.append(
                {
                    "type": "function_call",
                    "id": reply.ident("fc", i),
                    "call_id": reply.ident("call", i),
                    "name": c.name,
                    "arguments": c.arguments_json(),
                    "status": "completed",
                }
            )
    return items


def _response_object(
    reply: _Reply, status: str, output: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    done = status == "completed"
    return {
        "id": reply.ident("resp"),
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": reply.model,
        "output": _responses_items(reply) if output is None else output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": None,
        "top_p": None,
        "usage": {
            "input_tokens": reply.input_tokens,
            "input_tokens_details": {"cached_tokens": reply.cache.read},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.input_tokens + reply.output_tokens,
        }
        if done
        else None,
    }


def _responses_events(reply: _Reply) -> Iterator[tuple[str | None, Any]]:
    seq = 0

    def event(event_type: str, /, **data: Any) -> tuple[str, dict[str, Any]]:
        nonlocal seq
        seq += 1
        return event_type, {"type": event_type, "sequence_number": seq - 1, **data}

    yield event("response.created", response=_response_object(reply, "in_progress", []))
    yield event("response.in_progress", response=_response_object(reply, "in_progress", []))
    items = _responses_items(reply)
    for index, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield event(
                "response.output_item.added",
                output_index=index,
                item=dict(item, status="in_progress", content=[]),
            )
            empty_part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            yield event(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=empty_part,
            )
            for piece in _chunks(text):
                yield event(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
            yield event(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            )
            yield event(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=item["content"][0],
            )
        elif item["type"] == "function_call":
            yield event(
                "response.output_item.added",
                output_index=index,
                item=dict(item, status="in_progress", arguments=""),
            )
            for piece in _chunks(item["arguments"]):
                yield event(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=piece,
                )
            yield event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                name=item["name"],
                arguments=item["arguments"],
            )
        else:
            yield event(
                "response.output_item.added",
                output_index=index,
                item=dict(item, status="in_progress", input=""),
            )
            for piece in _chunks(item["input"]):
                yield event(
                    "response.custom_tool_call_input.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=piece,
                )
            yield event(
                "response.custom_tool_call_input.done",
                item_id=item["id"],
                output_index=index,
                input=item["input"],
            )
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=_response_object(reply, "completed", items))


def _gemini_parts(text: str, calls: list[ConcreteCall]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    for c in calls:
        args = dict(c.arguments or {}) if c.kind == "function" else {"input": c.input or ""}
        parts.append({"functionCall": {"name": c.name, "args": args}})
    return parts


def _gemini_response(reply: _Reply, text: str, calls: list[ConcreteCall], *, final: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": _gemini_parts(text, calls)},
        "index": 0,
    }
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": reply.model}
    if final:
        candidate["finishReason"] = "STOP"
        out["usageMetadata"] = {
            "promptTokenCount": reply.input_tokens,
            "candidatesTokenCount": reply.output_tokens,
            "totalTokenCount": reply.input_tokens + reply.output_tokens,
        }
        out["responseId"] = reply.ident("resp")
    return out


def _gemini_chunks(reply: _Reply) -> Iterator[tuple[str | None, Any]]:
    """`streamGenerateContent?alt=sse`: the text in chunks, then the calls, the finish reason and usage."""
    chunks = _chunks(reply.text) if reply.text else []
    for piece in chunks[:-1]:
        yield None, _gemini_response(reply, piece, [], final=False)
    yield None, _gemini_response(reply, chunks[-1] if chunks else "", reply.calls, final=True)


def _gemini_status(status: int) -> str:
    return {
        400: "INVALID_ARGUMENT",
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        429: "RESOURCE_EXHAUSTED",
        503: "UNAVAILABLE",
    }.get(status, "INTERNAL")


def _anthropic_error_type(status: int) -> str:
    return {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        529: "overloaded_error",
    }.get(status, "api_error")


def _openai_error_type(status: int) -> tuple[str, str | None]:
    return {
        400: ("invalid_request_error", None),
        401: ("invalid_request_error", "invalid_api_key"),
        404: ("invalid_request_error", "unknown_url"),
        429: ("rate_limit_exceeded", "rate_limit_exceeded"),
    }.get(status, ("server_error", None))


def _default_message(status: int) -> str:
    return {
        429: "Rate limited by the scripted server.",
        500: "Internal error injected by the scripted server.",
        529: "Overloaded (injected by the scripted server).",
    }.get(status, f"HTTP {status} injected by the scripted server.")


# ==================================================================================================
# Command line
# ==================================================================================================


def main(argv: list[str] | None = None) -> int:
    """Serve a script until interrupted; prints the base URL on the first line of stdout."""
    parser = argparse.ArgumentParser(
        prog="python -m skillopt_lib.testing.scripted_server",
        description="Scripted model server (Anthropic Messages, OpenAI Chat Completions and Responses, Gemini).",
    )
    parser.add_argument("--script", type=Path, help="YAML or JSON script; without it every request gets 'OK'")
    parser.add_argument("--port", type=int, default=0, help="port to bind on 127.0.0.1 (0: a free one)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--key", default=None, help="require this API key (401 otherwise)")
    parser.add_argument("--log", type=Path, default=None, help="append each request as a JSON line here")
    args = parser.parse_args(argv)
    script = Script.from_file(args.script) if args.script else Script()
    server = ScriptedServer(script, expected_key=args.key, log_path=args.log, host=args.host, port=args.port)
    server.start()
    print(server.url, flush=True)
    print(f"OpenAI base URL: {server.base_url_openai}", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
