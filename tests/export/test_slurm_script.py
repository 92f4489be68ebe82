"""`agentctl export slurm`: the sbatch script's directives, and its logic run for real
with bash and the real `agentd run`, a stand-in `scontrol` only (Slurm's own run of the
script is tests/cluster/test_slurm.py): TERM passed on, exit 75 requeued unless the job
is cancelled, other statuses kept."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.export.kube import agentctl
from tests.support import fake, poll_for, records, write_unit

SCONTROL = """#!/bin/sh
echo "$*" >> "$SCONTROL_LOG"
case "$1" in
    show) echo "JobId=$3 JobName=agentd-x JobState=${FAKE_JOB_STATE:-RUNNING} Reason=None" ;;
    requeue) kill -KILL "$PPID" ;;  # as slurmctld does: the batch script ends at once
esac
"""


def _script(home: Path, *args: str) -> str:
    res = agentctl(home, "export", "slurm", *args)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_the_directives_ask_for_requeue_append_and_an_early_term(home: Path) -> None:
    write_unit(home, "sl", {"command": fake("exit:0"), "stop": {"grace": "10s"}})
    text = _script(home, "sl")
    lines = text.splitlines()
    assert lines[0] == "#!/bin/bash"
    directives = [line for line in lines if line.startswith("#SBATCH")]
    assert directives == [
        "#SBATCH --job-name=agentd-sl",
        "#SBATCH --requeue",
        "#SBATCH --open-mode=append",
        f"#SBATCH --output={home}/logs/sl/slurm-%j.out",
        "#SBATCH --signal=B:TERM@40",  # stop.grace 10 s + 30
    ]
    assert f"export AGENTD_HOME={home}" in text
    assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
    write_unit(
        home,
        "capped",
        {
            "command": fake("exit:0"),
            "restart": {"max_sessions": 2},
            "limits": {"session_timeout": "1h"},
        },
    )
    # 2 x (1h + 10s + 5m) + 10m = 8420 s, rounded up to minutes
    assert "#SBATCH --time=0-02:21:00" in _script(home, "capped")
    assert "#SBATCH --time=0-00:05:00" in _script(home, "capped", "--time", "5m")
    short = agentctl(home, "export", "slurm", "sl", "--grace", "20s")
    assert short.returncode == 1 and "give at least 40" in short.stderr


def _run(
    home: Path, tmp_path: Path, script: str, *, state: str = "RUNNING"
) -> subprocess.Popen[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "scontrol").write_text(SCONTROL)
    (bin_dir / "scontrol").chmod(0o755)
    path = tmp_path / "job.sbatch"
    path.write_text(script)
    env = dict(
        os.environ,
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        SLURM_JOB_ID="4242",
        SCONTROL_LOG=str(tmp_path / "scontrol.log"),
        FAKE_JOB_STATE=state,
    )
    return subprocess.Popen(
        ["bash", str(path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _scontrol(tmp_path: Path) -> list[str]:
    log = tmp_path / "scontrol.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("state", "code", "calls"),
    [
        ("RUNNING", -signal.SIGKILL, ["show job 4242", "requeue 4242"]),  # requeued
        ("COMPLETING", 75, ["show job 4242"]),  # scancel: not undone
    ],
    ids=["requeued", "cancelled"],
)
def test_term_reaches_agentd_and_exit_75_requeues_the_job(
    home: Path, tmp_path: Path, state: str, code: int, calls: list[str]
) -> None:
    rec = tmp_path / "rec.jsonl"
    write_unit(home, "sl", {"command": fake(f"record:{rec}", "wait"), "stop": {"grace": "2s"}})
    job = _run(home, tmp_path, _script(home, "sl"), state=state)
    try:
        poll_for(lambda: records(rec), what="the session")
        job.send_signal(signal.SIGTERM)  # scancel --signal=TERM --batch, or --signal=B:TERM@N
        out, _ = job.communicate(timeout=30)
    finally:
        if job.poll() is None:
            job.kill()
            job.communicate()
    assert job.returncode == code, out
    assert "agentd: exited 75" in out, out
    assert _scontrol(tmp_path) == calls
    lifecycle = (home / "lifecycle" / "sl.json").read_text()
    assert '"interrupted"' in lifecycle


@pytest.mark.parametrize(("step", "code"), [("exit:0", 0), ("exit:3", 1)])
def test_other_statuses_are_the_jobs_and_nothing_is_requeued(
    home: Path, tmp_path: Path, step: str, code: int
) -> None:
    write_unit(home, "sl", {"command": fake(step), "restart": {"on_failure": False}})
    job = _run(home, tmp_path, _script(home, "sl"))
    out, _ = job.communicate(timeout=60)
    assert job.returncode == code, out
    assert f"agentd: exited {code}" in out and _scontrol(tmp_path) == []
    assert "agentd: job 4242 run 1 on" in out
