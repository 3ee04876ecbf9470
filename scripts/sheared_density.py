#!/usr/bin/env python3
"""How much does shearing an arrangement of particles raise its SPH density? (docs/validation.md,
"The particles' arrangement under pressure is an elastic solid").

A shear keeps the volume, but the summation density sum_j m W(r_ij) of a particle in a cubic
lattice (spacing s, cubic spline with support h = 2 s, as both solvers use) rises at second
order in the strain: rho(gamma) = rho(0) (1 + c gamma^2). Under a density constraint at pressure
p that costs p c gamma^2 per unit volume, a shear modulus G = 2 p c. Prints c for simple shear
along a lattice axis, for pure shear, and over random orientations of the lattice.

    scripts/sheared_density.py [GAMMA] [KERNEL] [H]    (defaults 0.05 cubic 2; plain Python 3)

KERNEL: cubic (both solvers' DFSPH kernel), wendland (Wendland C2) or poly6 (the design's
density kernel); H: the support radius in spacings. A negative c means the lattice's density
falls under shear: under pressure such a lattice shears by itself, it is unstable.
"""
import math
import random
import sys

SHAPES = {
    # Unnormalised: c is a ratio of two sums of the same kernel.
    "cubic": lambda q: (6 * q ** 3 - 6 * q ** 2 + 1) if q <= 0.5 else (2 * (1 - q) ** 3 if q <= 1 else 0.0),
    "wendland": lambda q: (1 - q) ** 4 * (1 + 4 * q) if q < 1 else 0.0,
    "poly6": lambda q: (1 - q * q) ** 3 if q < 1 else 0.0,
}
SHAPE = SHAPES[sys.argv[2] if len(sys.argv) > 2 else "cubic"]
H = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0  # support radius in spacings
R = int(math.ceil(H)) + 1
SITES = [(i, j, k) for i in range(-R, R + 1) for j in range(-R, R + 1) for k in range(-R, R + 1)]


def kernel(r):
    return SHAPE(r / H)


def density(points):
    return sum(kernel(math.sqrt(x * x + y * y + z * z)) for x, y, z in points)


def rotation(rng):
    """A uniformly random rotation matrix (from a random unit quaternion)."""
    a, b, c, d = (rng.gauss(0, 1) for _ in range(4))
    n = math.sqrt(a * a + b * b + c * c + d * d)
    a, b, c, d = a / n, b / n, c / n, d / n
    return [
        [a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)],
        [2 * (b * c + a * d), a * a - b * b + c * c - d * d, 2 * (c * d - a * b)],
        [2 * (b * d - a * c), 2 * (c * d + a * b), a * a - b * b - c * c + d * d],
    ]


def main():
    g = float(sys.argv[1]) if len(sys.argv) > 1 else 0.05
    base = density(SITES)
    simple = density([(x + g * y, y, z) for x, y, z in SITES])
    pure = density([(x * (1 + g / 2), y / (1 + g / 2), z) for x, y, z in SITES])
    print(f"{sys.argv[2] if len(sys.argv) > 2 else 'cubic'}, h = {H} s, gamma = {g}: c = {(simple / base - 1) / g ** 2:+.4f} simple shear, "
          f"{(pure / base - 1) / g ** 2:+.4f} pure shear (lattice axes)")
    rng = random.Random(1)
    cs = []
    for _ in range(200):
        m = rotation(rng)
        pts = [tuple(sum(m[r][k] * p[k] for k in range(3)) for r in range(3)) for p in SITES]
        c0 = density(pts)
        cs.append((density([(x + g * y, y, z) for x, y, z in pts]) / c0 - 1) / g ** 2)
    print(f"simple shear over 200 random orientations: c = {sum(cs) / len(cs):+.4f} mean, "
          f"{min(cs):+.4f} to {max(cs):+.4f}")


if __name__ == "__main__":
    main()
