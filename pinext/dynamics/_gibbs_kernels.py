"""Compiled body loops of the Gibbs function (numba).

Inputs come from two Pinocchio calls: ``computeJointJacobiansTimeVariation`` (world Jacobian J
and its time variation J̇, velocities at the world origin) and ``computeStaticRegressor``
(every body placement [t_i | R_i] / m_total in one 3 × 4 nb array). Per model, the constant
arrays are

- ``tree`` (nb, 3) int: parent body (−1 for the world), first and one-past-last dof of the joint;
- ``body`` (nb, 13): mass, centre of mass in the joint frame (3), rotational inertia about the
  centre of mass in the joint frame (3 × 3, row-major).

Bodies are in Pinocchio's joint order, so a parent always precedes its children. 3-vectors are
tuples, so that the loops allocate nothing per body.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(cache=True)
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit(cache=True)
def _rot(place, scale, b, x, transpose):
    """R_b x (or R_bᵀ x) with R_b read from the placement array."""
    o = 4 * b + 1
    if transpose:
        return (
            scale * (place[0, o] * x[0] + place[1, o] * x[1] + place[2, o] * x[2]),
            scale * (place[0, o + 1] * x[0] + place[1, o + 1] * x[1] + place[2, o + 1] * x[2]),
            scale * (place[0, o + 2] * x[0] + place[1, o + 2] * x[1] + place[2, o + 2] * x[2]),
        )
    return (
        scale * (place[0, o] * x[0] + place[0, o + 1] * x[1] + place[0, o + 2] * x[2]),
        scale * (place[1, o] * x[0] + place[1, o + 1] * x[1] + place[1, o + 2] * x[2]),
        scale * (place[2, o] * x[0] + place[2, o + 1] * x[1] + place[2, o + 2] * x[2]),
    )


@njit(cache=True)
def _inertia(body, b, x):
    """I_b x, rotational inertia about the centre of mass in the joint frame."""
    return (
        body[b, 4] * x[0] + body[b, 5] * x[1] + body[b, 6] * x[2],
        body[b, 7] * x[0] + body[b, 8] * x[1] + body[b, 9] * x[2],
        body[b, 10] * x[0] + body[b, 11] * x[1] + body[b, 12] * x[2],
    )


@njit(cache=True)
def _chain(jac, djac, tree, v, a):
    """Twist and spatial acceleration of every body (at the world origin), shape (nb, 6) each."""
    nb = tree.shape[0]
    twist = np.zeros((nb, 6))
    accel = np.zeros((nb, 6))
    for b in range(nb):
        p = tree[b, 0]
        for r in range(6):
            tw = twist[p, r] if p >= 0 else 0.0
            ac = accel[p, r] if p >= 0 else 0.0
            for k in range(tree[b, 1], tree[b, 2]):
                tw += jac[r, k] * v[k]
                ac += djac[r, k] * v[k] + jac[r, k] * a[k]
            twist[b, r] = tw
            accel[b, r] = ac
    return twist, accel


@njit(cache=True)
def _body(place, scale, body, b, twist, accel):
    """Centre of mass c, local ω and α, and centre-of-mass acceleration a_c of body b."""
    o = 4 * b
    t = (place[0, o] * scale, place[1, o] * scale, place[2, o] * scale)
    c = _add(t, _rot(place, scale, b, (body[b, 1], body[b, 2], body[b, 3]), False))
    w = (twist[b, 3], twist[b, 4], twist[b, 5])
    al = (accel[b, 3], accel[b, 4], accel[b, 5])
    vc = _add((twist[b, 0], twist[b, 1], twist[b, 2]), _cross(w, c))
    ac = _add(_add((accel[b, 0], accel[b, 1], accel[b, 2]), _cross(al, c)), _cross(w, vc))
    return c, _rot(place, scale, b, w, True), _rot(place, scale, b, al, True), ac


@njit(cache=True)
def gibbs(jac, djac, place, scale, tree, body, armature, v, a):
    """S = Σ_b ½ m|a_c|² + ½ αᵀIα + α·(ω × Iω) + ½|ω|² ωᵀIω  +  ½ Σ_k I_a,k a_k²."""
    twist, accel = _chain(jac, djac, tree, v, a)
    s = 0.0
    for b in range(tree.shape[0]):
        c, w, al, ac = _body(place, scale, body, b, twist, accel)
        iw = _inertia(body, b, w)
        ia = _inertia(body, b, al)
        gyro = _cross(w, iw)
        s += 0.5 * body[b, 0] * _dot(ac, ac)
        s += al[0] * (0.5 * ia[0] + gyro[0]) + al[1] * (0.5 * ia[1] + gyro[1])
        s += al[2] * (0.5 * ia[2] + gyro[2]) + 0.5 * _dot(w, w) * _dot(w, iw)
    for k in range(a.shape[0]):
        s += 0.5 * armature[k] * a[k] * a[k]
    return s


@njit(cache=True)
def project(jac, tree, wrench):
    """Σ_b J_bᵀ w_b for body wrenches w_b = [force, moment] at the world origin, (nb, 6)."""
    total = wrench.copy()
    for b in range(tree.shape[0] - 1, -1, -1):  # children before parents
        p = tree[b, 0]
        if p >= 0:
            total[p] += total[b]
    tau = np.zeros(jac.shape[1])
    for b in range(tree.shape[0]):
        for k in range(tree[b, 1], tree[b, 2]):
            for r in range(6):
                tau[k] += jac[r, k] * total[b, r]
    return tau


@njit(cache=True)
def inertia_forces(jac, djac, place, scale, tree, body, armature, v, accelerations, gravity):
    """∂S/∂a + g(q) for each row of ``accelerations`` (m, nv), with gravity vector ``gravity``.

    The inertia wrench of body b, ∂S_b/∂(spatial acceleration), at the world origin is
    f = m (a_c − g), n = c × f + R (Iα + ω × Iω) with local ω, α: uniform gravity enters as
    the acceleration −g of the world.
    """
    nb = tree.shape[0]
    wrench = np.empty((nb, 6))
    result = np.empty((accelerations.shape[0], jac.shape[1]))
    for row in range(accelerations.shape[0]):
        a = accelerations[row]
        twist, accel = _chain(jac, djac, tree, v, a)
        for b in range(nb):
            c, w, al, ac = _body(place, scale, body, b, twist, accel)
            m = body[b, 0]
            f = (m * (ac[0] - gravity[0]), m * (ac[1] - gravity[1]), m * (ac[2] - gravity[2]))
            nl = _add(_inertia(body, b, al), _cross(w, _inertia(body, b, w)))
            n = _add(_cross(c, f), _rot(place, scale, b, nl, False))
            for i in range(3):
                wrench[b, i] = f[i]
                wrench[b, 3 + i] = n[i]
        result[row] = project(jac, tree, wrench)
        for k in range(a.shape[0]):
            result[row, k] += armature[k] * a[k]
    return result
