#!/usr/bin/env bash
# Brings a detached run's files home (the sm90-h200.jsonl.gz and logs.tar.gz its last tune-wait
# returned) and makes them the committed tune:
#   bash test/gpu/import-run.sh FILES_DIR
# The package is rebuilt here from the run's databases and must match the one the device built
# (generated files only: the device's copy has no sources or build). Only then do the databases
# and reports go to out/tuning/, the torch benchmark to test/gpu/bench_torch.md and the package to
# out/normgen-sm90-h200: a run that fails a check changes nothing.
set -euo pipefail
files=${1:?usage: import-run.sh FILES_DIR, the folder of the last tune-wait call}
[ -f "$files/sm90-h200.jsonl.gz" ] && [ -f "$files/logs.tar.gz" ] || { echo "import-run: $files lacks sm90-h200.jsonl.gz or logs.tar.gz" >&2; exit 2; }
staged=$(mktemp -d)
trap 'rm -rf "$staged"' EXIT
mkdir "$staged/run" "$staged/tuning"
tar -xzf "$files/logs.tar.gz" -C "$staged/run"
grep -qE '^tune rc=0' "$staged/run/run.log" || { echo "import-run: the run's tune step did not end with rc=0" >&2; exit 1; }
# Sessions record their command; the detached run's folder (run.sh's tune-start) is a machine
# path, $OUT in what is committed.
unpath=(sed -i 's#/tmp/normgen-detached-tune#$OUT#g')
gunzip -c "$files/sm90-h200.jsonl.gz" > "$staged/tuning/sm90-h200.jsonl"
for f in sm90-h200.md sm90-h200-bwd.jsonl sm90-h200-bwd.md bench_torch.md; do
  [ -f "$staged/run/$f" ] && cp "$staged/run/$f" "$staged/tuning/"
done
{ grep -rlF /tmp/normgen-detached-tune "$staged/tuning" "$staged/run/normgen-sm90-h200" 2>/dev/null || true; } | xargs -r "${unpath[@]}"
gzip -n "$staged/tuning/sm90-h200.jsonl"
bwd=$staged/tuning/sm90-h200-bwd.jsonl; [ -f "$bwd" ] || bwd=out/tuning/sm90-h200-bwd.jsonl
node dist/cli/main.js build --db "$staged/tuning/sm90-h200.jsonl.gz" --db "$bwd" \
  --db out/tuning/wgsl-h200-opengles.jsonl --out "$staged/normgen-sm90-h200" > "$staged/build.log"
if [ -d "$staged/run/normgen-sm90-h200" ]; then
  differences=$(diff -r -q "$staged/run/normgen-sm90-h200" "$staged/normgen-sm90-h200" | grep -v "^Only in $staged/normgen-sm90-h200" || true)
  if [ -n "$differences" ]; then
    echo "$differences"; echo "import-run: the package built here differs from the device's (above); nothing imported" >&2; exit 1
  fi
  echo "import-run: package rebuilt here, identical to the device's"
else
  echo "import-run: the run built no package (no package step): rebuilt here unchecked"
fi
[ -f "$staged/tuning/bench_torch.md" ] && mv "$staged/tuning/bench_torch.md" test/gpu/bench_torch.md
cp "$staged"/tuning/* out/tuning/
rm -rf out/normgen-sm90-h200 && mv "$staged/normgen-sm90-h200" out/normgen-sm90-h200
grep -E '^[a-z-]+ rc=' "$staged/run/run.log"
tail -3 "$staged/run/tune.log"
