#!/usr/bin/env bash
# slurm-down.sh DIR: stop the daemons that slurm-up.sh DIR started (by their pids).
dir=$1
for d in slurmd slurmctld; do
  if [ -f "$dir/$d.bgpid" ]; then
    pid=$(cat "$dir/$d.bgpid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
done
