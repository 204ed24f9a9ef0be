#!/usr/bin/env bash
# GPU checks of the fleet features, on the GPU machine through the device tool:
#   bash .device/run.sh bash test/gpu/fleet.sh
# 1. A package with two tables (the committed H200 database and an "H100" made from it
#    with other timings) picks this GPU's table, and its kernels compute right
#    (test/gpu/package-device.c).
# 2. normgen check on this GPU: the committed database on an H200; elsewhere a small
#    grid tuned here first.
# Logs go to $OUT (default /tmp/normgen-gpu), the package and databases to $WORK.
# Last run: test/gpu/fleet.md. Without a GPU it builds the package and stops at the
# first GPU call.
set -uo pipefail
out=${OUT:-/tmp/normgen-gpu}
work=${WORK:-/tmp/normgen-fleet-work}
mkdir -p "$out" "$work"
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
rc=0

node -e "
import('./dist/test/fake-device-db.js').then(({ fakeDeviceDb }) =>
  fakeDeviceDb('out/tuning/sm90-h200.jsonl.gz', '$work/sm90-h100.jsonl', { device: { name: 'NVIDIA H100 80GB HBM3', memoryBytes: 85e9, uuid: 'fake' }, spread: 0.4 }));"
pkg="$work/normgen-fleet"
node dist/cli/main.js build --db out/tuning/sm90-h200.jsonl.gz --db "$work/sm90-h100.jsonl" --out "$pkg" > "$out/package.log" 2>&1 &&
  make -j"$(nproc)" -C "$pkg" >> "$out/package.log" 2>&1 &&
  nvcc -x cu -I "$pkg/include" -o "$work/package-device" test/gpu/package-device.c -L"$pkg" -lnormgen -Xlinker -rpath="$pkg" >> "$out/package.log" 2>&1 &&
  "$work/package-device" | tee -a "$out/package.log"
r=$?; echo "package rc=$r"; [ "$r" = 0 ] || rc=1

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [[ "$gpu" == *H200* ]]; then
  db=out/tuning/sm90-h200.jsonl
else
  db="$work/small.jsonl"
  node dist/cli/main.js tune --arch sm90 --budget screen:4 --op rmsnorm,layernorm --dtype bf16 --hidden 4096,16384 --rows 32,2048,32768 --db "$db" > "$out/tune.log" 2>&1
  echo "tune rc=$?"
fi
timeout -s KILL 400 node dist/cli/main.js check --db "$db" --tolerance 5% > "$out/check.log" 2>"$out/check.err"
r=$?; echo "check rc=$r on $gpu ($db)"; tail -4 "$out/check.log"; tail -3 "$out/check.err"
exit $rc
