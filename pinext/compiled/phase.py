"""The compiled right-hand side of a linear phase: the fused matrices around one compiled ABA.

The same function as :func:`pinext.simulation.linear.fused_rhs` (and, with no component terms,
:func:`pinext.simulation.rhs.plain_rhs`):

.. math::

    z = [y_{core}, u(t), 1], \\quad [\\tau; \\dot s] = A z, \\quad
    \\dot y = [v,\\ \\mathrm{ABA}(q, v, \\tau),\\ \\dot s,\\ p_{in},\\ p_{diss}],

with the quadratic power forms of :class:`pinext.simulation.linear.LinearForm`, the System's
dampers' ``vᵀ D v`` and, for torque inputs, ``uᵀ v``. The inputs are a constant or a sampled
:class:`pinext.simulation.controls.Schedule` (held or linearly interpolated, as ``np.interp``
does: constant beyond the ends).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .aba import aba
from .model import PackedModel

#: u_kind codes of :class:`PhaseKernel`.
CONSTANT, HOLD, LINEAR = 0, 1, 2


class PhaseKernel(NamedTuple):
    """Everything the compiled right-hand side of one phase reads (plain arrays)."""

    model: PackedModel  # the mechanism, for the articulated-body algorithm
    a_mat: np.ndarray  # (n_lin, m): [tau; s_dot] = a_mat z, n_lin = nv + component states
    active: np.ndarray  # int64 (n_active,): indices into z of the power forms' variables
    q_forms: np.ndarray  # (2, n_active, n_active): [p_in, p_diss] quadratic forms
    damping: np.ndarray  # (nv,): the System's joint dampers
    torque_inputs: bool  # the inputs are joint torques (their power is u.v)
    u_kind: int  # CONSTANT, HOLD or LINEAR
    u_times: np.ndarray  # (N,) sample times [s] (one entry for a constant)
    u_values: np.ndarray  # (N, n_inputs)
    z: np.ndarray  # (m,) workspace
    lin: np.ndarray  # (n_lin,) workspace


@njit(cache=True)
def _inputs(P, t, u):
    """u(t): constant, held (zero-order) or interpolated (np.interp's end rule)."""
    times, values = P.u_times, P.u_values
    n_in = values.shape[1]
    if P.u_kind == CONSTANT or times.size == 1:
        for j in range(n_in):
            u[j] = values[0, j]
        return
    i = np.searchsorted(times, t, side="right") - 1
    if P.u_kind == HOLD:
        i = max(i, 0)
        for j in range(n_in):
            u[j] = values[i, j]
        return
    if i < 0:
        for j in range(n_in):
            u[j] = values[0, j]
    elif i >= times.size - 1:
        for j in range(n_in):
            u[j] = values[times.size - 1, j]
    else:
        w = (t - times[i]) / (times[i + 1] - times[i])
        for j in range(n_in):
            u[j] = values[i, j] + w * (values[i + 1, j] - values[i, j])


@njit(cache=True)
def rhs(P, t, y, out):
    """``out = f(t, y)`` of the phase (module docstring)."""
    nv = P.damping.size
    m = P.z.size
    n_in = P.u_values.shape[1]
    n_core = m - n_in - 1
    z = P.z
    for i in range(n_core):
        z[i] = y[i]
    _inputs(P, t, z[n_core : n_core + n_in])
    z[m - 1] = 1.0
    a_mat, lin = P.a_mat, P.lin
    n_lin = a_mat.shape[0]
    for r in range(n_lin):
        acc = 0.0
        for c in range(m):
            acc += a_mat[r, c] * z[c]
        lin[r] = acc
    for i in range(nv):
        out[i] = y[nv + i]
    aba(P.model, y[:nv], y[nv : 2 * nv], lin[:nv], out[nv : 2 * nv])
    for i in range(nv, n_lin):
        out[nv + i] = lin[i]
    active, q_forms = P.active, P.q_forms
    p_in = 0.0
    p_diss = 0.0
    for a in range(active.size):
        za = z[active[a]]
        for b in range(active.size):
            zz = za * z[active[b]]
            p_in += q_forms[0, a, b] * zz
            p_diss += q_forms[1, a, b] * zz
    for i in range(nv):
        p_diss += P.damping[i] * y[nv + i] * y[nv + i]
    if P.torque_inputs:
        for i in range(nv):
            p_in += z[n_core + i] * y[nv + i]
    out[n_core] = p_in
    out[n_core + 1] = p_diss
