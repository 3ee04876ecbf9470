"""gpu-sph from Python: the SPH fluid simulator and its neighbour library, with numpy arrays.

A run is the command line's headless run stepped on request: the same scene files, the same
settings (a scene file's keys, which are the flags' names with ``_`` for ``-``), the same checks
and the same one-line messages, raised as ``ValueError``; a step that fails the divergence
checks raises :class:`DivergenceError`. A Python run and ``gpu-sph --headless`` with the same
scene and flags end in the same bits.

>>> import gpu_sph
>>> sim = gpu_sph.Simulation.from_scene("dam-break", particles=2000, path="cpu")
>>> sim.run(until=0.01)
>>> sim.positions().shape
(2000, 3)

The neighbour functions answer "closer than r" exactly as the simulator's grid does: the
squared distance in float32, compared strictly (``d² < r²``).

>>> import numpy as np
>>> pts = np.array([[0, 0, 0], [0.5, 0, 0], [3, 0, 0]], dtype=np.float32)
>>> gpu_sph.pairs(pts, 1.0).tolist()
[[0, 1]]
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Tuple, Union

import numpy as np

from . import _native
from ._native import DivergenceError

__all__ = [
    "Simulation",
    "DivergenceError",
    "neighbours",
    "pairs",
    "query",
    "__version__",
]

__version__: str = _native.__version__

PathLike = Union[str, "os.PathLike[str]"]


def _settings(settings: Dict[str, Any]) -> str:
    def plain(v: Any) -> Any:
        if isinstance(v, np.ndarray):
            return plain(v.tolist())
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, float) and not np.isfinite(v):
            # JSON has no NaN: given as the command line's word, its flag's parser says why.
            return str(v)
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, os.PathLike):
            return os.fspath(v)
        return v

    try:
        return json.dumps({k: plain(v) for k, v in settings.items()}, allow_nan=False)
    except TypeError as e:
        raise ValueError(
            f"settings must be numbers, strings, booleans or [x, y, z]: {e}"
        ) from None


def _path_settings(path: str) -> Dict[str, bool]:
    if path == "auto":
        return {}
    if path == "cpu":
        return {"cpu": True}
    if path == "gpu":
        return {"gpu": True}
    raise ValueError(
        f"path must be 'auto', 'cpu' or 'gpu', got {path!r}: 'auto' takes the GPU on a real "
        "GPU and the CPU reference on a software adapter, as the command line does"
    )


class Simulation:
    """A fluid run, stepped on request.

    Create one with :meth:`from_scene` or :meth:`resume`. Arrays come back as copies in input
    order (the order the scene or file gave the particles; emitted particles follow).

    >>> sim = Simulation.from_scene("dam-break", particles=2000, path="cpu", solver="wcsph")
    >>> sim.step(5)
    >>> sim.steps, sim.time > 0
    (5, True)
    >>> sorted(sim.stats())[:3]
    ['density_error_max', 'density_error_mean', 'density_max']
    """

    def __init__(self, native: Any) -> None:
        if not isinstance(native, _native.Session):
            raise TypeError(
                "create a Simulation with Simulation.from_scene(...) or Simulation.resume(path)"
            )
        self._s = native

    @classmethod
    def from_scene(
        cls,
        scene: Union[PathLike, Dict[str, Any]] = "dam-break",
        *,
        particles: Optional[int] = None,
        solver: str = "dfsph",
        path: str = "auto",
        **settings: Any,
    ) -> "Simulation":
        """A run of ``scene``: a built-in scene's name (``"dam-break"``), a scene file's path
        (``"scenes/dam-break.json"``), or a scene file's contents as a dict.

        ``particles`` is ``-n`` (it rescales a scene file), ``solver`` ``--solver``, ``path``
        ``"auto"``, ``"cpu"`` or ``"gpu"``; every other keyword is a scene-file key (the flag's
        name with ``_``): ``max_dt=0.002``, ``gravity=-9.81``, ``kinematic_viscosity=1e-6``.

        >>> column = {"shape": {"box": {"min": [0, 0, 0], "max": [0.1, 0.2, 0.1]}}}
        >>> scene = {"tank": {"min": [0, 0, 0], "max": [0.4, 0.3, 0.1]}, "fluid": [column],
        ...          "physics": {"spacing": 0.01}}
        >>> len(Simulation.from_scene(scene, path="cpu").ids())
        2000
        """
        s: Dict[str, Any] = dict(settings)
        s.update(_path_settings(path))
        s["solver"] = solver
        if particles is not None:
            s["particles"] = particles
        if isinstance(scene, dict):
            try:
                text = json.dumps(scene)
            except TypeError as e:
                raise ValueError(f"the scene dict is not JSON: {e}") from None
            native = _native.Session.create(None, text, "the scene dict", _settings(s))
        else:
            native = _native.Session.create(os.fspath(scene), None, "", _settings(s))
        return cls(native)

    @classmethod
    def resume(cls, checkpoint: PathLike, *, path: str = "auto", **settings: Any) -> "Simulation":
        """Continues the run a checkpoint holds (written by :meth:`checkpoint` or by the command
        line's ``--checkpoint-every``). Only the path and the divergence checks may be given.
        """
        s: Dict[str, Any] = dict(settings)
        s.update(_path_settings(path))
        return cls(_native.Session.resume(os.fspath(checkpoint), _settings(s)))

    def step(self, k: int = 1) -> None:
        """Takes ``k`` steps (the GIL is released meanwhile)."""
        self._s.step(_step_count("k", k))

    def run(self, until: float) -> None:
        """Steps until the first step that reaches simulated time ``until`` (s)."""
        self._s.run_until(float(until))

    @property
    def time(self) -> float:
        """Simulated time, s."""
        return self._s.time()

    @property
    def steps(self) -> int:
        """Steps taken."""
        return self._s.steps()

    @property
    def dt(self) -> float:
        """The last step's time step, s (0 before the first step)."""
        return self._s.dt()

    @property
    def geometry(self) -> str:
        """The run's description (the command line's second line)."""
        return self._s.geometry()

    @property
    def adapter(self) -> Optional[str]:
        """The GPU the run steps on, or ``None`` on the CPU path."""
        return self._s.adapter()

    def stats(self) -> Optional[Dict[str, Any]]:
        """The last step's ``--stats`` row as a dict (``None`` before the first step)."""
        return json.loads(self._s.stats_json())

    def _state(self) -> Tuple[np.ndarray, ...]:
        return self._s.state()

    def arrays(self) -> Dict[str, np.ndarray]:
        """Every per-particle array from one read of the state: ``positions``, ``velocities``,
        ``densities``, ``pressures`` and ``ids`` (each accessor below reads the whole state
        back on its own, so use this when you want more than one).

        >>> sim = Simulation.from_scene("dam-break", particles=1000, path="cpu")
        >>> sorted(sim.arrays())
        ['densities', 'ids', 'positions', 'pressures', 'velocities']
        """
        names = ("positions", "velocities", "densities", "pressures", "ids")
        return dict(zip(names, self._state()))

    def positions(self) -> np.ndarray:
        """Positions, m: (N, 3) float32, input order."""
        return self._state()[0]

    def velocities(self) -> np.ndarray:
        """Velocities, m/s: (N, 3) float32, input order."""
        return self._state()[1]

    def densities(self) -> np.ndarray:
        """Densities of the last step, kg/m³: (N,) float32, input order."""
        return self._state()[2]

    def pressures(self) -> np.ndarray:
        """The equation of state's pressure of each density, Pa: (N,) float32, input order
        (WCSPH's own pressure; for DFSPH a measure of its density error)."""
        return self._state()[3]

    def ids(self) -> np.ndarray:
        """Each particle's index in the input: (N,) uint32, so ``0..N`` in input order."""
        return self._state()[4]

    def set_velocities(self, velocities: Any) -> None:
        """Replaces the velocities with an (N, 3) array in input order (m/s)."""
        v = np.ascontiguousarray(velocities, dtype=np.float32)
        if v.ndim != 2 or v.shape[1:] != (3,):
            raise ValueError(f"velocities must be an (N, 3) array, got shape {v.shape}")
        self._s.set_velocities(v)

    def export(self, path: PathLike) -> None:
        """Writes the particles to ``path``, in the format its extension names: ``.ply`` or
        ``.csv`` (as ``--output``), ``.vtu`` (ParaView) or ``.bgeo`` (Houdini)."""
        self._s.export(os.fspath(path))

    def export_frame(self, directory: PathLike, format: str = "ply") -> str:
        """Writes the current step's frame into ``directory`` as ``--export-dir`` with
        ``--export-format`` does (``frame_<step>.<ext>``); a ``"vtu"`` frame joins
        ``frames.pvd`` with the current simulated time, so stepping and exporting in a loop
        writes the series a headless run writes. Returns the frame's path."""
        return str(self._s.export_frame(os.fspath(directory), str(format)))

    def checkpoint(self, path: PathLike) -> None:
        """Writes a checkpoint to ``path``; :meth:`resume` continues from it bit for bit."""
        self._s.checkpoint(os.fspath(path))

    def verify(self, steps: int = 1, tolerance: float = 0.0) -> Dict[str, Any]:
        """``--verify``: ``steps`` steps from the current state on the GPU and on the CPU
        reference, every stage compared; the report as a dict (``report["pass"]``). Needs a
        GPU adapter (lavapipe will do)."""
        return json.loads(self._s.verify(_step_count("steps", steps), float(tolerance)))

    def __repr__(self) -> str:
        where = self.adapter or "CPU path"
        return f"<gpu_sph.Simulation {len(self.ids())} particles, step {self.steps}, t = {self.time:.6f} s, {where}>"


def _step_count(name: str, k: Any) -> int:
    """``k`` as a count of steps for the native side's u64, refused in Python's words (a
    negative or 2**64 step count was an OverflowError naming no argument)."""
    if not isinstance(k, (int, np.integer)) or not 0 <= k < 2**64:
        raise ValueError(f"{name} must be a whole number of steps from 0 to 2**64 - 1, got {k!r}")
    return int(k)


def _points(points: Any, what: str) -> np.ndarray:
    p = np.ascontiguousarray(points, dtype=np.float32)
    if p.ndim != 2 or p.shape[1:] not in ((3,), (2,)):
        raise ValueError(f"{what} must be an (N, 3) or (N, 2) array, got shape {p.shape}")
    return p


def neighbours(points: Any, radius: float) -> Tuple[np.ndarray, np.ndarray]:
    """For every point, the others closer than ``radius``, as compressed rows ``(indptr,
    indices)`` (int64; row ``i`` is ``indices[indptr[i]:indptr[i + 1]]``, ascending). Points are
    read as float32: an (N, 3) array, or (N, 2) for points in a plane (the 2D grid, 9 cells a
    query; ``pairs`` and ``query`` take either too, queries as many columns as the points).

    >>> indptr, indices = neighbours([[0, 0, 0], [0.5, 0, 0], [3, 0, 0]], 1.0)
    >>> indptr.tolist(), indices.tolist()
    ([0, 1, 2, 2], [1, 0])
    """
    return _native.neighbours(_points(points, "points"), float(radius))


def pairs(points: Any, radius: float) -> np.ndarray:
    """Every pair ``i < j`` closer than ``radius``: an (M, 2) int64 array, ascending (as
    ``scipy.spatial.cKDTree.query_pairs(r, output_type="ndarray")`` up to order and to pairs
    within float32 rounding of ``radius``)."""
    return _native.pairs(_points(points, "points"), float(radius))


def query(points: Any, queries: Any, radius: float) -> Tuple[np.ndarray, np.ndarray]:
    """For each query point, the points closer than ``radius``: ``(indptr, indices)``.

    >>> query([[0, 0, 0], [1, 0, 0]], [[0.4, 0, 0]], 0.5)[1].tolist()
    [0]
    """
    return _native.query(
        _points(points, "points"), _points(queries, "queries"), float(radius)
    )
