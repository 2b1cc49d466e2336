"""The recursive Newton–Euler algorithm, compiled with Numba.

:func:`inverse_dynamics` equals ``pin.rnea(model, data, q, v, a)``: the joint efforts
``M(q) a + C(q, v) v + g(q)``; :func:`nonlinear_effects` equals
``pin.nonLinearEffects(model, data, q, v)``: the efforts ``b(q, v) = C(q, v) v + g(q)`` that
hold the robot at zero acceleration.
"""

from __future__ import annotations

from .spatial import (
    add_force_to_parent,
    force_cross,
    helper,
    inertia_times,
    motion_cross,
    motion_to_child,
)

__all__ = ["inverse_dynamics", "nonlinear_effects"]


@helper
def nonlinear_effects(pm, v, out):
    """b(q, v) into ``out`` (nv,), once :func:`pinext.compiled.joint_transforms` has run at q:
    :func:`_rnea` with q̈ = 0. The body velocities stay in ``pm.ws_velocity``."""
    _rnea(pm, v, v, False, out)


@helper
def inverse_dynamics(pm, v, a, out):
    """τ = M(q) a + b(q, v) into ``out`` (nv,), once :func:`pinext.compiled.joint_transforms`
    has run at q (:func:`_rnea`); ``a`` and ``out`` must not share memory."""
    _rnea(pm, v, a, True, out)


@helper
def _rnea(pm, v, a, accelerating, out):
    """Featherstone (2008), Table 5.1 (RNEA) in local joint frames, gravity as a base
    acceleration a_0 = −a_g, the joint accelerations ``a`` read only when ``accelerating``
    (a constant at each call site, folded away by LLVM):

    pass 1, i = 1..n: v_i = ⁱX_λ v_λ + S_i q̇_i, a_i = ⁱX_λ a_λ + S_i q̈_i + v_i × S_i q̇_i,
    f_i = I_i a_i + v_i ×* I_i v_i;
    pass 2, i = n..1: τ_i = S_iᵀ f_i, f_λ += λX*_i f_i.
    """
    rot, trans, s_rows, inertia = pm.ws_rotation, pm.ws_translation, pm.motion_subspace, pm.inertia
    vel, acc, f, vec = pm.ws_velocity, pm.ws_acceleration, pm.ws_bias_force, pm.ws_vector
    parent = pm.parent
    for r in range(6):
        vel[0, r] = 0.0
        acc[0, r] = -pm.gravity[r]
    for i in range(1, parent.shape[0]):
        for r in range(6):
            vec[0, r] = 0.0
        for k in range(pm.idx_v[i], pm.idx_v[i] + pm.nv[i]):  # vec[0] = S q̇
            for r in range(6):
                vec[0, r] += s_rows[k, r] * v[k]
        motion_to_child(rot, trans, i, vel, parent[i], vel, i)
        motion_to_child(rot, trans, i, acc, parent[i], acc, i)
        for r in range(6):
            vel[i, r] += vec[0, r]
        motion_cross(vel, i, vec, 0, vec, 1)
        for r in range(6):
            acc[i, r] += vec[1, r]
        if accelerating:
            for k in range(pm.idx_v[i], pm.idx_v[i] + pm.nv[i]):  # + S q̈
                for r in range(6):
                    acc[i, r] += s_rows[k, r] * a[k]
        inertia_times(inertia, i, acc, i, f, i)
        inertia_times(inertia, i, vel, i, vec, 2)
        force_cross(vel, i, vec, 2, vec, 3)
        for r in range(6):
            f[i, r] += vec[3, r]
    for i in range(parent.shape[0] - 1, 0, -1):
        for k in range(pm.idx_v[i], pm.idx_v[i] + pm.nv[i]):
            s = 0.0
            for r in range(6):
                s += s_rows[k, r] * f[i, r]
            out[k] = s
        if parent[i] > 0:
            add_force_to_parent(rot, trans, i, f, i, f, parent[i])
