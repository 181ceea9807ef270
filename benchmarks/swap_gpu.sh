#!/usr/bin/env bash
# `sagetui swap` on an H200: a model of our own (8 bf16 attention blocks, 4,096
# tokens, 8 heads x 128) and transformers' Llama (4 layers, 16/4 heads x 128, 4,096 tokens,
# random weights, SDPA), each swapped to sage2-sm90, sage2-sm89 and sage2-sm80 against the
# program unchanged (its own SDPA), with --workload (a capture of the same program, replayed)
# for the replay's prediction beside the measured change. Each swap is 4 arms x 3 rounds = 12
# processes, about 2 minutes.
# Needs: SageAttention 2 importable and this repository on PYTHONPATH (as benchmarks/h200.sh).
# Results go to $OUT (default /tmp/sagetui-swap): swap-MODEL.json, their check, log.txt.
set -uo pipefail
OUT=${OUT:-/tmp/sagetui-swap}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
ARMS=(--variant sm90=sage2-sm90 --variant sm89=sage2-sm89 --variant sm80=sage2-sm80)
st() { echo; echo "=== $(date +%T) $*"; }
{
st "the swap's GPU test"
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_swap_gpu.py 2>&1 | tail -15
for model in blocks llama; do
    calls=$([ "$model" = blocks ] && echo 8 || echo 4)  # one forward pass's calls
    st "$model: capture one forward pass"
    timeout 120 python3 -m sagetui capture --force --out "$OUT/cap-$model" --max-calls "$calls" \
        -- python3 benchmarks/swap_models.py --model "$model" --warmup 1 --steps 0
    echo "exit $?"
    st "$model: swap, 3 rounds, with the replay"
    timeout 300 python3 -m sagetui swap "${ARMS[@]}" --rounds 3 --workload "$OUT/cap-$model" \
        --json "$OUT/swap-$model.json" --force \
        -- python3 benchmarks/swap_models.py --model "$model"
    echo "exit $?"
done
st "check"
python3 -m sagetui check "$OUT"/swap-*.json
st done
} 2>&1 | tee "$OUT/log.txt"
