#!/usr/bin/env bash
# A real Slurm (Debian's slurm-wlm) on the namespace nodes of
# scripts/cluster.sh: slurmctld on this side of the bridge, one slurmd in each
# node's network namespace under the node's host name, and munge for
# authentication. Everything it writes lives in TIDE_SLURM_DIR (default
# /tmp/tide-slurm); nothing in /etc/slurm or /etc/munge is read or changed,
# so a site's own Slurm is left alone.
#
#   scripts/slurm.sh up       # the cluster must be up; replaces a Slurm left up
#   scripts/slurm.sh down     # stops every job and daemon of ours; safe to run twice
#   scripts/slurm.sh status   # exit status 0 when every node answers, 1 when not
#   scripts/slurm.sh conf     # prints the slurm.conf path (export SLURM_CONF=...)
#
# Then, as root:
#   export SLURM_CONF=$(scripts/slurm.sh conf)
#   srun -N 2 -n 4 build/examples/train_data_parallel
#   sbatch --wait examples/slurm/train.sbatch --max-steps 200
#
# What "up" makes:
#   - munged with a key of its own, its socket in DIR/munge (AuthInfo points
#     Slurm there, not to /run/munge);
#   - slurmctld in this network namespace (it listens on the bridge's
#     address, NET.254) under the host name "tidectl" (a UTS namespace of its
#     own: slurmctld must run on the host SlurmctldHost names);
#   - for each node K, slurmd in node K's network namespace under the host
#     name nodeK. The nodes share this machine's file system, so each one
#     gets its own spool and its own TmpFS (DIR/tmp/nodeK: the PMIx server
#     of a step makes its directories there, and two nodes' steps would
#     collide in one /tmp). slurmd enters only the network namespace
#     (nsenter), not "ip netns exec": that one mounts a fresh /sys without
#     /sys/fs/cgroup, and slurmd 22.05 refuses to start without it;
#   - no cgroups for jobs (proctrack/linuxproc, task/none): the nodes share
#     one kernel, and a container rarely lets cgroups be made;
#   - MpiDefault=pmix: Debian's Open MPI and Slurm share the PMIx library,
#     so `srun prog` starts MPI ranks directly.
# The nodes each declare this machine's CPUs (at least 2): they share them,
# as mpirun --oversubscribe would.
#
# TIDE_SLURM_PORT: slurmctld's port on this side, default 6917 (not Slurm's
# 6817, which a real controller on this machine may hold); slurmd uses the
# next one inside each node.
#
# Exit status: 0 done; 1 failed; 2 bad usage; 77 it cannot run here (not
# root, no cluster up, Slurm or munge not installed: scripts/setup.sh
# --slurm installs them): the Slurm tests skip on 77.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${TIDE_SLURM_DIR:-/tmp/tide-slurm}
cluster=$root/scripts/cluster.sh
cluster_dir=${TIDE_CLUSTER_DIR:-/tmp/tide-cluster}
port=${TIDE_SLURM_PORT:-6917}
ctl_name=tidectl
EX_CANNOT=77

say() { echo "slurm: $*"; }
die() { echo "slurm: $*" >&2; exit 1; }
cannot() { echo "slurm: cannot run Slurm here: $*" >&2; exit "$EX_CANNOT"; }
usage() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; }

case "$port" in ''|*[!0-9]*) echo "slurm: TIDE_SLURM_PORT must be a port number, got '$port'" >&2; exit 2 ;; esac

# Programs found on this machine, or exit 77 naming what is missing.
need_tools() {
  [ "$(id -u)" -eq 0 ] || cannot "its daemons and the namespaces need root (running as $(id -un))"
  local t missing=()
  for t in munged slurmctld slurmd srun sbatch scontrol sinfo squeue scancel nsenter unshare; do
    command -v "$t" >/dev/null || missing+=("$t")
  done
  [ ${#missing[@]} -eq 0 ] || cannot "not installed: ${missing[*]} (scripts/setup.sh --slurm installs slurmctld, slurmd, slurm-client and munge)"
}

export SLURM_CONF=$dir/slurm.conf

# live_pid FILE NAME: the process id in FILE, if that process runs and is
# NAME (a pid file left from before a restart may name someone else's).
live_pid() {
  local pid
  [ -r "$1" ] || return 1
  pid=$(cat "$1" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] && echo "$pid"
}

# wait_pid FILE NAME: waits up to 10 s for FILE to name a running NAME (the
# daemons write their pid file after they detach).
wait_pid() {
  local deadline=$((SECONDS + 10))
  until live_pid "$1" "$2" >/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

# Sends SIGTERM to the pids given, waits up to 5 s, then SIGKILL.
stop_pids() {
  [ $# -gt 0 ] || return 0
  kill "$@" 2>/dev/null || true
  local pid alive deadline=$((SECONDS + 5))
  while [ "$SECONDS" -lt "$deadline" ]; do
    alive=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" -eq 0 ] && return 0
    sleep 0.1
  done
  kill -9 "$@" 2>/dev/null || true
}

# The nodes' network namespaces, as "net:[INODE]" (what /proc/PID/ns/net
# links to).
node_nets=()
find_node_nets() {
  local ns
  node_nets=()
  for ns in $(cat "$dir/nodes" "$cluster_dir/nodes" 2>/dev/null | awk '{ print $1 }' | sort -u); do
    [ -e "/run/netns/$ns" ] && node_nets+=("net:[$(stat -L -c %i "/run/netns/$ns" 2>/dev/null || true)]")
  done
}
in_node_net() {  # in_node_net PID
  local link n
  link=$(readlink "/proc/$1/ns/net" 2>/dev/null) || return 1
  for n in "${node_nets[@]}"; do [ "$link" = "$n" ] && return 0; done
  return 1
}

# True when process $1 (in a node) is slurmd or slurmstepd or descends from
# one inside the nodes: job steps, their tasks, and slurmds whose pid file
# is gone. The ancestors are followed only while they are in a node, so the
# mpirun daemons of scripts/cluster.sh (started from this side) are left
# alone, even when all of this runs inside some outer Slurm's job.
started_by_slurm() {
  local pid=$1 stat
  while [ -n "$pid" ] && [ "$pid" -gt 1 ] && in_node_net "$pid"; do
    case "$(cat "/proc/$pid/comm" 2>/dev/null)" in slurmd|slurmstepd) return 0 ;; esac
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    stat=${stat##*) }  # the fields after "(comm) "
    pid=$(echo "$stat" | awk '{ print $2 }')
  done
  return 1
}

cmd_down() {
  need_tools
  local pid pids=() deadline
  if [ -r "$SLURM_CONF" ] && live_pid "$dir/slurmctld.pid" slurmctld >/dev/null; then
    # Jobs first, so that their tasks get Slurm's SIGTERM and their steps end.
    timeout 10 scancel --quiet --full --user=root 2>/dev/null || true
    deadline=$((SECONDS + 15))
    while [ "$SECONDS" -lt "$deadline" ]; do
      [ -z "$(timeout 5 squeue --noheader 2>/dev/null)" ] && break
      sleep 0.25
    done
  fi
  local f
  for f in "$dir"/slurmd.*.pid; do
    pid=$(live_pid "$f" slurmd) && pids+=("$pid")
  done
  pid=$(live_pid "$dir/slurmctld.pid" slurmctld) && pids+=("$pid")
  stop_pids "${pids[@]}"
  # Whatever Slurm started that still runs in the nodes goes too: a slurmd
  # whose pid file is gone, a step whose slurmd was stopped, and the step's
  # tasks. The mpirun daemons of scripts/cluster.sh run there as well and
  # are left alone.
  local stray=() p
  find_node_nets
  if [ ${#node_nets[@]} -gt 0 ]; then
    for p in /proc/[0-9]*; do
      pid=${p#/proc/}
      in_node_net "$pid" && started_by_slurm "$pid" && stray+=("$pid")
    done
  fi
  # Their Slurm is gone: nothing would come of a polite signal.
  [ ${#stray[@]} -eq 0 ] || kill -9 "${stray[@]}" 2>/dev/null || true
  pid=$(live_pid "$dir/munge/munged.pid" munged) && stop_pids "$pid"
  local count=$(( ${#pids[@]} ))
  rm -rf "$dir"
  say "down ($count Slurm daemon(s) stopped)"
}

write_conf() {
  local prefix=$1 cpus=$2 node addr
  cat >"$SLURM_CONF" <<CONF
# Written by scripts/slurm.sh up; removed by scripts/slurm.sh down.
ClusterName=tide
SlurmctldHost=$ctl_name($prefix.254)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
TmpFS=$dir/tmp/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=pmix
ReturnToService=2
# A cancelled job's tasks get SIGTERM, then SIGKILL this many seconds later.
KillWait=10
# Finished jobs stay visible to scontrol for this long.
MinJobAge=600
# A node that stops answering is marked so within SlurmdTimeout, and one that
# answers again is back within a ping (a third of it): the cluster tests cut
# a node's link for seconds.
SlurmdTimeout=30
CONF
  while read -r node addr; do
    echo "NodeName=$node NodeAddr=$addr CPUs=$cpus State=UNKNOWN" >>"$SLURM_CONF"
  done <"$dir/nodes"
  echo "PartitionName=tide Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$SLURM_CONF"
}

# True when every node of ours is idle (or allocated: jobs run).
nodes_ready() {
  local want states
  want=$(wc -l <"$dir/nodes")
  states=$(timeout 10 sinfo --noheader --node="$(awk '{ print $1 }' "$dir/nodes" | paste -sd, -)" -o '%n %t' 2>/dev/null) ||
    return 1
  [ "$(echo "$states" | awk '$2 ~ /^(idle|alloc|mix)$/' | wc -l)" -eq "$want" ]
}

cmd_up() {
  need_tools
  "$cluster" status >/dev/null 2>&1 || cannot "no namespace cluster is up (scripts/cluster.sh up 2)"
  local net prefix cpus
  net=$("$cluster" net)
  prefix=${net%.0/24}
  cpus=$(nproc)
  [ "$cpus" -ge 2 ] || cpus=2

  cmd_down >/dev/null
  mkdir -p "$dir"/{munge,state,log}
  cp "$cluster_dir/nodes" "$dir/nodes"
  # From here a failure leaves a half-made Slurm: take it down again, after
  # showing the daemons' logs.
  trap 'status=$?; trap - EXIT; if [ $status -ne 0 ]; then tail -n 20 "$dir"/log/*.log >&2 2>/dev/null || true; cmd_down >/dev/null 2>&1 || true; fi; exit $status' EXIT

  # munge: a key of our own; the key's directory is the daemon's alone, the
  # socket's must be searchable by every user.
  mkdir -p "$dir/munge/key"
  chmod 700 "$dir/munge/key"
  chmod 755 "$dir/munge"
  head -c 1024 /dev/urandom >"$dir/munge/key/munge.key"
  chmod 400 "$dir/munge/key/munge.key"
  # --force: munged refuses root (and a key under /tmp) otherwise.
  munged --force --key-file="$dir/munge/key/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/key/seed" ||
    die "munged did not start (see $dir/log/munged.log)"
  wait_pid "$dir/munge/munged.pid" munged || die "munged did not stay up (see $dir/log/munged.log)"

  write_conf "$prefix" "$cpus"
  local node
  for node in $(awk '{ print $1 }' "$dir/nodes"); do
    mkdir -p "$dir/spool/$node" "$dir/tmp/$node"
    chmod 1777 "$dir/tmp/$node"
  done

  unshare --uts sh -c 'hostname "$1" && exec slurmctld -f "$2"' sh "$ctl_name" "$SLURM_CONF" ||
    die "slurmctld did not start (see $dir/log/slurmctld.log)"
  wait_pid "$dir/slurmctld.pid" slurmctld || die "slurmctld did not stay up (see $dir/log/slurmctld.log)"
  for node in $(awk '{ print $1 }' "$dir/nodes"); do
    nsenter --net="/run/netns/$node" unshare --uts sh -c 'hostname "$1" && exec slurmd -f "$2"' sh "$node" "$SLURM_CONF" ||
      die "slurmd did not start on $node (see $dir/log/slurmd.$node.log)"
  done
  for node in $(awk '{ print $1 }' "$dir/nodes"); do
    wait_pid "$dir/slurmd.$node.pid" slurmd || die "slurmd did not stay up on $node (see $dir/log/slurmd.$node.log)"
  done

  local deadline=$((SECONDS + 30))
  until nodes_ready || [ "$SECONDS" -ge "$deadline" ]; do sleep 0.25; done
  nodes_ready || { sinfo >&2 || true; die "the nodes did not become idle within 30 s"; }
  trap - EXIT
  say "up: slurmctld at $prefix.254:$port, slurmd on $(awk '{ print $1 }' "$dir/nodes" | paste -sd' ' -), $cpus CPUs each"
  say "export SLURM_CONF=$SLURM_CONF"
}

cmd_status() {
  if ! [ -r "$SLURM_CONF" ] || ! [ -r "$dir/nodes" ]; then
    say "not up (no $SLURM_CONF; try: scripts/slurm.sh up)"
    return 1
  fi
  if ! live_pid "$dir/slurmctld.pid" slurmctld >/dev/null; then
    say "broken: slurmctld is not running (scripts/slurm.sh up starts it again)"
    return 1
  fi
  timeout 10 sinfo --noheader -o '%n %t' 2>/dev/null || true
  if nodes_ready; then
    say "up: SLURM_CONF=$SLURM_CONF"
  else
    say "broken: some nodes do not answer (scripts/slurm.sh up starts them again)"
    return 1
  fi
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  conf) echo "$SLURM_CONF" ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
