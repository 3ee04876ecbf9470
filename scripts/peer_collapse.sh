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
source "$(dirname "${BASH_SOURCE[0]}")/peer_env.sh"
exec "$venv/bin/python" "$here/peer_collapse.py" "$peers" "$@"
