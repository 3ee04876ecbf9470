#!/usr/bin/env bash
# SPlisHSPlasH (PyPI pysplishsplash 2.19) in the shear test of scripts/shear_block.py (scene and
# output described in peer_shear.py):
#
#   scripts/peer_shear.sh [--viscosity NU] [--max-dt S] [--settle 2] [--run 1] [--u 0.02] [--solver dfsph|wcsph] [--ny 20] [--nz 4]
#
# PEERS_DIR: the shared peers folder (scripts/peer_env.sh), whose splishsplash.py and install.sh
# this reuses; PEERS_HOME / PEERS_VENV move the venv as there.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/peer_env.sh"
exec "$venv/bin/python" "$here/peer_shear.py" "$peers" "$@"
