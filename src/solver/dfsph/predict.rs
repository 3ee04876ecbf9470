//! Stage `dfsph_predict`, the CPU mirror of `shaders/solver/dfsph/dfsph_predict.wgsl` (its header gives the inputs,
//! the outputs and a worked example); [`super`] describes the method (Bender & Koschier 2015,
//! 2017) and how the stages chain into a step.

use glam::Vec3;

/// Stage `dfsph_predict`: v* = v + a dt.
pub fn dfsph_predict(vel: &mut [Vec3], acc: &[Vec3], dt: f32) {
    for (v, a) in vel.iter_mut().zip(acc) {
        *v += *a * dt;
    }
}

/// The rest of stage `dfsph_predict` with obstacle friction: each particle's obstacle power
/// gains the power `friction` of the substep's friction (`dfsph_accel`'s), weighted by the
/// substep's share of the step `w` = dt_sub/dt, so that the energy check's power × dt counts
/// the substep's work a_f·v_b dt_sub. Nothing happens without friction (`friction` empty).
/// Worked example: power 0.5, friction 2, two substeps (w = 0.5) → 1.5.
pub fn credit_friction(power: &mut [f32], friction: &[f32], w: f32) {
    for (p, f) in power.iter_mut().zip(friction) {
        *p += *f * w;
    }
}
