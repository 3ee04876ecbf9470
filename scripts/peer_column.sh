#!/usr/bin/env bash
# SPlisHSPlasH (PyPI pysplishsplash 2.19) on a resting water column, to see whether the reference
# code holds it at rest (scene and output described in peer_column.py):
#
#   scripts/peer_column.sh NX NY [--viscosity NU] [--max-dt S] [--end 3.0] [--solver dfsph|wcsph] [--gap 2]
#
# NX x NY x NX particles at s = 0.01 m in a closed tank NX s + 3 s wide (first particles 2 s from
# every wall, the shared peers' convention), about twice the column high. Prints a line every
# 0.25 s of simulated time and one `summary ...` line at the end.
# PEERS_DIR: the shared peers folder (scripts/peer_env.sh), whose splishsplash.py and
# install.sh this reuses; PEERS_HOME / PEERS_VENV move the venv as there.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/peer_env.sh"
exec "$venv/bin/python" "$here/peer_column.py" "$peers" "$@"
