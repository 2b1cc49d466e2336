"""Gauss's principle of least constraint on the Gibbs function (Negrean et al. 2009, §4;
Lynch & Park, ch. 8).

The accelerations minimise Appell's function

.. math::

    Z(a) = S(q, v, a) - (\\tau - g(q))^T a = \\tfrac12 a^T M a + a^T b + S_0 - (\\tau - g)^T a

subject to linear acceleration-level constraints :math:`A a = r`: holonomic constraints
differentiated twice (point contacts), or Pfaffian constraints :math:`A(q) v = 0` (Lynch & Park,
ch. 8, nonholonomic allowed) differentiated once, :math:`A \\dot v = -\\dot A v`. The stationarity
conditions are :math:`M a + b + g = \\tau + A^T \\lambda`: λ are the constraint forces in the
sign convention of Pinocchio's ``constraintDynamics`` (``M a + nle = τ + Jᵀλ``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

import numpy as np
import pinocchio as pin
import scipy.linalg

from pinext.dynamics.gibbs_appell import acceleration_energy_terms
from pinext.exceptions import ConstraintError, InvalidParameter, NameNotFound

__all__ = [
    "AccelerationConstraint",
    "AccelerationEquation",
    "GaussResult",
    "PfaffianConstraint",
    "PointContact",
    "gauss_forward_dynamics",
]


class AccelerationEquation(Protocol):
    """Anything that yields an acceleration-level constraint A a = r at (q, v): every
    :class:`pinext.contact.Constraint` (plane, point, peg-in-hole, implicit surface), a
    :class:`PointContact`, a :class:`PfaffianConstraint`, an :class:`AccelerationConstraint`."""

    def acceleration_equation(
        self, model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(A, r) with A of shape (k, nv) and r of shape (k,)."""
        ...


class AccelerationConstraint:
    """A fixed linear constraint A a = r (e.g. built by the caller).

    Args:
        matrix: A, shape (k, nv).
        rhs: r, shape (k,) (default zero).
    """

    def __init__(self, matrix: np.ndarray, rhs: np.ndarray | None = None) -> None:
        self.matrix = np.atleast_2d(np.asarray(matrix, dtype=float))
        self.rhs = np.zeros(self.matrix.shape[0]) if rhs is None else np.asarray(rhs, float)

    def acceleration_equation(self, model, data, q, v):
        """(A, r)."""
        return self.matrix, self.rhs


class PfaffianConstraint:
    """Pfaffian velocity constraint A(q) v = 0 (holonomic or not), Lynch & Park (ch. 8).

    Differentiated once: A(q) a = −Ȧ(q, v) v.

    Args:
        matrix: Callable q ↦ A(q), shape (k, nv).
        matrix_dot: Optional callable (q, v) ↦ Ȧ(q, v) = d/dt A(q(t)). When omitted, Ȧ v is the
            central difference (A(q ⊕ εv) − A(q ⊖ εv)) v / (2ε) with ε = 1e-6 / max(1, |v|)
            (error O(ε²)).
        stabilization: Gain γ [1/s] of the velocity-level drift correction
            A a = −Ȧ v − γ A v (Baumgarte for a first-order constraint); 0 disables it.
    """

    def __init__(
        self,
        matrix: Callable[[np.ndarray], np.ndarray],
        matrix_dot: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
        stabilization: float = 0.0,
    ) -> None:
        if stabilization < 0.0:
            raise InvalidParameter(f"stabilization must be >= 0, got {stabilization}")
        self.matrix = matrix
        self.matrix_dot = matrix_dot
        self.stabilization = float(stabilization)

    def velocity_residual(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """A(q) v, shape (k,)."""
        return np.atleast_2d(self.matrix(q)) @ v

    def acceleration_equation(self, model, data, q, v):
        """(A(q), −Ȧ v − γ A v)."""
        a = np.atleast_2d(np.asarray(self.matrix(q), dtype=float))
        if self.matrix_dot is not None:
            adot_v = np.atleast_2d(self.matrix_dot(q, v)) @ v
        else:
            eps = 1e-6 / max(1.0, float(np.max(np.abs(v), initial=0.0)))
            ap = np.atleast_2d(self.matrix(pin.integrate(model, q, eps * v)))
            am = np.atleast_2d(self.matrix(pin.integrate(model, q, -eps * v)))
            adot_v = (ap - am) @ v / (2.0 * eps)
        return a, -adot_v - self.stabilization * (a @ v)


class PointContact:
    """Bilateral contact of a frame with the world: 6D (welded) or 3D (point kept fixed).

    Holonomic constraint differentiated twice, in the LOCAL frame of the contact point, like a
    Pinocchio ``RigidConstraintModel`` with zero Baumgarte gains: 6D keeps the spatial
    acceleration zero, 3D keeps the classical acceleration of the point zero.

    Args:
        model: The model (to resolve the name).
        name: A frame name, or a joint name.
        kind: ``"3D"`` or ``"6D"``.
        placement: Placement of the contact point in that frame/joint (default identity).
    """

    def __init__(
        self, model: pin.Model, name: str, kind: str = "6D", placement: pin.SE3 | None = None
    ):
        if kind not in ("3D", "6D"):
            raise InvalidParameter(f"kind must be '3D' or '6D', got '{kind}'")
        extra = pin.SE3.Identity() if placement is None else placement
        if model.existFrame(name):
            fr = model.frames[model.getFrameId(name)]
            self.joint = int(fr.parentJoint)
            self.placement = fr.placement * extra
        elif model.existJointName(name):
            self.joint = int(model.getJointId(name))
            self.placement = extra
        else:
            raise NameNotFound("frame or joint", name, [f.name for f in model.frames])
        self.kind = kind
        self.name = name

    def rigid_constraint_model(self, model: pin.Model) -> pin.RigidConstraintModel:
        """The equivalent Pinocchio constraint (for ``pin.constraintDynamics``)."""
        ct = pin.ContactType.CONTACT_6D if self.kind == "6D" else pin.ContactType.CONTACT_3D
        return pin.RigidConstraintModel(ct, model, self.joint, self.placement, pin.LOCAL)

    def acceleration_equation(self, model, data, q, v):
        """(J_local, −drift) of the contact point."""
        pin.computeJointJacobians(model, data, q)
        jac = np.asarray(pin.getJointJacobian(model, data, self.joint, pin.LOCAL)).reshape(6, -1)
        jac = self.placement.toActionMatrixInverse() @ jac
        pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
        vj = data.v[self.joint]
        aj = data.a[self.joint]
        vf = self.placement.actInv(vj)
        af = self.placement.actInv(aj).vector
        if self.kind == "6D":
            return jac, -af
        classical = af[:3] + np.cross(vf.angular, vf.linear)
        return jac[:3], -classical


class GaussResult(NamedTuple):
    """Minimiser of Appell's function (fields named as :class:`pinext.contact.
    ConstrainedDynamics`' and the System's :class:`pinext.simulation.component.Step`)."""

    acceleration: np.ndarray
    """Shape (nv,): accelerations [rad/s^2 or m/s^2]."""
    force: np.ndarray
    """Shape (k,): constraint forces λ (τ + Aᵀλ convention) [N, N.m]."""
    constraint_matrix: np.ndarray
    """Shape (k, nv): A."""
    constraint_rhs: np.ndarray
    """Shape (k,): r."""
    appell: float
    """Value of Z at the minimum [kg.m^2/s^4]."""

    @property
    def a(self) -> np.ndarray:
        """:attr:`acceleration` (Pinocchio's short name)."""
        return self.acceleration

    @property
    def multipliers(self) -> np.ndarray:
        """:attr:`force` (the Lagrange multipliers λ)."""
        return self.force

    def constraint_residual(self) -> float:
        """max |A a − r|."""
        if self.constraint_rhs.size == 0:
            return 0.0
        residual = self.constraint_matrix @ self.acceleration - self.constraint_rhs
        return float(np.max(np.abs(residual)))


def gauss_forward_dynamics(
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    *,
    constraints: Sequence[AccelerationEquation] | None = None,
) -> GaussResult:
    """Forward dynamics as the constrained minimum of Appell's function (Gauss's principle).

    .. math::

        a = \\arg\\min_a \\; \\tfrac12 a^T M a + a^T b - (\\tau - g)^T a
            \\quad \\text{s.t.} \\quad A a = r

    M, b and g come from the body-level Gibbs function (:func:`acceleration_energy_terms`), not
    from Pinocchio's ``aba``. The KKT system is solved by the range-space method: a Cholesky
    factor of M, then the Schur complement A M⁻¹ Aᵀ (least squares when constraints are
    redundant).

    Args:
        model: Pinocchio model.
        data: Its data (overwritten).
        q: Configuration, shape (nq,).
        v: Velocity, shape (nv,).
        tau: Generalized forces, shape (nv,) [N.m or N].
        constraints: Objects with ``acceleration_equation(model, data, q, v) -> (A, r)``
            (:class:`AccelerationEquation`): any :class:`pinext.contact.Constraint` (the
            contact tasks' ``plane``, ``point_contact``, ...), :class:`PointContact`,
            :class:`PfaffianConstraint`, :class:`AccelerationConstraint`.

    Returns:
        :class:`GaussResult` (a, multipliers, A, r, Z).

    Raises:
        ConstraintError: inconsistent constraints (A a = r has no solution).
    """
    tau = np.asarray(tau, dtype=float)
    if tau.shape != (model.nv,):
        raise InvalidParameter(f"expected tau of shape ({model.nv},), got {tau.shape}")
    terms = acceleration_energy_terms(model, data, q, v)
    g = terms.gravity
    rhs_free = tau - g - terms.bias
    mats, rhss = [np.zeros((0, model.nv))], [np.zeros(0)]
    for c in constraints or ():
        a_mat, r = c.acceleration_equation(model, data, q, v)
        mats.append(np.atleast_2d(np.asarray(a_mat, dtype=float)))
        rhss.append(np.atleast_1d(np.asarray(r, dtype=float)))
    a_mat, r = np.vstack(mats), np.concatenate(rhss)
    try:
        chol = scipy.linalg.cho_factor(terms.mass_matrix, check_finite=False)
    except np.linalg.LinAlgError as exc:
        raise ConstraintError(f"mass matrix is not positive definite: {exc}") from exc
    # M⁻¹ [τ − g − b, Aᵀ] in one solve
    sol = scipy.linalg.cho_solve(chol, np.column_stack((rhs_free, a_mat.T)), check_finite=False)
    a0, minv_at = sol[:, 0], sol[:, 1:]
    if not a_mat.shape[0]:
        z = 0.5 * a0 @ terms.mass_matrix @ a0 + a0 @ terms.bias + terms.s0 - (tau - g) @ a0
        return GaussResult(a0, np.zeros(0), a_mat, r, float(z))
    schur = a_mat @ minv_at
    lam, *_ = scipy.linalg.lstsq(schur, r - a_mat @ a0, cond=1e-12)
    a = a0 + minv_at @ lam
    resid = np.max(np.abs(a_mat @ a - r))
    scale = 1.0 + np.max(np.abs(r)) + np.max(np.abs(a_mat)) * np.max(np.abs(a))
    if resid > 1e-8 * scale:
        raise ConstraintError(
            f"inconsistent acceleration constraints: residual {resid:.3g} of A a = r "
            f"({a_mat.shape[0]} equations, rank {np.linalg.matrix_rank(a_mat)})"
        )
    z = 0.5 * a @ terms.mass_matrix @ a + a @ terms.bias + terms.s0 - (tau - g) @ a
    return GaussResult(a, lam, a_mat, r, float(z))
