#!/usr/bin/env bash
# Builds pipeplan-calibrate with the GPU sections (nvcc, static CUDA runtime, sm_90) into
# .carry/ (ignored by git), ready to travel to the GPU machine with the device tool:
#
#   calibrate/device_build.sh
#   run(carry=[".carry"], timeout_s=420, command=
#       "B=$PWD/.carry/pipeplan-calibrate; cd /tmp && $B --out $OUT/profile.json 2>&1 | tee $OUT/calibrate.log")
#
# (cd /tmp: the storage section's default temporary directory, on the machine's local disk.)
#
# The binary needs only glibc there: NCCL (libnccl.so.2) and cuBLAS (libcublas.so.13) are
# dlopen'ed from the machine's own copies (see docs/calibrate.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PIPEPLAN_DEVICE_BUILD_DIR:-$root/build-device}
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
[ -x "$nvcc" ] || { echo "device_build.sh: no nvcc at $nvcc (set CUDACXX)" >&2; exit 3; }

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DPIPEPLAN_WITH_SIM=OFF -DPIPEPLAN_BUILD_TESTS=OFF -DPIPEPLAN_WITH_CUDA=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target pipeplan-calibrate
mkdir -p "$root/.carry"
strip -o "$root/.carry/pipeplan-calibrate" "$build/calibrate/pipeplan-calibrate"

# A CUDA build says "no CUDA device" here, never "built without CUDA".
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
if "$root/.carry/pipeplan-calibrate" --only copy --out "$probe_dir/p.json" 2>&1 | grep -q "built without CUDA"; then
  echo "device_build.sh: the build has no GPU sections (was CUDA found?)" >&2
  exit 1
fi
echo "device_build.sh: $root/.carry/pipeplan-calibrate ($(du -h "$root/.carry/pipeplan-calibrate" | cut -f1))"
ldd "$root/.carry/pipeplan-calibrate"
