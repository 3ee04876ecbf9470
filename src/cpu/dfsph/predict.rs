//! Stage `dfsph_predict`, the CPU mirror of `shaders/dfsph/dfsph_predict.wgsl` (its header gives the inputs,
//! the outputs and a worked example); [`super`] describes the method (Bender & Koschier 2015,
//! 2017) and how the stages chain into a step.

use glam::Vec3;

/// Stage `dfsph_predict`: v* = v + a dt.
pub fn dfsph_predict(vel: &mut [Vec3], acc: &[Vec3], dt: f32) {
    for (v, a) in vel.iter_mut().zip(acc) {
        *v += *a * dt;
    }
}
