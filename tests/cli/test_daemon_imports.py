"""What the daemon does not load: OpenSSL's libcrypto for digests Python has built in
(hashlib and hmac, which pydantic imports through secrets, are imported without it),
importlib.metadata for pydantic plugins its models do not take."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_agentd_imports import imported
from tests.support import write_unit


def test_the_daemon_hashes_without_openssl(tmp_path: Path) -> None:
    write_unit(tmp_path, "quick", {"command": ["true"], "workdir": str(tmp_path)})
    got = imported(["run", "-q", "quick"], tmp_path, AGENTD_HOME=str(tmp_path))
    assert {"agentd.supervisor.service", "hashlib", "hmac"} <= got
    assert "_hashlib" not in got
    assert "importlib.metadata" not in got
