#!/usr/bin/env bash
# Builds pipeplan-calibrate with the GPU sections (nvcc, static CUDA runtime, sm_90) into
# .carry/pipeplan-calibrate.xz (ignored by git), ready to travel to the GPU machine with the device tool:
#
#   calibrate/device_build.sh
#   run(carry=[".carry"], timeout_s=420, command=
#       ". calibrate/carried_binary.sh; B=$(carried_calibrate_binary $PWD/.carry); cd /tmp && $B --out $OUT/profile.json 2>&1 | tee $OUT/calibrate.log")
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
stripped="$build/pipeplan-calibrate.stripped"
strip -o "$stripped" "$build/calibrate/pipeplan-calibrate"

# A CUDA build says "no CUDA device" here, never "built without CUDA".
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
if "$stripped" --only copy --out "$probe_dir/p.json" 2>&1 | grep -q "built without CUDA"; then
  echo "device_build.sh: the build has no GPU sections (was CUDA found?)" >&2
  exit 1
fi
ldd "$stripped"

# Carried as xz (3.5 MB -> about 0.9 MB): the tree that travels is limited to 64 MiB on disk. The run scripts unpack
# it (calibrate/carried_binary.sh); a plain copy left by an older build would be carried too, so it goes.
mkdir -p "$root/.carry"
rm -f "$root/.carry/pipeplan-calibrate"
python3 -c 'import lzma, shutil, sys
with open(sys.argv[1], "rb") as f, lzma.open(sys.argv[2], "wb", preset=9) as g:
    shutil.copyfileobj(f, g)' "$stripped" "$probe_dir/pipeplan-calibrate.xz"
mv "$probe_dir/pipeplan-calibrate.xz" "$root/.carry/pipeplan-calibrate.xz"
echo "device_build.sh: $root/.carry/pipeplan-calibrate.xz ($(du -h "$root/.carry/pipeplan-calibrate.xz" | cut -f1);" \
  "$(du -h "$stripped" | cut -f1) unpacked)"
