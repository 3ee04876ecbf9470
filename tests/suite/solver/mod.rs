//! A third solver as a test double, from outside the library: gravity alone (symplectic Euler
//! and the tank's clamp, no pressure, no viscosity), this file and `free_fall.wgsl` beside it.
//! It implements the two solver interfaces (`solver::CpuSolver`, `solver::GpuSolver`) and plugs
//! into both paths through `CpuSimulation::with_stepper` and `Simulation::with_stages`, with no
//! line of the library naming it: the driver's backends step it, the statistics pass reduces
//! its state into the general block with its own block behind, its carried state (a step count)
//! goes through `Backend::carry` as the opaque `solver::Carry` and resumes a run, particles
//! leave through an open side and are removed, and its GPU stage agrees with its CPU mirror
//! bit for bit on lavapipe.

use std::any::Any;
use std::cell::Cell;

use glam::Vec3;
use gpu_sph::boundary::Boundary;
use gpu_sph::boundary::walls::clamp_to_box;
use gpu_sph::core::{Particles, Snapshot, SolverStats, StatsBlock};
use gpu_sph::cpu::interact::InteractParams;
use gpu_sph::gpu::buffers::GpuFluid;
use gpu_sph::gpu::context::Pending;
use gpu_sph::gpu::fluid::Simulation;
use gpu_sph::gpu::stats::{Read, SolveInputs};
use gpu_sph::grid::Grid;
use gpu_sph::grid::gpu::{GpuNeighbours, WORKGROUP_SIZE};
use gpu_sph::grid::reorder::reorder;
use gpu_sph::params::{ConfigOverrides, FluidParams, PhysicsConfig, SimParams, SphConfig};
use gpu_sph::run::{Backend, CpuSimulation};
use gpu_sph::scene::{Scene, SceneKind};
use gpu_sph::solver::Solver;
use gpu_sph::solver::{Carry, CpuSolver, GpuSolver};

use crate::common;

const STAGE: &str = include_str!("free_fall.wgsl");

/// The double's fixed step, s.
const DT: f32 = 1e-3;

/// The carried state: how many steps the run has taken (`null`: none).
fn steps_of(c: &Carry) -> Result<u64, String> {
    match &c.0 {
        serde_json::Value::Null => Ok(0),
        v => v
            .get("steps")
            .and_then(|s| s.as_u64())
            .ok_or_else(|| format!("not a free-fall carry: {v}")),
    }
}

fn carry_of(steps: u64) -> Carry {
    Carry(serde_json::json!({ "steps": steps }))
}

/// The double's block: its step and nothing solved.
fn block_of(dt: f32) -> SolverStats {
    SolverStats {
        dt,
        ..Default::default()
    }
}

/// The CPU side: the stage's mirror, with the grid's order kept as the GPU keeps it (the state
/// a step hands on is in the new grid's slot order).
struct FreeFall {
    steps: u64,
    /// Whether the state handed in is in its grid's slot order (the last step left it so).
    primed: bool,
}

impl FreeFall {
    fn integrate(sorted: &Particles, fp: &FluidParams) -> Particles {
        let g = Vec3::from_slice(&fp.gravity[..3]);
        let lo = Vec3::from_slice(&fp.tank_min[..3]);
        let hi = Vec3::from_slice(&fp.tank_max[..3]);
        let (pos, vel) = (0..sorted.len())
            .map(|k| {
                let v = sorted.vel[k] + g * DT;
                clamp_to_box(sorted.pos[k] + v * DT, v, lo, hi, fp.restitution, fp.open)
            })
            .unzip();
        Particles {
            pos,
            vel,
            id: sorted.id.clone(),
        }
    }

    fn sorted(state: &Particles, sp: &SimParams) -> Particles {
        reorder(state, &Grid::build(&state.pos, sp).sorted_ids)
    }
}

impl CpuSolver for FreeFall {
    fn name(&self) -> &'static str {
        "free-fall"
    }

    fn step(
        &mut self,
        snap: &Snapshot,
        _obstacles: Option<&Boundary>,
        _interaction: Option<&InteractParams>,
        sp: &SimParams,
        fp: &FluidParams,
    ) -> (Snapshot, Vec<f32>) {
        let start = match self.primed {
            true => snap.state.clone(),
            false => Self::sorted(&snap.state, sp),
        };
        let next = Self::sorted(&Self::integrate(&start, fp), sp);
        self.steps += 1;
        self.primed = true;
        let n = next.len();
        let snap = Snapshot {
            state: next,
            density: vec![fp.rest_density; n],
            dt: DT,
            solver: Some(block_of(DT)),
        };
        (snap, Vec::new())
    }

    fn restart(&mut self) {
        self.primed = false;
    }

    fn settle(
        &mut self,
        snap: &mut Snapshot,
        _obstacles: Option<&Boundary>,
        sp: &SimParams,
        fp: &FluidParams,
    ) {
        snap.state = Self::sorted(&snap.state, sp);
        snap.density = vec![fp.rest_density; snap.state.len()];
        self.primed = true;
    }

    fn carry(&self) -> Carry {
        carry_of(self.steps)
    }
}

/// The GPU side: one pipeline and a density buffer of ρ0 (the statistics read a density).
struct GpuFreeFall {
    pipeline: wgpu::ComputePipeline,
    bg: wgpu::BindGroup,
    rho: wgpu::Buffer,
    no_boundary: wgpu::BindGroupLayout,
    primed: Cell<bool>,
    steps: Cell<u64>,
    last: Cell<SolverStats>,
}

impl GpuFreeFall {
    fn new(grid: &GpuNeighbours, fluid: &GpuFluid, fp: &FluidParams) -> GpuFreeFall {
        use wgpu::util::DeviceExt;
        let d = &grid.ctx.device;
        let b = &grid.bufs;
        // The tank's clamp comes with the tank's model, which evaluates the run's kernel.
        let kernel = Some(b.kernel());
        let module = grid
            .ctx
            .walking_shader("test.free_fall", STAGE, b.group_size, kernel);
        let pipeline = d.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("test.free_fall"),
            layout: None,
            module: &module,
            entry_point: Some("free_fall"),
            compilation_options: Default::default(),
            cache: None,
        });
        let buffers = [
            &b.params,
            &fluid.params,
            &b.sorted_pos,
            &b.sorted_vel,
            &b.sorted_id,
            &fluid.step_state,
            &b.positions,
            &b.velocities,
            &b.particle_id,
        ];
        let entries: Vec<_> = buffers
            .iter()
            .enumerate()
            .map(|(k, buf)| wgpu::BindGroupEntry {
                binding: k as u32,
                resource: buf.as_entire_binding(),
            })
            .collect();
        let bg = d.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("test.free_fall"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let rho = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("test.free_fall_rho"),
            contents: bytemuck::cast_slice(&vec![fp.rest_density; b.capacity as usize]),
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
        });
        let no_boundary = d.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("test.free_fall_boundary"),
            entries: &[],
        });
        GpuFreeFall {
            pipeline,
            bg,
            rho,
            no_boundary,
            primed: Cell::new(false),
            steps: Cell::new(0),
            last: Cell::new(SolverStats::default()),
        }
    }

    fn block(&self, r: Read) -> StatsBlock {
        let st = block_of(r.step_state[0]);
        self.last.set(st);
        StatsBlock {
            solver: st.to_words(),
            ..r.block
        }
    }
}

impl GpuSolver for GpuFreeFall {
    fn name(&self) -> &'static str {
        "free-fall"
    }

    fn weakly_compressible(&self) -> bool {
        false
    }

    fn density(&self) -> &wgpu::Buffer {
        &self.rho
    }

    fn stats_inputs(&self) -> Option<SolveInputs<'_>> {
        None
    }

    fn boundary_layout(&self) -> &wgpu::BindGroupLayout {
        &self.no_boundary
    }

    // The double sees no obstacles (a test gives it none).
    fn set_boundary(&mut self, _d: &wgpu::Device, _bg: Option<wgpu::BindGroup>) {}

    // Its one stage reads the live count from the grid's parameters.
    fn set_live(&self, _q: &wgpu::Queue, _n: u32) {}

    fn restart(&self) {
        self.primed.set(false);
    }

    fn primed(&self) -> bool {
        self.primed.get()
    }

    fn set_carry(&self, q: &wgpu::Queue, fluid: &GpuFluid, carry: &Carry) -> Result<(), String> {
        self.steps.set(steps_of(carry)?);
        q.write_buffer(
            &fluid.step_state,
            0,
            bytemuck::cast_slice(&[DT, 0.0, 0.0, 0.0]),
        );
        self.primed.set(false);
        Ok(())
    }

    fn read_carry<'a>(&'a self, _g: &'a GpuNeighbours, _fluid: &'a GpuFluid) -> Pending<'a, Carry> {
        Box::pin(std::future::ready(Ok(carry_of(self.steps.get()))))
    }

    fn encode_prime(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        if !self.primed.get() {
            g.encode_build(e);
            self.primed.set(true);
        }
    }

    // The mouse force writes accelerations, which gravity alone never reads: `forces` is not
    // encoded.
    fn encode_step(
        &self,
        g: &GpuNeighbours,
        e: &mut wgpu::CommandEncoder,
        _forces: &dyn Fn(&mut wgpu::CommandEncoder),
    ) {
        self.encode_prime(g, e);
        {
            let mut pass = e.begin_compute_pass(&Default::default());
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &self.bg, &[]);
            pass.dispatch_workgroups(g.bufs.n.get().div_ceil(WORKGROUP_SIZE), 1, 1);
        }
        g.encode_build(e);
        self.steps.set(self.steps.get() + 1);
    }

    fn read_block(&self, r: Read) -> StatsBlock {
        self.block(r)
    }

    fn block_now(&self, r: Read) -> StatsBlock {
        self.block(r)
    }

    fn last_stats(&self) -> SolverStats {
        self.last.get()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A small dam break's particles and the default parameters of its tank.
fn setup(n: usize) -> (Particles, SimParams, FluidParams) {
    let cfg = SphConfig::for_solver(n as u32, ConfigOverrides::default(), Solver::Dfsph).unwrap();
    let scene = Scene::new(SceneKind::DamBreak, n, cfg.spacing, 3);
    let fp = PhysicsConfig::default()
        .fluid_params(&cfg, scene.tank_min, scene.tank_max, scene.fluid_size.y)
        .unwrap();
    let state = Particles::new(scene.positions, scene.velocities);
    (state, cfg.sim_params(), fp)
}

fn cpu_run(state: &Particles, sp: &SimParams, fp: &FluidParams) -> CpuSimulation {
    let snap = Snapshot {
        state: state.clone(),
        density: vec![fp.rest_density; state.len()],
        dt: 0.0,
        solver: None,
    };
    let stepper = FreeFall {
        steps: 0,
        primed: false,
    };
    CpuSimulation::with_stepper(*sp, *fp, Box::new(stepper), snap)
}

fn steps(run: &mut dyn Backend, k: u32) -> Vec<StatsBlock> {
    (0..k)
        .map(|_| {
            run.submit().unwrap();
            run.read_stats().unwrap()
        })
        .collect()
}

#[test]
fn a_solver_from_outside_the_library_steps_on_the_cpu_path() {
    let (state, sp, fp) = setup(1200);
    let mut run = cpu_run(&state, &sp, &fp);
    let blocks = steps(&mut run, 30);
    let snap = run.snapshot().unwrap();
    // Symplectic Euler from rest under g: after n steps y = y0 + g dt² n(n + 1)/2 where no
    // wall stopped the particle (the column's top layer falls freely in 30 ms).
    let g = fp.gravity[1] as f64;
    let n = 30.0;
    let fall = g * (DT as f64).powi(2) * n * (n + 1.0) / 2.0;
    let top = state.pos.iter().map(|p| p.y).fold(f32::MIN, f32::max);
    let fell = snap
        .state
        .id
        .iter()
        .zip(&snap.state.pos)
        .filter(|(id, _)| state.pos[**id as usize].y == top)
        .map(|(id, p)| p.y as f64 - state.pos[*id as usize].y as f64)
        .collect::<Vec<_>>();
    assert!(!fell.is_empty());
    for f in fell {
        assert!((f - fall).abs() < 1e-5, "{f} vs {fall}");
    }
    // The statistics: the general block from the state, the solver's block behind it.
    let last = blocks.last().unwrap();
    assert_eq!(last.n, 1200);
    assert_eq!(SolverStats::from_words(&last.solver), block_of(DT));
    assert_eq!(run.solver_name(), "free-fall");
    // Its carried state, opaque to the driver, resumes a run where it stopped.
    let carry = run.carry().unwrap();
    assert_eq!(steps_of(&carry), Ok(30));
    let resumed = FreeFall {
        steps: steps_of(&carry).unwrap(),
        primed: false,
    };
    let mut again = CpuSimulation::with_stepper(sp, fp, Box::new(resumed), snap);
    steps(&mut again, 5);
    assert_eq!(steps_of(&again.carry().unwrap()), Ok(35));
}

#[test]
fn a_solver_from_outside_the_library_runs_on_the_gpu_as_on_the_cpu() {
    let Some(ctx) = common::gpu() else { return };
    let (state, sp, mut fp) = setup(3000);
    // The right wall open: particles leave and the driver removes them, on both paths.
    fp.open = 1 << 1;
    fp.tank_max[0] = state.pos.iter().map(|p| p.x).fold(f32::MIN, f32::max) + 0.02;
    let mut gpu = Simulation::with_stages(ctx.clone(), &sp, &fp, &state, |grid, fluid| {
        Ok(Box::new(GpuFreeFall::new(grid, fluid, &fp)))
    })
    .unwrap();
    let mut cpu = cpu_run(&state, &sp, &fp);
    // Sideways: the fluid drifts out through the open side.
    let push: Vec<Vec3> = vec![Vec3::new(2.0, 0.0, 0.0); state.len()];
    gpu.set_velocities(&push).unwrap();
    cpu.set_velocities(&push).unwrap();
    let (mut removed_gpu, mut removed_cpu) = (0, 0);
    for _ in 0..4 {
        let (g, c) = (steps(&mut gpu, 10), steps(&mut cpu, 10));
        removed_gpu += Backend::remove_outside(&mut gpu).unwrap().0;
        removed_cpu += Backend::remove_outside(&mut cpu).unwrap().0;
        let (gs, cs) = (Backend::snapshot(&gpu).unwrap(), cpu.snapshot().unwrap());
        if common::bit_exact(&ctx) {
            assert_eq!(g, c);
            assert_eq!(gs.state, cs.state);
        } else {
            assert_eq!(gs.state.id, cs.state.id);
            for (a, b) in gs.state.pos.iter().zip(&cs.state.pos) {
                assert!((*a - *b).abs().max_element() <= 1e-5 * (1.0 + b.abs().max_element()));
            }
        }
    }
    assert!(removed_cpu > 0, "no particle left through the open side");
    assert_eq!(removed_gpu, removed_cpu);
    assert_eq!(gpu.solver_name(), "free-fall");
    assert_eq!(steps_of(&Backend::carry(&gpu).unwrap()), Ok(40));
    assert_eq!(Backend::carry(&gpu).unwrap(), cpu.carry().unwrap());
}
