#!/usr/bin/env bash
# The first sloshing mode of a tank (issue 34): L = 0.6 m long, W = 0.1 m wide, d = 0.2 m of
# water, the surface started at rest at d + A cos(pi x / L) with A = 0.02 m (a tenth of the
# depth), s = 0.01 m (12 000 particles). Both solvers on the CPU path for about two periods
# (linear theory: omega^2 = g k tanh(k d), k = pi / L, T = 0.99 s), a frame every ~5 ms; then
# `validate standing-wave` prints each run's period against linear theory and how much of its
# height the wave keeps after one period. Water's own viscous decay over one period,
# exp(-2 nu k^2 T) with nu = 1e-6 m^2/s, is 5e-5: a wave that loses more loses it to the model.
#
#   scripts/standing_wave.sh [OUTDIR] [SOLVERS]     (defaults: standing_wave "wcsph dfsph")
#   BIN=path/to/gpu-sph S=0.005 END=2.2 scripts/standing_wave.sh
set -euo pipefail
OUT=${1:-standing_wave}
SOLVERS=${2:-wcsph dfsph}
BIN=${BIN:-target/release/gpu-sph}
S=${S:-0.01}
END=${END:-2.2}
mkdir -p "$OUT"
python3 - "$OUT/wave.csv" "$S" <<'PY'
import math, sys
path, s = sys.argv[1], float(sys.argv[2])
L, W, d, A = 0.6, 0.1, 0.2, 0.02
nx, nz = round(L / s), round(W / s)
with open(path, "w") as f:
    f.write("x,y,z\n")
    for i in range(nx):
        x = (i + 0.5) * s
        top = d + A * math.cos(math.pi * x / L)
        j = 0
        while (j + 0.5) * s < top:
            for k in range(nz):
                f.write(f"{x:.6f},{(j + 0.5) * s:.6f},{(k + 0.5) * s:.6f}\n")
            j += 1
PY
declare -A EVERY=([wcsph]=10 [dfsph]=6)
dirs=()
for solver in $SOLVERS; do
    d="$OUT/$solver"
    rm -rf "$d"
    mkdir -p "$d"
    echo "$(date +%T) $solver"
    # A particle file is taken as it is; this one is water at rest, so WCSPH starts it in
    # hydrostatic equilibrium as a scene would (DFSPH's water is incompressible).
    start=()
    [ "$solver" = wcsph ] && start=(--hydrostatic-start)
    "$BIN" --headless --cpu --solver "$solver" --input "$OUT/wave.csv" --spacing "$S" "${start[@]}" \
        --tank-min 0,0,0 --tank-max 0.6,0.4,0.1 --end-time "$END" \
        --stats "$d/s.csv" --export-dir "$d/f" --export-every "${EVERY[$solver]}" \
        "${@:3}" >"$d/run.log" 2>&1
    tail -1 "$d/run.log"
    dirs+=("$d")
done
cargo run --release --quiet --example validate -- standing-wave "${dirs[@]}"
