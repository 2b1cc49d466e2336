"""Spatial-algebra helpers for the compiled kernels (Featherstone (2008), ch. 2).

Spatial vectors are 6-arrays in Pinocchio's order: a motion is (linear v, angular ω), a force
is (linear f, moment n), both at the frame's origin and in its axes. A frame change is given by
the rotation R and translation p of the child frame in its parent (Pinocchio's ``liMi``), so a
point x in child coordinates is R x + p in parent coordinates.

Every helper writes into an output array (no allocation), so that they can run in a hot loop.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True)
def motion_cross(v, m, out):
    """Motion cross product, out = v × m (Featherstone (2008), eq. (2.31)).

    .. math:: \\begin{bmatrix} v \\\\ ω \\end{bmatrix} \\times
        \\begin{bmatrix} m_v \\\\ m_ω \\end{bmatrix} =
        \\begin{bmatrix} ω \\times m_v + v \\times m_ω \\\\ ω \\times m_ω \\end{bmatrix}
    """
    v0, v1, v2, w0, w1, w2 = v[0], v[1], v[2], v[3], v[4], v[5]
    a0, a1, a2, b0, b1, b2 = m[0], m[1], m[2], m[3], m[4], m[5]
    out[0] = w1 * a2 - w2 * a1 + v1 * b2 - v2 * b1
    out[1] = w2 * a0 - w0 * a2 + v2 * b0 - v0 * b2
    out[2] = w0 * a1 - w1 * a0 + v0 * b1 - v1 * b0
    out[3] = w1 * b2 - w2 * b1
    out[4] = w2 * b0 - w0 * b2
    out[5] = w0 * b1 - w1 * b0


@njit(cache=True)
def force_cross(v, f, out):
    """Force cross product, out = v ×* f (Featherstone (2008), eq. (2.32)).

    .. math:: \\begin{bmatrix} v \\\\ ω \\end{bmatrix} \\times^*
        \\begin{bmatrix} f \\\\ n \\end{bmatrix} =
        \\begin{bmatrix} ω \\times f \\\\ ω \\times n + v \\times f \\end{bmatrix}
    """
    v0, v1, v2, w0, w1, w2 = v[0], v[1], v[2], v[3], v[4], v[5]
    f0, f1, f2, n0, n1, n2 = f[0], f[1], f[2], f[3], f[4], f[5]
    out[0] = w1 * f2 - w2 * f1
    out[1] = w2 * f0 - w0 * f2
    out[2] = w0 * f1 - w1 * f0
    out[3] = w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1
    out[4] = w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2
    out[5] = w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0


@njit(cache=True)
def matvec6(matrix, x, out):
    """out = matrix x for a 6 × 6 matrix (spatial inertia times motion)."""
    for r in range(6):
        s = 0.0
        for k in range(6):
            s += matrix[r, k] * x[k]
        out[r] = s


@njit(cache=True)
def motion_to_child(rotation, translation, m, out):
    """Express a parent-frame motion in the child frame, out = X m (Featherstone (2008),
    eq. (2.24), X = ⁱX_λ):

    .. math:: \\begin{bmatrix} v' \\\\ ω' \\end{bmatrix} =
        \\begin{bmatrix} R^T (v - p \\times ω) \\\\ R^T ω \\end{bmatrix}
    """
    p0, p1, p2 = translation[0], translation[1], translation[2]
    w0, w1, w2 = m[3], m[4], m[5]
    l0 = m[0] - (p1 * w2 - p2 * w1)
    l1 = m[1] - (p2 * w0 - p0 * w2)
    l2 = m[2] - (p0 * w1 - p1 * w0)
    for r in range(3):
        out[r] = rotation[0, r] * l0 + rotation[1, r] * l1 + rotation[2, r] * l2
        out[3 + r] = rotation[0, r] * w0 + rotation[1, r] * w1 + rotation[2, r] * w2


@njit(cache=True)
def add_force_to_parent(rotation, translation, f, out):
    """Add a child-frame force to a parent-frame one, out += Xᵀ f (Featherstone (2008),
    eq. (2.25), ``λX*_i = (ⁱX_λ)ᵀ``):

    .. math:: \\begin{bmatrix} f' \\\\ n' \\end{bmatrix} \\mathrel{+}=
        \\begin{bmatrix} R f \\\\ R n + p \\times R f \\end{bmatrix}
    """
    p0, p1, p2 = translation[0], translation[1], translation[2]
    g0 = rotation[0, 0] * f[0] + rotation[0, 1] * f[1] + rotation[0, 2] * f[2]
    g1 = rotation[1, 0] * f[0] + rotation[1, 1] * f[1] + rotation[1, 2] * f[2]
    g2 = rotation[2, 0] * f[0] + rotation[2, 1] * f[1] + rotation[2, 2] * f[2]
    out[0] += g0
    out[1] += g1
    out[2] += g2
    for r in range(3):
        out[3 + r] += rotation[r, 0] * f[3] + rotation[r, 1] * f[4] + rotation[r, 2] * f[5]
    out[3] += p1 * g2 - p2 * g1
    out[4] += p2 * g0 - p0 * g2
    out[5] += p0 * g1 - p1 * g0


@njit(cache=True)
def add_inertia_to_parent(rotation, translation, inertia, out, work):
    """Add a child-frame spatial inertia to a parent-frame one, out += Xᵀ I X
    (Featherstone (2008), eq. (2.66) and Table 7.1, ``I^A_λ += λX*_i I^a_i ⁱX_λ``).

    With the blocks of I' = diag(R, R) I diag(R, R)ᵀ = [[A, B], [Bᵀ, C]] and P = p×, the shift of
    the origin from the child to the parent frame gives

    .. math:: \\begin{bmatrix} A & B - A P \\\\ \\cdot &
        C + P B + (P B)^T - P A P \\end{bmatrix}.

    Args:
        rotation: (3, 3) R. translation: (3,) p. inertia: (6, 6) symmetric I.
        out: (6, 6) inertia to add to. work: (≥ 2, 6, 6) scratch.
    """
    w = work[0]
    y = work[1]
    # w = diag(R, R) I
    for br in range(2):
        for r in range(3):
            for c in range(6):
                w[3 * br + r, c] = (
                    rotation[r, 0] * inertia[3 * br, c]
                    + rotation[r, 1] * inertia[3 * br + 1, c]
                    + rotation[r, 2] * inertia[3 * br + 2, c]
                )
    # y = w diag(R, R)ᵀ (upper triangle of the symmetric result suffices)
    for r in range(6):
        for bc in range(2):
            for c in range(3):
                y[r, 3 * bc + c] = (
                    w[r, 3 * bc] * rotation[c, 0]
                    + w[r, 3 * bc + 1] * rotation[c, 1]
                    + w[r, 3 * bc + 2] * rotation[c, 2]
                )
    p0, p1, p2 = translation[0], translation[1], translation[2]
    # w[:3, :3] = A P  (column c of A P is A (p × e_c))
    for r in range(3):
        a0, a1, a2 = y[r, 0], y[r, 1], y[r, 2]
        w[r, 0] = a1 * p2 - a2 * p1
        w[r, 1] = a2 * p0 - a0 * p2
        w[r, 2] = a0 * p1 - a1 * p0
    # w[3:, 3:] = P B  (column c of P B is p × B[:, c]); w[3:, :3] = P (A P)
    for c in range(3):
        b0, b1, b2 = y[0, 3 + c], y[1, 3 + c], y[2, 3 + c]
        w[3, 3 + c] = p1 * b2 - p2 * b1
        w[4, 3 + c] = p2 * b0 - p0 * b2
        w[5, 3 + c] = p0 * b1 - p1 * b0
        e0, e1, e2 = w[0, c], w[1, c], w[2, c]
        w[3, c] = p1 * e2 - p2 * e1
        w[4, c] = p2 * e0 - p0 * e2
        w[5, c] = p0 * e1 - p1 * e0
    for r in range(3):
        for c in range(3):
            out[r, c] += y[r, c]
            b = y[r, 3 + c] - w[r, c]
            out[r, 3 + c] += b
            out[3 + c, r] += b
            out[3 + r, 3 + c] += y[3 + r, 3 + c] + w[3 + r, 3 + c] + w[3 + c, 3 + r] - w[3 + r, c]
