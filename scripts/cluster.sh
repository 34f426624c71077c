#!/usr/bin/env bash
# A cluster of N "nodes" on this one machine, for running tide across hosts:
# each node is a network namespace (node1..nodeN) with its own address, and
# the nodes talk TCP over veth pairs on a Linux bridge. The filesystem is
# shared, so a program has the same path on every node.
#
#   scripts/cluster.sh up [N]   # N >= 1 nodes, default 2; replaces a cluster left up
#   scripts/cluster.sh down     # removes all of it; safe to run twice, or after a failed up
#   scripts/cluster.sh status   # exit status 0 when a cluster is up, 1 when not
#   scripts/cluster.sh agent    # prints the rsh agent's path (for tiderun --rsh-agent)
#   scripts/cluster.sh net      # prints the cluster's network (for tiderun --net)
#   scripts/cluster.sh link NODE down|up
#                               # cuts NODE off the bridge (its veth end on this
#                               # side down: the other nodes and mpirun lose it,
#                               # packets vanish, nothing is refused), or mends it
#
# Then, for example (as root, with OMPI_ALLOW_RUN_AS_ROOT=1 and
# OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 set for mpirun):
#   launch/tiderun -np 4 -H node1:2,node2:2 --rsh-agent "$(scripts/cluster.sh agent)" \
#     --net "$(scripts/cluster.sh net)" --bind-to none build/examples/bench_allreduce
# (--bind-to none: the nodes share this machine's cores.)
#
# What "up" makes, all of it named so that "down" removes exactly that:
#   - namespaces node1..nodeN, each with loopback up and one veth end "tide0"
#     at NET.K (node K);
#   - a bridge "tidebr0" at NET.254 in this (the launching) namespace, which
#     the other veth ends "tidehK" join: mpirun runs here, its daemons on the
#     nodes reach it there;
#   - "NET.K nodeK" lines in /etc/hosts between "# tide-cluster begin" and
#     "# tide-cluster end" (the namespaces share /etc/hosts);
#   - in TIDE_CLUSTER_DIR (default /tmp/tide-cluster): "rsh-agent", the
#     program Open MPI starts its daemons with instead of ssh, "nodes", one
#     "name address" line per node, written before each is made, and "net".
#   The agent runs a command in node K's namespace under the host name nodeK
#   (a UTS namespace of its own; see write_agent).
#
# TIDE_CLUSTER_NET: the network, a private /24 of the project's own,
# default 10.201.37.0/24. It must not be in use on this machine.
#
# Exit status: 0 done; 1 failed; 2 bad usage; 77 this machine or user cannot
# make namespaces (not root, no "ip" command, or the kernel refuses): tests
# that need the cluster skip on 77.
set -euo pipefail

net=${TIDE_CLUSTER_NET:-10.201.37.0/24}
dir=${TIDE_CLUSTER_DIR:-/tmp/tide-cluster}
bridge=tidebr0
node_if=tide0          # the veth end inside each namespace
hosts_file=/etc/hosts
mark_begin="# tide-cluster begin (scripts/cluster.sh; \"cluster.sh down\" removes these lines)"
mark_end="# tide-cluster end"
EX_CANNOT=77

say() { echo "cluster: $*"; }
die() { echo "cluster: $*" >&2; exit 1; }
cannot() { echo "cluster: cannot make namespace nodes here: $*" >&2; exit "$EX_CANNOT"; }

usage() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; }

# NET as "a.b.c.0/24" -> prefix "a.b.c".
net_prefix() {
  local re='^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.0/24$'
  [[ "$net" =~ $re ]] || { echo "cluster: TIDE_CLUSTER_NET must be a /24 written a.b.c.0/24, got '$net'" >&2; exit 2; }
  echo "${net%.0/24}"
}

need_rights() {
  [ "$(id -u)" -eq 0 ] || cannot "network namespaces need root (running as $(id -un))"
  command -v ip >/dev/null || cannot "no 'ip' command (Debian package iproute2)"
}

# Namespaces that are ours: the ones listed in the state file, and any
# "nodeK" that holds our veth end (found even if the state file is gone).
our_namespaces() {
  local ns
  {
    if [ -r "$dir/nodes" ]; then awk '{ print $1 }' "$dir/nodes"; fi
    for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^node[0-9]+$/ { print $1 }'); do
      if ip -n "$ns" link show "$node_if" >/dev/null 2>&1; then echo "$ns"; fi
    done
  } | sort -u
}

ns_exists() { ip netns list 2>/dev/null | awk -v n="$1" '$1 == n { f = 1 } END { exit !f }'; }

# True when namespace $1 reaches address $2 over TCP: a connection to a port
# nobody listens on is refused at once by a reachable host (no ping needed).
reaches() {
  local out
  out=$(timeout 3 ip netns exec "$1" bash -c "exec 3<>/dev/tcp/$2/9" 2>&1) || [[ "$out" == *refused* ]]
}

# /etc/hosts without our block: the markers and, between them, lines of the
# form "ADDRESS nodeK" (anything else there is kept, so a block cut short
# cannot take other lines with it). Written back in place, not renamed over:
# in a container /etc/hosts is often a bind mount.
remove_hosts_block() {
  [ -w "$hosts_file" ] || return 0
  awk -v b="${mark_begin%% (*}" 'index($0, b) == 1 { f = 1 } END { exit !f }' "$hosts_file" || return 0
  local kept
  kept=$(awk -v b="${mark_begin%% (*}" -v e="$mark_end" '
    index($0, b) == 1 { inside = 1; next }
    inside && $0 == e { inside = 0; next }
    inside && $0 ~ /^[0-9.]+[ \t]+node[0-9]+[ \t]*$/ { next }
    { print }' "$hosts_file")
  printf '%s\n' "$kept" >"$hosts_file"
}

cmd_down() {
  need_rights
  local ns link removed=0
  for ns in $(our_namespaces); do
    if ns_exists "$ns"; then
      ip netns delete "$ns" && removed=$((removed + 1))
    fi
  done
  # Deleting a namespace deletes its veth end and so the pair; these are
  # left only by an up that stopped between creating a pair and moving it.
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | grep -E '^tideh[0-9]+$' || true); do
    ip link delete "$link" 2>/dev/null || true
  done
  if ip link show "$bridge" >/dev/null 2>&1; then ip link delete "$bridge"; fi
  remove_hosts_block
  rm -f "$dir/nodes" "$dir/net" "$dir/rsh-agent"
  rmdir "$dir" 2>/dev/null || true
  say "down ($removed namespace(s) removed)"
}

write_agent() {
  # Open MPI's rsh launcher runs "AGENT [ssh options] HOST WORD..." and, like
  # ssh, expects the words to be joined with spaces and run by a shell on
  # HOST (they carry their own quoting). Here HOST is a namespace (or one of
  # the cluster's addresses) and the shell runs inside it; the environment
  # passes through, as the agent runs on this machine.
  #
  # Each node also gets a host name of its own (a UTS namespace): Open MPI
  # names its session directory in /tmp (with the hwloc topology file in
  # it) and its shared-memory segments in /dev/shm after the host name
  # ("vader_segment.HOST.UID.JOBID.LOCALRANK"), and the nodes share /tmp,
  # /dev/shm and, by default, the machine's name. With one name (Open MPI
  # 4.1.4), daemons crashed in hwloc_shmem_topology_write, and ranks crashed
  # in the shared-memory transport: local rank 0 of node1 and of node2
  # mapped the same segment file.
  cat >"$dir/rsh-agent" <<AGENT
#!/bin/sh
# rsh agent of the tide namespace cluster, written by scripts/cluster.sh up.
#   rsh-agent [-x] [-l USER] HOST COMMAND...  runs COMMAND with sh in namespace HOST,
#   under the host name HOST
while [ \$# -gt 0 ]; do
  case "\$1" in
    -l|-p|-o|-i|-F) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ \$# -ge 2 ] || { echo "tide rsh-agent: usage: rsh-agent HOST COMMAND..." >&2; exit 255; }
host=\$1
shift
# An address of the cluster stands for its node.
node=\$(awk -v h="\$host" '\$1 == h || \$2 == h { print \$1; exit }' "$dir/nodes" 2>/dev/null)
[ -n "\$node" ] || { echo "tide rsh-agent: '\$host' is not a node of the cluster (see $dir/nodes)" >&2; exit 255; }
exec ip netns exec "\$node" unshare --uts sh -c 'echo "\$0" >/proc/sys/kernel/hostname && exec sh -c "\$1"' "\$node" "\$*"
AGENT
  chmod 755 "$dir/rsh-agent"
}

cmd_up() {
  local n=${1:-2}
  case "$n" in ''|*[!0-9]*) echo "cluster: up needs a number of nodes, got '$n'" >&2; exit 2 ;; esac
  [ "$n" -ge 1 ] && [ "$n" -le 253 ] || { echo "cluster: 1 to 253 nodes, got $n" >&2; exit 2; }
  local prefix
  prefix=$(net_prefix)
  need_rights
  [ -w "$hosts_file" ] || cannot "$hosts_file is not writable"

  # Leftovers of ours go first; anything else in the way stops us.
  cmd_down >/dev/null
  local k ns used
  for k in $(seq "$n"); do
    ns_exists "node$k" && die "a namespace node$k exists and is not this cluster's; remove it or use fewer nodes"
    if awk -v h="node$k" '!/^[[:space:]]*#/ { for (i = 2; i <= NF; ++i) if ($i == h) f = 1 } END { exit !f }' "$hosts_file"; then
      die "$hosts_file already names a host node$k"
    fi
  done
  used=$(ip -o -4 addr show 2>/dev/null | awk -v p="$prefix." '{ split($4, a, "/"); if (index(a[1], p) == 1) print $2 }' | sort -u)
  [ -z "$used" ] || die "network $net is in use here (on $(echo "$used" | tr '\n' ' ')); set TIDE_CLUSTER_NET to another /24"

  mkdir -p "$dir"
  : >"$dir/nodes"
  echo "$net" >"$dir/net"
  # From here a failure leaves a half-made cluster: take it down again.
  trap 'status=$?; trap - EXIT; if [ $status -ne 0 ]; then cmd_down >/dev/null 2>&1 || true; fi; exit $status' EXIT

  if ! err=$(ip netns add node1 2>&1); then
    cannot "'ip netns add node1' failed: $err"
  fi
  echo "node1 $prefix.1" >>"$dir/nodes"
  if ! err=$(ip link add "$bridge" type bridge 2>&1); then
    cannot "'ip link add $bridge type bridge' failed: $err"
  fi
  ip addr add "$prefix.254/24" dev "$bridge"
  ip link set "$bridge" up
  for k in $(seq "$n"); do
    ns=node$k
    if [ "$k" -gt 1 ]; then
      echo "$ns $prefix.$k" >>"$dir/nodes"
      ip netns add "$ns"
    fi
    if ! err=$(ip link add "tideh$k" type veth peer name "$node_if" netns "$ns" 2>&1); then
      cannot "'ip link add ... type veth' failed: $err"
    fi
    ip link set "tideh$k" master "$bridge"
    ip link set "tideh$k" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$prefix.$k/24" dev "$node_if"
    ip -n "$ns" link set "$node_if" up
  done

  remove_hosts_block
  {
    echo "$mark_begin"
    awk '{ print $2, $1 }' "$dir/nodes"
    echo "$mark_end"
  } >>"$hosts_file"
  write_agent

  # Every node reaches the launching side (mpirun) and the last node.
  for k in $(seq "$n"); do
    reaches "node$k" "$prefix.254" || die "node$k cannot reach $prefix.254 over the bridge"
    reaches "node$k" "$prefix.$n" || die "node$k cannot reach node$n at $prefix.$n"
  done
  trap - EXIT
  say "up: $n node(s) on $net (node1..node$n at $prefix.1..$prefix.$n, this side $prefix.254)"
  say "agent: $dir/rsh-agent"
}

cmd_status() {
  if ! [ -r "$dir/nodes" ] || ! [ -s "$dir/nodes" ] || ! [ -x "$dir/rsh-agent" ]; then
    say "not up (no $dir/nodes or $dir/rsh-agent; try: scripts/cluster.sh up 2)"
    return 1
  fi
  command -v ip >/dev/null || { say "not usable: no 'ip' command"; return 1; }
  local name addr bad=0 count=0
  while read -r name addr; do
    count=$((count + 1))
    if ip -n "$name" -4 addr show dev "$node_if" 2>/dev/null | grep "inet $addr/" >/dev/null; then
      echo "$name $addr up"
    else
      echo "$name $addr missing"
      bad=1
    fi
  done <"$dir/nodes"
  if [ "$bad" -ne 0 ]; then
    say "broken: some nodes are missing (scripts/cluster.sh down, then up)"
    return 1
  fi
  say "up: $count node(s) on $(cat "$dir/net" 2>/dev/null || echo "$net"), agent $dir/rsh-agent"
}

cmd_link() {
  local node=${1:-} state=${2:-}
  case "$state" in down|up) ;; *) echo "cluster: link needs a node and down or up, e.g. link node2 down" >&2; exit 2 ;; esac
  need_rights
  [ -r "$dir/nodes" ] && awk -v n="$node" '$1 == n { f = 1 } END { exit !f }' "$dir/nodes" ||
    die "no node '$node' in the cluster (see $dir/nodes)"
  local link=tideh${node#node}
  ip link set "$link" "$state"
  if [ "$state" = up ]; then
    # Back only once this side and every other node reach the node again:
    # their neighbour entries for it failed while it was cut, and a daemon or
    # rank started at once could not connect. A refused connection (nothing
    # listens on port 1) proves a path.
    local here_ip node_ip from
    here_ip="$(net=$(cat "$dir/net" 2>/dev/null || echo "$net") && net_prefix).254"
    node_ip=$(awk -v n="$node" '$1 == n { print $2 }' "$dir/nodes")
    ip neigh flush dev "$bridge" 2>/dev/null || true
    while read -r from _; do ip -n "$from" neigh flush all 2>/dev/null || true; done <"$dir/nodes"
    reaches() {  # reaches NAMESPACE|"" ADDRESS
      local err
      if [ -n "$1" ]; then
        err=$(ip netns exec "$1" timeout 1 bash -c "exec 3<>/dev/tcp/$2/1" 2>&1) && return 0
      else
        err=$(timeout 1 bash -c "exec 3<>/dev/tcp/$2/1" 2>&1) && return 0
      fi
      case "$err" in *"refused"*) return 0 ;; esac
      return 1
    }
    for _ in $(seq 50); do
      ok=1
      reaches "$node" "$here_ip" && reaches "" "$node_ip" || ok=0
      while read -r from _; do
        [ "$from" = "$node" ] || reaches "$from" "$node_ip" || ok=0
      done <"$dir/nodes"
      [ "$ok" -eq 1 ] && break
      sleep 0.2
    done
  fi
  say "$node: link $state ($link)"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  link) shift; cmd_link "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  agent) echo "$dir/rsh-agent" ;;
  net) if [ -r "$dir/net" ]; then cat "$dir/net"; else net_prefix >/dev/null; echo "$net"; fi ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
