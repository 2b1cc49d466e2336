"""Constrained motion, Vukobratović & Potkonjak (20.88)–(20.89) and McClamroch (1986) §4 (33)–(35).

.. math::

    H(q)\\ddot q + h(q, \\dot q) = \\tau + J_c^T(q) F \\quad (20.88),\\qquad
    J_c(q)\\ddot q + A_c(q, \\dot q) = 0 \\quad (20.89)

solved for the accelerations and the reactions F (forces along constrained positions
[N], torques along constrained rotations [N.m], expressed in the object frame). The index-3
DAE is reduced to the acceleration level (index 1); drift is stabilised with Baumgarte's
term (a critically damped constraint error, natural frequency ω [1/s])

.. math::

    J_c \\ddot q + A_c = -2\\omega\\, \\dot s^c - \\omega^2 s^c

and consistent initial conditions (McClamroch 1986, (32), (35)) are obtained by projecting q (Gauss–
Newton on s^c(q) = 0) and v (the kinetic-metric projection onto J_c v + b_c = 0, the plastic
impact of (20.90)–(20.91)) with :func:`project_consistent`.

Redundant constraints (rank-deficient J_c) are solved in the least-squares sense (minimum-norm
reactions) with a :class:`RedundantConstraintWarning`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from ..exceptions import ConstraintError
from ..simulation.forms import stabilisation
from .coordinates import Constraint, ConstraintKinematics

#: Relative singular value of J_c below which constraints are taken as redundant.
RANK_TOLERANCE = 1e-10


class RedundantConstraintWarning(UserWarning):
    """J_c is rank deficient: reactions are the minimum-norm least-squares solution."""


class InconsistentInitialConditionsWarning(UserWarning):
    """The initial state violated the constraints and was projected onto them."""


class ConstrainedDynamics(NamedTuple):
    """Result of :func:`constrained_dynamics`."""

    acceleration: np.ndarray
    """Shape (nv,). q̈ [rad/s^2 or m/s^2]."""
    force: np.ndarray
    """Shape (m,). Reactions F along the constrained coordinates [N or N.m] (20.88)."""
    kinematics: ConstraintKinematics
    """The stacked constraint kinematics used (residual, J_c, A_c, b_c)."""


def stack(kinematics: Sequence[ConstraintKinematics]) -> ConstraintKinematics:
    """Concatenate the kinematics of several constraints."""
    if len(kinematics) == 1:
        return kinematics[0]
    return ConstraintKinematics(*(np.concatenate(parts) for parts in zip(*kinematics, strict=True)))


def is_rank_deficient(jacobian: np.ndarray) -> bool:
    """True when J_c has a relative singular value below :data:`RANK_TOLERANCE`."""
    if jacobian.shape[0] == 0:
        return False
    if jacobian.shape[0] > jacobian.shape[1]:
        return True
    if jacobian.shape[0] == 1:  # one row: singular value |J|
        return not bool(np.any(jacobian))
    sv = np.linalg.svd(jacobian, compute_uv=False)
    return bool(sv[0] == 0.0 or sv[-1] < RANK_TOLERANCE * sv[0])


def _mass_matrix(data: pin.Data) -> np.ndarray:
    M = data.M
    return np.triu(M) + np.triu(M, 1).T


def solve_constrained(
    model: pin.Model,
    data: pin.Data,
    tau: np.ndarray,
    jacobian: np.ndarray,
    gamma: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``M a + h = tau + J^T F``, ``J a + gamma = 0`` after ``computeAllTerms``.

    Full-rank J uses Pinocchio's ``forwardDynamics`` (Cholesky of M and of J M⁻¹ Jᵀ);
    rank-deficient J the least-squares reactions with a :class:`RedundantConstraintWarning`.

    Returns:
        (a, F), shapes (nv,) and (m,).
    """
    if jacobian.shape[0] == 0:
        raise ConstraintError("no constraint rows: use pin.aba for free motion")
    if not is_rank_deficient(jacobian):
        a = pin.forwardDynamics(model, data, tau, jacobian, gamma)
        return np.array(a), np.array(data.lambda_c)
    warnings.warn(
        f"rank-deficient constraint Jacobian ({jacobian.shape[0]} rows, rank "
        f"{np.linalg.matrix_rank(jacobian)}): reactions are the least-squares solution",
        RedundantConstraintWarning,
        stacklevel=3,
    )
    M = _mass_matrix(data)
    rhs = tau - data.nle
    Minv_JT = np.linalg.solve(M, jacobian.T)
    a_free = np.linalg.solve(M, rhs)
    G = jacobian @ Minv_JT
    F = np.linalg.lstsq(G, -(jacobian @ a_free + gamma), rcond=None)[0]
    return a_free + Minv_JT @ F, F


def baumgarte(kin: ConstraintKinematics, v: np.ndarray, omega: float | None) -> np.ndarray:
    """The stabilising reference ``-2 ω ṡ^c - ω² s^c`` (zero when ω is None or 0;
    :func:`pinext.simulation.forms.stabilisation`)."""
    if not omega:
        return np.zeros_like(kin.residual)
    return -stabilisation(omega, kin.rate(v), kin.residual)


def constrained_dynamics(
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    constraints: Constraint | Sequence[Constraint],
    *,
    t: float = 0.0,
    stabilization: float | None = None,
) -> ConstrainedDynamics:
    """Accelerations and reactions of the constrained robot, (20.88)–(20.89).

    .. math::

        \\begin{bmatrix} H & -J_c^T \\\\ J_c & 0 \\end{bmatrix}
        \\begin{bmatrix} \\ddot q \\\\ F \\end{bmatrix} =
        \\begin{bmatrix} \\tau - h \\\\ -A_c - 2\\omega \\dot s^c - \\omega^2 s^c \\end{bmatrix}

    Args:
        model: Pinocchio model.
        data: Its data (overwritten).
        q: Configuration, shape (nq,).
        v: Velocity, shape (nv,).
        tau: Generalized forces [N.m or N], shape (nv,) (everything but the reactions).
        constraints: One or several :class:`Constraint` (stacked).
        t: Time [s] (moving object frames).
        stabilization: Baumgarte natural frequency ω [1/s]; None for the pure (20.89).

    Returns:
        :class:`ConstrainedDynamics` (acceleration, force, kinematics).
    """
    if isinstance(constraints, Constraint):
        constraints = [constraints]
    pin.computeAllTerms(model, data, q, v)
    kin = stack([c.evaluate(model, data, t) for c in constraints])
    gamma = kin.drift - baumgarte(kin, v, stabilization)
    a, F = solve_constrained(model, data, np.asarray(tau, dtype=float), kin.jacobian, gamma)
    return ConstrainedDynamics(a, F, kin)


def project_consistent(
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    v: np.ndarray,
    constraints: Constraint | Sequence[Constraint],
    *,
    t: float = 0.0,
    tol: float = 1e-13,
    max_iter: int = 50,
) -> tuple[np.ndarray, np.ndarray]:
    """Project (q, v) onto the constraint manifold (McClamroch 1986, (32), (35)).

    q: Gauss–Newton steps ``q ← integrate(q, -J_c⁺ s^c)`` until ``|s^c| < tol``;
    v: the kinetic-metric projection ``v ← v - M⁻¹J_cᵀ (J_c M⁻¹ J_cᵀ)⁻¹ (J_c v + b_c)``
    (the velocity after a plastic impact, (20.90)–(20.91)).

    Raises:
        ConstraintError: The configuration cannot be brought onto the constraint.
    """
    if isinstance(constraints, Constraint):
        constraints = [constraints]
    q = np.array(q, dtype=float)
    v = np.array(v, dtype=float)
    for _ in range(max_iter):
        pin.computeAllTerms(model, data, q, v)
        kin = stack([c.evaluate(model, data, t) for c in constraints])
        err = float(np.abs(kin.residual).max(initial=0.0))
        if err < tol:
            break
        step = np.linalg.lstsq(kin.jacobian, -kin.residual, rcond=None)[0]
        q = pin.integrate(model, q, step)
    else:
        raise ConstraintError(
            f"initial configuration not projected onto the constraint: residual {err:.3g} "
            f"after {max_iter} Gauss-Newton steps (is the surface reachable?)"
        )
    M = _mass_matrix(data)
    J = kin.jacobian
    Minv_JT = np.linalg.solve(M, J.T)
    G = J @ Minv_JT
    mult = np.linalg.lstsq(G, kin.rate(v), rcond=None)[0]
    v = v - Minv_JT @ mult
    return q, v
