//! The neighbour search as a library: the spatial hash of the SPH step (cells of edge r hashed
//! with the prime-XOR hash of Teschner et al. 2003 into a power-of-two table, counted,
//! prefix-summed and scattered; see [`crate::grid::key`]) over any points, for any radius, on the
//! CPU path. The same grid the simulator verifies bit for bit against its GPU pipeline.
//!
//! What it answers, each in a deterministic order:
//! - [`NeighbourSearch::within`]: for every point, the others closer than r (compressed rows,
//!   each row ascending);
//! - [`NeighbourSearch::query`]: the points closer than r to each of some query points;
//! - [`NeighbourSearch::for_each_near`]: the same for one query, through a callback;
//! - [`NeighbourSearch::in_box`]: the points inside an axis-aligned box;
//! - [`NeighbourSearch::pairs`]: every pair i < j closer than r;
//! - [`overlapping_spheres`]: every pair of spheres of individual radii that overlap (a broad
//!   phase for varied sizes: the cells follow the largest diameter).
//!
//! In two dimensions ([`NeighbourSearch::planar`], [`NeighbourSearch::query_planar`],
//! [`overlapping_discs`]) the points lie in the plane z = 0 of the same grid: their cells'
//! slots are the 2D prime-XOR hash of (cx, cy), and a query walks the 3 × 3 = 9 cells around
//! it ([`crate::grid::key::query_range_planar`]). "Closer than r" is then `dx² + dy² < r²`,
//! the same f32 value as the 3D expression with dz = 0. Every method answers as in 3D.
//!
//! "Closer than r" is `|x_i − x_j|² < r²` evaluated in `f32` as [`crate::grid::key::distance2`]
//! does, strictly, exactly as a brute-force loop with the same expression decides it.
//!
//! ```
//! use gpu_sph::neighbours::NeighbourSearch;
//! use glam::Vec3;
//!
//! let points = [Vec3::ZERO, Vec3::new(0.5, 0.0, 0.0), Vec3::new(3.0, 0.0, 0.0)];
//! let search = NeighbourSearch::new(&points, 1.0).unwrap();
//! let rows = search.within().unwrap();
//! assert_eq!(rows.row(0), &[1]);
//! assert_eq!(rows.row(2), &[] as &[u32]);
//! assert_eq!(search.pairs(), vec![(0, 1)]);
//! ```

use glam::{IVec3, Vec2, Vec3};
use rayon::prelude::*;

use crate::grid::Grid;
use crate::grid::key::walk_slots;
use crate::grid::key::{cell_of, distance2, hash_cell, query_range, query_range_planar};
use crate::params::{MAX_CELL_COORD, MAX_TABLE_SIZE, SimParams, default_table_size};
use crate::{Error, Result};

/// Compressed rows: row `i` is `indices[offsets[i]..offsets[i + 1]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Csr {
    /// Row starts, one more than there are rows.
    pub offsets: Vec<u32>,
    /// The rows' entries, one row after another.
    pub indices: Vec<u32>,
}

impl Csr {
    /// Row `i`.
    ///
    /// ```
    /// let rows = gpu_sph::neighbours::Csr { offsets: vec![0, 2, 2], indices: vec![4, 7] };
    /// assert_eq!(rows.row(0), &[4, 7]);
    /// assert!(rows.row(1).is_empty());
    /// ```
    pub fn row(&self, i: usize) -> &[u32] {
        &self.indices[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// Number of rows.
    ///
    /// ```
    /// let rows = gpu_sph::neighbours::Csr { offsets: vec![0, 1, 3], indices: vec![2, 0, 1] };
    /// assert_eq!(rows.rows(), 2);
    /// ```
    pub fn rows(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    fn from_rows(rows: Vec<Vec<u32>>) -> Result<Self> {
        let total: usize = rows.iter().map(Vec::len).sum();
        if total > u32::MAX as usize {
            return Err(Error::input(format!(
                "{total} neighbour entries overflow the u32 offsets: use a smaller radius or fewer points"
            )));
        }
        let mut offsets = Vec::with_capacity(rows.len() + 1);
        let mut indices = Vec::with_capacity(total);
        offsets.push(0);
        for row in rows {
            indices.extend_from_slice(&row);
            offsets.push(indices.len() as u32);
        }
        Ok(Self { offsets, indices })
    }
}

/// A neighbour grid over fixed points for one radius.
#[derive(Clone, Debug)]
pub struct NeighbourSearch {
    params: SimParams,
    /// The points lie in the plane z = 0 ([`NeighbourSearch::planar`]): queries walk 9 cells.
    planar: bool,
    grid: Grid,
    /// The points in slot order (`grid.sorted_ids[k]` is the input index of `sorted[k]`).
    sorted: Vec<Vec3>,
    points: Vec<Vec3>,
}

fn check_radius(r: f32, what: &str) -> Result<()> {
    if r.is_finite() && r > 0.0 {
        Ok(())
    } else {
        Err(Error::input(format!(
            "{what} must be finite and > 0, got {r}"
        )))
    }
}

fn check_points(points: &[Vec3], r: f32, what: &str) -> Result<()> {
    if points.len() > (u32::MAX / 2) as usize {
        return Err(Error::input(format!(
            "{} {what}s are more than the 2^31 the u32 indices allow: split the set",
            points.len()
        )));
    }
    let inv = (1.0 / r as f64) as f32;
    for (i, p) in points.iter().enumerate() {
        if !p.is_finite() {
            return Err(Error::input(format!(
                "{what} {i} is not finite ({p}): remove NaN/inf values"
            )));
        }
        if (*p * inv).abs().max_element() >= MAX_CELL_COORD {
            return Err(Error::input(format!(
                "{what} {i} at {p} lies 2^22 or more radii from the origin, beyond what f32 cells resolve: translate the points or use a larger radius"
            )));
        }
    }
    Ok(())
}

impl NeighbourSearch {
    /// Builds the grid over `points` for radius `r`, with the default table (the next power of
    /// two ≥ 2N).
    ///
    /// ```
    /// use gpu_sph::neighbours::NeighbourSearch;
    /// use glam::Vec3;
    ///
    /// let s = NeighbourSearch::new(&[Vec3::ZERO; 3], 0.1).unwrap();
    /// assert_eq!(s.table_size(), 8);
    /// assert!(NeighbourSearch::new(&[Vec3::NAN], 0.1).is_err());
    /// ```
    pub fn new(points: &[Vec3], r: f32) -> Result<Self> {
        Self::with_table_size(points, r, default_table_size(points.len() as u32))
    }

    /// Builds the grid with a table of `table_size` slots, a power of two from 1 to 2^24
    /// (smaller tables alias more cells into one slot: slower, never wrong).
    ///
    /// ```
    /// use gpu_sph::neighbours::NeighbourSearch;
    /// use glam::Vec3;
    ///
    /// // One slot: every cell aliases into it, and the answers stay exact.
    /// let pts = [Vec3::ZERO, Vec3::new(0.05, 0.0, 0.0), Vec3::new(9.0, 0.0, 0.0)];
    /// let s = NeighbourSearch::with_table_size(&pts, 0.1, 1).unwrap();
    /// assert_eq!(s.pairs(), vec![(0, 1)]);
    /// assert!(NeighbourSearch::with_table_size(&pts, 0.1, 3).is_err());
    /// ```
    pub fn with_table_size(points: &[Vec3], r: f32, table_size: u32) -> Result<Self> {
        check_radius(r, "the radius")?;
        check_points(points, r, "point")?;
        if !table_size.is_power_of_two() || table_size > MAX_TABLE_SIZE {
            return Err(Error::input(format!(
                "the table size must be a power of two from 1 to 2^24, got {table_size}"
            )));
        }
        let params = SimParams {
            n: points.len() as u32,
            table_size,
            table_mask: table_size - 1,
            group_size: 1,
            h: r,
            inv_h: (1.0 / r as f64) as f32,
            h2: r * r,
            inv_h2: 1.0 / (r * r),
            density_scale: 0.0,
            ..bytemuck::Zeroable::zeroed()
        };
        let grid = Grid::build(points, &params);
        let sorted = grid
            .sorted_ids
            .iter()
            .map(|&i| points[i as usize])
            .collect();
        Ok(Self {
            params,
            planar: false,
            grid,
            sorted,
            points: points.to_vec(),
        })
    }

    /// Builds the grid over 2D `points` (the plane z = 0) for radius `r`, with the default
    /// table; its queries walk the 9 cells around a point.
    ///
    /// ```
    /// use gpu_sph::neighbours::NeighbourSearch;
    /// use glam::Vec2;
    ///
    /// let pts = [Vec2::ZERO, Vec2::new(0.3, 0.4), Vec2::new(0.0, 2.0)];
    /// let s = NeighbourSearch::planar(&pts, 0.6).unwrap();
    /// assert_eq!(s.pairs(), vec![(0, 1)]);
    /// assert_eq!(s.query_planar(&[Vec2::new(0.0, 1.5)]).unwrap().row(0), &[2]);
    /// ```
    pub fn planar(points: &[Vec2], r: f32) -> Result<Self> {
        Self::planar_with_table_size(points, r, default_table_size(points.len() as u32))
    }

    /// [`Self::planar`] with a table of `table_size` slots ([`Self::with_table_size`]).
    pub fn planar_with_table_size(points: &[Vec2], r: f32, table_size: u32) -> Result<Self> {
        let points: Vec<Vec3> = points.iter().map(|p| p.extend(0.0)).collect();
        Ok(Self {
            planar: true,
            ..Self::with_table_size(&points, r, table_size)?
        })
    }

    /// Whether the points lie in the plane z = 0 ([`Self::planar`]).
    pub fn is_planar(&self) -> bool {
        self.planar
    }

    /// The radius r.
    ///
    /// ```
    /// use gpu_sph::neighbours::NeighbourSearch;
    /// use glam::Vec3;
    ///
    /// assert_eq!(NeighbourSearch::new(&[Vec3::ZERO], 0.25).unwrap().radius(), 0.25);
    /// ```
    pub fn radius(&self) -> f32 {
        self.params.h
    }

    /// The table size.
    ///
    /// ```
    /// use gpu_sph::neighbours::NeighbourSearch;
    /// use glam::Vec3;
    ///
    /// let s = NeighbourSearch::with_table_size(&[Vec3::ZERO], 1.0, 1024).unwrap();
    /// assert_eq!(s.table_size(), 1024);
    /// ```
    pub fn table_size(&self) -> u32 {
        self.params.table_size
    }

    /// Calls `visit(j, r²)` for every point `j` (input index) closer than r to `q`, in the
    /// grid's walk order (cell by cell, each cell's points in input order). `q` may be one of
    /// the points: it is then visited too, at r² = 0.
    ///
    /// ```
    /// use gpu_sph::neighbours::NeighbourSearch;
    /// use glam::Vec3;
    ///
    /// let s = NeighbourSearch::new(&[Vec3::ZERO, Vec3::X], 1.5).unwrap();
    /// let mut near = Vec::new();
    /// s.for_each_near(Vec3::new(0.9, 0.0, 0.0), |j, r2| near.push((j, r2)));
    /// near.sort_by_key(|p| p.0);
    /// assert_eq!(near.len(), 2);
    /// ```
    pub fn for_each_near(&self, q: Vec3, mut visit: impl FnMut(u32, f32)) {
        let (lo, hi) = match self.planar {
            true => query_range_planar(q, self.params.h, self.params.inv_h),
            false => query_range(q, self.params.h, self.params.inv_h),
        };
        walk_slots(
            lo,
            hi,
            &self.grid.slot_start,
            self.params.table_mask,
            |a, b| {
                for k in a..b {
                    let r2 = distance2(q, self.sorted[k as usize]);
                    if r2 < self.params.h2 {
                        visit(self.grid.sorted_ids[k as usize], r2);
                    }
                }
            },
        );
    }

    fn near_sorted(&self, q: Vec3, skip: Option<u32>) -> Vec<u32> {
        let mut row = Vec::new();
        self.for_each_near(q, |j, _| {
            if Some(j) != skip {
                row.push(j);
            }
        });
        row.sort_unstable();
        row
    }

    /// For every point (input order), the other points closer than r, ascending.
    ///
    /// ```
    /// use gpu_sph::neighbours::NeighbourSearch;
    /// use glam::Vec3;
    ///
    /// let pts = [Vec3::ZERO, Vec3::X, Vec3::new(2.0, 0.0, 0.0)];
    /// let rows = NeighbourSearch::new(&pts, 1.5).unwrap().within().unwrap();
    /// assert_eq!(rows.row(1), &[0, 2]);
    /// ```
    pub fn within(&self) -> Result<Csr> {
        let rows = (0..self.points.len())
            .into_par_iter()
            .map(|i| self.near_sorted(self.points[i], Some(i as u32)))
            .collect();
        Csr::from_rows(rows)
    }

    /// [`Self::within`] computed on the GPU of `ctx`: the grid built by the SPH step's passes,
    /// then stage `rows` (`shaders/rows.wgsl`) counting and filling each row there. The rows
    /// equal the CPU's exactly (integers; the distance test is the same f32 expression).
    pub fn within_gpu(&self, ctx: std::sync::Arc<crate::gpu::GpuContext>) -> Result<Csr> {
        use crate::grid::gpu::{
            Binding::*, GpuNeighbours, WORKGROUP_SIZE, bind_group, groups, layout, pipeline,
        };
        let n = self.points.len();
        if n == 0 {
            return Ok(Csr {
                offsets: vec![0],
                indices: Vec::new(),
            });
        }
        let gpu = GpuNeighbours::new(ctx.clone(), &self.params)?;
        gpu.upload_positions(&self.points);
        gpu.run(|g, e| g.encode_build(e))?;
        let d = &ctx.device;
        let buffer = |label: &str, words: usize, extra: wgpu::BufferUsages| {
            d.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 4 * words.max(1) as u64,
                usage: wgpu::BufferUsages::STORAGE | extra,
                mapped_at_creation: false,
            })
        };
        let row_len = buffer("sph.rows.len", n, wgpu::BufferUsages::COPY_SRC);
        let row_start = buffer("sph.rows.start", n, wgpu::BufferUsages::COPY_DST);
        let l = layout(
            d,
            "sph.rows",
            &[Uniform, Read, Read, Read, ReadWrite, Read, ReadWrite],
        );
        let m = ctx.shader("sph.rows", crate::shaders::ROWS);
        let (count, fill) = (
            pipeline(d, "sph.rows_count", &l, &m, "rows_count"),
            pipeline(d, "sph.rows_fill", &l, &m, "rows_fill"),
        );
        let b = &gpu.bufs;
        let dispatch = |p: &wgpu::ComputePipeline, ids: &wgpu::Buffer| {
            let bg = bind_group(
                d,
                "sph.rows",
                &l,
                &[
                    &b.params,
                    &b.sorted_pos,
                    &b.slot_start,
                    &b.sorted_id,
                    &row_len,
                    &row_start,
                    ids,
                ],
            );
            gpu.run(|_, e| {
                let mut pass = e.begin_compute_pass(&Default::default());
                pass.set_pipeline(p);
                pass.set_bind_group(0, &bg, &[]);
                pass.dispatch_workgroups(groups(n as u32, WORKGROUP_SIZE), 1, 1);
            })
        };
        let unused = buffer("sph.rows.ids", 1, wgpu::BufferUsages::empty());
        dispatch(&count, &unused)?;
        let lens = gpu.read_u32(&row_len, n)?;
        let ids = gpu.read_u32(&b.sorted_id, n)?;
        // Offsets in input order; each slot place's row starts at its point's offset.
        let mut by_input = vec![0u32; n];
        for (k, &id) in ids.iter().enumerate() {
            by_input[id as usize] = lens[k];
        }
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0u32);
        let mut total = 0u64;
        for &len in &by_input {
            total += len as u64;
            if total > u32::MAX as u64 {
                return Err(Error::input(format!(
                    "{total} neighbour entries overflow the u32 offsets: use a smaller radius or fewer points"
                )));
            }
            offsets.push(total as u32);
        }
        let starts: Vec<u32> = ids.iter().map(|&id| offsets[id as usize]).collect();
        ctx.queue
            .write_buffer(&row_start, 0, bytemuck::cast_slice(&starts));
        if total == 0 {
            return Ok(Csr {
                offsets,
                indices: Vec::new(),
            });
        }
        let row_ids = buffer("sph.rows.ids", total as usize, wgpu::BufferUsages::COPY_SRC);
        dispatch(&fill, &row_ids)?;
        let indices = gpu.read_u32(&row_ids, total as usize)?;
        Ok(Csr { offsets, indices })
    }

    /// For every query point, the points closer than r to it, ascending.
    ///
    /// ```
    /// use gpu_sph::neighbours::NeighbourSearch;
    /// use glam::Vec3;
    ///
    /// let s = NeighbourSearch::new(&[Vec3::ZERO, Vec3::X, Vec3::new(5.0, 0.0, 0.0)], 1.2).unwrap();
    /// let rows = s.query(&[Vec3::new(0.5, 0.0, 0.0)]).unwrap();
    /// assert_eq!(rows.row(0), &[0, 1]);
    /// ```
    pub fn query(&self, queries: &[Vec3]) -> Result<Csr> {
        check_points(queries, self.params.h, "query point")?;
        let rows = queries
            .par_iter()
            .map(|&q| self.near_sorted(q, None))
            .collect();
        Csr::from_rows(rows)
    }

    /// [`Self::query`] for 2D query points (the plane z = 0).
    ///
    /// ```
    /// use gpu_sph::neighbours::NeighbourSearch;
    /// use glam::Vec2;
    ///
    /// let s = NeighbourSearch::planar(&[Vec2::ZERO, Vec2::X], 0.6).unwrap();
    /// assert_eq!(s.query_planar(&[Vec2::new(0.5, 0.0)]).unwrap().row(0), &[0, 1]);
    /// ```
    pub fn query_planar(&self, queries: &[Vec2]) -> Result<Csr> {
        let q: Vec<Vec3> = queries.iter().map(|p| p.extend(0.0)).collect();
        self.query(&q)
    }

    /// Every pair (i, j), i < j, closer than r, ascending.
    ///
    /// ```
    /// use gpu_sph::neighbours::NeighbourSearch;
    /// use glam::Vec3;
    ///
    /// let pts = [Vec3::ZERO, Vec3::X, Vec3::new(2.0, 0.0, 0.0)];
    /// let s = NeighbourSearch::new(&pts, 1.5).unwrap();
    /// assert_eq!(s.pairs(), vec![(0, 1), (1, 2)]);
    /// ```
    pub fn pairs(&self) -> Vec<(u32, u32)> {
        (0..self.points.len())
            .into_par_iter()
            .flat_map_iter(|i| {
                let i = i as u32;
                self.near_sorted(self.points[i as usize], None)
                    .into_iter()
                    .filter(move |&j| j > i)
                    .map(move |j| (i, j))
            })
            .collect()
    }

    /// The points inside the box `lo..=hi` (bounds included), ascending. Walks the box's cells
    /// when there are fewer of them than points, else tests every point.
    ///
    /// ```
    /// use gpu_sph::neighbours::NeighbourSearch;
    /// use glam::Vec3;
    ///
    /// let pts = [Vec3::ZERO, Vec3::ONE, Vec3::splat(3.0)];
    /// let s = NeighbourSearch::new(&pts, 0.5).unwrap();
    /// assert_eq!(s.in_box(Vec3::splat(-0.1), Vec3::splat(1.0)).unwrap(), vec![0, 1]);
    /// ```
    pub fn in_box(&self, lo: Vec3, hi: Vec3) -> Result<Vec<u32>> {
        if !(lo.is_finite() && hi.is_finite()) {
            return Err(Error::input(format!(
                "the box {lo} – {hi} is not finite: give finite corners"
            )));
        }
        if lo.cmpgt(hi).any() {
            return Err(Error::input(format!(
                "the box's lower corner {lo} lies above its upper corner {hi} on some axis: swap them"
            )));
        }
        let inside = |p: Vec3| p.cmpge(lo).all() && p.cmple(hi).all();
        let big = Vec3::splat(MAX_CELL_COORD * self.params.h);
        let (clo, chi) = (
            cell_of(lo.clamp(-big, big), self.params.inv_h),
            cell_of(hi.clamp(-big, big), self.params.inv_h),
        );
        let span = (chi - clo + IVec3::ONE).as_dvec3();
        let mut out: Vec<u32> = if span.x * span.y * span.z <= self.points.len() as f64 {
            // Each slot once: cells of the box can alias into one slot.
            let mut seen = vec![false; self.params.table_size as usize];
            let mut v = Vec::new();
            for cz in clo.z..=chi.z {
                for cy in clo.y..=chi.y {
                    for cx in clo.x..=chi.x {
                        let s = hash_cell(IVec3::new(cx, cy, cz), self.params.table_mask) as usize;
                        if std::mem::replace(&mut seen[s], true) {
                            continue;
                        }
                        let (a, b) = (self.grid.slot_start[s], self.grid.slot_start[s + 1]);
                        for k in a..b {
                            if inside(self.sorted[k as usize]) {
                                v.push(self.grid.sorted_ids[k as usize]);
                            }
                        }
                    }
                }
            }
            v
        } else {
            (0..self.points.len() as u32)
                .filter(|&i| inside(self.points[i as usize]))
                .collect()
        };
        out.sort_unstable();
        Ok(out)
    }
}

/// Every pair (i, j), i < j, of spheres that overlap, `|c_i − c_j|² < (r_i + r_j)²` in `f32`,
/// ascending, each once. The grid's cells follow the largest diameter, so every overlapping
/// pair lies within one query of the 27 cells; radii of 0 are points.
///
/// ```
/// use gpu_sph::neighbours::overlapping_spheres;
/// use glam::Vec3;
///
/// let c = [Vec3::ZERO, Vec3::new(1.5, 0.0, 0.0), Vec3::new(4.0, 0.0, 0.0)];
/// assert_eq!(overlapping_spheres(&c, &[1.0, 0.6, 2.0]).unwrap(), vec![(0, 1), (1, 2)]);
/// ```
pub fn overlapping_spheres(centres: &[Vec3], radii: &[f32]) -> Result<Vec<(u32, u32)>> {
    overlapping(centres, radii, "sphere", NeighbourSearch::new)
}

/// Every pair (i, j), i < j, of discs in the plane that overlap, `|c_i − c_j|² < (r_i + r_j)²`
/// in `f32`, ascending, each once: [`overlapping_spheres`] in 2D (a planar grid, 9 cells a
/// query). The broad phase of colliding discs.
///
/// ```
/// use gpu_sph::neighbours::overlapping_discs;
/// use glam::Vec2;
///
/// let c = [Vec2::ZERO, Vec2::new(1.5, 0.0), Vec2::new(0.0, 4.0)];
/// assert_eq!(overlapping_discs(&c, &[1.0, 0.6, 2.0]).unwrap(), vec![(0, 1)]);
/// ```
pub fn overlapping_discs(centres: &[Vec2], radii: &[f32]) -> Result<Vec<(u32, u32)>> {
    let c3: Vec<Vec3> = centres.iter().map(|c| c.extend(0.0)).collect();
    overlapping(&c3, radii, "disc", |_, r| {
        NeighbourSearch::planar(centres, r)
    })
}

/// The pairs of overlapping balls (`what`: sphere or disc) whose grid `search` builds.
fn overlapping(
    centres: &[Vec3],
    radii: &[f32],
    what: &str,
    search: impl FnOnce(&[Vec3], f32) -> Result<NeighbourSearch>,
) -> Result<Vec<(u32, u32)>> {
    if centres.len() != radii.len() {
        return Err(Error::input(format!(
            "{} centres but {} radii: give one radius per {what}",
            centres.len(),
            radii.len()
        )));
    }
    if let Some(i) = radii.iter().position(|r| !(r.is_finite() && *r >= 0.0)) {
        return Err(Error::input(format!(
            "{what} {i} has radius {}: radii must be finite and ≥ 0",
            radii[i]
        )));
    }
    let largest = radii.iter().copied().fold(0.0f32, f32::max);
    // Balls of radius 0 only touch coincident centres: any positive cell size finds them.
    let reach = if largest > 0.0 {
        // One ulp above 2 r_max, so r_i + r_j (≤ 2 r_max after rounding) < reach.
        f32::from_bits((2.0 * largest).to_bits() + 1)
    } else {
        1.0
    };
    let search = search(centres, reach)?;
    Ok((0..centres.len())
        .into_par_iter()
        .flat_map_iter(|i| {
            let mut row = Vec::new();
            search.for_each_near(centres[i], |j, r2| {
                let sum = radii[i] + radii[j as usize];
                if j as usize > i && r2 < sum * sum {
                    row.push((i as u32, j));
                }
            });
            row.sort_unstable();
            row
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_is_an_error() {
        assert!(NeighbourSearch::new(&[Vec3::ZERO], 0.0).is_err());
        assert!(NeighbourSearch::new(&[Vec3::ZERO], f32::NAN).is_err());
        assert!(NeighbourSearch::new(&[Vec3::NAN], 1.0).is_err());
        assert!(NeighbourSearch::new(&[Vec3::splat(1e30)], 1.0).is_err());
        assert!(NeighbourSearch::with_table_size(&[Vec3::ZERO], 1.0, 3).is_err());
        let s = NeighbourSearch::new(&[Vec3::ZERO], 1.0).unwrap();
        assert!(s.query(&[Vec3::INFINITY]).is_err());
        assert!(s.in_box(Vec3::ONE, Vec3::ZERO).is_err());
        assert!(overlapping_spheres(&[Vec3::ZERO], &[-1.0]).is_err());
        assert!(overlapping_spheres(&[Vec3::ZERO], &[]).is_err());
        assert!(NeighbourSearch::planar(&[Vec2::NAN], 1.0).is_err());
        assert!(NeighbourSearch::planar(&[Vec2::ZERO], -1.0).is_err());
        let e = overlapping_discs(&[Vec2::ZERO], &[f32::NAN]).unwrap_err();
        assert!(e.to_string().contains("disc 0 has radius NaN"), "{e}");
    }

    #[test]
    fn an_empty_set_answers_empty() {
        let s = NeighbourSearch::new(&[], 1.0).unwrap();
        assert_eq!(s.within().unwrap().rows(), 0);
        assert!(s.pairs().is_empty());
        assert!(s.in_box(Vec3::ZERO, Vec3::ONE).unwrap().is_empty());
        assert_eq!(s.query(&[Vec3::ZERO]).unwrap().row(0), &[] as &[u32]);
    }
}
