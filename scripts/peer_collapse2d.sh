#!/usr/bin/env bash
# SPlisHSPlasH's 2D DFSPH ("sim2D") on gpu-sph's 2D dam break, read against Martin & Moyce:
#
#   scripts/peer_collapse2d.sh NX [--spacing S] [--viscosity NU] [--boundary akinci2012|bender2019]
#
# peer_collapse2d.py says what the scene is, why its walls and viscosity are what they are, and
# what it prints.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/peer_env.sh"
exec "$venv/bin/python" "$here/peer_collapse2d.py" "$@"
