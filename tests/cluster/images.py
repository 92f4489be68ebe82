"""podman as these machines run it, and the images the pod test needs, with no registry.

- ``containers_conf``: the podman configuration written for the test (``CONTAINERS_CONF``,
  so nothing in /etc is read or changed): ``runc`` (crun fails on the cgroup v1+v2
  hybrid these machines have) and default ulimits within the hard limits (without
  CAP_SYS_RESOURCE runc cannot raise them to podman's defaults);
- ``base_image``: Debian (the host's release and apt sources) with python3, venv and git,
  made by mmdebstrap and ``podman import``, the tarball kept in ``CACHE``;
- ``agentd_image``: ``etc/container/Containerfile`` built on it from this checkout, the
  Python packages from wheels fetched on the host (``pip wheel``): no network in the build.
"""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("AGENTD_IMAGE_CACHE", "/var/cache/agentd-images"))
WHEELS = (
    Path(os.environ.get("AGENTD_TEST_CACHE", Path.home() / ".cache" / "agentd-tests")) / "wheels"
)
BASE_PACKAGES = ("python3", "python3-venv", "git", "ca-certificates")
AGENTD_IMAGE = "localhost/agentd-test:dev"
IGNORED = (".git", ".venv", "__pycache__", "*.egg-info", "build", "dist", ".*_cache")
TIMINGS: dict[str, float] = {}  # step -> seconds, for the closing report


def containers_conf(directory: Path) -> Path:
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    nofile = 1048576 if nofile == resource.RLIM_INFINITY else min(nofile, 1048576)
    nproc = 32768 if nproc == resource.RLIM_INFINITY else min(nproc, 32768)
    path = directory / "containers.conf"
    path.write_text(
        "[containers]\n"
        f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n'
        "[engine]\n"
        'runtime = "runc"\n'
    )
    return path


class Podman:
    def __init__(self, conf: Path) -> None:
        self.env = {**os.environ, "CONTAINERS_CONF": str(conf)}
        for name in ("AGENTD_TEST_OWNER", "AGENTD_MARKER_PREFIX"):  # conmon outlives calls
            self.env.pop(name, None)

    def __call__(
        self, *args: str, check: bool = True, timeout: float = 120, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["podman", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env,
            input=stdin,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
        return done

    def exists(self, what: str, name: str) -> bool:
        return self(what, "exists", name, check=False).returncode == 0


def _codename() -> str:
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            return line.split("=", 1)[1].strip('"')
    pytest.skip("not a Debian-like host: no VERSION_CODENAME in /etc/os-release")


def _sources() -> Path:
    for path in (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")):
        if path.is_file() and path.stat().st_size:
            return path
    pytest.skip("no apt sources on this host for mmdebstrap")


def base_image(podman: Podman) -> str:
    suite = _codename()
    digest = hashlib.sha256(",".join(BASE_PACKAGES).encode()).hexdigest()[:8]
    image = f"localhost/agentd-test-base:{suite}-{digest}"
    if podman.exists("image", image):
        return image
    tar = CACHE / f"{suite}-{digest}.tar"
    if not tar.is_file():
        if shutil.which("mmdebstrap") is None:
            pytest.skip("mmdebstrap is not installed: no base image (scripts/cluster-tests)")
        CACHE.mkdir(parents=True, exist_ok=True)
        partial = tar.with_suffix(".partial.tar")  # mmdebstrap picks the format by the name
        started = time.monotonic()
        made = subprocess.run(
            [
                "mmdebstrap",
                "--variant=apt",
                f"--include={','.join(BASE_PACKAGES)}",
                "--dpkgopt=path-exclude=/usr/share/man/*",
                "--dpkgopt=path-exclude=/usr/share/doc/*",
                "--dpkgopt=path-include=/usr/share/doc/*/copyright",
                "--dpkgopt=path-exclude=/usr/share/locale/*",
                suite,
                str(partial),
                str(_sources()),  # the host's own apt sources
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if made.returncode != 0:
            pytest.skip(f"mmdebstrap could not build the base image: {made.stderr[-2000:]}")
        partial.rename(tar)
        TIMINGS["mmdebstrap"] = time.monotonic() - started
    started = time.monotonic()
    podman(
        "import",
        "--change",
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "--change",
        "ENV LANG=C.UTF-8",
        str(tar),
        image,
        timeout=300,
    )
    TIMINGS["podman import"] = time.monotonic() - started
    return image


def wheels() -> Path:
    """Wheels of agentd's dependencies (and the build's), fetched on the host once."""
    WHEELS.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    argv = [
        sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", str(WHEELS),
        "--find-links", str(WHEELS), str(REPO), "setuptools>=68", "wheel",
    ]  # fmt: skip
    done = subprocess.run([*argv, "--no-index"], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:  # not all there yet: from the index
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.skip(f"pip could not fetch agentd's dependencies: {done.stderr[-2000:]}")
    TIMINGS["pip wheel"] = time.monotonic() - started
    return WHEELS


def _digest(context: Path, base: str) -> str:
    """What the build is made of: every file of ``context`` (path and bytes), and the base."""
    h = hashlib.sha256(base.encode())
    for path in sorted(p for p in context.rglob("*") if p.is_file() and not p.is_symlink()):
        h.update(str(path.relative_to(context)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def agentd_image(podman: Podman, base: str, work: Path) -> str:
    """etc/container/Containerfile built on ``base`` from this checkout (CLIS empty); not
    built again while the checkout, the wheels and the base are the same (its label)."""
    context = work / "context"
    shutil.rmtree(context, ignore_errors=True)
    shutil.copytree(REPO, context, ignore=shutil.ignore_patterns(*IGNORED))
    # its dependencies' wheels; agentd itself is installed from the source (its wheel,
    # built again at each run, differs in its timestamps only)
    shutil.copytree(wheels(), context / "wheels", ignore=shutil.ignore_patterns("agentd-*"))
    digest = _digest(context, base)
    label = '{{index .Labels "agentd.test.digest"}}'
    before = podman("image", "inspect", "--format", "{{.Id}} " + label, AGENTD_IMAGE, check=False)
    old, _, built = before.stdout.strip().partition(" ")
    if before.returncode == 0 and built == digest:
        shutil.rmtree(context)
        return AGENTD_IMAGE
    started = time.monotonic()
    podman(
        "build",
        "-q",
        "-f",
        str(context / "etc" / "container" / "Containerfile"),
        "--build-arg",
        f"BASE={base}",
        "--build-arg",
        "CLIS=",
        "--build-arg",
        "PIP_OPTIONS=--no-index --find-links /tmp/agentd-src/wheels",
        "--label",
        f"agentd.test.digest={digest}",
        "-t",
        AGENTD_IMAGE,
        str(context),
        timeout=900,
    )
    TIMINGS["podman build"] = time.monotonic() - started
    shutil.rmtree(context)
    now = podman("image", "inspect", "--format", "{{.Id}}", AGENTD_IMAGE).stdout.strip()
    if before.returncode == 0 and old and old != now:  # the previous build, untagged now
        podman("rmi", old, check=False)
    return AGENTD_IMAGE
