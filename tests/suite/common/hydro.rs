//! The hydrostatic law read from particles: layer means of pressure against depth and their
//! least-squares slope (the free surface of SPH is blurred over about h, so the depth origin is
//! fitted rather than taken from the topmost particle).

use std::collections::BTreeMap;

/// Bins (depth, pressure) samples into layers one spacing `s` thick (one particle's SPH pressure
/// is noisy, the hydrostatic law is about the field), keeps the layers whose mean depth is at
/// least `min_depth`, and returns the least-squares slope dp/dd through their means with the
/// number of layers it used.
pub fn layer_slope(
    samples: impl IntoIterator<Item = (f64, f64)>,
    s: f64,
    min_depth: f64,
) -> (f64, usize) {
    let mut layers: BTreeMap<i64, (f64, f64, usize)> = BTreeMap::new();
    for (d, p) in samples {
        let e = layers.entry((d / s).floor() as i64).or_default();
        e.0 += d;
        e.1 += p;
        e.2 += 1;
    }
    let pts: Vec<(f64, f64)> = layers
        .values()
        .map(|&(d, p, c)| (d / c as f64, p / c as f64))
        .filter(|&(d, _)| d >= min_depth)
        .collect();
    let n = pts.len() as f64;
    let md = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let mp = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let slope = pts.iter().map(|&(d, p)| (d - md) * (p - mp)).sum::<f64>()
        / pts.iter().map(|&(d, _)| (d - md) * (d - md)).sum::<f64>();
    (slope, pts.len())
}
