#!/usr/bin/env bash
# Soak test (issue 14): N particles of the default dam break for STEPS steps on the CPU path,
# with a checkpoint every EVERY steps; samples the resident memory (VmRSS) five times a second and
# reports it at the start (when the first checkpoint appears, so everything the run allocates,
# checkpoint buffers included, has been allocated once) and at the end. Exits non-zero when
# the run fails (divergence, non-finite value, particle outside the tank: its own checks) or
# the resident memory grows by more than 5%.
#
#   scripts/soak.sh [N] [STEPS] [EVERY] [OUTDIR]      (defaults: 100000 20000 2000 soak)
#   BIN=path/to/gpu-sph scripts/soak.sh ...           (default: target/release/gpu-sph)
#   SCENE=cube scripts/soak.sh ...                    (default: dam-break)
set -uo pipefail
N=${1:-100000}
STEPS=${2:-20000}
EVERY=${3:-2000}
OUT=${4:-soak}
BIN=${BIN:-target/release/gpu-sph}
SCENE=${SCENE:-dam-break}
# glibc raises its mmap threshold each time a large mmapped block is freed, after which blocks
# of that size come from the heap and stay resident once freed: the resident size then follows
# the allocator's high-water mark, not live memory (measured: +33% over a 100k run that then
# held flat). Fixing the threshold at its default keeps the resident size a measure of what
# the run holds. MALLOC_MMAP_THRESHOLD_= (empty) leaves glibc's adaptive policy on.
export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_-131072}
rm -rf "$OUT"
mkdir -p "$OUT"
start=$(date +%s)
"$BIN" --headless --cpu --scene "$SCENE" -n "$N" --steps "$STEPS" --checkpoint-every "$EVERY" \
    --checkpoint-dir "$OUT/checkpoints" --stats "$OUT/stats.csv" >"$OUT/run.log" 2>&1 &
pid=$!
rss_start=""
rss_end=""
while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null)
    if [ -n "$rss" ]; then
        echo "$(($(date +%s) - start)) $rss" >>"$OUT/rss_kb.txt"
        rss_end=$rss
        if [ -z "$rss_start" ] && ls "$OUT/checkpoints"/checkpoint_*.gpusph >/dev/null 2>&1; then
            rss_start=$rss
        fi
    fi
    sleep 0.2
done
wait "$pid"
rc=$?
wall=$(($(date +%s) - start))
echo "exit $rc after ${wall} s; $(tail -n 1 "$OUT/run.log")"
echo "checkpoints kept: $(ls "$OUT/checkpoints" 2>/dev/null | tr '\n' ' ')"
if [ "$rc" -ne 0 ]; then
    echo "soak FAILED: the run did not finish cleanly (see $OUT/run.log)"
    exit 1
fi
if [ -z "$rss_start" ]; then
    echo "soak FAILED: no checkpoint appeared while the run was sampled"
    exit 1
fi
# The resident size swings between steps (per-step arrays allocated and returned), so a trend is
# read from medians: the tenth of the samples after the first checkpoint against the last tenth.
# Growth that stops while the run goes on is a working set reaching its size; a leak keeps going.
start_s=$(awk -v r="$rss_start" '$2 == r { print $1; exit }' "$OUT/rss_kb.txt")
awk -v t0="${start_s:-0}" '$1 >= t0 { print $2 }' "$OUT/rss_kb.txt" >"$OUT/rss_after.txt"
n=$(wc -l <"$OUT/rss_after.txt")
growth=$(awk -v a="$rss_start" -v b="$rss_end" 'BEGIN { printf "%.2f", 100 * (b - a) / a }')
echo "resident memory: ${rss_start} kB at the first checkpoint, ${rss_end} kB at the end (${growth}%)"
# The resident size swings from sample to sample (per-step arrays allocated and returned), so
# one sample at each end is noise: the bound is judged on medians, the tenth of the samples
# after the first checkpoint against the last tenth (with 20 samples or more).
if [ "$n" -ge 20 ]; then
    k=$((n / 10))
    median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    first=$(head -n "$k" "$OUT/rss_after.txt" | median)
    last=$(tail -n "$k" "$OUT/rss_after.txt" | median)
    range=$(sort -n "$OUT/rss_after.txt" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo " to " hi }')
    growth=$(awk -v a="$first" -v b="$last" 'BEGIN { printf "%.2f", 100 * (b - a) / a }')
    echo "median of the first tenth after the first checkpoint ${first} kB, of the last tenth ${last} kB (${growth}%); range ${range} kB"
fi
if awk -v g="$growth" 'BEGIN { exit !(g > 5) }'; then
    echo "soak FAILED: resident memory grew by more than 5%"
    exit 1
fi
echo "soak passed"
