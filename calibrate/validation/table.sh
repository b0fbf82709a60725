#!/usr/bin/env bash
# Regenerates the generated section of docs/validation.md from the calls listed in table_calls.txt
# (convert.py with each call's cases and its own profile, --transport measured, 8 seeds a case), writing the
# pooled report and its scenarios to calibrate/validation/results/table-report/. About 7 minutes for 180 cases
# on 2 cores.
#
#   bash calibrate/validation/table.sh [extra convert.py options]      # e.g. --gpu-duty off (then keep --md away)
#   PIPEPLAN_TABLE_CALLS=FILE bash calibrate/validation/table.sh OPTIONS  # a variant over FILE's calls only
#     (e.g. calibrate/validation/results/sync-every-calls.txt, the 38 calls with sync_every: validation run 62)
set -euo pipefail
cd "$(dirname "$0")/../.."
R=calibrate/validation/results
calls_file=${PIPEPLAN_TABLE_CALLS:-calibrate/validation/table_calls.txt}
[ -f "$calls_file" ] || { echo "table.sh: $calls_file: not found (expected a list of result folders, one a line)" >&2; exit 2; }
if [ -n "${PIPEPLAN_TABLE_CALLS:-}" ] && [ "$#" -eq 0 ]; then
  echo "table.sh: PIPEPLAN_TABLE_CALLS makes a variant only (give convert.py options); the page's table takes every call" >&2
  exit 2
fi
args=()
n=0
while read -r call; do
  case "$call" in ''|'#'*) continue ;; esac
  # an older call's cases.json may be kept as cases.json.gz or .xz (convert reads any)
  { [ -f "$R/$call/cases.json" ] || [ -f "$R/$call/cases.json.gz" ] || [ -f "$R/$call/cases.json.xz" ]; } \
    && { [ -f "$R/$call/profile.json" ] || [ -f "$R/$call/profile.json.xz" ]; } || {
    echo "table.sh: $R/$call lacks cases.json (or cases.json.gz / .xz) or profile.json (or .xz)" >&2; exit 2; }
  args+=(--cases "$R/$call/cases.json" --profile "$R/$call/profile.json")
  n=$((n + 1))
done < "$calls_file"
[ "$n" -gt 0 ] || { echo "table.sh: no call listed in $calls_file" >&2; exit 2; }
# A rebuild of build/ during the half hour this takes leaves cases unsimulated ("Permission denied" while the linker
# writes the binary; validation-runs.md run 71, finding 4): say so at the end rather than let the page count them.
binary_stamp() { stat -c '%Y %s %i' build/cli/pipeplan 2>/dev/null || echo missing; }
stamp_before=$(binary_stamp)
check_binary_unchanged() {
  if [ "$(binary_stamp)" != "$stamp_before" ]; then
    echo "table.sh: build/cli/pipeplan changed while the table ran; cases may be unsimulated or scored by two" \
         "builds: run table.sh again without rebuilding" >&2
    exit 1
  fi
}
if [ "$#" -gt 0 ]; then
  # a variant: scored beside, the page untouched
  python3 calibrate/validation/convert.py "${args[@]}" --pipeplan build/cli/pipeplan --transport measured \
    --out-dir "/tmp/pipeplan-table-variant" "$@"
  check_binary_unchanged
  exit 0
fi
python3 calibrate/validation/convert.py "${args[@]}" --pipeplan build/cli/pipeplan --transport measured \
  --out-dir "$R/table-report" --md docs/validation.md
check_binary_unchanged
# the pooled report is kept gzipped (4.7 MB -> about 0.5 MB of the tree that travels to the GPU machine, 64 MiB);
# every reader takes report.json or its .gz (convert.read_json)
gzip -9 -n -f "$R/table-report/report.json"
