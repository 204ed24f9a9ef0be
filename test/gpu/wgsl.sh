#!/usr/bin/env bash
# The committed WGSL tune on the GPU machine, through Dawn's OpenGL ES backend (the
# machine's NVIDIA driver has no Vulkan for Dawn): one device call,
#   bash .device/run.sh bash test/gpu/wgsl.sh
# Writes out/tuning/$NAME.jsonl and .md in the working tree (relative paths, so the
# recorded command names no machine path) and copies them, the log and the card's
# state to $OUT. The tune starts no new problem after --max-seconds and the database
# and report are rewritten after every problem, so the hard stop still leaves both.
set -uo pipefail
out=${OUT:-/tmp/normgen-gpu}
mkdir -p "$out" out/tuning
name=${NAME:-wgsl-h200-opengles}
seconds=${WGSL_SECONDS:-360}
grid=${WGSL_GRID:---op rmsnorm,layernorm --dtype fp32 --hidden 1024,4096,8192,16384 --rows 32,2048,32768}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$out/card.txt" 2>&1 || true
timeout -s KILL "$seconds" node dist/cli/main.js tune --backend wgsl --adapter "${ADAPTER:-opengles}" $grid --budget screen:4 \
  --max-seconds $((seconds * 6 / 10)) --cuda-db out/tuning/sm90-h200.jsonl --db "out/tuning/$name.jsonl" --report "out/tuning/$name.md" > "$out/$name.log" 2>&1
echo "wgsl tune rc=$?"
cp "out/tuning/$name.jsonl" "out/tuning/$name.md" "$out/" 2>/dev/null
grep -v '^Warning' "$out/$name.log" | tail -25
