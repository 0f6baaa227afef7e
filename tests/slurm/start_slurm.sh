#!/usr/bin/env bash
# A one-node Slurm cluster under DIR, for the tests of the slurm executor (and for trying it by hand).
#
#   tests/slurm/start_slurm.sh DIR      # configure and start munged, slurmctld, slurmd under DIR
#   export SLURM_CONF=DIR/slurm.conf    # the last line printed: what clients and jobs must use
#   tests/slurm/stop_slurm.sh DIR       # stop the daemons this script started, by their pids
#
# It installs nothing: Debian's `slurm-wlm` and `munge` must be there (`.ci/run` installs them when
# it runs as root). It must run as root: slurmctld and slurmd run as root (SlurmUser=root) and
# munged as the munge user. Everything it writes is under DIR: a fresh munge key and munged's own
# socket (a munged already running on the machine is left alone), slurm.conf, state, spool, logs,
# pid files. Ports are chosen free. On any failure it prints one line saying why (and the daemon's
# log tail) to stderr, stops what it started, and exits non-zero.
set -euo pipefail

die() { echo "start_slurm.sh: $*" >&2; "$(dirname "$0")/stop_slurm.sh" "$DIR" >/dev/null 2>&1 || true; exit 1; }

DIR=${1:?usage: start_slurm.sh DIR}
[ "$(id -u)" = 0 ] || { echo "start_slurm.sh: must run as root (slurmctld/slurmd run as root, munged as munge)" >&2; exit 1; }
for tool in munged slurmctld slurmd sinfo sbatch squeue scontrol; do
  command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin command -v "$tool" >/dev/null \
    || { echo "start_slurm.sh: $tool not found (apt-get install -y slurm-wlm munge)" >&2; exit 1; }
done
export PATH=$PATH:/usr/sbin
id munge >/dev/null 2>&1 || { echo "start_slurm.sh: no munge user (apt-get install -y munge)" >&2; exit 1; }

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
# munged (as munge) must reach its folder; it refuses folders others may write to.
chmod 755 "$DIR"
mkdir -p "$DIR/munge" "$DIR/state" "$DIR/spool" "$DIR/log"
chown munge:munge "$DIR/munge"
chmod 755 "$DIR/munge"  # its socket must be reachable by everyone; the key inside stays 0400

# ---- munged: its own key and socket ----------------------------------------------------------
MUNGE_SOCKET=$DIR/munge/munge.socket
if [ ! -f "$DIR/munge/munge.key" ]; then
  dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
  chown munge:munge "$DIR/munge/munge.key"
  chmod 400 "$DIR/munge/munge.key"
fi
runuser -u munge -- munged --socket="$MUNGE_SOCKET" --key-file="$DIR/munge/munge.key" \
  --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" --seed-file="$DIR/munge/munged.seed" \
  || die "munged did not start: $(tail -n 3 "$DIR/munge/munged.log" 2>/dev/null | tr '\n' ' ')"
for _ in $(seq 1 50); do [ -S "$MUNGE_SOCKET" ] && break; sleep 0.1; done
[ -S "$MUNGE_SOCKET" ] || die "munged made no socket at $MUNGE_SOCKET"

# ---- slurm.conf ------------------------------------------------------------------------------
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
CTLD_PORT=$(free_port)
SLURMD_PORT=$(free_port)
while [ "$SLURMD_PORT" = "$CTLD_PORT" ]; do SLURMD_PORT=$(free_port); done
HOST=$(hostname -s)
CPUS=$(nproc)
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
cat > "$DIR/slurm.conf" <<CONF
# Written by tests/slurm/start_slurm.sh: one node, no accounting (sacct has nothing to say).
ClusterName=rocmperf
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
KillWait=5
MinJobAge=5
NodeName=$HOST CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$DIR/slurm.conf

# ---- slurmctld, slurmd -----------------------------------------------------------------------
slurmctld -c -f "$SLURM_CONF" || die "slurmctld did not start: $(tail -n 3 "$DIR/log/slurmctld.log" 2>/dev/null | tr '\n' ' ')"
slurmd -f "$SLURM_CONF" || die "slurmd did not start: $(tail -n 3 "$DIR/log/slurmd.log" 2>/dev/null | tr '\n' ' ')"
for _ in $(seq 1 100); do
  sinfo -h -o %T 2>/dev/null | grep -qx idle && break
  sleep 0.2
done
sinfo -h -o %T 2>/dev/null | grep -qx idle \
  || die "the node did not come up idle: $(sinfo -h -o '%T %E' 2>&1 | head -1); $(tail -n 2 "$DIR/log/slurmd.log" 2>/dev/null | tr '\n' ' ')"
echo "export SLURM_CONF=$SLURM_CONF"
