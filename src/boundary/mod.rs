//! The boundary models: what a solver's walk asks of a wall, one interface per language and
//! two implementations.
//!
//! - [`tank`]: the tank's walls as mirror images (Colagrossi & Landrini 2003), found inside the
//!   fluid walk; WGSL twin `shaders/boundary_tank.wgsl`.
//! - [`particles`]: obstacles as boundary particles (Akinci et al. 2012) in a grid of their
//!   own, walked after the fluid; WGSL twin `shaders/boundary.wgsl` (bind group 1).
//!
//! For each quantity a solver sums (density and DFSPH's α, the density change rate, the
//! pressure and viscous accelerations), each model gives its share: the tank per image, through
//! the solver's own pair term, inside the walk (the images join the fluid's sums in the walk's
//! order, which the bits rely on); the obstacles as a sum over their particles near x, which the
//! stage adds at one fixed point. The walks name neither mirrors nor masks: they ask
//! [`walls`] for a particle's surroundings (`near`), a neighbour's images (ids, 0 the
//! neighbour itself), where each lies and how its vectors and velocity turn. A change of a
//! wall model is a change of its file in each language; `docs/architecture.md` has the worked
//! example of the walls' viscous term.

pub mod particles;
pub mod tank;

/// The tank's walls as the walks reach them: the one line that picks the wall model (its WGSL
/// twin is picked by `shaders::BOUNDARY_TANK`).
pub use tank as walls;

pub use particles::*;
