//! The neighbour grid, in one place: the key of a cell and its slot (`key`: `cell_of`, the
//! prime-XOR `hash_cell`, `query_range`, `walk_slots`), the CPU stages that build the
//! compressed-row grid (`hash` → `scan` → `scatter`, then `order` and `reorder`) and the one walk
//! over the 27 cells every walking stage uses (`walk`), their GPU pipeline (`gpu`, with the kit of
//! layouts, pipelines and buffers the other GPU passes share), the public neighbour library
//! (`neighbours`) and the brute-force oracle that checks the CPU grid (`oracle`). The shaders are
//! `shaders/grid/`, one per stage, each with its CPU twin here of the same name.

pub mod gpu;
pub mod hash;
pub mod key;
pub mod neighbours;
pub mod oracle;
pub mod order;
pub mod reorder;
pub mod scan;
pub mod scatter;
pub mod walk;

use web_time::{Duration, Instant};

use glam::Vec3;

use crate::params::SimParams;

/// The compressed-row neighbour grid: every buffer the GPU pipeline also holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grid {
    /// Slot of each particle (N).
    pub slots: Vec<u32>,
    /// Rank of each particle within its slot (N); stable, so `sorted_ids` is ordered.
    pub ranks: Vec<u32>,
    /// Particles per slot (T).
    pub counts: Vec<u32>,
    /// Exclusive prefix sum of `counts` plus the total (T + 1).
    pub slot_start: Vec<u32>,
    /// Particle ids grouped by slot, ascending within a slot (N).
    pub sorted_ids: Vec<u32>,
}

/// Wall time of each CPU grid stage.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct GridTimings {
    /// `hash` (slots, ranks, counts).
    pub hash: Duration,
    /// `scan`.
    pub scan: Duration,
    /// `scatter`.
    pub scatter: Duration,
}

impl Grid {
    /// Builds the grid: hash → scan → scatter. Ranks come out stable, so the `order` stage
    /// the GPU needs is the identity here.
    pub fn build(positions: &[Vec3], params: &SimParams) -> Self {
        Self::build_timed(positions, params).0
    }

    /// [`Grid::build`], also returning each stage's wall time.
    pub fn build_timed(positions: &[Vec3], params: &SimParams) -> (Self, GridTimings) {
        let t0 = Instant::now();
        let hash::HashOutput {
            slots,
            ranks,
            counts,
        } = hash::hash(positions, params);
        let t1 = Instant::now();
        let slot_start = scan::scan(&counts);
        let t2 = Instant::now();
        let sorted_ids = scatter::scatter(&slots, &ranks, &slot_start);
        let t3 = Instant::now();
        let grid = Self {
            slots,
            ranks,
            counts,
            slot_start,
            sorted_ids,
        };
        let times = GridTimings {
            hash: t1 - t0,
            scan: t2 - t1,
            scatter: t3 - t2,
        };
        (grid, times)
    }

    /// Occupancy figures of the table.
    pub fn occupancy(&self) -> Occupancy {
        Occupancy {
            occupied_slots: self.counts.iter().filter(|&&c| c > 0).count() as u64,
            largest_slot: self.counts.iter().copied().max().unwrap_or(0),
        }
    }
}

/// How full the hash table is.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Occupancy {
    /// Slots holding at least one particle.
    pub occupied_slots: u64,
    /// Particles in the fullest slot.
    pub largest_slot: u32,
}
