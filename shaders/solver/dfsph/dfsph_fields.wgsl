// The solves' per-particle fields, one buffer (`solve_fields`, declared by each stage with the
// access it needs) of four arrays of the run's capacity C (`solve.capacity`): the stiffness
// increments kappa of the next velocity update, the last rate pass's residual e, then sum kappa
// of the divergence-free solve and of the constant-density solve (`solve.which` 0 and 1). One
// binding for the four keeps every stage within the 10 storage buffers a browser's WebGPU
// offers (`dfsph_rate` reads or writes three of them). Prepended to the stages that declare
// `solve_fields`; the Rust side is `SolveFields` in src/solver/dfsph/gpu.rs. C comes from the
// uniform block rather than arrayLength: lavapipe (Mesa 22.3) crashed running the stages that
// read it from two threads at once.
// Worked example: C = 1000: kappa of particle 7 at 7, its e at 1007, the density solve's
// sum kappa at 3007.

fn kappa_at(i: u32) -> u32 {
    return i;
}

fn residual_at(c: u32, i: u32) -> u32 {
    return c + i;
}

fn kappa_sum_at(c: u32, which: u32, i: u32) -> u32 {
    return (2u + which) * c + i;
}
