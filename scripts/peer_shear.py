#!/usr/bin/env python3
"""SPlisHSPlasH (PyPI `pysplishsplash` 2.19) in the shear test of scripts/shear_block.py: does the
reference code's water at rest resist shear like a solid too?

Usage (through peer_shear.sh, which sets LD_PRELOAD, OMP_NUM_THREADS and OMP_WAIT_POLICY):
    python peer_shear.py PEERS_DIR [--viscosity NU] [--max-dt S] [--settle 2] [--run 1] [--u 0.02]
                         [--solver dfsph|wcsph] [--ny 20] [--nz 4] [--workdir DIR]

Scene: a 20 x NY x NZ block (default 20 x 20 x 4) at s = 0.01 m in a closed box built as peer_column.py builds it (Akinci
boundary particles, the first particles 2 s from every wall, no boundary viscosity). The block
settles for --settle s (spreading into the 2 s gaps). Then, in the time-step callback, every
particle's velocity is overwritten with the cellular flow of shear_block.py,
u = U sin(pi x'/L) cos(pi y'/H), v = -U (H/L) cos(pi x'/L) sin(pi y'/H), with x' and y' measured
from the settled water's own extent (L, H: its x extent and its height, each to the outer
particles' centres + s/2). Every 0.05 s after, it prints A(t), the velocity projected on the
mode over U (a fluid keeps A near 1; a solid swings it through zero), and at the end the first
zero crossing.
"""
import argparse, math, os, sys


def main():
    peers = sys.argv[1]
    sys.path.insert(0, peers)
    import splishsplash as peer
    import peer_scene
    import numpy as np

    ap = argparse.ArgumentParser(prog="peer_shear.sh")
    ap.add_argument("--viscosity", type=float, default=1e-6, help="Standard viscosity, m^2/s")
    ap.add_argument("--max-dt", type=float, default=0.002, help="largest CFL step, s")
    ap.add_argument("--settle", type=float, default=2.0)
    ap.add_argument("--run", type=float, default=1.0)
    ap.add_argument("--u", type=float, default=0.02)
    ap.add_argument("--solver", choices=["dfsph", "wcsph"], default="dfsph")
    ap.add_argument("--ny", type=int, default=20, help="layers of the block before it settles")
    ap.add_argument("--nz", type=int, default=4, help="particles across the tank's depth before it settles")
    ap.add_argument("--workdir", default=os.path.join(os.environ.get("PEERS_WORK", os.path.join(os.path.expanduser("~"), ".cache", "gpu-sph-peers", "work")), "shear"))
    args = ap.parse_args(sys.argv[2:])

    nx, ny, nz = 20, args.ny, args.nz
    s, g, rho0 = 0.01, 9.81, 1000.0
    gap = 2 * s
    c = 10.0 * math.sqrt(2.0 * g * ny * s)
    dfsph = args.solver == "dfsph"
    tank_min = [s - gap] * 3
    tank_max = [nx * s + gap, 2.0 * ny * s, nz * s + gap]
    scene = peer_scene.scene(
        peer, dfsph=dfsph, s=s, g=g, rho0=rho0, c=c, viscosity=args.viscosity, max_dt=args.max_dt,
        tank_min=tank_min, tank_max=tank_max,
        fluid={"FluidBlocks": [{"denseMode": 0, "start": [0.0, 0.0, 0.0],
                                "end": [(nx + 1) * s, (ny + 1) * s, (nz + 1) * s]}]})
    tag = f"{args.solver}-{ny}x{nz}-nu{args.viscosity:g}-dt{args.max_dt:g}-u{args.u:g}"
    wd, scene_file = peer_scene.write(scene, args.workdir, tag)
    base, sim, tm = peer_scene.simulator(scene_file, wd, args.settle + args.run)
    st = {"geom": None, "next": 0.0, "series": []}

    def buf(fm, name, n):
        return np.asarray(fm.getFieldBuffer(name)).reshape(-1)[: 3 * n].reshape(n, 3)

    def mode(x, geom):
        x0, L, y0, H = geom
        a, b = math.pi * (x[:, 0] - x0) / L, math.pi * (x[:, 1] - y0) / H
        return np.sin(a) * np.cos(b), -(H / L) * np.cos(a) * np.sin(b)

    def cb():
        fm = sim.getFluidModel(0)
        n = fm.numActiveParticles()
        t = tm.getTime()
        x, v = buf(fm, "position", n), buf(fm, "velocity", n)
        if st["geom"] is None:
            if t < args.settle:
                return
            geom = (x[:, 0].min() - s / 2, np.ptp(x[:, 0]) + s, x[:, 1].min() - s / 2, np.ptp(x[:, 1]) + s)
            st["geom"], st["t0"] = geom, t
            mx, my = mode(x, geom)
            rms = float(np.sqrt((v * v).sum(axis=1).mean()))
            v[:, 0], v[:, 1], v[:, 2] = args.u * mx, args.u * my, 0.0
            print(f"settled at t = {t:.3f} s: {n} particles, L = {geom[1]:.4f} m, H = {geom[3]:.4f} m, "
                  f"rms speed before {rms:.4f} m/s; U = {args.u} m/s", flush=True)
        mx, my = mode(x, st["geom"])
        amp = float((v[:, 0] * mx + v[:, 1] * my).sum() / (mx * mx + my * my).sum() / args.u)
        tt = t - st["t0"]
        st["series"].append((tt, amp))
        if tt + 1e-9 >= st["next"]:
            st["next"] += 0.05
            print(f"{tt:5.2f}  {amp:+.3f}", flush=True)

    base.setTimeStepCB(cb)
    base.runSimulation()
    ser = st["series"]
    cross = next((t for t, a in ser if a < 0), None)
    low = min(ser, key=lambda p: p[1])
    print(f"first zero crossing: {'none' if cross is None else f'{cross:.3f} s'}; smallest A {low[1]:+.3f} at {low[0]:.2f} s")


if __name__ == "__main__":
    main()
