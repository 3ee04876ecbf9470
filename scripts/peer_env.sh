# Sourced by scripts/peer_*.sh: sets `peers` (the shared peers folder, $PEERS_DIR or
# ../shared/peers beside the checkout) and `venv` (their Python environment, installed on first
# use), and the environment SPlisHSPlasH's wheel needs on this machine.
here="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
peers="${PEERS_DIR:-$here/../../shared/peers}"
home="${PEERS_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-sph-peers}"
venv="${PEERS_VENV:-$home/venv}"
export PEERS_WORK="${PEERS_WORK:-$home/work}"
# The wheel's bundled libGLdispatch clashes with Debian's libGLX: preload the system one or
# `import pysplishsplash` segfaults (see ../shared/peers/splishsplash.sh).
gld=$(ldconfig -p | awk '/libGLdispatch\.so\.0 .*x86-64/ {print $NF; exit}')
export LD_PRELOAD="${gld}${LD_PRELOAD:+:$LD_PRELOAD}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
# Passive waits: with OpenMP's default spinning waits a run was 100x slower whenever another
# process held a core (0.3 s of a 320-particle column: 45 s of wall clock instead of 0.4 s).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
[ -x "$venv/bin/python" ] || "$peers/install.sh" >&2
