"""Acceleration energy (Gibbs function) and the Gibbs–Appell equations of motion.

For a rigid body of mass :math:`m`, centre of mass :math:`c`, rotational inertia :math:`I_c`
about the centre of mass, angular velocity :math:`\\omega` and angular acceleration
:math:`\\alpha`, the acceleration of the material point :math:`c + r` is
:math:`a_c + \\alpha \\times r + \\omega \\times (\\omega \\times r)`, so that
(Negrean et al. 2009, eq. (34))

.. math::

    S_i = \\tfrac12 \\int |a_p|^2\\,dm
        = \\tfrac12 m |a_c|^2 + \\tfrac12 \\alpha^T I_c \\alpha
          + \\alpha \\cdot (\\omega \\times I_c \\omega)
          + \\tfrac12 |\\omega|^2\\, \\omega^T I_c \\omega .

The last term follows from the second moments :math:`\\int r r^T dm = \\tfrac12 \\mathrm{tr}(I_c)
\\mathbf 1 - I_c`; it does not depend on the accelerations but belongs to the complete Gibbs
function. Summed over the bodies of a Pinocchio model (plus :math:`\\tfrac12 I_a \\ddot q^2` for the
rotor inertias ``model.armature``, as Pinocchio's ``crba``/``rnea`` treat them), the Gibbs function
is quadratic in the accelerations (Negrean et al. 2009, eq. (35)):

.. math::

    S(q, v, a) = \\tfrac12 a^T M(q) a + a^T b(q, v) + S_0(q, v),

and the Gibbs–Appell equations (Negrean et al. 2009, eq. (39)) read
:math:`\\partial S/\\partial a + g(q) = \\tau + \\sum_k J_k^T f_k`.

Everything here is computed body by body from the kinematics: two Pinocchio calls (the joint
Jacobians with their time variation, and the static regressor, which holds every body placement
in one array), then compiled loops over the bodies (:mod:`pinext.dynamics._gibbs_kernels`).
Pinocchio's ``rnea``, ``crba`` and ``aba`` are never called, so that they remain independent
references (:mod:`pinext.check`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from pinext.dynamics import _gibbs_kernels as _kernels
from pinext.dynamics.first_call import FirstCallNotice
from pinext.exceptions import InvalidParameter

#: Seconds a first kernel call may take before the compilation notice is printed.
NOTICE_AFTER = 0.5

#: The compiled kernels, each saying at its first call that it compiles (about 10 s for all
#: of them in a fresh installation).
_k = FirstCallNotice(
    _kernels,
    "pinext: compiling Gibbs-Appell kernels (first call, cached afterwards)...",
    NOTICE_AFTER,
)

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


class _ModelStacks(NamedTuple):
    """Per-model constant arrays (cached), in the layout of :mod:`._gibbs_kernels`."""

    model: pin.Model  # kept to make the identity check safe
    nq: int
    nv: int
    tree: np.ndarray  # (nb, 3) int: parent body, first and one-past-last dof
    body: np.ndarray  # (nb, 13): mass, centre of mass (3), inertia about it (9), joint frame
    mass: float  # total mass of the bodies, the static regressor's normalisation [kg]


_CACHE: OrderedDict[int, _ModelStacks] = OrderedDict()
_CACHE_SIZE = 32


def clear_cache() -> None:
    """Forget the per-model constant stacks.

    The tree, masses, centres of mass and inertias of a model are read once and cached (keyed
    on the model object). Call this after modifying ``model.inertias`` in place.
    """
    _CACHE.clear()


def _stacks(model: pin.Model) -> _ModelStacks:
    key = id(model)
    st = _CACHE.get(key)
    if st is not None and st.model is model and st.nv == model.nv:
        return st
    joints = [model.joints[j] for j in range(1, model.njoints)]
    inertias = [model.inertias[j] for j in range(1, model.njoints)]
    tree = np.array(
        [[model.parents[jm.id] - 1, jm.idx_v, jm.idx_v + jm.nv] for jm in joints], dtype=np.int64
    ).reshape(-1, 3)
    body = np.array(
        [[y.mass, *y.lever, *np.ravel(y.inertia)] for y in inertias], dtype=float
    ).reshape(-1, 13)
    mass = 0.0
    for y in inertias:  # summed as computeStaticRegressor sums it
        mass += y.mass
    st = _ModelStacks(model, model.nq, model.nv, tree, body, mass)
    _CACHE[key] = st
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return st


def _kinematics(
    model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray, a: np.ndarray | None = None
) -> tuple[tuple, np.ndarray, np.ndarray]:
    """Checked inputs, and the body kinematics from Pinocchio for (q, v).

    Returns:
        ``(args, v, a)``: ``args`` are the leading arguments of the compiled loops — world
        Jacobian (6, nv), its time variation (6, nv), body placements [t | R] (3, 4 nb) and their
        scale, the model's tree and body constants, and ``model.armature`` (read on every call).
        ``a`` is zero when not given.
    """
    st = _stacks(model)
    q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
    a = np.zeros(st.nv) if a is None else np.asarray(a, dtype=float)
    if q.shape != (st.nq,) or v.shape != (st.nv,) or a.shape != (st.nv,):
        for name, x, n in (("q", q, st.nq), ("v", v, st.nv), ("a", a, st.nv)):
            if x.shape != (n,):
                raise InvalidParameter(f"expected {name} of shape ({n},), got {x.shape}")
    djac = pin.computeJointJacobiansTimeVariation(model, data, q, v)
    jac = data.J
    if st.nv == 1:  # Pinocchio hands out (6,) vectors
        jac, djac = jac.reshape(6, 1), djac.reshape(6, 1)
    if st.mass > 0.0:
        # [t_i | R_i] / total mass for every body, in one array
        place, scale = pin.computeStaticRegressor(model, data, q), st.mass
    else:  # massless bodies: the regressor is undefined, read the placements one by one
        place = np.hstack([m.homogeneous[:3] for m in data.oMi.tolist()[1:]] or [np.zeros((3, 0))])
        place, scale = place.reshape(3, -1, 4)[:, :, [3, 0, 1, 2]].reshape(3, -1), 1.0
    return (jac, djac, place, scale, st.tree, st.body, model.armature), v, a


def acceleration_energy(
    model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray, a: np.ndarray
) -> float:
    """Complete Gibbs function (acceleration energy) of the model, Negrean et al. (2009) eq. (34).

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
    args, v, a = _kinematics(model, data, q, v, a)
    return _k.gibbs(*args, v, a)


class AccelerationEnergyTerms(NamedTuple):
    """Decomposition of the Gibbs function, Negrean et al. (2009) eq. (35): S = ½ aᵀ M a + aᵀ b +
    S0, with the generalized gravity g of eq. (39)."""

    mass_matrix: np.ndarray
    """Shape (nv, nv): ∂²S/∂a², the joint-space inertia matrix M(q)."""
    bias: np.ndarray
    """Shape (nv,): ∂S/∂a at a = 0, the Coriolis and centrifugal forces C(q, v) v."""
    s0: float
    """The part of S that does not depend on a [kg.m^2/s^4]."""
    gravity: np.ndarray
    """Shape (nv,): generalized gravity forces g(q) [N.m or N]."""

    def value(self, a: np.ndarray) -> float:
        """S(a) [kg.m^2/s^4]."""
        a = np.asarray(a, dtype=float)
        return float(0.5 * a @ self.mass_matrix @ a + a @ self.bias + self.s0)

    def gradient(self, a: np.ndarray) -> np.ndarray:
        """∂S/∂a = M a + b, shape (nv,) (generalized inertia forces)."""
        return self.mass_matrix @ np.asarray(a, dtype=float) + self.bias


def acceleration_energy_terms(
    model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray
) -> AccelerationEnergyTerms:
    """Mass matrix, bias and acceleration-free part of the Gibbs function, Negrean et al. (2009)
    eq. (35).

    .. math::

        M = \\partial^2 S / \\partial a^2, \\quad
        b = \\partial S / \\partial a |_{a=0}, \\quad S_0 = S|_{a=0}

    Column k of M is ∂S/∂a at a = e_k without velocity or gravity; b and g are ∂S/∂a at a = 0
    with velocity only and with gravity only. (The seed writes the bias as ½ aᵀ V + ½ aᵀ D a;
    in (35) that split is not unique, here b is exactly C(q, v) v.)

    Args:
        model: Pinocchio model.
        data: Its data (overwritten).
        q: Configuration, shape (nq,).
        v: Velocity, shape (nv,).

    Returns:
        :class:`AccelerationEnergyTerms`.
    """
    args, v, zero = _kinematics(model, data, q, v)
    nv = v.shape[0]
    none = np.zeros((1, nv))
    m = _k.inertia_forces(*args, zero, np.eye(nv), np.zeros(3))
    bias = _k.inertia_forces(*args, v, none, np.zeros(3))[0]
    gravity = _k.inertia_forces(*args, zero, none, np.array(model.gravity.linear))[0]
    s0 = _k.gibbs(*args, v, zero)
    return AccelerationEnergyTerms(0.5 * (m + m.T), bias, s0, gravity)


def generalized_gravity(model: pin.Model, data: pin.Data, q: np.ndarray) -> np.ndarray:
    """Generalized gravity forces g(q) = −Σ J_ciᵀ m_i g, Negrean et al. (2009) eq. (39) (Q_g).

    Computed body by body (not with Pinocchio's ``computeGeneralizedGravity``).

    Returns:
        Shape (nv,) [N.m or N].
    """
    args, zero, _ = _kinematics(model, data, q, np.zeros(model.nv))
    return _k.inertia_forces(*args, zero, zero[None], np.array(model.gravity.linear))[0]


def _external(model: pin.Model, args: tuple, fext) -> np.ndarray:
    """Σ J_kᵀ f_k for Pinocchio-style external forces (one pin.Force per joint, in the joint
    frame, as ``pin.rnea(model, data, q, v, a, fext)`` takes them)."""
    if len(fext) != model.njoints:
        raise InvalidParameter(
            f"fext must hold one pin.Force per joint (model.njoints = {model.njoints}), "
            f"got {len(fext)}"
        )
    loc = np.array(
        [
            np.asarray(f.vector if isinstance(f, pin.Force) else f, dtype=float)
            for f in list(fext)[1:]
        ]
    ).reshape(-1, 6)
    if not np.any(loc):
        return np.zeros(model.nv)
    jac, _, place, scale, tree = args[:5]
    tr = scale * place.reshape(3, -1, 4).transpose(1, 0, 2)  # (nb, 3, 4): [t | R]
    fw = np.einsum("bij,bj->bi", tr[:, :, 1:], loc[:, :3])
    nw = np.einsum("bij,bj->bi", tr[:, :, 1:], loc[:, 3:]) + np.cross(tr[:, :, 0], fw)
    return _k.project(jac, tree, np.hstack((fw, nw)))


def appell_inverse_dynamics(
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    fext=None,
) -> np.ndarray:
    """Joint forces from the Gibbs–Appell equations, Negrean et al. (2009) eq. (39).

    .. math::

        \\tau = \\frac{\\partial S}{\\partial \\ddot q} + g(q) - \\sum_k J_k^T f_k

    One kinematic pass and one compiled loop over the bodies; the inertia wrench of body i is
    :math:`\\partial S_i/\\partial(\\text{body acceleration}) =
    (m a_c,\\; c \\times m a_c + I\\alpha + \\omega \\times I \\omega)`, and gravity
    enters as the acceleration −g of the world.

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
    args, v, a = _kinematics(model, data, q, v, a)
    tau = _k.inertia_forces(*args, v, a[None], np.array(model.gravity.linear))[0]
    if fext is not None:
        tau -= _external(model, args, fext)
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
    """Christoffel symbols of the first kind of the mass matrix (Lynch & Park, ch. 8).

    Shape (nv, nv, nv).

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
