"""The neighbour library from Python beside scipy's cKDTree: the same pairs from a random
cloud, and the time each takes.

    python examples/python/neighbours_vs_ckdtree.py [POINTS] [RADIUS]   # default 100000 0.02

gpu_sph decides "closer than r" as the simulator does, d² < r² in float32; cKDTree d ≤ r in
float64. Only pairs within float32 rounding of r can differ, and the script shows them.
"""

import sys
import time

import numpy as np
from scipy.spatial import cKDTree

import gpu_sph

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
r = float(sys.argv[2]) if len(sys.argv) > 2 else 0.02
pts = np.random.default_rng(7).random((n, 3)).astype(np.float32)

t0 = time.perf_counter()
ours = gpu_sph.pairs(pts, r)
t1 = time.perf_counter()
theirs = cKDTree(pts.astype(np.float64)).query_pairs(r, output_type="ndarray")
t2 = time.perf_counter()

a = set(map(tuple, ours.tolist()))
b = set(map(tuple, theirs.tolist()))
print(f"{n} points, r = {r}: gpu_sph.pairs {len(a)} pairs in {t1 - t0:.3f} s, "
      f"cKDTree.query_pairs {len(b)} in {t2 - t1:.3f} s (tree built inside)")  # fmt: skip
differ = a ^ b
for i, j in sorted(differ):
    d = np.linalg.norm(pts[i].astype(np.float64) - pts[j].astype(np.float64))
    print(f"  differ: ({i}, {j}) at d = {d!r}, r = {r!r}")
print("the same pairs" if not differ else f"{len(differ)} pairs on the rounding edge")

indptr, indices = gpu_sph.neighbours(pts, r)
print(f"neighbours: {indices.size} entries, up to {np.diff(indptr).max()} per point")
