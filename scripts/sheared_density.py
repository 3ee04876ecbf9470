#!/usr/bin/env python3
"""How much does shearing an arrangement of particles raise its SPH density? (docs/results.md,
why waves run short).

A shear keeps the volume, but the summation density sum_j m W(r_ij) of a particle in a cubic
lattice (spacing s, cubic spline with support h = 2 s, as both solvers use) rises at second
order in the strain: rho(gamma) = rho(0) (1 + c gamma^2). Under a density constraint at pressure
p that costs p c gamma^2 per unit volume, a shear modulus G = 2 p c. Prints c for simple shear
along a lattice axis, for pure shear, and over random orientations of the lattice.

    scripts/sheared_density.py [GAMMA] [KERNEL] [H]    (defaults 0.05 cubic 2; plain Python 3)
    scripts/sheared_density.py lattices                (every shear, three lattices)

KERNEL: cubic (both solvers' DFSPH kernel), wendland (Wendland C2), poly6 (the design's
density kernel) or spiky (WCSPH's pressure gradient's kernel, as a density); H: the support radius in spacings. A negative c means the lattice's density
falls under shear: under pressure such a lattice shears by itself, it is unstable.

`lattices`: for the simple cubic, body-centred and face-centred cubic lattices at one particle
per s^3, the smallest and largest c over every volume-keeping strain (the eigenvalues of the
density's Hessian over the five traceless strains, by finite differences), for poly6 and the
cubic spline at a few supports. A lattice is stable under pressure only where the smallest c
is positive.
"""
import math
import random
import sys

SHAPES = {
    # Unnormalised: c is a ratio of two sums of the same kernel.
    "cubic": lambda q: (6 * q ** 3 - 6 * q ** 2 + 1) if q <= 0.5 else (2 * (1 - q) ** 3 if q <= 1 else 0.0),
    "wendland": lambda q: (1 - q) ** 4 * (1 + 4 * q) if q < 1 else 0.0,
    "poly6": lambda q: (1 - q * q) ** 3 if q < 1 else 0.0,
    "spiky": lambda q: (1 - q) ** 3 if q < 1 else 0.0,
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


def lattice_sites(kind, h):
    """Sites of `kind` (sc, bcc, fcc) at one particle per unit volume, within h of the origin
    (the origin itself left out)."""
    base = {"sc": [(0, 0, 0)], "bcc": [(0, 0, 0), (.5, .5, .5)],
            "fcc": [(0, 0, 0), (.5, .5, 0), (.5, 0, .5), (0, .5, .5)]}[kind]
    a = len(base) ** (1 / 3)  # the cube's side for one site per unit volume
    r = int(math.ceil(h * 1.1 / a)) + 1
    pts = []
    for i in range(-r, r + 1):
        for j in range(-r, r + 1):
            for k in range(-r, r + 1):
                for b in base:
                    p = ((i + b[0]) * a, (j + b[1]) * a, (k + b[2]) * a)
                    d = math.sqrt(sum(x * x for x in p))
                    if 0 < d < 1.1 * h:
                        pts.append(p)
    return pts


def strained(pts, e):
    """pts under F = exp(e) for a traceless symmetric e, to second order (I + e + e²/2), which
    keeps the volume to third order."""
    f = [[(1.0 if r == c else 0.0) + e[r][c] + 0.5 * sum(e[r][k] * e[k][c] for k in range(3))
          for c in range(3)] for r in range(3)]
    return [tuple(sum(f[r][k] * p[k] for k in range(3)) for r in range(3)) for p in pts]


def eigenvalues(m):
    """Eigenvalues of a small symmetric matrix (cyclic Jacobi rotations)."""
    n = len(m)
    a = [row[:] for row in m]
    for _ in range(100):
        off = sum(a[i][j] ** 2 for i in range(n) for j in range(n) if i != j)
        if off < 1e-20:
            break
        for p in range(n):
            for q in range(p + 1, n):
                if abs(a[p][q]) < 1e-30:
                    continue
                t = (a[q][q] - a[p][p]) / (2 * a[p][q])
                t = (1 if t >= 0 else -1) / (abs(t) + math.sqrt(t * t + 1))
                c = 1 / math.sqrt(t * t + 1)
                s = t * c
                for k in range(n):
                    akp, akq = a[k][p], a[k][q]
                    a[k][p], a[k][q] = c * akp - s * akq, s * akp + c * akq
                for k in range(n):
                    apk, aqk = a[p][k], a[q][k]
                    a[p][k], a[q][k] = c * apk - s * aqk, s * apk + c * aqk
    return sorted(a[i][i] for i in range(n))


def lattices():
    """The smallest and largest c over every shear, for each lattice, kernel and support."""
    global SHAPE, H
    r2 = 1 / math.sqrt(2)
    basis = [  # traceless symmetric strains, each with e:e = 1
        [[0, r2, 0], [r2, 0, 0], [0, 0, 0]],
        [[0, 0, r2], [0, 0, 0], [r2, 0, 0]],
        [[0, 0, 0], [0, 0, r2], [0, r2, 0]],
        [[r2, 0, 0], [0, -r2, 0], [0, 0, 0]],
        [[1 / math.sqrt(6), 0, 0], [0, 1 / math.sqrt(6), 0], [0, 0, -2 / math.sqrt(6)]],
    ]
    eps = 1e-3
    print("lattice  kernel  h/s  neighbours  c smallest  c largest")
    for kind in ("sc", "bcc", "fcc"):
        for name, h in (("poly6", 2.0), ("poly6", 2.2), ("poly6", 2.5), ("cubic", 2.0)):
            SHAPE, H = SHAPES[name], h
            pts = lattice_sites(kind, h)
            rho0 = density(pts) + SHAPE(0.0)

            def rho(x, a, y, b):
                e = [[x * basis[a][r][c] + y * basis[b][r][c] for c in range(3)] for r in range(3)]
                return (density(strained(pts, e)) + SHAPE(0.0)) / rho0

            hess = [[0.0] * 5 for _ in range(5)]
            for a in range(5):
                for b in range(a, 5):
                    d2 = (rho(eps, a, eps, b) - rho(eps, a, -eps, b) - rho(-eps, a, eps, b)
                          + rho(-eps, a, -eps, b)) / (4 * eps * eps)
                    hess[a][b] = hess[b][a] = d2
            # rho/rho0 - 1 = e.H.e / 2, and a shear gamma has e:e = gamma^2 / 2: c = eigenvalue / 4.
            w = eigenvalues(hess)
            near = sum(1 for p in pts if math.sqrt(sum(x * x for x in p)) < h)
            print(f"{kind:7s}  {name:6s}  {h:3.1f}  {near:10d}  {w[0] / 4:+10.3f}  {w[-1] / 4:+9.3f}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "lattices":
        lattices()
        return
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
