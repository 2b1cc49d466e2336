"""Joint-space inertia (composite-rigid-body algorithm) and its sparse LTDL factorisation, compiled.

:func:`crba` equals ``pin.crba`` (armature included) with both triangles filled;
:func:`ltdl` and :func:`ltdl_solve` solve M x = b exploiting the branch-induced sparsity of M
(Featherstone (2008), ch. 6 — the same factorisation as Pinocchio's
``pin.cholesky``).
"""

from __future__ import annotations

from .aba import joint_transforms
from .spatial import add_force_to_parent, add_inertia_to_parent, helper, inertia_times

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
    I^c_λ += λX*_i I^c_i ⁱX_λ; F = I^c_i S_i, H_ii = S_iᵀ F, then F is carried to the
    ancestors j (F = λX*_j F) and H_ij = H_jiᵀ = Fᵀ S_j. Finally H += diag(armature).
    """
    _crba(
        pm.parent,
        pm.idx_v,
        pm.nv,
        pm.motion_subspace,
        pm.inertia,
        pm.armature,
        pm.ws_rotation,
        pm.ws_translation,
        pm.ws_articulated_inertia,
        pm.ws_matrix,
        pm.ws_vector,
        m_out,
    )


@helper
def _crba(parent, idx_v, nvs, s_rows, inertia, armature, rot, trans, ic, work, vec, m_out):
    nj = parent.shape[0]
    for r in range(m_out.shape[0]):  # entries between unrelated branches stay zero
        for c in range(m_out.shape[1]):
            m_out[r, c] = 0.0
    for i in range(1, nj):
        for r in range(6):
            for c in range(6):
                ic[i, r, c] = inertia[i, r, c]
    for i in range(nj - 1, 0, -1):
        lam = parent[i]
        if lam > 0:
            add_inertia_to_parent(rot, trans, i, ic, i, ic, lam, work)
        for k in range(idx_v[i], idx_v[i] + nvs[i]):
            inertia_times(ic, i, s_rows, k, vec, 0)  # F = I^c_i S_k, in the frame of joint i
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
    for k in range(m_out.shape[0]):
        m_out[k, k] += armature[k]


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
