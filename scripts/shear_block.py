#!/usr/bin/env python3
"""Does a block of SPH water at rest resist shear like a solid? (docs/results.md, why
waves run short).

A block L = H = 0.2 m, 4 cm deep between free-slip side walls (20 x 20 x 4 particles at the
default S = 0.01 m) settles for T_SETTLE s; then every particle gets the velocity of the
cellular flow

    psi = U (H / pi) sin(pi x / L) sin(pi y / H),  u = d psi / dy,  v = -d psi / dx,

which is divergence-free, has no normal velocity at the walls, the floor or the flat surface,
and is a steady solution of Euler's equations (its vorticity is a function of psi). A fluid
keeps it, decaying as exp(-nu k^2 t) with k^2 = pi^2 (1/L^2 + 1/H^2); water's viscosity takes
0.05% in a second. An arrangement of particles with a shear modulus G swings it back through
zero after about a quarter period, pi / (2 k sqrt(G / rho)). The script prints the mode's
amplitude A(t), the velocity projected on the mode over U, every 0.05 s, and when A first
crosses zero.

    scripts/shear_block.py OUTDIR [gpu-sph flags...]
    BIN=target/release/gpu-sph S=0.01 U=0.02 T_SETTLE=2 T_RUN=1 DT=0.002 scripts/shear_block.py \\
        shear --alpha 0 --wall-slip-length free --kinematic-viscosity 1e-6

DT is the fixed step of both runs (WCSPH needs DT=0.0002); frames every EVERY steps (default:
10 ms of simulated time). Runs the CPU path (`--cpu`); plain Python 3, no packages.
"""
import glob
import math
import os
import struct
import subprocess
import sys

S = float(os.environ.get("S", "0.01"))
NX, NY, NZ = round(0.2 / S), round(0.2 / S), round(0.04 / S)
L, H, D = NX * S, NY * S, NZ * S


def read_ply(path):
    """The vertex columns of a binary little-endian PLY of float properties, by name."""
    raw = open(path, "rb").read()
    end = raw.index(b"end_header\n") + len(b"end_header\n")
    head = raw[:end].decode().splitlines()
    n = int(next(l for l in head if l.startswith("element vertex")).split()[2])
    names = [l.split()[2] for l in head if l.startswith("property")]
    vals = struct.unpack_from(f"<{n * len(names)}f", raw, end)
    return {k: vals[i :: len(names)] for i, k in enumerate(names)}


def read_csv(path):
    with open(path) as f:
        names = f.readline().strip().split(",")
        rows = [list(map(float, l.split(","))) for l in f if l.strip()]
    return {k: [r[i] for r in rows] for i, k in enumerate(names)}


def mode(x, y, top):
    """The cellular flow's velocity at (x, y) for U = 1, the surface at `top`."""
    return (
        math.sin(math.pi * x / L) * math.cos(math.pi * y / top),
        -(top / L) * math.cos(math.pi * x / L) * math.sin(math.pi * y / top),
    )


def drop_close(pts, limit):
    """Indices of the later particle of every pair closer than `limit` (a settled surface can
    hold one, which --input refuses)."""
    cells, drop = {}, set()
    for i, p in enumerate(pts):
        c = tuple(int(math.floor(v / limit)) for v in p)
        for dc in [(a, b, e) for a in (-1, 0, 1) for b in (-1, 0, 1) for e in (-1, 0, 1)]:
            for j in cells.get((c[0] + dc[0], c[1] + dc[1], c[2] + dc[2]), []):
                if sum((p[k] - pts[j][k]) ** 2 for k in range(3)) < limit * limit:
                    drop.add(i)
        cells.setdefault(c, []).append(i)
    return drop


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: scripts/shear_block.py OUTDIR [gpu-sph flags...]")
    out, extra = sys.argv[1], sys.argv[2:]
    binary = os.environ.get("BIN", "target/release/gpu-sph")
    u = float(os.environ.get("U", "0.02"))
    dt = float(os.environ.get("DT", "0.002"))
    every = int(os.environ.get("EVERY", str(max(1, round(0.01 / dt)))))
    os.makedirs(out, exist_ok=True)
    with open(f"{out}/lattice.csv", "w") as f:
        f.write("x,y,z\n")
        for j in range(NY):
            for k in range(NZ):
                for i in range(NX):
                    f.write(f"{(i + .5) * S},{(j + .5) * S},{(k + .5) * S}\n")
    common = ["--headless", "--cpu", "--spacing", str(S), "--tank-min", "0,0,0",
              "--tank-max", f"{L},{2 * H},{D}", "--dt", str(dt)] + extra
    run = lambda args: subprocess.run([binary] + args + common, check=True, stdout=subprocess.DEVNULL)
    run(["--input", f"{out}/lattice.csv", "--end-time", os.environ.get("T_SETTLE", "2"),
         "--output", f"{out}/settled.csv"])
    a = read_csv(f"{out}/settled.csv")
    pts = list(zip(a["x"], a["y"], a["z"]))
    drop = drop_close(pts, 0.5 * S)
    keep = [i for i in range(len(pts)) if i not in drop]
    top = max(a["y"][i] for i in keep) + S / 2
    rms = math.sqrt(sum(a["vx"][i] ** 2 + a["vy"][i] ** 2 + a["vz"][i] ** 2 for i in keep) / len(keep))
    print(f"settled: {len(keep)} particles ({len(drop)} dropped closer than s/2 to another), "
          f"surface at {top:.4f} m, rms speed {rms:.4f} m/s; U = {u} m/s")
    with open(f"{out}/sheared.csv", "w") as f:
        f.write("x,y,z,vx,vy,vz\n")
        for i in keep:
            mx, my = mode(a["x"][i], a["y"][i], top)
            f.write(f"{a['x'][i]},{a['y'][i]},{a['z'][i]},{u * mx},{u * my},0\n")
    frames = f"{out}/frames"
    for old in glob.glob(f"{frames}/*.ply"):
        os.remove(old)
    run(["--input", f"{out}/sheared.csv", "--end-time", os.environ.get("T_RUN", "1"),
         "--export-dir", frames, "--export-every", str(every)])
    series = []
    for k, path in enumerate(sorted(glob.glob(f"{frames}/*.ply"))):
        b = read_ply(path)
        num = den = 0.0
        for x, y, vx, vy in zip(b["x"], b["y"], b["vx"], b["vy"]):
            mx, my = mode(x, y, top)
            num += vx * mx + vy * my
            den += mx * mx + my * my
        series.append((k * every * dt, num / den / u))
    print("t (s)  A(t)")
    step = max(1, round(0.05 / (every * dt)))
    for t, amp in series[::step]:
        print(f"{t:5.2f}  {amp:+.3f}")
    cross = next((t for t, amp in series if amp < 0), None)
    low = min(series, key=lambda p: p[1])
    print(f"first zero crossing: {'none' if cross is None else f'{cross:.3f} s'}; "
          f"smallest A {low[1]:+.3f} at {low[0]:.2f} s; "
          f"k^2 = {math.pi ** 2 * (1 / L ** 2 + 1 / top ** 2):.1f} /m^2")


if __name__ == "__main__":
    main()
