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

    #[test]
    fn best_returns_what_the_code_returns() {
        let x = [1.5f32, -2.25, 3.0];
        let want: f32 = x.iter().map(|v| v.floor()).sum();
        assert_eq!(best(|| x.iter().map(|v| v.floor()).sum::<f32>()), want);
        assert_eq!(want, 1.0);
    }
}
