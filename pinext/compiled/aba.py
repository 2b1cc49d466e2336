"""Featherstone's articulated-body algorithm, compiled with Numba.

:func:`aba` equals ``pin.aba(model, data, q, v, tau)`` (armature included) and runs inside other
``@njit`` code without Python's per-call overhead. Inputs come from :func:`pinext.compiled.pack`.
"""

from __future__ import annotations

import math

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
    helper,
    inertia_times,
    motion_cross,
    motion_to_child,
)

__all__ = [
    "aba",
    "aba_from_transforms",
    "aba_held",
    "joint_transforms",
    "minv_from_transforms",
    "minv_solve",
]


@helper
def _quaternion_matrix(x, y, z, w, out):
    """out[0] = rotation matrix of the quaternion (x, y, z, w), as Eigen's ``toRotationMatrix``."""
    tx, ty, tz = 2.0 * x, 2.0 * y, 2.0 * z
    twx, twy, twz = tx * w, ty * w, tz * w
    txx, txy, txz = tx * x, ty * x, tz * x
    tyy, tyz, tzz = ty * y, tz * y, tz * z
    out[0, 0, 0] = 1.0 - (tyy + tzz)
    out[0, 0, 1] = txy - twz
    out[0, 0, 2] = txz + twy
    out[0, 1, 0] = txy + twz
    out[0, 1, 1] = 1.0 - (txx + tzz)
    out[0, 1, 2] = tyz - twx
    out[0, 2, 0] = txz - twy
    out[0, 2, 1] = tyz + twx
    out[0, 2, 2] = 1.0 - (txx + tyy)


@helper
def _axis_rotation(axis, i, cos, sin, out):
    """out[0] = cos I + sin [a]× + (1 − cos) a aᵀ (Rodrigues), a = axis[i] a unit vector."""
    a0, a1, a2 = axis[i, 0], axis[i, 1], axis[i, 2]
    k = 1.0 - cos
    out[0, 0, 0] = cos + k * a0 * a0
    out[0, 0, 1] = k * a0 * a1 - sin * a2
    out[0, 0, 2] = k * a0 * a2 + sin * a1
    out[0, 1, 0] = k * a1 * a0 + sin * a2
    out[0, 1, 1] = cos + k * a1 * a1
    out[0, 1, 2] = k * a1 * a2 - sin * a0
    out[0, 2, 0] = k * a2 * a0 - sin * a1
    out[0, 2, 1] = k * a2 * a1 + sin * a0
    out[0, 2, 2] = cos + k * a2 * a2


@helper
def _joint_motion(code, iq, axis, i, q, rot, trans):
    """The transform X_J(q) of joint i alone (Featherstone (2008), Table 4.1), written to
    rot[0] (3 × 3) and trans[0, :3]."""
    for r in range(3):
        trans[0, r] = 0.0
    if code == REVOLUTE:
        _axis_rotation(axis, i, math.cos(q[iq]), math.sin(q[iq]), rot)
    elif code == REVOLUTE_UNBOUNDED:
        _axis_rotation(axis, i, q[iq], q[iq + 1], rot)
    elif code == PRISMATIC:
        _axis_rotation(axis, i, 1.0, 0.0, rot)
        for r in range(3):
            trans[0, r] = axis[i, r] * q[iq]
    elif code == FREE_FLYER:
        _quaternion_matrix(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6], rot)
        for r in range(3):
            trans[0, r] = q[iq + r]
    elif code == SPHERICAL:
        _quaternion_matrix(q[iq], q[iq + 1], q[iq + 2], q[iq + 3], rot)
    elif code == TRANSLATION:
        _axis_rotation(axis, i, 1.0, 0.0, rot)
        for r in range(3):
            trans[0, r] = q[iq + r]
    elif code == PLANAR:
        _axis_rotation(axis, i, q[iq + 2], q[iq + 3], rot)  # axis is e_z
        trans[0, 0] = q[iq]
        trans[0, 1] = q[iq + 1]


@helper
def _transforms(jtype, idx_q, axis, rot_p, trans_p, q, rot_j, trans_j, rot, trans):
    for i in range(1, jtype.shape[0]):
        _joint_motion(jtype[i], idx_q[i], axis, i, q, rot_j, trans_j)
        # (rot, trans)[i] = (rot_p, trans_p)[i] · (rot_j, trans_j)
        for r in range(3):
            for c in range(3):
                rot[i, r, c] = (
                    rot_p[i, r, 0] * rot_j[0, 0, c]
                    + rot_p[i, r, 1] * rot_j[0, 1, c]
                    + rot_p[i, r, 2] * rot_j[0, 2, c]
                )
            trans[i, r] = (
                trans_p[i, r]
                + rot_p[i, r, 0] * trans_j[0, 0]
                + rot_p[i, r, 1] * trans_j[0, 1]
                + rot_p[i, r, 2] * trans_j[0, 2]
            )


@helper
def joint_transforms(pm, q):
    """Parent -> joint frame transforms at q, ``liMi = jointPlacement · X_J(q)``, written to
    ``pm.ws_rotation`` and ``pm.ws_translation`` (Featherstone (2008), Table 5.1: ⁱX_λ = X_J X_T).
    """
    _transforms(
        pm.jtype,
        pm.idx_q,
        pm.axis,
        pm.placement_rotation,
        pm.placement_translation,
        q,
        pm.ws_joint_rotation,
        pm.ws_vector[3:],
        pm.ws_rotation,
        pm.ws_translation,
    )


@helper
def _invert_spd(d, k0, n, work):
    """Invert the n × n symmetric positive-definite block d[k0:k0+n, :n] in place (Cholesky
    L Lᵀ = D, then D⁻¹ = L⁻ᵀ L⁻¹); work[2] is overwritten."""
    if n == 1:
        d[k0, 0] = 1.0 / d[k0, 0]
        return
    for j in range(n):  # work[2] = L
        s = d[k0 + j, j]
        for k in range(j):
            s -= work[2, j, k] * work[2, j, k]
        work[2, j, j] = math.sqrt(s)
        for r in range(j + 1, n):
            s = d[k0 + r, j]
            for k in range(j):
                s -= work[2, r, k] * work[2, j, k]
            work[2, r, j] = s / work[2, j, j]
    for j in range(n):  # d = L⁻¹ (lower triangle), by forward substitution
        for r in range(n):
            s = 0.0
            if r == j:
                s = 1.0
            if r >= j:
                for k in range(j, r):
                    s -= work[2, r, k] * d[k0 + k, j]
                s /= work[2, r, r]
            d[k0 + r, j] = s
    for r in range(n):  # work[2] = L⁻¹
        for c in range(n):
            work[2, r, c] = d[k0 + r, c]
    for r in range(n):  # d = L⁻ᵀ L⁻¹
        for c in range(r, n):
            s = 0.0
            for k in range(c, n):
                s += work[2, k, r] * work[2, k, c]
            d[k0 + r, c] = s
            d[k0 + c, r] = s


@helper
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
    joint_transforms(pm, q)
    aba_from_transforms(pm, v, tau, pm.gravity, a_out)


@helper
def aba_from_transforms(pm, v, tau, gravity, a_out):
    """:func:`aba` once :func:`joint_transforms` has run, with the gravity (6,) given.

    With v = 0 and a null gravity it returns M(q)⁻¹ τ.
    """
    _aba_packed(pm, v, tau, gravity, a_out, True, pm.zeros, pm.zeros)


@helper
def aba_held(pm, v, tau, gravity, a_out, locked, held):
    """:func:`aba_from_transforms` with the dofs k where ``locked[k] != 0`` held at the
    accelerations ``held[k]`` (one-axis joints only): Featherstone's hybrid dynamics
    (Featherstone (2008), sec. 9.3), one ABA whose held joints pass their whole articulated
    inertia to their parents,

    pass 2, held i:  u_i = τ_i − Sᵀ p^A_i,  I^a = I^A_i,  p^a = p^A_i + I^A_i (c_i + S_i q̈_i);
    pass 3, held i:  a_i = ⁱX_λ a_λ + c_i + S_i q̈_i,
    held[k] ← Sᵀ (I^A_i a_i + p^A_i) + armature q̈_i − τ_i,

    the generalized force the dof's constraint applies (its joint row's reaction, the
    force of :func:`pinext.compiled.phase._locked_rows` at a fraction of its cost). Leaves no
    factors for :func:`minv_solve` at the held joints."""
    _aba_packed(pm, v, tau, gravity, a_out, True, locked, held)


@helper
def minv_from_transforms(pm, b, out):
    """out = M(q)⁻¹ b once :func:`joint_transforms` has run: the ABA with v = 0 and no gravity,
    its velocity terms skipped. Leaves the factors U_i, D_i⁻¹ for :func:`minv_solve`."""
    _aba_packed(pm, pm.zeros, b, pm.zeros, out, False, pm.zeros, pm.zeros)


@helper
def _aba_packed(pm, v, tau, gravity, a_out, moving, locked, held):
    """:func:`_aba` on the packed model's arrays and workspace (``locked``, ``held``:
    :func:`aba_held`; ``pm.zeros``: none held)."""
    _aba(
        pm.parent,
        pm.idx_v,
        pm.nv,
        pm.motion_subspace,
        pm.dof_axis,
        pm.inertia,
        pm.armature,
        gravity,
        pm.ws_rotation,
        pm.ws_translation,
        pm.ws_velocity,
        pm.ws_bias,
        pm.ws_acceleration,
        pm.ws_articulated_inertia,
        pm.ws_bias_force,
        pm.ws_u_matrix,
        pm.ws_d_inverse,
        pm.ws_u,
        pm.ws_matrix,
        pm.ws_vector,
        v,
        tau,
        a_out,
        moving,
        locked,
        held,
    )


@helper
def minv_solve(pm, b, out):
    """out = M(q)⁻¹ b reusing the factors of the last :func:`aba`, :func:`aba_from_transforms`
    or :func:`minv_from_transforms` call (at that call's q; any v, τ): U_i = I^A_i S_i and D_i⁻¹
    depend on q only, so only the force and acceleration recursions of Featherstone (2008),
    Table 7.1 run again, with v = 0, a_0 = 0 and p^A = 0:

    i = n..1: u_i = b_i − S_iᵀ p^A_i,  p^A_λ += λX*_i (p^A_i + U_i D_i⁻¹ u_i);
    i = 1..n: a'_i = ⁱX_λ a_λ,  x_i = D_i⁻¹ (u_i − U_iᵀ a'_i),  a_i = a'_i + S_i x_i.

    About a third of an ABA: the cheap way to the columns of M⁻¹ Jᵀ in a constrained solve.
    """
    _minv_solve(
        pm.parent,
        pm.idx_v,
        pm.nv,
        pm.motion_subspace,
        pm.dof_axis,
        pm.ws_rotation,
        pm.ws_translation,
        pm.ws_acceleration,
        pm.ws_bias_force,
        pm.ws_u_matrix,
        pm.ws_d_inverse,
        pm.ws_u,
        pm.ws_vector,
        b,
        out,
    )


@helper
def _minv_solve(
    parent, idx_v, nvs, s_rows, dof_axis, rot, trans, acc, pa, u_mat, d_inv, u, vec, b, out,
):  # fmt: skip
    nj = parent.shape[0]
    for i in range(nj):
        for r in range(6):
            pa[i, r] = 0.0
            acc[i, r] = 0.0
    for k in range(u.shape[0]):
        u[k] = b[k]
    for i in range(nj - 1, 0, -1):
        k0 = idx_v[i]
        n = nvs[i]
        for k in range(k0, k0 + n):  # u = b − Sᵀ p^A
            j = dof_axis[k]
            if j >= 0:
                u[k] -= pa[i, j]
            else:
                for r in range(6):
                    u[k] -= s_rows[k, r] * pa[i, r]
        lam = parent[i]
        if lam > 0:
            for a in range(n):  # vec[1] = D⁻¹ u
                s = 0.0
                for c in range(n):
                    s += d_inv[k0 + a, c] * u[k0 + c]
                vec[1, a] = s
            for r in range(6):  # vec[2] = p^A + U D⁻¹ u
                s = pa[i, r]
                for a in range(n):
                    s += u_mat[k0 + a, r] * vec[1, a]
                vec[2, r] = s
            add_force_to_parent(rot, trans, i, vec, 2, pa, lam)
    for i in range(1, nj):  # acc[i] = c_i = 0
        _joint_acceleration(
            i, parent, idx_v, nvs, s_rows, dof_axis, rot, trans, acc, u_mat, d_inv, u, vec, out
        )


@helper
def _joint_acceleration(
    i, parent, idx_v, nvs, s_rows, dof_axis, rot, trans, acc, u_mat, d_inv, u, vec, out,
):  # fmt: skip
    """Pass 3 of the ABA for joint i, acc[i] holding c_i on entry:
    a'_i = ⁱX_λ a_λ + c_i, out_i = D⁻¹ (u_i − U_iᵀ a'_i), a_i = a'_i + S_i out_i."""
    k0 = idx_v[i]
    n = nvs[i]
    for r in range(6):
        vec[0, r] = acc[i, r]
    motion_to_child(rot, trans, i, acc, parent[i], acc, i)
    for r in range(6):
        acc[i, r] += vec[0, r]
    if n == 1 and dof_axis[k0] >= 0:  # one axis: the same operations, without the loops
        s = u[k0]
        for r in range(6):
            s -= u_mat[k0, r] * acc[i, r]
        out[k0] = 0.0 + d_inv[k0, 0] * s
        acc[i, dof_axis[k0]] += out[k0]
        return
    for a in range(n):  # vec[1] = u − Uᵀ a'
        s = u[k0 + a]
        for r in range(6):
            s -= u_mat[k0 + a, r] * acc[i, r]
        vec[1, a] = s
    for a in range(n):
        s = 0.0
        for c in range(n):
            s += d_inv[k0 + a, c] * vec[1, c]
        out[k0 + a] = s
    for k in range(k0, k0 + n):  # a = a' + S q̈
        j = dof_axis[k]
        if j >= 0:
            acc[i, j] += out[k]
        else:
            for r in range(6):
                acc[i, r] += s_rows[k, r] * out[k]


@helper
def _axis_joint_inertia(
    i, k0, j, lam, armature, rot, trans, bias, ia, pa, u_mat, d_inv, u, work, vec, moving
):  # fmt: skip
    """Pass 2 of :func:`_aba` for a one-DOF joint whose S is the unit vector e_j: the
    operations of the general case in the same order (the same floating-point results)."""
    for r in range(6):
        u_mat[k0, r] = ia[i, r, j]
    u[k0] -= pa[i, j]
    d = 1.0 / (u_mat[k0, j] + armature[k0])
    d_inv[k0, 0] = d
    if lam <= 0:
        return
    ud = d * u[k0]
    for c in range(6):
        vec[3, c] = d * u_mat[k0, c]
    for r in range(6):
        ur = u_mat[k0, r]
        for c in range(6):
            ia[i, r, c] -= ur * vec[3, c]
    if moving:
        inertia_times(ia, i, bias, i, vec, 2)
    else:
        for r in range(6):
            vec[2, r] = 0.0
    for r in range(6):
        vec[2, r] = pa[i, r] + vec[2, r] + u_mat[k0, r] * ud
    add_inertia_to_parent(rot, trans, i, ia, i, ia, lam, work)
    add_force_to_parent(rot, trans, i, vec, 2, pa, lam)


@helper
def _held_joint_inertia(i, k0, j, lam, rot, trans, bias, ia, pa, u, work, vec, qdd):
    """Pass 2 of :func:`_aba` for a held one-axis joint (:func:`aba_held`): its whole
    articulated inertia and the bias force of its prescribed motion go to its parent."""
    u[k0] -= pa[i, j]
    if lam <= 0:
        return
    for r in range(6):
        vec[0, r] = bias[i, r]
    vec[0, j] += qdd
    inertia_times(ia, i, vec, 0, vec, 2)
    for r in range(6):
        vec[2, r] += pa[i, r]
    add_inertia_to_parent(rot, trans, i, ia, i, ia, lam, work)
    add_force_to_parent(rot, trans, i, vec, 2, pa, lam)


@helper
def _held_acceleration(i, k0, j, parent, armature, rot, trans, acc, ia, u, vec, held, a_out):
    """Pass 3 of :func:`_aba` for a held one-axis joint, acc[i] holding c_i on entry: its
    acceleration as prescribed, and into held[k0] the force that holds it."""
    for r in range(6):
        vec[0, r] = acc[i, r]
    motion_to_child(rot, trans, i, acc, parent[i], acc, i)
    qdd = held[k0]
    for r in range(6):
        acc[i, r] += vec[0, r]
    acc[i, j] += qdd
    a_out[k0] = qdd
    s = armature[k0] * qdd - u[k0]
    for c in range(6):
        s += ia[i, j, c] * acc[i, c]
    held[k0] = s


@helper
def _aba(
    parent, idx_v, nvs, s_rows, dof_axis, inertia, armature, gravity, rot, trans,
    vel, bias, acc, ia, pa, u_mat, d_inv, u, work, vec, v, tau, a_out, moving, locked, held,
):  # fmt: skip
    """The three passes of :func:`aba` over whole arrays (rows named by index).

    A row of S that is a unit vector e_j (``dof_axis`` = j ≥ 0) is applied by indexing:
    S q̇ adds q̇ to entry j, U = I^A S is column j of I^A, Sᵀ f is f_j; the results are the
    same floating-point numbers as the dense products. ``moving`` False means v = 0: the
    velocity terms (v_i, c_i, p^A_i) are zero and skipped.
    """
    nj = parent.shape[0]
    for r in range(6):
        vel[0, r] = 0.0
        acc[0, r] = -gravity[r]
    # pass 1: velocities, velocity-product accelerations, bias forces
    for i in range(1, nj):
        k0 = idx_v[i]
        for r in range(6):
            vec[0, r] = 0.0
        for r in range(6):
            for c in range(6):
                ia[i, r, c] = inertia[i, r, c]
        if not moving:
            for r in range(6):
                vel[i, r] = 0.0
                bias[i, r] = 0.0
                pa[i, r] = 0.0
            continue
        for k in range(k0, k0 + nvs[i]):  # vec[0] = S q̇
            j = dof_axis[k]
            if j >= 0:
                vec[0, j] += v[k]
            else:
                for r in range(6):
                    vec[0, r] += s_rows[k, r] * v[k]
        motion_to_child(rot, trans, i, vel, parent[i], vel, i)
        for r in range(6):
            vel[i, r] += vec[0, r]
        motion_cross(vel, i, vec, 0, bias, i)
        inertia_times(inertia, i, vel, i, vec, 1)
        force_cross(vel, i, vec, 1, pa, i)
    for k in range(u.shape[0]):
        u[k] = tau[k]
    # pass 2: articulated inertias and bias forces
    for i in range(nj - 1, 0, -1):
        k0 = idx_v[i]
        n = nvs[i]
        if n == 1 and dof_axis[k0] >= 0:  # one axis: the same operations, without the loops
            if locked[k0] != 0.0:
                _held_joint_inertia(i, k0, dof_axis[k0], parent[i], rot, trans, bias, ia, pa,
                                    u, work, vec, held[k0])  # fmt: skip
                continue
            _axis_joint_inertia(i, k0, dof_axis[k0], parent[i], armature, rot, trans, bias,
                                ia, pa, u_mat, d_inv, u, work, vec, moving)  # fmt: skip
            continue
        for k in range(k0, k0 + n):  # U = I^A S, u = τ − Sᵀ p^A
            j = dof_axis[k]
            if j >= 0:
                for r in range(6):
                    u_mat[k, r] = ia[i, r, j]
                u[k] -= pa[i, j]
            else:
                inertia_times(ia, i, s_rows, k, u_mat, k)
                s = 0.0
                for r in range(6):
                    s += s_rows[k, r] * pa[i, r]
                u[k] -= s
        for a in range(n):  # D = Sᵀ U + armature
            j = dof_axis[k0 + a]
            for b in range(n):
                if j >= 0:
                    s = u_mat[k0 + b, j]
                else:
                    s = 0.0
                    for r in range(6):
                        s += s_rows[k0 + a, r] * u_mat[k0 + b, r]
                d_inv[k0 + a, b] = s
            d_inv[k0 + a, a] += armature[k0 + a]
        _invert_spd(d_inv, k0, n, work)
        lam = parent[i]
        if lam > 0:
            for a in range(n):  # vec[1] = D⁻¹ u
                s = 0.0
                for b in range(n):
                    s += d_inv[k0 + a, b] * u[k0 + b]
                vec[1, a] = s
            for a in range(n):  # vec[3] = row a of D⁻¹ Uᵀ, I^a = I^A − U D⁻¹ Uᵀ
                for c in range(6):
                    t = 0.0
                    for b in range(n):
                        t += d_inv[k0 + a, b] * u_mat[k0 + b, c]
                    vec[3, c] = t
                for r in range(6):
                    ur = u_mat[k0 + a, r]
                    for c in range(6):
                        ia[i, r, c] -= ur * vec[3, c]
            if moving:
                inertia_times(ia, i, bias, i, vec, 2)  # vec[2] = I^a c
            else:
                for r in range(6):
                    vec[2, r] = 0.0
            for r in range(6):  # vec[2] = p^a
                s = pa[i, r] + vec[2, r]
                for a in range(n):
                    s += u_mat[k0 + a, r] * vec[1, a]
                vec[2, r] = s
            add_inertia_to_parent(rot, trans, i, ia, i, ia, lam, work)
            add_force_to_parent(rot, trans, i, vec, 2, pa, lam)
    # pass 3: accelerations
    for i in range(1, nj):
        for r in range(6):
            acc[i, r] = bias[i, r]
        k0 = idx_v[i]
        if nvs[i] == 1 and locked[k0] != 0.0:
            _held_acceleration(
                i, k0, dof_axis[k0], parent, armature, rot, trans, acc, ia, u, vec, held, a_out
            )
            continue
        _joint_acceleration(
            i, parent, idx_v, nvs, s_rows, dof_axis, rot, trans, acc, u_mat, d_inv, u, vec, a_out
        )
