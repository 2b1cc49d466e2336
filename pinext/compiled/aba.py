"""Featherstone's articulated-body algorithm, compiled with Numba.

:func:`aba` equals ``pin.aba(model, data, q, v, tau)`` (armature included) and runs inside other
``@njit`` code without Python's per-call overhead. Inputs come from :func:`pinext.compiled.pack`.
"""

from __future__ import annotations

import math

from numba import njit

from .model import (
    FREE_FLYER,
    PLANAR,
    PRISMATIC,
    REVOLUTE,
    REVOLUTE_UNBOUNDED,
    SPHERICAL,
    TRANSLATION,
)
from .spatial import (
    add_force_to_parent,
    add_inertia_to_parent,
    force_cross,
    matvec6,
    motion_cross,
    motion_to_child,
)

__all__ = ["aba", "joint_transforms"]


@njit(cache=True)
def _quaternion_matrix(x, y, z, w, out):
    """Rotation matrix of the quaternion (x, y, z, w), as Eigen's ``toRotationMatrix``."""
    tx, ty, tz = 2.0 * x, 2.0 * y, 2.0 * z
    twx, twy, twz = tx * w, ty * w, tz * w
    txx, txy, txz = tx * x, ty * x, tz * x
    tyy, tyz, tzz = ty * y, tz * y, tz * z
    out[0, 0] = 1.0 - (tyy + tzz)
    out[0, 1] = txy - twz
    out[0, 2] = txz + twy
    out[1, 0] = txy + twz
    out[1, 1] = 1.0 - (txx + tzz)
    out[1, 2] = tyz - twx
    out[2, 0] = txz - twy
    out[2, 1] = tyz + twx
    out[2, 2] = 1.0 - (txx + tyy)


@njit(cache=True)
def _axis_rotation(axis, cos, sin, out):
    """Rodrigues' formula, R = cos I + sin [a]× + (1 − cos) a aᵀ (Featherstone (2008), eq. (2.13))."""
    a0, a1, a2 = axis[0], axis[1], axis[2]
    k = 1.0 - cos
    out[0, 0] = cos + k * a0 * a0
    out[0, 1] = k * a0 * a1 - sin * a2
    out[0, 2] = k * a0 * a2 + sin * a1
    out[1, 0] = k * a1 * a0 + sin * a2
    out[1, 1] = cos + k * a1 * a1
    out[1, 2] = k * a1 * a2 - sin * a0
    out[2, 0] = k * a2 * a0 - sin * a1
    out[2, 1] = k * a2 * a1 + sin * a0
    out[2, 2] = cos + k * a2 * a2


@njit(cache=True)
def _joint_motion(pm, i, q, rot, trans):
    """The joint's own transform X_J(q) (Featherstone (2008), Table 4.1): rot, trans."""
    code = pm.jtype[i]
    iq = pm.idx_q[i]
    axis = pm.axis[i]
    for r in range(3):
        trans[r] = 0.0
    if code == REVOLUTE:
        _axis_rotation(axis, math.cos(q[iq]), math.sin(q[iq]), rot)
    elif code == REVOLUTE_UNBOUNDED:
        _axis_rotation(axis, q[iq], q[iq + 1], rot)
    elif code == PRISMATIC:
        _axis_rotation(axis, 1.0, 0.0, rot)
        for r in range(3):
            trans[r] = axis[r] * q[iq]
    elif code == FREE_FLYER:
        _quaternion_matrix(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6], rot)
        for r in range(3):
            trans[r] = q[iq + r]
    elif code == SPHERICAL:
        _quaternion_matrix(q[iq], q[iq + 1], q[iq + 2], q[iq + 3], rot)
    elif code == TRANSLATION:
        _axis_rotation(axis, 1.0, 0.0, rot)
        for r in range(3):
            trans[r] = q[iq + r]
    elif code == PLANAR:
        _axis_rotation(axis, q[iq + 2], q[iq + 3], rot)  # axis is e_z
        trans[0] = q[iq]
        trans[1] = q[iq + 1]


@njit(cache=True)
def joint_transforms(pm, q):
    """Parent -> joint frame transforms at q, ``liMi = jointPlacement · X_J(q)``, written to
    ``pm.ws_rotation`` and ``pm.ws_translation`` (Featherstone (2008), Table 5.1: ⁱX_λ = X_J X_T).
    """
    rot_j = pm.ws_matrix[2]
    trans_j = pm.ws_vector[3]
    for i in range(1, pm.parent.shape[0]):
        _joint_motion(pm, i, q, rot_j, trans_j)
        rp = pm.placement_rotation[i]
        tp = pm.placement_translation[i]
        rot = pm.ws_rotation[i]
        trans = pm.ws_translation[i]
        for r in range(3):
            for c in range(3):
                rot[r, c] = rp[r, 0] * rot_j[0, c] + rp[r, 1] * rot_j[1, c] + rp[r, 2] * rot_j[2, c]
            trans[r] = tp[r] + rp[r, 0] * trans_j[0] + rp[r, 1] * trans_j[1] + rp[r, 2] * trans_j[2]


@njit(cache=True)
def _invert_spd(d, n, work):
    """Invert the n × n symmetric positive-definite block d[:n, :n] in place (Cholesky)."""
    if n == 1:
        d[0, 0] = 1.0 / d[0, 0]
        return
    low = work
    for j in range(n):
        s = d[j, j]
        for k in range(j):
            s -= low[j, k] * low[j, k]
        low[j, j] = math.sqrt(s)
        for r in range(j + 1, n):
            s = d[r, j]
            for k in range(j):
                s -= low[r, k] * low[j, k]
            low[r, j] = s / low[j, j]
    # inverse of L (lower triangular), stored in the upper-left block of d transposed later
    for j in range(n):
        for r in range(n):
            d[r, j] = 0.0
    for j in range(n):  # columns of L⁻¹
        for r in range(j, n):
            s = 1.0 if r == j else 0.0
            for k in range(j, r):
                s -= low[r, k] * d[k, j]
            d[r, j] = s / low[r, r]
    # D⁻¹ = L⁻ᵀ L⁻¹; L⁻¹ is in d's lower triangle, copy it to low first
    for r in range(n):
        for c in range(n):
            low[r, c] = d[r, c] if c <= r else 0.0
    for r in range(n):
        for c in range(r, n):
            s = 0.0
            for k in range(c, n):
                s += low[k, r] * low[k, c]
            d[r, c] = s
            d[c, r] = s


@njit(cache=True)
def aba(pm, q, v, tau, a_out):
    """Forward dynamics q̈ = ABA(q, v, τ), equal to ``pin.aba`` (armature included).

    Featherstone (2008), Table 7.1, in local joint frames as Pinocchio, with ⁱX_λ the parent ->
    joint transform (``liMi``), S_i the motion subspace and a zero joint bias c_J:

    pass 1, i = 1..n:
        v_i = ⁱX_λ v_λ + S_i q̇_i,   c_i = v_i × S_i q̇_i,   I^A_i = I_i,
        p^A_i = v_i ×* I_i v_i;
    pass 2, i = n..1:
        U_i = I^A_i S_i,   D_i = S_iᵀ U_i + diag(armature_i),   u_i = τ_i − S_iᵀ p^A_i,
        I^a = I^A_i − U_i D_i⁻¹ U_iᵀ,   p^a = p^A_i + I^a c_i + U_i D_i⁻¹ u_i,
        I^A_λ += λX*_i I^a ⁱX_λ,   p^A_λ += λX*_i p^a;
    pass 3, i = 1..n, with a_0 = −a_g (gravity as a base acceleration):
        a'_i = ⁱX_λ a_λ + c_i,   q̈_i = D_i⁻¹ (u_i − U_iᵀ a'_i),   a_i = a'_i + S_i q̈_i.

    Args:
        pm: The packed model (its workspace is overwritten).
        q: (nq,) configuration. v: (nv,) velocity. tau: (nv,) joint efforts.
        a_out: (nv,) array that receives q̈.
    """
    nj = pm.parent.shape[0]
    parent = pm.parent
    idx_v = pm.idx_v
    nvs = pm.nv
    s_rows = pm.motion_subspace
    vel = pm.ws_velocity
    bias = pm.ws_bias
    acc = pm.ws_acceleration
    ia = pm.ws_articulated_inertia
    pa = pm.ws_bias_force
    u_mat = pm.ws_u_matrix
    d_inv = pm.ws_d_inverse
    u = pm.ws_u
    rot = pm.ws_rotation
    trans = pm.ws_translation
    work = pm.ws_matrix
    vj = pm.ws_vector[0]
    tmp = pm.ws_vector[1]
    tmp2 = pm.ws_vector[2]

    joint_transforms(pm, q)
    # pass 1: velocities, velocity-product accelerations, bias forces
    for i in range(1, nj):
        k0 = idx_v[i]
        for r in range(6):
            s = 0.0
            for k in range(k0, k0 + nvs[i]):
                s += s_rows[k, r] * v[k]
            vj[r] = s
        vi = vel[i]
        lam = parent[i]
        if lam > 0:
            motion_to_child(rot[i], trans[i], vel[lam], vi)
            for r in range(6):
                vi[r] += vj[r]
        else:
            for r in range(6):
                vi[r] = vj[r]
        motion_cross(vi, vj, bias[i])
        ia[i, :, :] = pm.inertia[i]
        matvec6(pm.inertia[i], vi, tmp)
        force_cross(vi, tmp, pa[i])
    for k in range(u.shape[0]):
        u[k] = tau[k]
    # pass 2: articulated inertias and bias forces
    for i in range(nj - 1, 0, -1):
        k0 = idx_v[i]
        n = nvs[i]
        iai = ia[i]
        for k in range(k0, k0 + n):
            matvec6(iai, s_rows[k], u_mat[k])
            s = 0.0
            for r in range(6):
                s += s_rows[k, r] * pa[i, r]
            u[k] -= s
        dblk = d_inv[k0 : k0 + n]
        for a in range(n):
            for b in range(n):
                s = 0.0
                for r in range(6):
                    s += s_rows[k0 + a, r] * u_mat[k0 + b, r]
                dblk[a, b] = s
            dblk[a, a] += pm.armature[k0 + a]
        _invert_spd(dblk, n, work[2])
        lam = parent[i]
        if lam > 0:
            # I^a = I^A − U D⁻¹ Uᵀ (in place), p^a = p^A + I^a c + U D⁻¹ u
            for a in range(n):
                s = 0.0
                for b in range(n):
                    s += dblk[a, b] * u[k0 + b]
                tmp[a] = s  # D⁻¹ u
            for r in range(6):
                for c in range(6):
                    s = 0.0
                    for a in range(n):
                        t = 0.0
                        for b in range(n):
                            t += dblk[a, b] * u_mat[k0 + b, c]
                        s += u_mat[k0 + a, r] * t
                    iai[r, c] -= s
            matvec6(iai, bias[i], tmp2)
            for r in range(6):
                s = pa[i, r] + tmp2[r]
                for a in range(n):
                    s += u_mat[k0 + a, r] * tmp[a]
                tmp2[r] = s
            add_inertia_to_parent(rot[i], trans[i], iai, ia[lam], work)
            add_force_to_parent(rot[i], trans[i], tmp2, pa[lam])
    # pass 3: accelerations
    for r in range(6):
        tmp[r] = -pm.gravity[r]
    for i in range(1, nj):
        k0 = idx_v[i]
        n = nvs[i]
        lam = parent[i]
        ai = acc[i]
        motion_to_child(rot[i], trans[i], acc[lam] if lam > 0 else tmp, ai)
        for r in range(6):
            ai[r] += bias[i, r]
        for a in range(n):
            s = u[k0 + a]
            for r in range(6):
                s -= u_mat[k0 + a, r] * ai[r]
            tmp2[a] = s
        for a in range(n):
            s = 0.0
            for b in range(n):
                s += d_inv[k0 + a, b] * tmp2[b]
            a_out[k0 + a] = s
        for k in range(k0, k0 + n):
            for r in range(6):
                ai[r] += s_rows[k, r] * a_out[k]
