"""A fake model server (``fake_anthropic.py`` or ``fake_openai.py``, both copies of
the workplace's ``shared/realcli`` servers) run in a thread of the test process.

Both servers keep their settings in a module-level ``CONFIG`` guarded by ``LOCK``
and log every request to a JSONL file; this is the one place that starts one on
127.0.0.1, resets its settings, reads its log and stops it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import ModuleType
from typing import Any, Self


class ServedModel:
    """One fake model server on 127.0.0.1, in a thread of this process; it serves
    from construction until ``close`` (or the end of its ``with`` block)."""

    def __init__(
        self,
        api: ModuleType,
        defaults: dict[str, Any],
        log: Path,
        handler: type[BaseHTTPRequestHandler],
        brain: Callable[..., Any] | None,
    ) -> None:
        """``handler`` has a class attribute ``brain``: each server gets its own."""
        self._api = api
        with api.LOCK:
            api.CONFIG.clear()
            api.CONFIG.update(json.loads(json.dumps(defaults)))
        handler = type("Handler", (handler,), {"brain": staticmethod(brain) if brain else None})
        self.server = api.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.server.log_path = str(log)
        log.touch()
        self.log = log
        self.port: int = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def control(self, **config: Any) -> None:
        with self._api.LOCK:
            self._api.CONFIG.update(json.loads(json.dumps(config)))

    def requests(self) -> list[dict[str, Any]]:
        with self._api.LOCK:  # the server writes each line under it: none is read half-written
            lines = self.log.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def summaries(self) -> list[dict[str, Any]]:
        return [r for r in self.requests() if r.get("note") == "summary"]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)
