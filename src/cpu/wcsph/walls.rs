//! Stage `walls`, the CPU mirror of `shaders/wcsph/walls.wgsl`: the tank's walls as mirrors.
//!
//! Inputs (slot order): positions, the `density` stage's densities, `slot_start`. Output: the
//! density of every particle with the walls' mirror particles included (N). (On the GPU this
//! pass computes the `density` stage's densities too, in the same walk: shaders/wcsph/walls.wgsl.)
//!
//! The model (mirror images across the tank's walls, Colagrossi & Landrini 2003) is
//! `crate::boundary::tank`; this stage adds the images' density.
//!
//! Worked example, h = 1, density_scale = 1, floor at y = 0, a lone particle at y = 0.25: its
//! image at y = −0.25 is 0.5 away, so the density is 1 + (1 − 0.25)³ = 1.421875, as for a real
//! pair at that distance.

use glam::Vec3;

use crate::boundary::tank::{
    WallPlanes, image_axes, reflect_across, subsets, wall_image_mask, wall_planes,
};
use crate::cpu::density::poly6_term;
use crate::grid::key::distance2;
use crate::grid::walk::{GROUP, map_groups, walk_group};
use crate::params::{FluidParams, SimParams};

/// The poly6 term of image `m` of `xk` seen from `x`; 0 unless m's walls are near and r² < h².
#[inline]
fn image_term(x: Vec3, xk: Vec3, walls: &WallPlanes, m: u32, sp: &SimParams) -> f32 {
    if walls.mask & m != m {
        return 0.0;
    }
    let r2 = distance2(x, reflect_across(xk, walls.plane, image_axes(m)));
    if r2 < sp.h2 {
        poly6_term(r2, sp.inv_h2)
    } else {
        0.0
    }
}

/// All images of `xk`, one per non-empty subset m of the near walls, in decreasing m.
#[inline]
fn images(x: Vec3, xk: Vec3, walls: &WallPlanes, sp: &SimParams) -> f32 {
    subsets(walls.mask).fold(0.0, |t, m| t + image_term(x, xk, walls, m, sp))
}

/// The image sums of the group `first..first + len` (slot order; members share a query
/// range), one per lane, unscaled: one walk for the group, each candidate visited once for all
/// members (the caller walks only groups with a member near a wall).
fn wall_sums(
    first: usize,
    len: usize,
    near: &[WallPlanes; GROUP],
    sorted_pos: &[Vec3],
    slot_start: &[u32],
    sp: &SimParams,
) -> [f32; GROUP] {
    let mut sum = [0.0f32; GROUP];
    walk_group(first, sorted_pos, slot_start, sp, |j| {
        let xj = sorted_pos[j];
        for l in 0..len {
            let x = sorted_pos[first + l];
            // An image is never nearer than its original: only neighbours' images count.
            if wall_image_mask(&near[l], x, xj, sp.h2) != 0 {
                sum[l] += images(x, xj, &near[l], sp);
            }
        }
    });
    sum
}

/// [`wall_sums`] in AVX2 intrinsics, eight members per instruction (LLVM left the lane loop
/// scalar). Each lane adds, per candidate, its images' terms in decreasing subset order onto
/// +0 and then that total onto its sum, as [`images`] folds them; a subset, candidate or lane
/// the portable code skips adds an exact +0 here, which changes no sum (the terms are ≥ 0 and
/// the sums start at +0), so the results are the same bits.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;
    use crate::cpu::simd::lanes::{holding, image_offset, norm2, poly6, splat3};
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn wall_sums(
        first: usize,
        len: usize,
        near: &[WallPlanes; GROUP],
        sorted_pos: &[Vec3],
        slot_start: &[u32],
        sp: &SimParams,
    ) -> [f32; GROUP] {
        let (mut q, mut plane) = ([[0f32; GROUP]; 3], [[0f32; GROUP]; 3]);
        let mut mask = [0u32; GROUP];
        for l in 0..GROUP {
            // Unused lanes repeat the first member with no walls.
            let x = sorted_pos[first + if l < len { l } else { 0 }];
            for a in 0..3 {
                q[a][l] = x[a];
                plane[a][l] = near[l].plane[a];
            }
            mask[l] = if l < len { near[l].mask } else { 0 };
        }
        // SAFETY (whole block): AVX2 is enabled on this function; every load and store goes
        // through an array of exactly eight lanes.
        unsafe {
            let ld = |a: &[f32; GROUP]| _mm256_loadu_ps(a.as_ptr());
            let q = [ld(&q[0]), ld(&q[1]), ld(&q[2])];
            let plane = [ld(&plane[0]), ld(&plane[1]), ld(&plane[2])];
            let mask = _mm256_loadu_si256(mask.as_ptr().cast());
            let zero = _mm256_setzero_ps();
            let walled = _mm256_castsi256_ps(_mm256_cmpgt_epi32(mask, _mm256_setzero_si256()));
            let (h2, inv_h2) = (_mm256_set1_ps(sp.h2), _mm256_set1_ps(sp.inv_h2));
            let mut sum = zero;
            walk_group(first, sorted_pos, slot_start, sp, |j| {
                let xjv = splat3(sorted_pos[j]);
                let r2 = norm2([0, 1, 2].map(|a| _mm256_sub_ps(q[a], xjv[a])));
                let within = _mm256_and_ps(walled, _mm256_cmp_ps::<_CMP_LT_OQ>(r2, h2));
                if _mm256_movemask_ps(within) == 0 {
                    return;
                }
                let mut t = zero;
                for m in (1..8u32).rev() {
                    let on = _mm256_and_ps(within, holding(mask, m));
                    if _mm256_movemask_ps(on) == 0 {
                        continue;
                    }
                    let r2 = norm2(image_offset(&q, &plane, &xjv, m));
                    let on = _mm256_and_ps(on, _mm256_cmp_ps::<_CMP_LT_OQ>(r2, h2));
                    t = _mm256_add_ps(t, _mm256_and_ps(on, poly6(r2, inv_h2)));
                }
                sum = _mm256_add_ps(sum, t);
            });
            let mut out = [0f32; GROUP];
            _mm256_storeu_ps(out.as_mut_ptr(), sum);
            out
        }
    }
}

/// The densities with wall images of the group `first..first + len` (slot order; members
/// share a query range): one walk for the group if any member is near a wall.
fn group_wall_densities(
    first: usize,
    len: usize,
    sorted_pos: &[Vec3],
    density: &[f32],
    slot_start: &[u32],
    sp: &SimParams,
    fp: &FluidParams,
) -> [f32; GROUP] {
    let mut near = [WallPlanes::default(); GROUP];
    for l in 0..len {
        near[l] = wall_planes(sorted_pos[first + l], sp.h, fp);
    }
    let mut sum = [0.0f32; GROUP];
    if near[..len].iter().any(|w| w.mask != 0) {
        sum = wall_sums_best(first, len, &near, sorted_pos, slot_start, sp);
    }
    let mut out = [0.0f32; GROUP];
    for l in 0..len {
        out[l] = density[first + l] + sp.density_scale * sum[l];
    }
    out
}

fn wall_sums_best(
    first: usize,
    len: usize,
    near: &[WallPlanes; GROUP],
    sorted_pos: &[Vec3],
    slot_start: &[u32],
    sp: &SimParams,
) -> [f32; GROUP] {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::simd::has_avx2() {
        // SAFETY: AVX2 is present, checked just above.
        return unsafe { avx2::wall_sums(first, len, near, sorted_pos, slot_start, sp) };
    }
    wall_sums(first, len, near, sorted_pos, slot_start, sp)
}

/// Runs the walls stage, group by group ([`map_groups`]: groups in Morton order).
pub fn walls(
    sorted_pos: &[Vec3],
    density: &[f32],
    slot_start: &[u32],
    sp: &SimParams,
    fp: &FluidParams,
) -> Vec<f32> {
    map_groups(sorted_pos, sp, |first, len| {
        group_wall_densities(first, len, sorted_pos, density, slot_start, sp, fp)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{ConfigOverrides, PhysicsConfig, SphConfig};

    fn setup(h: f32) -> (SimParams, FluidParams) {
        let cfg = SphConfig::new(
            2,
            ConfigOverrides {
                smoothing_radius: Some(h),
                spacing: Some(0.5),
                table_size: Some(1),
                ..Default::default()
            },
        )
        .unwrap();
        let mut sp = cfg.sim_params();
        sp.density_scale = 1.0;
        let fp = PhysicsConfig::default()
            .fluid_params(&cfg, Vec3::ZERO, Vec3::splat(10.0), 1.0)
            .unwrap();
        (sp, fp)
    }

    #[test]
    fn worked_example() {
        let (sp, fp) = setup(1.0);
        let pos = [Vec3::new(5.0, 0.25, 5.0)];
        let d = walls(&pos, &[1.0], &[0, 1], &sp, &fp);
        assert_eq!(d, vec![1.421875]);
    }

    #[test]
    fn far_from_the_walls_nothing_changes() {
        let (sp, fp) = setup(1.0);
        let pos = [Vec3::new(5.0, 1.0, 5.0), Vec3::new(5.5, 1.0, 5.0)];
        let d = walls(&pos, &[1.25, 1.5], &[0, 2], &sp, &fp);
        assert_eq!(d, vec![1.25, 1.5]);
    }

    #[test]
    fn a_corner_sees_all_seven_images() {
        // At (0.25, 0.25, 0.25) the images sit 0.5 away across each wall, √0.5 away across
        // each edge and √0.75 away across the corner.
        let (sp, fp) = setup(1.0);
        let pos = [Vec3::splat(0.25)];
        let d = walls(&pos, &[1.0], &[0, 1], &sp, &fp)[0];
        let want = 1.0 + 3.0 * 0.75f32.powi(3) + 3.0 * 0.5f32.powi(3) + 0.25f32.powi(3);
        assert!((d - want).abs() < 1e-6, "{d} vs {want}");
        let planes = wall_planes(pos[0], 1.0, &fp);
        assert_eq!(planes.mask, 7);
        assert_eq!(planes.plane, Vec3::ZERO);
    }

    /// The AVX2 image sums are the portable ones bit for bit: random particles in a box
    /// whose walls, edges and corners lie within h, every cell in one slot (T = 1).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_wall_sums_are_the_portable_bits() {
        if !crate::cpu::simd::has_avx2() {
            return;
        }
        let (sp, fp) = setup(1.0);
        let mut s = 7u32;
        let mut next = || {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 24) as f32
        };
        let pos: Vec<Vec3> = (0..400)
            .map(|_| Vec3::new(next(), next(), next()) * 9.9 + 0.05)
            .collect();
        let slot_start = [0, pos.len() as u32];
        let mut walled = 0;
        for first in (0..pos.len() - GROUP).step_by(5) {
            let len = 1 + first % GROUP;
            let mut near = [WallPlanes::default(); GROUP];
            for l in 0..len {
                near[l] = wall_planes(pos[first + l], sp.h, &fp);
                walled += (near[l].mask != 0) as usize;
            }
            let want = wall_sums(first, len, &near, &pos, &slot_start, &sp);
            // SAFETY: AVX2 is present, checked above.
            let got = unsafe { avx2::wall_sums(first, len, &near, &pos, &slot_start, &sp) };
            assert_eq!(want.map(f32::to_bits)[..len], got.map(f32::to_bits)[..len]);
        }
        assert!(walled > 100, "{walled} members near a wall");
    }

    #[test]
    fn subsets_run_in_decreasing_order() {
        assert_eq!(
            subsets(0b101).collect::<Vec<_>>(),
            vec![0b101, 0b100, 0b001]
        );
        assert_eq!(subsets(7).count(), 7);
        assert_eq!(subsets(0).count(), 0);
    }

    #[test]
    fn the_far_wall_mirrors_too() {
        let (_, fp) = setup(1.0);
        let w = wall_planes(Vec3::new(9.5, 5.0, 0.9), 1.0, &fp);
        assert_eq!(w.mask, 0b101);
        assert_eq!(w.plane, Vec3::new(10.0, 0.0, 0.0));
        assert_eq!(
            reflect_across(Vec3::new(9.5, 5.0, 0.9), w.plane, image_axes(w.mask)),
            Vec3::new(10.5, 5.0, -0.9)
        );
    }
}
