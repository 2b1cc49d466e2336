"""A trajectory resampled at a fixed frame rate for display."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter

__all__ = ["Frames", "resample"]


@dataclasses.dataclass
class Frames:
    """A trajectory resampled at a fixed frame rate.

    Attributes:
        t: Times [s], shape (n,).
        q: Configurations, shape (n, nq).
        outputs: Outputs of the trajectory, each of shape (n, size).
        phase: Name of the phase of each frame.
        fps: Frames per second of simulated time.
    """

    t: np.ndarray
    q: np.ndarray
    outputs: dict[str, np.ndarray]
    phase: list[str]
    fps: float


def resample(model: pin.Model, trajectory: Any, fps: float) -> Frames:
    """The trajectory at ``fps`` frames per second from its first time to its last.

    Configurations are interpolated on the manifold (``pin.interpolate``; the two samples of an
    event time carry the same q), outputs linearly; each frame takes the phase of the next
    sample.

    Raises:
        InvalidParameter: ``fps`` is not positive.
    """
    t = np.asarray(trajectory.t, dtype=float)
    if fps <= 0:
        raise InvalidParameter(f"fps must be > 0, got {fps}")
    n = max(1, int(np.floor((t[-1] - t[0]) * fps + 1e-9)) + 1)
    times = t[0] + np.arange(n) / fps
    q_all = np.asarray(trajectory.q, dtype=float)
    qs = np.empty((n, model.nq))
    idx = np.clip(np.searchsorted(t, times, side="right") - 1, 0, len(t) - 1)
    nxt = np.minimum(idx + 1, len(t) - 1)
    dt = t[nxt] - t[idx]
    alpha = np.where(dt > 0, (times - t[idx]) / np.where(dt > 0, dt, 1.0), 0.0)
    for k in range(n):
        qs[k] = pin.interpolate(model, q_all[idx[k]], q_all[nxt[k]], float(alpha[k]))
    outputs = {}
    for name, values in getattr(trajectory, "outputs", {}).items():
        values = np.asarray(values, dtype=float).reshape(len(t), -1)
        outputs[name] = values[idx] + alpha[:, None] * (values[nxt] - values[idx])
    phases = getattr(trajectory, "phases", [])
    pidx = np.asarray(getattr(trajectory, "phase_index", np.zeros(len(t), int)))
    names = [phases[int(pidx[i])].name if phases else "" for i in nxt]
    return Frames(times, qs, outputs, names, float(fps))
