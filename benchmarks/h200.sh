#!/usr/bin/env bash
# Everything sagetui measures on an H200 for docs/h200-results.md and sample_results/, in one go.
# Needs: a SageAttention 2 build importable (PYTHONPATH), this repository on PYTHONPATH, and
# SM89_VARIANT pointing at a second build of _qattn_sm89 (another compiler flag). It builds
# nothing. Results go to $OUT (default /tmp/sagetui-h200): results.tar.gz and log.txt.
set -uo pipefail
OUT=${OUT:-/tmp/sagetui-h200}
R=$(mktemp -d)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# results are packed after every step, so a step that runs out of time loses only itself
st() { tar -C "$R" -czf "$OUT/results.tar.gz" . 2>/dev/null; echo; echo "=== $(date +%T) $*"; }
SM89=$(python3 -c "import sageattention._qattn_sm89 as m; print(m.__file__)")
META=(--metadata inputs=synthetic-randn --metadata workload=reference-shape-of-report-000)
run() { timeout "$1" python3 -m sagetui run --quiet --force "${@:2}"; echo "exit $?"; }

st doctor
python3 -m sagetui doctor | tee "$R/doctor.txt"

st "GPU tests"
SAGETUI_SM89_VARIANT="$SM89_VARIANT" timeout 180 python3 -m pytest -q -p no:cacheprovider \
    tests/gpu 2>&1 | tail -15

st "harness overhead"
timeout 90 python3 benchmarks/harness_overhead.py --json "$R/harness.json"

st "sm89 phase breakdown + tail study, reference shape"
run 150 --backend sage2-sm89 --tail-study "${META[@]}" --json "$R/h200_sm89_reference_shape.json"
st "sm90 phase breakdown + tail study, reference shape"
run 120 --backend sage2-sm90 --tail-study "${META[@]}" --json "$R/h200_sm90_reference_shape.json"
st "variant comparison: stock sm89 vs -lineinfo build"
run 120 --variant stock=sage2-sm89 --variant "lineinfo=sage2-sm89@$SM89_VARIANT" "${META[@]}" \
    --json "$R/h200_sm89_variants.json"
st "A/A: the same _qattn_sm89 build loaded twice"
run 120 --variant "a=sage2-sm89@$SM89" --variant "b=sage2-sm89@$SM89" "${META[@]}" \
    --json "$R/h200_sm89_same_build_twice.json"
st "fidelity benchmark"
timeout 150 python3 benchmarks/fidelity.py --json "$R/fidelity.json"
st "isolation benchmark"
timeout 120 python3 benchmarks/isolation.py --json "$R/isolation.json"
st "backends side by side at the reference shape"
run 150 --backend sage2-sm90 --backend sage2-auto --backend sdpa --backend sage-triton \
    --variant "sm89-fp16acc=sage2-sm89[pv_accum=fp32+fp16]" --rounds 3 "${META[@]}" \
    --json "$R/h200_backends.json"

st "check every report"
python3 -m sagetui check "$R"/h200_*.json
st done
