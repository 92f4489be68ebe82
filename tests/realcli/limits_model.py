"""The fake Anthropic model (``model.py``) that also sends rate-limit headers, so
that the real Claude Code draws its own usage-limit lines.

``fake_anthropic.py`` sends no headers of its own; Claude Code composes
`You've hit your 5-hour limit · resets 3:55pm (America/Los_Angeles)` from the
``anthropic-ratelimit-unified-*`` headers of a 429, and only for a client it
takes for a subscriber or a gateway:

- 2.1.332 takes ``ANTHROPIC_BASE_URL`` for a gateway when ``ANTHROPIC_AUTH_TOKEN``
  is a JWT whose audience is ``claude-gateway`` (it reads the payload, no
  signature): ``gateway_token()``;
- 2.1.197 reads them only for a claude.ai login: ``oauth_credentials()`` is a
  fake one for a temporary HOME (inference still goes to ``ANTHROPIC_BASE_URL``).

With neither (an API key), the same 429 is ``API Error: Request rejected (429) ·
MESSAGE``.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

from tests.realcli.model import Brain, FakeModel, _Handler

RATE_LIMITED = {"status": 429, "type": "rate_limit_error", "message": "fake rate limit message"}


def limit_headers(claim: str | None, reset: float, **more: str) -> dict[str, str]:
    """The headers of a rejected request: ``claim`` (``five_hour``, ``seven_day``...,
    None for none) resets at epoch ``reset``; no retry."""
    headers = {
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": str(int(reset)),
        "x-should-retry": "false",
        "retry-after": str(max(1, int(reset - time.time()))),
        **{f"anthropic-ratelimit-unified-{k.replace('_', '-')}": v for k, v in more.items()},
    }
    if claim is not None:
        headers["anthropic-ratelimit-unified-representative-claim"] = claim
    return headers


def gateway_token() -> str:
    """An unsigned JWT with ``aud: claude-gateway``."""

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    payload = {"aud": "claude-gateway", "exp": 4102444800, "sub": "fake-user"}
    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(payload)}.fakesig"


def oauth_credentials(home: Path) -> None:
    """A fake claude.ai (Max) login in ``home``: Claude Code then reads the limit headers."""
    creds = {
        "claudeAiOauth": {
            "accessToken": "sk-ant-oat01-fakefakefake",
            "refreshToken": "sk-ant-ort01-fakefakefake",
            "expiresAt": 4102444800000,
            "scopes": ["user:inference", "user:profile", "user:sessions:claude_code"],
            "subscriptionType": "max",
            "rateLimitTier": "default_claude_max_5x",
        }
    }
    path = home / ".claude" / ".credentials.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(creds), encoding="utf-8")
    path.chmod(0o600)


class _HeadersHandler(_Handler):
    """Adds ``CONFIG["error_headers"]`` to every error answer of /v1/messages."""

    def send_response(self, code: int, message: str | None = None) -> None:
        self._code = code
        super().send_response(code, message)

    def end_headers(self) -> None:
        from tests.realcli import fake_anthropic as fa

        if self.path.split("?")[0] == "/v1/messages" and getattr(self, "_code", 200) >= 400:
            with fa.LOCK:
                extra = dict(fa.CONFIG.get("error_headers") or {})
            for key, value in extra.items():
                self.send_header(key, value)
        super().end_headers()


class LimitModel(FakeModel):
    """The fake model whose error answers carry ``error_headers``."""

    def __init__(self, log: Path, brain: Brain | None = None) -> None:
        super().__init__(log, brain)
        self.server.RequestHandlerClass = type(
            "Handler",
            (_HeadersHandler,),
            {"brain": staticmethod(brain) if brain else None},
        )
