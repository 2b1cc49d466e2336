"""Spatial-algebra helpers for the compiled kernels (Featherstone (2008), ch. 2).

Spatial vectors are 6-arrays in Pinocchio's order: a motion is (linear v, angular ω), a force
is (linear f, moment n), both at the frame's origin and in its axes. A frame change is given by
the rotation R and translation p of the child frame in its parent (Pinocchio's ``liMi``), so a
point x in child coordinates is R x + p in parent coordinates.

Every helper reads and writes rows of whole arrays, named by an index: ``motion_cross(v, i, m,
j, out, k)`` computes ``out[k] = v[i] × m[j]``, so that no view is created in a hot loop.

The kernels never allocate, and they are compiled without Numba's reference-counting runtime
(``_nrt=False``, see :data:`kernel` and :data:`helper`): with it, every call of a function that
LLVM does not inline increments and decrements the count of each array argument (two atomic
library calls per array), which measured 5× the cost of the joint transforms themselves.
"""

from __future__ import annotations

from .jit import COMPILED_ONLY, cached

#: The decorator of a compiled entry point: cached (:func:`pinext.compiled.jit.cached`); no
#: fastmath (results equal Pinocchio's to 1e-12); no reference counting (nothing allocates;
#: ``_nrt`` is a Numba compiler flag). Compiled once; its callers call it by symbol
#: (:class:`pinext.compiled.jit._Declared`). The phase is handed over as one pointer
#: (:mod:`pinext.compiled.struct`), so a call costs a few arguments: the right-hand side
#: (:func:`pinext.compiled.phase.rhs`) is a kernel that the integrators' loops call.
kernel = cached(_nrt=False, **COMPILED_ONLY)
#: The same with a Python entry point: a kernel Python calls (the rows of the right-hand side
#: for a start's Jacobian, the time-stepping loop).
entry = cached(_nrt=False, no_cfunc_wrapper=True)
#: The same, and inlined by LLVM into every caller (``forceinline``): the ABA, CRBA and momentum
#: kernels and their helpers. It spares copying the packed model's ~30 array structures on each
#: call: 240 → 65 ns for a one-joint ABA, 1.15 → 0.9 µs for UR5; and the small functions the
#: right-hand side calls on every evaluation (the inputs, the rows).
helper = cached(_nrt=False, forceinline=True, **COMPILED_ONLY)


@helper
def motion_cross(v, i, m, j, out, k):
    """Motion cross product, out[k] = v[i] × m[j] (Featherstone (2008), ch. 2).

    .. math:: \\begin{bmatrix} v \\\\ ω \\end{bmatrix} \\times
        \\begin{bmatrix} m_v \\\\ m_ω \\end{bmatrix} =
        \\begin{bmatrix} ω \\times m_v + v \\times m_ω \\\\ ω \\times m_ω \\end{bmatrix}
    """
    v0, v1, v2, w0, w1, w2 = v[i, 0], v[i, 1], v[i, 2], v[i, 3], v[i, 4], v[i, 5]
    a0, a1, a2, b0, b1, b2 = m[j, 0], m[j, 1], m[j, 2], m[j, 3], m[j, 4], m[j, 5]
    out[k, 0] = w1 * a2 - w2 * a1 + v1 * b2 - v2 * b1
    out[k, 1] = w2 * a0 - w0 * a2 + v2 * b0 - v0 * b2
    out[k, 2] = w0 * a1 - w1 * a0 + v0 * b1 - v1 * b0
    out[k, 3] = w1 * b2 - w2 * b1
    out[k, 4] = w2 * b0 - w0 * b2
    out[k, 5] = w0 * b1 - w1 * b0


@helper
def force_cross(v, i, f, j, out, k):
    """Force cross product, out[k] = v[i] ×* f[j] (Featherstone (2008), ch. 2).

    .. math:: \\begin{bmatrix} v \\\\ ω \\end{bmatrix} \\times^*
        \\begin{bmatrix} f \\\\ n \\end{bmatrix} =
        \\begin{bmatrix} ω \\times f \\\\ ω \\times n + v \\times f \\end{bmatrix}
    """
    v0, v1, v2, w0, w1, w2 = v[i, 0], v[i, 1], v[i, 2], v[i, 3], v[i, 4], v[i, 5]
    f0, f1, f2, n0, n1, n2 = f[j, 0], f[j, 1], f[j, 2], f[j, 3], f[j, 4], f[j, 5]
    out[k, 0] = w1 * f2 - w2 * f1
    out[k, 1] = w2 * f0 - w0 * f2
    out[k, 2] = w0 * f1 - w1 * f0
    out[k, 3] = w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1
    out[k, 4] = w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2
    out[k, 5] = w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0


@helper
def inertia_times(inertia, i, x, j, out, k):
    """out[k] = inertia[i] x[j]: a 6 × 6 spatial inertia times a motion (a momentum)."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += inertia[i, r, c] * x[j, c]
        out[k, r] = s


@helper
def motion_to_child(rot, trans, i, m, j, out, k):
    """Express a parent-frame motion in the frame of joint i, out[k] = ⁱX_λ m[j]
    (Featherstone (2008), ch. 2), with (R, p) = (rot[i], trans[i]):

    .. math:: \\begin{bmatrix} v' \\\\ ω' \\end{bmatrix} =
        \\begin{bmatrix} R^T (v - p \\times ω) \\\\ R^T ω \\end{bmatrix}
    """
    p0, p1, p2 = trans[i, 0], trans[i, 1], trans[i, 2]
    w0, w1, w2 = m[j, 3], m[j, 4], m[j, 5]
    l0 = m[j, 0] - (p1 * w2 - p2 * w1)
    l1 = m[j, 1] - (p2 * w0 - p0 * w2)
    l2 = m[j, 2] - (p0 * w1 - p1 * w0)
    for r in range(3):
        out[k, r] = rot[i, 0, r] * l0 + rot[i, 1, r] * l1 + rot[i, 2, r] * l2
        out[k, 3 + r] = rot[i, 0, r] * w0 + rot[i, 1, r] * w1 + rot[i, 2, r] * w2


@helper
def add_force_to_parent(rot, trans, i, f, j, out, k):
    """Add a force in the frame of joint i to one in its parent's frame, out[k] += λX*_i f[j]
    (Featherstone (2008), ch. 2, λX*_i = (ⁱX_λ)ᵀ), with (R, p) = (rot[i], trans[i]):

    .. math:: \\begin{bmatrix} f' \\\\ n' \\end{bmatrix} \\mathrel{+}=
        \\begin{bmatrix} R f \\\\ R n + p \\times R f \\end{bmatrix}
    """
    p0, p1, p2 = trans[i, 0], trans[i, 1], trans[i, 2]
    f0, f1, f2, n0, n1, n2 = f[j, 0], f[j, 1], f[j, 2], f[j, 3], f[j, 4], f[j, 5]
    g0 = rot[i, 0, 0] * f0 + rot[i, 0, 1] * f1 + rot[i, 0, 2] * f2
    g1 = rot[i, 1, 0] * f0 + rot[i, 1, 1] * f1 + rot[i, 1, 2] * f2
    g2 = rot[i, 2, 0] * f0 + rot[i, 2, 1] * f1 + rot[i, 2, 2] * f2
    out[k, 0] += g0
    out[k, 1] += g1
    out[k, 2] += g2
    out[k, 3] += rot[i, 0, 0] * n0 + rot[i, 0, 1] * n1 + rot[i, 0, 2] * n2 + p1 * g2 - p2 * g1
    out[k, 4] += rot[i, 1, 0] * n0 + rot[i, 1, 1] * n1 + rot[i, 1, 2] * n2 + p2 * g0 - p0 * g2
    out[k, 5] += rot[i, 2, 0] * n0 + rot[i, 2, 1] * n1 + rot[i, 2, 2] * n2 + p0 * g1 - p1 * g0


@helper
def add_inertia_to_parent(rot, trans, i, inertia, j, out, k, work):
    """Add a spatial inertia in the frame of joint i to one in its parent's frame,
    out[k] += λX*_i inertia[j] ⁱX_λ (Featherstone (2008), ch. 2 and Table 7.1).

    With the blocks of I' = diag(R, R) I diag(R, R)ᵀ = [[A, B], [Bᵀ, C]] and P = p×, moving the
    origin from the joint frame to its parent's gives

    .. math:: \\begin{bmatrix} A & B - A P \\\\ (B - A P)^T &
        C + P B + (P B)^T - P A P \\end{bmatrix}.

    Args:
        rot, trans: (nj, 3, 3) and (nj, 3) transforms; row i is used.
        inertia: (·, 6, 6) symmetric inertias; row j is used. out: (·, 6, 6); row k is added to.
        work: (≥ 2, 6, 6) scratch; rows 0 and 1 are overwritten.
    """
    # work[0][:3] = R [A B], work[0][3:, 3:] = R C
    for r in range(3):
        for c in range(6):
            work[0, r, c] = (
                rot[i, r, 0] * inertia[j, 0, c]
                + rot[i, r, 1] * inertia[j, 1, c]
                + rot[i, r, 2] * inertia[j, 2, c]
            )
        for c in range(3, 6):
            work[0, 3 + r, c] = (
                rot[i, r, 0] * inertia[j, 3, c]
                + rot[i, r, 1] * inertia[j, 4, c]
                + rot[i, r, 2] * inertia[j, 5, c]
            )
    # work[1]: A' = R A Rᵀ and C' = R C Rᵀ (upper triangles, symmetric), B' = R B Rᵀ
    for r in range(3):
        for c in range(3):
            work[1, r, 3 + c] = (
                work[0, r, 3] * rot[i, c, 0]
                + work[0, r, 4] * rot[i, c, 1]
                + work[0, r, 5] * rot[i, c, 2]
            )
        for c in range(r, 3):
            a = (
                work[0, r, 0] * rot[i, c, 0]
                + work[0, r, 1] * rot[i, c, 1]
                + work[0, r, 2] * rot[i, c, 2]
            )
            work[1, r, c] = a
            work[1, c, r] = a
            a = (
                work[0, 3 + r, 3] * rot[i, c, 0]
                + work[0, 3 + r, 4] * rot[i, c, 1]
                + work[0, 3 + r, 5] * rot[i, c, 2]
            )
            work[1, 3 + r, 3 + c] = a
            work[1, 3 + c, 3 + r] = a
    p0, p1, p2 = trans[i, 0], trans[i, 1], trans[i, 2]
    # work[0][:3, :3] = A P (column c of A P is A (p × e_c))
    for r in range(3):
        a0, a1, a2 = work[1, r, 0], work[1, r, 1], work[1, r, 2]
        work[0, r, 0] = a1 * p2 - a2 * p1
        work[0, r, 1] = a2 * p0 - a0 * p2
        work[0, r, 2] = a0 * p1 - a1 * p0
    # work[0][3:, 3:] = P B (column c is p × B[:, c]); work[0][3:, :3] = P (A P)
    for c in range(3):
        b0, b1, b2 = work[1, 0, 3 + c], work[1, 1, 3 + c], work[1, 2, 3 + c]
        work[0, 3, 3 + c] = p1 * b2 - p2 * b1
        work[0, 4, 3 + c] = p2 * b0 - p0 * b2
        work[0, 5, 3 + c] = p0 * b1 - p1 * b0
        e0, e1, e2 = work[0, 0, c], work[0, 1, c], work[0, 2, c]
        work[0, 3, c] = p1 * e2 - p2 * e1
        work[0, 4, c] = p2 * e0 - p0 * e2
        work[0, 5, c] = p0 * e1 - p1 * e0
    for r in range(3):
        for c in range(3):
            out[k, r, c] += work[1, r, c]
            b = work[1, r, 3 + c] - work[0, r, c]
            out[k, r, 3 + c] += b
            out[k, 3 + c, r] += b
            out[k, 3 + r, 3 + c] += (
                work[1, 3 + r, 3 + c]
                + work[0, 3 + r, 3 + c]
                + work[0, 3 + c, 3 + r]
                - work[0, 3 + r, c]
            )
