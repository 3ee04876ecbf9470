//! WCSPH's CPU stages, the mirrors of `shaders/wcsph/` file for file: weakly compressible SPH
//! (Monaghan 1994; Becker & Teschner 2007's Tait equation of state), chained into a step by
//! [`step`]: `walls` (density with the tank's images, and the Tait pressure of [`pressure`]),
//! `obstacle_density`, `forces`, `obstacle_forces` ([`obstacles`]), `timestep`, `integrate`.

pub mod forces;
pub mod integrate;
pub mod obstacles;
pub mod pressure;
pub mod step;
pub mod timestep;
pub mod walls;
