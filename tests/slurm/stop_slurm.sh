#!/usr/bin/env bash
# Stop the daemons tests/slurm/start_slurm.sh started under DIR, each by the pid in its pid file
# (never by name: other Slurm or munge daemons on the machine are not ours). A pid is signalled only
# while /proc says it is still that daemon (a reused pid belongs to someone else).
set -uo pipefail
DIR=${1:?usage: stop_slurm.sh DIR}
[ -d "$DIR" ] || exit 0

stop_pid() {  # stop_pid NAME PIDFILE
  local name=$1 file=$2 pid
  [ -f "$file" ] || return 0
  pid=$(tr -dc '0-9' < "$file")
  [ -n "$pid" ] || return 0
  ours() { [ -r "/proc/$pid/comm" ] && grep -qx "$name" "/proc/$pid/comm"; }
  ours || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 50); do ours || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
  for _ in $(seq 1 20); do ours || return 0; sleep 0.1; done
  echo "stop_slurm.sh: $name (pid $pid) did not stop" >&2
  return 1
}

# Jobs still in this cluster go first, so that no job step outlives its slurmd.
if [ -f "$DIR/slurm.conf" ] && [ -f "$DIR/slurmctld.pid" ]; then
  jobs=$(SLURM_CONF=$DIR/slurm.conf timeout 10 squeue -h -o %i 2>/dev/null | tr '\n' ' ')
  [ -n "${jobs// /}" ] && SLURM_CONF=$DIR/slurm.conf timeout 10 scancel $jobs 2>/dev/null
  for _ in $(seq 1 50); do
    [ -z "$(SLURM_CONF=$DIR/slurm.conf timeout 10 squeue -h -o %i 2>/dev/null)" ] && break
    sleep 0.2
  done
fi

rc=0
stop_pid slurmd "$DIR/slurmd.pid" || rc=1
stop_pid slurmctld "$DIR/slurmctld.pid" || rc=1
stop_pid munged "$DIR/munge/munged.pid" || rc=1
exit $rc
