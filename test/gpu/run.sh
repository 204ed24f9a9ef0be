#!/usr/bin/env bash
# The GPU tests and the committed tune, run on the GPU machine through the device tool:
#   bash .device/run.sh bash test/gpu/run.sh [verify] [faults] [resume] [tune] [focus] [exhaustive] [cluster-select]
#   bash .device/run.sh bash test/gpu/run.sh tune-start, then tune-wait (again, in each next call, until it says done)
#   DETACHED_STEPS='tune bwd-tune package bench-torch torch verify-quick torch-bwd' ... tune-start: a re-tune and
#     every log the package feeds, in one detached run
#   bash test/gpu/run.sh [torch] [bench-torch] [release-chains] [roofline-chains]     (Python and PyTorch only, no Node)
#   bash .device/run.sh bash test/gpu/run.sh plain-tune   the small shapes tuned under plain launches (the plain-launch table)
#   TUNE_SEED=out/tuning/<stem>.jsonl.gz ... tune: a seeded re-tune after a template change (tune --seed);
#     give it to every tune-wait too: one that restarts the tune on a fresh machine passes it on
#   bash .device/run.sh bash test/gpu/run.sh pkg-ab   the working tree's package against .device/base-pkg's, against torch
#     (PKG_AB_ARGS: bench_torch.py's arguments; PKG_AB_SECONDS: each side's limit, 250 s)
#   bash .device/run.sh bash test/gpu/run.sh ab     a template change against the committed templates, after
#     rm -rf .device/base && mkdir -p .device/base && git archive HEAD templates | tar -x -C .device/base
# Logs and databases go to $OUT (default /tmp/normgen-gpu), named after the card (stem.sh: sm90-h200.jsonl.gz,
# normgen-sm90-h100-80gb-hbm3); each step prints its status.
set -uo pipefail
out=${OUT:-/tmp/normgen-gpu}
. "$(dirname "$0")/stem.sh"
mkdir -p "$out"
tune_seconds=${TUNE_SECONDS:-300}
# The committed tune covers the default grid (TUNE_GRID=' ') or a reduced one.
tune_grid=${TUNE_GRID:---dtype bf16,fp32 --hidden 1024,4096,8192,16384,65536,131072 --rows 32,2048,32768}
exhaustive_grid=${EXHAUSTIVE_GRID:---op rmsnorm --dtype bf16 --hidden 4096,65536 --rows 2048,32768}
# The benchmark against torch: a sample of the tuned grid (every tuned shape takes too long to compile with torch.compile).
# torch.compile's compiles stop after --budget-s: 300 s left 25 of the 108 shapes uncompiled once (2026-11-29).
bench_args=${BENCH_ARGS:---budget-s 420 --hidden 1024,4096,8192,16384,65536,131072 --rows 32,2048,32768 --specs rmsnorm.bf16.w-same,rmsnorm.bf16.w-same.res-same,layernorm.bf16.w-same.bias,rmsnorm.fp32.w-same,rmsnorm.fp32.w-same.res-same,layernorm.fp32.w-same.bias}
# The package the torch steps load: the committed one, or the one the package step builds.
pkg=${PKG:-out/normgen-$stem}
rc=0
# A tune of the committed tune's kind (sm90, screened, budget screen:4), killed after $1 seconds;
# the other arguments are tune's (a grid, --db, --report).
screened_args='--arch sm90 --budget screen:4'
screened_tune() { local seconds=$1; shift; timeout -s KILL "$seconds" node dist/cli/main.js tune $screened_args "$@"; }
# Builds the package in $1 from scratch (-B): a package folder may hold another package's build
# outputs (carried, or kept from an earlier call), newer than its sources; make then kept them
# and both sides of an A/B ran one library.
build_package() { make -B -s -j"$(nproc)" -C "$1"; }
# A process that has not exited (an exited, unreaped child is a zombie: state Z).
alive() { local state; state=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null); [ -n "$state" ] && [ "$state" != Z ]; }
for step in "$@"; do
  case $step in
    verify|verify-quick)
      log=$([ "$step" = verify ] && echo correctness || echo correctness-quick)
      timeout -s KILL 420 node dist/cli/main.js verify --arch sm90 $([ "$step" = verify-quick ] && echo --quick) --log "$out/$log.md" > "$out/$step.log" 2>&1
      r=$?; echo "$step rc=$r"; tail -2 "$out/$step.log" ;;
    faults)
      timeout -s KILL 150 node dist/test/gpu/faults.js --log "$out/faults.md" > "$out/faults.log" 2>&1
      r=$?; echo "faults rc=$r"; tail -1 "$out/faults.log" ;;
    resume)
      # A tune killed with SIGKILL once it has saved results, then the same command again: it must
      # skip finished work. Killed by progress, not after fixed seconds: on a fresh machine the
      # runner's build and the first compiles took more than 12 s before any result.
      args="tune --arch sm90 --op rmsnorm,layernorm --dtype bf16,fp32 --hidden 1024,4096,16384 --rows 8,512,8192 --db $out/resume.jsonl"
      rm -f "$out/resume.jsonl"
      node dist/cli/main.js $args > "$out/resume.log" 2>&1 &
      tune_pid=$!
      for _ in $(seq 240); do
        sleep 0.5
        saved=$(grep -c '"kind":"result"' "$out/resume.jsonl" 2>/dev/null); saved=${saved:-0}
        [ "$saved" -ge 1000 ] || ! alive $tune_pid && break
      done
      if alive $tune_pid; then
        kill -KILL $tune_pid; wait $tune_pid 2>/dev/null
        saved=$(grep -c '"kind":"result"' "$out/resume.jsonl" 2>/dev/null)
        echo "killed with SIGKILL: ${saved:-0} results saved" | tee -a "$out/resume.log"
        timeout -s KILL 300 node dist/cli/main.js $args >> "$out/resume.log" 2>&1
        r=$?
        skipped=$(grep -oE '[0-9]+ already in the database' "$out/resume.log" | tail -1 | cut -d' ' -f1)
        # PASS only when the second run skipped finished work and completed the rest.
        [ "$r" = 0 ] && [ "${skipped:-0}" -gt 0 ] || r=1
        echo "resume rc=$r: ${skipped:-0} measurements skipped as already in the database"
      else
        echo "resume rc=1: the first run ended before it was killed (grid too small to interrupt)"; r=1
      fi ;;
    tune)
      # Continue a tune from an earlier call: its database (gzipped), carried in .device/db/.
      [ -f .device/db/$stem.jsonl.gz ] && [ ! -f "$out/$stem.jsonl" ] && gunzip -c .device/db/$stem.jsonl.gz > "$out/$stem.jsonl"
      # The default grid's database is ~95 MB: files that large do not come back from the
      # machine, so it comes back gzipped. A snapshot every minute, so that a call ended
      # from outside (its time or the device budget spent) still brings back what was measured
      # (a line cut short at the end is dropped when the database is read).
      snapshot() { gzip -n -c "$out/$stem.jsonl" > "$out/$stem.jsonl.gz.part" && mv "$out/$stem.jsonl.gz.part" "$out/$stem.jsonl.gz"; }
      ( while sleep 60; do [ -f "$out/$stem.jsonl" ] && snapshot; done ) &
      snapshots=$!
      # TUNE_SEED: a seeded re-tune from that earlier database (after the grid and --db, where the restart guard reads them).
      screened_tune "$tune_seconds" $tune_grid \
        --db "$out/$stem.jsonl" --report "$out/$stem.md" ${TUNE_SEED:+--seed "$TUNE_SEED"} > "$out/tune.log" 2>&1
      r=$?; echo "tune rc=$r"; tail -2 "$out/tune.log"
      kill $snapshots; wait $snapshots 2>/dev/null
      snapshot && rm "$out/$stem.jsonl" ;;
    tune-start|tune-wait)
      # The tune step detached from the call (setsid), so that one uninterrupted tune can outlast
      # the device tool's call limit: tune-start starts it, each tune-wait waits up to
      # TUNE_WAIT seconds (default 570) and copies its files so far to $out. The machine must
      # stay held between calls (the next call at once), or the run is lost with it: a tune-wait
      # on a fresh machine starts it again, resuming from the database carried in .device/db.
      detached=${DETACHED_DIR:-/tmp/normgen-detached-tune}  # test/run-sh.test.ts sets its own
      start_detached() {
        rm -rf "$detached" && mkdir -p "$detached"
        # Created here, not by the detached shell: a tune-wait right after (same call) finds it.
        : > "$detached/run.log"
        # 'finished' appears once the step is over, its database's last snapshot written.
        setsid env OUT="$detached" TUNE_SECONDS="${TUNE_SECONDS:-1500}" \
          bash -c 'bash "$1" ${2} >> "$3/run.log" 2>&1; touch "$3/finished"' _ "$0" "${DETACHED_STEPS:-tune}" "$detached" < /dev/null > /dev/null 2>&1 &
        echo "tune-start: detached (pid $!): ${DETACHED_STEPS:-tune}"
      }
      r=0
      if [ "$step" = tune-start ]; then
        start_detached
      elif [ ! -f "$detached/run.log" ]; then
        # A fresh machine: the one tune-start ran on was released, the run with it. The tune step
        # resumes from the database carried in .device/db (the last wait's, copied there).
        if [ -f .device/db/$stem.jsonl.gz ]; then
          # Only over the grid the database was started with (its first session's command): a call
          # without that start's TUNE_GRID would tune run.sh's reduced default grid and call it done.
          db_grid=$(gunzip -c .device/db/$stem.jsonl.gz | grep -m1 '"kind":"session"' |
            sed -n "s/.*\"command\":\"normgen tune $screened_args *\(.*\) --db .*/\1/p")
          if [ "$(echo $db_grid)" != "$(echo $tune_grid)" ]; then
            echo "tune-wait: the database in .device/db was started over ${db_grid:+the grid }'${db_grid:-the default grid}', not this call's '$tune_grid': call again with TUNE_GRID='${db_grid:- }'"; r=1
          else
            echo "tune-wait: no detached run on this machine (released since): restarted from the database in .device/db"
            start_detached
          fi
        else
          echo "tune-wait: no detached run on this machine (released since tune-start) and no database in .device/db to resume: copy the last wait's $stem.jsonl.gz there"; r=1
        fi
      fi
      if [ "$step" = tune-wait ] && [ -f "$detached/run.log" ]; then
        waited=0
        while [ ! -f "$detached/finished" ] && [ "$waited" -lt "${TUNE_WAIT:-570}" ]; do sleep 5; waited=$((waited + 5)); done
        # At most 8 files come back from a call: the database, and every log and smaller database in one archive.
        cp "$detached"/$stem.jsonl.gz "$out"/ 2>/dev/null
        (cd "$detached" && tar -czf "$out/logs.tar.gz" --exclude=$stem.jsonl.gz --exclude='*.part' --exclude=finished \
          --exclude="normgen-$stem*/src" --exclude="normgen-$stem*/build" --exclude='*.so' -- *) 2>/dev/null
        # Each step's status line ("tune rc=0"); the run is done when every one of them is rc=0.
        statuses=$(grep -E '^[a-z-]+ rc=' "$detached/run.log" 2>/dev/null); [ -n "$statuses" ] && echo "$statuses"
        if [ ! -f "$detached/finished" ]; then echo "tune-wait: still running, call tune-wait again"; r=0
        elif ! grep -qv 'rc=0' <<< "$statuses"; then echo "tune-wait: done"; r=0
        else echo "tune-wait: a step failed"; r=1; fi
        tail -1 "$detached/tune.log" 2>/dev/null
      fi ;;
    focus)
      # A quick tune of the problems still short of the target, compared with the committed
      # database per storage: how a template change does, in about a minute.
      focus_grid=${FOCUS_GRID:---op rmsnorm,layernorm --dtype bf16 --hidden 1024,8192,16384,32768,65536,131072 --rows 32,2048,32768}
      screened_tune "${FOCUS_SECONDS:-240}" $focus_grid \
        --db "$out/focus.jsonl" --report "$out/focus-tune.md" > "$out/focus.log" 2>&1
      r=$?; echo "focus rc=$r"; tail -1 "$out/focus.log"
      node dist/test/gpu/compare-db.js out/tuning/$stem.jsonl.gz "$out/focus.jsonl" --log "$out/focus.md" | head -1 ;;
    ab)
      # The working tree's templates and the committed ones (.device/base/templates), the same grid
      # tuned with each in this call on this GPU, the change first: their times compare, where a
      # tune against the committed database compares across machines (test/gpu/ln-few-rows.md).
      ab_grid=${AB_GRID:---op layernorm,rmsnorm --dtype bf16,fp32 --hidden 32768,65536,131072 --rows 128,512,2048}  # ~75 s a tune
      if [ ! -d .device/base/templates/cuda ]; then
        echo "ab rc=2: no .device/base/templates (see the top of this script)"; r=2
      else
        base=/tmp/normgen-ab-base
        rm -rf "$base" "$out/ab-new.jsonl" "$out/ab-base.jsonl" && cp -r . "$base" && rm -rf "$base/templates" && cp -r .device/base/templates "$base/templates"
        screened_tune "${AB_SECONDS:-240}" $ab_grid --db "$out/ab-new.jsonl" > "$out/ab-new.log" 2>&1
        r=$?
        (cd "$base" && screened_tune "${AB_SECONDS:-240}" $ab_grid --db "$out/ab-base.jsonl" > "$out/ab-base.log" 2>&1) || r=1
        node dist/test/gpu/compare-db.js "$out/ab-base.jsonl" "$out/ab-new.jsonl" --log "$out/ab.md" | head -1 || r=1
        echo "ab rc=$r"
      fi ;;
    exhaustive)
      timeout -s KILL "$tune_seconds" node dist/cli/main.js tune --arch sm90 --budget none $exhaustive_grid \
        --db "$out/exhaustive.jsonl" > "$out/exhaustive.log" 2>&1
      r=$?; echo "exhaustive rc=$r"; tail -1 "$out/exhaustive.log"
      node dist/test/gpu/compare-budget.js "$out/$stem.jsonl.gz" "$out/exhaustive.jsonl" --log "$out/budget.md" | head -1 ;;
    bwd-tune|torch-bwd)
      # The backward grid the package uses (its templates include the forward's), or the package's
      # gradients and timings against torch (the package step's package, else the committed one).
      STEM="$stem" OUT="$out" bash test/gpu/run-bwd.sh "$([ "$step" = bwd-tune ] && echo tune || echo torch)" > "$out/$step.out" 2>&1
      r=$?; echo "$step rc=$r"; tail -3 "$out/$step.out" ;;
    package)
      # The package from this run's databases (each where this run has one, else the committed one),
      # built with nvcc: the torch steps after it load this one.
      fwd=$out/$stem.jsonl.gz; [ -f "$fwd" ] || fwd=out/tuning/$stem.jsonl.gz
      bwd=$out/$stem-bwd.jsonl; [ -f "$bwd" ] || bwd=out/tuning/$stem-bwd.jsonl
      pkg=$out/normgen-$stem
      command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
      node dist/cli/main.js build --db "$fwd" --db "$bwd" --db out/tuning/wgsl-h200-opengles.jsonl --out "$pkg" > "$out/package.log" 2>&1 &&
        make -s -j"$(nproc)" -C "$pkg" >> "$out/package.log" 2>&1
      r=$?; echo "package rc=$r"; tail -1 "$out/package.log" ;;
    torch|bench-torch)
      # The PyTorch binding: build the package's library, then the held-out shapes,
      # torch.compile and errors (torch), or the timings against torch (bench-torch).
      command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
      script=$([ "$step" = torch ] && echo torch_consumer || echo bench_torch)
      build_package "$pkg" > "$out/make.log" 2>&1 &&
        OUT="$out" timeout -s KILL 570 python3 "test/gpu/$script.py" "$pkg" "$out/$script.md" $([ "$step" = bench-torch ] && echo "$bench_args") > "$out/$script.log" 2>&1
      r=$?; echo "$step rc=$r"; tail -1 "$out/$script.log" ;;
    plain-tune)
      # The plain-launch table's tune (NORMGEN_PDL=0: each forward kernel's plain twin timed, as
      # the package launches plainly) into $stem-plain.jsonl.gz, at the shapes where a kernel's
      # prologue is a visible part of its time; normgen build gives the committed table's
      # entries these winners for plain launches (test/gpu/plain-launch-table.md).
      plain_grid=${PLAIN_GRID:---dtype bf16,fp32 --hidden 1024,4096,8192,16384 --rows 32,2048}
      # A tune cut short by its time still leaves its finished problems in the database.
      NORMGEN_PDL=0 screened_tune "${PLAIN_SECONDS:-480}" $plain_grid --db "$out/$stem-plain.jsonl" --report "$out/$stem-plain.md" > "$out/plain-tune.log" 2>&1
      r=$?; echo "plain-tune rc=$r$([ "$r" = 137 ] && echo ": stopped after ${PLAIN_SECONDS:-480} s")"; tail -2 "$out/plain-tune.log"
      [ -s "$out/$stem-plain.jsonl" ] && gzip -9 -f "$out/$stem-plain.jsonl" ;;
    release-chains)
      # The package's short kernels in graphs of 200-4096 calls, released as tuned, at the start
      # and after the wait (NORMGEN_RELEASE): where the tuner's choice (timed in graphs of about
      # 1 ms) and the benchmark's graphs of 4096 calls disagree (test/gpu/release-choice.md).
      command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
      chain_shapes=${CHAIN_SHAPES:-rmsnorm.fp32.w-same.res-same:1024x32,rmsnorm.bf16.w-same:1024x32,layernorm.bf16.w-same.bias:1024x32,rmsnorm.bf16.w-same.res-same:4096x32,rmsnorm.fp32.w-same:8192x32}
      build_package "$pkg" > "$out/make.log" 2>&1
      r=$?
      for release in tuned start late; do
        [ "$r" = 0 ] || break
        env $([ "$release" = tuned ] || echo "NORMGEN_RELEASE=$release") timeout -s KILL 200 python3 test/gpu/chain_length.py "$pkg" "$out/chain-$release.md" \
          --shapes "$chain_shapes" --calls 200,800,1600,4096 --no-compile > "$out/chain-$release.log" 2>&1 || r=1
      done
      echo "release-chains rc=$r"; tail -1 "$out/chain-late.log" 2>/dev/null ;;
    roofline-chains)
      # The 32768-row shapes where torch.compile stays 0.3-0.8% ahead at the copy roofline, and one
      # where normgen leads (bf16 RMSNorm x 16384), with torch.compile, in graphs of 8 (the
      # benchmark's), 16 and 64 calls, fresh and reused outputs: chain length or footprint,
      # which of the harnesses' differences costs the package (test/gpu/roofline-ties.md).
      command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
      build_package "$pkg" > "$out/make.log" 2>&1 &&
        timeout -s KILL 300 python3 test/gpu/chain_length.py "$pkg" "$out/chain-roofline.md" --calls 8,16,64 \
          --shapes rmsnorm.bf16.w-same:8192x32768,layernorm.fp32.w-same.bias:4096x32768,rmsnorm.fp32.w-same:4096x32768,rmsnorm.bf16.w-same:16384x32768 \
          > "$out/chain-roofline.log" 2>&1
      r=$?; echo "roofline-chains rc=$r"; tail -1 "$out/chain-roofline.log" ;;
    cluster-select)
      # The package's C selection on this GPU against its tuned table (clusters of 16 kept).
      command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
      build_package "$pkg" > "$out/make.log" 2>&1 &&
        node dist/test/gpu/cluster-select.js "$pkg" --log "$out/cluster-select.md" > "$out/cluster-select.log" 2>&1
      r=$?; echo "cluster-select rc=$r"; tail -1 "$out/cluster-select.log" ;;
    pkg-ab)
      # The working tree's package against another one (.device/base-pkg/out/normgen-$stem, e.g. main's:
      #   mkdir -p .device/base-pkg && git archive main out/normgen-$stem | tar -x -C .device/base-pkg),
      # both built here and each timed against torch (programmatic and plain launches) one after the
      # other in this call, then the PyTorch consumer test on the working tree's: a package-only change
      # (plain twins, test/gpu/plain-twins.md) measured without a re-tune. A change to the forward
      # partials is measured the same way, spliced into a package by test/gpu/splice-partials.ts.
      command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
      ab_args=${PKG_AB_ARGS:---budget-s 150 --hidden 1024,4096,16384 --rows 32,2048 --specs rmsnorm.bf16.w-same,rmsnorm.bf16.w-same.res-same,rmsnorm.fp32.w-same,layernorm.fp32.w-same.bias}
      # A third package in .device/alt-pkg/out/normgen-$stem, where there is one, is timed between the two (side alt).
      declare -A side_pkg=([base]=.device/base-pkg/out/normgen-$stem [alt]=.device/alt-pkg/out/normgen-$stem [new]=$pkg)
      sides=$([ -d "${side_pkg[alt]}" ] && echo base alt new || echo base new)
      r=0
      for side in $sides; do build_package "${side_pkg[$side]}" >> "$out/pkg-ab-build.log" 2>&1 || r=1; done
      for side in $sides; do
        [ "$r" = 0 ] || break
        # Each side's run is cut at PKG_AB_SECONDS: at about 5 s a shape, 48 shapes ran past 250 s (H100).
        OUT="$out" timeout -s KILL "${PKG_AB_SECONDS:-250}" python3 test/gpu/bench_torch.py "${side_pkg[$side]}" "$out/bench_torch-$side.md" $ab_args > "$out/bench_torch-$side.log" 2>&1
        s=$?; [ "$s" = 137 ] && echo "pkg-ab: the $side side stopped after ${PKG_AB_SECONDS:-250} s (PKG_AB_SECONDS)"; [ "$s" = 0 ] || r=1
      done
      [ "$r" = 0 ] && { OUT="$out" timeout -s KILL 200 python3 test/gpu/torch_consumer.py "$pkg" "$out/torch_consumer.md" > "$out/torch_consumer.log" 2>&1 || r=1; }
      echo "pkg-ab rc=$r ($sides)"; for side in $sides; do grep -h '^- speedup' "$out/bench_torch-$side.md" 2>/dev/null; done; tail -1 "$out/torch_consumer.log" 2>/dev/null ;;
    *) echo "unknown step '$step'"; r=2 ;;
  esac
  [ "$r" = 0 ] || rc=1
done
exit $rc
