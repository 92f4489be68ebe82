"""The exported Job's pod under a real container runtime: Debian's podman (runc) and an
image built from etc/container/Containerfile, `podman kube play` of the Job's pod
template with the PVC as a volume (tests/cluster/images.py makes both, no registry).

What podman does not do, the harness (``Job``) does as the Job controller and the
kubelet would: podman 4.3 ignores `kind: Job`, so the pod template is lifted into a
Pod; the PVC's volume is made by the first play only (podman refuses it twice);
`terminationGracePeriodSeconds` is not applied, so `podman pod stop -t` gets it; the
kubelet's /dev/termination-log (a file mode 0666) and the repo the init container
clones (a git server) are host files mounted in; and whether a new pod follows is
decided by `podfailure.job_goes_on`, the table-tested rules of the Job's policy.
Everything else is the exported manifest as `agentctl export kubernetes` wrote it.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from filelock import FileLock

from agentd.export import podfailure
from agentd.export.podfailure import PodEnd
from tests.cluster.gate import require
from tests.cluster.images import TIMINGS, Podman, agentd_image, base_image, containers_conf
from tests.export.kube import agentctl, by_kind, documents, git_repo
from tests.support import poll_for, write_unit

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]
# the images are built by one process at a time (xdist's workers, other checkouts' runs):
# the second finds the first's (images.agentd_image)
BUILD_LOCK = Path(tempfile.gettempdir()) / "agentd-podman-images.lock"

SECRET, KEY_VALUE = f"agentd-test-keys-{os.getpid()}", "s3cr3t-value"  # this process's

# The stand-in agent, in the repo the init container clones: one step per session, its
# progress in the state dir; step 2 waits, the first time, for an eviction (TERM).
AGENT = r"""
import json, os, signal, sys, time

state = os.environ["AGENTD_STATE_DIR"]
progress = os.path.join(state, "progress.json")
try:
    steps = json.load(open(progress))
except (OSError, ValueError):
    steps = []
evicted = os.path.join(state, "evicted")
with open("sessions.jsonl", "a") as f:
    f.write(json.dumps({
        "session": int(os.environ["AGENTD_SESSION"]),
        "reason": os.environ.get("AGENTD_RESTART_REASON"),
        "steps": steps,
        "key": os.environ.get("FAKE_API_KEY") == "s3cr3t-value",
        "uid": os.getuid(),
    }) + "\n")
if len(steps) == 1 and not os.path.exists(evicted):
    def on_term(sig, frame):
        open(evicted, "w").close()
        sys.exit(0)
    signal.signal(signal.SIGTERM, on_term)
    open("waiting-at-step-2", "w").close()  # its TERM handler is in place
    while True:
        time.sleep(1)
with open(progress + ".tmp", "w") as f:
    json.dump(steps + ["step-%d" % (len(steps) + 1)], f)
os.replace(progress + ".tmp", progress)
sys.exit(0 if len(steps) + 1 >= 3 else 42)
"""


class Job:
    """One exported unit's Job, run pod after pod as the Job controller would."""

    def __init__(self, podman: Podman, docs: list[dict[str, Any]], work: Path, repo: Path) -> None:
        self.podman, self.work = podman, work
        [self.job] = by_kind(docs, "Job")
        [claim] = by_kind(docs, "PersistentVolumeClaim")
        self.claim = claim["metadata"]["name"]
        self.name = self.job["metadata"]["name"]
        self.container = f"{self.name}-{podfailure.CONTAINER}"
        self.grace = int(self.job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"])
        self.termination = work / "termination-log"
        self.counted = 0
        self.pods: list[dict[str, Any]] = []
        pod = self._pod(repo)
        self.first = [d for d in docs if d["kind"] != "Job"] + [pod]
        self.again = [d for d in self.first if d["kind"] != "PersistentVolumeClaim"]

    def _pod(self, repo: Path) -> dict[str, Any]:
        template = json.loads(json.dumps(self.job["spec"]["template"]))
        spec = template["spec"]
        spec["volumes"] += [
            {"name": "repo", "hostPath": {"path": str(repo), "type": "Directory"}},
            {"name": "termination", "hostPath": {"path": str(self.termination), "type": "File"}},
        ]
        [prepare] = spec["initContainers"]
        prepare["volumeMounts"].append({"name": "repo", "mountPath": str(repo), "readOnly": True})
        [agent] = spec["containers"]
        agent["volumeMounts"].append({"name": "termination", "mountPath": "/dev/termination-log"})
        meta = {**template["metadata"], "name": self.name}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}

    def play(self) -> None:
        """A new pod (the first one makes the PVC's volume)."""
        self.termination.write_text("")
        self.termination.chmod(0o666)  # as the kubelet makes it
        docs = self.first if not self.podman.exists("volume", self.claim) else self.again
        path = self.work / "pod.yaml"
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        started = time.monotonic()
        self.podman("kube", "play", "--replace", str(path))
        TIMINGS.setdefault("kube play", time.monotonic() - started)

    def stop(self, grace: int) -> PodEnd:
        """An eviction: SIGTERM, SIGKILL after ``grace`` seconds (0: at once)."""
        started = time.monotonic()
        self.podman("pod", "stop", "-t", str(grace), self.name, timeout=grace + 60)
        TIMINGS[f"pod stop -t {grace}"] = time.monotonic() - started
        return self._ended(disrupted=True)

    def wait(self, timeout: float = 120) -> PodEnd:
        """Until the agentd container exits by itself."""
        self.podman("wait", self.container, timeout=timeout)
        return self._ended(disrupted=False)

    def _ended(self, *, disrupted: bool) -> PodEnd:
        code = self.podman("inspect", self.container, "--format", "{{.State.ExitCode}}")
        end = PodEnd(
            {"prepare": 0, podfailure.CONTAINER: int(code.stdout.strip())},
            {podfailure.DISRUPTION: "True"} if disrupted else {},
        )
        self.pods.append({"end": end, "message": self.termination.read_text(), "logs": self.logs()})
        return end

    def goes_on(self, end: PodEnd) -> str:
        rules, limit = (
            self.job["spec"]["podFailurePolicy"]["rules"],
            self.job["spec"]["backoffLimit"],
        )
        then = podfailure.job_goes_on(rules, end, self.counted, limit)
        if podfailure.verdict(rules, end) == "Count":
            self.counted += 1
        return then

    def logs(self) -> str:
        """What agentd said (podman logs gives the container's stderr on its stderr)."""
        said = self.podman("logs", self.container, check=False)
        return said.stdout + "\n".join(
            line for line in said.stderr.splitlines() if "failed to connect to syslog" not in line
        )

    @property
    def volume(self) -> Path:
        found = self.podman("volume", "inspect", self.claim, "--format", "{{.Mountpoint}}")
        return Path(found.stdout.strip())

    def remove(self) -> None:
        self.podman("pod", "rm", "-f", "-t", "0", self.name, check=False)
        names = [self.claim, self.name, f"{self.name}-run"]
        self.podman("volume", "rm", "-f", *names, check=False)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Podman, str]]:
    require("podman", "runc")
    work = tmp_path_factory.mktemp("podman")
    podman = Podman(containers_conf(work))
    info = podman("info", "--format", "{{.Host.OCIRuntime.Name}}", check=False)
    if info.returncode != 0:
        pytest.skip(f"podman does not work here: {info.stderr.strip()[-500:]}")
    with FileLock(BUILD_LOCK, timeout=1800):
        image = agentd_image(podman, base_image(podman), work)
    podman("secret", "rm", SECRET, check=False)
    value = base64.b64encode(KEY_VALUE.encode()).decode()
    podman("secret", "create", SECRET, "-", stdin=json.dumps({"FAKE_API_KEY": value}))
    yield podman, image
    podman("secret", "rm", SECRET, check=False)
    print(f"\npodman timings: { ({k: round(v, 2) for k, v in TIMINGS.items()}) }")


def _exported(
    home: Path, tmp_path: Path, unit: str, image: str
) -> tuple[list[dict[str, Any]], Path]:
    """A unit whose workdir is a clone of a bare repo (the 'git server') holding the agent."""
    bare = tmp_path / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    work = git_repo(home / "work", str(bare))
    (work / "agent.py").write_text(AGENT)
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    for args in (["add", "agent.py"], ["commit", "-qm", "agent"], ["push", "-q", "origin", "HEAD"]):
        subprocess.run(["git", "-C", str(work), *args], check=True, env={**os.environ, **env})
    shutil.chown(bare, 1000, 1000)
    for path in bare.rglob("*"):
        os.chown(path, 1000, 1000)  # the git server's files are its own user's, not root's
    write_unit(
        home,
        unit,
        {
            "command": ["python3", "agent.py"],
            "env": {"FAKE_API_KEY": KEY_VALUE, "MODE": "test"},
            "restart": {"min_uptime": "0s", "delay": "100ms", "max_delay": "1s"},
            "stop": {"grace": "5s"},
        },
    )
    res = agentctl(home, "export", "kubernetes", unit, "--image", image, "--secret", SECRET)
    assert res.returncode == 0, res.stderr
    assert KEY_VALUE not in res.stdout
    return documents(res.stdout), bare


def _sessions(job: Job) -> list[dict[str, Any]]:
    path = job.volume / "work" / "sessions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _history(job: Job, unit: str) -> list[dict[str, Any]]:
    path = job.volume / "home" / "logs" / unit / "history.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_evicted_pod_exits_75_and_the_next_pod_carries_on_to_done(
    runtime: tuple[Podman, str], home: Path, tmp_path: Path
) -> None:
    podman, image = runtime
    unit = "podunit"
    docs, bare = _exported(home, tmp_path, unit, image)
    job = Job(podman, docs, tmp_path, bare)
    try:
        job.play()  # pod 1: the init container clones the repo and installs the unit
        poll_for(
            lambda: (job.volume / "work" / "waiting-at-step-2").exists(),
            timeout=60,
            what="session 2 waiting",
        )
        end = job.stop(job.grace)  # evicted: SIGTERM, the grace, then SIGKILL
        assert end.exit_codes["agentd"] == 75, job.pods[-1]["logs"]
        assert json.loads(job.pods[-1]["message"]) == {
            "unit": unit,
            "state": "interrupted",
            "reason": "interrupted:SIGTERM",
            "sessions": 2,
            "restarts": 1,
            "exit_code": 75,
        }
        kept = json.loads((job.volume / "home" / "lifecycle" / f"{unit}.json").read_text())
        assert kept["state"] == "interrupted"
        assert job.goes_on(end) == "replace"

        job.play()  # pod 2: the same volume, so it resumes where pod 1 stopped
        end = job.wait()
        assert end.exit_codes["agentd"] == 0, job.pods[-1]["logs"]
        assert json.loads(job.pods[-1]["message"])["state"] == "done"
        assert job.goes_on(end) == "complete"
        got = [(s["session"], s["reason"], s["steps"]) for s in _sessions(job)]
        assert got == [
            (1, "start", []),
            (2, "exit:42", ["step-1"]),
            (3, "interrupted:SIGTERM", ["step-1"]),  # the saved step, session numbers on
            (4, "exit:42", ["step-1", "step-2"]),
        ]
        assert all(s["key"] and s["uid"] == 1000 for s in _sessions(job))  # the Secret's
        starts = [r for r in _history(job, unit) if r["kind"] == "start"]
        assert [r["session"] for r in starts] == [1, 2, 3, 4]

        job.play()  # pod 3, recreated after the unit finished: nothing runs again
        end = job.wait()
        assert end.exit_codes["agentd"] == 0
        said = poll_for(job.logs, timeout=10, what="the third pod's log")
        assert f"{unit} is done already" in said, job.pods[-1]
        assert len(_sessions(job)) == 4
        assert [r for r in _history(job, unit) if r["kind"] == "start"] == starts
        assert json.loads(job.pods[-1]["message"])["sessions"] == 4
    finally:
        job.remove()


def test_a_pod_killed_without_grace_loses_only_the_running_session(
    runtime: tuple[Podman, str], home: Path, tmp_path: Path
) -> None:
    """Hard eviction (0 s): agentd gets no chance to write anything, yet what it wrote
    before is on the volume (fsync'd): the next pod closes the lost session and numbers
    the next one after it."""
    podman, image = runtime
    unit = "hardkill"
    docs, bare = _exported(home, tmp_path, unit, image)
    job = Job(podman, docs, tmp_path, bare)
    try:
        job.play()
        poll_for(lambda: len(_sessions(job)) == 2, timeout=60, what="session 2 running")
        end = job.stop(0)
        assert end.exit_codes["agentd"] == 137  # SIGKILL: no termination message
        assert job.pods[-1]["message"] == ""
        assert job.goes_on(end) == "replace"  # DisruptionTarget: not counted
        job.play()
        poll_for(lambda: len(_sessions(job)) == 3, timeout=60, what="session 3")
        third = _sessions(job)[2]
        assert third["session"] == 3 and third["steps"] == ["step-1"]
        ends = [r for r in _history(job, unit) if r["kind"] == "end"]
        assert [(r["session"], r["reason"]) for r in ends][:2] == [
            (1, "exit:42"),
            (2, "agentd-lost"),
        ]
    finally:
        job.remove()
