"""Joint-space inertia (composite-rigid-body algorithm) and its sparse LTDL factorisation, compiled.

:func:`crba` equals ``pin.crba`` (armature included) with both triangles filled;
:func:`ltdl` and :func:`ltdl_solve` solve M x = b exploiting the branch-induced sparsity of M
(Featherstone (2008), ch. 6 — the same factorisation as Pinocchio's
``pin.cholesky``).
"""

from __future__ import annotations

from .aba import joint_transforms
from .spatial import add_force_to_parent, helper

__all__ = ["crba", "crba_from_transforms", "ltdl", "ltdl_half", "ltdl_solve"]


@helper
def crba(pm, q, m_out):
    """M(q) into ``m_out`` (nv, nv), both triangles, armature on the diagonal."""
    joint_transforms(pm, q)
    crba_from_transforms(pm, m_out)


@helper
def crba_from_transforms(pm, m_out):
    """:func:`crba` once :func:`pinext.compiled.joint_transforms` has run.

    Featherstone (2008), ch. 6 (CRBA), in local frames: I^c_i = I_i; for i = n..1,
    F = I^c_i S_i, H_ii = S_iᵀ F, then F is carried to the ancestors j (F = λX*_j F) and
    H_ij = H_jiᵀ = Fᵀ S_j; I^c_λ += λX*_i I^c_i ⁱX_λ. Finally H += diag(armature). The
    composite inertias are kept as their ten parameters (m, m c, I_o), as Pinocchio's
    ``Inertia`` keeps them (:func:`_composite_to_parent`), not as 6 × 6 matrices.
    """
    _crba(
        pm.parent,
        pm.idx_v,
        pm.nv,
        pm.motion_subspace,
        pm.inertia_parameters,
        pm.armature,
        pm.ws_rotation,
        pm.ws_translation,
        pm.ws_composite,
        pm.ws_vector,
        m_out,
    )


@helper
def _crba(parent, idx_v, nvs, s_rows, parameters, armature, rot, trans, comp, vec, m_out):
    nj = parent.shape[0]
    for r in range(m_out.shape[0]):  # entries between unrelated branches stay zero
        for c in range(m_out.shape[1]):
            m_out[r, c] = 0.0
    for i in range(1, nj):
        for r in range(10):
            comp[i, r] = parameters[i, r]
    for i in range(nj - 1, 0, -1):
        for k in range(idx_v[i], idx_v[i] + nvs[i]):
            _composite_times(comp, i, s_rows, k, vec, 0)  # F = I^c_i S_k, frame of joint i
            for kk in range(idx_v[i], idx_v[i] + nvs[i]):
                s = 0.0
                for r in range(6):
                    s += s_rows[kk, r] * vec[0, r]
                m_out[k, kk] = s
            j = i
            while parent[j] > 0:
                for r in range(6):  # F in the frame of λ(j)
                    vec[1, r] = 0.0
                add_force_to_parent(rot, trans, j, vec, 0, vec, 1)
                for r in range(6):
                    vec[0, r] = vec[1, r]
                j = parent[j]
                for kk in range(idx_v[j], idx_v[j] + nvs[j]):
                    s = 0.0
                    for r in range(6):
                        s += s_rows[kk, r] * vec[0, r]
                    m_out[k, kk] = s
                    m_out[kk, k] = s
        if parent[i] > 0:
            _composite_to_parent(rot, trans, i, comp, parent[i])
    for k in range(m_out.shape[0]):
        m_out[k, k] += armature[k]


@helper
def _composite_times(comp, i, m, j, out, k):
    """out[k] = I m[j]: the momentum of motion m[j] = (v, ω) under the inertia of ten
    parameters comp[i] = (m, h = m c, I_o upper triangle): (m v − h × ω, h × v + I_o ω)."""
    mass, h0, h1, h2 = comp[i, 0], comp[i, 1], comp[i, 2], comp[i, 3]
    v0, v1, v2, w0, w1, w2 = m[j, 0], m[j, 1], m[j, 2], m[j, 3], m[j, 4], m[j, 5]
    out[k, 0] = mass * v0 - (h1 * w2 - h2 * w1)
    out[k, 1] = mass * v1 - (h2 * w0 - h0 * w2)
    out[k, 2] = mass * v2 - (h0 * w1 - h1 * w0)
    out[k, 3] = h1 * v2 - h2 * v1 + comp[i, 4] * w0 + comp[i, 7] * w1 + comp[i, 8] * w2
    out[k, 4] = h2 * v0 - h0 * v2 + comp[i, 7] * w0 + comp[i, 5] * w1 + comp[i, 9] * w2
    out[k, 5] = h0 * v1 - h1 * v0 + comp[i, 8] * w0 + comp[i, 9] * w1 + comp[i, 6] * w2


@helper
def _composite_to_parent(rot, trans, i, comp, lam):
    """comp[lam] += the inertia comp[i] of the frame of joint i in the frame of its parent,
    with (R, p) = (rot[i], trans[i]): m += m_i, h += g + m_i p with g = R h_i, and, as a point
    mass at y = R x + p contributes m (|y|² 1 − y yᵀ) about the parent's origin,
    I_o += R I_o,i Rᵀ + 2 (g · p) 1 − g pᵀ − p gᵀ + m_i (|p|² 1 − p pᵀ)."""
    m, h0, h1, h2 = comp[i, 0], comp[i, 1], comp[i, 2], comp[i, 3]
    xx, yy, zz, xy, xz, yz = comp[i, 4], comp[i, 5], comp[i, 6], comp[i, 7], comp[i, 8], comp[i, 9]
    p0, p1, p2 = trans[i, 0], trans[i, 1], trans[i, 2]
    g0 = rot[i, 0, 0] * h0 + rot[i, 0, 1] * h1 + rot[i, 0, 2] * h2
    g1 = rot[i, 1, 0] * h0 + rot[i, 1, 1] * h1 + rot[i, 1, 2] * h2
    g2 = rot[i, 2, 0] * h0 + rot[i, 2, 1] * h1 + rot[i, 2, 2] * h2
    a00 = rot[i, 0, 0] * xx + rot[i, 0, 1] * xy + rot[i, 0, 2] * xz  # A = R I_o
    a01 = rot[i, 0, 0] * xy + rot[i, 0, 1] * yy + rot[i, 0, 2] * yz
    a02 = rot[i, 0, 0] * xz + rot[i, 0, 1] * yz + rot[i, 0, 2] * zz
    a10 = rot[i, 1, 0] * xx + rot[i, 1, 1] * xy + rot[i, 1, 2] * xz
    a11 = rot[i, 1, 0] * xy + rot[i, 1, 1] * yy + rot[i, 1, 2] * yz
    a12 = rot[i, 1, 0] * xz + rot[i, 1, 1] * yz + rot[i, 1, 2] * zz
    a20 = rot[i, 2, 0] * xx + rot[i, 2, 1] * xy + rot[i, 2, 2] * xz
    a21 = rot[i, 2, 0] * xy + rot[i, 2, 1] * yy + rot[i, 2, 2] * yz
    a22 = rot[i, 2, 0] * xz + rot[i, 2, 1] * yz + rot[i, 2, 2] * zz
    gp = 2.0 * (g0 * p0 + g1 * p1 + g2 * p2)
    pp = p0 * p0 + p1 * p1 + p2 * p2
    comp[lam, 0] += m
    comp[lam, 1] += g0 + m * p0
    comp[lam, 2] += g1 + m * p1
    comp[lam, 3] += g2 + m * p2
    comp[lam, 4] += (
        a00 * rot[i, 0, 0] + a01 * rot[i, 0, 1] + a02 * rot[i, 0, 2]
        + gp - 2.0 * g0 * p0 + m * (pp - p0 * p0)
    )  # fmt: skip
    comp[lam, 5] += (
        a10 * rot[i, 1, 0] + a11 * rot[i, 1, 1] + a12 * rot[i, 1, 2]
        + gp - 2.0 * g1 * p1 + m * (pp - p1 * p1)
    )  # fmt: skip
    comp[lam, 6] += (
        a20 * rot[i, 2, 0] + a21 * rot[i, 2, 1] + a22 * rot[i, 2, 2]
        + gp - 2.0 * g2 * p2 + m * (pp - p2 * p2)
    )  # fmt: skip
    comp[lam, 7] += (
        a00 * rot[i, 1, 0] + a01 * rot[i, 1, 1] + a02 * rot[i, 1, 2]
        - g0 * p1 - p0 * g1 - m * p0 * p1
    )  # fmt: skip
    comp[lam, 8] += (
        a00 * rot[i, 2, 0] + a01 * rot[i, 2, 1] + a02 * rot[i, 2, 2]
        - g0 * p2 - p0 * g2 - m * p0 * p2
    )  # fmt: skip
    comp[lam, 9] += (
        a10 * rot[i, 2, 0] + a11 * rot[i, 2, 1] + a12 * rot[i, 2, 2]
        - g1 * p2 - p1 * g2 - m * p1 * p2
    )  # fmt: skip


@helper
def ltdl(pm, m):
    """Factorise M = Lᵀ D L in place (Featherstone (2008), ch. 6, LTDL), λ the dof parents:

    for k = n..1: for i = λ(k), λ(λ(k)), ...: a = H_ki / H_kk; H_ij −= H_kj a for j = i,
    λ(i), ...; H_ki = a. Afterwards H holds D on its diagonal and L below it.
    Entries between unrelated branches must be zero on entry (as :func:`crba` leaves them).
    """
    lam = pm.dof_parent
    for k in range(m.shape[0] - 1, -1, -1):
        i = lam[k]
        while i >= 0:
            a = m[k, i] / m[k, k]
            j = i
            while j >= 0:
                m[i, j] -= m[k, j] * a
                j = lam[j]
            m[k, i] = a
            i = lam[i]


@helper
def ltdl_solve(pm, factors, b):
    """Solve M x = b in place (b becomes x) with the factors of :func:`ltdl`
    (Featherstone (2008), ch. 6): x = L⁻¹ D⁻¹ L⁻ᵀ b."""
    ltdl_half(pm, factors, b)
    n = b.shape[0]
    for i in range(n):  # b = D⁻¹ b
        b[i] /= factors[i, i]
    lam = pm.dof_parent
    for i in range(n):  # b = L⁻¹ b
        j = lam[i]
        while j >= 0:
            b[i] -= factors[i, j] * b[j]
            j = lam[j]


@helper
def ltdl_half(pm, factors, b):
    """b = L⁻ᵀ b in place, the first half of :func:`ltdl_solve`: with z = L⁻ᵀ b,
    bᵀ M⁻¹ c = zᵀ D⁻¹ (L⁻ᵀ c)."""
    lam = pm.dof_parent
    for i in range(b.shape[0] - 1, -1, -1):
        j = lam[i]
        while j >= 0:
            b[j] -= factors[i, j] * b[i]
            j = lam[j]
