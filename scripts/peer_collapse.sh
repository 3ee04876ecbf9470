#!/usr/bin/env bash
# SPlisHSPlasH's dam break (../shared/peers/splishsplash_collapse.sh) with two of its scene's
# settings changed, to see what its agreement with Martin & Moyce rests on (issue 34):
#
#   scripts/peer_collapse.sh N [--viscosity NU] [--max-dt S] [splishsplash_collapse.py's options]
#
# --viscosity: its Standard viscosity in m^2/s (the shared scene's 0.01 if not given);
# --max-dt: its largest CFL step in s (the shared scene's 0.005 if not given; 0.0002 holds it
# at about the step gpu-sph's DFSPH takes with an explicit viscosity of 0.01 m^2/s).
# Everything else (geometry, walls, tolerances, the CSV it writes) is the shared script's.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
peers="${PEERS_DIR:-$here/../../shared/peers}"
home="${PEERS_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-sph-peers}"
venv="${PEERS_VENV:-$home/venv}"
export PEERS_WORK="${PEERS_WORK:-$home/work}"
gld=$(ldconfig -p | awk '/libGLdispatch\.so\.0 .*x86-64/ {print $NF; exit}')
export LD_PRELOAD="${gld}${LD_PRELOAD:+:$LD_PRELOAD}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
[ -x "$venv/bin/python" ] || "$peers/install.sh" >&2
exec "$venv/bin/python" "$here/peer_collapse.py" "$peers" "$@"
