#!/usr/bin/env bash
# A private one-node Slurm for the tests, as root: munged, slurmctld and slurmd with all
# their state, keys, sockets, logs and pid files in DIR (nothing in /etc/slurm, /run/munge
# or /var/spool). Prints "export SLURM_CONF=DIR/etc/slurm.conf"; stop.sh DIR stops it.
# Needs Debian's slurmctld slurmd slurm-client munge. Env: SLURM_TEST_CRED_EXPIRE (5 s:
# a requeued job may start again cred_expire + 1 s after; Slurm's default is 120 s),
# SLURM_TEST_CTLD_PORT, SLURM_TEST_D_PORT.
set -euo pipefail
D=$(realpath -m "$1")
NODE=$(hostname -s)
mkdir -p "$D"/{etc,munge,state,spool,log,run} "$D/spool/slurmd-$NODE"
chmod 711 "$D/munge"  # munged warns unless others can reach its socket
if [ ! -s "$D/munge/munge.key" ]; then
    dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$D/munge/munge.key"
fi
munged --force --socket="$D/munge/munge.socket.2" --key-file="$D/munge/munge.key" \
    --pid-file="$D/munge/munged.pid" --log-file="$D/log/munged.log" \
    --seed-file="$D/munge/munged.seed"
CPUS=$(nproc)
MEM=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
cat > "$D/etc/slurm.conf" <<CONF
ClusterName=agentd-test
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=${SLURM_TEST_CTLD_PORT:-16817}
SlurmdPort=${SLURM_TEST_D_PORT:-16818}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.socket.2,cred_expire=${SLURM_TEST_CRED_EXPIRE:-5}
MailProg=/bin/true
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/slurmd-%n
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd-%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$D/log/jobcomp.txt
MinJobAge=3600
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
JobRequeue=1
SchedulerParameters=sched_interval=2,bf_interval=1
MessageTimeout=10
InactiveLimit=0
KillWait=30
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF="$D/etc/slurm.conf"
slurmctld -i -f "$SLURM_CONF"  # -i: no state from an earlier run of DIR
slurmd -f "$SLURM_CONF"
deadline=$(( $(date +%s) + 30 ))
state=""
while [ "$(date +%s)" -lt "$deadline" ]; do
    state=$(timeout 3 sinfo -h -n "$NODE" -o %T 2>/dev/null || true)
    case "$state" in idle*|mix*|alloc*) echo "export SLURM_CONF=$SLURM_CONF"; exit 0 ;; esac
    sleep 0.2
done
echo "slurm did not come up (node $NODE: ${state:-no answer}); see $D/log/" >&2
exit 1
