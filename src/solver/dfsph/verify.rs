//! `--verify` for DFSPH and WCSPH: each stage of a step run on the GPU from the CPU's inputs and
//! compared with the CPU mirror's outputs ([`check_dfsph_step`]); `crate::verify` steps the run
//! and calls it for every step.

use glam::Vec3;

use crate::Result;
use crate::core::{Particles, StatsBlock};
use crate::solver;
use crate::verify::compare::*;

/// The scales of the constant-density solve (stage doc of `dfsph_rate`): κ_i =
/// (ρ*_i − ρ0)|α_i|/dt² is a difference of nearly equal densities, so each κ is judged
/// relative to |κ_i| + ρ0 |α_i| / dt², the magnitude of the terms it is computed from (ρ*
/// within the tolerance of ρ0's size gives κ within the tolerance of this), and each residual
/// ρ*/ρ0 − 1 relative to |r| + 1 (block sums: the sum of those).
struct DensityScales<'a> {
    alpha: &'a [f32],
    dt: f32,
    rho0: f32,
}

impl DensityScales<'_> {
    fn kappa(&self, kappa: &[f32], applied: usize) -> Vec<f64> {
        let per = self.rho0 as f64 / (self.dt as f64 * self.dt as f64);
        kappa
            .iter()
            .zip(self.alpha)
            .map(|(&k, &a)| (k as f64).abs() + applied.max(1) as f64 * per * (a as f64).abs())
            .collect()
    }
}

/// Fixed-point sums as the GPU's (low, high) words.
fn fixed_words(v: &[i64]) -> Vec<u32> {
    v.iter().flat_map(|&x| solver::dfsph::to_words(x)).collect()
}

/// One solve, pass by pass, against its CPU trace: the rate pass at its start, then per
/// iteration the control decision, the coarse correction where one follows (the residual on
/// the cells, the coarse solution, the increments), the velocities and Σ κ after the pressure
/// update and the rate pass's κ, residuals and total; then the iteration counts.
#[allow(clippy::too_many_arguments)]
async fn verify_solve(
    sim: &crate::gpu::fluid::Simulation,
    which: solver::dfsph::Solve,
    cap: u32,
    tr: &solver::dfsph::SolveTrace,
    start_vel: &[Vec3],
    scales: Option<&DensityScales<'_>>,
    tol: f64,
    out: &mut Rows,
) -> Result<()> {
    let d = stages_of(sim)?;
    let g = &sim.grid;
    let c = SolveCheck {
        d,
        g,
        n: g.bufs.n.get() as usize,
        which,
        name: which.name(),
        tr,
        scales,
        tol,
    };
    // Every pass runs on the CPU's inputs, so a row judges that pass's own rounding.
    g.write_vec3(&g.bufs.sorted_vel, start_vel);
    g.run(|g, e| d.encode_start(g, e, which))?;
    c.rate_rows(out, 0).await?;
    let mut it = 0usize;
    loop {
        let done = c.control_row(out, it, cap).await?;
        // The CPU's state after iteration `it`: its rate pass and increments, and the Σ κ and
        // velocities they were computed at; none after its last.
        let next = tr.rates.get(it).zip(tr.kappas.get(it));
        let Some((rate, kappa)) = next.filter(|_| !done && it < cap as usize) else {
            break;
        };
        let vel = match it {
            0 => start_vel,
            _ => &tr.velocities[it - 1][..],
        };
        c.correction_rows(out, it, rate, kappa, vel).await?;
        it += 1;
        c.update_rows(out, it, kappa, vel).await?;
        c.rate_rows(out, it).await?;
    }
    if it < cap as usize {
        c.skip_row(out, it).await?;
    }
    Ok(())
}

/// What the rows of one checked solve ([`verify_solve`]) share: the stages, the grid, the
/// particle count, the solve and its CPU trace, the density solve's scales and the tolerance.
struct SolveCheck<'a> {
    d: &'a crate::solver::dfsph::gpu::GpuDfsph,
    g: &'a crate::grid::gpu::GpuNeighbours,
    n: usize,
    which: solver::dfsph::Solve,
    name: &'static str,
    tr: &'a solver::dfsph::SolveTrace,
    scales: Option<&'a DensityScales<'a>>,
    tol: f64,
}

impl SolveCheck<'_> {
    /// Where the solve's Σ κ starts in the GPU's solve fields.
    fn sums(&self) -> u64 {
        self.d.fields.kappa_sum(self.which)
    }

    /// A κ row, judged against the density solve's scales where it has them.
    fn kappa_row(&self, stage: &str, got: &[f32], want: &[f32], applied: usize) -> StageReport {
        match self.scales {
            Some(sc) => compare_against(stage, got, want, &sc.kappa(want, applied), self.tol),
            None => compare_scaled(stage, got, want, self.tol),
        }
    }

    /// The scale a residual is judged at: the density solve's residual ρ*/ρ0 − 1 is a
    /// difference of numbers near 1, so relative to |x| + 1 (as `DensityScales`).
    fn residual_scale(&self, x: f32) -> f64 {
        match self.scales {
            Some(_) => (x as f64).abs() + 1.0,
            None => own_scale(x as f64),
        }
    }

    /// A rate pass's rows: κ, the residuals, and the total (the same integer where the
    /// residuals have the same bits; its mean within the tolerance elsewhere).
    async fn rate_rows(&self, out: &mut Rows, it: usize) -> Result<()> {
        let (d, g, n, name, tol) = (self.d, self.g, self.n, self.name, self.tol);
        let rate = self.tr.rates.get(it).cloned().unwrap_or_default();
        let got = g
            .read_f32_at_async(&d.fields.buffer, d.fields.kappa(), n)
            .await?;
        out.push(
            self.kappa_row(&format!("{name}.rate.kappa"), &got, &rate.kappa, it + 1),
            Some(it),
        );
        let got = g
            .read_f32_at_async(&d.fields.buffer, d.fields.residual(), n)
            .await?;
        let scale: Vec<f64> = rate
            .residual
            .iter()
            .map(|&e| self.residual_scale(e))
            .collect();
        out.push(
            compare_against(&format!("{name}.rate.e"), &got, &rate.residual, &scale, tol),
            Some(it),
        );
        let total = d.read_total_async(g, self.which, it as u32).await?;
        let (got_mean, want_mean) = (total.mean(n as u32), rate.total.mean(n as u32));
        let mut row = compare_against(
            &format!("{name}.rate.residual"),
            &[got_mean],
            &[want_mean],
            &[self.residual_scale(want_mean)],
            tol,
        );
        if tol == 0.0 && total != rate.total {
            row.pass = false;
            row.mismatches = row.mismatches.max(1);
        }
        out.push(row, Some(it));
        Ok(())
    }

    /// The decision the passes after iteration `it` take, from the GPU's total (the passes
    /// themselves are judged by the other rows and by the step's iteration counts), against
    /// the CPU's; where the solve ends there, its iteration counts too. Returns whether it
    /// ends.
    async fn control_row(&self, out: &mut Rows, it: usize, cap: u32) -> Result<bool> {
        let (d, n, name, tr) = (self.d, self.n, self.name, self.tr);
        let (eta, min_it) = match self.which {
            solver::dfsph::Solve::Divergence => (d.dp.eta_v, solver::dfsph::MIN_ITERATIONS[0]),
            solver::dfsph::Solve::Density => (d.dp.eta_d, solver::dfsph::MIN_ITERATIONS[1]),
        };
        let total = d.read_total_async(self.g, self.which, it as u32).await?;
        let mut got_state = tr
            .states
            .get(it.wrapping_sub(1))
            .copied()
            .filter(|_| it > 0)
            .unwrap_or_default();
        solver::dfsph::dfsph_control(
            &mut got_state,
            total,
            n as u32,
            solver::dfsph::threshold(eta, n as u32),
            min_it,
            cap,
            d.dp.max_iterations,
        );
        let want = tr.states.get(it).copied().unwrap_or_default();
        let mut state_row = compare_exact(
            &format!("{name}.control"),
            &[got_state.iterations, got_state.done as u32],
            &[want.iterations, want.done as u32],
        );
        let res = compare_against(
            "",
            &[got_state.residual],
            &[want.residual],
            &[self.residual_scale(want.residual)],
            self.tol,
        );
        state_row.pass &= res.pass;
        state_row.mismatches += res.mismatches;
        state_row.max_abs_error = state_row.max_abs_error.max(res.max_abs_error);
        state_row.max_rel_error = res.max_rel_error;
        state_row.worst = state_row.worst.or(res.worst);
        out.push(state_row, Some(it));
        let ends = got_state.done
            || it >= cap as usize
            || tr.rates.get(it).is_none()
            || tr.kappas.get(it).is_none();
        if ends {
            let counts = compare_exact(
                &format!("{name}.iterations"),
                &[got_state.iterations, got_state.done as u32],
                &[want.iterations, 1],
            );
            out.push(counts, None);
        }
        Ok(ends)
    }

    /// The Σ κ the CPU's iteration `it` started from (zero before the first).
    fn kappa_sums_before(&self, it: usize) -> Vec<f32> {
        match it {
            0 => vec![0.0; self.n],
            _ => self.tr.kappa_sums[it - 1].clone(),
        }
    }

    /// Iteration `it`'s coarse correction, where one follows it, from the CPU's rate pass,
    /// increments `kappa`, Σ κ and velocities `vel`: the residual on the cells, the coarse
    /// solution and the prolonged increments.
    async fn correction_rows(
        &self,
        out: &mut Rows,
        it: usize,
        rate: &solver::dfsph::Rate,
        kappa: &[f32],
        vel: &[Vec3],
    ) -> Result<()> {
        let (d, g, n, name, which) = (self.d, self.g, self.n, self.name, self.which);
        let q = &g.ctx.queue;
        d.write_totals(q, which, it as u32, &[rate.total]);
        let Some(c) = self.tr.corrections.iter().find(|c| c.k == it as u32) else {
            return Ok(());
        };
        let f = &d.fields;
        q.write_buffer(
            &f.buffer,
            f.residual(),
            bytemuck::cast_slice(&rate.residual),
        );
        q.write_buffer(&f.buffer, f.kappa(), bytemuck::cast_slice(&rate.kappa));
        q.write_buffer(
            &f.buffer,
            self.sums(),
            bytemuck::cast_slice(&self.kappa_sums_before(it)),
        );
        g.write_vec3(&g.bufs.sorted_vel, vel);
        g.run(|g, e| d.encode_correction(g, e, which, it as u32))?;
        let got = g.read_u32_async(&d.coarse_rhs, 2 * c.rhs.len()).await?;
        out.push(
            compare_exact(&format!("{name}.restrict"), &got, &fixed_words(&c.rhs)),
            Some(it),
        );
        let got = g.read_f32_async(&d.coarse_work, c.solution.y.len()).await?;
        out.push(
            compare_scaled(&format!("{name}.coarse"), &got, &c.solution.y, self.tol),
            Some(it),
        );
        let got = g
            .read_f32_at_async(&d.fields.buffer, d.fields.kappa(), n)
            .await?;
        out.push(
            self.kappa_row(&format!("{name}.prolong"), &got, kappa, it + 1),
            Some(it),
        );
        Ok(())
    }

    /// The pressure update of iteration `it` from the CPU's increments `kappa`, the velocities
    /// `vel` and Σ κ before it: the velocities and Σ κ after it; then the GPU holds the CPU's
    /// for the rate pass that follows.
    async fn update_rows(
        &self,
        out: &mut Rows,
        it: usize,
        kappa: &[f32],
        vel: &[Vec3],
    ) -> Result<()> {
        let (d, g, n, name, which, tr) = (self.d, self.g, self.n, self.name, self.which, self.tr);
        let q = &g.ctx.queue;
        let (f, sums) = (&d.fields, self.sums());
        q.write_buffer(&f.buffer, f.kappa(), bytemuck::cast_slice(kappa));
        q.write_buffer(
            &f.buffer,
            sums,
            bytemuck::cast_slice(&self.kappa_sums_before(it - 1)),
        );
        g.write_vec3(&g.bufs.sorted_vel, vel);
        d.write_totals(q, which, it as u32, &[Default::default()]);
        g.run(|g, e| d.encode_pressure(g, e, which, it as u32))?;
        let want = flat(&tr.velocities[it - 1]);
        let got = flat(&g.read_vec3_async(&g.bufs.sorted_vel, n).await?);
        out.push(
            compare_scaled(&format!("{name}.pressure.velocity"), &got, &want, self.tol),
            Some(it),
        );
        let want = &tr.kappa_sums[it - 1];
        let got = g.read_f32_at_async(&f.buffer, sums, n).await?;
        out.push(
            self.kappa_row(&format!("{name}.kappa_sum"), &got, want, it),
            Some(it),
        );
        g.write_vec3(&g.bufs.sorted_vel, &tr.velocities[it - 1]);
        q.write_buffer(&f.buffer, sums, bytemuck::cast_slice(want));
        g.run(|g, e| d.encode_rate(g, e, which, it as u32))
    }

    /// The iteration after the last, `it` + 1, must do nothing on the GPU: its passes decide
    /// so from the last total.
    async fn skip_row(&self, out: &mut Rows, it: usize) -> Result<()> {
        let (d, g, n, name, which) = (self.d, self.g, self.n, self.name, self.which);
        let q = &g.ctx.queue;
        if let Some(r) = self.tr.rates.last() {
            d.write_totals(q, which, it as u32, &[r.total]);
        }
        d.write_totals(q, which, it as u32 + 1, &[Default::default()]);
        let before = g.read_vec3_async(&g.bufs.sorted_vel, n).await?;
        g.run(|g, e| {
            d.encode_pressure(g, e, which, it as u32 + 1);
            d.encode_rate(g, e, which, it as u32 + 1);
        })?;
        let after = g.read_vec3_async(&g.bufs.sorted_vel, n).await?;
        let skipped =
            d.read_total_async(g, which, it as u32 + 1).await? == solver::dfsph::Total::default();
        out.push(
            compare_exact(
                &format!("{name}.converged_passes_skip"),
                &[(after == before) as u32, skipped as u32],
                &[1, 1],
            ),
            None,
        );
        Ok(())
    }
}

/// WCSPH's pressure in a checked step, pass by pass from the CPU's inputs: `dfsph_eos`'s κ,
/// then the pressure pass from the CPU's κ on the velocities `predicted` (v*).
async fn verify_eos(
    sim: &crate::gpu::fluid::Simulation,
    d: &crate::solver::dfsph::gpu::GpuDfsph,
    eos: &solver::dfsph::EosTrace,
    predicted: &[Vec3],
    tol: f64,
    out: &mut Rows,
) -> Result<()> {
    let g = &sim.grid;
    let n = predicted.len();
    g.run(|g, e| d.encode_eos(g, e))?;
    let got = g
        .read_f32_at_async(&d.fields.buffer, d.fields.kappa(), n)
        .await?;
    // κ = B((ρ/ρ0)⁷ − 1)/ρ: one ulp of ρ/ρ0 moves it by about 7 B/ρ0 · 2⁻²⁴ however small κ
    // is (x⁷ − 1 cancels near ρ0), so its error is judged against B/ρ0 where the field is
    // smaller: at a nonzero tolerance an adapter that divides a last bit differently (Mesa's
    // GL driver) passes, and at tolerance 0 every bit must still agree.
    let fp = &sim.fluid_params;
    let scale = largest(&eos.kappa).max((fp.stiffness / fp.rest_density) as f64);
    out.push(
        compare_with("dfsph_eos", &got, &eos.kappa, tol, |_, _| scale),
        None,
    );
    let q = &g.ctx.queue;
    q.write_buffer(
        &d.fields.buffer,
        d.fields.kappa(),
        bytemuck::cast_slice(&eos.kappa),
    );
    g.write_vec3(&g.bufs.sorted_vel, predicted);
    g.run(|g, e| d.encode_eos_force(g, e))?;
    let got = flat(&g.read_vec3_async(&g.bufs.sorted_vel, n).await?);
    out.push(
        compare_scaled("wcsph.pressure.velocity", &got, &flat(&eos.vel), tol),
        None,
    );
    Ok(())
}

/// DFSPH's coarse levels in a checked step: the operator's integer sums exactly, the rows
/// from the CPU's operator (then left on the GPU for the solves).
async fn verify_levels(
    sim: &crate::gpu::fluid::Simulation,
    d: &crate::solver::dfsph::gpu::GpuDfsph,
    coarse: &solver::dfsph::Coarse,
    tol: f64,
    out: &mut Rows,
) -> Result<()> {
    let g = &sim.grid;
    let q = &g.ctx.queue;
    // The coarse levels: the operator's integer sums exactly, the rows from the CPU's operator.
    g.run(|g, e| d.encode_levels(g, e))?;
    let mut words = fixed_words(&coarse.op.op);
    words.push(coarse.op.anchors);
    let got = g.read_u32_async(&d.coarse_op, words.len()).await?;
    out.push(compare_exact("dfsph_galerkin", &got, &words), None);
    g.write_u32(&d.coarse_op, &words);
    g.run(|g, e| d.encode_levels_only(g, e))?;
    let got = g
        .read_f32_async(&d.coarse_rows, 27 * coarse.rows.len())
        .await?;
    out.push(
        compare_scaled("dfsph_levels", &got, &coarse.rows.concat(), tol),
        None,
    );
    let rows: Vec<f32> = coarse.rows.concat();
    q.write_buffer(&d.coarse_rows, 0, bytemuck::cast_slice(&rows));
    Ok(())
}

/// DFSPH: has GPU and CPU take one step from the same state, pass by pass, comparing every
/// stage's output (ρ and α, the coarse levels, each iteration of both solves, the
/// accelerations, dt, the predicted velocities, the positions, ρ and α at the new positions
/// and the statistics block). The first mismatch is named with its step, stage and
/// iteration.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn check_dfsph_step(
    sim: &crate::gpu::fluid::Simulation,
    d: &crate::solver::dfsph::gpu::GpuDfsph,
    state: &Particles,
    carry: &solver::Carry,
    boundary: Option<&crate::boundary::Boundary>,
    tol: f64,
    step: u64,
) -> Result<Checked> {
    use solver::dfsph::{Solve, dfsph_step};
    let (sp, fp, dp) = (&sim.sim_params, &sim.fluid_params, &d.dp);
    let g = &sim.grid;
    let n = state.len();
    let carry = &solver::dfsph::DfsphCarry::from_carry(carry, dp).map_err(crate::Error::input)?;
    let tr = dfsph_step(true, state, carry, None, boundary, sp, fp, dp);
    let largest = tr.grid.counts.iter().copied().max().unwrap_or(0);
    crate::grid::gpu::check_loop_budget(&g.ctx.info, sp.n, largest, 1)?;
    sim.upload(state);
    sim.upload_carry(&carry.to_carry())?;
    let mut out = Rows {
        step,
        rows: Vec::new(),
        first: None,
    };
    let at = Checker {
        sim,
        d,
        boundary,
        tol,
        n,
    };
    g.run(|_, e| sim.encode_prime(e))?;
    let got = g.read_u32_async(&g.bufs.sorted_ids, n).await?;
    out.push(
        compare_exact("grid.sorted_ids", &got, &tr.grid.sorted_ids),
        None,
    );
    let names = ["dfsph_density.rho", "dfsph_density.alpha"];
    at.density_rows(&mut out, names, &tr.start, &tr.sorted.pos)
        .await?;
    // From here every pass runs on the CPU's inputs: a GPU whose division and fused
    // multiply-adds round differently is judged pass by pass, not on an ulp amplified through
    // the solves' iterations. On lavapipe the uploads rewrite the values the GPU already holds.
    let q = &g.ctx.queue;
    q.write_buffer(&d.rho, 0, bytemuck::cast_slice(&tr.start.density));
    q.write_buffer(&d.alpha, 0, bytemuck::cast_slice(&tr.start.alpha));
    let caps = d.caps(&carry.budget);
    match &tr.coarse {
        Some(coarse) => {
            verify_levels(sim, d, coarse, tol, &mut out).await?;
            verify_solve(
                sim,
                Solve::Divergence,
                caps[0],
                &tr.divergence,
                &tr.sorted.vel,
                None,
                tol,
                &mut out,
            )
            .await?;
        }
        None => g.run(|_, e| d.encode_wcsph_start(e))?,
    }
    at.forces(&tr, &mut out).await?;
    let predicted = tr.substeps.last().map_or(&tr.predicted, |(_, v)| v);
    let pressed = match &tr.eos {
        None => {
            let scales = DensityScales {
                alpha: &tr.start.alpha,
                dt: tr.timestep.dt,
                rho0: fp.rest_density,
            };
            verify_solve(
                sim,
                Solve::Density,
                caps[1],
                &tr.density,
                predicted,
                Some(&scales),
                tol,
                &mut out,
            )
            .await?;
            tr.density.velocities.last().unwrap_or(predicted)
        }
        Some(eos) => {
            verify_eos(sim, d, eos, predicted, tol, &mut out).await?;
            &eos.vel
        }
    };
    at.end(&tr, pressed, &mut out).await?;
    let block = at.stats(&tr, caps, &mut out).await?;
    Ok(Checked {
        rows: out.rows,
        first: out.first,
        next: tr.next,
        carry: tr.carry.to_carry(),
        block,
    })
}

/// What the passes of one checked step share: the simulation, its stages, the obstacles, the
/// tolerance and the particle count.
struct Checker<'a> {
    sim: &'a crate::gpu::fluid::Simulation,
    d: &'a crate::solver::dfsph::gpu::GpuDfsph,
    boundary: Option<&'a crate::boundary::Boundary>,
    tol: f64,
    n: usize,
}

impl Checker<'_> {
    /// A `dfsph_density` pass's ρ and α (`names`) against the CPU's at the positions `pos` it
    /// walked, α's deficiency flag judged at the cutoff ([`compare_alpha`]).
    async fn density_rows(
        &self,
        out: &mut Rows,
        names: [&str; 2],
        want: &solver::dfsph::DensityAlpha,
        pos: &[Vec3],
    ) -> Result<()> {
        let (g, d, n, tol) = (&self.sim.grid, self.d, self.n, self.tol);
        let (sp, fp) = (&self.sim.sim_params, &self.sim.fluid_params);
        let (rho, alpha) = (
            g.read_f32_async(&d.rho, n).await?,
            g.read_f32_async(&d.alpha, n).await?,
        );
        let cutoff = |k| near_cutoff(k, pos, self.boundary, sp, fp, tol);
        out.push(compare_float(names[0], &rho, &want.density, tol), None);
        out.push(
            compare_alpha(names[1], &alpha, &want.alpha, cutoff, tol),
            None,
        );
        Ok(())
    }

    /// `dfsph_accel`, `dfsph_timestep`, `dfsph_predict` and the later viscous substeps, from
    /// the velocities the divergence-free solve left on the CPU.
    async fn forces(&self, tr: &solver::dfsph::DfsphTrace, out: &mut Rows) -> Result<()> {
        let (sim, d, n, tol) = (self.sim, self.d, self.n, self.tol);
        let g = &sim.grid;
        let solved = tr.divergence.velocities.last().unwrap_or(&tr.sorted.vel);
        g.write_vec3(&g.bufs.sorted_vel, solved);
        g.run(|g, e| d.encode_accel(g, e))?;
        let got = flat(&g.read_vec3_async(&sim.fluid.accel, n).await?);
        out.push(
            compare_scaled("dfsph_accel", &got, &flat(&tr.acc), tol),
            None,
        );
        out.push(
            compare_scaled(
                "dfsph_accel.viscous_rate",
                &g.read_w_async(&sim.fluid.accel, n).await?,
                &tr.viscous_rate,
                tol,
            ),
            None,
        );
        // The step comes from the maxima `dfsph_timestep` folds, computed by the first substep's
        // `dfsph_predict_first`.
        g.run(|g, e| {
            d.encode_timestep(g, e);
            d.encode_predict(g, e);
        })?;
        let st = g.read_f32_async(&sim.fluid.step_state, 4).await?;
        let ts = tr.timestep;
        out.push(
            compare_float(
                "dfsph_timestep",
                &[st[0], st[1], st[3]],
                &[ts.dt, ts.v_max, ts.dt_sub],
                tol,
            ),
            None,
        );
        out.push(
            compare_exact(
                "dfsph_timestep.substeps",
                &[d.read_substeps_async(g).await?],
                &[ts.substeps],
            ),
            None,
        );
        let got = flat(&g.read_vec3_async(&g.bufs.sorted_vel, n).await?);
        out.push(
            compare_scaled("dfsph_predict", &got, &flat(&tr.predicted), tol),
            None,
        );
        // The later viscous substeps, each from the GPU's own previous one (the substep count
        // matched above, or that row fails).
        for (k, (acc, vel)) in (2..).zip(&tr.substeps) {
            g.run(|g, e| d.encode_substep_accel(g, e, k))?;
            let got = flat(&g.read_vec3_async(&sim.fluid.accel, n).await?);
            out.push(
                compare_scaled(&format!("dfsph_accel.substep{k}"), &got, &flat(acc), tol),
                None,
            );
            g.run(|g, e| d.encode_substep_predict(g, e, k))?;
            let got = flat(&g.read_vec3_async(&g.bufs.sorted_vel, n).await?);
            out.push(
                compare_scaled(&format!("dfsph_predict.substep{k}"), &got, &flat(vel), tol),
                None,
            );
        }
        Ok(())
    }

    /// `dfsph_integrate` from the velocities the pressure left on the CPU (`pressed`), then
    /// the grid, ρ and α at the new positions.
    async fn end(
        &self,
        tr: &solver::dfsph::DfsphTrace,
        pressed: &[Vec3],
        out: &mut Rows,
    ) -> Result<()> {
        use solver::dfsph::Solve;
        let (sim, d, n, tol) = (self.sim, self.d, self.n, self.tol);
        let (g, q) = (&sim.grid, &sim.grid.ctx.queue);
        g.write_vec3(&g.bufs.sorted_vel, pressed);
        g.run(|g, e| d.encode_integrate(g, e))?;
        let got = flat(&g.read_vec3_async(&g.bufs.positions, n).await?);
        out.push(
            compare_scaled("dfsph_integrate.position", &got, &flat(&tr.next.pos), tol),
            None,
        );
        let got = flat(&g.read_vec3_async(&g.bufs.velocities, n).await?);
        out.push(
            compare_scaled("dfsph_integrate.velocity", &got, &flat(&tr.next.vel), tol),
            None,
        );
        out.push(
            compare_exact(
                "dfsph_integrate.id",
                &g.read_u32_async(&g.bufs.particle_id, n).await?,
                &tr.next.id,
            ),
            None,
        );
        // ρ and α at the new positions from the CPU's: the neighbour threshold of α makes it
        // jump where a position's last bit moves a neighbour across h.
        g.upload(&tr.next);
        // The solves' totals as the CPU had them, from which the host replays their decisions
        // (the density error's blocks are the GPU's own).
        for (which, solve) in [
            (Solve::Divergence, &tr.divergence),
            (Solve::Density, &tr.density),
        ] {
            let mut totals = solve.totals.clone();
            totals.resize(d.dp.max_iterations as usize + 1, Default::default());
            d.write_totals(q, which, 0, &totals);
        }
        g.run(|g, e| {
            g.encode_build(e);
            d.encode_density(g, e);
        })?;
        self.density_rows(out, ["end.rho", "end.alpha"], &tr.end, &tr.next_sorted.pos)
            .await?;
        Ok(())
    }

    /// The statistics block of the step's end: the solver's block (iterations and values) and
    /// the general block; returns the CPU's own block, which the run loop reads.
    async fn stats(
        &self,
        tr: &solver::dfsph::DfsphTrace,
        caps: [u32; 2],
        out: &mut Rows,
    ) -> Result<StatsBlock> {
        let (sim, d, tol) = (self.sim, self.d, self.tol);
        let (fp, q) = (&sim.fluid_params, &sim.grid.ctx.queue);
        let w = tr.stats;
        // The general statistics read ρ: from the CPU's, so that the densest particle's id is
        // one answer, not two that a last bit decides.
        q.write_buffer(&d.rho, 0, bytemuck::cast_slice(&tr.end.density));
        let got = d.finish(sim.stats_read_now_async().await?, caps);
        let s = solver::dfsph::SolverStats::from_words(&got.solver);
        out.push(
            compare_exact(
                "dfsph_stats.iterations",
                &[s.iterations_v, s.iterations_d],
                &[w.iterations_v, w.iterations_d],
            ),
            None,
        );
        let want = [
            w.residual_v,
            w.residual_d,
            w.error_mean,
            w.error_max,
            w.dt,
            w.v_max,
        ];
        // ρ*/ρ0 − 1 and max(ρ/ρ0 − 1, 0) relative to |x| + 1 (differences of numbers near 1,
        // as `DensityScales`), the others relative to themselves.
        let own = |x: f32| own_scale(x as f64);
        let near_one = |x: f32| (x as f64).abs() + 1.0;
        let scales = [
            own(want[0]),
            near_one(want[1]),
            near_one(want[2]),
            near_one(want[3]),
            own(want[4]),
            own(want[5]),
        ];
        out.push(
            compare_against(
                "dfsph_stats.values",
                &[
                    s.residual_v,
                    s.residual_d,
                    s.error_mean,
                    s.error_max,
                    s.dt,
                    s.v_max,
                ],
                &want,
                &scales,
                tol,
            ),
            None,
        );
        // The obstacles' power is summed by index, in the step's start order, as on the GPU.
        // The DFSPH block the statistics must carry is the GPU's own (its values were judged
        // above); the rest from the CPU's state.
        let mut want = crate::cpu::stats::stats_block_with_power(
            &tr.next_sorted.pos,
            &tr.next_sorted.vel,
            &tr.next_sorted.id,
            &tr.end.density,
            (!tr.power.is_empty()).then_some(&tr.power[..]),
            fp,
            tr.stats.dt,
            Some(&tr.stats),
        );
        // The CPU's own block is what the run loop reads (dt, the count, the guards).
        let block = want;
        want.solver = s.to_words();
        let eos = eos_sensitivity(&tr.end.density, fp);
        for r in compare_stats(&got, &want, eos, tol) {
            out.push(r, None);
        }
        Ok(block)
    }
}

/// The stages of `sim` when they are DFSPH's and WCSPH's (this checker's).
pub(crate) fn stages_of(
    sim: &crate::gpu::fluid::Simulation,
) -> Result<&crate::solver::dfsph::gpu::GpuDfsph> {
    sim.stages
        .as_any()
        .downcast_ref()
        .ok_or_else(|| crate::Error::input("not the DFSPH family's stages"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn density_solve_scales_follow_the_densities() {
        // dt = 1 ms, rho0 = 1000: one unit of |alpha| weighs rho0 / dt^2 = 1e9 per kappa.
        let alpha = [1e-6f32, 2e-6];
        let sc = DensityScales {
            alpha: &alpha,
            dt: 1e-3,
            rho0: 1000.0,
        };
        let k = sc.kappa(&[0.0, 5.0], 1);
        // (dt is an f32: 1e-3 within 1e-7 relative.)
        assert!(
            (k[0] - 1000.0).abs() < 1e-3 && (k[1] - 2005.0).abs() < 1e-3,
            "{k:?}"
        );
        // Three kappas summed weigh three times.
        assert!((sc.kappa(&[0.0, 0.0], 3)[0] - 3000.0).abs() < 1e-3);
    }
}
