"""The compiled right-hand side of a linear phase: the fused matrices around one compiled ABA.

The same function as :func:`pinext.simulation.linear.fused_rhs` (and, with no component terms,
:func:`pinext.simulation.rhs.plain_rhs`; with ``momentum``, the right-hand side of Celentano's
scheme, ``y = [q, p = M v, ...]``, as :func:`pinext.simulation.rhs.make_rhs` has it):

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

from .aba import aba, joint_transforms, minv_from_transforms, minv_solve
from .model import PackedModel
from .momentum import _momentum_from_velocity
from .spatial import kernel

#: u_kind codes of :class:`PhaseKernel`.
CONSTANT, HOLD, LINEAR = 0, 1, 2


class PhaseKernel(NamedTuple):
    """Everything the compiled right-hand side of one phase reads (plain arrays).

    The matrices are stored sparse (they are mostly zeros: each drive couples a few
    variables): A row by row (CSR), the power forms as (i, j, value) triples over z.
    """

    model: PackedModel  # the mechanism, for the articulated-body algorithm
    a_ptr: np.ndarray  # int64 (n_lin + 1,): row r of A is a_val[a_ptr[r]:a_ptr[r + 1]]
    a_col: np.ndarray  # int64: the columns (indices into z) of the stored entries
    a_val: np.ndarray  # the stored entries; [tau; s_dot] = A z, n_lin = nv + component states
    q_row: np.ndarray  # int64: z index i of each stored pair of the power forms
    q_col: np.ndarray  # int64: z index j
    q_val: np.ndarray  # (2, n_pairs): [p_in, p_diss] = sum q_val[:, k] z[i_k] z[j_k]
    damping: np.ndarray  # (nv,): the System's joint dampers
    torque_inputs: bool  # the inputs are joint torques (their power is u.v)
    u_kind: int  # CONSTANT, HOLD or LINEAR
    u_times: np.ndarray  # (N,) sample times [s] (one entry for a constant)
    u_values: np.ndarray  # (N, n_inputs)
    z: np.ndarray  # (m,) workspace
    lin: np.ndarray  # (n_lin,) workspace
    momentum: bool = False  # y holds p = M v instead of v: Celentano (2008) Theorem 1
    v: np.ndarray = np.zeros(0)  # (nv,) workspace of the momentum form and of the rows
    row_q: np.ndarray = np.zeros(0, dtype=np.int64)  # (k,) y index of each locked joint's q
    row_v: np.ndarray = np.zeros(0, dtype=np.int64)  # (k,) y index of its velocity
    row_sign: np.ndarray = np.zeros(0)  # (k,) +1 on a lower stop, -1 on an upper one
    row_bound: np.ndarray = np.zeros(0)  # (k,) the stops
    omega: float = 0.0  # Baumgarte frequency of the rows [1/s]
    lam: np.ndarray = np.zeros(0)  # (k,) the rows' reactions (output)
    cols: np.ndarray = np.zeros((0, 0))  # (k, nv) workspace: M⁻¹ Jᵀ
    delassus: np.ndarray = np.zeros((0, 0))  # (k, k) workspace: J M⁻¹ Jᵀ


@kernel
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


@kernel
def _locked_rows(P, y, a):
    """Joints held on their stops: ``J a + γ = 0`` with ``J`` the rows ``sign_r e_{i_r}ᵀ``,
    solved as the acceleration step does (:class:`pinext.simulation.step.AccelerationStep`):
    ``a = a_free + M⁻¹ Jᵀ λ``, ``(J M⁻¹ Jᵀ) λ = −(J a_free + γ)``, with M⁻¹ Jᵀ from the ABA's
    own factors (:func:`pinext.compiled.aba.minv_solve`) and the k × k system by Gaussian
    elimination (a principal block of M⁻¹: symmetric positive definite)."""
    nv = a.size
    k = P.lam.size
    w = P.omega
    unit = P.v
    for r in range(k):
        i = P.row_v[r] - nv
        for j in range(nv):
            unit[j] = 0.0
        unit[i] = P.row_sign[r]
        minv_solve(P.model, unit, P.cols[r])
    g = P.delassus
    lam = P.lam
    for r in range(k):
        i = P.row_v[r] - nv
        for c in range(k):
            g[r, c] = P.row_sign[r] * P.cols[c, i]
        distance = P.row_sign[r] * (y[P.row_q[r]] - P.row_bound[r])
        rate = P.row_sign[r] * y[P.row_v[r]]
        lam[r] = -(P.row_sign[r] * a[i] + 2.0 * w * rate + w * w * distance)
    for c in range(k):  # forward elimination (no pivoting needed: positive definite)
        for r in range(c + 1, k):
            f = g[r, c] / g[c, c]
            for j in range(c, k):
                g[r, j] -= f * g[c, j]
            lam[r] -= f * lam[c]
    for r in range(k - 1, -1, -1):
        acc = lam[r]
        for j in range(r + 1, k):
            acc -= g[r, j] * lam[j]
        lam[r] = acc / g[r, r]
    for r in range(k):
        for j in range(nv):
            a[j] += P.cols[r, j] * lam[r]


@kernel
def rhs(P, t, y, out):
    """``out = f(t, y)`` of the phase (module docstring)."""
    nv = P.damping.size
    m = P.z.size
    n_in = P.u_values.shape[1]
    n_core = m - n_in - 1
    z = P.z
    for i in range(n_core):
        z[i] = y[i]
    if P.momentum:  # v = M(q)⁻¹ p: the efforts and powers are functions of v
        joint_transforms(P.model, y[:nv])
        minv_from_transforms(P.model, y[nv : 2 * nv], P.v)
        for i in range(nv):
            z[nv + i] = P.v[i]
    _inputs(P, t, z[n_core : n_core + n_in])
    z[m - 1] = 1.0
    lin = P.lin
    for r in range(lin.size):
        acc = 0.0
        for k in range(P.a_ptr[r], P.a_ptr[r + 1]):
            acc += P.a_val[k] * z[P.a_col[k]]
        lin[r] = acc
    for i in range(nv):
        out[i] = z[nv + i]
    if P.momentum:  # ṗ = ∂T/∂q + ad*_v p + τ − g(q), Celentano (2008) Theorem 1
        _momentum_from_velocity(P.model, y[nv : 2 * nv], lin[:nv], P.v, out[nv : 2 * nv])
    else:
        aba(P.model, y[:nv], y[nv : 2 * nv], lin[:nv], out[nv : 2 * nv])
        if P.lam.size:
            _locked_rows(P, y, out[nv : 2 * nv])
    for i in range(nv, lin.size):
        out[nv + i] = lin[i]
    p_in = 0.0
    p_diss = 0.0
    for k in range(P.q_row.size):
        zz = z[P.q_row[k]] * z[P.q_col[k]]
        p_in += P.q_val[0, k] * zz
        p_diss += P.q_val[1, k] * zz
    for i in range(nv):
        p_diss += P.damping[i] * z[nv + i] * z[nv + i]
    if P.torque_inputs:
        for i in range(nv):
            p_in += z[n_core + i] * z[nv + i]
    out[n_core] = p_in
    out[n_core + 1] = p_diss
