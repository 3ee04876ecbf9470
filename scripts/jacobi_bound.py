#!/usr/bin/env python3
"""The largest relaxation factor omega at which DFSPH's Jacobi solves converge on a lattice
(docs/results.md, the models: ω).

Both DFSPH solves are relaxed Jacobi iterations on A kappa = b, with DFSPH's factor alpha_i the
exact diagonal: kappa_i += omega alpha_i (rho*_i - rho0) / dt^2. Such an iteration multiplies
each eigenmode of the residual by 1 - omega lambda, lambda an eigenvalue of D^-1 A, so it
converges only where omega < 2 / lambda_max. On a simple cubic lattice of spacing s the system
is a convolution and its eigenmodes are plane waves: a pressure p_j = exp(i k.x_j) moves
particle i by dv_i = -dt sum_j (p_i + p_j) G_ij (G_ij = m grad W(x_i - x_j)), which changes its
density rate by -dt |S(k)|^2 p_i with S(k) = sum_r G(r) sin(k.r). The diagonal is alpha's
denominator, sum_r |G(r)|^2 (the bulk, where sum_r G(r) = 0), so

    lambda(k) = |S(k)|^2 / sum_r |G(r)|^2,   omega < 2 / max_k lambda(k).

The bound holds for the two-sided iteration; DFSPH's one-sided solve (rho* clamped at rho0)
cannot amplify a mode, but past the bound each iteration turns part of a compression into an
expansion that no later iteration corrects, and the step leaves that overshoot in the
velocities (docs/results.md, what was tried: ω above the bound).

    scripts/jacobi_bound.py [N]     (k-grid N^3 over the Brillouin zone, default 24; plain Python 3)

Prints lambda_max and 2 / lambda_max for the cubic spline, spiky and Wendland C2 at a few
supports h (in spacings). Worked value: the cubic spline at h = 2 s, lambda_max = 2.81, so
omega < 0.71.
"""
import math
import signal
import sys


def grad_factor(kernel, q):
    """(dW/dr) / r up to a constant factor, q = r / h (the constant cancels in lambda)."""
    if q >= 1.0 or q <= 0.0:
        return 0.0
    if kernel == "cubic":
        # W = 6q^3 - 6q^2 + 1 (q <= 1/2), 2 (1 - q)^3: dW/dq / q.
        return 6.0 * (3.0 * q - 2.0) if q <= 0.5 else -6.0 * (1.0 - q) ** 2 / q
    if kernel == "spiky":
        return -3.0 * (1.0 - q) ** 2 / q
    if kernel == "wendland":
        # W = (1 - q)^4 (1 + 4q): dW/dq = -20 q (1 - q)^3.
        return -20.0 * (1.0 - q) ** 3
    raise SystemExit(f"unknown kernel {kernel!r}: cubic, spiky or wendland")


def lambda_max(kernel, h, n):
    reach = int(math.ceil(h))
    grads = []
    for i in range(-reach, reach + 1):
        for j in range(-reach, reach + 1):
            for k in range(-reach, reach + 1):
                r = math.sqrt(i * i + j * j + k * k)
                g = grad_factor(kernel, r / h)
                if g != 0.0:
                    grads.append(((i, j, k), (g * i, g * j, g * k)))
    diag = sum(gx * gx + gy * gy + gz * gz for _, (gx, gy, gz) in grads)
    ks = [-math.pi + (a + 0.5) * 2.0 * math.pi / n for a in range(n)]
    best, at = 0.0, None
    for kx in ks:
        for ky in ks:
            for kz in ks:
                sx = sy = sz = 0.0
                for (i, j, k), (gx, gy, gz) in grads:
                    s = math.sin(kx * i + ky * j + kz * k)
                    sx += gx * s
                    sy += gy * s
                    sz += gz * s
                lam = (sx * sx + sy * sy + sz * sz) / diag
                if lam > best:
                    best, at = lam, (kx, ky, kz)
    return best, at, len(grads)


def main():
    # Piped into head, end quietly as other tools do.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        n = int(sys.argv[1]) if len(sys.argv) > 1 else 24
    except ValueError:
        raise SystemExit(f"jacobi_bound.py: N must be a whole number of k-points per axis, e.g. 24 (found {sys.argv[1]!r})")
    if n < 2:
        raise SystemExit(f"jacobi_bound.py: N must be at least 2 k-points per axis, e.g. 24 (found {n})")
    print("kernel    h/s  neighbours  lambda_max  omega bound  at k (1/s)")
    for kernel, h in [("cubic", 2.0), ("spiky", 2.0), ("wendland", 2.0), ("wendland", 2.5),
                      ("wendland", 3.0), ("cubic", 3.0)]:
        lam, at, nb = lambda_max(kernel, h, n)
        k = ", ".join(f"{c:+.2f}" for c in at)
        print(f"{kernel:9s} {h:3.1f}  {nb:10d}  {lam:10.2f}  {2.0 / lam:11.2f}  ({k})")


if __name__ == "__main__":
    main()
