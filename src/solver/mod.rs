//! The solvers, each in a home of its own: its CPU stages (the mirrors of its WGSL stages in
//! `shaders/solver/<name>/`), its GPU passes and the state it carries between steps.
//!
//! [`dfsph`]: the solvers' stages, DFSPH's (Bender & Koschier 2015, 2017) with its two solves and
//! WCSPH's (Becker & Teschner 2007), the same stages with the Tait equation of state's pressure
//! in place of the solves.

pub mod dfsph;
