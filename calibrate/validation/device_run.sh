#!/usr/bin/env bash
# One device call: calibrate this machine, then measure the validation cases on it.
#
#   run(command="bash calibrate/validation/device_run.sh", carry=[".carry"], timeout_s=600)
#
# Runs in the repository root on the GPU machine with $OUT set. Writes (at most 8 files):
#   $OUT/profile.json    pipeplan calibrate's profile (absent when the binary is absent)
#   $OUT/calibrate.log   its output
#   $OUT/cases.json      the harness's measured cases (rewritten after every case)
#   $OUT/harness.log     the harness's progress lines
#   $OUT/env.txt         machine facts (nvidia-smi, lscpu, data directory and its file system), then this
#                        script's own progress lines
#   $OUT/probe_fragment.json, $OUT/probe.log  the user helper (pipeplan_probe.py --num-workers 8) on the
#                        harness's images, when 20 s of the budget are left
#   $OUT/step_fragment.json  with PIPEPLAN_STEP_PROBE=1, the user helper's --step on example_step.py's ResNet-50
#                        step, before the harness (its log at the head of probe.log); step_fragment_pairs.json
#                        with PIPEPLAN_STEP_PROBE=2, the same beside (tensor, label) samples
# Environment (all optional):
#   PIPEPLAN_VALIDATION_MODE   full (default) | quick
#   PIPEPLAN_TOTAL_S           seconds this script may take in all (default 570, for timeout_s=600)
#   PIPEPLAN_CALIBRATE_TIMEOUT_S  cap on calibration (default 150 full, 60 quick)
#   PIPEPLAN_CALIBRATE_ARGS    extra arguments for the calibrate binary
#   PIPEPLAN_HARNESS_BUDGET_S  cap on the harness budget (default 420 full, 120 quick)
#   PIPEPLAN_HARNESS_ARGS      extra arguments for harness.py (e.g. --families num_workers,step)
#   PIPEPLAN_MAIN_LOOP_PROBE   1: the user helper after the harness also runs --main-loop (the loop's next() and
#                              .to() call beside 8 pinning workers, about 10 s more; the harness gets 15 s less)
#   PIPEPLAN_STEP_PROBE        1: time example_step.py's ResNet-50 step with pipeplan_probe.py --step first;
#                              2: also its --memory-map beside (tensor, label) samples (step_fragment_pairs.json)
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/pipeplan-validation-out}
mkdir -p "$OUT"
MODE=${PIPEPLAN_VALIDATION_MODE:-full}
TOTAL=${PIPEPLAN_TOTAL_S:-570}
if [ "$MODE" = quick ]; then
  QFLAG=--quick; CAL_CAP=${PIPEPLAN_CALIBRATE_TIMEOUT_S:-60}; H_CAP=${PIPEPLAN_HARNESS_BUDGET_S:-120}
else
  QFLAG=; CAL_CAP=${PIPEPLAN_CALIBRATE_TIMEOUT_S:-150}; H_CAP=${PIPEPLAN_HARNESS_BUDGET_S:-420}
fi
elapsed() { echo $(( $(date +%s) - T0 )); }
# each line also goes to env.txt, so the call's own narrative comes back whole in a file (the reply's output_tail
# keeps only the last 12,000 characters, and $OUT takes at most 8 files)
say() { local line="[device_run $(elapsed)s] $*"; echo "$line"; echo "$line" >> "$OUT/env.txt"; }

# A data directory on a real disk (not tmpfs): cold-cache cases need one.
DATA=
for d in /var/tmp /tmp "$PWD"; do
  fs=$(stat -f -c %T "$d" 2>/dev/null || echo unknown)
  if [ -w "$d" ] && [ "$fs" != tmpfs ] && [ "$fs" != ramfs ]; then DATA="$d/pipeplan-validation-data"; DATAFS=$fs; break; fi
done
[ -n "$DATA" ] || { DATA=/tmp/pipeplan-validation-data; DATAFS=$(stat -f -c %T /tmp); }
mkdir -p "$DATA"

{
  echo "date: $(date -u +%FT%TZ)"; echo "mode: $MODE"; echo "data_dir: $DATA ($DATAFS)"
  echo "--- nvidia-smi"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,pcie.link.gen.max,pcie.link.width.max --format=csv 2>&1
  echo "--- lscpu"; lscpu 2>&1 | head -30
  echo "--- free"; free -b 2>&1
  echo "--- df"; df -h "$DATA" 2>&1
  echo "--- readahead (KiB) of the block devices"; for f in /sys/block/*/queue/read_ahead_kb; do echo "$f $(cat "$f" 2>/dev/null)"; done
  echo "--- python"; python3 -c 'import torch, torchvision, PIL, numpy; print(torch.__version__, torch.version.cuda, torchvision.__version__, PIL.__version__, numpy.__version__)' 2>&1
} > "$OUT/env.txt" 2>&1
say "mode $MODE, total budget ${TOTAL}s, data in $DATA ($DATAFS)"

# ---- 0. the harness's arguments, checked before calibration spends about 135 s of the call (run 70's first call
#         calibrated, then had its --min-case-window-s above --case-window-s refused: 181 s of device time for nothing)
# shellcheck disable=SC2086
if ! python3 calibrate/validation/harness.py --out /dev/null --list $QFLAG ${PIPEPLAN_HARNESS_ARGS:-} \
    > /dev/null 2> "$OUT/harness.log"; then
  say "harness arguments refused, nothing measured: $(tail -n 1 "$OUT/harness.log")"
  exit 2
fi

# ---- 1. calibrate (same machine, same run as the ground truth)
# shellcheck source=../carried_binary.sh
. "$(dirname "$0")/../carried_binary.sh"
CAL=$(carried_calibrate_binary .carry)
if [ -n "$CAL" ] && [ -x "$CAL" ]; then
  [ -d .carry/lib ] && export LD_LIBRARY_PATH=$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  say "calibrating: $CAL --out $OUT/profile.json $QFLAG --storage-path $DATA ${PIPEPLAN_CALIBRATE_ARGS:-} (cap ${CAL_CAP}s)"
  # shellcheck disable=SC2086
  timeout -k 10 "$CAL_CAP" "$CAL" --out "$OUT/profile.json" $QFLAG --storage-path "$DATA" ${PIPEPLAN_CALIBRATE_ARGS:-} \
    > "$OUT/calibrate.log" 2>&1
  rc=$?
  say "calibrate exit $rc$( [ $rc = 124 ] && echo ' (timed out)')"
  [ -s "$OUT/profile.json" ] || say "WARNING: no profile written; see calibrate.log"
else
  say "NOTE: no calibrate binary in .carry/: calibration skipped (build it and pass carry=[\".carry\"]);"
  say "      convert.py will then simulate with pipeplan's bundled default profile"
  echo "calibration skipped: no .carry/pipeplan-calibrate(.xz)" > "$OUT/calibrate.log"
fi

# ---- 1b. with PIPEPLAN_STEP_PROBE=1 (since run 26's plan): the user helper's --step on the harness's ResNet-50 step,
#          about 12 s (about 30 with --memory-map): its step_s and launch tail against the harness's step component and host probes (validation-runs.md
#          run 25, finding 1); its log starts probe.log
if [ "${PIPEPLAN_STEP_PROBE:-0}" = 1 ] || [ "${PIPEPLAN_STEP_PROBE:-0}" = 2 ]; then
  say "pipeplan_probe.py --step example_step.py:resnet50_step"
  # since the twenty-fourth session also --memory-map beside 8 workers of in-memory tensor_f32 samples: its rate
  # against the harness's host_beside_pin_parts interleaved reading of the same call (pin_memory_gil family)
  timeout -k 5 75 python3 calibrate/validation/pipeplan_probe.py --step calibrate/validation/example_step.py:resnet50_step \
    --steps 30 --dataset calibrate/validation/example_step.py:tensor_dataset --num-workers 8 --memory-map \
    --samples 50 --batches 5 --no-worker --max-seconds 5 --out "$OUT/step_fragment.json" >> "$OUT/probe.log" 2>&1
  say "pipeplan_probe --step exit $?"
fi
if [ "${PIPEPLAN_STEP_PROBE:-0}" = 2 ]; then
  # since run 29 (validation-runs.md, finding 1): the same beside (tensor, label) pairs, the harness's samples' structure:
  # do the loop's page faults beside pin_memory() follow the samples (1 a step above, 63 in the harness's loop)?
  say "pipeplan_probe.py --step example_step.py:resnet50_step --dataset example_step.py:tensor_label_dataset"
  timeout -k 5 75 python3 calibrate/validation/pipeplan_probe.py --step calibrate/validation/example_step.py:resnet50_step \
    --steps 30 --dataset calibrate/validation/example_step.py:tensor_label_dataset --num-workers 8 --memory-map \
    --samples 50 --batches 5 --no-worker --max-seconds 5 --out "$OUT/step_fragment_pairs.json" >> "$OUT/probe.log" 2>&1
  say "pipeplan_probe --step (pairs) exit $?"
fi

# ---- 2. the harness, with what is left of the budget
MAIN_LOOP=${PIPEPLAN_MAIN_LOOP_PROBE:-0}
LEFT=$(( TOTAL - $(elapsed) - 30 - ( MAIN_LOOP == 1 ? 15 : 0 ) ))
BUDGET=$(( LEFT < H_CAP ? LEFT : H_CAP ))
if [ "$BUDGET" -lt 30 ]; then
  say "only ${LEFT}s left: harness not run"; exit 1
fi
say "harness: budget ${BUDGET}s"
# shellcheck disable=SC2086
PYTHONUNBUFFERED=1 timeout -k 10 $(( BUDGET + 45 )) python3 calibrate/validation/harness.py \
  --out "$OUT/cases.json" --budget-s "$BUDGET" --data-dir "$DATA" $QFLAG ${PIPEPLAN_HARNESS_ARGS:-} \
  2>&1 | tee "$OUT/harness.log"
rc=${PIPESTATUS[0]}
say "harness exit $rc$( [ "$rc" = 124 ] && echo ' (timed out; cases.json keeps the finished cases)')"
# ---- 3. the user helper on the same images (its one- and K-worker timings need torch: only here)
if [ $(( TOTAL - $(elapsed) )) -ge 20 ] && [ -d "$DATA/jpeg" ]; then
  PROBE_CAP=25; ML_FLAG=
  if [ "$MAIN_LOOP" = 1 ] && [ $(( TOTAL - $(elapsed) )) -ge 35 ]; then PROBE_CAP=40; ML_FLAG=--main-loop; fi
  say "pipeplan_probe.py on the harness's images, --num-workers 8 $ML_FLAG"
  # shellcheck disable=SC2086
  timeout -k 5 $PROBE_CAP python3 calibrate/validation/pipeplan_probe.py \
    --dataset calibrate/validation/harness.py:image_dataset_from_dir --dataset-args "[\"$DATA\"]" \
    --batch-size 64 --num-workers 8 --samples 200 --max-seconds 10 $ML_FLAG --out "$OUT/probe_fragment.json" \
    >> "$OUT/probe.log" 2>&1
  say "pipeplan_probe exit $?"
fi
rm -rf "$DATA"
ls -la "$OUT"
exit "$rc"
