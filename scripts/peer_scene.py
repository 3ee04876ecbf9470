"""The SPlisHSPlasH scene the peer_*.py scripts share: the shared peers' conventions
(../shared/peers/splishsplash.py) in one place."""


def wcsph_dt(s, c, max_dt):
    """The shared scene's fixed WCSPH step: 0.4 h / c with h = 2 s, at most `max_dt`."""
    return min(max_dt, 0.4 * 2.0 * s / c)


def scene(peer, *, dfsph, s, g, rho0, c, viscosity, max_dt, tank_min, tank_max, fluid):
    """A scene for SPlisHSPlasH 2.19 in a closed box tank from `tank_min` to `tank_max` (the walls'
    inner faces): a UnitBox wall sampled with Akinci boundary particles (samplingMode 1), no
    boundary viscosity. DFSPH as in the shared scene (min 2 / max 100 iterations, 0.05% density
    error, 0.1% divergence error, divergence solver on) on the CFL step (cflMethod 1, factor 1,
    at most `max_dt`); WCSPH with the Tait stiffness rho0 c^2 / 7 on the fixed step
    `wcsph_dt`. `fluid`: the scene's fluid entries, e.g.
    {"FluidBlocks": [...]} or {"FluidModels": [...]}."""
    tank = [hi - lo for lo, hi in zip(tank_min, tank_max)]
    centre = [(hi + lo) / 2.0 for lo, hi in zip(tank_min, tank_max)]
    return {
        "Configuration": {
            "particleRadius": 0.5 * s,
            "simulationMethod": 4 if dfsph else 0,
            "gravitation": [0, -g, 0],
            "timeStepSize": 0.001 if dfsph else wcsph_dt(s, c, max_dt),
            "cflMethod": 1 if dfsph else 0,
            "cflFactor": 1,
            "cflMaxTimeStepSize": max_dt,
            "boundaryHandlingMethod": 0,
            "enablePartioExport": False, "enableVTKExport": False, "enableRigidBodyExport": False,
            "enableRigidBodyVTKExport": False, "enableStateExport": False, "enableAsyncExport": False,
            "WCSPH": {"stiffness": rho0 * c * c / 7.0, "exponent": 7},
            "DFSPH": {"minIterations": 2, "maxIterations": 100, "maxError": 0.05,
                      "maxIterationsV": 100, "maxErrorV": 0.1, "enableDivergenceSolver": True},
        },
        "Materials": [{"id": "Fluid", "density0": rho0, "viscosityMethod": 1,
                       "Standard viscosity": {"viscosity": viscosity, "viscosityBoundary": 0.0}}],
        "RigidBodies": [{
            "geometryFile": peer.find_unit_box(), "translation": centre,
            "rotationAxis": [1, 0, 0], "rotationAngle": 0, "scale": tank,
            "isDynamic": False, "isWall": True, "samplingMode": 1,
            "mapInvert": True, "mapThickness": 0.0, "mapResolution": [8, 8, 8],
        }],
        **fluid,
    }


def write(scene_dict, workdir, tag):
    """Writes the scene to WORKDIR/TAG/scene.json; returns (that folder, the file's path)."""
    import json
    import os
    wd = os.path.abspath(os.path.join(workdir, tag))
    os.makedirs(wd, exist_ok=True)
    path = os.path.join(wd, "scene.json")
    with open(path, "w") as f:
        json.dump(scene_dict, f, indent=1)
    return wd, path


def simulator(scene_file, wd, end):
    """SPlisHSPlasH initialised on the scene without a GUI, to stop at `end` s: (the SimulatorBase,
    the Simulation, the TimeManager)."""
    import os
    import pysplishsplash as sph
    base = sph.Exec.SimulatorBase()
    base.init(sceneFile=scene_file, useGui=False, stopAt=end, outputDir=os.path.join(wd, "output"),
              initialPause=False, useCache=True)
    base.initSimulation()
    return base, sph.Simulation.getCurrent(), sph.TimeManager.getCurrent()
