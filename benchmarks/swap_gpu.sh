#!/usr/bin/env bash
# `sagetui swap` on the GPU, beside an independent loop (benchmarks/swap_fidelity_gpu.py): a model
# of our own (8 bf16 attention blocks, 8 heads x 128) and transformers' Llama (4 layers, 16/4
# heads x 128, random weights, SDPA), each swapped to sage2-sm90, sage2-sm89 and sage2-sm80
# against the program unchanged (its own SDPA), interleaved step by step in one process (the
# default); the wrapper's cost on the Llama at 1,024 tokens; and one swap in processes
# (--processes). Usage: benchmarks/swap_gpu.sh [blocks] [llama] [wrapper] [processes] [tests]
# Needs: SageAttention 2 importable and this repository on PYTHONPATH (as benchmarks/h200.sh).
# Results go to $OUT (default /tmp/sagetui-swap): the reports and loops' JSON in results.tgz,
# the log in log.txt.
set -uo pipefail
OUT=${OUT:-/tmp/sagetui-swap}
R=$(mktemp -d)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
ARMS=(--variant sm90=sage2-sm90 --variant sm89=sage2-sm89 --variant sm80=sage2-sm80)
# AFFINITY=CPU: sagetui's program and the loop on the same CPU (a launch-bound step's time
# depends on the CPU); UNTIL_CI: the swap's --until-ci (points, full width)
PIN=(); [ -n "${AFFINITY:-}" ] && PIN=(--affinity "$AFFINITY")
UNTIL=(--until-ci "${UNTIL_CI:-2}" --steps 300)
st() { tar -C "$R" -czf "$OUT/results.tgz" . 2>/dev/null; echo; echo "=== $(date -u +%FT%T) $*"; }
timed() { local t0 rc; t0=$(date +%s%N); "$@"; rc=$?; echo "exit $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms"; }
{
for what in "${@:-blocks llama wrapper processes tests}"; do for w in $what; do case $w in
blocks|llama)
    st "$w: sagetui swap, interleaved (4 arms + unwrapped)"
    timed timeout 200 python3 -m sagetui swap "${ARMS[@]}" "${PIN[@]}" "${UNTIL[@]}" \
        --json "$R/swap-$w.json" --force \
        -- python3 benchmarks/swap_models.py --model "$w" --steps 1200
    st "$w: the independent loop"
    timed timeout 200 python3 benchmarks/swap_fidelity_gpu.py --model "$w" --rounds 100 \
        "${PIN[@]}" --json "$R/fidelity-$w.json" ;;
wrapper)
    for tokens in 1024 4096; do
        st "the wrapper's cost: capture_overhead_gpu.py's model at $tokens tokens"
        timed timeout 200 python3 -m sagetui swap --variant sm90=sage2-sm90 "${PIN[@]}" \
            --until-ci 2 --steps 300 --json "$R/swap-prenorm-$tokens.json" --force \
            -- python3 benchmarks/swap_models.py --model prenorm --tokens "$tokens" --steps 1500
    done
    st "the wrapper's cost: Llama at 1,024 tokens"
    timed timeout 200 python3 -m sagetui swap --variant sm90=sage2-sm90 "${PIN[@]}" \
        --until-ci 2 --steps 300 \
        --json "$R/swap-llama-1024.json" --force \
        -- python3 benchmarks/swap_models.py --model llama --tokens 1024 --steps 1500 ;;
processes)
    st "blocks in processes (--processes --rounds 3)"
    timed timeout 250 python3 -m sagetui swap "${ARMS[@]}" --processes --rounds 3 \
        --json "$R/swap-blocks-processes.json" --force \
        -- python3 benchmarks/swap_models.py --model blocks ;;
tests)
    st "the swap's GPU tests"
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_swap_gpu.py 2>&1 \
        | tail -15 ;;
esac; done; done
st "check"
python3 -m sagetui check "$R"/swap-*.json
st done
} 2>&1 | tee "$OUT/log.txt"
