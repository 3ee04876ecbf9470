//! What a run reads from each step's statistics block: the `--stats` row ([`StepStats`]) and
//! the checks that stop a diverged run ([`Guards`]), the same on both paths.

use serde::Serialize;

use crate::core::Particles;
use crate::cpu::stats::{BAD_DENSITY, BAD_POSITION, BAD_VELOCITY, StatsBlock, stats_block};
use crate::gpu::fluid::Snapshot;
use crate::params::FluidParams;
use crate::solver::dfsph::SolverStats;
use crate::{Error, Result};

/// One row of `--stats`.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct StepStats {
    /// Step number (1 after the first step).
    pub step: u64,
    /// Simulated time, s.
    pub t: f64,
    /// dt of this step, s.
    pub dt: f64,
    /// Kinetic energy ½ m Σ|v|², J.
    pub kinetic: f64,
    /// Potential energy m |g| Σ (y − floor), J.
    pub potential: f64,
    /// Largest speed, m/s.
    pub max_speed: f64,
    /// Smallest density.
    pub density_min: f64,
    /// Mean density.
    pub density_mean: f64,
    /// Largest density.
    pub density_max: f64,
    /// Surge front: the largest x of the fluid, m.
    pub front: f64,
    /// Particles outside the tank (must be 0).
    pub outside: u64,
    /// DFSPH divergence-free solve iterations (0 for WCSPH).
    pub iterations_v: u32,
    /// DFSPH constant-density solve iterations (0 for WCSPH).
    pub iterations_d: u32,
    /// Final mean residual of the divergence-free solve.
    pub residual_v: f64,
    /// Final mean residual of the constant-density solve.
    pub residual_d: f64,
    /// Mean over particles of max(ρ/ρ0 − 1, 0) at the step's new positions.
    pub density_error_mean: f64,
    /// Its maximum.
    pub density_error_max: f64,
    /// The energy the Tait equation of state stores, m B/ρ0 Σẽ(ρ), J (WCSPH; 0 for DFSPH,
    /// whose pressure does no reversible work).
    pub eos_energy: f64,
    /// The power moving obstacles put into the fluid this step, W (0 when none moves).
    pub obstacle_power: f64,
    /// Live particles in the step (emitters add some at the ends of steps).
    pub particles: u64,
    /// DFSPH: the divergence-free solve stopped at its cap above its tolerance.
    pub stopped_v: bool,
    /// DFSPH: the constant-density solve stopped at its cap above its tolerance.
    pub stopped_d: bool,
}

/// When a run counts as diverged, besides non-finite values and particles outside the tank.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Guards {
    /// A density above this multiple of ρ0 (0 disables).
    pub density_ratio: f32,
    /// WCSPH: a speed above this fraction of the sound speed (0 disables). The weakly
    /// compressible model holds for Mach numbers up to about 0.1 (Monaghan 1994); the dam break
    /// stays below about 0.15 c, so 0.5 c is far past the model, never a normal run.
    pub speed_fraction: f32,
    /// A time step below this, s (DFSPH clamps its dt here, so reaching it counts).
    pub dt_min: f32,
    /// Whether the solver is WCSPH (the speed check applies).
    pub wcsph: bool,
    /// Whether the user fixed dt (`--dt`): then the dt check does not apply.
    pub fixed_dt: bool,
    /// A total energy (kinetic + potential, + the equation of state's for WCSPH) above the
    /// first step's by this fraction of it (0 disables).
    pub energy_margin: f32,
    /// DFSPH's tolerances (η_v, η): a solve whose last mean residual is above its own stopped
    /// short of it (at its cap), which the statistics say (`stopped_v`, `stopped_d`); 0: not
    /// judged (WCSPH, and the runs that only report: `--verify`, `--bench`).
    pub tolerances: [f32; 2],
}

impl Default for Guards {
    fn default() -> Self {
        Self {
            density_ratio: 2.0,
            speed_fraction: 0.5,
            dt_min: 1e-6,
            wcsph: true,
            fixed_dt: false,
            energy_margin: 0.05,
            tolerances: [0.0; 2],
        }
    }
}

/// The total energy of a block, J: kinetic ½ m Σ|v|², gravitational ([`potential_energy`])
/// and, for WCSPH, the energy the Tait equation of state stores, m B/ρ0 Σẽ(ρ)
/// ([`crate::cpu::stats::eos_energy`]).
pub fn total_energy(b: &StatsBlock, fp: &FluidParams, wcsph: bool) -> f64 {
    let m = fp.mass as f64;
    let eos = if wcsph {
        m * fp.stiffness as f64 / fp.rest_density as f64 * b.eos as f64
    } else {
        0.0
    };
    0.5 * m * b.sums[0] as f64 + potential_energy(b, fp) + eos
}

/// The gravitational energy of a block in the gravity given, J, measured from the wall gravity
/// points at so it is never negative and falls as the fluid falls, whichever way that is:
/// m |g| Σ(y − y_floor) for gravity down, m |g| Σ(y_ceiling − y) for gravity up (the block
/// holds Σ(y − y_floor)). Worked example: one particle of 1 kg 0.1 m above the floor of a
/// tank 0.5 m high holds 0.981 J at g = −9.81 and 3.924 J at g = +9.81.
pub fn potential_energy(b: &StatsBlock, fp: &FluidParams) -> f64 {
    let m = fp.mass as f64;
    let g = fp.gravity[1] as f64;
    let above_floor = b.sums[1] as f64;
    if g <= 0.0 {
        m * -g * above_floor
    } else {
        let height = (fp.tank_max[1] - fp.tank_min[1]) as f64;
        m * g * (b.n as f64 * height - above_floor)
    }
}

impl Guards {
    /// Only the checks no run survives (non-finite values; particles outside a closed tank,
    /// which `step_stats` makes): for `--verify` and `--bench`, which report on a run rather
    /// than judge it.
    pub fn unjudged(wcsph: bool) -> Self {
        Self {
            density_ratio: 0.0,
            speed_fraction: 0.0,
            dt_min: 0.0,
            wcsph,
            fixed_dt: true,
            energy_margin: 0.0,
            tolerances: [0.0; 2],
        }
    }

    /// Fails with one line naming the step, the quantity, the particle and a fix when the
    /// block shows a diverged run. A density above the bound counts at any step, the first
    /// included: at 2ρ0 the Tait pressure is 127 B, far outside the weakly compressible model,
    /// and a start that dense (particles stacked on one point) is no fluid to simulate.
    /// `start_energy` is the [`total_energy`] the energy check compares with (the first
    /// step's).
    pub fn check(
        &self,
        b: &StatsBlock,
        start_energy: f64,
        work: f64,
        fp: &FluidParams,
        step: u64,
        t: f64,
    ) -> Result<()> {
        let fix = "use a smaller --cfl or --dt, a larger --sound-speed, or a finer --spacing";
        let rho0 = fp.rest_density;
        if self.density_ratio > 0.0 && b.maxima[1] > self.density_ratio * rho0 {
            return Err(Error::Unstable(format!(
                "step {step}: density {:.1} kg/m^3 at particle {} is above {}x the rest density (t = {t:.6} s): the run diverged; {fix}",
                b.maxima[1], b.density_max_id, self.density_ratio
            )));
        }
        let speed = b.maxima[0].sqrt();
        if self.wcsph && self.speed_fraction > 0.0 && speed > self.speed_fraction * fp.sound_speed {
            return Err(Error::Unstable(format!(
                "step {step}: speed {speed:.4} m/s at particle {} is above {}x the speed of sound {} m/s (t = {t:.6} s): the run diverged; {fix}",
                b.speed_max_id, self.speed_fraction, fp.sound_speed
            )));
        }
        // What moving obstacles put in is no gain of the scheme's.
        let energy = total_energy(b, fp, self.wcsph) - work;
        if self.energy_margin > 0.0
            && start_energy > 0.0
            && energy > start_energy * (1.0 + self.energy_margin as f64)
        {
            let what = match (self.wcsph, work != 0.0) {
                (true, false) => "kinetic + potential + equation-of-state",
                (true, true) => {
                    "kinetic + potential + equation-of-state, less the moving obstacles' work"
                }
                (false, _) => "kinetic + potential",
            };
            return Err(Error::Unstable(format!(
                "step {step}: the total ({what}) energy {energy:.4e} J is {:.1}% above its start {start_energy:.4e} J, more than --energy-margin {} (t = {t:.6} s, fastest particle {}): the run diverged; {fix}",
                100.0 * (energy / start_energy - 1.0),
                self.energy_margin,
                b.speed_max_id
            )));
        }
        if !self.fixed_dt && b.dt <= self.dt_min && step > 0 {
            return Err(Error::Unstable(format!(
                "step {step}: the time step {:.3e} s reached --min-dt {:.3e} s (t = {t:.6} s, fastest particle {}): the run diverged; {fix}",
                b.dt, self.dt_min, b.speed_max_id
            )));
        }
        Ok(())
    }
}

/// The statistics of a step from its block (the same bits on both paths); fails with the
/// step, the quantity and the particle on a non-finite value, or on particles outside the tank.
pub fn step_stats(b: &StatsBlock, fp: &FluidParams, step: u64, t: f64) -> Result<StepStats> {
    if b.non_finite != 0 {
        let what = [
            (BAD_POSITION, "position"),
            (BAD_VELOCITY, "velocity"),
            (BAD_DENSITY, "density"),
        ]
        .iter()
        .filter(|(bit, _)| b.non_finite & bit != 0)
        .map(|(_, w)| *w)
        .collect::<Vec<_>>()
        .join(" and ");
        return Err(Error::Unstable(format!(
            "step {step}: non-finite {what} at particle {} (t = {t:.6} s): the run blew up; reduce --dt or the speed of sound, or raise --viscosity",
            b.first_bad_id
        )));
    }
    if !b.dt.is_finite() {
        return Err(Error::Unstable(format!(
            "step {step}: non-finite time step"
        )));
    }
    // Through an open side leaving is no error: the run removes them after the step.
    if b.outside > 0 && fp.open == 0 {
        return Err(Error::Unstable(format!(
            "step {step}: {} particles outside the tank (t = {t:.6} s)",
            b.outside
        )));
    }
    let m = fp.mass as f64;
    let n = b.n.max(1) as f64;
    let rho0 = fp.rest_density as f64;
    let mut st = StepStats {
        step,
        t,
        dt: b.dt as f64,
        kinetic: 0.5 * m * b.sums[0] as f64,
        potential: potential_energy(b, fp),
        max_speed: (b.maxima[0] as f64).sqrt(),
        density_min: b.density_min as f64,
        density_mean: b.sums[2] as f64 / n,
        density_max: b.maxima[1] as f64,
        front: b.maxima[2] as f64,
        outside: b.outside as u64,
        iterations_v: 0,
        iterations_d: 0,
        residual_v: 0.0,
        residual_d: 0.0,
        density_error_mean: b.sums[3] as f64 / (rho0 * n),
        density_error_max: b.maxima[3] as f64 / rho0,
        eos_energy: 0.0,
        obstacle_power: b.power as f64,
        particles: b.n as u64,
        stopped_v: false,
        stopped_d: false,
    };
    // The stages reduce their density error at the new positions in their own block.
    let d = SolverStats::from_words(&b.solver);
    if b.solver != [0; 8] {
        st.iterations_v = d.iterations_v;
        st.iterations_d = d.iterations_d;
        st.residual_v = d.residual_v as f64;
        st.residual_d = d.residual_d as f64;
        st.density_error_mean = d.error_mean as f64;
        st.density_error_max = d.error_max as f64;
    }
    // A step that solved nothing is WCSPH's (DFSPH's solves run at least
    // `solver::dfsph::MIN_ITERATIONS`), whose equation of state stores energy.
    if d.iterations_v == 0 && d.iterations_d == 0 {
        st.eos_energy = total_energy(b, fp, true) - total_energy(b, fp, false);
    }
    Ok(st)
}

/// The statistics of a snapshot, through the same block as a run's.
pub fn snapshot_stats(s: &Snapshot, fp: &FluidParams, step: u64, t: f64) -> Result<StepStats> {
    let st = &s.state;
    let b = stats_block(
        &st.pos,
        &st.vel,
        &st.id,
        &s.density,
        fp,
        s.dt,
        s.solver.as_ref(),
    );
    step_stats(&b, fp, step, t)
}

/// Fails with one line when a starting state has a non-finite value or a particle outside
/// the tank.
pub fn check_start(state: &Particles, fp: &FluidParams) -> Result<()> {
    if state.is_empty() {
        return Ok(());
    }
    let density = vec![fp.rest_density; state.len()];
    let b = stats_block(&state.pos, &state.vel, &state.id, &density, fp, 0.0, None);
    if b.non_finite != 0 {
        return Err(Error::input(format!(
            "particle {} starts with a non-finite position or velocity: fix the input",
            b.first_bad_id
        )));
    }
    if b.outside > 0 {
        return Err(Error::input(format!(
            "{} particles start outside the tank: widen --tank-min/--tank-max",
            b.outside
        )));
    }
    Ok(())
}

/// The `--stats` columns and their units: the CSV's one header row names them, the sidecar
/// ([`crate::io::write_stats_sidecar`]) gives the units.
pub const STATS_COLUMNS: [(&str, &str); 22] = [
    ("step", "steps taken"),
    ("t", "s"),
    ("dt", "s"),
    ("kinetic", "J"),
    ("potential", "J"),
    ("max_speed", "m/s"),
    ("density_min", "kg/m^3"),
    ("density_mean", "kg/m^3"),
    ("density_max", "kg/m^3"),
    ("front", "m"),
    ("outside", "particles"),
    ("iterations_v", "iterations"),
    ("iterations_d", "iterations"),
    ("residual_v", "fraction"),
    ("residual_d", "fraction"),
    ("density_error_mean", "fraction of rho0"),
    ("density_error_max", "fraction of rho0"),
    ("eos_energy", "J"),
    ("obstacle_power", "W"),
    ("particles", "particles"),
    (
        "stopped_v",
        "1: the divergence-free solve stopped at its cap above its tolerance",
    ),
    (
        "stopped_d",
        "1: the constant-density solve stopped at its cap above its tolerance",
    ),
];

/// The `--stats` CSV header row (one row, no comment lines, so any CSV reader takes it).
pub fn stats_header() -> String {
    let names: Vec<&str> = STATS_COLUMNS.iter().map(|(n, _)| *n).collect();
    names.join(",") + "\n"
}

impl StepStats {
    /// The row as a CSV line.
    pub fn csv_line(&self) -> String {
        format!(
            "{},{:.9},{:.6e},{:.9e},{:.9e},{:.6},{:.4},{:.4},{:.4},{:.6},{},{},{},{:.6e},{:.6e},{:.6e},{:.6e},{:.9e},{:.6e},{},{},{}\n",
            self.step,
            self.t,
            self.dt,
            self.kinetic,
            self.potential,
            self.max_speed,
            self.density_min,
            self.density_mean,
            self.density_max,
            self.front,
            self.outside,
            self.iterations_v,
            self.iterations_d,
            self.residual_v,
            self.residual_d,
            self.density_error_mean,
            self.density_error_max,
            self.eos_energy,
            self.obstacle_power,
            self.particles,
            self.stopped_v as u8,
            self.stopped_d as u8
        )
    }

    /// Marks the solves that stopped above their tolerances `tol` (η_v, η; 0 judges none): a
    /// residual that is not at most its tolerance (NaN included).
    pub fn judge_solves(&mut self, tol: [f32; 2]) {
        let above =
            |residual: f64, tol: f32| tol > 0.0 && (residual.is_nan() || residual > tol as f64);
        self.stopped_v = above(self.residual_v, tol[0]);
        self.stopped_d = above(self.residual_d, tol[1]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{PhysicsConfig, SphConfig};

    fn fp() -> FluidParams {
        let cfg = SphConfig::new(2, Default::default()).unwrap();
        PhysicsConfig::default()
            .fluid_params(&cfg, glam::Vec3::ZERO, glam::Vec3::ONE, 0.5)
            .unwrap()
    }

    fn block(rho_max: f32, speed: f32, dt: f32) -> StatsBlock {
        StatsBlock {
            maxima: [speed * speed, rho_max, 0.5, 0.0],
            dt,
            n: 1,
            density_max_id: 7,
            speed_max_id: 9,
            ..Default::default()
        }
    }

    #[test]
    fn guards_name_the_quantity_and_the_particle() {
        let (g, fp) = (Guards::default(), fp());
        let ok = block(1000.0, 0.1, 1e-4);
        assert!(g.check(&ok, 0.0, 0.0, &fp, 1, 0.0).is_ok());
        let dense = block(2100.0, 0.1, 1e-4);
        let e = g
            .check(&dense, 0.0, 0.0, &fp, 2, 0.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("density") && e.contains("particle 7"), "{e}");
        // Above the bound at the first step too.
        assert!(g.check(&dense, 0.0, 0.0, &fp, 1, 0.0).is_err());
        let fast = block(1000.0, 0.6 * fp.sound_speed, 1e-4);
        let e = g
            .check(&fast, 0.0, 0.0, &fp, 2, 0.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("speed") && e.contains("particle 9"), "{e}");
        let dfsph = Guards { wcsph: false, ..g };
        assert!(dfsph.check(&fast, 0.0, 0.0, &fp, 2, 0.0).is_ok());
        let tiny = block(1000.0, 0.1, 1e-6);
        let e = g
            .check(&tiny, 0.0, 0.0, &fp, 2, 0.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--min-dt"), "{e}");
        let fixed = Guards {
            fixed_dt: true,
            ..g
        };
        assert!(fixed.check(&tiny, 0.0, 0.0, &fp, 2, 0.0).is_ok());
    }

    /// [`potential_energy`]'s worked example, and a fluid rising under gravity that points up
    /// loses energy as one falling under gravity down does.
    #[test]
    fn potential_energy_is_measured_from_the_wall_gravity_points_at() {
        let mut fp = fp();
        fp.mass = 1.0;
        fp.tank_min[1] = 0.0;
        fp.tank_max[1] = 0.5;
        let at = |y: f32| StatsBlock {
            sums: [0.0, y, 0.0, 0.0],
            ..block(1000.0, 0.0, 1e-4)
        };
        fp.gravity[1] = -9.81;
        let down = potential_energy(&at(0.1), &fp);
        assert!((down - 0.981).abs() < 1e-6, "{down}");
        assert!(potential_energy(&at(0.05), &fp) < down);
        fp.gravity[1] = 9.81;
        let up = potential_energy(&at(0.1), &fp);
        assert!((up - 3.924).abs() < 1e-5, "{up}");
        assert!(potential_energy(&at(0.2), &fp) < up);
        assert!(potential_energy(&at(0.5), &fp).abs() < 1e-6);
    }

    #[test]
    fn an_energy_gain_beyond_the_margin_stops_the_run() {
        let (g, fp) = (Guards::default(), fp());
        let at = |v2: f32, y: f32, eos: f32| StatsBlock {
            sums: [v2, y, 0.0, 0.0],
            eos,
            ..block(1000.0, 0.1, 1e-4)
        };
        let start = at(0.0, 1.0, 0.0);
        let e0 = total_energy(&start, &fp, true);
        // Potential m g · 1 turned into kinetic ½ m Σv², 4% more: within the margin.
        let moving = at(2.0 * 9.81 * 1.04, 0.0, 0.0);
        assert!(g.check(&moving, e0, 0.0, &fp, 2, 0.0).is_ok());
        let gained = at(2.0 * 9.81 * 1.06, 0.0, 0.0);
        let e = g
            .check(&gained, e0, 0.0, &fp, 2, 0.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("energy") && e.contains("--energy-margin"), "{e}");
        // A compressed start's stored energy counts for WCSPH: released, it is no gain.
        let eos0 = (0.06 * fp.rest_density as f64 * 9.81 / fp.stiffness as f64) as f32;
        let compressed = at(0.0, 1.0, eos0);
        let e0 = total_energy(&compressed, &fp, true);
        assert!(g.check(&gained, e0, 0.0, &fp, 2, 0.0).is_ok());
        let off = Guards {
            energy_margin: 0.0,
            ..g
        };
        let e0 = total_energy(&start, &fp, true);
        assert!(off.check(&gained, e0, 0.0, &fp, 2, 0.0).is_ok());
        // The same gain done by a moving obstacle (6% of e0 as work) is no divergence.
        assert!(g.check(&gained, e0, 0.06 * e0, &fp, 2, 0.0).is_ok());
        let e = g
            .check(&gained, e0, 0.005 * e0, &fp, 2, 0.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("less the moving obstacles' work"), "{e}");
    }
}
