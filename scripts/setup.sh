#!/usr/bin/env bash
# Installs what tide needs from Debian's packages. Idempotent and quiet when
# everything is already there. Needs root (or sudo) only when it installs.
# python3 runs launch/tide-trace (merging trace files); python3-dev and
# pybind11-dev build the Python module, python3-numpy and python3-pytest
# test it; tmux gives a test the trainer's terminal. --bench also installs
# gnuplot and jq, which the benchmark and plotting scripts draw and read
# results with; --peers PyTorch (Python and C++) and NumPy for the CPU, the
# peers the benchmarks are compared with (examples/peers/); --slurm Slurm
# (slurmctld, slurmd, its clients) and munge, which scripts/slurm.sh runs on
# the namespace nodes for the cluster tests (scripts/test.sh asks for it).
set -euo pipefail

packages=(build-essential cmake libopenblas-dev libgtest-dev libopenmpi-dev openmpi-bin libcli11-dev iproute2 python3
  python3-dev pybind11-dev python3-numpy python3-pytest tmux nlohmann-json3-dev)
for arg in "$@"; do
  case "$arg" in
    --bench) packages+=(gnuplot-nox jq) ;;
    --peers) packages+=(python3-torch python3-numpy libtorch-dev) ;;
    --slurm) packages+=(slurmctld slurmd slurm-client munge) ;;
    *) echo "tide setup: unknown argument '$arg' (expected --bench, --peers or --slurm)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "tide setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "tide setup: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
