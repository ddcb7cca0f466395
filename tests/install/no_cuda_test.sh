#!/usr/bin/env bash
# Configures and builds the parts of lifeboat that hold the NCCL barrier with
# CUDAToolkit_ROOT pointing at an empty directory, as on a machine without
# /usr/local/cuda: the configure summary must say NCCL is not compiled in.
set -euo pipefail
source_dir=$1
build_dir=$2
empty=$(mktemp -d /tmp/lifeboat-no-cuda-XXXXXX)
trap 'rm -rf "$empty"' EXIT

summary=$(cmake -S "$source_dir" -B "$build_dir" -DCUDAToolkit_ROOT="$empty" \
  -DLIFEBOAT_BUILD_TESTS=OFF -DLIFEBOAT_BUILD_BENCH=OFF | grep 'NCCL barrier')
echo "$summary"
grep -q 'NCCL barrier not compiled in' <<<"$summary"
cmake --build "$build_dir" --target lifeboat_checkpoint -j 2 >/dev/null
echo "no_cuda_test: lifeboat_checkpoint builds without CUDA"
