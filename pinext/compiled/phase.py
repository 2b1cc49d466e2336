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

from ..dynamics import rotations
from ..simulation.forms import joint_row, stabilisation
from . import frames as _frames
from . import laws as _laws
from . import layers as _layers
from .aba import (
    aba_from_transforms,
    aba_held,
    joint_transforms,
    minv_from_transforms,
    minv_solve,
)
from .crba import crba_from_transforms, ltdl, ltdl_half
from .model import PackedModel
from .momentum import _momentum_from_velocity
from .rnea import inverse_dynamics
from .spatial import entry, helper, kernel

_exp_at = helper(rotations.exp_at)
_rotate = helper(rotations.rotate)
_jr_inverse = helper(rotations.jr_inverse)

#: Independent rows up to which :func:`_locked_rows` solves with the ABA's factors (one
#: ``minv_solve`` per row) instead of the joint-space inertia's LᵀDL factors.
FEW_ROWS = 4

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
    u_values: np.ndarray  # (N, n_inputs), or with a joint PD law its reference (N, nq)
    z: np.ndarray  # (m,) workspace
    lin: np.ndarray  # (n_lin,) workspace
    momentum: bool = False  # y holds p = M v instead of v: Celentano (2008) Theorem 1
    v: np.ndarray = np.zeros(0)  # (nv,) workspace of the momentum form and of the rows
    # the phase's constraint rows (:class:`pinext.simulation.component.JointRows`, stacked in
    # the acceleration step's order): m rows, r = rank of them independent
    row_ptr: np.ndarray = np.zeros(1, dtype=np.int64)  # (m + 1,) entries of row i
    row_q: np.ndarray = np.zeros(0, dtype=np.int64)  # (entries,) q index (= y index)
    row_v: np.ndarray = np.zeros(0, dtype=np.int64)  # (entries,) v index
    row_coef: np.ndarray = np.zeros(0)  # (entries,) coefficients
    row_offset: np.ndarray = np.zeros(0)  # (m,) offsets of the residuals
    row_omega: np.ndarray = np.zeros(0)  # (m,) Baumgarte frequencies [1/s]
    row_basis: np.ndarray = np.zeros(0, dtype=np.int64)  # (r,) independent rows J₁ = J[basis]
    row_fold: np.ndarray = np.zeros((0, 0))  # (r, m): (TᵀT)⁻¹ Tᵀ, J = T J₁
    row_spread: np.ndarray = np.zeros((0, 0))  # (m, r): T (TᵀT)⁻¹
    lam: np.ndarray = np.zeros(0)  # (m,) the rows' reactions (output)
    mu: np.ndarray = np.zeros(0)  # (r,) workspace: the reactions of the independent rows
    cols: np.ndarray = np.zeros((0, 0))  # (r, nv) workspace: D^(-1/2) L⁻ᵀ J₁ᵀ
    delassus: np.ndarray = np.zeros((0, 0))  # (r, r) workspace: J₁ M⁻¹ J₁ᵀ
    # every row a unit row on a one-axis joint of its own and no frame rows (joints on their
    # stops, joints stuck by friction): the hybrid ABA holds them (:func:`_held_rows`), each
    # held dof's 1.0 in ``locked``; ``held`` the workspace of :func:`pinext.compiled.aba.
    # aba_held` (its prescribed acceleration, then its row's force)
    hybrid: bool = False
    locked: np.ndarray = np.zeros(0)
    held: np.ndarray = np.zeros(0)
    # the chart with rotation vectors (:class:`pinext.simulation.chart.Angles` of a model with
    # quaternions): y[:nv] holds the Euclidean coordinates, the angles of unbounded revolute
    # joints and the rotation vectors φ at the quaternions of ``anchor``; the packed model
    # then reads the public configuration, rebuilt into ``q`` at each evaluation
    rotating: bool = False
    linear_q: np.ndarray = np.zeros(0, dtype=np.int64)
    linear_v: np.ndarray = np.zeros(0, dtype=np.int64)
    cos_q: np.ndarray = np.zeros(0, dtype=np.int64)
    angle_v: np.ndarray = np.zeros(0, dtype=np.int64)
    quat_q: np.ndarray = np.zeros(0, dtype=np.int64)
    rot_v: np.ndarray = np.zeros(0, dtype=np.int64)
    fly_v: np.ndarray = np.zeros(0, dtype=np.int64)
    fly_quat: np.ndarray = np.zeros(0, dtype=np.int64)
    anchor: np.ndarray = np.zeros(0)  # (nq,) the chart's anchor configuration
    q: np.ndarray = np.zeros(0)  # (nq,) workspace: the public configuration
    # the phase's frame rows (loop closures, closed contacts: :class:`pinext.simulation.
    # component.FrameRows`), after the joint rows among the m rows above, and the blocks whose
    # gaps its events watch
    frames: _frames.FrameWork = _frames.NONE
    # a joint PD law (u_values: its reference q_r, (N, nq)): each dof's q index (−1: no gain)
    pd_q: np.ndarray = np.zeros(0, dtype=np.int64)
    pd_kp: np.ndarray = np.zeros(0)
    pd_kd: np.ndarray = np.zeros(0)
    pd_ref: np.ndarray = np.zeros((2, 0))  # workspace: q_r and q̇_r (the schedule's width)
    # computed torque (:class:`pinext.control.ComputedTorque`, joint torques): the PD terms
    # are the commanded acceleration; rows K, D, q_rest of its springs and dampers (none:
    # shape (0, 0)), and a workspace for the acceleration
    pd_terms: np.ndarray = np.zeros((0, 0))
    pd_accel: np.ndarray = np.zeros(0)
    # the PD law held at a control period (sampled inside the compiled loop,
    # :mod:`pinext.compiled.sampled`): the held torques, the period [s], and the samples taken
    # (times, torques, their count) for the run's record
    pd_held: bool = False
    pd_u: np.ndarray = np.zeros(0)
    pd_period: float = 0.0
    pd_times: np.ndarray = np.zeros(0)
    pd_values: np.ndarray = np.zeros((0, 0))
    pd_count: np.ndarray = np.zeros(1, dtype=np.int64)
    # a Cartesian PD law (:class:`pinext.control.cartesian.CartesianPD`) on a Euclidean model
    cartesian: _laws.CartesianLaw = _laws.NONE
    # a compliant contact layer pressed in this phase (:class:`pinext.simulation.component.
    # Layer`): its owner's effort, state derivatives and power
    layer: _layers.LayerWork = _layers.NONE
    # each input's saturation bound (:attr:`pinext.simulation.system.System.input_bounds`;
    # empty: none), where the inputs are clipped before they enter z
    u_bound: np.ndarray = np.zeros(0)
    # a lossy gear's loss through its rotor's acceleration: p_diss += Σ c_j q̈_j q̇_j (nv,; empty:
    # none), and the accelerations kept for the GEAR events (nv,; empty: none)
    inertia_power: np.ndarray = np.zeros(0)
    acc: np.ndarray = np.zeros(0)
    added: np.ndarray = np.zeros(0)  # (nv,) the added inertia in model.armature (empty: none)
    # component states whose derivative holds an acceleration (Component.acceleration_coupling):
    # out[couple_row[k]] += couple_coef[k] q̈[couple_dof[k]]
    couple_row: np.ndarray = np.zeros(0, dtype=np.int64)
    couple_dof: np.ndarray = np.zeros(0, dtype=np.int64)
    couple_coef: np.ndarray = np.zeros(0)


@helper
def _sample(P, t, out, rate):
    """The schedule (P.u_times, P.u_values) at t into ``out``: constant, held (zero-order) or
    interpolated (np.interp's end rule), and its slope into ``rate`` (zero held, constant or
    beyond the ends; the slope of the segment that starts at t on a sample time)."""
    times, values = P.u_times, P.u_values
    n = values.shape[1]
    slope = rate.size > 0  # (an empty rate: the slope is not asked for)
    if slope:
        for j in range(n):
            rate[j] = 0.0
    if P.u_kind == CONSTANT or times.size == 1:
        for j in range(n):
            out[j] = values[0, j]
        return
    i = np.searchsorted(times, t, side="right") - 1
    if P.u_kind == HOLD:
        i = max(i, 0)
        for j in range(n):
            out[j] = values[i, j]
        return
    if i < 0:
        for j in range(n):
            out[j] = values[0, j]
    elif i >= times.size - 1:
        for j in range(n):
            out[j] = values[times.size - 1, j]
    else:
        span = times[i + 1] - times[i]
        w = (t - times[i]) / span
        for j in range(n):
            out[j] = values[i, j] + w * (values[i + 1, j] - values[i, j])
            if slope:
                rate[j] = (values[i + 1, j] - values[i, j]) / span


@helper
def _inputs(P, t, y, u):
    """u(t, y): the schedule (:func:`_sample`), or with a joint PD law its torques
    (:func:`pd_torques`), or those held since the PD law's last sample, or a Cartesian PD
    law's (:func:`pinext.compiled.laws.cartesian_torques`); clipped to ``P.u_bound``."""
    if P.cartesian.gains.size:
        nv = P.damping.size
        _laws.cartesian_torques(P.model, P.cartesian, t, y[:nv], y[nv : 2 * nv], u)
    elif P.pd_q.size == 0:
        _sample(P, t, u, P.pd_ref[1])
    elif P.pd_held:
        for j in range(u.size):
            u[j] = P.pd_u[j]
    else:
        pd_torques(P, t, y, u)
    for j in range(P.u_bound.size):
        u[j] = min(max(u[j], -P.u_bound[j]), P.u_bound[j])


@helper
def pd_torques(P, t, y, u):
    """The joint PD law ``u_j = K_p,j (q_r − q)_j + K_d,j (q̇_r − q̇)_j`` on one-DOF joints, the
    reference q_r(t) the schedule and q̇_r its slope (:class:`pinext.control.JointPD`, its
    reference a constant or a :class:`pinext.Schedule`: :func:`pinext.compiled.stepping.
    pd_law`). A one-DOF joint's coordinate is its own entry of y in every chart.

    With ``P.pd_terms`` the law is computed torque (:class:`pinext.control.ComputedTorque`
    on a Euclidean model, whose reference has q̈_r = 0 on a constant or a Schedule): the PD
    terms are the commanded acceleration a, and ``u = rnea(q, q̇, a) + K (q − q_rest) + D q̇``
    (:func:`pinext.compiled.rnea.inverse_dynamics`; the joint transforms at q stay for the
    right-hand side)."""
    ref = P.pd_ref
    _sample(P, t, ref[0], ref[1])
    nv = P.damping.size
    inverse = P.pd_terms.size > 0
    a = P.pd_accel if inverse else u
    for j in range(u.size):
        k = P.pd_q[j]
        if k < 0:
            a[j] = 0.0
        else:
            a[j] = P.pd_kp[j] * (ref[0, k] - y[j]) + P.pd_kd[j] * (ref[1, k] - y[nv + j])
    if inverse:
        joint_transforms(P.model, y[:nv])
        inverse_dynamics(P.model, y[nv : 2 * nv], a, u)
        terms = P.pd_terms
        for j in range(nv):
            u[j] += terms[0, j] * (y[j] - terms[2, j]) + terms[1, j] * y[nv + j]


@helper
def _locked_rows(P, y, a):
    """The phase's rows ``J a + γ = 0`` on the free accelerations ``a`` (in place), as the
    acceleration step (:class:`pinext.simulation.step.AccelerationStep`) solves them
    (McClamroch (1986) (23)–(26)): first the constant-Jacobian rows (:class:`pinext.simulation.
    component.JointRows`: joints on their stops, mimic couplings), then the frame rows of the
    loop closures and closed contacts (their J and γ at this state, from
    :func:`pinext.compiled.frames.evaluate` just before):

    .. math::

        (J M^{-1} J^T)\\, \\lambda = -(J a_{free} + \\gamma), \\qquad
        a = a_{free} + M^{-1} J^T \\lambda,
        \\qquad \\gamma_i = 2\\omega_i J_i v + \\omega_i^2 \\phi_i \\ (+ \\dot J_i v).

    The operator comes from the joint-space inertia's sparse factors ``M = Lᵀ D L``
    (:func:`pinext.compiled.crba.ltdl`, Featherstone (2008) ch. 6) at the transforms of the
    ABA just run: with ``Z = L⁻ᵀ Jᵀ`` (half solves, one row at a time in the workspace
    ``P.cols``, kept scaled by D^(-1/2)), ``J M⁻¹ Jᵀ = Zᵀ D⁻¹ Z`` and
    ``M⁻¹ Jᵀ λ = L⁻¹ D⁻¹ Z λ``. Dependent constant rows (two fingers on their stops and the
    mimic row that couples them) are folded once onto independent ones, ``J = T J₁``: with
    ``G₁ = J₁ M⁻¹ J₁ᵀ`` positive definite, the
    minimum-norm reactions of the step's least squares are ``λ = T (TᵀT)⁻¹ μ``,
    ``G₁ μ = (TᵀT)⁻¹ Tᵀ b``, ``b = −(J a_free + γ)``, and ``M⁻¹ Jᵀ λ = M⁻¹ J₁ᵀ μ`` (for
    independent rows T = I). G₁ μ = … by symmetric Gaussian elimination; a pivot that
    vanishes (frame rows that depend on others at this configuration: a planar loop's rows out
    of its plane) leaves its μ at zero, which keeps the accelerations (``Jᵀλ`` is the same for
    every solution of a consistent system). Up to :data:`FEW_ROWS` independent rows skip the
    factors: ``W = M⁻¹ J₁ᵀ`` comes a row at a time from the ABA's own articulated inertias
    (:func:`pinext.compiled.aba.minv_solve`, about a tenth of a factorisation each), and
    ``G₁ = J₁ W``, ``a += W μ``.

    A frame row on the mass of a dynamic environment (:class:`pinext.simulation.component.
    FrameRows`, model (c)) holds ``J a + γ = s̈_e`` with ``s̈_e = a_e − λ / m_e``, a_e the
    mass's own acceleration from the linear part (``P.lin``): its right-hand side gains a_e
    and its diagonal the compliance 1/m_e, as the acceleration step's compliant rows do
    (Vukobratović & Potkonjak (20.92)–(20.94)); :func:`_environments` then adds −λ / m_e."""
    nv = a.size
    m = P.lam.size
    n_joint = P.row_offset.size
    n_ind = P.mu.size
    ptr, iv, coef = P.row_ptr, P.row_v, P.row_coef
    fw, z, factors = P.frames, P.cols, P.model.ws_mass_matrix
    factored = n_ind > FEW_ROWS
    scale = P.v  # D^(-1/2), so that G₁ = Z̃ᵀ Z̃ with Z̃ = D^(-1/2) Z
    if factored:
        crba_from_transforms(P.model, factors)
        ltdl(P.model, factors)
        for j in range(nv):
            scale[j] = 1.0 / np.sqrt(factors[j, j])
    for c in range(n_ind):  # Z̃ = D^(-1/2) L⁻ᵀ J₁ᵀ (or W = M⁻¹ J₁ᵀ), a row at a time
        row = P.row_basis[c]
        if row < n_joint:
            for j in range(nv):
                z[c, j] = 0.0
            for k in range(ptr[row], ptr[row + 1]):
                z[c, iv[k]] += coef[k]
        else:
            for j in range(nv):
                z[c, j] = fw.jac[row - n_joint, j]
        if factored:
            ltdl_half(P.model, factors, z[c])
            for j in range(nv):
                z[c, j] *= scale[j]
        else:
            for j in range(nv):
                scale[j] = z[c, j]
            minv_solve(P.model, scale, z[c])
    lam = P.lam
    for i in range(n_joint):  # b = −(J a_free + γ) into lam
        acc = 0.0
        for k in range(ptr[i], ptr[i + 1]):
            acc += coef[k] * a[iv[k]]
        lam[i] = -(acc + _joint_gamma(P, y, nv, i))
    for i in range(n_joint, m):
        acc = fw.gamma[i - n_joint]
        for j in range(nv):
            acc += fw.jac[i - n_joint, j] * a[j]
        e = fw.row_env[i - n_joint]
        if e >= 0:  # the mass's own acceleration (its linear law, in P.lin)
            acc -= P.lin[e + 1 - nv]
        lam[i] = -acc
    g = P.delassus
    mu = P.mu
    for r in range(n_ind):  # G₁ = Z̃ᵀ Z̃, or J₁ W (symmetric)
        for c in range(r, n_ind):
            acc = 0.0
            if factored:
                for j in range(nv):
                    acc += z[r, j] * z[c, j]
            elif P.row_basis[r] < n_joint:
                for k in range(ptr[P.row_basis[r]], ptr[P.row_basis[r] + 1]):
                    acc += coef[k] * z[c, iv[k]]
            else:
                for j in range(nv):
                    acc += fw.jac[P.row_basis[r] - n_joint, j] * z[c, j]
            g[r, c] = acc
            g[c, r] = acc
        row = P.row_basis[r] - n_joint
        if row >= 0 and fw.row_env[row] >= 0:  # the mass's compliance 1/m_e
            g[r, r] += fw.row_inverse_mass[row]
        acc = 0.0
        for i in range(m):
            acc += P.row_fold[r, i] * lam[i]
        mu[r] = acc
    tiny = 0.0
    for c in range(n_ind):
        tiny = max(tiny, g[c, c])
    tiny *= 1e-12
    for c in range(n_ind):  # forward elimination (no pivoting needed: positive semidefinite)
        if g[c, c] <= tiny:  # a dependent row: its μ stays zero
            continue
        for r in range(c + 1, n_ind):
            f = g[r, c] / g[c, c]
            for j in range(c, n_ind):
                g[r, j] -= f * g[c, j]
            mu[r] -= f * mu[c]
    for r in range(n_ind - 1, -1, -1):
        if g[r, r] <= tiny:
            mu[r] = 0.0
            continue
        acc = mu[r]
        for j in range(r + 1, n_ind):
            acc -= g[r, j] * mu[j]
        mu[r] = acc / g[r, r]
    dv = P.v  # a += L⁻¹ D^(-1/2) Z̃ μ, or W μ
    for j in range(nv):
        acc = 0.0
        for r in range(n_ind):
            acc += z[r, j] * mu[r]
        dv[j] = acc * scale[j] if factored else acc
    lam_dof = P.model.dof_parent
    for j in range(nv):
        k = lam_dof[j]
        while factored and k >= 0:
            dv[j] -= factors[j, k] * dv[k]
            k = lam_dof[k]
        a[j] += dv[j]
    for i in range(m):
        acc = 0.0
        for r in range(n_ind):
            acc += P.row_spread[i, r] * mu[r]
        lam[i] = acc


@helper
def _environments(P, nv):
    """The reactions of the rows on environment masses (:func:`_locked_rows`) pushing the
    masses: ``s̈_e −= λ / m_e`` in P.lin."""
    fw = P.frames
    n_joint = P.row_offset.size
    for i in range(fw.row_env.size):
        e = fw.row_env[i]
        if e >= 0:
            P.lin[e + 1 - nv] -= P.lam[n_joint + i] * fw.row_inverse_mass[i]


@helper
def _configuration(P, y):
    """P.q = the public configuration of the internal coordinates y[:nv] (the chart of
    :class:`pinext.simulation.chart.Angles`, anchored at P.anchor)."""
    q = P.q
    for k in range(P.linear_q.size):
        q[P.linear_q[k]] = y[P.linear_v[k]]
    for k in range(P.cos_q.size):
        q[P.cos_q[k]] = np.cos(y[P.angle_v[k]])
        q[P.cos_q[k] + 1] = np.sin(y[P.angle_v[k]])
    for k in range(P.quat_q.size):
        _exp_at(P.anchor, P.quat_q[k], y, P.rot_v[k], q, P.quat_q[k])


@helper
def _joint_gamma(P, y, nv, i):
    """γ_i = 2ω J_i v + ω² φ_i of joint row i at the state y (:func:`pinext.simulation.forms.
    joint_row` and :func:`~pinext.simulation.forms.stabilisation`)."""
    rate, residual = joint_row(
        P.row_ptr, P.row_q, P.row_v, P.row_coef, P.row_offset, i, y, nv
    )  # fmt: skip
    return stabilisation(P.row_omega[i], rate, residual)


@helper
def _held_rows(P, y, nv, lin, a):
    """The accelerations ``a`` under the phase's rows when the hybrid ABA holds them
    (``P.hybrid``): each unit row ``c a_k + 2ω c v_k + ω² φ = 0`` (φ = c q_k − offset, as
    :func:`_locked_rows` reads it) prescribes its dof's acceleration, one
    :func:`pinext.compiled.aba.aba_held` gives the others and the force ``f_k`` that holds
    it, and the row's reaction is λ = f_k / c (its force ``Jᵀλ`` on dof k)."""
    ptr = P.row_ptr
    for i in range(P.lam.size):
        k = ptr[i]
        P.held[P.row_v[k]] = -_joint_gamma(P, y, nv, i) / P.row_coef[k]
    aba_held(P.model, y[nv : 2 * nv], lin[:nv], P.model.gravity, a, P.locked, P.held)
    for i in range(P.lam.size):
        k = ptr[i]
        P.lam[i] = P.held[P.row_v[k]] / P.row_coef[k]


@helper
def _forward(P, y, nv, lin, out):
    """The layer's force, the ABA and the rows into ``out[nv:2nv]``, once
    :func:`pinext.compiled.aba.joint_transforms` has run at the state's q: the Cartesian law,
    the layer and the ABA share the joint transforms."""
    if P.layer.constants.size:
        _layers.press(P.model, P.layer, y, nv, lin)
    if P.hybrid:
        _held_rows(P, y, nv, lin, out[nv : 2 * nv])
    else:
        aba_from_transforms(P.model, y[nv : 2 * nv], lin[:nv], P.model.gravity, out[nv : 2 * nv])
    _frames.evaluate(P.model, P.frames, y, nv)
    if P.lam.size and not P.hybrid:
        _locked_rows(P, y, out[nv : 2 * nv])
        _environments(P, nv)


@kernel
def gaps(P, y):
    """``P.frames.gap`` at the state y from the positions alone (the configuration, the
    joint transforms, the watched frames' placements: :func:`pinext.compiled.frames.gaps`),
    the same numbers as :func:`rhs` leaves there, without its ABA and rows."""
    if P.rotating:
        _configuration(P, y)
        joint_transforms(P.model, P.q)
    else:
        joint_transforms(P.model, y[: P.damping.size])
    _frames.gaps(P.model, P.frames, y)


@kernel
def rhs(P, t, y, out):
    """``out = f(t, y)`` of the phase (module docstring). Compiled once and called by symbol
    from the integrators' loops of evaluations (DOP853's stages, Radau's collocation and
    Jacobian), the events and the starts: with the phase handed over as one pointer
    (:mod:`pinext.compiled.struct`) a call costs a few arguments, not the ~900 of the phase's
    arrays that once made inlining it the faster choice."""
    nv = P.damping.size
    m = P.z.size
    n_core = y.size - 2  # y = [core states, p_in, p_diss]
    n_in = m - n_core - 1
    z = P.z
    for i in range(n_core):
        z[i] = y[i]
    if P.momentum:  # v = M(q)⁻¹ p: the efforts and powers are functions of v
        joint_transforms(P.model, y[:nv])
        minv_from_transforms(P.model, y[nv : 2 * nv], P.v)
        for i in range(nv):
            z[nv + i] = P.v[i]
    _inputs(P, t, y, z[n_core : n_core + n_in])
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
    else:  # each inlined helper written once: LLVM compiles every copy
        if P.rotating:  # q from the chart
            _configuration(P, y)
        q = P.q if P.rotating else y[:nv]
        # (a Cartesian or computed-torque law evaluated here has run them at q: _inputs)
        if P.rotating or not (P.cartesian.gains.size or (P.pd_terms.size and not P.pd_held)):
            joint_transforms(P.model, q)
        _forward(P, y, nv, lin, out)
        for k in range(P.fly_v.size):  # a free flyer's ṗ = R v_lin, each φ̇ = J_r(φ)⁻¹ ω
            _rotate(P.q, P.quat_q[P.fly_quat[k]], y, nv + P.fly_v[k], out, P.fly_v[k])
        for k in range(P.rot_v.size):
            _jr_inverse(y, P.rot_v[k], y, nv + P.rot_v[k], out, P.rot_v[k])
    for i in range(nv, lin.size):
        out[nv + i] = lin[i]
    for k in range(P.couple_row.size):
        out[P.couple_row[k]] += P.couple_coef[k] * out[nv + P.couple_dof[k]]
    p_in = 0.0
    p_diss = 0.0
    for k in range(P.q_row.size):
        zz = z[P.q_row[k]] * z[P.q_col[k]]
        p_in += P.q_val[0, k] * zz
        p_diss += P.q_val[1, k] * zz
    for i in range(nv):
        p_diss += P.damping[i] * z[nv + i] * z[nv + i]
    for i in range(P.inertia_power.size):
        p_diss += P.inertia_power[i] * out[nv + i] * z[nv + i]
    for i in range(P.acc.size):
        P.acc[i] = out[nv + i]
    if P.layer.constants.size:
        p_diss += P.layer.out[1]
    if P.torque_inputs:
        for i in range(nv):
            p_in += z[n_core + i] * z[nv + i]
    out[n_core] = p_in
    out[n_core + 1] = p_diss


@entry
def rhs_rows(P, t, ys, out):
    """``out[i] = f(t, ys[i])`` for each row: many states in one call (the columns of a
    finite-difference Jacobian, :func:`pinext.simulation.stiffness.central_differences`)."""
    for i in range(ys.shape[0]):
        rhs(P, t, ys[i], out[i])
