#!/usr/bin/env bash
# One device call on a multi-GPU machine: calibrate NCCL (+ compute), then measure the DDP cases.
#
#   calibrate/device_build.sh            # here, first: puts the calibrate binary in .carry/
#   run(command="bash calibrate/validation/ddp_device_run.sh", carry=[".carry"], timeout_s=600,
#       kind="nvidia-h200-x2")           # or -x4 / -x8
#
# Runs in the repository root on the GPU machine with $OUT set. Writes at most 7 files:
#   $OUT/env.txt            machine facts (nvidia-smi, topology, lscpu, versions, data directory)
#   $OUT/calibrate.log      the calibrate binary's output (or why it was skipped)
#   $OUT/profile-nccl.json  pipeplan-calibrate --only nccl,compute (absent without the binary)
#   $OUT/ddp_cases.json     ddp_harness.py's measured cases (rewritten after every case)
#   $OUT/ddp_harness.log    torchrun's and the harness's output
#   $OUT/ddp_trace.json.gz  one small Chrome trace (one case, rank 0), when it fits
#   (a ddp_cases.json.tmp may survive a kill mid-write)
# Environment (all optional):
#   PIPEPLAN_DDP_MODE            full (default) | quick
#   PIPEPLAN_TOTAL_S             seconds this script may take in all (default 570, for timeout_s=600)
#   PIPEPLAN_CALIBRATE_TIMEOUT_S cap on calibration (default 120, quick 60)
#   PIPEPLAN_HARNESS_BUDGET_S    cap on the harness's budget (default 400, quick 150)
#   PIPEPLAN_DDP_NPROC           ranks (default: every GPU nvidia-smi -L lists)
#   PIPEPLAN_DDP_ARGS            extra ddp_harness.py arguments (e.g. "--models linear --caps 1,25")
# Exit: the harness's exit status; 3 when fewer than 2 GPUs are visible (nothing measured).
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/pipeplan-ddp-out}
mkdir -p "$OUT"
MODE=${PIPEPLAN_DDP_MODE:-full}
TOTAL=${PIPEPLAN_TOTAL_S:-570}
if [ "$MODE" = quick ]; then
  QFLAG=--quick; CAL_CAP=${PIPEPLAN_CALIBRATE_TIMEOUT_S:-60}; H_CAP=${PIPEPLAN_HARNESS_BUDGET_S:-150}
else
  QFLAG=; CAL_CAP=${PIPEPLAN_CALIBRATE_TIMEOUT_S:-120}; H_CAP=${PIPEPLAN_HARNESS_BUDGET_S:-400}
fi
elapsed() { echo $(( $(date +%s) - T0 )); }
say() { echo "[ddp_device_run $(elapsed)s] $*"; }

# NVLink multicast stays off (the device notes: it can take shared GPUs out of service).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN} PYTHONUNBUFFERED=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
NPROC=${PIPEPLAN_DDP_NPROC:-$NGPU}

# A data directory on a real disk (not tmpfs), as device_run.sh picks it.
DATA=
for d in /var/tmp /tmp "$PWD"; do
  fs=$(stat -f -c %T "$d" 2>/dev/null || echo unknown)
  if [ -w "$d" ] && [ "$fs" != tmpfs ] && [ "$fs" != ramfs ]; then DATA="$d/pipeplan-ddp-data"; DATAFS=$fs; break; fi
done
[ -n "$DATA" ] || { DATA=/tmp/pipeplan-ddp-data; DATAFS=$(stat -f -c %T /tmp); }
mkdir -p "$DATA"

{
  echo "date: $(date -u +%FT%TZ)"; echo "mode: $MODE"; echo "gpus: $NGPU (ranks: $NPROC)"
  echo "data_dir: $DATA ($DATAFS)"; echo "git: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "env: NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE TORCH_SYMM_MEM_DISABLE_MULTICAST=$TORCH_SYMM_MEM_DISABLE_MULTICAST NVSHMEM_DISABLE_NVLS=$NVSHMEM_DISABLE_NVLS"
  echo "--- nvidia-smi"; nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
  echo "--- nvidia-smi topo -m"; nvidia-smi topo -m 2>&1 | head -20
  echo "--- nvidia-smi nvlink -s (GPU 0)"; nvidia-smi nvlink -s -i 0 2>&1 | head -20
  echo "--- lscpu"; lscpu 2>&1 | head -30
  echo "--- nproc"; nproc
  echo "--- free"; free -b 2>&1
  echo "--- python"; python3 -c 'import torch, torchvision, numpy; print(torch.__version__, torch.version.cuda, "nccl", torch.cuda.nccl.version(), torchvision.__version__, numpy.__version__, "gpus", torch.cuda.device_count())' 2>&1
} > "$OUT/env.txt" 2>&1
say "mode $MODE, $NGPU GPU(s), $NPROC rank(s), total budget ${TOTAL}s, data in $DATA ($DATAFS)"

if [ "$NGPU" -lt 2 ] || [ "$NPROC" -lt 2 ]; then
  say "ERROR: the DDP measurement needs at least 2 GPUs; nvidia-smi -L lists $NGPU (ranks $NPROC)."
  say "       Nothing was measured. Ask for kind nvidia-h200-x2 (or -x4, -x8)."
  echo "not run: $NGPU GPU(s) visible" > "$OUT/calibrate.log"
  rm -rf "$DATA"
  exit 3
fi

# ---- 1. calibrate NCCL and compute on this machine, in this call
# shellcheck source=../carried_binary.sh
. "$(dirname "$0")/../carried_binary.sh"
CAL=$(carried_calibrate_binary .carry)
if [ -n "$CAL" ] && [ -x "$CAL" ]; then
  [ -d .carry/lib ] && export LD_LIBRARY_PATH=$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  say "calibrating: $CAL --only nccl,compute --out $OUT/profile-nccl.json $QFLAG (cap ${CAL_CAP}s)"
  # shellcheck disable=SC2086
  timeout -k 10 "$CAL_CAP" "$CAL" --only nccl,compute --out "$OUT/profile-nccl.json" $QFLAG > "$OUT/calibrate.log" 2>&1
  rc=$?
  say "calibrate exit $rc$( [ $rc = 124 ] && echo ' (timed out)')"
  [ -s "$OUT/profile-nccl.json" ] || say "WARNING: no profile written; see calibrate.log"
  grep -E "fit:|Avg bus" "$OUT/calibrate.log" | head -8
else
  say "NOTE: no calibrate binary in .carry/: calibration skipped (run calibrate/device_build.sh here and pass"
  say "      carry=[\".carry\"]); ddp_convert.py will then fit the harness's own all_reduce timings"
  echo "calibration skipped: no .carry/pipeplan-calibrate(.xz)" > "$OUT/calibrate.log"
fi

# ---- 2. the DDP harness, with what is left (start-up, NCCL init and data generation need ~60 s)
LEFT=$(( TOTAL - $(elapsed) - 75 ))
BUDGET=$(( LEFT < H_CAP ? LEFT : H_CAP ))
if [ "$BUDGET" -lt 60 ]; then
  say "only ${LEFT}s left: harness not run"; exit 1
fi
say "harness: torchrun --standalone --nproc_per_node=$NPROC, budget ${BUDGET}s"
# shellcheck disable=SC2086
timeout -k 15 $(( BUDGET + 100 )) python3 -m torch.distributed.run --standalone --nproc_per_node="$NPROC" \
  calibrate/validation/ddp_harness.py --out "$OUT/ddp_cases.json" --budget-s "$BUDGET" --data-dir "$DATA" \
  --trace-out "$OUT/ddp_trace.json.gz" $QFLAG ${PIPEPLAN_DDP_ARGS:-} 2>&1 | tee "$OUT/ddp_harness.log"
rc=${PIPESTATUS[0]}
say "harness exit $rc$( [ "$rc" = 124 ] && echo ' (timed out; ddp_cases.json keeps the finished cases)')"
rm -rf "$DATA"
ls -la "$OUT"
exit "$rc"
