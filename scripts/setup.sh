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
# nlohmann-json3-dev parses safetensors headers. Debian has no package of
# `safetensors`, which a test reads tide's files with: it comes from PyPI
# (pip_packages below); offline, that test says so and is skipped.
set -euo pipefail

packages=(build-essential cmake libopenblas-dev libgtest-dev libopenmpi-dev openmpi-bin libcli11-dev iproute2 python3
  python3-dev pybind11-dev python3-numpy python3-pytest python3-pip python3-venv tmux nlohmann-json3-dev)
for arg in "$@"; do
  case "$arg" in
    --bench) packages+=(gnuplot-nox jq) ;;
    --peers) packages+=(python3-torch python3-numpy libtorch-dev) ;;
    --slurm) packages+=(slurmctld slurmd slurm-client munge) ;;
    *) echo "tide setup: unknown argument '$arg' (expected --bench, --peers or --slurm)" >&2; exit 2 ;;
  esac
done

# For the system's python3 (/usr/bin/python3, which the build's tests run),
# beside Debian's packages (--break-system-packages: pip's files go to
# /usr/local, Debian's stay as they are). Quiet, and never fatal.
install_pip_packages() {
  /usr/bin/python3 -c "import safetensors" 2>/dev/null && return 0
  local user=()
  [ "$(id -u)" -ne 0 ] && user=(--user)
  if ! /usr/bin/python3 -m pip install -q --disable-pip-version-check --timeout 20 --retries 1 \
      --break-system-packages "${user[@]}" safetensors >/dev/null 2>&1; then
    echo "tide setup: could not install safetensors from PyPI (offline?): python.safetensors_interop will skip"
  fi
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  install_pip_packages
  exit 0
fi

echo "tide setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "tide setup: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_pip_packages
