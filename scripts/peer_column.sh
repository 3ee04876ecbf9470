#!/usr/bin/env bash
# SPlisHSPlasH (PyPI pysplishsplash 2.19) on a resting water column, to see whether the reference
# code holds it at rest (scene and output described in peer_column.py):
#
#   scripts/peer_column.sh NX NY [--viscosity NU] [--max-dt S] [--end 3.0] [--solver dfsph|wcsph] [--gap 2]
#
# NX x NY x NX particles at s = 0.01 m in a closed tank NX s + 3 s wide (first particles 2 s from
# every wall, the shared peers' convention), about twice the column high. Prints a line every
# 0.25 s of simulated time and one `summary ...` line at the end.
# PEERS: the shared peers folder (default $(dirname "$0")/../../shared/peers), whose
# splishsplash.py and install.sh this reuses; PEERS_HOME / PEERS_VENV move the venv as there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
peers="${PEERS:-$here/../../shared/peers}"
home="${PEERS_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-sph-peers}"
venv="${PEERS_VENV:-$home/venv}"
export PEERS_WORK="${PEERS_WORK:-$home/work}"
# The wheel's bundled libGLdispatch clashes with Debian's libGLX: preload the system one or
# `import pysplishsplash` segfaults (see ../shared/peers/splishsplash.sh).
gld=$(ldconfig -p | awk '/libGLdispatch\.so\.0 .*x86-64/ {print $NF; exit}')
export LD_PRELOAD="${gld}${LD_PRELOAD:+:$LD_PRELOAD}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
# Passive waits: with the default spinning waits a run here was 100x slower whenever another
# process held a core (0.3 s of a 320-particle column: 45 s of wall clock instead of 0.4 s).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
[ -x "$venv/bin/python" ] || "$peers/install.sh" >&2
exec "$venv/bin/python" "$here/peer_column.py" "$peers" "$@"
