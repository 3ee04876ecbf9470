"""Reading the particles into numpy after every step: a learned-simulator training set of
(positions, velocities) pairs, kept in memory and saved as one .npz.

    python examples/python/positions_each_step.py [STEPS]   # default 100; writes trajectory.npz

Arrays come back in input order (row i is the same particle in every step), as float32 copies.
"""

import sys

import numpy as np

import gpu_sph

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
sim = gpu_sph.Simulation.from_scene("dam-break", particles=5000, path="cpu")
positions, velocities, times = [], [], []
for k in range(steps + 1):
    if k:
        sim.step()
    state = sim.arrays()  # one read of the state for both arrays
    positions.append(state["positions"])
    velocities.append(state["velocities"])
    times.append(sim.time)
positions = np.stack(positions)
velocities = np.stack(velocities)
print(f"{positions.shape[0]} frames of {positions.shape[1]} particles, t = 0 … {times[-1]:.4f} s")
print(f"largest speed {np.linalg.norm(velocities[-1], axis=1).max():.3f} m/s, "
      f"front x = {positions[-1][:, 0].max():.4f} m")  # fmt: skip
np.savez_compressed("trajectory.npz", positions=positions, velocities=velocities, t=times)
print("wrote trajectory.npz")
