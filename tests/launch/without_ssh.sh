#!/usr/bin/env bash
# tiderun on a machine without ssh or rsh (a container, say): PATH is a
# folder of links to every program of /usr/bin and /bin but ssh, rsh and
# slogin. A job on this host runs (Open MPI's local launcher); a bad rank's
# status comes back in one line; a job with ranks on another host is
# refused in one line, before mpirun starts.
# Usage: without_ssh.sh TIDERUN
set -u
tiderun=$1
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
for f in /usr/bin/* /bin/*; do
  b=${f##*/}
  case $b in ssh | rsh | slogin) continue ;; esac
  [ -e "$bin/$b" ] || ln -s "$f" "$bin/$b"
done
run() { timeout 60 env -i PATH="$bin" "$tiderun" "$@" 2>&1; }
fail() { echo "FAILED: $*"; exit 1; }

out=$(run -np 2 --local sh -c 'echo "rank $RANK of $WORLD_SIZE"')
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || fail "a one-host job ended with status $rc"
[ "$(grep -c '^rank [01] of 2$' <<<"$out")" -eq 2 ] || fail "not both ranks ran"

out=$(run -np 2 -H localhost:2 sh -c 'exit $((RANK * 3))')
rc=$?
echo "$out"
[ "$rc" -eq 3 ] || fail "expected status 3, got $rc"
grep -q -- "------" <<<"$out" && fail "Open MPI's box came through"
grep -qx "tiderun: rank 1 exited with status 3, the first to fail; mpirun ended the others" <<<"$out" ||
  fail "no one-line account of rank 1"

out=$(run -np 2 -H tide-other-host:2 /bin/true)
rc=$?
echo "$out"
[ "$rc" -eq 2 ] || fail "a job on another host: expected status 2, got $rc"
[ "$out" = "tiderun: no ssh or rsh here to start ranks on tide-other-host: install ssh (Debian: openssh-client), or name a launcher with --rsh-agent" ] ||
  fail "not the one line expected"
# In a Slurm allocation Open MPI starts its daemons through Slurm: the
# local launcher would leave the other nodes' ranks unstarted.
out=$(timeout 60 env -i PATH="$bin" SLURM_JOB_ID=7 SLURM_JOB_NUM_NODES=3 SLURM_NTASKS=3 "$tiderun" -np 3 --dry-run prog 2>&1)
echo "$out"
grep -q "plm isolated" <<<"$out" && fail "the local launcher inside a Slurm allocation"
out=$(run -np 2 -H "$(uname -n):2" --dry-run prog)
echo "$out"
grep -q "plm isolated" <<<"$out" || fail "this host by its name is not this host"
echo "OK: without ssh"
