#!/usr/bin/env bash
# Stop the Slurm start.sh started in DIR: its jobs cancelled, then each daemon by the pid
# in its pid file (TERM, SIGKILL after 10 s); nothing else is touched.
set -uo pipefail
D=$(realpath -m "$1")
NODE=$(hostname -s)
if [ -f "$D/etc/slurm.conf" ]; then
    SLURM_CONF="$D/etc/slurm.conf" timeout 10 scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
    sleep 1  # slurmstepd ends the cancelled jobs' processes
fi
stop() {
    [ -s "$1" ] || return 0
    pid=$(cat "$1")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
    rm -f "$1"
}
stop "$D/run/slurmd-$NODE.pid"
stop "$D/run/slurmctld.pid"
stop "$D/munge/munged.pid"
