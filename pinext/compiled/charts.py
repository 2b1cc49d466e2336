"""A segment's samples from the chart of angles to public states in one compiled loop: the
recorder's conversion, :meth:`pinext.simulation.chart.Chart.to_public` for every sample, with
the quaternions from the same source (:func:`pinext.dynamics.rotations.exp_at`)."""

from __future__ import annotations

import math

import numpy as np

from ..dynamics import rotations
from ..simulation.chart import Chart
from .spatial import helper, kernel

_exp_at = helper(rotations.exp_at)


@kernel
def _public(linear_q, linear_v, cos_q, angle_v, quat_q, rot_v, anchor, nv, Y, X):
    """X[s] = the public state of the internal state Y[s] (``Angles.configuration`` at the
    anchor, then the velocities and the components' states as they are)."""
    n_rest = Y.shape[1] - nv
    nq = X.shape[1] - n_rest
    for s in range(Y.shape[0]):
        y, x = Y[s], X[s]
        for k in range(linear_q.size):
            x[linear_q[k]] = y[linear_v[k]]
        for k in range(cos_q.size):
            x[cos_q[k]] = math.cos(y[angle_v[k]])
            x[cos_q[k] + 1] = math.sin(y[angle_v[k]])
        for k in range(quat_q.size):
            _exp_at(anchor, quat_q[k], y, rot_v[k], x, quat_q[k])
        for i in range(n_rest):
            x[nq + i] = y[nv + i]


def public_states(chart: Chart, samples: np.ndarray) -> np.ndarray | None:
    """The public states of ``samples`` (shape (N, internal size)) on ``chart``, shape (N, nx);
    None when the chart is not one of angles (Pinocchio's tangent vector at an anchor, a
    momentum state): then :meth:`Chart.to_public` converts each sample."""
    angles = chart.angles
    if angles is None or chart.momentum:
        return None
    samples = np.ascontiguousarray(samples, dtype=float)
    out = np.empty((samples.shape[0], samples.shape[1] + chart.shift))
    _public(
        angles.linear_q, angles.linear_v, angles.cos_q, angles.angle_v, angles.quat_q,
        angles.rot_v, chart.anchor, chart.nv, samples, out,
    )  # fmt: skip
    return out
