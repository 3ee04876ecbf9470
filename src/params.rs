//! Simulation parameters: the user-facing [`SphConfig`] with its validation, and [`SimParams`],
//! the uniform block every WGSL stage reads.
//!
//! `SimParams` is the Rust twin of `struct SimParams` in `shaders/common.wgsl`: the two must
//! match field for field (a naga test checks the sizes agree). The CPU reference reads its
//! constants from the same `SimParams` value, so both paths multiply by the very same `f32`s.

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

use crate::kernel::Kernel;
use crate::{Error, Result};

/// Default initial particle spacing, metres.
pub const DEFAULT_SPACING: f32 = 0.01;
/// Default rest density of water, kg/m³.
pub const DEFAULT_REST_DENSITY: f32 = 1000.0;
pub use crate::core::limits::{MAX_PARTICLES, MAX_TABLE_SIZE, REDUCE_BLOCK};
/// Largest |coordinate| / h accepted. Beyond 2^22 cells from the origin an `f32` position has a
/// resolution coarser than h/2, neighbour distances are meaningless and the query box of a
/// particle could span more than four cells per axis.
pub const MAX_CELL_COORD: f32 = (1u32 << 22) as f32;

/// User-level parameters of a run, validated on construction.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SphConfig {
    /// Particle count N.
    pub particles: u32,
    /// Hash table size T: a power of two.
    pub table_size: u32,
    /// Smoothing radius h, metres.
    pub smoothing_radius: f32,
    /// Initial particle spacing s, metres.
    pub spacing: f32,
    /// Mass of one particle m, kg.
    pub particle_mass: f32,
    /// Rest density ρ0, kg/m³.
    pub rest_density: f32,
    /// Members per walking group (1 to [`GROUP`](crate::core::limits::GROUP)); `None`
    /// takes [`group_size`]'s rule. A GPU tuning knob: every group size gives the same bits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_size: Option<u32>,
    /// The solvers' smoothing kernel ([`crate::kernel`]); density-only runs sum poly6.
    #[serde(default, skip_serializing_if = "is_default_kernel")]
    pub kernel: Kernel,
    /// The dimension of the run's space, 2 or 3 ([`SphConfig::dim`]).
    #[serde(default = "three", skip_serializing_if = "is_three")]
    pub dim: u32,
}

fn three() -> u32 {
    3
}

fn is_three(d: &u32) -> bool {
    *d == 3
}

fn is_default_kernel(k: &Kernel) -> bool {
    *k == Kernel::default()
}

/// Optional overrides for [`SphConfig::new`]; `None` takes the documented default.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConfigOverrides {
    /// Table size T (default: next power of two ≥ 2N).
    pub table_size: Option<u32>,
    /// Smoothing radius h (default: 2s).
    pub smoothing_radius: Option<f32>,
    /// Spacing s (default: 0.01 m).
    pub spacing: Option<f32>,
    /// Particle mass m (default: ρ0·s³).
    pub particle_mass: Option<f32>,
    /// Rest density ρ0 (default: 1000 kg/m³).
    pub rest_density: Option<f32>,
    /// Members per walking group, 1 to 8 (default: [`group_size`]'s rule).
    pub group_size: Option<u32>,
    /// DFSPH's smoothing kernel (default: [`Kernel::WendlandC2`]).
    pub kernel: Option<Kernel>,
    /// The dimension, 2 or 3 (default: 3).
    pub dim: Option<u32>,
}

fn positive_finite(name: &str, example: &str, value: f32) -> Result<f32> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(Error::input(format!(
            "{name} must be a finite number > 0, got {value}: pass e.g. {example}"
        )))
    }
}

/// The largest speed of sound accepted, m/s: water's is 1 480 m/s, and WCSPH's stiffness
/// ρ0 c²/7 must stay finite in f32 with room to spare.
pub const MAX_SOUND_SPEED: f32 = 1e5;

/// Checks that a table size is a power of two within range; the message names the nearest fix.
pub fn validate_table_size(t: u32) -> Result<u32> {
    if t == 0 {
        return Err(Error::input(
            "table size must be a power of two ≥ 1, got 0: pass e.g. --table-size 1024",
        ));
    }
    if !t.is_power_of_two() {
        let up = t.checked_next_power_of_two().unwrap_or(MAX_TABLE_SIZE);
        return Err(Error::input(format!(
            "table size must be a power of two, got {t}: use {} or {}",
            up / 2,
            up
        )));
    }
    if t > MAX_TABLE_SIZE {
        return Err(Error::input(format!(
            "table size {t} exceeds the largest supported table 2^24 = {MAX_TABLE_SIZE}: pass a smaller --table-size"
        )));
    }
    Ok(t)
}

/// The default table size: the next power of two ≥ 2N, capped at [`MAX_TABLE_SIZE`].
pub fn default_table_size(n: u32) -> u32 {
    (n.max(1) as u64 * 2)
        .next_power_of_two()
        .min(MAX_TABLE_SIZE as u64) as u32
}

/// The widest smoothing radius a configuration takes, in spacings: about 17 000 neighbours a
/// particle, where SPH uses 30 to 400 (the run's own count is checked against
/// [`crate::setup::MAX_NEIGHBOURS`]); the lattice sums that size DFSPH's mass and coarse
/// operator walk (2h/s)³ offsets, which at h/s = 8·10⁷ would never end.
pub const MAX_SUPPORT_SPACINGS: f32 = 16.0;

impl SphConfig {
    /// Builds and validates a configuration for `particles` particles.
    pub fn new(particles: u32, o: ConfigOverrides) -> Result<Self> {
        if particles == 0 {
            return Err(Error::input(
                "particle count must be ≥ 1, got 0: pass e.g. -n 10000",
            ));
        }
        if particles > MAX_PARTICLES {
            return Err(Error::input(format!(
                "particle count {particles} exceeds the supported maximum 2^27 = {MAX_PARTICLES}: pass a smaller -n"
            )));
        }
        let spacing = positive_finite(
            "spacing",
            "--spacing 0.01",
            o.spacing.unwrap_or(DEFAULT_SPACING),
        )?;
        let rest_density = positive_finite(
            "rest density",
            "--rest-density 1000",
            o.rest_density.unwrap_or(DEFAULT_REST_DENSITY),
        )?;
        let smoothing_radius = positive_finite(
            "smoothing radius",
            "--smoothing-radius 0.02",
            o.smoothing_radius.unwrap_or(2.0 * spacing),
        )?;
        let default_mass = (rest_density as f64 * (spacing as f64).powi(3)) as f32;
        if o.particle_mass.is_none() && !(default_mass.is_finite() && default_mass > 0.0) {
            return Err(Error::input(format!(
                "spacing {spacing} m and rest density {rest_density} kg/m³ give a particle mass ρ0 s³ = {default_mass} kg, not a finite number > 0: pass a spacing such as --spacing 0.01, or --particle-mass"
            )));
        }
        let particle_mass = positive_finite(
            "particle mass",
            "--particle-mass 0.001",
            o.particle_mass.unwrap_or(default_mass),
        )?;
        let table_size = match o.table_size {
            Some(t) => validate_table_size(t)?,
            None => default_table_size(particles),
        };
        let group = crate::core::limits::GROUP;
        if let Some(g) = o.group_size.filter(|g| !(1..=group).contains(g)) {
            return Err(Error::input(format!(
                "group size must be 1 to {group}, got {g}: pass e.g. --group-size {group}"
            )));
        }
        let dim = o.dim.unwrap_or(3);
        if !(2..=3).contains(&dim) {
            return Err(Error::input(format!(
                "--dim must be 2 or 3, got {dim}: pass --dim 2 for a run in the plane z = 0"
            )));
        }
        let config = Self {
            particles,
            table_size,
            smoothing_radius,
            spacing,
            particle_mass,
            rest_density,
            group_size: o.group_size,
            kernel: o.kernel.unwrap_or_default(),
            dim,
        };
        // The derived constants must be representable too, or densities would be inf or 0.
        let p = config.sim_params();
        let representable = p.inv_h.is_finite()
            && p.h2 > 0.0
            && p.h2.is_finite()
            && p.density_scale.is_finite()
            && p.density_scale > 0.0;
        if !representable {
            return Err(Error::input(format!(
                "smoothing radius {smoothing_radius} with particle mass {particle_mass} gives a kernel constant outside f32 range: choose h and m nearer 1e-3..1e3"
            )));
        }
        // The viscosity Laplacian (`--viscosity`) scales as 45/(π h⁶); with a
        // thousandfold room for the products it enters, f32 holds it down to h ≈ 1.9e-6 m.
        // Below that the first step's forces are inf (measured: spacing 1e-7 m blows up at
        // step 1 on both solvers, 1e-6 m runs).
        let k45 = 45.0 / (std::f64::consts::PI * (smoothing_radius as f64).powi(6));
        if k45 >= f32::MAX as f64 / 1e3 {
            return Err(Error::input(format!(
                "smoothing radius {smoothing_radius} m is too small for f32: the kernels' constant 45/(π h⁶) = {k45:.1e} leaves its range below h ≈ 1.9e-6 m; use a spacing of at least 1e-6 m (h = 2 s)"
            )));
        }
        Ok(config)
    }

    /// The configuration of a fluid run: as [`SphConfig::new`], but without a user-set mass the
    /// particle mass is [`SphConfig::lattice_mass`], so the fluid starts at rest density.
    pub fn for_fluid(particles: u32, o: ConfigOverrides) -> Result<Self> {
        let cfg = Self::new(particles, o)?;
        match o.particle_mass {
            Some(_) => Ok(cfg),
            None => Self::new(
                particles,
                ConfigOverrides {
                    particle_mass: Some(cfg.lattice_mass()),
                    ..o
                },
            ),
        }
    }

    /// The particle mass that puts an infinite cubic lattice of spacing s exactly at ρ0
    /// (ρ0 / Σ_lattice W_poly6). `ρ0 s³` leaves such a lattice about 1% denser than ρ0 at
    /// h = 2s, and in a fluid step that excess is stored pressure that turns into motion.
    pub fn lattice_mass(&self) -> f32 {
        let (s, h) = (self.spacing as f64, self.smoothing_radius as f64);
        let coef = 315.0 / (64.0 * std::f64::consts::PI * h.powi(9));
        self.mass_of_lattice(|n| {
            let r2 = n * s * s;
            if r2 < h * h {
                coef * (h * h - r2).powi(3)
            } else {
                0.0
            }
        })
    }

    /// ρ0 / Σ_lattice W for a kernel given as `w(n)`, n = i² + j² + k² the squared distance
    /// of the lattice point (i, j, k) in spacings, summed in one order over every point within
    /// ⌈h/s⌉ spacings on each axis.
    fn mass_of_lattice(&self, w: impl Fn(f64) -> f64) -> f32 {
        let reach = (self.smoothing_radius as f64 / self.spacing as f64).ceil() as i64;
        let mut sum = 0.0;
        for i in -reach..=reach {
            for j in -reach..=reach {
                for k in -reach..=reach {
                    sum += w((i * i + j * j + k * k) as f64);
                }
            }
        }
        (self.rest_density as f64 / sum) as f32
    }

    /// The particle mass that puts an infinite cubic lattice of spacing s exactly at ρ0 under
    /// the configuration's kernel of support h (the DFSPH density, [`crate::kernel::w`]),
    /// ρ0 / Σ_lattice W ([`Kernel::lattice_sum`]).
    pub fn lattice_mass_of_kernel(&self) -> f32 {
        let (s, h) = (self.spacing as f64, self.smoothing_radius as f64);
        (self.rest_density as f64 / self.kernel.lattice_sum(h, s, self.dim)) as f32
    }

    /// Whether the run is two-dimensional: its particles lie in the plane z = 0, its
    /// neighbour walks visit the 3 × 3 cells of that plane, its kernels carry their 2D
    /// normalisation and its lattice sums run over the square lattice.
    pub fn planar(&self) -> bool {
        self.dim == 2
    }

    /// The configuration of a fluid run of the solver named `solver` (`SphConfig::for_solver`
    /// of the solver module takes its `Solver`): as [`SphConfig::for_fluid`], with
    /// the lattice mass of the run's [`Kernel`] (both solvers sum the density with it) and,
    /// unless set, the kernel's [`Kernel::default_support`].
    pub(crate) fn for_run(particles: u32, o: ConfigOverrides, solver: &str) -> Result<Self> {
        if particles >= crate::core::limits::DFSPH_MAX_PARTICLES {
            return Err(crate::Error::LimitExceeded(format!(
                "{} runs at most {} particles (its CPU pair lists pack a particle index into 26 bits), this run holds up to {particles}: use a larger spacing or fewer emitted particles",
                solver.to_uppercase(),
                crate::core::limits::DFSPH_MAX_PARTICLES - 1
            )));
        }
        let o = Self::dfsph_support(o);
        Self::new(particles, o)?.check_support()?;
        match o.particle_mass {
            Some(_) => Self::for_fluid(particles, o),
            None => {
                let cfg = Self::new(particles, o)?;
                Self::new(
                    particles,
                    ConfigOverrides {
                        particle_mass: Some(cfg.lattice_mass_of_kernel()),
                        ..o
                    },
                )
            }
        }
    }

    /// Refuses a smoothing radius wider than [`MAX_SUPPORT_SPACINGS`] spacings, before a fluid
    /// run's lattice sums walk (2h/s)³ offsets. (A neighbour query alone has no spacing to
    /// compare with: the library takes any h.)
    fn check_support(&self) -> Result<()> {
        let (spacing, smoothing_radius) = (self.spacing, self.smoothing_radius);
        let ratio = smoothing_radius / spacing;
        if ratio > MAX_SUPPORT_SPACINGS {
            return Err(Error::input(format!(
                "--smoothing-radius {smoothing_radius} m is {ratio:.3e} spacings (s = {spacing} m): a kernel that wide gives each particle about {:.1e} neighbours where SPH uses 30 to 400 (2 to 4 spacings): pass a smaller --smoothing-radius, or the --spacing the particles were made at",
                4.0 / 3.0 * std::f32::consts::PI * ratio.powi(3)
            )));
        }
        Ok(())
    }

    /// `o` with the solvers' default support, the kernel's, where it sets none.
    fn dfsph_support(o: ConfigOverrides) -> ConfigOverrides {
        let s = o.spacing.unwrap_or(DEFAULT_SPACING);
        let support = o.kernel.unwrap_or_default().default_support();
        ConfigOverrides {
            smoothing_radius: o.smoothing_radius.or(Some(support * s)),
            ..o
        }
    }

    /// The uniform block for this configuration.
    pub fn sim_params(&self) -> SimParams {
        let h = self.smoothing_radius;
        let h64 = h as f64;
        // Poly6 (Müller et al. 2003): W(r,h) = 315/(64π h⁹)(h² − r²)³
        //                                    = 315/(64π h³)(1 − r²/h²)³.
        // The second form keeps every intermediate in f32 range for any sane h.
        // In 2D, 4/(π h²)(1 − r²/h²)³ (its integral over the disc of radius h is one).
        let poly6_norm = match self.dim {
            2 => 4.0 / (std::f64::consts::PI * h64 * h64),
            _ => 315.0 / (64.0 * std::f64::consts::PI * h64.powi(3)),
        };
        let [a0, a1, a2, a3, b0, b1, b2, b3] = self.kernel.uniforms(h64, self.dim);
        SimParams {
            n: self.particles,
            table_size: self.table_size,
            table_mask: self.table_size - 1,
            group_size: self.group_size.unwrap_or(
                match group_size(self.particles, self.table_size) {
                    1 => 1,
                    _ => AUTO_GROUP,
                },
            ),
            h,
            inv_h: (1.0 / h64) as f32,
            h2: h * h,
            inv_h2: (1.0 / (h64 * h64)) as f32,
            density_scale: (self.particle_mass as f64 * poly6_norm) as f32,
            kernel: self.kernel.id(),
            planar: u32::from(self.planar()),
            _pad1: 0,
            kernel_a: [a0, a1, a2, a3],
            kernel_b: [b0, b1, b2, b3],
        }
    }
}

/// `SimParams::group_size` left to the adapter: the GPU constructor
/// ([`NeighbourBuffers::new`](crate::grid::gpu::NeighbourBuffers::new)) makes it
/// [`GROUP`](crate::core::limits::GROUP) on a native software adapter and 1 on a GPU or in a
/// browser
/// ([`resolve_group_size`]); nothing on the CPU path depends on it.
pub const AUTO_GROUP: u32 = 0;

/// The group size a walk runs with on an adapter of `kind`, for `chosen` =
/// `SimParams::group_size`. On a software adapter (lavapipe) an invocation is a SIMD lane of a
/// CPU core and every storage read a loop over the lanes, so one walk shared by 8 members pays
/// (4–6× on the density walk, benchmarks.md); on a GPU one invocation holding 8 members' sums
/// in registers lowers occupancy, and measured on an NVIDIA H200 at 1M particles groups of one
/// made the WCSPH step 6.4 → 3.9 ms and the DFSPH step 67 → 55 ms (groups of 2 and 4 were
/// slower than 8). A browser's software adapter (Chromium's SwiftShader, `backend`
/// BrowserWebGpu) takes 1: its shader compiler did not get through the 8-member walkers (the
/// GPU process was lost compiling `dfsph_density`), and compiles the 1-member ones (the
/// slowest, `dfsph_galerkin`, in 84 s on 2 cores; docs/web.md). Every size gives the same bits.
pub fn resolve_group_size(chosen: u32, kind: wgpu::DeviceType, backend: wgpu::Backend) -> u32 {
    match (chosen, kind, backend) {
        (AUTO_GROUP, wgpu::DeviceType::Cpu, wgpu::Backend::BrowserWebGpu) => 1,
        (AUTO_GROUP, wgpu::DeviceType::Cpu, _) => crate::core::limits::GROUP,
        (AUTO_GROUP, _, _) => 1,
        (g, _, _) => g,
    }
}

/// The density group size for N particles in T slots: [`GROUP`](crate::core::limits::GROUP)
/// normally, 1 when slots are crowded (N > 64 T). A group walks once per distinct query range
/// among its members; in a crowded slot the members come from different cells, so a group of
/// 8 would walk the whole slot up to 8 times, past lavapipe's loop budget at T = 1 already
/// for 30 000 particles. Groups of one walk it once, as a per-particle pass would.
pub fn group_size(particles: u32, table_size: u32) -> u32 {
    if particles as u64 > 64 * table_size as u64 {
        1
    } else {
        crate::core::limits::GROUP
    }
}

/// Uniform block shared by every WGSL stage. Must match `struct SimParams` in
/// `shaders/common.wgsl` field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct SimParams {
    /// Particle count N.
    pub n: u32,
    /// Table size T (a power of two).
    pub table_size: u32,
    /// T − 1, the mask that replaces a modulo.
    pub table_mask: u32,
    /// Places per density group: `order` cuts every slot into runs of this many (1 to
    /// [`GROUP`](crate::core::limits::GROUP)); see [`group_size`]. [`AUTO_GROUP`] (0) until
    /// a GPU constructor resolves it for its adapter ([`resolve_group_size`]).
    pub group_size: u32,
    /// Smoothing radius h.
    pub h: f32,
    /// 1/h, rounded once on the host; cells are `floor(p * inv_h)` on both paths.
    pub inv_h: f32,
    /// h², the strict neighbour bound r² < h².
    pub h2: f32,
    /// 1/h².
    pub inv_h2: f32,
    /// m · 315/(64π h³): density = density_scale · Σ (1 − r²/h²)³.
    pub density_scale: f32,
    /// DFSPH's kernel, [`Kernel::id`]: which of [`crate::kernel`]'s files the CPU stages
    /// evaluate (the GPU's were compiled with its WGSL file).
    pub kernel: u32,
    /// 1 in a 2D run (the plane z = 0): a walk's query visits the 3 × 3 cells around a point
    /// in that plane ([`crate::grid::key::query_range_of`]); 0 in 3D.
    pub planar: u32,
    #[doc(hidden)]
    pub _pad1: u32,
    /// The kernel's first four constants ([`Kernel::uniforms`]).
    pub kernel_a: [f32; 4],
    /// Its next four.
    pub kernel_b: [f32; 4],
}

impl crate::kernel::Uniforms for SimParams {
    #[inline(always)]
    fn inv_h(&self) -> f32 {
        self.inv_h
    }
    #[inline(always)]
    fn kernel_id(&self) -> u32 {
        self.kernel
    }
    #[inline(always)]
    fn kernel_a(&self) -> &[f32; 4] {
        &self.kernel_a
    }
    #[inline(always)]
    fn kernel_b(&self) -> &[f32; 4] {
        &self.kernel_b
    }
}

impl SimParams {
    /// The dimension of the run's space, 2 ([`SimParams::planar`]) or 3.
    pub fn dim(&self) -> u32 {
        if self.planar != 0 { 2 } else { 3 }
    }

    /// A grid's parameters for `n` particles in `table_size` slots with neighbours within
    /// `h`, the rest zero: the neighbour queries' and the tests' block (no kernel of DFSPH's
    /// constants, no poly6 density scale).
    pub fn grid(n: u32, table_size: u32, h: f32) -> Self {
        SimParams {
            n,
            table_size,
            table_mask: table_size.wrapping_sub(1),
            group_size: 1,
            h,
            inv_h: 1.0 / h,
            h2: h * h,
            inv_h2: 1.0 / (h * h),
            ..Zeroable::zeroed()
        }
    }

    /// The kernel of [`SimParams::kernel`] (an id no kernel has reads as the default: the
    /// checkpoint reader refuses such a block first).
    pub fn kernel_kind(&self) -> Kernel {
        Kernel::from_id(self.kernel).unwrap_or_default()
    }
}

/// Physical parameters of the fluid step. Must match `struct FluidParams` in
/// `shaders/common.wgsl` field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct FluidParams {
    /// Lower corner of the tank (xyz; w unused).
    pub tank_min: [f32; 4],
    /// Upper corner of the tank (xyz; w unused).
    pub tank_max: [f32; 4],
    /// Gravity, m/s² (xyz; w unused).
    pub gravity: [f32; 4],
    /// Rest density ρ0, kg/m³.
    pub rest_density: f32,
    /// Tait stiffness B = ρ0 c² / 7, Pa (Becker & Teschner 2007).
    pub stiffness: f32,
    /// Particle mass m, kg.
    pub mass: f32,
    /// Dynamic viscosity μ, Pa·s (Müller et al. 2003 viscosity term).
    pub viscosity: f32,
    /// 45/(π h⁶): the spiky gradient is −45/(π h⁶)(h − r)² r̂ and the viscosity Laplacian
    /// 45/(π h⁶)(h − r) (Müller et al. 2003).
    pub kernel_45: f32,
    /// Speed of sound c, m/s.
    pub sound_speed: f32,
    /// Courant number: dt ≤ cfl · h / max(c(ρ) + |v|), c(ρ) = c0 max(ρ/ρ0, 1)³.
    pub cfl: f32,
    /// A forced time step, s; 0 lets the CFL condition choose.
    pub dt_fixed: f32,
    /// Largest time step, s.
    pub dt_max: f32,
    /// Fraction of the normal speed kept when a particle meets a wall (0 ≤ e ≤ 1).
    pub restitution: f32,
    /// Monaghan's artificial viscosity α (dimensionless).
    pub alpha: f32,
    /// The tank's open sides, bit 2·axis for the lower one and 2·axis + 1 for the upper
    /// ([`crate::scene::Side`]): no mirror wall and no clamping there, and a particle that
    /// leaves through one is removed from the run. 0: a closed box.
    pub open: u32,
    /// The Navier slip length b of the lower wall of each axis (xyz; w unused), m: how the
    /// walls' mirror images move in the viscous terms
    /// ([`crate::boundary::walls::image_viscous_velocity`]). Negative: free slip (b = ∞, the
    /// default); 0: no slip.
    pub slip_lo: [f32; 4],
    /// The same for the upper wall of each axis.
    pub slip_hi: [f32; 4],
    /// The kinematic viscosity ν, m²/s (the standard SPH viscosity, `solver::dfsph::dfsph_accel`;
    /// [`default_kinematic_viscosity`] at the spacing unless set).
    pub kinematic_viscosity: f32,
    /// 2(d + 2) ν = 10 ν, the standard form's factor, rounded once on the host (a WGSL literal
    /// factor may be re-associated by Mesa's NIR).
    pub viscosity_factor: f32,
    #[doc(hidden)]
    pub _pad: [f32; 2],
}

/// User-level physics of the fluid step, validated by [`PhysicsConfig::fluid_params`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PhysicsConfig {
    /// Gravity along y, m/s² (negative is down).
    pub gravity: f32,
    /// Dynamic viscosity μ, Pa·s (Müller et al. 2003).
    pub viscosity: f32,
    /// Monaghan's artificial viscosity α.
    pub alpha: f32,
    /// Speed of sound c, m/s; `None` = 10 × √(2 g H) for a fluid body of height H.
    pub sound_speed: Option<f32>,
    /// Courant number of the CFL condition.
    pub cfl: f32,
    /// A forced time step, s.
    pub dt: Option<f32>,
    /// Fraction of the normal speed kept at a wall, in [0, 1].
    pub restitution: f32,
    /// Largest time step, s (both solvers).
    pub dt_max: f32,
    /// The Navier slip length of the tank's walls, m (f32::INFINITY free slip, 0 no slip);
    /// `None` the default wall, free slip
    /// ([`crate::boundary::walls::image_viscous_velocity`] gives the model).
    #[serde(default)]
    pub wall_slip_length: Option<f32>,
    /// The kinematic viscosity ν, m²/s, both solvers' dissipation: `None` (the default) is
    /// [`default_kinematic_viscosity`] at the run's spacing. Missing from a stored run (one
    /// older than the field), 0, as that run had.
    #[serde(default = "no_kinematic_viscosity")]
    pub kinematic_viscosity: Option<f32>,
    /// WCSPH: start the fluid at hydrostatic equilibrium, each particle lowered by the Tait
    /// compression of the water above it ([`crate::setup::hydrostatic_start`]); on by default
    /// (the command line leaves a particle file as it is unless asked). DFSPH ignores it.
    #[serde(default = "default_hydrostatic_start")]
    pub hydrostatic_start: bool,
}

fn default_hydrostatic_start() -> bool {
    true
}

fn no_kinematic_viscosity() -> Option<f32> {
    Some(0.0)
}

/// The default kinematic viscosity ν at the default spacing [`VISCOSITY_SPACING`],
/// m²/s: 1e-3, a numerical dissipation at the particle scale, not water's 1e-6. A settling
/// lattice keeps a particle-scale motion that only ν damps, at the rate ν/s²: at water's ν
/// that takes s²/ν = 100 s at s = 10 mm, and no column rests (neither does SPlisHSPlasH's,
/// docs/results.md). At 1e-3 it takes 0.1 s, the particle Reynolds number √(g s) s/ν is
/// 3 (viscosity rules at the particle scale, inertia above it), and the flow's scales barely
/// feel it: a 1.2 m standing wave loses 2νk² ≈ 5% of its height per period to it, the dam
/// break's Reynolds number √(g a) a/ν is 320. SPlisHSPlasH's dam break uses 1e-2. Other
/// spacings scale it ([`default_kinematic_viscosity`]).
pub const KINEMATIC_VISCOSITY: f32 = 1e-3;

/// The spacing at which the default ν is [`KINEMATIC_VISCOSITY`], m.
pub const VISCOSITY_SPACING: f32 = 0.01;

/// The default kinematic viscosity at particle spacing `s`, m²/s:
/// ν = 1e-3 (s / 10 mm)^{3/2}, the particle Reynolds number √(g s) s/ν held at 3 under
/// Earth's gravity. The reason is the time step. The standard form is explicit, stable for
/// dt ≤ ½ / max S with S ∝ ν/s² (`solver::dfsph::dfsph_accel`); DFSPH's step at rest is the
/// body-force bound √(C² s/|g|) ∝ √s ([`dfsph_dt_max`]). With ν ∝ s^{3/2} the viscous
/// limit is ∝ √s too, 2.1 times the body-force bound at every spacing with Wendland C2 at
/// h = 3 s (3.66 against 1.75 ms at 10 mm on a block at rest, `tests/suite/physics.rs`; 1.3
/// times with the cubic spline at h = 2 s), so it never sets the step. A fixed 1e-3
/// held the step to 0.75 ms at s = 5.95 mm (the 100 000-particle dam break;
/// docs/validation.md in the git history) and 0.32 ms at 3.86 mm, where the body-force bound
/// allows 1.35 and 1.09 ms. Refined, ν → 0: the flow converges to the inviscid one that water at
/// these scales is, as an artificial viscosity's α c h/10 does with h.
/// Worked example: s = 10 mm gives 1e-3 exactly (its bits), 5 mm 3.54e-4, 20 mm 2.83e-3.
pub fn default_kinematic_viscosity(s: f32) -> f32 {
    let r = s / VISCOSITY_SPACING;
    KINEMATIC_VISCOSITY * r * r.sqrt()
}

/// The defaults of both solvers: one dissipation, the standard SPH viscosity at
/// [`default_kinematic_viscosity`], and no artificial viscosity (α = 0). Monaghan's α, on
/// approaching pairs only, damps shear slowly: under WCSPH at α = 0.05 a 12 × 20 × 12 column
/// from the exact lattice (as a decimal file holds it) still moved at 40 mm/s over 2.5–3 s (its
/// top layer rolling into the hollows of the one below, a shear motion), where ν damps every
/// pair's relative motion at ν/s² and the same column rests at 8.2 mm/s, and at 7.9–8.7 mm/s
/// from four other starts (docs/results.md). WCSPH's explicit pressure
/// needs a dissipation for stability (Monaghan 1992); ν is one, as in SPlisHSPlasH's WCSPH,
/// which has no artificial viscosity. `--alpha` adds Monaghan's Π to either solver.
impl Default for PhysicsConfig {
    fn default() -> Self {
        Self {
            gravity: -9.81,
            viscosity: 0.0,
            alpha: 0.0,
            sound_speed: None,
            cfl: 0.4,
            dt: None,
            restitution: 0.0,
            dt_max: 5e-3,
            wall_slip_length: None,
            kinematic_viscosity: None,
            hydrostatic_start: true,
        }
    }
}

impl PhysicsConfig {
    /// The kinematic viscosity at particle spacing `s`: the one set, or the default there.
    pub fn kinematic_viscosity_at(&self, s: f32) -> f32 {
        self.kinematic_viscosity
            .unwrap_or_else(|| default_kinematic_viscosity(s))
    }

    /// The speed of sound for fluid that can fall `drop` metres (the highest particle's height
    /// above the tank floor): the given one, or ten times the largest speed such a fall
    /// reaches, √(2 g Δy), so density varies by about 1% (Becker & Teschner 2007; Monaghan
    /// 1994: Mach 0.1 keeps the relative density variation near M² = 1%).
    pub fn sound_speed_for(&self, drop: f32) -> f32 {
        self.sound_speed
            .unwrap_or_else(|| Self::derived_sound_speed(self.gravity, drop))
    }

    /// 10 √(2 |g| Δy), with |g| at least 1e-3 m/s² and Δy at least 1e-6 m so it is never 0.
    pub fn derived_sound_speed(gravity: f32, drop: f32) -> f32 {
        10.0 * (2.0 * gravity.abs().max(1e-3) * drop.max(1e-6)).sqrt()
    }

    /// One line warning that a user-given speed of sound is below 10 √(2 g Δy) for a fall of
    /// `drop` metres, where the fluid compresses by more than about 1%.
    pub fn sound_speed_warning(&self, drop: f32) -> Option<String> {
        // A value fluid_params refuses gets its error alone.
        let c = self.sound_speed.filter(|c| c.is_finite() && *c > 0.0)?;
        let floor = Self::derived_sound_speed(self.gravity, drop);
        (c < floor).then(|| {
            format!(
                "warning: --sound-speed {c} m/s is below 10 sqrt(2 g dy) = {floor:.3} m/s for the {drop:.4} m head (the fall from the highest particle to the floor, plus v0^2/2g of the fastest start): the fluid may compress by more than 1%; raise it or leave it out to derive it"
            )
        })
    }

    /// The fall that sets the default speed of sound for particles `positions` in a tank whose
    /// floor is at `floor`: from the highest particle to the floor, but never less than the
    /// smoothing radius `h`, the smallest head a particle's own neighbourhood exerts, so a
    /// flat or degenerate body (one layer, or every particle at one point) still gets a sound
    /// speed that holds its own weight.
    pub fn drop_height(positions: &[Vec3], floor: f32, h: f32) -> f32 {
        let top = positions.iter().fold(floor, |m, p| m.max(p.y));
        (top - floor).max(h)
    }

    /// The head that sets the default speed of sound: a fall of `drop` metres plus the height
    /// the fastest initial speed is worth, v²/(2|g|), since a particle that starts at speed v
    /// reaches √(v² + 2 g Δy) at the floor. With |g| clamped as in
    /// [`PhysicsConfig::derived_sound_speed`], c is then at least 10 × the fastest start
    /// even without gravity (Monaghan 1994: c ≥ 10 v_max).
    pub fn head(&self, drop: f32, velocities: &[Vec3]) -> f32 {
        // A non-finite speed (an obstacle's motion of 1e30 m/s) counts as infinite rather
        // than vanishing in a NaN, so the derived speed of sound refuses it.
        let v2 = velocities.iter().fold(0.0f32, |m, v| {
            let v2 = v.length_squared();
            if v2.is_nan() {
                f32::INFINITY
            } else {
                m.max(v2)
            }
        });
        drop + v2 / (2.0 * self.gravity.abs().max(1e-3))
    }

    /// Refuses any value no run can use, in one line naming it and a fix: the checks that
    /// need no tank or fluid, so a run that never steps (`--steps 0`) refuses a `--gravity nan`
    /// as a stepping run does, instead of ignoring it.
    pub fn check(&self) -> Result<()> {
        // Upper bounds far past any fluid run (1000 g; Monaghan's α is 0.01 to 1; pitch is
        // about 1e8 Pa·s but flows for years): beyond them the time step collapses and the
        // run would stop as diverged, blaming the time step instead of the value.
        if !(self.gravity.is_finite() && self.gravity.abs() <= 1e4) {
            return Err(Error::input(format!(
                "gravity must be finite and at most 1e4 m/s^2 in size, got {}: pass e.g. --gravity -9.81",
                self.gravity
            )));
        }
        if !(self.alpha.is_finite() && (0.0..=10.0).contains(&self.alpha)) {
            return Err(Error::input(format!(
                "artificial viscosity must be 0 to 10, got {}: pass e.g. --alpha 0.05",
                self.alpha
            )));
        }
        if !(self.viscosity.is_finite() && (0.0..=1e4).contains(&self.viscosity)) {
            return Err(Error::input(format!(
                "viscosity must be 0 to 1e4 Pa s, got {}: pass e.g. --viscosity 0.001 (water)",
                self.viscosity
            )));
        }
        if !(self.cfl.is_finite() && self.cfl > 0.0 && self.cfl <= 1.0) {
            return Err(Error::input(format!(
                "CFL number must be in (0, 1], got {}: pass e.g. --cfl 0.4",
                self.cfl
            )));
        }
        if !(0.0..=1.0).contains(&self.restitution) {
            return Err(Error::input(format!(
                "restitution must be in [0, 1], got {}: walls must not add energy",
                self.restitution
            )));
        }
        if let Some(dt) = self.dt {
            positive_finite("time step", "--dt 1e-4", dt)?;
        }
        positive_finite("largest time step", "--max-dt 0.005", self.dt_max)?;
        if let Some(c) = self.sound_speed {
            let c = positive_finite("speed of sound", "--sound-speed 20", c)?;
            if c > MAX_SOUND_SPEED {
                return Err(Error::input(format!(
                    "--sound-speed {c} m/s exceeds {MAX_SOUND_SPEED} m/s (water's is 1480): pass a smaller --sound-speed"
                )));
            }
        }
        slip_code(self.wall_slip_length)?;
        if let Some(nu) = self
            .kinematic_viscosity
            .filter(|nu| !(nu.is_finite() && (0.0..=1.0).contains(nu)))
        {
            return Err(Error::input(format!(
                "kinematic viscosity must be 0 to 1 m^2/s, got {nu}: pass e.g. --kinematic-viscosity 1e-6 (water)"
            )));
        }
        Ok(())
    }

    /// Validates the physics and builds the uniform block for a tank and fluid that can fall
    /// `fluid_height` metres (see [`PhysicsConfig::sound_speed_for`]).
    pub fn fluid_params(
        &self,
        cfg: &SphConfig,
        tank_min: Vec3,
        tank_max: Vec3,
        fluid_height: f32,
    ) -> Result<FluidParams> {
        self.check()?;
        if cfg.planar() && self.viscosity != 0.0 {
            // Müller et al.'s viscosity kernel has the Laplacian (45/(π h⁶))(h − r) in 3D
            // only: in the plane its Laplacian is not of that form.
            return Err(Error::input(format!(
                "--viscosity {} (Müller et al. 2003's kernel) is three-dimensional: a 2D run takes --kinematic-viscosity NU, the standard SPH viscosity, instead",
                self.viscosity
            )));
        }
        let c = match self.sound_speed {
            // `check` has held it finite, > 0 and within MAX_SOUND_SPEED.
            Some(c) => c,
            None => {
                let c = self.sound_speed_for(fluid_height);
                if !(c.is_finite() && c <= MAX_SOUND_SPEED) {
                    return Err(Error::input(format!(
                        "the speed of sound 10 sqrt(2 g dy) derived from gravity {} m/s^2 and the head dy = {fluid_height} m (the fall to the floor plus v^2/2g of the fastest particle or obstacle) is {c} m/s, beyond {MAX_SOUND_SPEED}: check the gravity and the start and obstacle speeds, or give --sound-speed",
                        self.gravity
                    )));
                }
                c
            }
        };
        if !(tank_max - tank_min).cmpgt(Vec3::splat(cfg.spacing)).all()
            || !tank_min.is_finite()
            || !tank_max.is_finite()
        {
            return Err(Error::input(format!(
                "the tank {tank_min} – {tank_max} is smaller than one particle spacing ({}) along some axis: enlarge it",
                cfg.spacing
            )));
        }
        let slip = slip_code(self.wall_slip_length)?;
        let nu = self.kinematic_viscosity_at(cfg.spacing);
        let h = cfg.smoothing_radius as f64;
        let rho0 = cfg.rest_density;
        Ok(FluidParams {
            tank_min: tank_min.extend(0.0).to_array(),
            tank_max: tank_max.extend(0.0).to_array(),
            gravity: [0.0, self.gravity, 0.0, 0.0],
            rest_density: rho0,
            stiffness: rho0 * c * c / 7.0,
            mass: cfg.particle_mass,
            viscosity: self.viscosity,
            kernel_45: (45.0 / (std::f64::consts::PI * h.powi(6))) as f32,
            sound_speed: c,
            cfl: self.cfl,
            dt_fixed: self.dt.unwrap_or(0.0),
            dt_max: self.dt_max,
            restitution: self.restitution,
            alpha: self.alpha,
            open: 0,
            slip_lo: [slip, slip, slip, 0.0],
            slip_hi: [slip, slip, slip, 0.0],
            kinematic_viscosity: nu,
            // 2(d + 2): 10 in 3D, 8 in 2D (Monaghan 2005, eq. 6.6).
            viscosity_factor: (2 * (cfg.dim + 2)) as f32 * nu,
            _pad: [0.0; 2],
        })
    }
}

/// A slip length as a flag or a scene file writes it: `free` (or `inf`, `infinity`:
/// f32::INFINITY), or a length in metres ≥ 0; `None` for anything else.
pub fn parse_slip_length(text: &str) -> Option<f32> {
    match text {
        "free" | "inf" | "infinity" => Some(f32::INFINITY),
        _ => text
            .parse::<f32>()
            .ok()
            .filter(|b| b.is_finite() && *b >= 0.0),
    }
}

/// A wall's slip length as [`FluidParams::slip_lo`] holds it: b ≥ 0 in metres, −1 for free
/// slip (b = ∞); `None`, the default wall, is free slip (−1): at these scales water's own
/// boundary layer, √(ν t) ≈ 0.6 mm after 0.3 s at ν = 1e-6 m²/s, is far thinner than a
/// particle, so a wall that holds the first particle layer still would be unresolved physics
/// (docs/validation.md in the git history, "Walls and waves"). A negative or NaN length is refused.
pub fn slip_code(b: Option<f32>) -> Result<f32> {
    match b {
        None => Ok(-1.0),
        Some(b) if b == f32::INFINITY => Ok(-1.0),
        Some(b) if b.is_finite() && b >= 0.0 => Ok(b),
        Some(b) => Err(Error::input(format!(
            "wall slip length must be 0 (no slip) or more metres, or free, got {b}: pass e.g. --wall-slip-length free"
        ))),
    }
}

/// Settings of the DFSPH solver, validated by [`DfsphConfig::params`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct DfsphConfig {
    /// Divergence-free solve tolerance η_v: mean of max(Dρ/Dt, 0)·dt/ρ0 (0.001 = 0.1%).
    pub divergence_tolerance: f32,
    /// Constant-density solve tolerance η: mean of max(ρ*/ρ0 − 1, 0) (0.0001 = 0.01%).
    pub density_tolerance: f32,
    /// Most iterations of either solve.
    pub max_iterations: u32,
    /// Smallest time step, s.
    pub dt_min: f32,
    /// Most explicit substeps of the non-pressure accelerations per step: the step may be
    /// this many times the viscous terms' stability limit (see `DfsphParams::viscous_limit`).
    pub viscous_substeps: u32,
    /// The relaxation factor ω of both solves' Jacobi iterations, in (0, 1]: each iteration
    /// applies ω times the stiffness α_i asks for; `None` takes [`dfsph_relaxation`] of the
    /// run's support.
    pub relaxation: Option<f32>,
}

/// Default [`DfsphConfig::relaxation`] for `kernel` at a support of `h_over_s` spacings:
/// [`JACOBI_MARGIN`] · 2/λ_max, at most 1, λ_max the largest eigenvalue of D⁻¹A on the lattice
/// ([`Kernel::lambda_max`]). Both solves are Jacobi iterations with the exact
/// diagonal α_i, and they converge only for ω < 2/λ_max; past it each iteration over-corrects
/// the shortest modes, and the one-sided solve leaves the overshoot in the velocities as kicks
/// that flip sign every step: measured with Wendland C2 at h = 3 s and ω = 0.8, resting
/// columns moved at 0.12–0.22 m/s and the water took 2–5% more room; at ω = 0.3 both rested
/// and kept their volume (docs/results.md, what was tried).
/// Under-relaxation is the textbook cure (IISPH takes ω = 0.5, Ihmsen et al. 2014). Worked
/// values: Wendland C2 0.69 at h = 2 s, 0.29 at h = 3 s (the default); the cubic spline 0.64
/// at h = 2 s.
pub fn dfsph_relaxation(kernel: Kernel, h_over_s: f64, dim: u32) -> f32 {
    let lambda = kernel.lambda_max(h_over_s, dim);
    if lambda > 0.0 {
        (JACOBI_MARGIN * 2.0 / lambda).min(1.0) as f32
    } else {
        1.0
    }
}

/// The fraction of the Jacobi bound 2/λ_max that [`dfsph_relaxation`] takes: 0.9, a tenth
/// below it, because λ_max is the lattice's and stirred water's differs by a few percent
/// (measured on a dam break with the cubic spline at h = 2 s: 2.73–2.75 against the lattice's
/// 2.81, and with Wendland C2 at h = 3 s: 6.08 against 6.25).
pub const JACOBI_MARGIN: f64 = 0.9;

/// The body-force bound on DFSPH's step: dt ≤ C √(s/|g|) with C² = 0.003, so that one
/// step's free fall g dt² is at most 0.3% of the spacing. A step's own density error under
/// gravity grows as dt², and the solve holds the mean, not the largest value. Measured on
/// resting columns, the largest error is 2 to 2.5 g dt²/s: the narrow one 0.27% at 1.18 ms,
/// 1.06% at 2.35 ms, 3.5% at 4.7 ms; the wide one 1.006% at 2.02 ms (C² = 0.004). So this
/// keeps the largest near 0.75%, inside the 1% DFSPH is held to. It is Monaghan's (1992)
/// force condition dt ≤ C √(h/|a|) with the body force; 1.75 ms at s = 10 mm.
pub const DFSPH_BODY_FORCE_C2: f64 = 0.003;

/// DFSPH's largest step for spacing `s` under gravity `g`: [`DFSPH_BODY_FORCE_C2`]'s bound,
/// at most `dt_max` (unbounded without gravity).
pub fn dfsph_dt_max(s: f32, g: f32, dt_max: f32) -> f32 {
    if g == 0.0 {
        return dt_max;
    }
    let bound = (DFSPH_BODY_FORCE_C2 * s as f64 / g.abs() as f64).sqrt() as f32;
    bound.min(dt_max)
}

/// Default [`DfsphConfig::viscous_substeps`]: 1, the explicit viscous limit alone sets the
/// step where it binds. More substeps let the step grow toward the CFL step, but the step's
/// own density error grows with it (∝ dt² for a fluid at rest under gravity): measured on the
/// 4 × 20 × 4 hydrostatic column at rest, the largest density error after a step is 0.27% at
/// 1 substep (dt 1.18 ms), 1.06% at 2 (2.35 ms) and 3.5% at 4 (4.7 ms), against the 1% DFSPH
/// is held to; on the 20 000-particle dam break at η = 0.01% the constant-density solve then
/// needs 7.7, 20.7 and 26.9 iterations a step at 1, 2 and 8 substeps, so the run costs the
/// same. Where a looser tolerance is wanted, 2 substeps cost 1.55× less per simulated second
/// at η = 0.05% (measured with the relaxed Jacobi solve).
pub const DFSPH_VISCOUS_SUBSTEPS: u32 = 1;

impl Default for DfsphConfig {
    fn default() -> Self {
        Self {
            divergence_tolerance: 1e-3,
            density_tolerance: 1e-4,
            max_iterations: 100,
            dt_min: 1e-6,
            viscous_substeps: DFSPH_VISCOUS_SUBSTEPS,
            relaxation: None,
        }
    }
}

/// Most viscous substeps a run may ask for: each is a walking pass (encoded on the GPU
/// whether or not a step needs it, and then dispatching nothing).
pub const MAX_VISCOUS_SUBSTEPS: u32 = 16;

/// Fewest neighbours (real ones and wall images) for a particle to take part in the
/// divergence-free solve: below it the particle's divergence is ignored, as SPlisHSPlasH does
/// for particle deficiency (20 in 3D).
pub const DFSPH_MIN_NEIGHBOURS: u32 = 20;

/// Uniform block of the DFSPH passes. Must match `struct DfsphParams` in
/// `shaders/common.wgsl` field for field (`tests/suite/layout.rs`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct DfsphParams {
    /// Particle spacing s, the CFL length, m.
    pub spacing: f32,
    /// CFL number λ: dt = λ s / max|v|.
    pub cfl: f32,
    /// Smallest time step, s.
    pub dt_min: f32,
    /// Largest time step, s.
    pub dt_max: f32,
    /// Divergence-free solve tolerance η_v.
    pub eta_v: f32,
    /// Constant-density solve tolerance η.
    pub eta_d: f32,
    /// Most iterations of either solve.
    pub max_iterations: u32,
    /// Fewest neighbours for α_i ≠ 0.
    pub min_neighbours: u32,
    /// First-level reduction blocks, ⌈N / 256⌉.
    pub blocks: u32,
    /// A forced time step, s; 0 lets the CFL condition choose.
    pub dt_fixed: f32,
    /// How far inside the tank's walls a particle's centre is kept, m: half a spacing, as
    /// the scenes' lattices start. On a wall's plane a particle coincides with its own mirror
    /// image, which adds m W(0) to its density with zero gradient, so no stiffness can relieve
    /// it, and the solves fling it (measured: a dam break's corner particles at 12 m/s). The
    /// same for WCSPH, whose wall layer, compressed, rests against it: an inelastic wall there,
    /// which takes a standing wave's height (docs/results.md, what was tried).
    pub wall_inset: f32,
    /// dt ≤ viscous_limit / S_max, S the explicit viscous terms' row sums (see
    /// `solver::dfsph::dfsph_accel`): ½, so that dt·λ ≤ 1 for every eigenvalue λ ∈ [0, 2 S_max] of
    /// the viscous map and every mode decays without overshoot, as diffusion does (at 1, the
    /// stability bound itself, a lone approaching pair's relative velocity is flipped, not damped:
    /// measured). A uniform rather than a literal, which NIR may fold into a reciprocal.
    pub viscous_limit: f32,
    /// Most explicit substeps K of the non-pressure accelerations: dt ≤ K · viscous_limit /
    /// S_max, taken in n = ⌈dt S_max / viscous_limit⌉ ≤ K substeps of dt / n each, every one
    /// within the limit (see `solver::dfsph::dfsph_timestep`).
    pub viscous_substeps: u32,
    /// The relaxation factor ω of both solves' Jacobi iterations: each iteration's stiffness
    /// is ω times what α_i asks for ([`DfsphConfig::relaxation`]).
    pub relaxation: f32,
    /// 1 when an obstacle has friction (a viscosity ν_b > 0, `crate::obstacle`): then
    /// `dfsph_accel` walks the obstacles' boundary particles for it and `dfsph_predict`
    /// credits its power to the obstacles' ([`DfsphParams::with_friction`]); 0 otherwise, and
    /// no pass spends a walk on it.
    pub friction: u32,
    /// Which pressure the stages apply: 0, DFSPH's, the stiffness its two solves find; 1,
    /// WCSPH's, the Tait equation of state's (`solver::dfsph::dfsph_eos`) applied once, with the
    /// acoustic CFL bound on the step and no solve ([`DfsphParams::is_wcsph`]).
    pub state_equation: u32,
}

impl DfsphParams {
    /// Whether the stages run WCSPH: pressure from the equation of state, no solve.
    pub fn is_wcsph(&self) -> bool {
        self.state_equation != 0
    }

    /// This block with [`DfsphParams::friction`] set to `on` (whether an obstacle of the run
    /// has friction, `Boundary::has_friction`).
    pub fn with_friction(mut self, on: bool) -> Self {
        self.friction = u32::from(on);
        self
    }

    /// DFSPH's CFL step λ s / max|v| reads the fluid's speeds only, and a moving obstacle's
    /// surface must not cross more than λ s of fluid in a step either: its top speed `top`
    /// bounds the largest step too (never below dt_min), beside [`dfsph_dt_max`]'s body-force
    /// bound. Without it a piston at 3.8 m/s moved half a spacing into the resting fluid in the
    /// first 1.2 ms step, and the solve threw it out (energy 67% above its start at step 2).
    /// WCSPH needs none: its sound speed is ten times the fastest obstacle
    /// (`setup::run_head`) and its step follows that. Worked example: λ = 0.4, s = 0.01 m,
    /// top = 4 m/s → dt_max at most 1 ms.
    pub fn bound_by_obstacle_speed(&mut self, top: f32) {
        if top > 0.0 {
            self.dt_max = self
                .dt_max
                .min(self.cfl * self.spacing / top)
                .max(self.dt_min);
        }
    }
}

/// The fraction of ρ0 below which a particle counts as at the free surface for the coarse
/// levels of DFSPH's solves: its kernel misses neighbours, so its density is short of ρ0.
/// Shao & Lo (2003) detect ISPH's free surface by the same test at 0.99; a particle inside
/// the water, even where it expands, stays within a few tenths of a percent of ρ0.
pub const COARSE_SURFACE_DENSITY: f32 = 0.99;

/// The coarse levels of DFSPH's solves (`solver::dfsph::coarse`): the level-1 grid over the tank,
/// its hierarchy and the coarse solve's settings. Must match `struct CoarseParams` in
/// `shaders/common.wgsl` field for field (`tests/suite/layout.rs`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct CoarseParams {
    /// Level-1 cells per axis (x, y, z) and the number of levels.
    pub dims: [u32; 4],
    /// The grid's lower corner (the tank's), m; w: 0.
    pub origin: [f32; 4],
    /// The cell's size per axis, m (at least twice the support, so a particle's neighbours lie
    /// in its own cell or the next one over on one side per axis); w: ρ0 ×
    /// [`COARSE_SURFACE_DENSITY`], the density below which a particle is at the free surface.
    pub cell: [f32; 4],
    /// 1 / cell per axis, m⁻¹; w: 1 / S2, S2 = Σ |m∇W|² over a full lattice's neighbours (the
    /// scale of the solve's diagonal, which puts the coarse operator's entries near 1).
    pub inv_cell: [f32; 4],
    /// Per level (0 the finest coarse level): cells per axis (x, y, z) and where its cells
    /// start in the levels' arrays.
    pub levels: [[u32; 4]; crate::core::limits::MAX_COARSE_LEVELS],
    /// The cells of all levels, the coarse conjugate gradients' most iterations, the smoothing
    /// sweeps per level and direction ν, the sweeps on the coarsest level.
    pub counts: [u32; 4],
    /// The smoother's weight ω_c, the coarse solve's tolerance on ‖r‖²/‖r₀‖², 1 +
    /// [`COARSE_SHIFT`] (level 0's diagonal is multiplied by it), 0.
    pub solve: [f32; 4],
    /// The scales of the fixed point's conversion to `f32` (`solver::dfsph::cells::from_fixed`):
    /// 2¹⁶, 2⁻³², 0, 0. Uniforms, never WGSL literals: Mesa's NIR re-associates a product with
    /// a literal factor, which changes its rounding (docs/performance.md, llvmpipe).
    pub fixed: [f32; 4],
}

/// Twice the support, a little more: a cell at least this wide holds every neighbour of a
/// particle in its own cell or the next one on one side per axis, with room for rounding.
pub const COARSE_CELL_SUPPORTS: f64 = 2.0 * 1.0001;

/// The relative shift of the coarse operator's diagonal: water enclosed by walls on every
/// side has no free surface, and its pressure is then set only up to a constant, which
/// `dfsph_galerkin`'s operator cannot see (a singular system: a cube filling its tank blew up
/// in its first step, measured). A shift of ε a_cc bounds that constant and changes the
/// smoothest modes the levels are there for only where their eigenvalue is below ε a_cc, in
/// water deeper than about 1/√ε cells (500 cells, 3 000 particles, at 1e-5).
pub const COARSE_SHIFT: f32 = 1e-5;

/// The coarse conjugate gradients' most iterations a solve (`dfsph_coarse`); a tolerance of
/// 1e-4 on ‖r‖²/‖r₀‖² takes 6 or 7 (measured on 20- to 320-layer columns).
pub const COARSE_MAX_ITERATIONS: u32 = 16;

impl CoarseParams {
    /// The coarse grid of a tank (`fp`) for support `h`, spacing `s`, particle mass and ρ0:
    /// cells of at least [`COARSE_CELL_SUPPORTS`] h tiling the tank exactly (grown where the tank
    /// would need more than `MAX_COARSE_CELLS`), halved per axis down to at most 2.
    pub fn new(fp: &FluidParams, kernel: Kernel, h: f32, s: f32, mass: f32, dim: u32) -> Self {
        use crate::core::limits::{MAX_COARSE_CELLS, MAX_COARSE_LEVELS};
        let lo = [
            fp.tank_min[0] as f64,
            fp.tank_min[1] as f64,
            fp.tank_min[2] as f64,
        ];
        let ext = [
            fp.tank_max[0] as f64 - lo[0],
            fp.tank_max[1] as f64 - lo[1],
            fp.tank_max[2] as f64 - lo[2],
        ];
        let mut width = COARSE_CELL_SUPPORTS * h as f64;
        let dims = loop {
            let d = ext.map(|e| ((e / width).floor() as u32).max(1));
            if d.iter().map(|&x| x as u64).product::<u64>() <= MAX_COARSE_CELLS as u64 {
                break d;
            }
            width *= 1.05;
        };
        let cell = [0, 1, 2].map(|a| (ext[a] / dims[a] as f64) as f32);
        let mut levels = [[0u32; 4]; MAX_COARSE_LEVELS];
        let (mut d, mut at, mut count) = (dims, 0u32, 0usize);
        loop {
            levels[count] = [d[0], d[1], d[2], at];
            at += d[0] * d[1] * d[2];
            count += 1;
            if d.iter().all(|&x| x <= 2) || count == MAX_COARSE_LEVELS {
                break;
            }
            d = d.map(|x| x.div_ceil(2));
        }
        let s2 = kernel.lattice_gradient_energy(h as f64, s as f64, mass as f64, dim);
        Self {
            dims: [dims[0], dims[1], dims[2], count as u32],
            origin: [fp.tank_min[0], fp.tank_min[1], fp.tank_min[2], 0.0],
            cell: [
                cell[0],
                cell[1],
                cell[2],
                fp.rest_density * COARSE_SURFACE_DENSITY,
            ],
            inv_cell: [
                (1.0 / cell[0] as f64) as f32,
                (1.0 / cell[1] as f64) as f32,
                (1.0 / cell[2] as f64) as f32,
                (1.0 / s2) as f32,
            ],
            levels,
            counts: [at, COARSE_MAX_ITERATIONS, 2, 32],
            solve: [0.6, 1e-4, 1.0 + COARSE_SHIFT, 0.0],
            fixed: [65_536.0, 1.0 / 4_294_967_296.0, 0.0, 0.0],
        }
    }

    /// Level-1 cells.
    pub fn cells(&self) -> usize {
        (self.dims[0] * self.dims[1] * self.dims[2]) as usize
    }

    /// Cells of all levels.
    pub fn all_cells(&self) -> usize {
        self.counts[0] as usize
    }

    /// The number of levels.
    pub fn level_count(&self) -> usize {
        self.dims[3] as usize
    }
}

/// Which solve a DFSPH pass serves. Must match `struct SolveParams` in
/// `shaders/common.wgsl` field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct SolveParams {
    /// 0 the divergence-free solve, 1 the constant-density solve.
    pub which: u32,
    /// Fewest iterations (1 and 2).
    pub min_iterations: u32,
    /// The fixed-point total a converged solve's residuals must not exceed, low word
    /// (`solver::dfsph::threshold`).
    pub threshold_lo: u32,
    /// Its high word.
    pub threshold_hi: u32,
    /// The capacity C of the solves' fields (`solve_fields`, dfsph_fields.wgsl): where each
    /// of its four arrays starts.
    pub capacity: u32,
    /// Padding to 16 bytes.
    pub _pad: [u32; 3],
}

impl DfsphConfig {
    /// Refuses a setting no run can use, in one line naming it and a fix: the checks that need
    /// no particles, so a run that never steps with DFSPH (density only, or WCSPH) refuses a
    /// `--relaxation 5` as a DFSPH run does, instead of ignoring it.
    pub fn check(&self) -> Result<()> {
        for (name, flag, v) in [
            (
                "divergence tolerance",
                "--divergence-tolerance",
                self.divergence_tolerance,
            ),
            (
                "density tolerance",
                "--density-tolerance",
                self.density_tolerance,
            ),
        ] {
            if !(v.is_finite() && v > 0.0 && v < 1.0) {
                return Err(Error::input(format!(
                    "{name} must be a fraction in (0, 1), got {v}: pass e.g. {flag} 0.001"
                )));
            }
        }
        if self.viscous_substeps == 0 || self.viscous_substeps > MAX_VISCOUS_SUBSTEPS {
            return Err(Error::input(format!(
                "--viscous-substeps must be in 1..={MAX_VISCOUS_SUBSTEPS}, got {}: pass e.g. --viscous-substeps {DFSPH_VISCOUS_SUBSTEPS}",
                self.viscous_substeps
            )));
        }
        if self.max_iterations == 0 || self.max_iterations > 10_000 {
            return Err(Error::input(format!(
                "--max-iterations must be in 1..=10000, got {}: pass e.g. --max-iterations 100",
                self.max_iterations
            )));
        }
        // The default, dfsph_relaxation, is in (0, 1] at every support; only a given one can miss.
        if let Some(r) = self
            .relaxation
            .filter(|r| !(r.is_finite() && *r > 0.0 && *r <= 1.0))
        {
            return Err(Error::input(format!(
                "--relaxation must be in (0, 1], got {r}: leave it out for the default, 0.9 of the Jacobi solve's stability bound at the run's support"
            )));
        }
        Ok(())
    }

    /// Validates the settings and builds the uniform block.
    pub fn params(&self, cfg: &SphConfig, physics: &PhysicsConfig) -> Result<DfsphParams> {
        self.check()?;
        let eta_v = self.divergence_tolerance;
        let eta_d = self.density_tolerance;
        let relaxation = self.relaxation.unwrap_or_else(|| {
            dfsph_relaxation(
                cfg.kernel,
                cfg.smoothing_radius as f64 / cfg.spacing as f64,
                cfg.dim,
            )
        });
        let dt_min = positive_finite("smallest time step", "--min-dt 1e-6", self.dt_min)?;
        let dt_max = dfsph_dt_max(
            cfg.spacing,
            physics.gravity,
            positive_finite("largest time step", "--max-dt 0.005", physics.dt_max)?,
        );
        if dt_min > dt_max {
            return Err(Error::input(format!(
                "--min-dt {dt_min} exceeds DFSPH's largest step {dt_max} s (--max-dt {}, and at most {}·sqrt(s/|g|) so gravity moves a particle less than 0.3% of the spacing a step): lower --min-dt",
                physics.dt_max,
                DFSPH_BODY_FORCE_C2.sqrt() as f32
            )));
        }
        Ok(DfsphParams {
            state_equation: 0,
            wall_inset: 0.5 * cfg.spacing,
            viscous_limit: 0.5,
            viscous_substeps: self.viscous_substeps,
            relaxation,
            friction: 0,
            spacing: cfg.spacing,
            cfl: physics.cfl,
            dt_min,
            dt_max,
            eta_v,
            eta_d,
            max_iterations: self.max_iterations,
            min_neighbours: DFSPH_MIN_NEIGHBOURS,
            blocks: cfg.particles.div_ceil(REDUCE_BLOCK).max(1),
            dt_fixed: physics.dt.unwrap_or(0.0),
        })
    }
}

/// Rejects non-finite positions and positions too far from the origin for the smoothing radius.
///
/// `what` names the source ("particle", or a file) so the message points at the culprit.
pub fn validate_positions(positions: &[Vec3], h: f32, what: &str) -> Result<()> {
    let inv_h = (1.0 / h as f64) as f32;
    for (i, p) in positions.iter().enumerate() {
        if !p.is_finite() {
            return Err(Error::input(format!(
                "{what} {i} has a non-finite position ({}, {}, {}): remove NaN/inf values from the input",
                p.x, p.y, p.z
            )));
        }
        let cells = (*p * inv_h).abs().max_element();
        if cells >= MAX_CELL_COORD {
            return Err(Error::input(format!(
                "{what} {i} at ({}, {}, {}) lies {cells:.3e} smoothing radii from the origin, beyond the 2^22 that f32 can resolve: translate the particles nearer the origin or increase --smoothing-radius",
                p.x, p.y, p.z
            )));
        }
    }
    Ok(())
}

/// Rejects non-finite velocities.
pub fn validate_velocities(velocities: &[Vec3], what: &str) -> Result<()> {
    match velocities.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(Error::input(format!(
            "{what} {i} has a non-finite velocity: remove NaN/inf values from the input"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn group_size_is_eight_unless_slots_are_crowded() {
        assert_eq!(group_size(100_000, 262_144), crate::core::limits::GROUP);
        assert_eq!(group_size(64, 1), crate::core::limits::GROUP);
        assert_eq!(group_size(65, 1), 1);
        assert_eq!(group_size(100_000, 1024), 1);
        let cfg = SphConfig::new(1000, ConfigOverrides::default()).unwrap();
        assert_eq!(cfg.sim_params().group_size, AUTO_GROUP);
    }

    use super::*;

    /// The default ν, both solvers': the worked example, the bits at the default spacing, and a
    /// stored run's value kept (a number), resolved later (null) or, missing, the 0 it ran with.
    #[test]
    fn default_viscosity_follows_the_spacing_and_stored_runs_keep_theirs() {
        assert_eq!(default_kinematic_viscosity(0.01), KINEMATIC_VISCOSITY);
        assert!((default_kinematic_viscosity(0.005) - 3.536e-4).abs() < 1e-7);
        assert!((default_kinematic_viscosity(0.02) - 2.828e-3).abs() < 1e-6);
        let defaults = PhysicsConfig::default();
        assert_eq!(defaults.kinematic_viscosity, None);
        assert_eq!(defaults.alpha, 0.0);
        assert_eq!(
            defaults.kinematic_viscosity_at(0.005),
            default_kinematic_viscosity(0.005)
        );
        let mut json = serde_json::to_value(defaults).unwrap();
        assert_eq!(
            serde_json::from_value::<PhysicsConfig>(json.clone()).unwrap(),
            defaults
        );
        json["kinematic_viscosity"] = serde_json::json!(1e-6);
        let given: PhysicsConfig = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(given.kinematic_viscosity_at(0.005), 1e-6);
        json.as_object_mut().unwrap().remove("kinematic_viscosity");
        let old: PhysicsConfig = serde_json::from_value(json).unwrap();
        assert_eq!(old.kinematic_viscosity, Some(0.0));
    }

    /// The stages' pair lists pack a particle index into 26 bits: a run of either solver that
    /// could hold more particles is refused in one line naming the limit, before anything is
    /// allocated.
    #[test]
    fn both_solvers_refuse_more_particles_than_the_pair_lists_index() {
        let max = crate::core::limits::DFSPH_MAX_PARTICLES;
        let o = ConfigOverrides::default();
        for solver in [crate::solver::Solver::Dfsph, crate::solver::Solver::Wcsph] {
            let e = SphConfig::for_solver(max, o, solver).unwrap_err();
            assert!(matches!(e, crate::Error::LimitExceeded(_)), "{e}");
            assert!(e.to_string().contains("67108863"), "{e}");
            assert!(SphConfig::for_solver(1000, o, solver).is_ok());
        }
    }

    #[test]
    fn defaults_follow_the_spacing() {
        let c = SphConfig::new(1000, ConfigOverrides::default()).unwrap();
        assert_eq!(c.spacing, 0.01);
        assert_eq!(c.smoothing_radius, 0.02);
        assert!((c.particle_mass - 1e-3).abs() < 1e-9);
        assert_eq!(c.table_size, 2048);
        assert_eq!(default_table_size(1024), 2048);
        assert_eq!(default_table_size(1025), 4096);
    }

    #[test]
    fn the_adapter_picks_an_unchosen_group_size() {
        use crate::core::limits::GROUP;
        use wgpu::Backend::{BrowserWebGpu, Vulkan};
        use wgpu::DeviceType::{Cpu, DiscreteGpu, IntegratedGpu};
        assert_eq!(resolve_group_size(AUTO_GROUP, Cpu, Vulkan), GROUP);
        assert_eq!(resolve_group_size(AUTO_GROUP, Cpu, BrowserWebGpu), 1);
        assert_eq!(resolve_group_size(AUTO_GROUP, DiscreteGpu, Vulkan), 1);
        assert_eq!(
            resolve_group_size(AUTO_GROUP, IntegratedGpu, BrowserWebGpu),
            1
        );
        assert_eq!(resolve_group_size(4, DiscreteGpu, Vulkan), 4);
        assert_eq!(resolve_group_size(8, DiscreteGpu, Vulkan), 8);
        assert_eq!(resolve_group_size(8, Cpu, BrowserWebGpu), 8);
        assert_eq!(resolve_group_size(1, Cpu, Vulkan), 1);
    }

    #[test]
    fn a_chosen_group_size_overrides_the_rule() {
        let with = |g| ConfigOverrides {
            group_size: g,
            ..Default::default()
        };
        let c = SphConfig::new(100_000, with(Some(2))).unwrap();
        assert_eq!(c.sim_params().group_size, 2);
        // Crowded slots take groups of one unless a size is chosen.
        let crowded = ConfigOverrides {
            table_size: Some(1024),
            ..with(None)
        };
        assert_eq!(
            SphConfig::new(100_000, crowded)
                .unwrap()
                .sim_params()
                .group_size,
            1
        );
        for bad in [0, 9] {
            let e = SphConfig::new(10, with(Some(bad))).unwrap_err().to_string();
            assert!(e.contains("1 to 8") && e.contains("--group-size"), "{e}");
        }
    }

    #[test]
    fn bad_values_are_rejected_with_a_fix() {
        let err = |o: ConfigOverrides| SphConfig::new(10, o).unwrap_err().to_string();
        assert!(
            err(ConfigOverrides {
                table_size: Some(1000),
                ..Default::default()
            })
            .contains("use 512 or 1024")
        );
        assert!(
            err(ConfigOverrides {
                table_size: Some(0),
                ..Default::default()
            })
            .contains("power of two")
        );
        assert!(
            err(ConfigOverrides {
                smoothing_radius: Some(-1.0),
                ..Default::default()
            })
            .contains("> 0")
        );
        assert!(
            err(ConfigOverrides {
                smoothing_radius: Some(f32::NAN),
                ..Default::default()
            })
            .contains("finite")
        );
        assert!(
            err(ConfigOverrides {
                particle_mass: Some(f32::INFINITY),
                ..Default::default()
            })
            .contains("finite")
        );
        assert!(SphConfig::new(0, ConfigOverrides::default()).is_err());
    }

    #[test]
    fn positions_are_screened() {
        assert!(
            validate_positions(
                &[Vec3::ZERO, Vec3::new(f32::NAN, 0.0, 0.0)],
                0.1,
                "particle"
            )
            .is_err()
        );
        assert!(validate_positions(&[Vec3::splat(f32::INFINITY)], 0.1, "particle").is_err());
        assert!(validate_positions(&[Vec3::new(0.0, 1e6, 0.0)], 0.1, "particle").is_err());
        assert!(validate_positions(&[Vec3::new(-1e3, 1e3, 0.5)], 0.1, "particle").is_ok());
    }
}
