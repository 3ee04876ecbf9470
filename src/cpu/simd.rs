//! CPU code compiled for AVX2 where the CPU has it, chosen at run time.
//!
//! The build targets baseline x86-64 (SSE2), where `f32::floor` is a libm call and LLVM
//! vectorises four lanes at most. [`best`] runs a piece of code compiled with AVX2 enabled
//! when the CPU has it, so the code it inlines gets `vroundss` floors and eight-wide vectors;
//! the intrinsic lane forms (the poly6 density's) test [`has_avx2`] themselves. Enabling
//! AVX2 never changes a result: Rust never contracts a multiply and an add into an FMA, and
//! AVX's float operations round as SSE's do.

/// Whether the CPU has AVX2 (std caches the answer).
#[inline]
pub fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Runs `f` compiled for AVX2 where the CPU has it (with what `f` inlines), else as it is.
/// Worked example: `best(|| groups(&pos, &sp))` groups with inlined floors on an AVX2 CPU,
/// and the same groups, through libm's `floorf`, elsewhere.
#[inline]
pub fn best<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: AVX2 is present, checked just above.
        return unsafe { avx2(f) };
    }
    f()
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Eight-lane pieces of the intrinsic walk (the poly6 density's): each the portable code's
/// operations in its order, one lane per group member.
#[cfg(target_arch = "x86_64")]
pub mod lanes {
    use glam::Vec3;
    use std::arch::x86_64::*;

    /// `v` in every lane, per component.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn splat3(v: Vec3) -> [__m256; 3] {
        [v.x, v.y, v.z].map(|c| _mm256_set1_ps(c))
    }

    /// |d|² as `distance2` computes it: (dx² + dy²) + dz².
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn norm2(d: [__m256; 3]) -> __m256 {
        _mm256_add_ps(
            _mm256_add_ps(_mm256_mul_ps(d[0], d[0]), _mm256_mul_ps(d[1], d[1])),
            _mm256_mul_ps(d[2], d[2]),
        )
    }

    /// The x, y and z of `v[idx[l]]` in lane l: one 16-byte load a lane and a transpose, where
    /// gathers were the replays' largest cost (perf, AMD Zen 4); an index at the slice's last
    /// element, whose 16 bytes would run past its end, takes gathers. Each lane holds the
    /// element's bits.
    ///
    /// # Safety
    /// The CPU must support AVX2, and every index must be below `v.len()`.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn load3(v: &[Vec3], idx: &[u32; 8]) -> [__m256; 3] {
        let base = v.as_ptr().cast::<f32>();
        let last = v.len() as u32 - 1;
        // SAFETY: every index is below v.len() (the caller's promise); a 16-byte load at an
        // index below the last reads within the slice; the gathers read 3 idx + axis < 3 len.
        unsafe {
            let i = _mm256_loadu_si256(idx.as_ptr().cast());
            let beyond = _mm256_cmpgt_epi32(i, _mm256_set1_epi32(last as i32 - 1));
            if _mm256_movemask_epi8(beyond) != 0 {
                let i3 = _mm256_add_epi32(i, _mm256_add_epi32(i, i));
                let one = _mm256_set1_epi32(1);
                let i3y = _mm256_add_epi32(i3, one);
                let i3z = _mm256_add_epi32(i3y, one);
                return [
                    _mm256_i32gather_ps::<4>(base, i3),
                    _mm256_i32gather_ps::<4>(base, i3y),
                    _mm256_i32gather_ps::<4>(base, i3z),
                ];
            }
            // Rows l and l + 4 share a register: [xl yl zl . | xl+4 yl+4 zl+4 .].
            let mut r = [_mm256_setzero_ps(); 4];
            for (l, row) in r.iter_mut().enumerate() {
                let lo = _mm_loadu_ps(base.add(3 * idx[l] as usize));
                let hi = _mm_loadu_ps(base.add(3 * idx[l + 4] as usize));
                *row = _mm256_set_m128(hi, lo);
            }
            // [x0 x1 y0 y1], [z0 z1 . .], [x2 x3 y2 y3], [z2 z3 . .] in each half.
            let (a, b) = (
                _mm256_unpacklo_ps(r[0], r[1]),
                _mm256_unpackhi_ps(r[0], r[1]),
            );
            let (c, d) = (
                _mm256_unpacklo_ps(r[2], r[3]),
                _mm256_unpackhi_ps(r[2], r[3]),
            );
            let (a, b) = (_mm256_castps_pd(a), _mm256_castps_pd(b));
            let (c, d) = (_mm256_castps_pd(c), _mm256_castps_pd(d));
            let x = _mm256_castpd_ps(_mm256_unpacklo_pd(a, c));
            let y = _mm256_castpd_ps(_mm256_unpackhi_pd(a, c));
            let z = _mm256_castpd_ps(_mm256_unpacklo_pd(b, d));
            [x, y, z]
        }
    }

    /// The lanes whose bit is set in `bits` (bit l: lane l) as an all-ones mask, the others 0.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn mask_of(bits: u32) -> __m256 {
        let lane_bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        let set = _mm256_and_si256(_mm256_set1_epi32(bits as i32), lane_bits);
        _mm256_castsi256_ps(_mm256_cmpeq_epi32(set, lane_bits))
    }

    /// For each mask of eight lanes, the indices of its set lanes in ascending order, then
    /// zeros: the permutation that packs a mask's lanes to the front.
    static LEFT_PACK: [[u32; 8]; 256] = {
        let mut t = [[0u32; 8]; 256];
        let mut m = 0;
        while m < 256 {
            let (mut l, mut n) = (0, 0);
            while l < 8 {
                if m & (1 << l) != 0 {
                    t[m][n] = l as u32;
                    n += 1;
                }
                l += 1;
            }
            m += 1;
        }
        t
    };

    /// The permutation (`_mm256_permutevar8x32_*`) that moves the lanes set in `bits` to the
    /// front in ascending order: AVX2's form of AVX-512's compress. Worked example: bits
    /// 0b1010_0100 → lanes 2, 5, 7, then 0s.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn left_pack(bits: u32) -> __m256i {
        // SAFETY: the row holds eight u32, one 256-bit load.
        unsafe { _mm256_loadu_si256(LEFT_PACK[(bits & 0xff) as usize].as_ptr().cast()) }
    }

    /// The un-normalised poly6 term (1 − r²/h²)³ with 1 − r²/h² clamped at 0 by a compare,
    /// as the portable lanes do (an exact 0 beyond h; the caller masks r² < h²).
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn poly6(r2: __m256, inv_h2: __m256) -> __m256 {
        let q = _mm256_sub_ps(_mm256_set1_ps(1.0), _mm256_mul_ps(r2, inv_h2));
        let q = _mm256_and_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(q, _mm256_setzero_ps()), q);
        _mm256_mul_ps(_mm256_mul_ps(q, q), q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn left_pack_moves_a_masks_lanes_to_the_front_in_order() {
        use std::arch::x86_64::*;
        if !has_avx2() {
            return;
        }
        for bits in 0u32..256 {
            let want: Vec<u32> = (0..8).filter(|l| bits & (1 << l) != 0).collect();
            let mut got = [0u32; 8];
            let mut mask = [0u32; 8];
            // SAFETY: AVX2 is present; each store covers exactly the eight lanes of an array.
            unsafe {
                let v = _mm256_setr_epi32(10, 11, 12, 13, 14, 15, 16, 17);
                let packed = _mm256_permutevar8x32_epi32(v, lanes::left_pack(bits));
                _mm256_storeu_si256(got.as_mut_ptr().cast(), packed);
                _mm256_storeu_si256(
                    mask.as_mut_ptr().cast(),
                    _mm256_castps_si256(lanes::mask_of(bits)),
                );
            }
            let got: Vec<u32> = got[..want.len()].iter().map(|v| v - 10).collect();
            assert_eq!(got, want, "bits {bits:#b}");
            for (l, m) in mask.iter().enumerate() {
                assert_eq!(*m, if bits & (1 << l) != 0 { u32::MAX } else { 0 });
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn load3_reads_each_lanes_element_also_the_last() {
        use glam::Vec3;
        use std::arch::x86_64::*;
        if !has_avx2() {
            return;
        }
        let v: Vec<Vec3> = (0..20)
            .map(|i| Vec3::new(i as f32, -(i as f32), 0.5 * i as f32))
            .collect();
        for idx in [[3u32, 0, 7, 7, 12, 1, 18, 2], [19, 0, 5, 6, 19, 4, 3, 2]] {
            let mut got = [[0f32; 8]; 3];
            // SAFETY: AVX2 is present; every index is below v.len(); each store covers exactly
            // the eight lanes of an array.
            unsafe {
                let lanes = lanes::load3(&v, &idx);
                for a in 0..3 {
                    _mm256_storeu_ps(got[a].as_mut_ptr(), lanes[a]);
                }
            }
            for (l, &i) in idx.iter().enumerate() {
                let want = v[i as usize];
                assert_eq!(
                    [got[0][l], got[1][l], got[2][l]],
                    want.to_array(),
                    "lane {l}"
                );
            }
        }
    }

    #[test]
    fn best_returns_what_the_code_returns() {
        let x = [1.5f32, -2.25, 3.0];
        let want: f32 = x.iter().map(|v| v.floor()).sum();
        assert_eq!(best(|| x.iter().map(|v| v.floor()).sum::<f32>()), want);
        assert_eq!(want, 1.0);
    }
}
