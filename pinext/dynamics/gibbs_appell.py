"""Acceleration energy (Gibbs function) and the Gibbs–Appell equations of motion.

For a rigid body of mass :math:`m`, centre of mass :math:`c`, rotational inertia :math:`I_c`
about the centre of mass, angular velocity :math:`\\omega` and angular acceleration
:math:`\\alpha`, the acceleration of the material point :math:`c + r` is
:math:`a_c + \\alpha \\times r + \\omega \\times (\\omega \\times r)`, so that (seed 004, eq. (34))

.. math::

    S_i = \\tfrac12 \\int |a_p|^2\\,dm
        = \\tfrac12 m |a_c|^2 + \\tfrac12 \\alpha^T I_c \\alpha
          + \\alpha \\cdot (\\omega \\times I_c \\omega)
          + \\tfrac12 |\\omega|^2\\, \\omega^T I_c \\omega .

The last term follows from the second moments :math:`\\int r r^T dm = \\tfrac12 \\mathrm{tr}(I_c)
\\mathbf 1 - I_c`; it does not depend on the accelerations but belongs to the complete Gibbs
function. Summed over the bodies of a Pinocchio model (plus :math:`\\tfrac12 I_a \\ddot q^2` for the
rotor inertias ``model.armature``, as Pinocchio's ``crba``/``rnea`` treat them), the Gibbs function
is quadratic in the accelerations (seed 004, eq. (35)):

.. math::

    S(q, v, a) = \\tfrac12 a^T M(q) a + a^T b(q, v) + S_0(q, v),

and the Gibbs–Appell equations (seed 004, eq. (39)) read :math:`\\partial S/\\partial a + g(q) =
\\tau + \\sum_k J_k^T f_k`.

Everything here is computed body by body from the kinematics (one Pinocchio call for the joint
Jacobians and their time variation, then numpy over the stacked bodies); Pinocchio's ``rnea``,
``crba`` and ``aba`` are never called, so that they remain independent references
(:mod:`pinext.check`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from pinext.exceptions import InvalidParameter

__all__ = [
    "AccelerationEnergyTerms",
    "acceleration_energy",
    "acceleration_energy_terms",
    "appell_inverse_dynamics",
    "christoffel_symbols",
    "clear_cache",
    "generalized_gravity",
    "mass_matrix_derivative",
]

# Levi-Civita symbol: cross(a, b)_i = eps_ijk a_j b_k (batched through einsum).
_EPS = np.zeros((3, 3, 3))
_EPS[0, 1, 2] = _EPS[1, 2, 0] = _EPS[2, 0, 1] = 1.0
_EPS[0, 2, 1] = _EPS[2, 1, 0] = _EPS[1, 0, 2] = -1.0


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of two (nb, 3) arrays."""
    return np.einsum("ijk,bj,bk->bi", _EPS, a, b)


def _mv(m: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Row-wise matrix-vector product (nb, 3, 3) x (nb, 3)."""
    return np.einsum("bij,bj->bi", m, x)


class _ModelStacks(NamedTuple):
    """Per-model constant arrays (cached)."""

    model: pin.Model  # kept to make the identity check safe
    nv: int
    njoints: int
    mass: np.ndarray  # (nb,) [kg]
    lever: np.ndarray  # (nb, 3) centre of mass in the joint frame [m]
    inertia: np.ndarray  # (nb, 3, 3) rotational inertia about the centre of mass [kg.m^2]
    support: np.ndarray  # (nb, nv) 1.0 where the dof moves body b
    armature: np.ndarray  # (nv,) [kg.m^2 or kg]


_CACHE: OrderedDict[int, _ModelStacks] = OrderedDict()
_CACHE_SIZE = 32


def clear_cache() -> None:
    """Forget the per-model constant stacks.

    The masses, centres of mass and inertias of a model are read once and cached (keyed on the
    model object). Call this after modifying ``model.inertias`` or ``model.armature`` in place.
    """
    _CACHE.clear()


def _stacks(model: pin.Model) -> _ModelStacks:
    key = id(model)
    st = _CACHE.get(key)
    if (
        st is not None
        and st.model is model
        and st.nv == model.nv
        and st.njoints == model.njoints
        and np.array_equal(st.armature, model.armature)
    ):
        return st
    nb = model.njoints - 1
    mass = np.empty(nb)
    lever = np.empty((nb, 3))
    inertia = np.empty((nb, 3, 3))
    support = np.zeros((nb, model.nv))
    for b in range(nb):
        j = b + 1
        y = model.inertias[j]
        mass[b] = y.mass
        lever[b] = y.lever
        inertia[b] = y.inertia
        for k in model.supports[j]:
            if k == 0:
                continue
            jm = model.joints[k]
            support[b, jm.idx_v : jm.idx_v + jm.nv] = 1.0
    st = _ModelStacks(
        model,
        model.nv,
        model.njoints,
        mass,
        lever,
        inertia,
        support,
        np.array(model.armature, dtype=float).copy(),
    )
    _CACHE[key] = st
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return st


class _BodyKinematics(NamedTuple):
    st: _ModelStacks
    jac: np.ndarray  # (6, nv) world joint Jacobian (velocities at the world origin)
    c: np.ndarray  # (nb, 3) centres of mass, world [m]
    inertia: np.ndarray  # (nb, 3, 3) inertia about the centre of mass, world axes
    omega: np.ndarray  # (nb, 3) angular velocities [rad/s]
    vc: np.ndarray  # (nb, 3) centre-of-mass velocities [m/s]
    alpha0: np.ndarray  # (nb, 3) angular accelerations at a = 0 [rad/s^2]
    ac0: np.ndarray  # (nb, 3) centre-of-mass accelerations at a = 0 [m/s^2]


def _kinematics(model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray) -> _BodyKinematics:
    """World-frame body kinematics from one Pinocchio pass (Jacobians and their time variation)."""
    st = _stacks(model)
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    if q.shape != (model.nq,) or v.shape != (model.nv,):
        raise InvalidParameter(
            f"expected q of shape ({model.nq},) and v of shape ({model.nv},), "
            f"got {q.shape} and {v.shape}"
        )
    pin.computeJointJacobiansTimeVariation(model, data, q, v)
    jac = np.asarray(data.J).reshape(6, model.nv)  # (6,) when nv == 1
    djac = np.asarray(data.dJ).reshape(6, model.nv)
    h = np.array([m.homogeneous for m in data.oMi.tolist()[1:]])
    rot = h[:, :3, :3]
    c = h[:, :3, 3] + _mv(rot, st.lever)
    inertia = rot @ st.inertia @ rot.transpose(0, 2, 1)
    sv = st.support * v  # (nb, nv)
    twist = sv @ jac.T  # (nb, 6): [velocity of the point at the world origin, omega]
    drift = sv @ djac.T  # (nb, 6): spatial acceleration at a = 0
    omega = twist[:, 3:]
    vc = twist[:, :3] + _cross(omega, c)
    alpha0 = drift[:, 3:]
    ac0 = drift[:, :3] + _cross(alpha0, c) + _cross(omega, vc)
    return _BodyKinematics(st, jac, c, inertia, omega, vc, alpha0, ac0)


def _accelerations(kin: _BodyKinematics, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Body angular accelerations and centre-of-mass accelerations for joint accelerations a."""
    sa = kin.st.support * a
    acc = sa @ kin.jac.T
    alpha = kin.alpha0 + acc[:, 3:]
    ac = kin.ac0 + acc[:, :3] + _cross(acc[:, 3:], kin.c)
    return alpha, ac


def _project(kin: _BodyKinematics, force: np.ndarray, moment: np.ndarray) -> np.ndarray:
    """Generalized forces of body wrenches given at the world origin: sum_b J_b^T w_b."""
    g = kin.st.support.T @ np.hstack((force, moment))  # (nv, 6)
    return np.einsum("kj,jk->j", kin.jac, g)


def _check_a(model: pin.Model, a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if a.shape != (model.nv,):
        raise InvalidParameter(f"expected a of shape ({model.nv},), got {a.shape}")
    return a


def _gibbs(kin: _BodyKinematics, alpha: np.ndarray, ac: np.ndarray, a: np.ndarray) -> float:
    """Sum of the rigid-body Gibbs functions (and rotor terms) for given body accelerations."""
    st = kin.st
    iw = _mv(kin.inertia, kin.omega)
    ia = _mv(kin.inertia, alpha)
    gyro = _cross(kin.omega, iw)
    w2 = np.einsum("bi,bi->b", kin.omega, kin.omega)
    s = (
        0.5 * np.dot(st.mass, np.einsum("bi,bi->b", ac, ac))
        + np.einsum("bi,bi->", alpha, 0.5 * ia + gyro)
        + 0.5 * np.dot(w2, np.einsum("bi,bi->b", kin.omega, iw))
        + 0.5 * np.dot(st.armature, a * a)
    )
    return float(s)


def acceleration_energy(
    model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray, a: np.ndarray
) -> float:
    """Complete Gibbs function (acceleration energy) of the model, seed 004 eq. (34).

    .. math::

        S = \\sum_i \\tfrac12 \\int_{B_i} |a_p|^2 dm + \\tfrac12 \\sum_j I_{a,j} \\ddot q_j^2

    including the terms that do not depend on the accelerations. Works for every Pinocchio joint
    type (free-flyer, spherical, planar, prismatic, revolute, ...).

    Args:
        model: Pinocchio model.
        data: Its data (overwritten: joint Jacobians and placements).
        q: Configuration, shape (nq,).
        v: Velocity, shape (nv,) [rad/s or m/s].
        a: Acceleration, shape (nv,) [rad/s^2 or m/s^2].

    Returns:
        S [J/s^2 = kg.m^2/s^4].
    """
    a = _check_a(model, a)
    kin = _kinematics(model, data, q, v)
    alpha, ac = _accelerations(kin, a)
    return _gibbs(kin, alpha, ac, a)


class AccelerationEnergyTerms(NamedTuple):
    """Decomposition of the Gibbs function, seed 004 eq. (35): S = ½ aᵀ M a + aᵀ b + S0."""

    mass_matrix: np.ndarray
    """Shape (nv, nv): ∂²S/∂a², the joint-space inertia matrix M(q)."""
    bias: np.ndarray
    """Shape (nv,): ∂S/∂a at a = 0, the Coriolis and centrifugal forces C(q, v) v."""
    s0: float
    """The part of S that does not depend on a [kg.m^2/s^4]."""

    def value(self, a: np.ndarray) -> float:
        """S(a) [kg.m^2/s^4]."""
        a = np.asarray(a, dtype=float)
        return float(0.5 * a @ self.mass_matrix @ a + a @ self.bias + self.s0)

    def gradient(self, a: np.ndarray) -> np.ndarray:
        """∂S/∂a = M a + b, shape (nv,) (generalized inertia forces)."""
        return self.mass_matrix @ np.asarray(a, dtype=float) + self.bias


def _inertia_wrench(
    kin: _BodyKinematics, alpha: np.ndarray, ac: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """∂S_b/∂(body spatial acceleration) as a wrench at the world origin."""
    f = kin.st.mass[:, None] * ac
    gyro = _cross(kin.omega, _mv(kin.inertia, kin.omega))
    n = _cross(kin.c, f) + _mv(kin.inertia, alpha) + gyro
    return f, n


def acceleration_energy_terms(
    model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray
) -> AccelerationEnergyTerms:
    """Mass matrix, bias and acceleration-free part of the Gibbs function, seed 004 eq. (35).

    .. math::

        M = \\sum_i J_i^T \\mathcal{I}_i J_i + \\mathrm{diag}(I_a), \\quad
        b = \\partial S / \\partial a |_{a=0}, \\quad S_0 = S|_{a=0}

    with :math:`J_i` the world Jacobian of body i and :math:`\\mathcal I_i` its spatial inertia at
    the world origin. (The seed writes the bias as ½ aᵀ V + ½ aᵀ D a; in (35) that split is not
    unique, here b is exactly C(q, v) v.)

    Args:
        model: Pinocchio model.
        data: Its data (overwritten).
        q: Configuration, shape (nq,).
        v: Velocity, shape (nv,).

    Returns:
        :class:`AccelerationEnergyTerms`.
    """
    kin = _kinematics(model, data, q, v)
    st = kin.st
    f, n = _inertia_wrench(kin, kin.alpha0, kin.ac0)
    bias = _project(kin, f, n)
    # spatial inertia of each body at the world origin, [linear; angular] ordering
    m = st.mass
    cx = np.einsum("ijk,bj->bik", _EPS, kin.c)  # [c]x with [c]x y = c x y
    nb = m.shape[0]
    y = np.zeros((nb, 6, 6))
    y[:, 0, 0] = y[:, 1, 1] = y[:, 2, 2] = m
    y[:, :3, 3:] = -m[:, None, None] * cx
    y[:, 3:, :3] = m[:, None, None] * cx
    y[:, 3:, 3:] = kin.inertia - m[:, None, None] * (cx @ cx)
    jb = st.support[:, None, :] * kin.jac[None, :, :]  # (nb, 6, nv)
    mass_matrix = np.einsum("bkj,bkl,blm->jm", jb, y, jb, optimize=True)
    mass_matrix[np.diag_indices_from(mass_matrix)] += st.armature
    s0 = _gibbs(kin, kin.alpha0, kin.ac0, np.zeros(model.nv))
    return AccelerationEnergyTerms(mass_matrix, bias, s0)


def generalized_gravity(model: pin.Model, data: pin.Data, q: np.ndarray) -> np.ndarray:
    """Generalized gravity forces g(q) = −Σ J_ciᵀ m_i g, seed 004 eq. (39) (Q_g).

    Computed body by body (not with Pinocchio's ``computeGeneralizedGravity``).

    Returns:
        Shape (nv,) [N.m or N].
    """
    kin = _kinematics(model, data, q, np.zeros(model.nv))
    return _gravity(kin, model)


def _gravity(kin: _BodyKinematics, model: pin.Model) -> np.ndarray:
    f = -kin.st.mass[:, None] * np.asarray(model.gravity.linear)[None, :]
    return _project(kin, f, _cross(kin.c, f))


def _external(model: pin.Model, data: pin.Data, fext) -> np.ndarray:
    """Σ J_kᵀ f_k for Pinocchio-style external forces (one pin.Force per joint, in the joint
    frame, as ``pin.rnea(model, data, q, v, a, fext)`` takes them)."""
    if len(fext) != model.njoints:
        raise InvalidParameter(
            f"fext must hold one pin.Force per joint (model.njoints = {model.njoints}), "
            f"got {len(fext)}"
        )
    st = _stacks(model)
    loc = np.array(
        [
            np.asarray(f.vector if isinstance(f, pin.Force) else f, dtype=float)
            for f in list(fext)[1:]
        ]
    )
    if not np.any(loc):
        return np.zeros(model.nv)
    h = np.array([m.homogeneous for m in data.oMi.tolist()[1:]])
    rot, p = h[:, :3, :3], h[:, :3, 3]
    fw = _mv(rot, loc[:, :3])
    nw = _mv(rot, loc[:, 3:]) + _cross(p, fw)
    g = st.support.T @ np.hstack((fw, nw))
    return np.einsum("kj,jk->j", np.asarray(data.J).reshape(6, model.nv), g)


def appell_inverse_dynamics(
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    fext=None,
) -> np.ndarray:
    """Joint forces from the Gibbs–Appell equations, seed 004 eq. (39).

    .. math::

        \\tau = \\frac{\\partial S}{\\partial \\ddot q} + g(q) - \\sum_k J_k^T f_k

    One kinematic pass, vectorised over the bodies; the inertia wrench of body i is
    :math:`\\partial S_i/\\partial(\\text{body acceleration}) =
    (m a_c,\\; c \\times m a_c + I\\alpha +
    \\omega \\times I \\omega)`.

    Args:
        model: Pinocchio model.
        data: Its data (overwritten).
        q: Configuration, shape (nq,).
        v: Velocity, shape (nv,).
        a: Acceleration, shape (nv,).
        fext: Optional external forces as Pinocchio's ``rnea`` takes them: a sequence of
            ``model.njoints`` ``pin.Force`` (or 6-vectors [force, torque]) applied to each
            joint's body, expressed in the joint frame at the joint origin. Index 0 (universe)
            is ignored.

    Returns:
        τ, shape (nv,) [N.m or N].
    """
    a = _check_a(model, a)
    kin = _kinematics(model, data, q, v)
    alpha, ac = _accelerations(kin, a)
    f, n = _inertia_wrench(kin, alpha, ac)
    fg = -kin.st.mass[:, None] * np.asarray(model.gravity.linear)[None, :]
    tau = _project(kin, f + fg, n + _cross(kin.c, fg)) + kin.st.armature * a
    if fext is not None:
        tau -= _external(model, data, fext)
    return tau


def mass_matrix_derivative(model: pin.Model, data: pin.Data, q: np.ndarray) -> np.ndarray:
    """Exact ∂M/∂q, shape (nv, nv, nv) with ``dM[i, j, k] = ∂M_ij/∂q_k``.

    Column j of M is the torque of RNEA at (q, v = 0, a = e_j) minus gravity, so
    ``dM[:, j, :]`` is Pinocchio's ``computeRNEADerivatives`` ∂τ/∂q at that point minus
    ``computeGeneralizedGravityDerivatives``. For joints on Lie groups (free-flyer, spherical,
    planar) ∂/∂q_k is the derivative along q ⊕ δ e_k (Pinocchio's tangent convention).
    """
    q = np.asarray(q, dtype=float)
    nv = model.nv
    zero = np.zeros(nv)
    dg = np.array(pin.computeGeneralizedGravityDerivatives(model, data, q), copy=True)
    dm = np.empty((nv, nv, nv))
    e = np.zeros(nv)
    for j in range(nv):
        e[:] = 0.0
        e[j] = 1.0
        dtau_dq = pin.computeRNEADerivatives(model, data, q, zero, e)[0]
        dm[:, j, :] = dtau_dq - dg
    return dm


def christoffel_symbols(model: pin.Model, data: pin.Data, q: np.ndarray) -> np.ndarray:
    """Christoffel symbols of the first kind of the mass matrix (seed 002), shape (nv, nv, nv).

    .. math::

        \\Gamma_{ijk} = \\tfrac12 \\left( \\frac{\\partial M_{ij}}{\\partial q_k}
            + \\frac{\\partial M_{ik}}{\\partial q_j} - \\frac{\\partial M_{jk}}{\\partial q_i}
            \\right), \\qquad \\Gamma(v, v)_i = \\sum_{jk} \\Gamma_{ijk} v_j v_k

    from the exact :func:`mass_matrix_derivative`. For models whose coordinates are Euclidean
    (revolute, prismatic, ... joints) Γ(v, v) = C(q, v) v. For Lie-group joints (free-flyer,
    spherical, planar) the velocity is a quasi-velocity and C v = Γ(v, v) − ad*_v(M v) on those
    joints (:func:`pinext.dynamics.momentum.hamel_term`).
    """
    dm = mass_matrix_derivative(model, data, q)
    return 0.5 * (dm + dm.transpose(0, 2, 1) - dm.transpose(2, 0, 1))
