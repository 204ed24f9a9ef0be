#!/usr/bin/env bash
# Brings a detached run's files home (the sm90-h200.jsonl.gz and logs.tar.gz its last tune-wait
# returned) and makes them the committed tune:
#   bash test/gpu/import-run.sh FILES_DIR
# The databases and reports go to out/tuning/, the torch benchmark to test/gpu/bench_torch.md,
# and the package is rebuilt here from the imported databases: it must match the one the
# device built (generated files only: the device's copy has no sources or build).
set -euo pipefail
files=${1:?usage: import-run.sh FILES_DIR, the folder of the last tune-wait call}
[ -f "$files/sm90-h200.jsonl.gz" ] && [ -f "$files/logs.tar.gz" ] || { echo "import-run: $files lacks sm90-h200.jsonl.gz or logs.tar.gz" >&2; exit 2; }
staged=$(mktemp -d)
trap 'rm -rf "$staged"' EXIT
tar -xzf "$files/logs.tar.gz" -C "$staged"
grep -qE '^tune rc=0' "$staged/run.log" || { echo "import-run: the run's tune step did not end with rc=0" >&2; exit 1; }
# Sessions record their command; the detached run's folder is a machine path, $OUT in the logs.
unpath() { sed 's#/tmp/normgen-detached-tune#$OUT#g'; }
gunzip -c "$files/sm90-h200.jsonl.gz" | unpath | gzip -n > out/tuning/sm90-h200.jsonl.gz
unpath < "$staged/sm90-h200.md" > out/tuning/sm90-h200.md
for f in sm90-h200-bwd.jsonl sm90-h200-bwd.md; do
  [ -f "$staged/$f" ] && unpath < "$staged/$f" > "out/tuning/$f"
done
[ -f "$staged/bench_torch.md" ] && unpath < "$staged/bench_torch.md" > test/gpu/bench_torch.md
node dist/cli/main.js build --db out/tuning/sm90-h200.jsonl.gz --db out/tuning/sm90-h200-bwd.jsonl \
  --db out/tuning/wgsl-h200-opengles.jsonl --out out/normgen-sm90-h200 > "$staged/build.log"
if [ -d "$staged/normgen-sm90-h200" ]; then
  { grep -rlF /tmp/normgen-detached-tune "$staged/normgen-sm90-h200" || true; } | xargs -r sed -i 's#/tmp/normgen-detached-tune#$OUT#g'
  differences=$(diff -r -q "$staged/normgen-sm90-h200" out/normgen-sm90-h200 | grep -v '^Only in out/' || true)
  if [ -n "$differences" ]; then
    echo "$differences"; echo "import-run: the package built here differs from the device's (above)" >&2; exit 1
  fi
  echo "import-run: package rebuilt here, identical to the device's"
fi
grep -E '^[a-z-]+ rc=' "$staged/run.log"
tail -3 "$staged/tune.log"
