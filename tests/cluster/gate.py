"""When the podman and Slurm tests run, and what they need.

They install nothing themselves and take minutes on a fresh machine (a Debian image
built with mmdebstrap, a private Slurm), so they run only when AGENTD_CLUSTER_TESTS=1:
`scripts/cluster-tests` (which .ci/run calls after the suite) installs the packages and
sets it. Without it, or without the tools, each test skips saying why."""

from __future__ import annotations

import os
import shutil

import pytest

ENV = "AGENTD_CLUSTER_TESTS"
# what the runner of scripts/cluster-tests must not leak into daemons it starts
TEST_ENV = ("AGENTD_TEST_OWNER", "AGENTD_MARKER_PREFIX")


def require(*tools: str) -> None:
    """Skip (saying why) unless the cluster tests are asked for and ``tools`` are here."""
    if os.environ.get(ENV) != "1":
        pytest.skip(f"the podman and Slurm tests run with {ENV}=1 (scripts/cluster-tests)")
    if os.geteuid() != 0:
        pytest.skip("the podman and Slurm tests run as root (as CI does)")
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"not installed: {' '.join(missing)} (scripts/cluster-tests installs them)")


def clean_env() -> dict[str, str]:
    """This environment without the test run's markers (for daemons that outlive a test)."""
    return {k: v for k, v in os.environ.items() if k not in TEST_ENV}
