#!/usr/bin/env bash
# Brings a detached run's files home (the sm90-*.jsonl.gz and logs.tar.gz its last tune-wait
# returned) and makes them the committed tune of that run's card:
#   bash test/gpu/import-run.sh FILES_DIR
# The card comes from the database's header (its stem as normgen merge names it: sm90-h200,
# sm90-h100-80gb-hbm3), whatever the run named its files. The package is rebuilt here from the
# run's databases and must match the one the device built (generated files only: the device's
# copy has no sources or build). Only then do the databases and reports go to out/tuning/STEM*,
# the torch benchmark to test/gpu/bench_torch.md (the H200's) or bench_torch-CARD.md and the
# package to out/normgen-STEM: a run that fails a check changes nothing.
set -euo pipefail
files=${1:?usage: import-run.sh FILES_DIR, the folder of the last tune-wait call}
run_dbs=("$files"/sm90-*.jsonl.gz)
[ ${#run_dbs[@]} = 1 ] && [ -f "${run_dbs[0]}" ] && [ -f "$files/logs.tar.gz" ] ||
  { echo "import-run: $files needs logs.tar.gz and exactly one sm90-*.jsonl.gz" >&2; exit 2; }
run_db=${run_dbs[0]}
run_stem=$(basename "$run_db" .jsonl.gz)
stem=$(node --input-type=module -e '
  import { gunzipSync } from "node:zlib"; import { readFileSync } from "node:fs";
  import { deviceSlug } from "./dist/tuner/merge.js";
  try {
    const header = JSON.parse(gunzipSync(readFileSync(process.argv[1])).toString("utf8", 0, 4096).split("\n")[0]);
    console.log(deviceSlug(header));
  } catch (e) {
    console.error(`import-run: ${process.argv[1]} has no readable database header (${e.message}); nothing imported`);
    process.exit(2);
  }' "$run_db")
bench=test/gpu/bench_torch.md; [ "$stem" = sm90-h200 ] || bench=test/gpu/bench_torch-${stem#sm90-}.md
echo "import-run: a tune of $stem (files named $run_stem by the run)"
staged=$(mktemp -d)
trap 'rm -rf "$staged"' EXIT
mkdir "$staged/run" "$staged/tuning"
tar -xzf "$files/logs.tar.gz" -C "$staged/run"
grep -qE '^tune rc=0' "$staged/run/run.log" || { echo "import-run: the run's tune step did not end with rc=0" >&2; exit 1; }
# Sessions record their command; the detached run's folder (run.sh's tune-start) is a machine
# path, $OUT in what is committed.
{ grep -rlF /tmp/normgen-detached-tune "$staged/run" 2>/dev/null || true; } | xargs -r sed -i 's#/tmp/normgen-detached-tune#$OUT#g'
gunzip -c "$run_db" | sed 's#/tmp/normgen-detached-tune#$OUT#g' | gzip -n > "$staged/run/$run_stem.jsonl.gz"
wgsl=out/tuning/wgsl-h200-opengles.jsonl
# The device's package, rebuilt from the run's files under the run's names.
bwd=$staged/run/$run_stem-bwd.jsonl; [ -f "$bwd" ] || bwd=out/tuning/$stem-bwd.jsonl
if [ -d "$staged/run/normgen-$run_stem" ]; then
  node dist/cli/main.js build --db "$staged/run/$run_stem.jsonl.gz" --db "$bwd" --db "$wgsl" --out "$staged/check/normgen-$run_stem" > "$staged/build.log"
  differences=$(diff -r -q "$staged/run/normgen-$run_stem" "$staged/check/normgen-$run_stem" | grep -v "^Only in $staged/check/" || true)
  if [ -n "$differences" ]; then
    echo "$differences"; echo "import-run: the package built here differs from the device's (above); nothing imported" >&2; exit 1
  fi
  echo "import-run: package rebuilt here, identical to the device's"
else
  echo "import-run: the run built no package (no package step): built here unchecked"
fi
# The committed files, under the card's names.
mv "$staged/run/$run_stem.jsonl.gz" "$staged/tuning/$stem.jsonl.gz"
for suffix in .md -bwd.jsonl -bwd.md; do
  [ -f "$staged/run/$run_stem$suffix" ] && cp "$staged/run/$run_stem$suffix" "$staged/tuning/$stem$suffix"
done
bwd=$staged/tuning/$stem-bwd.jsonl; [ -f "$bwd" ] || bwd=out/tuning/$stem-bwd.jsonl
node dist/cli/main.js build --db "$staged/tuning/$stem.jsonl.gz" --db "$bwd" --db "$wgsl" --out "$staged/normgen-$stem" >> "$staged/build.log"
[ -f "$staged/run/bench_torch.md" ] && cp "$staged/run/bench_torch.md" "$bench"
cp "$staged"/tuning/* out/tuning/
rm -rf "out/normgen-$stem" && mv "$staged/normgen-$stem" "out/normgen-$stem"
echo "import-run: out/tuning/$stem.*, out/normgen-$stem$([ -f "$staged/run/bench_torch.md" ] && echo ", $bench")"
grep -E '^[a-z-]+ rc=' "$staged/run/run.log"
tail -3 "$staged/run/tune.log"
