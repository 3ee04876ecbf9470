#!/usr/bin/env bash
# Resolution study of the dam break (issue 10): the column kept at a = 0.22 m (2a high, 5a
# tank), the spacing refined from 10 mm (20 000 particles) to 5.95 mm (100 000) and 3.86 mm
# (370 000), both solvers, run on the CPU path to t = 0.36 s (T = t sqrt(2g/a) = 3.4), with a
# frame about every 5 ms for the column height at the wall; then plots the front and the column
# height of every run against Martin & Moyce (1952) (examples/validate/, mode resolution).
#
#   scripts/resolution.sh [OUTDIR] [SIZES]     (defaults: resolution "20k 100k 370k")
#   BIN=path/to/gpu-sph scripts/resolution.sh  (default: target/release/gpu-sph)
#   END=0.52 scripts/resolution.sh             (simulated seconds; 0.52 s reaches tau = 3.44,
#                                               the last measured height)
set -euo pipefail
OUT=${1:-resolution}
SIZES=${2:-20k 100k 370k}
BIN=${BIN:-target/release/gpu-sph}
END=${END:-0.36}
declare -A N=([20k]=20000 [100k]=100000 [370k]=370000)
# a / (particles across a): nx = round(cbrt(N/2)) = 22, 37, 57.
declare -A S=([20k]=0.01 [100k]=0.0059459 [370k]=0.0038596)
# Steps between frames: about 5 ms of simulated time at each size and solver.
declare -A EVERY=([wcsph20k]=13 [dfsph20k]=6 [wcsph100k]=20 [dfsph100k]=8 [wcsph370k]=33 [dfsph370k]=10)
dirs=()
for size in $SIZES; do
    for solver in wcsph dfsph; do
        d="$OUT/$solver-$size"
        rm -rf "$d"
        mkdir -p "$d"
        echo "$(date +%T) $solver at $size"
        "$BIN" --headless --cpu --solver "$solver" -n "${N[$size]}" --spacing "${S[$size]}" \
            --end-time "$END" --stats "$d/s.csv" --export-dir "$d/f" \
            --export-every "${EVERY[$solver$size]}" >"$d/run.log" 2>&1
        tail -1 "$d/run.log"
        dirs+=("$d")
    done
done
# PEERS: SPlisHSPlasH collapse CSVs (../shared/peers/splishsplash_collapse.sh N --out F) to
# read and draw beside ours, separated by spaces.
# shellcheck disable=SC2086
cargo run --release --example validate -- resolution "${dirs[@]}" ${PEERS:-}
