#!/usr/bin/env bash
# The GPU test and tuning session, run on the GPU machine through the device tool:
#   bash .device/run.sh bash test/gpu/run.sh [verify] [faults] [resume] [tune]
# Logs and databases go to $OUT (default /tmp/normgen-gpu).
set -uo pipefail
out=${OUT:-/tmp/normgen-gpu}
mkdir -p "$out"
tune_seconds=${TUNE_SECONDS:-300}
TUNE_GRID=${TUNE_GRID:---dtype bf16,fp32 --hidden 1024,4096,8192,16384,65536,131072 --rows 32,2048,32768}
EXHAUSTIVE_GRID=${EXHAUSTIVE_GRID:---op rmsnorm --dtype bf16 --hidden 4096,65536 --rows 2048,32768}
for step in "$@"; do
  case $step in
    faults)
      timeout -s KILL 150 node dist/test/gpu/faults.js --log "$out/faults.md" > "$out/faults.log" 2>&1
      echo "faults rc=$?"; tail -1 "$out/faults.log" ;;
    verify)
      timeout -s KILL 420 node dist/cli/main.js verify --arch sm90 --log "$out/correctness.md" > "$out/verify.log" 2>&1
      echo "verify rc=$?"; tail -3 "$out/verify.log" ;;
    resume)
      # A tune killed with SIGKILL mid-way, then the same command again: it must skip finished work.
XX
      timeout -s KILL 200 node dist/cli/main.js $args >> "$out/resume.log" 2>&1
      echo "resume rc=$?"; grep -E "already in the database|killed" "$out/resume.log" | tail -3 ;;
    tune)
      timeout -s KILL "$tune_seconds" node dist/cli/main.js tune --arch sm90 --budget screen:4 --db "$out/sm90-h200.jsonl" --report "$out/sm90-h200.md" > "$out/tune.log" 2>&1
      echo "tune rc=$?"; tail -4 "$out/tune.log" ;;
  esac
done
