//! `gpu_sph._native`: the extension module under the Python package `gpu_sph` (python/gpu_sph),
//! which wraps it in `Simulation` and the neighbour functions. A run is
//! `gpu_sph::app::session::Session`, the command line's headless run stepped on request; the
//! neighbour queries are `gpu_sph::neighbours::NeighbourSearch`. Bad input raises `ValueError`
//! with the command line's one-line message, a diverged step `gpu_sph.DivergenceError`, a run
//! the host cannot hold `MemoryError`, and a missing or failing GPU `RuntimeError`. Stepping
//! releases the GIL.

use std::path::PathBuf;
use std::sync::Mutex;

use glam::{Vec2, Vec3};
use gpu_sph::Error;
use gpu_sph::app::session::{SceneGiven, Session};
use gpu_sph::neighbours::{Csr, NeighbourSearch};
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray2};
use pyo3::create_exception;
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    _native,
    DivergenceError,
    PyRuntimeError,
    "A step failed the divergence checks; the message names the step."
);

/// The Python exception of a gpu-sph error, with its one-line message.
fn raise(e: Error) -> PyErr {
    let line = gpu_sph::app::one_line(&e.to_string());
    match e {
        Error::Unstable(_) | Error::RunFailed(_) => DivergenceError::new_err(line),
        Error::InvalidInput(_) | Error::File { .. } | Error::LimitExceeded(_) => {
            PyValueError::new_err(line)
        }
        Error::OutOfMemory(_) => PyMemoryError::new_err(line),
        _ => PyRuntimeError::new_err(line),
    }
}

fn settings(json: &str) -> PyResult<serde_json::Map<String, serde_json::Value>> {
    match serde_json::from_str(json) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        _ => Err(PyValueError::new_err(
            "settings must be a dict of scene-file keys to numbers, strings, booleans or [x, y, z]",
        )),
    }
}

/// An (N, 3) float32 array of `v`.
fn vec3s<'py>(py: Python<'py>, v: &[Vec3]) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let flat: Vec<f32> = v.iter().flat_map(|p| p.to_array()).collect();
    PyArray1::from_vec(py, flat).reshape([v.len(), 3])
}

/// The rows of an (N, 3) float32 array, read as the library's points.
fn points(a: &PyReadonlyArray2<'_, f32>, what: &str) -> PyResult<Vec<Vec3>> {
    let view = a.as_array();
    if view.ncols() != 3 {
        return Err(PyValueError::new_err(format!(
            "{what} must be an (N, 3) array, got shape {:?}",
            view.shape()
        )));
    }
    Ok(view
        .rows()
        .into_iter()
        .map(|r| Vec3::new(r[0], r[1], r[2]))
        .collect())
}

/// A run stepped on request (the Python class `Simulation` wraps it).
#[pyclass(module = "gpu_sph._native", name = "Session")]
struct PySession {
    inner: Mutex<Session>,
}

impl PySession {
    fn with<T>(&self, f: impl FnOnce(&mut Session) -> gpu_sph::Result<T>) -> PyResult<T> {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut s).map_err(raise)
    }
}

#[pymethods]
impl PySession {
    /// A run of the built-in scene or scene file `name`, or of the scene file's JSON `text`
    /// (called `label` in messages), with `settings` a JSON object of scene-file keys.
    #[staticmethod]
    #[pyo3(signature = (name, text, label, settings_json))]
    fn create(
        py: Python<'_>,
        name: Option<String>,
        text: Option<String>,
        label: String,
        settings_json: &str,
    ) -> PyResult<Self> {
        let s = settings(settings_json)?;
        let scene = match (name, text) {
            (_, Some(text)) => SceneGiven::Text { text, name: label },
            (Some(name), None) => SceneGiven::Name(name),
            (None, None) => SceneGiven::Name("dam-break".into()),
        };
        let session = py.detach(|| Session::new(scene, &s)).map_err(raise)?;
        Ok(Self {
            inner: Mutex::new(session),
        })
    }

    /// Continues the run the checkpoint at `path` holds.
    #[staticmethod]
    fn resume(py: Python<'_>, path: PathBuf, settings_json: &str) -> PyResult<Self> {
        let s = settings(settings_json)?;
        let session = py.detach(|| Session::resume(&path, &s)).map_err(raise)?;
        Ok(Self {
            inner: Mutex::new(session),
        })
    }

    fn step(&self, py: Python<'_>, k: u64) -> PyResult<()> {
        py.detach(|| self.with(|s| s.step(k)))
    }

    fn run_until(&self, py: Python<'_>, t: f64) -> PyResult<()> {
        py.detach(|| self.with(|s| s.run_until(t)))
    }

    fn time(&self) -> PyResult<f64> {
        self.with(|s| Ok(s.time()))
    }

    fn steps(&self) -> PyResult<u64> {
        self.with(|s| Ok(s.steps()))
    }

    fn dt(&self) -> PyResult<f64> {
        self.with(|s| Ok(s.dt()))
    }

    fn geometry(&self) -> PyResult<String> {
        self.with(|s| Ok(s.geometry().to_string()))
    }

    fn adapter(&self) -> PyResult<Option<String>> {
        self.with(|s| Ok(s.adapter()))
    }

    /// The last step's `--stats` row as JSON (`null` before the first step).
    fn stats_json(&self) -> PyResult<String> {
        self.with(|s| Ok(serde_json::to_string(&s.stats()).unwrap_or_default()))
    }

    /// Positions, velocities, densities, pressures and ids, in input order.
    #[allow(clippy::type_complexity)]
    fn state<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(
        Bound<'py, PyArray2<f32>>,
        Bound<'py, PyArray2<f32>>,
        Bound<'py, PyArray1<f32>>,
        Bound<'py, PyArray1<f32>>,
        Bound<'py, PyArray1<u32>>,
    )> {
        let (snap, fp) = py.detach(|| self.with(|s| Ok((s.snapshot()?, *s.fluid_params()))))?;
        let st = &snap.state;
        let pressure = gpu_sph::solver::dfsph::tait_pressures(&snap.density, &fp);
        Ok((
            vec3s(py, &st.to_input_order(&st.pos))?,
            vec3s(py, &st.to_input_order(&st.vel))?,
            PyArray1::from_vec(py, st.to_input_order(&snap.density)),
            PyArray1::from_vec(py, st.to_input_order(&pressure)),
            PyArray1::from_vec(py, st.to_input_order(&st.id)),
        ))
    }

    fn set_velocities(&self, py: Python<'_>, v: PyReadonlyArray2<'_, f32>) -> PyResult<()> {
        let v = points(&v, "velocities")?;
        py.detach(|| self.with(|s| s.set_velocities(&v)))
    }

    fn export(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| self.with(|s| s.export(&path)))
    }

    fn export_frame(&self, py: Python<'_>, dir: PathBuf, format: &str) -> PyResult<PathBuf> {
        use clap::ValueEnum;
        let format = gpu_sph::series::ExportFormat::from_str(format, false).map_err(|_| {
            PyValueError::new_err(format!(
                "format must be 'ply', 'vtu' or 'bgeo' (as --export-format), got {format:?}"
            ))
        })?;
        py.detach(|| self.with(|s| s.export_frame(&dir, format)))
    }

    fn checkpoint(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| self.with(|s| s.checkpoint(&path)))
    }

    /// The verification report as JSON.
    fn verify(&self, py: Python<'_>, steps: u64, tolerance: f64) -> PyResult<String> {
        let report = py.detach(|| self.with(|s| s.verify(steps, tolerance)))?;
        Ok(serde_json::to_string(&report).unwrap_or_default())
    }
}

/// Points of the neighbour functions: an (N, 3) array, or (N, 2) for points in the plane.
enum Cloud {
    Space(Vec<Vec3>),
    Plane(Vec<Vec2>),
}

/// The rows of an (N, 3) or (N, 2) float32 array.
fn cloud(a: &PyReadonlyArray2<'_, f32>, what: &str) -> PyResult<Cloud> {
    let view = a.as_array();
    match view.ncols() {
        3 => points(a, what).map(Cloud::Space),
        2 => Ok(Cloud::Plane(
            view.rows()
                .into_iter()
                .map(|r| Vec2::new(r[0], r[1]))
                .collect(),
        )),
        _ => Err(PyValueError::new_err(format!(
            "{what} must be an (N, 3) or (N, 2) array, got shape {:?}",
            view.shape()
        ))),
    }
}

fn search(pts: &Cloud, radius: f32) -> PyResult<NeighbourSearch> {
    match pts {
        Cloud::Space(p) => NeighbourSearch::new(p, radius),
        Cloud::Plane(p) => NeighbourSearch::planar(p, radius),
    }
    .map_err(raise)
}

/// Compressed rows as (indptr, indices), int64.
fn csr<'py>(py: Python<'py>, rows: Csr) -> (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>) {
    let widen = |v: Vec<u32>| v.into_iter().map(i64::from).collect::<Vec<_>>();
    (
        PyArray1::from_vec(py, widen(rows.offsets)),
        PyArray1::from_vec(py, widen(rows.indices)),
    )
}

/// For every point, the others closer than `radius`: (indptr, indices).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn neighbours<'py>(
    py: Python<'py>,
    points_: PyReadonlyArray2<'py, f32>,
    radius: f32,
) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>)> {
    let pts = cloud(&points_, "points")?;
    let rows = py.detach(|| search(&pts, radius)?.within().map_err(raise))?;
    Ok(csr(py, rows))
}

/// Every pair i < j closer than `radius`, as an (M, 2) int64 array, ascending.
#[pyfunction]
fn pairs<'py>(
    py: Python<'py>,
    points_: PyReadonlyArray2<'py, f32>,
    radius: f32,
) -> PyResult<Bound<'py, PyArray2<i64>>> {
    let pts = cloud(&points_, "points")?;
    let list = py.detach(|| search(&pts, radius).map(|s| s.pairs()))?;
    let flat: Vec<i64> = list
        .iter()
        .flat_map(|&(i, j)| [i64::from(i), i64::from(j)])
        .collect();
    PyArray1::from_vec(py, flat).reshape([list.len(), 2])
}

/// For each query point, the points closer than `radius`: (indptr, indices).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn query<'py>(
    py: Python<'py>,
    points_: PyReadonlyArray2<'py, f32>,
    queries: PyReadonlyArray2<'py, f32>,
    radius: f32,
) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>)> {
    let pts = cloud(&points_, "points")?;
    let rows = match cloud(&queries, "queries")? {
        Cloud::Space(q) if matches!(pts, Cloud::Space(_)) => {
            py.detach(|| search(&pts, radius)?.query(&q).map_err(raise))?
        }
        Cloud::Plane(q) if matches!(pts, Cloud::Plane(_)) => {
            py.detach(|| search(&pts, radius)?.query_planar(&q).map_err(raise))?
        }
        _ => {
            return Err(PyValueError::new_err(
                "queries must have as many columns as points (2 for points in a plane, 3 in space)",
            ));
        }
    };
    Ok(csr(py, rows))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySession>()?;
    m.add("DivergenceError", m.py().get_type::<DivergenceError>())?;
    m.add_function(wrap_pyfunction!(neighbours, m)?)?;
    m.add_function(wrap_pyfunction!(pairs, m)?)?;
    m.add_function(wrap_pyfunction!(query, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
