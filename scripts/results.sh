#!/usr/bin/env bash
# The figures of docs/results.md, in tiers:
#
#   scripts/results.sh quick          the quick figures (a few minutes on 2 cores): computes each
#                                     and fails if one has left the page's tolerance; cargo test
#                                     runs the same check (tests/suite/results.rs)
#   scripts/results.sh long DIR       every other figure of the page (hours on 2 cores): runs
#                                     the collapse, wave, rest, density and verify runs into DIR,
#                                     redraws docs/resolution_*.png and writes DIR/tables.md
#   scripts/results.sh status         copies docs/results.md's status block into README.md
#
# BIN: the gpu-sph binary (default: target/release/gpu-sph, built first).
# SIZES: the collapse's sizes (default "20k 100k"; scripts/resolution.sh also knows 370k).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
}

status() {
    python3 - <<'PY'
import re, sys
page = open("docs/results.md").read()
readme = open("README.md").read()
pat = re.compile(r"<!-- status -->.*?<!-- /status -->", re.S)
block = pat.search(page)
if not block or not pat.search(readme):
    sys.exit("results.sh: docs/results.md and README.md each need a <!-- status --> ... <!-- /status --> block")
new = pat.sub(lambda _: block.group(0), readme, count=1)
if new != readme:
    open("README.md", "w").write(new)
    print("README.md: status copied from docs/results.md")
else:
    print("README.md: status already docs/results.md's")
PY
}

# Mean of a stats column over rows FROM.. (1-based data rows), and the largest of another.
stats_mean() {
    python3 - "$@" <<'PY'
import csv, sys
path, col, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = list(csv.DictReader(open(path)))[start - 1:]
vals = [float(r[col]) for r in rows]
print(f"{sum(vals) / len(vals):.1f}")
PY
}

long() {
    local dir=$1
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ -z "${BIN:-}" ]; then
        cargo build --release --quiet --bin gpu-sph --example validate
        BIN=$PWD/target/release/gpu-sph
    fi
    export BIN
    local t="$dir/tables.md"
    echo "# docs/results.md's long tier, $(date -u +%F) at $(git rev-parse --short HEAD)" >"$t"

    echo "## Does the collapse match experiments?" >>"$t"
    # SPlisHSPlasH's runs of the same collapse, drawn beside ours where the peers are installed
    # (../shared/peers); its column is 2a high at its own spacing, so 100k needs 0.6 s to τ = 3.
    local peers="" size
    if [ -x ../shared/peers/splishsplash_collapse.sh ]; then
        declare -A n=([20k]=20000 [100k]=100000 [370k]=370000) end=([20k]=0.52 [100k]=0.6 [370k]=0.6)
        for size in ${SIZES:-20k 100k}; do
            ../shared/peers/splishsplash_collapse.sh "${n[$size]}" --end "${end[$size]}" \
                --out "$dir/peer_$size.csv" >"$dir/peer_$size.log" 2>&1
            peers+=" $dir/peer_$size.csv"
        done
    fi
    END=0.52 PEERS="$peers" scripts/resolution.sh "$dir/resolution" "${SIZES:-20k 100k}" | tee "$dir/resolution.log"
    { echo '```'; sed -n '/^wcsph\|^dfsph\|front\|height\|Koshizuka\|lag/p' "$dir/resolution.log"; echo '```'; } >>"$t"

    echo "## Do waves keep their period and height?" >>"$t"
    scripts/standing_wave.sh "$dir/wave" "wcsph dfsph" | tee "$dir/wave.log"
    { echo '```'; grep -i "period" "$dir/wave.log"; echo '```'; } >>"$t"

    echo "## Does water at rest rest?" >>"$t"
    {
        echo "| layers | density iterations a step, steps 21–60 | largest mean residual |"
        echo "|---:|---:|---:|"
    } >>"$t"
    for layers in 20 80 160 320; do
        python3 - "$dir/col$layers.csv" "$layers" <<'PY'
import sys
path, layers = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    f.write("x,y,z\n")
    for j in range(layers):
        for k in range(8):
            for i in range(8):
                f.write(f"{(i + 0.5) * 0.01},{(j + 0.5) * 0.01},{(k + 0.5) * 0.01}\n")
PY
        "$BIN" --headless --cpu --input "$dir/col$layers.csv" --spacing 0.01 --tank-min 0,0,0 \
            --tank-max "0.08,$(python3 -c "print(1.5 * $layers * 0.01)"),0.08" --steps 60 \
            --stats "$dir/col$layers.stats.csv" >"$dir/col$layers.log" 2>&1
        local it res
        it=$(stats_mean "$dir/col$layers.stats.csv" iterations_d 21)
        res=$(python3 -c "import csv; print(f'{100 * max(float(r[\"residual_d\"]) for r in list(csv.DictReader(open(\"$dir/col$layers.stats.csv\")))[20:]):.4f}%')")
        echo "| $layers | $it | $res |" >>"$t"
    done
    echo >>"$t"
    for solver in dfsph wcsph; do
        "$BIN" --headless --cpu --solver "$solver" -n 12000 --end-time 0.42 \
            --output "$dir/lattice_$solver.csv" >"$dir/lattice_$solver.log" 2>&1
        echo "- $solver, the start's lattice kept after the surge: $(python3 scripts/lattice_rows.py "$dir/lattice_$solver.csv")" >>"$t"
    done

    echo "## Is the density held?" >>"$t"
    for n in 20000 100000; do
        "$BIN" --headless --cpu -n "$n" --end-time 0.5 --stats "$dir/db$n.csv" >"$dir/db$n.log" 2>&1
        echo "- DFSPH dam break, $n particles, to 0.5 s: $(stats_mean "$dir/db$n.csv" iterations_d 1) density iterations a step" >>"$t"
    done

    echo "## Is the GPU right?" >>"$t"
    for solver in dfsph wcsph; do
        if "$BIN" --headless -n 100000 --verify --tolerance 0 --steps 10 --solver "$solver" \
            >"$dir/verify_$solver.log" 2>&1; then
            echo "- --verify --tolerance 0, 100 000, $solver: passes" >>"$t"
        else
            echo "- --verify --tolerance 0, 100 000, $solver: FAILS (see $dir/verify_$solver.log)" >>"$t"
        fi
    done
    echo "wrote $t"
}

case "${1:-}" in
quick) cargo test --release --test suite results:: -- --nocapture ;;
long) [ $# -eq 2 ] || usage; long "$2" ;;
status) status ;;
*) usage ;;
esac
