"""A parameter sweep: DFSPH's kinematic viscosity against the dam-break front of Martin & Moyce
(1952). Each run is the default dam break (a column a wide and 2a high against the left wall);
the front is the largest x of the fluid, in units of a, against T = t sqrt(2g/a).

    python examples/python/viscosity_sweep.py [PARTICLES]   # default 12000; writes sweep.png

Plots with matplotlib when it is installed, and prints the table either way. At 12 000
particles each run takes about a minute on the CPU path of a 2-core machine.
"""

import sys

import numpy as np

import gpu_sph

# Martin & Moyce (1952), square column: (T, Z), the front over a against T = t sqrt(2g/a).
MARTIN_MOYCE = np.array([
    (0.41, 1.11), (0.84, 1.22), (1.19, 1.44), (1.43, 1.67), (1.63, 1.89), (1.83, 2.11),
    (1.98, 2.33), (2.20, 2.56), (2.32, 2.78), (2.51, 3.00), (2.65, 3.22), (2.83, 3.44),
    (2.98, 3.67), (3.11, 3.89), (3.33, 4.11),
])  # fmt: skip

G = 9.81


def front_curve(nu: float, particles: int) -> np.ndarray:
    sim = gpu_sph.Simulation.from_scene(
        "dam-break", particles=particles, kinematic_viscosity=nu
    )
    # The column's width a: its particles' extent plus one lattice spacing (each particle
    # stands for a cube of edge s around it); the tank starts at x = 0.
    x0 = sim.positions()[:, 0]
    s = float(np.diff(np.unique(x0)).min())
    a = float(x0.max() - x0.min()) + s
    scale = np.sqrt(2 * G / a)
    curve = [(0.0, 1.0)]
    end = 3.4 / scale
    while sim.time < end:
        sim.step(5)
        curve.append((sim.time * scale, sim.stats()["front"] / a))
    return np.array(curve)


def main() -> None:
    particles = int(sys.argv[1]) if len(sys.argv) > 1 else 12000
    sweep = [1e-6, 1e-4, 1e-3, 1e-2]
    curves = {nu: front_curve(nu, particles) for nu in sweep}
    print(f"{'T':>5} {'Z exp':>6} " + " ".join(f"{f'nu={nu:g}':>10}" for nu in sweep))
    for t, z in MARTIN_MOYCE:
        sims = [np.interp(t, c[:, 0], c[:, 1]) for c in curves.values()]
        print(f"{t:5.2f} {z:6.2f} " + " ".join(f"{s:10.2f}" for s in sims))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no plot)")
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(*MARTIN_MOYCE.T, "ko", label="Martin & Moyce 1952")
    for nu, c in curves.items():
        ax.plot(c[:, 0], c[:, 1], label=f"DFSPH, ν = {nu:g} m²/s")
    ax.set_xlabel("T = t √(2g/a)")
    ax.set_ylabel("front Z = x / a")
    ax.legend()
    fig.tight_layout()
    fig.savefig("sweep.png", dpi=120)
    print("wrote sweep.png")


if __name__ == "__main__":
    main()
