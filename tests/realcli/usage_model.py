"""Fake models that report the token usage a test chooses, request by request.

The servers stay the unmodified copies of the workplace's ``shared/realcli``
fakes; this module only rewrites the ``usage`` they put in each response
(its JSON body or its SSE events) on its way out, with the numbers of
``chosen(k)`` for the k-th model request, and keeps a list of what was
really sent (``reported``): a request that got an error sent no usage and is
not in it. Every request reports different numbers, so a response counted
twice or missed shows in a sum.

Each API says the same numbers in its own words (``Reported`` holds them as
the disjoint parts agentd records): Anthropic's ``input_tokens`` leave the
cache reads and writes out; OpenAI's ``input_tokens``/``prompt_tokens`` and
Gemini's ``promptTokenCount`` include the cached ones; OpenAI's output
includes the reasoning tokens, Gemini's ``candidatesTokenCount`` does not
(its ``thoughtsTokenCount`` is beside it).
"""

from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, BinaryIO

from tests.realcli import fake_anthropic as fa
from tests.realcli import fake_gemini as fg
from tests.realcli import fake_openai as fo
from tests.realcli.model import _BASE as _ANTHROPIC_BASE
from tests.realcli.model import FakeModel
from tests.realcli.model import _Handler as _AnthropicBrainHandler
from tests.realcli.openai_model import _BASE as _OPENAI_BASE
from tests.realcli.openai_model import FakeOpenAI
from tests.realcli.openai_model import _Handler as _OpenAIBrainHandler
from tests.realcli.served import ServedModel

_GEMINI_BASE = json.loads(json.dumps(fg.CONFIG))  # the defaults, before any test changed them


@dataclass(frozen=True)
class Reported:
    """What one response reported, as agentd records it: ``input`` is the part of the
    prompt not read from a cache, ``output`` includes the reasoning."""

    input: int
    output: int
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0  # of output


def chosen(k: int) -> Reported:
    """The usage of the k-th model request (1-based): different for every request."""
    return Reported(
        input=1000 * k + 17,
        output=40 * k + 3,
        cache_read=300 * k + 5,
        cache_write=70 * k + 1,
        reasoning=k,
    )


def total(reported: list[Reported]) -> dict[str, int]:
    """The sums of ``reported``, by field."""
    out = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "reasoning": 0}
    for r in reported:
        for key, value in asdict(r).items():
            out[key] += value
    return out


# -- each API's words for the same numbers ----------------------------------------------
def anthropic_usage(r: Reported) -> dict[str, int]:
    return {
        "input_tokens": r.input,
        "cache_creation_input_tokens": r.cache_write,
        "cache_read_input_tokens": r.cache_read,
        "output_tokens": r.output,
    }


def responses_usage(r: Reported) -> dict[str, Any]:
    """OpenAI Responses (Codex): no cache writes in this API."""
    prompt = r.input + r.cache_read
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": r.cache_read},
        "output_tokens": r.output,
        "output_tokens_details": {"reasoning_tokens": r.reasoning},
        "total_tokens": prompt + r.output,
    }


def chat_usage(r: Reported) -> dict[str, Any]:
    """OpenAI Chat Completions (aider, through litellm)."""
    prompt = r.input + r.cache_read
    return {
        "prompt_tokens": prompt,
        "completion_tokens": r.output,
        "total_tokens": prompt + r.output,
        "prompt_tokens_details": {"cached_tokens": r.cache_read},
    }


def gemini_usage(r: Reported) -> dict[str, int]:
    prompt = r.input + r.cache_read
    return {
        "promptTokenCount": prompt,
        "cachedContentTokenCount": r.cache_read,
        "candidatesTokenCount": r.output - r.reasoning,
        "thoughtsTokenCount": r.reasoning,
        "totalTokenCount": prompt + r.output,
    }


Patch = Callable[[dict[str, Any], Reported], bool]  # rewrites one JSON object; True if it did


def _patch_anthropic(obj: dict[str, Any], r: Reported) -> bool:
    kind = obj.get("type")
    if kind == "message_start":  # the stream's first event: input and cache, 1 output so far
        obj["message"]["usage"] = {**anthropic_usage(r), "output_tokens": 1}
        return True
    if kind == "message_delta":  # the final output count
        obj["usage"] = {"output_tokens": r.output}
        return True
    if kind == "message" and "usage" in obj:  # not streamed
        obj["usage"] = anthropic_usage(r)
        return True
    return False


def _patch_openai(obj: dict[str, Any], r: Reported) -> bool:
    response = obj.get("response")
    if obj.get("type") == "response.completed" and isinstance(response, dict):
        response["usage"] = responses_usage(r)
        return True
    if obj.get("object") == "response" and obj.get("usage"):
        obj["usage"] = responses_usage(r)
        return True
    if str(obj.get("object", "")).startswith("chat.completion") and obj.get("usage"):
        obj["usage"] = chat_usage(r)
        return True
    return False


def _patch_gemini(obj: dict[str, Any], r: Reported) -> bool:
    if "usageMetadata" in obj:
        obj["usageMetadata"] = gemini_usage(r)
        return True
    return False


_CHUNK = re.compile(rb"([0-9a-f]+)\r\n(.*)\r\n\Z", re.S)


class _Rewriting:
    """The handler's ``wfile`` while it answers one model request: the usage in the
    ``data:`` lines of the SSE chunks it writes is replaced (a whole JSON body is
    rewritten before its length is taken: ``_Reporting._send_json``)."""

    def __init__(self, raw: BinaryIO, handler: _Reporting) -> None:
        self.raw = raw
        self.handler = handler

    def write(self, data: bytes) -> int:
        chunk = _CHUNK.match(data)
        if chunk is not None:  # one SSE chunk of a chunked response
            payload = self._sse(chunk.group(2))
            data = b"%x\r\n%s\r\n" % (len(payload), payload)
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()

    def _json(self, data: bytes) -> bytes | None:
        try:
            obj = json.loads(data)
        except ValueError:
            return None
        return json.dumps(obj).encode() if self.handler._rewrite(obj) else None

    def _sse(self, payload: bytes) -> bytes:
        lines = payload.split(b"\n")
        for i, line in enumerate(lines):
            if line.startswith(b"data: "):
                text, _, tail = line[6:].partition(b"\r")
                patched = self._json(text)
                if patched is not None:
                    lines[i] = b"data: " + patched + (b"\r" + tail if _ else b"")
        return b"\n".join(lines)


class _Reporting(BaseHTTPRequestHandler):
    """Mixed into a fake's handler: every model request reports ``chosen(k)``."""

    patch: Patch
    model_paths: re.Pattern[str]

    def do_POST(self) -> None:
        self._report: Reported | None = None
        self._said = False
        size = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(size) if size else b""
        try:
            self._body: Any = json.loads(raw) if raw else None
        except ValueError:
            self._body = None
        self.rfile = io.BytesIO(raw)  # hand the body on to the fake, unread
        if self.model_paths.search(self.path.split("?")[0]):
            server = self.server
            with server.report_lock:  # type: ignore[attr-defined]
                server.requests_seen += 1  # type: ignore[attr-defined]
                self._report = chosen(server.requests_seen)  # type: ignore[attr-defined]
        out = self.wfile
        self.wfile = _Rewriting(out, self)  # type: ignore[assignment]
        try:
            super().do_POST()  # type: ignore[misc]
        finally:
            self.wfile = out

    def _send_json(self, code: int, obj: Any) -> None:  # Anthropic's and OpenAI's fakes
        if isinstance(obj, dict):
            self._rewrite(obj)
        super()._send_json(code, obj)  # type: ignore[misc]

    def _json(self, code: int, obj: Any) -> None:  # Gemini's fake
        if isinstance(obj, dict):
            self._rewrite(obj)
        super()._json(code, obj)  # type: ignore[misc]

    def _rewrite(self, obj: dict[str, Any]) -> bool:
        report = getattr(self, "_report", None)
        if report is None or not type(self).patch(obj, report):
            return False
        if not self._said:  # once per response, however many events carry it
            self._said = True
            with self.server.report_lock:  # type: ignore[attr-defined]
                self.server.reported.append(report)  # type: ignore[attr-defined]
                self.server.asked.append((self.path, self._body))  # type: ignore[attr-defined]
        return True


class _Anthropic(_Reporting, _AnthropicBrainHandler):
    patch = staticmethod(_patch_anthropic)
    model_paths = re.compile(r"^/v1/messages$")


class _OpenAI(_Reporting, _OpenAIBrainHandler):
    patch = staticmethod(_patch_openai)
    model_paths = re.compile(r"/(?:responses|chat/completions)$")


class _Gemini(_Reporting, fg.Handler):
    patch = staticmethod(_patch_gemini)
    model_paths = re.compile(r":(?:streamGenerateContent|generateContent)$")
    brain = None


def _reporting(server: Any) -> None:
    server.report_lock = threading.Lock()
    server.requests_seen = 0
    server.reported = []
    server.asked = []  # (path, body) of each request in ``reported``, in the same order


class _Reports:
    server: Any

    @property
    def reported(self) -> list[Reported]:
        """The usage each response really carried, in the order they were sent."""
        with self.server.report_lock:
            return list(self.server.reported)

    def reported_for(self, which: Callable[[str, Any], bool]) -> list[Reported]:
        """What the responses to the requests ``which(path, body)`` picks carried."""
        with self.server.report_lock:
            pairs = list(zip(self.server.reported, self.server.asked, strict=True))
        return [r for r, (path, body) in pairs if which(path, body)]


class UsageAnthropic(_Reports, FakeModel):
    """``model.FakeModel`` (brain and all) whose responses report ``chosen(k)``."""

    def __init__(self, log: Path, brain: Any = None) -> None:
        ServedModel.__init__(self, fa, _ANTHROPIC_BASE, log, _Anthropic, brain)
        _reporting(self.server)


class UsageOpenAI(_Reports, FakeOpenAI):
    """``openai_model.FakeOpenAI`` (Codex's tool calls; Chat Completions for aider)
    whose responses report ``chosen(k)``."""

    def __init__(self, log: Path, brain: Any = None) -> None:
        ServedModel.__init__(self, fo, _OPENAI_BASE, log, _OpenAI, brain)
        _reporting(self.server)


class UsageGemini(_Reports, ServedModel):
    """``fake_gemini.py`` (scripted by its ``script`` setting) reporting ``chosen(k)``."""

    def __init__(self, log: Path, **config: Any) -> None:
        super().__init__(fg, {**_GEMINI_BASE, **config}, log, _Gemini, None)
        _reporting(self.server)
