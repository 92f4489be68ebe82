"""The exported sbatch script under a real Slurm: Debian's slurmctld, slurmd and munge on
this machine, started by the test in a temporary directory (tests/cluster/slurm/). The
script is `agentctl export slurm`'s, submitted with sbatch as it was written."""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock

from tests.cluster.gate import clean_env, require
from tests.export.kube import agentctl
from tests.support import fake, poll_for, records, write_unit

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
# one private Slurm at a time on this machine (its ports are fixed): xdist's workers
# (scripts/cluster-tests gives each file one: --dist loadfile), other checkouts' runs
PORTS_LOCK = Path(tempfile.gettempdir()) / "agentd-slurm-tests.lock"
HERE = Path(__file__).resolve().parent / "slurm"
TIMINGS: dict[str, float] = {}


class Slurm:
    def __init__(self, conf: str) -> None:
        self.env = {**clean_env(), "SLURM_CONF": conf}

    def run(self, *argv: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=30, env=env or self.env
        )
        assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr}"
        return done.stdout

    def submit(self, script: Path, test_env: dict[str, str]) -> str:
        """sbatch from the test's environment (the job's processes carry the test's
        markers, so one left behind fails the test)."""
        import os

        env = {**os.environ, "SLURM_CONF": self.env["SLURM_CONF"], **test_env}
        return self.run("sbatch", "--parsable", str(script), env=env).strip().split(";")[0]

    def job(self, job: str) -> dict[str, str]:
        text = self.run("scontrol", "show", "job", "-o", job)
        return dict(re.findall(r"(\w+)=(\S*)", text))

    def until(self, job: str, *states: str, timeout: float = 120) -> dict[str, str]:
        return poll_for(
            lambda: (j := self.job(job)).get("JobState") in states and j,
            timeout=timeout,
            interval=0.2,
            what=f"job {job} {'|'.join(states)}",
        )


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slurm]:
    require("slurmctld", "slurmd", "munged", "sbatch", "scontrol", "scancel")
    directory = tmp_path_factory.mktemp("slurm")
    ports = FileLock(PORTS_LOCK)
    ports.acquire(timeout=300)
    started = time.monotonic()
    up = subprocess.run(
        [str(HERE / "start.sh"), str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),  # its daemons outlive each test: no test markers on them
    )
    try:
        if up.returncode != 0:
            pytest.skip(f"Slurm does not start here: {up.stderr[-1500:]}")
        TIMINGS["start"] = time.monotonic() - started
        yield Slurm(up.stdout.strip().split("=", 1)[1])
    finally:
        started = time.monotonic()
        subprocess.run([str(HERE / "stop.sh"), str(directory)], timeout=120, env=clean_env())
        TIMINGS["stop"] = time.monotonic() - started
        ports.release()
        print(f"\nslurm timings: { ({k: round(v, 2) for k, v in TIMINGS.items()}) }")


def _script(home: Path, unit: str) -> Path:
    res = agentctl(home, "export", "slurm", unit, "--out", str(home / f"{unit}.sbatch"))
    assert res.returncode == 0, res.stderr
    return home / f"{unit}.sbatch"


def _output(home: Path, unit: str, job: str) -> str:
    return (home / "logs" / unit / f"slurm-{job}.out").read_text()


def test_a_unit_that_ends_done_completes_the_job(slurm: Slurm, home: Path) -> None:
    write_unit(home, "ok", {"command": fake("out:working", "exit:0")})
    started = time.monotonic()
    job = slurm.submit(_script(home, "ok"), {"AGENTD_HOME": str(home)})
    done = slurm.until(job, "COMPLETED", "FAILED", "CANCELLED")
    TIMINGS["submit to COMPLETED"] = time.monotonic() - started
    out = _output(home, "ok", job)
    assert done["JobState"] == "COMPLETED" and done["ExitCode"] == "0:0", out
    assert done["Restarts"] == "0"
    assert "agentd: exited 0" in out and "ok done after 1 session(s)" in out


def test_term_mid_run_requeues_and_the_next_run_carries_on_to_completed(
    slurm: Slurm, home: Path, tmp_path: Path
) -> None:
    rec = tmp_path / "rec.jsonl"
    write_unit(
        home,
        "rq",
        {"command": fake(f"record:{rec}", "if-session:1:wait", "exit:0"), "stop": {"grace": "3s"}},
    )
    job = slurm.submit(_script(home, "rq"), {"AGENTD_HOME": str(home)})
    poll_for(lambda: records(rec), timeout=60, what="session 1 in the job")
    started = time.monotonic()
    slurm.run("scancel", "--signal=TERM", "--batch", job)  # as --signal=B:TERM@N does
    requeued = slurm.until(job, "PENDING", "COMPLETED", "FAILED", "CANCELLED")
    assert requeued["JobState"] == "PENDING" and requeued["Restarts"] == "1", requeued
    done = slurm.until(job, "COMPLETED", "FAILED", "CANCELLED")
    TIMINGS["TERM to COMPLETED after a requeue"] = time.monotonic() - started
    out = _output(home, "rq", job)
    assert done["JobState"] == "COMPLETED" and done["ExitCode"] == "0:0", out
    assert done["Restarts"] == "1"
    # one output file for both runs (--open-mode=append), the same job id
    assert f"agentd: job {job} run 1 on" in out and f"agentd: job {job} run 2 on" in out
    assert "agentd: exited 75" in out and f"requeueing job {job}" in out
    assert "agentd: exited 0" in out
    got = [(r["session"], r["reason"]) for r in records(rec)]
    assert got == [("1", "start"), ("2", "interrupted:SIGTERM")]  # carried on


def test_a_cancelled_job_is_not_requeued(slurm: Slurm, home: Path, tmp_path: Path) -> None:
    """scancel sends TERM too, but a person's cancel is not undone by the requeue."""
    rec = tmp_path / "rec.jsonl"
    write_unit(home, "cx", {"command": fake(f"record:{rec}", "wait"), "stop": {"grace": "3s"}})
    job = slurm.submit(_script(home, "cx"), {"AGENTD_HOME": str(home)})
    poll_for(lambda: records(rec), timeout=60, what="the session in the job")
    slurm.run("scancel", job)
    done = slurm.until(job, "CANCELLED", "COMPLETED", "FAILED", "PENDING")
    assert done["JobState"] == "CANCELLED" and done["Restarts"] == "0", done
    poll_for(
        lambda: "the job is ending (COMPLETING): not requeued" in _output(home, "cx", job),
        timeout=30,
        what="the script's last words",
    )
    assert slurm.job(job)["JobState"] == "CANCELLED"
    assert '"interrupted"' in (home / "lifecycle" / "cx.json").read_text()
