#!/usr/bin/env bash
# Profile chosen kernels inside a tune: the bench runner started under ncu, given to the
# tuner as NORMGEN_RUNNER. Only the first launch of each matching kernel is profiled (the
# verification launch), so the tune's timings stay those of the runner alone, but for
# ncu's interception. On the GPU machine:
#   nvcc -arch=native -O2 -std=c++17 -I templates/cuda -I templates/cuda-bwd -o /tmp/runner tuner/native/runner.cu
#   NCU_KERNELS='normgen_layernorm_bwd_e7fb55f6983d$' NCU_OUT=$OUT NORMGEN_RUNNER=test/gpu/ncu-runner.sh \
#     node dist/cli/main.js tune ... --db /tmp/scratch.jsonl
#   ncu -i $OUT/prof-<pid>.ncu-rep --page details          # and --page source --csv --print-source sass
# Kernel symbols: forward ones are normgen_<op>_fwd_<variant id>; a backward symbol leaves
# out ctasPerSm (makeBwdVariant(...).symbol), so its first launch may be a sibling's grid.
set -euo pipefail
runner=${NCU_RUNNER:-/tmp/runner}
out=${NCU_OUT:-/tmp}
sections=()
for s in SpeedOfLight Occupancy LaunchStats WarpStateStats SchedulerStats MemoryWorkloadAnalysis ComputeWorkloadAnalysis InstructionStats SourceCounters; do
  sections+=(--section "$s")
done
# ncu's own messages go to a log: the runner's stdout carries its JSON replies.
exec ncu --log-file "$out/ncu-$$.log" -o "$out/prof-$$" --kernel-id "::regex:${NCU_KERNELS:?set NCU_KERNELS to a kernel-name regex}:1" \
  "${sections[@]}" "$runner" "$@"
