"""Peer comparisons at equal error: medians of repeats, log-log interpolation, MuJoCo rollout.

Each peer gives an error-time curve (one point per tolerance or time step, every wall time the
median of at least five runs). Two peers are compared at the same error by interpolating each
one's own curve in log-log coordinates (never by taking the first grid point below an error);
above a peer's loosest stable run its cheapest run counts, below its most accurate one it is
reported as not reached.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

import numpy as np

REPEATS = 5
#: The error levels the comparisons are reported at.
LEVELS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)


def machine_load() -> str:
    """The 1-minute load average against the number of cores, for the report's header."""
    load = os.getloadavg()[0]
    return f"machine load {load:.2f} on {os.cpu_count()} cores"


def median_run(func: Callable[[], object], repeats: int = REPEATS) -> tuple[object, float]:
    """(result of the last run, median wall time [s]) of ``repeats`` runs of ``func``."""
    walls, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = func()
        walls.append(time.perf_counter() - start)
    return result, float(np.median(walls))


def interpolate(curve: Sequence[tuple[float, float]], err: float) -> float | None:
    """A peer's wall time at ``err``: log-log interpolation along its (error, wall) points.

    Points with a non-finite error or an error of 1 or more (a run that blew up or went
    unstable) are left out. Where a smaller error cost less (noise), the curve is made
    monotone: each error gets the least wall time among the points at least as accurate.
    Above the largest error measured, the wall of the cheapest run is returned (that run is
    at least as accurate: a stability-bound peer cannot run cheaper); below the smallest, None
    (not reached with the settings tried)."""
    points = sorted((e, w) for e, w in curve if np.isfinite(e) and 0 < e < 1)
    if not points or err < points[0][0]:
        return None
    errors = np.array([e for e, _ in points])
    walls = np.minimum.accumulate(np.array([w for _, w in points]))
    if err >= errors[-1] or len(points) == 1:
        return float(walls[-1])
    return float(np.exp(np.interp(np.log(err), np.log(errors), np.log(walls))))


def equal_error_table(
    curves: dict[str, Sequence[tuple[float, float]]],
    reference: str,
    levels: Sequence[float] = LEVELS,
    unit: str = "",
) -> list[list[str]]:
    """Rows ``[error, wall of each peer [ms], peer/reference ratios]`` at each error level."""
    rows = []
    names = list(curves)
    for level in levels:
        walls = {name: interpolate(curves[name], level) for name in names}
        base = walls[reference]
        row = [f"{level:.0e}{unit}"]
        row += ["-" if w is None else f"{w * 1e3:.1f}" for w in walls.values()]
        row += [
            "-" if w is None or base is None else f"{w / base:.2f}"
            for name, w in walls.items()
            if name != reference
        ]
        rows.append(row)
    return rows


def equal_error_header(curves: dict[str, object], reference: str) -> list[str]:
    """The header of :func:`equal_error_table`."""
    names = list(curves)
    return (
        ["error"]
        + [f"{n} [ms]" for n in names]
        + [f"{n}/{reference}" for n in names if n != reference]
    )


def mujoco_rollout(model, data, ctrl: np.ndarray, nstep: int) -> np.ndarray:
    """MuJoCo's ``rollout`` (the stepping loop in C++, no Python per step) from the current
    state of ``data`` with constant controls: the state (FULLPHYSICS layout) after each step,
    shape (nstep, nstate)."""
    import mujoco
    from mujoco import rollout

    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state = np.empty(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, data, state, spec)
    controls = np.tile(np.asarray(ctrl, dtype=float), (1, nstep, 1))
    states, _ = rollout.rollout(model, data, state[None, :], controls, nstep=nstep)
    return states[0]
