"""Celentano's momentum right-hand side, compiled with Numba.

:func:`momentum_rhs` equals :func:`pinext.dynamics.momentum.momentum_rhs` (Celentano (2008),
Theorem 1, with the Euler–Poincaré term of Pinocchio's quasi-velocity joints):

.. math::

    v = M(q)^{-1} p, \\qquad
    \\dot p = \\frac{\\partial T}{\\partial q}(q, v) + \\mathrm{ad}^*_v p + \\tau - g(q).

M⁻¹ p is the articulated-body algorithm with v = 0 and no gravity (Featherstone (2008), Table
7.1). ∂T/∂q needs no mass-matrix derivative. T = ½ Σ v_iᵀ I_i v_i with body twists v_i and
inertias I_i in body frames (I_i constant). Moving coordinate k (along q ⊕ δ e_k for Lie-group
joints) turns the subtree ν(J) of its joint J about the axis S_k; the world twists of the
subtree change by S_k × (v_i − v_λ) (v_λ the twist of J's parent) and the body frames turn
with them by S_k, so in body coordinates

.. math::

    \\frac{\\partial v_i}{\\partial q_k} = S_k \\times (v_i - v_λ) - S_k \\times v_i
        = -S_k \\times v_λ, \\qquad
    \\frac{\\partial T}{\\partial q_k} = \\sum_{i \\in \\nu(J)} h_i^T (v_λ \\times S_k)
        = -S_k^T \\Big(v_λ \\times^* \\sum_{i \\in \\nu(J)} h_i\\Big),

with h_i = I_i v_i (the spatial cross products of Featherstone (2008), ch. 2, and
(v×)ᵀ = −v×*). The subtree momenta Σ h_i are accumulated by one backward pass, as the RNEA
accumulates forces (Featherstone (2008), Table 5.1); g(q) is the RNEA with v = 0 and a = 0 in
the same passes.
"""

from __future__ import annotations

from .aba import joint_transforms, minv_from_transforms
from .crba import crba_from_transforms, ltdl, ltdl_solve
from .model import FREE_FLYER, PLANAR, SPHERICAL
from .spatial import (
    add_force_to_parent,
    force_cross,
    helper,
    inertia_times,
    motion_to_child,
)

__all__ = ["momentum_rhs", "momentum_rhs_crba"]


@helper
def momentum_rhs(pm, q, p, tau, v_out, p_dot_out):
    """Celentano's function F: (q, p, τ) ↦ (v, ṗ), equal to
    :func:`pinext.dynamics.momentum.momentum_rhs` (see the module docstring for the equations).

    Args:
        pm: The packed model (its workspace is overwritten).
        q: (nq,) configuration. p: (nv,) generalized momentum M v. tau: (nv,) generalized
            forces other than gravity.
        v_out: (nv,) receives v = M⁻¹ p. p_dot_out: (nv,) receives ṗ.
    """
    joint_transforms(pm, q)
    minv_from_transforms(pm, p, v_out)  # v = M⁻¹ p
    _momentum_from_velocity(pm, p, tau, v_out, p_dot_out)


@helper
def momentum_rhs_crba(pm, q, p, tau, v_out, p_dot_out):
    """:func:`momentum_rhs` with v = M⁻¹ p by the composite-rigid-body algorithm and the sparse
    LTDL factorisation (Featherstone (2008), ch. 6) instead of the ABA: Celentano's
    own step 1–2 (compute M, then solve), O(n²) + O(n d²) with d the depth of the tree."""
    joint_transforms(pm, q)
    crba_from_transforms(pm, pm.ws_mass_matrix)
    ltdl(pm, pm.ws_mass_matrix)
    for k in range(p.shape[0]):
        v_out[k] = p[k]
    ltdl_solve(pm, pm.ws_mass_matrix, v_out)
    _momentum_from_velocity(pm, p, tau, v_out, p_dot_out)


@helper
def _momentum_from_velocity(pm, p, tau, v, p_dot_out):
    _momentum_rate(
        pm.parent,
        pm.jtype,
        pm.idx_v,
        pm.nv,
        pm.motion_subspace,
        pm.inertia,
        pm.gravity,
        pm.ws_rotation,
        pm.ws_translation,
        pm.ws_velocity,
        pm.ws_bias,
        pm.ws_acceleration,
        pm.ws_momentum,
        pm.ws_gravity_force,
        pm.ws_vector,
        v,
        p,
        tau,
        p_dot_out,
    )


@helper
def _momentum_rate(
    parent, jtype, idx_v, nvs, s_rows, inertia, gravity, rot, trans,
    vel, vj, acc, mom, fg, vec, v, p, tau, out,
):  # fmt: skip
    """ṗ = ∂T/∂q + ad*_v p + τ − g(q) once the transforms and v are known."""
    nj = parent.shape[0]
    for r in range(6):
        vel[0, r] = 0.0
        acc[0, r] = -gravity[r]
    # forward: twists v_i, momenta h_i = I_i v_i, gravity forces I_i a_i (a_0 = −a_g)
    for i in range(1, nj):
        k0 = idx_v[i]
        for r in range(6):
            s = 0.0
            for k in range(k0, k0 + nvs[i]):
                s += s_rows[k, r] * v[k]
            vj[i, r] = s
        motion_to_child(rot, trans, i, vel, parent[i], vel, i)
        for r in range(6):
            vel[i, r] += vj[i, r]
        inertia_times(inertia, i, vel, i, mom, i)
        motion_to_child(rot, trans, i, acc, parent[i], acc, i)
        inertia_times(inertia, i, acc, i, fg, i)
    # backward: subtree sums, ∂T/∂q_k = −S_kᵀ (v_λ ×* Σ h) and g_k = S_kᵀ Σ I a
    for i in range(nj - 1, 0, -1):
        k0 = idx_v[i]
        for r in range(6):
            vec[0, r] = vel[i, r] - vj[i, r]  # v_λ in the frame of joint i
        force_cross(vec, 0, mom, i, vec, 1)
        for k in range(k0, k0 + nvs[i]):
            s = 0.0
            for r in range(6):
                s -= s_rows[k, r] * (vec[1, r] + fg[i, r])
            out[k] = s + tau[k]
        lam = parent[i]
        if lam > 0:
            add_force_to_parent(rot, trans, i, mom, i, mom, lam)
            add_force_to_parent(rot, trans, i, fg, i, fg, lam)
        # Euler–Poincaré (Hamel) term ad*_v p of the quasi-velocity joints
        code = jtype[i]
        if code == FREE_FLYER:
            _hamel_se3(v, p, k0, out)
        elif code == SPHERICAL:
            _cross_add(p, k0, v, k0, out, k0)
        elif code == PLANAR:
            vx, vy, wz = v[k0], v[k0 + 1], v[k0 + 2]
            px, py = p[k0], p[k0 + 1]
            out[k0] += py * wz
            out[k0 + 1] += -px * wz
            out[k0 + 2] += px * vy - py * vx


@helper
def _cross_add(a, i, b, j, out, k):
    """out[k:k+3] += a[i:i+3] × b[j:j+3]."""
    out[k] += a[i + 1] * b[j + 2] - a[i + 2] * b[j + 1]
    out[k + 1] += a[i + 2] * b[j] - a[i] * b[j + 2]
    out[k + 2] += a[i] * b[j + 1] - a[i + 1] * b[j]


@helper
def _hamel_se3(v, p, k0, out):
    """ad*_v p on se(3): with v = (ν, ω), p = (p_l, p_a): (p_l × ω, p_a × ω + p_l × ν)."""
    _cross_add(p, k0, v, k0 + 3, out, k0)
    _cross_add(p, k0 + 3, v, k0 + 3, out, k0 + 3)
    _cross_add(p, k0, v, k0, out, k0 + 3)
