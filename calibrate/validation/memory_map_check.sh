#!/usr/bin/env bash
# The user helper's --memory-map verdict on the GPU, for a loop that stalls on the memory map (example_step.py's
# ResNet-50 step) and one that barely needs the interpreter (its matmul_step, a few GEMM launches), each beside 8
# workers of in-memory tensor_f32 samples, twice (docs/validation-runs.md, run 30, finding 1). No calibration; about
# 2-3 minutes. Run in the repository root on the device:
#   run(command="bash calibrate/validation/memory_map_check.sh", timeout_s=300)
# Writes $OUT/probe.log (the summaries), frag_<step>_<rep>.json (the fragments) and raw.tgz (raw_<step>_<rep>.json,
# the blocks: one archive, as at most 8 files come back); prints each summary's memory-map line.
set -u
OUT=${OUT:-/tmp/pipeplan-memory-map-check}
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u +%FT%TZ; } > "$OUT/env.txt" 2>&1
P=calibrate/validation/pipeplan_probe.py
D=calibrate/validation/example_step.py
for rep in 1 2; do
  for step in resnet50_step matmul_step; do
    echo "=== $step rep $rep $(date -u +%T)" >> "$OUT/probe.log"
    timeout -k 5 100 python3 "$P" --step "$D:$step" --steps 30 --dataset "$D:tensor_dataset" --num-workers 8 \
      --memory-map --samples 50 --batches 5 --no-worker --max-seconds 5 --out "$OUT/frag_${step}_$rep.json" \
      --raw "$OUT/raw_${step}_$rep.json" >> "$OUT/probe.log" 2>&1
    echo "exit $?" >> "$OUT/probe.log"
  done
done
(cd "$OUT" && tar czf raw.tgz raw_*.json && rm -f raw_*.json)
grep -E "^===|^memory map|^exit" "$OUT/probe.log"
