# Sourced by run.sh and run-bwd.sh: the file stem of this machine's GPU, the name normgen merge gives
# its database (sm90-h200, sm90-h100-80gb-hbm3), so that each card's databases, reports and package
# keep their own names. STEM overrides it; without nvidia-smi: sm90-h200.
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
stem=${STEM:-sm90-$(printf '%s' "${gpu_name:-NVIDIA H200}" | tr 'A-Z' 'a-z' | sed -E 's/^nvidia +//; s/[^a-z0-9]+/-/g; s/^-|-$//g')}
