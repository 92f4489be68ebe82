"""A unit as a Slurm batch job: an sbatch script that runs ``agentd run`` and
requeues itself when the run was interrupted.

- ``--requeue``: the job may go back to the queue (after a node failure, a
  preemption, or when the script asks); ``--open-mode=append``: every run of
  the job appends to the one output file (``--output``, in the unit's logs,
  which the export creates: Slurm opens it before the script runs);
- ``--signal=B:TERM@N``: N seconds before the time limit Slurm sends SIGTERM
  to the batch shell (only to it: ``B:``), which passes it on to ``agentd
  run``; N is the unit's ``stop.grace`` plus ``MARGIN`` (Slurm may send it up
  to a minute early);
- exit 75 (interrupted, state saved) -> ``scontrol requeue $SLURM_JOB_ID``:
  the same job id runs again and the next ``agentd run`` carries on; only
  while the job is still ``RUNNING`` (the time limit's warning, ``scancel
  --signal=TERM --batch``): a job that ``scancel`` or a preemption ends is
  ``COMPLETING`` already, and a person's cancel is not undone.
  Any other status is the job's (0: COMPLETED; 1 and 78: FAILED).

``agentd run`` is started in the background and waited for, so that the
shell's trap can pass SIGTERM, SIGINT and SIGHUP on, and the wait is
repeated until agentd has exited (a trapped signal interrupts ``wait``).
The script names this agentd and the unit's file by absolute path: compute
nodes must see both (a shared home). ``--time`` comes from the unit's limits
when they bound its run (``kubernetes.deadline``), else the partition's.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping

from agentd import exitcodes
from agentd.config.unit import Unit
from agentd.export.kubernetes import ExportError, deadline
from agentd.paths import Paths

MARGIN = 30  # s of the signal's lead beyond stop.grace (agentd's margin and Slurm's tick)


def script(
    unit: Unit,
    paths: Paths,
    *,
    agentd: str,
    env: Mapping[str, str],
    lead: int | None = None,
    time_limit: int | None = None,
) -> str:
    """The sbatch script for ``unit`` as ``agentd`` (a path) runs it with ``paths``;
    ``env``: the environment that placed ``paths`` (its AGENTD_HOME, XDG_* are kept)."""
    if unit.source is None:
        raise ExportError(f"{unit.name}: a unit without a file cannot be run by sbatch")
    least = math.ceil(unit.stop.grace) + MARGIN
    if lead is not None and lead < least:
        raise ExportError(
            f"{unit.name}: --grace {lead}s is too short: agentd needs the unit's stop.grace "
            f"({unit.stop.grace:g}s) and {MARGIN}s more; give at least {least}"
        )
    lead = least if lead is None else lead
    limit = deadline(unit) if time_limit is None else (time_limit or None)
    logs = paths.unit_logs(unit.name)
    q = shlex.quote
    head = [
        "#!/bin/bash",
        f"# {unit.name}: `agentd run` as a Slurm batch job (agentctl export slurm).",
        f"# Submit it with sbatch; follow it with squeue --name=agentd-{unit.name}, sacct,",
        f"# and {logs}/slurm-JOBID.out (every run of the job, appended).",
        f"#SBATCH --job-name=agentd-{unit.name}",
        "#SBATCH --requeue",
        "#SBATCH --open-mode=append",
        f"#SBATCH --output={logs}/slurm-%j.out",
        f"#SBATCH --signal=B:TERM@{lead}",
    ]
    if limit:
        head.append(f"#SBATCH --time={_minutes(limit)}")
    exports = [
        f"export {name}={q(env[name])}"
        for name in ("AGENTD_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME")
        if env.get(name)
    ]
    body = f"""
set -u
{chr(10).join(exports) if exports else "# (agentd's home: the XDG directories of the job's user)"}
export AGENTD_TERMINATION_LOG={q(str(logs / "slurm-termination.json"))}
agentd={q(agentd)}
unit={q(str(unit.source))}

run=$(( ${{SLURM_RESTART_COUNT:-0}} + 1 ))
echo "agentd: job ${{SLURM_JOB_ID:-?}} run $run on $(hostname) at $(date -u +%FT%TZ)"
"$agentd" run "$unit" &
child=$!
for sig in TERM INT HUP; do
    trap "kill -s $sig $child 2>/dev/null" "$sig"
done
# A trapped signal ends `wait` early (status > 128): wait again until agentd has exited.
while :; do
    code=0
    wait "$child" || code=$?
    if [ "$code" -le 128 ] || ! kill -0 "$child" 2>/dev/null; then
        break
    fi
done
if [ "$code" -gt 128 ]; then  # the trap's status, or agentd's own if it died of a signal
    last=0
    wait "$child" 2>/dev/null || last=$?
    [ "$last" -ne 127 ] && code=$last
fi
echo "agentd: exited $code at $(date -u +%FT%TZ)"
if [ "$code" -eq {exitcodes.INTERRUPTED} ] && [ -n "${{SLURM_JOB_ID:-}}" ]; then
    # RUNNING: the signal was the time limit's warning or `scancel --batch`; a job that
    # scancel or a preemption ends is COMPLETING already, and stays ended
    state=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | grep -o 'JobState=[A-Z_]*')
    case "$state" in
        JobState=RUNNING)
            echo "agentd: interrupted, state saved: requeueing job $SLURM_JOB_ID"
            # Slurm ends this script as it requeues the job; if it is still here, it did not
            if scontrol requeue "$SLURM_JOB_ID"; then sleep 60; fi
            echo "agentd: the job was not requeued" ;;
        *) echo "agentd: the job is ending (${{state#JobState=}}): not requeued" ;;
    esac
fi
exit "$code"
"""
    return "\n".join(head) + "\n" + body


def _minutes(seconds: int) -> str:
    """``--time``'s ``D-HH:MM:SS`` form, rounded up to a minute."""
    minutes = math.ceil(seconds / 60)
    days, rest = divmod(minutes, 24 * 60)
    return f"{days}-{rest // 60:02d}:{rest % 60:02d}:00"
