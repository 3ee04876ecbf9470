#!/usr/bin/env bash
# SPlisHSPlasH (PyPI pysplishsplash 2.19) on the standing wave of scripts/standing_wave.sh (scene and
# output described in peer_wave.py):
#
#   scripts/peer_wave.sh [--viscosity NU] [--max-dt S] [--end 1.3] [--solver dfsph|wcsph]
#
# PEERS_DIR: the shared peers folder (scripts/peer_env.sh), whose splishsplash.py and install.sh
# this reuses; PEERS_HOME / PEERS_VENV move the venv as there.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/peer_env.sh"
exec "$venv/bin/python" "$here/peer_wave.py" "$peers" "$@"
