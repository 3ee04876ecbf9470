#!/usr/bin/env python3
"""SPlisHSPlasH (PyPI `pysplishsplash` 2.19) on the standing wave of scripts/standing_wave.sh: how fast
does the reference code's first sloshing mode run, and how much does it keep?

Usage (through peer_wave.sh, which sets LD_PRELOAD, OMP_NUM_THREADS and OMP_WAIT_POLICY):
    python peer_wave.py PEERS_DIR [--viscosity NU] [--max-dt S] [--end 1.3] [--solver dfsph|wcsph]
                        [--workdir DIR]

Scene: the particles of standing_wave.sh (s = 0.01 m, 0.6 m x 0.1 m of water 0.2 m deep, the
surface started at rest at d + A cos(pi x / L), A = 0.02 m; written as a bgeo file by gpu-sph, $BIN
or target/release/gpu-sph), in a closed box
built as peer_column.py builds it: Akinci boundary particles, no boundary viscosity, the walls'
inner faces 2 s from the outermost particles (the reference's sampling needs that gap). So its
tank is L' = 0.63 m long and 0.13 m wide, and the water falls 1.5 s onto the floor and spreads
into the gaps first. That start is symmetric about the tank's middle, so it does not excite the
first mode, whose measure here is the water's centre of mass x-bar (from the per-step callback):
each half-period runs from one extremum of x-bar - L'/2 to the next, and "kept" compares the two
extremes. Linear theory is for L' and the depth the water has once it fills the tank,
d' = N s^3 / (L' W').
"""
import argparse, math, os, subprocess, sys


def main():
    peers = sys.argv[1]
    sys.path.insert(0, peers)
    import splishsplash as peer
    import peer_scene
    import numpy as np

    ap = argparse.ArgumentParser(prog="peer_wave.sh")
    ap.add_argument("--viscosity", type=float, default=1e-6, help="Standard viscosity, m^2/s")
    ap.add_argument("--max-dt", type=float, default=0.005, help="largest CFL step, s")
    ap.add_argument("--end", type=float, default=1.3)
    ap.add_argument("--solver", choices=["dfsph", "wcsph"], default="dfsph")
    ap.add_argument("--workdir", default=os.path.join(os.environ.get("PEERS_WORK", os.path.join(os.path.expanduser("~"), ".cache", "gpu-sph-peers", "work")), "wave"))
    args = ap.parse_args(sys.argv[2:])

    s, g, rho0 = 0.01, 9.81, 1000.0
    L, W, d, A = 0.6, 0.1, 0.2, 0.02
    pts = []
    for i in range(round(L / s)):
        x = (i + 0.5) * s
        top = d + A * math.cos(math.pi * x / L)
        j = 0
        while (j + 0.5) * s < top:
            for k in range(round(W / s)):
                pts.append((x, (j + 0.5) * s, (k + 0.5) * s))
            j += 1
    gap = 2 * s
    tank_min = [0.5 * s - gap] * 3
    tank_max = [L - 0.5 * s + gap, 0.4, W - 0.5 * s + gap]
    tank = [hi - lo for lo, hi in zip(tank_min, tank_max)]
    centre = [(hi + lo) / 2.0 for lo, hi in zip(tank_min, tank_max)]
    c = 10.0 * math.sqrt(2.0 * g * d)
    dfsph = args.solver == "dfsph"
    tag = f"{args.solver}-nu{args.viscosity:g}-dt{args.max_dt:g}"
    wd = os.path.abspath(os.path.join(args.workdir, tag))
    os.makedirs(wd, exist_ok=True)
    # The reference reads particle files through partio (bgeo); gpu-sph's own export writes one:
    # its frame 0 is the input, before any step.
    csv = os.path.join(wd, "wave.csv")
    with open(csv, "w") as f:
        f.write("x,y,z\n")
        f.writelines(f"{x:.6f},{y:.6f},{z:.6f}\n" for x, y, z in pts)
    binary = os.environ.get("BIN", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "release", "gpu-sph"))
    frames = os.path.join(wd, "initial")
    subprocess.run([binary, "--headless", "--cpu", "--input", csv, "--spacing", str(s), "--tank-min", "0,0,0",
                    "--tank-max", f"{L},0.4,{W}", "--steps", "1", "--export-dir", frames, "--export-every", "1",
                    "--export-format", "bgeo"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bgeo = os.path.join(frames, "frame_000000.bgeo")
    scene = peer_scene.scene(
        peer, dfsph=dfsph, s=s, g=g, rho0=rho0, c=c, viscosity=args.viscosity, max_dt=args.max_dt,
        tank_min=tank_min, tank_max=tank_max,
        fluid={"FluidModels": [{"particleFile": bgeo, "translation": [0, 0, 0], "scale": [1, 1, 1]}]})
    wd, scene_file = peer_scene.write(scene, args.workdir, tag)
    base, sim, tm = peer_scene.simulator(scene_file, wd, args.end)
    rec = []

    def cb():
        fm = sim.getFluidModel(0)
        n = fm.numActiveParticles()
        x = np.asarray(fm.getFieldBuffer("position")).reshape(-1)[: 3 * n].reshape(n, 3)
        rec.append((tm.getTime(), float(x[:, 0].mean()) - centre[0], n))

    base.setTimeStepCB(cb)
    base.runSimulation()
    n = rec[-1][2]
    lp, wp = tank[0], tank[2]
    dp = n * s ** 3 / (lp * wp)
    k = math.pi / lp
    half = math.pi / math.sqrt(g * k * math.tanh(k * dp))
    print(f"{n} particles; tank {lp:.3f} x {wp:.3f} m, filled depth d' = {dp:.4f} m: linear theory's "
          f"half-period {half:.3f} s; {len(rec)} steps, mean step {1e3 * rec[-1][0] / len(rec):.2f} ms")
    t = np.array([r[0] for r in rec])
    xs = np.array([r[1] for r in rec])
    ext = [(0.0, xs[0])]
    for i in range(1, len(xs) - 1):
        if (xs[i] - xs[i - 1]) * (xs[i + 1] - xs[i]) < 0 and t[i] - ext[-1][0] > 0.1:
            a2 = np.polyfit(t[i - 1:i + 2], xs[i - 1:i + 2], 2)
            tv = -a2[1] / (2 * a2[0])
            ext.append((tv, np.polyval(a2, tv)))
    for (t0, x0), (t1, x1) in zip(ext, ext[1:]):
        print(f"{t0:.3f} s: {1e3 * x0:+.2f} mm -> {t1:.3f} s: {1e3 * x1:+.2f} mm: half-period {t1 - t0:.3f} s "
              f"({100 * ((t1 - t0) / half - 1):+.1f}%), kept {100 * abs(x1 / x0):.1f}%")


if __name__ == "__main__":
    main()
