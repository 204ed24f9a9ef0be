#!/usr/bin/env bash
# The backward kernels on the GPU machine, in one call (logs under $OUT as each step ends):
#   bash .device/run.sh bash test/gpu/run-bwd.sh [verify] [tune] [tune-stats] [package] [torch]
# verify:      every backward variant on the GPU matrix, each run repeated 9 times (bitwise)
# tune:        the backward grid the package uses (no saved statistics: autograd recomputes them)
# tune-stats:  a small grid with saved statistics given: reading them or recomputing is tuned
# package:     the committed forward database + the backward one -> a package, built with nvcc
# torch:       gradients vs float64 autograd, 10 runs bitwise, torch.compile, timing vs torch
#              (the package step's package, or without it the committed one)
set -uo pipefail
out=${OUT:-/tmp/normgen-gpu-bwd}
. "$(dirname "$0")/stem.sh"
mkdir -p "$out"
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
grid=${BWD_GRID:---op rmsnorm,layernorm --dtype bf16,fp32 --hidden 4096,16384 --rows 32768}
rc=0
for step in "$@"; do
  t0=$(date +%s)
  case $step in
    verify)
      timeout -s KILL "${VERIFY_SECONDS:-200}" node dist/cli/main.js verify --direction bwd --arch sm90 --repeat 9 ${VERIFY_FLAGS:-} \
        --log "$out/correctness-bwd.md" > "$out/verify-bwd.log" 2>&1
      r=$?; tail -3 "$out/verify-bwd.log" ;;
    tune)
      timeout -s KILL "${TUNE_SECONDS:-200}" node dist/cli/main.js tune --direction bwd --arch sm90 --budget screen:3 $grid \
        --db "$out/$stem-bwd.jsonl" --report "$out/$stem-bwd.md" > "$out/tune-bwd.log" 2>&1
      r=$?; tail -12 "$out/tune-bwd.log" ;;
    tune-stats)
      timeout -s KILL "${STATS_SECONDS:-90}" node dist/cli/main.js tune --direction bwd --stats --arch sm90 --budget screen:3 \
        --op rmsnorm,layernorm --dtype bf16 --hidden 4096,16384 --rows 32768 \
        --db "$out/$stem-bwd-stats.jsonl" --report "$out/$stem-bwd-stats.md" > "$out/tune-bwd-stats.log" 2>&1
      r=$?; tail -6 "$out/tune-bwd-stats.log" ;;
    package)
      pkg="$out/normgen-$stem"
      node dist/cli/main.js build --db out/tuning/$stem.jsonl.gz --db "$out/$stem-bwd.jsonl" --out "$pkg" \
        --name normgen-$stem > "$out/build.log" 2>&1 &&
        make -s -j"$(nproc)" -C "$pkg" >> "$out/build.log" 2>&1
      r=$?; tail -2 "$out/build.log" ;;
    torch)
      # The package the package step built in this run, else the committed one (built here).
      pkg="$out/normgen-$stem"
      [ -d "$pkg" ] || { pkg=out/normgen-$stem; make -s -j"$(nproc)" -C "$pkg" > "$out/make-bwd.log" 2>&1; }
      OUT="$out" timeout -s KILL "${TORCH_SECONDS:-240}" python3 test/gpu/torch_backward.py "$pkg" \
        "$out/torch_backward.md" > "$out/torch_backward.log" 2>&1
      r=$?; tail -14 "$out/torch_backward.log" ;;
    *) echo "unknown step '$step'"; r=2 ;;
  esac
  echo "== $step rc=$r ($(( $(date +%s) - t0 )) s)"
  [ "$r" = 0 ] || rc=1
done
exit $rc
