#!/usr/bin/env bash
# Installs, with apt only, the Debian packages lifeboat needs that are missing.
# Idempotent: a second run finds everything present and installs nothing.
set -euo pipefail

packages=(
  build-essential cmake make pkg-config clang-format
  libcaf-dev libprotobuf-dev protobuf-compiler libboost-dev libcli11-dev libxxhash-dev libssl-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev pybind11-dev python3-dev
  curl procps ccache python3-torch python3-numpy
  # tests/apps/slurm_test.sh starts a one-node SLURM cluster of its own.
  munge slurmctld slurmd slurm-client
  # libFuzzer (clang's -fsanitize=fuzzer) for tests/fuzz.
  clang libclang-rt-14-dev
)
# Browser for the status page screenshot test; optional for building.
if [[ "${LIFEBOAT_WITH_BROWSER:-1}" == "1" ]]; then
  packages+=(chromium)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing: ${missing[*]}"
if [[ $(id -u) -eq 0 ]]; then
  sudo_cmd=()
elif command -v sudo >/dev/null 2>&1; then
  sudo_cmd=(sudo)
else
  echo "install-deps: error: missing packages (${missing[*]}) and neither root nor sudo available" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
if ! "${sudo_cmd[@]}" apt-get update -qq; then
  echo "install-deps: error: 'apt-get update' failed; check the network or apt sources" >&2
  exit 1
fi
if ! "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
  echo "install-deps: error: 'apt-get install ${missing[*]}' failed" >&2
  exit 1
fi
echo "install-deps: done"
