#!/usr/bin/env python3
"""A resting column's particle file, as the physics tests build it (`column_lattice` in
tests/suite/physics.rs): NX x NY x NX particles on the lattice (i + 1/2) s, s = 10 mm, each
coordinate the f32 product; with SEED, moved by up to +-1 um (0.01% of s) by splitmix64 draws;
with `decimal`, the f32 of the f64 (i + 1/2) * 0.01 instead (the lattice as a file written in
decimal holds it). The same bits as the tests' starts, so a command-line run of the file is
the test's run.

    python3 scripts/column_lattice.py NX NY [SEED | decimal] > column.csv

Run it with `gpu-sph --headless --cpu --input column.csv --spacing 0.01 --tank-min 0,0,0
--tank-max NX*s,2*NY*s,NX*s` (and `--solver wcsph --hydrostatic-start` for WCSPH).
"""
import struct
import sys

M64 = (1 << 64) - 1


def f32(x):
    """x rounded to the nearest f32 (every operation below is exact in f64 before it)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: column_lattice.py NX NY [SEED | decimal]")
    nx, ny = int(sys.argv[1]), int(sys.argv[2])
    decimal = len(sys.argv) == 4 and sys.argv[3] == "decimal"
    seed = int(sys.argv[3]) if len(sys.argv) == 4 and not decimal else None
    state = seed or 0

    def jitter():
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        z ^= z >> 31
        return f32(f32(float(z >> 40) / (1 << 24) * 2.0 - 1.0) * f32(1e-6))

    s = f32(0.01)
    out = ["x,y,z"]
    for j in range(ny):
        for k in range(nx):
            for i in range(nx):
                p = [f32((c + 0.5) * s) for c in (i, j, k)]
                if decimal:
                    p = [f32((c + 0.5) * 0.01) for c in (i, j, k)]
                if seed is not None:
                    p = [f32(c + jitter()) for c in p]
                out.append(",".join(repr(c) for c in p))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
