#!/usr/bin/env bash
# Record the toy kernel's profile fixtures, once, on a GPU machine with nvcc, ncu, cuobjdump and
# nvdisasm: bash record.sh [OUTDIR]. Writes, for the build as it is, a second profile of the
# same binary, and a build whose source has blank lines inserted (its lines moved):
#   toy_attention.source.csv, toy_attention.source2.csv, toy_attention.listing.txt,
#   toy_attention_shifted.cu, toy_attention_shifted.source.csv, toy_attention_shifted.listing.txt
# The ncu flags are the ones sagetui's profile pass uses (session/profile_pass.py).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
NCU_FLAGS=(--nvtx --nvtx-include "toy/" --section SourceCounters --section WarpStateStats
           --clock-control none --cache-control none -f)

# three blank lines after every __device__ function's first line: every later line moves
awk '{print} /^__device__/{print ""; print ""; print ""}' "$here/toy_attention.cu" \
  > "$out/toy_attention_shifted.cu"

record() {  # record NAME SOURCE [RUNS]
  local name=$1 src=$2 runs=${3:-1}
  mkdir -p "$tmp/$name" && cp "$src" "$tmp/$name/$name.cu"
  (cd "$tmp/$name" && nvcc -lineinfo -arch=sm_90 -O3 -o "$name" "$name.cu")
  for run in $(seq 1 "$runs"); do
    local suffix=; [ "$run" -gt 1 ] && suffix=$run
    ncu "${NCU_FLAGS[@]}" -o "$tmp/$name/rep$run" "$tmp/$name/$name"
    ncu -i "$tmp/$name/rep$run.ncu-rep" --page source --csv --print-source sass \
      > "$out/$name.source$suffix.csv"
  done
  (cd "$tmp/$name" && cuobjdump -xelf all "$name" >/dev/null)
  nvdisasm -c -g -gi "$(ls "$tmp/$name"/*.cubin | head -1)" > "$out/$name.listing.txt"
}
record toy_attention "$here/toy_attention.cu" 2
record toy_attention_shifted "$out/toy_attention_shifted.cu"
ls -la "$out"
