#!/usr/bin/env bash
# job_check_run.sh: the user's path end to end on the GPU machine, in one device call (device plan item 29's
# job check; run 68 first ran it by hand). Calibrate, then pipeplan_probe.py on a job (Dataset + step) with
# --transport --main-loop --pin-wait-from-hand-overs, then job_check.py runs that job twice (the job's own repeat).
# Both of the probe's readings of the pin thread come back: the scenario as written (with the fd hand-overs as
# loader.pin_thread_wait_s_per_batch) and, scored here without the GPU, the same scenario without that key:
#
#   python3 calibrate/validation/job_check.py R/jc_s.json --measured R/jc1.json --profile R/jc_p.json
#   and the same on a copy of jc_s.json without loader.pin_thread_wait_s_per_batch
#
# Run from the repository root, on the device, with carry [".carry"]:
#   bash calibrate/validation/job_check_run.sh
# Knobs (environment):
#   PIPEPLAN_JC_DATASET   module:callable (default calibrate/validation/example_step.py:tensor_dataset, run 68's job)
#   PIPEPLAN_JC_STEP      module:callable (default calibrate/validation/example_step.py:matmul_step)
#   PIPEPLAN_JC_WORKERS   num_workers (default 4)
#   PIPEPLAN_JC_SECONDS   each job_check's steady-state seconds (default 20)
#   PIPEPLAN_JC_UNORDERED 1 (default): a third check of the same job with loader.in_order false (jc3.json, from
#                         jc_s_unordered.json): pipeplan's what-if for a pin-bound in-order loader, measured
#   PIPEPLAN_CALIBRATE_ARGS  extra arguments for the calibrate binary (default: the full calibration, cap 150 s); an
#                         --only list must keep storage: the probe refuses a profile without
#                         storage.stream_read_bytes_per_s (run 87b: "--only copy,host,ipc,decode,compute,storage")
# Writes under $OUT: env.txt (the call's narrative), profile.json, calibrate.log, jobcheck.tgz (jc_s.json, jc_p.json,
# jc1.json, jc2.json, jc_s_unordered.json, jc3.json, jc.log). Exit: 0 when the two checks of the scenario as written
# ran, else the first failing step's code (the third check's exit is said, not returned).
set -u
OUT=${OUT:?set OUT (the device call sets it)}
T0=$(date +%s)
say() { local line="[job_check_run $(( $(date +%s) - T0 ))s] $*"; echo "$line"; echo "$line" >> "$OUT/env.txt"; }
E=calibrate/validation/example_step.py
DATASET=${PIPEPLAN_JC_DATASET:-$E:tensor_dataset}
STEP=${PIPEPLAN_JC_STEP:-$E:matmul_step}
WORKERS=${PIPEPLAN_JC_WORKERS:-4}
SECONDS_EACH=${PIPEPLAN_JC_SECONDS:-20}
D=/var/tmp/pipeplan-jc; mkdir -p "$D"
W=$(mktemp -d)
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
  lscpu 2>&1 | head -20
  python3 -c 'import torch; print(torch.__version__)' 2>&1
} > "$OUT/env.txt"
say "job: $DATASET, step $STEP, $WORKERS workers, ${SECONDS_EACH}s a check"

# shellcheck source=../carried_binary.sh
. "$(dirname "$0")/../carried_binary.sh"
CAL=$(carried_calibrate_binary .carry)
if [ -z "$CAL" ] || [ ! -x "$CAL" ]; then
  say "no calibrate binary in .carry/ (build it: bash calibrate/device_build.sh; pass carry [\".carry\"])"; exit 2
fi
[ -d .carry/lib ] && export LD_LIBRARY_PATH=$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# shellcheck disable=SC2086
timeout -k 10 150 "$CAL" --out "$OUT/profile.json" --storage-path "$D" ${PIPEPLAN_CALIBRATE_ARGS:-} \
  > "$OUT/calibrate.log" 2>&1
say "calibrate exit $?"
[ -s "$OUT/profile.json" ] || { say "no profile written; see calibrate.log"; exit 1; }

timeout 100 python3 calibrate/validation/pipeplan_probe.py --dataset "$DATASET" --step "$STEP" --batch-size 64 \
  --num-workers "$WORKERS" --samples 100 --batches 8 --transport --main-loop --pin-wait-from-hand-overs \
  --profile "$OUT/profile.json" --profile-out "$W/jc_p.json" --base scenarios/default.json --out "$W/jc_s.json" \
  > "$W/jc.log" 2>&1
rc=$?
say "pipeplan_probe exit $rc"
first_rc=$rc
if [ "$rc" = 0 ]; then
  for i in 1 2; do
    timeout $(( SECONDS_EACH + 40 )) python3 calibrate/validation/job_check.py "$W/jc_s.json" --dataset "$DATASET" \
      --step "$STEP" --seconds "$SECONDS_EACH" --no-simulate --out "$W/jc$i.json" >> "$W/jc.log" 2>&1
    rc=$?
    say "job_check $i exit $rc"
    [ "$first_rc" = 0 ] && first_rc=$rc
  done
  # pipeplan's own what-if for a pin-bound in-order loader (its explanation in run 87b: "loader.in_order=false evens
  # the steps and may lift the throughput toward the pin thread's rate"), run as the job: the same scenario with
  # in_order false (PyTorch 2.6+), its measurement in jc3.json beside jc_s_unordered.json
  if [ "${PIPEPLAN_JC_UNORDERED:-1}" = 1 ]; then
    python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); s.setdefault("loader", {})["in_order"] = False; json.dump(s, open(sys.argv[2], "w"), indent=1)' \
      "$W/jc_s.json" "$W/jc_s_unordered.json"
    timeout $(( SECONDS_EACH + 40 )) python3 calibrate/validation/job_check.py "$W/jc_s_unordered.json" \
      --dataset "$DATASET" --step "$STEP" --seconds "$SECONDS_EACH" --no-simulate --out "$W/jc3.json" \
      >> "$W/jc.log" 2>&1
    say "job_check 3 (in_order false) exit $?"
  fi
fi
tar czf "$OUT/jobcheck.tgz" -C "$W" .
rm -rf "$W" "$D"
exit "$first_rc"
