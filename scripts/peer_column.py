#!/usr/bin/env python3
"""SPlisHSPlasH (PyPI `pysplishsplash` 2.19) on a resting water column: does it stay at rest?

Usage (through peer_column.sh, which sets LD_PRELOAD, OMP_NUM_THREADS and OMP_WAIT_POLICY):
    python peer_column.py PEERS_DIR NX NY [--viscosity NU] [--max-dt S] [--end 3.0] [--solver dfsph|wcsph]
                          [--gap 2] [--every 0.25] [--workdir DIR]

Scene: an NX x NY x NX block of particles at spacing s = 0.01 m (particleRadius 0.005), at rest, in a closed
box tank built as ../shared/peers/splishsplash.py builds its own (a UnitBox wall, samplingMode 1 = Akinci 2012
boundary particles, the first particles 2 s from every wall: the block's particles sit at s .. NX s and the
tank's inner faces at -s and NX s + 2 s, inner width (NX + 3) s). --gap G puts the walls G s from the outermost
particles instead (0.5: gpu-sph's convention). Pitfall: with the default G = 2 the tank is 3 s wider than the
block, so a narrow column is not at rest: it spreads sideways and first falls about s onto the floor.
The tank is about twice the column's height (inner top at max(2 NY s, (NY + 1) s + 2 s)).
DFSPH as in the shared scene (min 2 / max 100 iterations, 0.05 % density error, 0.1 % divergence error,
divergence solver on), CFL step (cflMethod 1, factor 1, largest step --max-dt), Standard viscosity --viscosity,
no boundary viscosity. WCSPH (--solver wcsph): the shared scene's Tait stiffness and fixed step 0.4 (2 s) / c.

Per step (time-step callback) it records t, dt, the largest and the rms particle speed (and the largest among
the particles still inside the tank, with the count of those that crossed a wall: "leaked"), and the density error
max(rho/rho0 - 1, 0) (largest and mean over particles) from the fluid model's "density" field, which the solver
computed at the start of that step. Pressure: DFSPH keeps "p / rho^2" = rho0 p / rho^2 (its pressure solve drops
the rho0 factor) multiplied by dt^2 after each step (its warm start), so p = field / dt^2 * rho^2 / rho0, with dt
the step size the pressure solve used (the TimeManager's after the step); WCSPH keeps "pressure" in Pa.
At the end it fits p against depth d = (99th-percentile particle y + s/2) - y over particles at least 2 s below the top and
prints the slope over rho0 g (1 = hydrostatic); for DFSPH also the divergence solve's pressure p_v ("p_v / rho^2",
kept times dt) and the mean vertical pressure acceleration over g (about 1 when the pressure solve carries the
weight). WCSPH clamps each density at rho0 or above, so its step-1 density reads 1.
"""
import argparse, math, os, sys, time


def main():
    peers = sys.argv[1]
    sys.path.insert(0, peers)
    import splishsplash as peer  # find_unit_box(); the shared scene's conventions
    import peer_scene

    ap = argparse.ArgumentParser(prog="peer_column.sh")
    ap.add_argument("nx", type=int)
    ap.add_argument("ny", type=int)
    ap.add_argument("--viscosity", type=float, default=0.01, help="Standard viscosity, m^2/s (SPlisHSPlasH's DamBreakModel value 0.01)")
    ap.add_argument("--max-dt", type=float, default=0.005, help="largest CFL step, s")
    ap.add_argument("--end", type=float, default=3.0, help="simulated time, s")
    ap.add_argument("--solver", choices=["dfsph", "wcsph"], default="dfsph")
    ap.add_argument("--gap", type=float, default=2.0,
                    help="distance from the outermost particles' centres to the walls' inner faces, in units of s "
                         "(2: SPlisHSPlasH's and the shared peers' convention; 0.5: gpu-sph's)")
    ap.add_argument("--every", type=float, default=0.25, help="print a line every this many simulated seconds")
    ap.add_argument("--workdir", default=os.path.join(os.environ.get("PEERS_WORK", os.path.join(os.path.expanduser("~"), ".cache", "gpu-sph-peers", "work")), "column"))
    args = ap.parse_args(sys.argv[2:])

    import numpy as np

    nx, ny = args.nx, args.ny
    s = 0.01
    g = 9.81
    rho0 = 1000.0
    H = ny * s
    gap = args.gap * s
    c = 10.0 * math.sqrt(2.0 * g * H)   # WCSPH only, as splishsplash.py
    wc_dt = peer_scene.wcsph_dt(s, c, args.max_dt)
    tank_min = [s - gap] * 3
    tank_max = [nx * s + gap, max(2.0 * ny * s, (ny + 1) * s + gap), nx * s + gap]
    tank = [hi - lo for lo, hi in zip(tank_min, tank_max)]
    dfsph = args.solver == "dfsph"
    scene = peer_scene.scene(
        peer, dfsph=dfsph, s=s, g=g, rho0=rho0, c=c, viscosity=args.viscosity, max_dt=args.max_dt,
        tank_min=tank_min, tank_max=tank_max,
        fluid={"FluidBlocks": [{"denseMode": 0, "start": [0.0, 0.0, 0.0],
                                "end": [(nx + 1) * s, (ny + 1) * s, (nx + 1) * s]}]})
    tag = f"{args.solver}-{nx}x{ny}x{nx}-nu{args.viscosity:g}-dt{args.max_dt:g}-gap{args.gap:g}"
    wd, scene_file = peer_scene.write(scene, args.workdir, tag)
    wall0 = time.perf_counter()
    base, sim, tm = peer_scene.simulator(scene_file, wd, args.end)

    def field(fm, name, comps, n):
        """numpy view of a fluid-model field (None if absent)."""
        try:
            a = np.asarray(fm.getFieldBuffer(name))
        except Exception:
            return None
        a = a.reshape(-1)[: n * comps]
        return a.reshape(n, comps) if comps > 1 else a

    lo, hi = np.array(tank_min), np.array(tank_max)

    def outside(x):
        """particles whose centre has crossed a wall's inner face"""
        return ((x < lo) | (x > hi)).any(axis=1)

    rec = []   # (t, dt, vmax, vrms, rho_err_max, rho_err_mean, iterations)
    st = {"next": 0.0, "t_prev": 0.0}
    vsafe = 0.01 * math.sqrt(g * H)

    def cb():
        fm = sim.getFluidModel(0)
        n = fm.numActiveParticles()
        t = tm.getTime()
        dt = t - st["t_prev"]
        st["t_prev"] = t
        v = field(fm, "velocity", 3, n)
        if v is None:
            v = np.array([fm.getVelocity(i) for i in range(n)])
        sp = np.sqrt((v * v).sum(axis=1))
        xx = field(fm, "position", 3, n)
        inside = ~outside(xx)
        vin = float(sp[inside].max()) if inside.any() else float("nan")
        rho = field(fm, "density", 1, n)
        if rho is None:
            try:
                rho = np.array([fm.getDensity(i) for i in range(n)])
            except Exception:
                rho = None
        if rho is not None:
            e = np.maximum(rho / rho0 - 1.0, 0.0)
            emax, emean = float(e.max()), float(e.mean())
            if "rho_init" not in st:
                st["rho_init"] = (float(rho.mean() / rho0), float(rho.min() / rho0), float(rho.max() / rho0))
        else:
            emax = emean = float("nan")
        try:
            it = sim.getTimeStep().getNumIterations()
        except Exception:
            it = -1
        rec.append((t, dt, float(sp.max()), float(np.sqrt((sp * sp).mean())), emax, emean, it, vin, int((~inside).sum())))
        if t + 1e-12 >= st["next"]:
            st["next"] += args.every
            x = xx
            print(f"t={t:.3f} dt={dt:.3g} vmax={sp.max():.4g} vmax_in_tank={vin:.4g} vrms={rec[-1][3]:.4g} rho_err_max={emax:.4g} "
                  f"rho_err_mean={emean:.3g} iters={it} top={x[:, 1].max() + s / 2:.4f} y99={np.quantile(x[:, 1], 0.99) + s / 2:.4f} "
                  f"ymin={x[:, 1].min():.4f} outside_tank={int((~inside).sum())}", flush=True)

    base.setTimeStepCB(cb)
    base.runSimulation()
    wall = time.perf_counter() - wall0

    fm = sim.getFluidModel(0)
    n = fm.numActiveParticles()
    n_wall = sum(sim.getBoundaryModel(i).numberOfParticles() for i in range(sim.numberOfBoundaryModels()))
    # pressure against depth at the end
    slope_txt = "dp_dd/(rho0*g)=n/a"
    x = field(fm, "position", 3, n)
    rho = field(fm, "density", 1, n)
    extra = ""
    pv = None
    if dfsph:
        pf = field(fm, "p / rho^2", 1, n)
        pvf = field(fm, "p_v / rho^2", 1, n)
        dtp = tm.getTimeStepSize()
        p = None if (pf is None or rho is None) else pf / (dtp * dtp) * rho * rho / rho0
        # the divergence solve's pressure, kept times dt (its warm start); it too only pushes (>= 0)
        pv = None if (pvf is None or rho is None) else pvf / dtp * rho * rho / rho0
        ap = field(fm, "pressure acceleration", 3, n)   # the pressure solve's (the last solve of the step)
        if ap is not None:
            extra = f" mean_pressure_accel_y/g={ap[~outside(x), 1].mean() / g:.4f}"
    else:
        p = field(fm, "pressure", 1, n)
    if p is not None and x is not None:
        ysurf = float(np.quantile(x[:, 1], 0.99)) + s / 2   # robust against a few splashed particles
        d = ysurf - x[:, 1]
        m = (d >= 2.0 * s - 1e-9) & ~outside(x)
        if m.sum() >= 3:
            k, b = np.polyfit(d[m], p[m], 1)
            bot = m & (x[:, 1] <= x[m, 1].min() + 0.5 * s)
            slope_txt = (f"dp_dd/(rho0*g)={k / (rho0 * g):.4f} p_at_d0={b:.4g}Pa p_bottom_layer={p[bot].mean():.4g}Pa"
                         f"(rho0*g*depth={rho0 * g * d[bot].mean():.4g})")
            if pv is not None:
                kv, _ = np.polyfit(d[m], pv[m], 1)
                slope_txt += f" dpv_dd/(rho0*g)={kv / (rho0 * g):.4f} pv_bottom_layer={pv[bot].mean():.4g}Pa"
    ytop = float(x[:, 1].max()) + s / 2 if x is not None else float("nan")
    base.cleanup()

    steps = len(rec)
    if not steps:
        sys.exit("no steps ran")
    a = np.array(rec)
    t_end = a[-1, 0]
    last = a[a[:, 0] >= t_end - 0.5]
    iters = a[:, 6]
    print(f"# peer_column: SPlisHSPlasH {args.solver.upper()}, {nx}x{ny}x{nx} = {n} particles, s={s} m, tank inner "
          f"{['%.3f' % v for v in tank]} m, {n_wall} Akinci wall particles, viscosity {args.viscosity:g} m^2/s (Standard, boundary 0), "
          f"CFL max dt {args.max_dt:g} s{'' if dfsph else ' (WCSPH fixed dt %.3g s)' % wc_dt}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, wall-clock {wall:.1f} s, scene {scene_file}", flush=True)
    print(f"summary solver={args.solver} nx={nx} ny={ny} gap={args.gap:g}s nu={args.viscosity:g} max_dt={args.max_dt:g} t_end={t_end:.3f} "
          f"steps={steps} mean_dt={a[:, 1].mean():.4g} mean_iters={iters[iters >= 0].mean() if (iters >= 0).any() else float('nan'):.3g} "
          f"vmax_last0.5s={last[:, 2].max():.4g} vrms_end={a[-1, 3]:.3g} limit_0.01sqrt(gH)={vsafe:.4g} "
          f"at_rest={'yes' if last[:, 2].max() <= vsafe else 'no'} vmax_in_tank_last0.5s={np.nanmax(last[:, 7]):.4g} "
          f"leaked_end={int(a[-1, 8])} first_leak_t={a[a[:, 8] > 0, 0].min() if (a[:, 8] > 0).any() else float('nan'):.3f} vmax_all={a[:, 2].max():.4g} "
          f"rho_err_max_all={np.nanmax(a[:, 4]):.4g} rho_err_max_last0.5s={np.nanmax(last[:, 4]):.4g} "
          f"rho_err_mean_last0.5s={np.nanmean(last[:, 5]):.3g} top_end={ytop:.4f} (initial {ny * s + s / 2:.4f}) "
          f"{slope_txt}{extra} rho_step1/rho0(mean,min,max)={','.join('%.3f' % v for v in st.get('rho_init', ()))} wall_s={wall:.1f}", flush=True)


if __name__ == "__main__":
    main()
