#!/usr/bin/env python3
"""How much of the start's lattice a run's particles keep (issue 64, point 4).

Reads a particle file written by `gpu-sph --output F.csv` (x,y,z,...) and prints the share of
particles that have a neighbour exactly one spacing across the tank: |dz| within 0.1 s of s,
|dx| and |dy| below 0.05 s. A cubic lattice scores 100%; water that has fallen and splashed
scores a few percent (WCSPH's default dam break at t = 0.42 s: 1.2%).

    python3 scripts/lattice_rows.py end.csv [SPACING]     (SPACING defaults to 0.01 m)

Needs numpy and scipy.
"""
import sys

import numpy as np
from scipy.spatial import cKDTree


def rows(p, s):
    pairs = cKDTree(p).query_pairs(1.2 * s, output_type="ndarray")
    d = p[pairs[:, 1]] - p[pairs[:, 0]]
    across = (
        (np.abs(np.abs(d[:, 2]) - s) < 0.1 * s)
        & (np.abs(d[:, 0]) < 0.05 * s)
        & (np.abs(d[:, 1]) < 0.05 * s)
    )
    has = np.zeros(len(p), bool)
    has[pairs[across, 0]] = True
    has[pairs[across, 1]] = True
    return has.mean()


def main():
    path = sys.argv[1]
    s = float(sys.argv[2]) if len(sys.argv) > 2 else 0.01
    with open(path) as f:
        head = f.readline().strip().split(",")
    if not all(c in head for c in "xyz"):
        sys.exit(f"{path}: no x,y,z columns in its header; write it with gpu-sph --output F.csv")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    p = data[:, [head.index(c) for c in "xyz"]]
    print(f"{path}: {len(p)} particles, {100 * rows(p, s):.1f}% keep a neighbour one spacing across the tank")


if __name__ == "__main__":
    main()
