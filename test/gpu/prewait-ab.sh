#!/usr/bin/env bash
# Launched plainly, what the work before a forward kernel's first load costs: each way of leaving
# it out against the committed templates, tuned one after the other in one call on one GPU
# (run.sh's ab step under NORMGEN_PDL=0; test/gpu/plain-prewait.md):
#   bash .device/run.sh bash test/gpu/prewait-ab.sh [compiled-out] [skipped]
# compiled-out: the release, the L2 prefetch and the wait deleted from the forward template (correct
#   under plain launches only), as in plain-prewait.md part 1;
# skipped: the wait kept but branched around where the bench runner says it launched plainly
#   (release_at 3, which also stops the release at the start, in both templates), as on the
#   branch retune-next: part 3 read it across two machines, this times it beside the base.
# Each way writes $OUT/<way>/ab.md; the working tree's templates and runner are restored after each.
set -uo pipefail
out=${OUT:-/tmp/normgen-gpu}
export NORMGEN_PDL=0 AB_SECONDS=${AB_SECONDS:-150}
export AB_GRID=${PREWAIT_GRID:---op rmsnorm,rmsnorm+residual,layernorm --dtype bf16,fp32 --hidden 1024,4096 --rows 32}
saved=$(mktemp -d)
trap 'rm -rf "$saved"' EXIT
cp -r templates "$saved/" && cp tuner/native/runner.cu "$saved/"
rm -rf .device/base && mkdir -p .device/base && cp -r templates .device/base/  # the base: the templates as carried
# Replace one exact piece of a file, or fail: a template that moved on must not be timed unpatched.
patch_text() { python3 - "$@" <<'EOF'
import sys
path, old, new = sys.argv[1:4]
text = open(path).read()
if old not in text:
    sys.exit(f"prewait-ab: {path} no longer has: {old!r}")
open(path, "w").write(text.replace(old, new))
EOF
}
rc=0
for way in "$@"; do
  case $way in
    compiled-out)
      python3 - templates/cuda/norm_fwd.cu.hbs <<'EOF'
import re, sys
path = sys.argv[1]
text = open(path).read()
block = re.compile(r"  if \(p\.release_at == 0\) normgen::release_dependents\(\);\n.*?  if \(p\.release_at == 1\) normgen::release_dependents\(\);\n", re.S)
if not block.search(text):
    sys.exit(f"prewait-ab: {path} has no release ... wait ... release block")
open(path, "w").write(block.sub("", text))
EOF
      r=$? ;;
    skipped)
      patch_text templates/cuda/norm_fwd.cu.hbs "  normgen::wait_for_previous_grid();" \
        "  if (p.release_at != 3) normgen::wait_for_previous_grid();" &&
        patch_text tuner/native/runner.cu "  p.eps = eps;
  return p;" "  p.eps = eps;
  p.release_at = g_pdl ? 0 : 3;
  return p;" &&
        patch_text tuner/native/runner.cu "    ps.back().release_at = release;" "    if (g_pdl) ps.back().release_at = release;"
      r=$? ;;
    *) echo "prewait-ab: unknown way '$way' (compiled-out, skipped)"; r=2 ;;
  esac
  if [ "$r" = 0 ]; then
    mkdir -p "$out/$way"
    OUT="$out/$way" bash test/gpu/run.sh ab || r=1
  fi
  echo "prewait-ab $way rc=$r"
  [ "$r" = 0 ] || rc=1
  rm -rf templates && cp -r "$saved/templates" . && cp "$saved/runner.cu" tuner/native/runner.cu
done
exit $rc
