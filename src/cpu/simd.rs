//! CPU code compiled for AVX2 where the CPU has it, chosen at run time.
//!
//! The build targets baseline x86-64 (SSE2), where `f32::floor` is a libm call and LLVM
//! vectorises four lanes at most. [`best`] runs a piece of code compiled with AVX2 enabled
//! when the CPU has it, so the code it inlines gets `vroundss` floors and eight-wide vectors;
//! the intrinsic lane forms (density, forces, walls) test [`has_avx2`] themselves. Enabling
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
