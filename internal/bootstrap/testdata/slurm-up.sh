#!/usr/bin/env bash
# slurm-up.sh DIR CTLD_PORT SLURMD_PORT: start a one-node Slurm cluster for tests.
#
# Writes DIR/slurm.conf (auth/none, cred/none, one node "localhost" on 127.0.0.1,
# no accounting, no cgroups), starts slurmctld and slurmd in the foreground
# mode (-D) in the background with their logs in DIR, waits until the node is
# idle, and prints "SLURM_CONF=DIR/slurm.conf". Needs root (slurmd runs jobs as
# their submitting user). slurm-down.sh DIR stops both daemons.
set -euo pipefail
dir=$1 ctld_port=$2 slurmd_port=$3
mkdir -p "$dir/state" "$dir/spool"
cpus=$(nproc)
cat > "$dir/slurm.conf" <<CONF
ClusterName=ptltest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
MpiParams=ports=$((slurmd_port + 1))-$((slurmd_port + 100))
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
NodeName=localhost NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >"$dir/slurmctld.out" 2>&1 &
echo $! >"$dir/slurmctld.bgpid"
slurmd -D -N localhost -f "$SLURM_CONF" >"$dir/slurmd.out" 2>&1 &
echo $! >"$dir/slurmd.bgpid"
for _ in $(seq 1 100); do
  if sinfo -h -o %T -n localhost 2>/dev/null | grep -qx idle; then
    echo "SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.2
done
echo "slurm-up: node not idle after 20 s" >&2
tail -n 20 "$dir"/slurmctld.log "$dir"/slurmd.log "$dir"/*.out >&2 || true
exit 1
