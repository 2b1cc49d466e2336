"""Impact: the instantaneous velocity jump at contact, Vukobratović & Potkonjak (20.90)–(20.91),
(20.95)–(20.97).

Against a rigid (geometric) constraint, integrating (20.88)–(20.89) over an impact interval
Δt → 0 gives

.. math::

    H(q')\\,\\Delta\\dot q = J_c^T(q')\\,P \\quad (20.90),\\qquad
    J_c(q')\\,\\Delta\\dot q = -J_c(q')\\,\\dot q' \\quad (20.91)

with the impulse ``P = F Δt``. pinext adds Newton's restitution coefficient e ∈ [0, 1]:
``J_c v⁺ = -e J_c v⁻`` (e = 0 is the seed's plastic impact).

**Environment mass.** Against an environment mass m_e (model (c) of §20.5.3) the seed prints

.. math::

    H\\Delta\\dot q = J_6^T P \\; (20.95),\\quad \\Delta\\dot s_6 = J_6\\Delta\\dot q \\; (20.96),
    \\quad m_e\\Delta\\dot s_6 = -P \\; (20.97)

Taken literally these three equations are a homogeneous linear system whose matrix
``m_e J_6 H⁻¹ J_6ᵀ + 1`` is positive: they only admit P = 0 (no impact at all). The intended
law (DESIGN.md) is the plastic impact of the tip with the mass, at rest before the impact:
after it the tip and the mass move together,

.. math::

    H\\,\\Delta\\dot q = J^T P,\\qquad m_e\\,(\\dot s_e^+ - \\dot s_e^-) = -P,\\qquad
    J\\dot q^+ = \\dot s_e^+

so that ``(J H⁻¹ Jᵀ + m_e⁻¹) P = -(J q̇⁻ - ṡ_e⁻)``; with restitution the relative velocity
``J q̇⁺ - ṡ_e⁺ = -e (J q̇⁻ - ṡ_e⁻)``. m_e → ∞ recovers the rigid wall. This is what
:func:`plastic_impact` solves; :func:`seed_impact_as_printed` solves (20.95)–(20.97) as printed
(it returns a zero impulse) for the record.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter
from .constrained import RedundantConstraintWarning, is_rank_deficient
from .coordinates import Constraint


class ImpactResult(NamedTuple):
    """Result of :func:`plastic_impact` (unpacks as ``v_plus, impulse``)."""

    v_plus: np.ndarray
    """Shape (nv,). Velocity just after the impact q̇'' [rad/s or m/s]."""
    impulse: np.ndarray
    """Shape (m,). Impulse P = F Δt on the robot along the constrained coordinates [N.s]."""


def _environment_inverse_mass(environment_mass, m: int) -> np.ndarray:
    if environment_mass is None:
        return np.zeros((m, m))
    me = np.asarray(environment_mass, dtype=float)
    if me.ndim == 0:
        me = np.full(m, float(me))
    if me.ndim == 1:
        if me.shape != (m,):
            raise InvalidParameter(f"environment_mass must be a scalar, ({m},) or ({m}, {m})")
        if np.any(me <= 0):
            raise InvalidParameter(f"environment masses must be positive, got {me}")
        return np.diag(np.where(np.isinf(me), 0.0, 1.0 / np.where(np.isinf(me), 1.0, me)))
    if me.shape != (m, m):
        raise InvalidParameter(f"environment_mass must be a scalar, ({m},) or ({m}, {m})")
    return np.linalg.inv(me)


def plastic_impact(
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    v: np.ndarray,
    jacobian: np.ndarray | Constraint | Sequence[Constraint],
    *,
    environment_mass: float | np.ndarray | None = None,
    restitution: float = 0.0,
    environment_velocity: np.ndarray | None = None,
) -> ImpactResult:
    """The velocity jump and impulse of an impact, (20.90)–(20.91) and the environment-mass law.

    .. math::

        (J H^{-1} J^T + M_e^{-1})\\,P = -(1 + e)\\,(J\\dot q^- - \\dot s_e^-),\\qquad
        \\dot q^+ = \\dot q^- + H^{-1} J^T P

    (``M_e⁻¹ = 0`` for a rigid constraint.) The environment's velocity after the impact is
    ``ṡ_e⁺ = ṡ_e⁻ - M_e⁻¹ P``.

    Args:
        model: Pinocchio model.
        data: Its data (``crba`` is called).
        q: Configuration at the impact q', shape (nq,).
        v: Velocity just before the impact q̇', shape (nv,).
        jacobian: J_c, shape (m, nv): rows of the constrained coordinates' velocities; or the
            :class:`Constraint` (or several) whose Jacobian it is (the same constraint objects
            as :func:`constrained_dynamics`, :func:`pinext.gauss_forward_dynamics` and
            :class:`Contact` take).
        environment_mass: None (rigid), a mass [kg] per row (scalar or (m,)), or an (m, m)
            mass matrix of the environment.
        restitution: Newton's coefficient e ∈ [0, 1]; 0 is the plastic impact of the seed.
        environment_velocity: ṡ_e⁻, shape (m,), default zero (environment at rest).

    Returns:
        :class:`ImpactResult` ``(v_plus, impulse)``.

    Raises:
        InvalidParameter: e outside [0, 1], bad shapes or non-positive masses.
    """
    if not 0.0 <= restitution <= 1.0:
        raise InvalidParameter(f"restitution must be in [0, 1], got {restitution}")
    if isinstance(jacobian, Constraint) or (
        isinstance(jacobian, (list, tuple)) and jacobian and isinstance(jacobian[0], Constraint)
    ):
        constraints = [jacobian] if isinstance(jacobian, Constraint) else list(jacobian)
        pin.computeAllTerms(model, data, q, v)
        jacobian = np.vstack([c.evaluate(model, data, 0.0).jacobian for c in constraints])
    J = np.atleast_2d(np.asarray(jacobian, dtype=float))
    if J.shape[1] != model.nv:
        raise InvalidParameter(f"jacobian must have {model.nv} columns, got shape {J.shape}")
    m = J.shape[0]
    v = np.asarray(v, dtype=float)
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    Minv_JT = np.linalg.solve(M, J.T)
    G = J @ Minv_JT + _environment_inverse_mass(environment_mass, m)
    rel = J @ v
    if environment_velocity is not None:
        rel = rel - np.asarray(environment_velocity, dtype=float).reshape(m)
    rhs = -(1.0 + restitution) * rel
    if environment_mass is None and is_rank_deficient(J):
        warnings.warn(
            f"rank-deficient impact Jacobian ({m} rows, rank {np.linalg.matrix_rank(J)}): "
            "the impulse is the least-squares solution",
            RedundantConstraintWarning,
            stacklevel=2,
        )
        P = np.linalg.lstsq(G, rhs, rcond=None)[0]
    else:
        P = np.linalg.solve(G, rhs)
    return ImpactResult(v + Minv_JT @ P, P)


def seed_impact_as_printed(
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    v: np.ndarray,
    jacobian: np.ndarray,
    environment_mass: float,
) -> ImpactResult:
    """Vukobratović & Potkonjak (20.95)–(20.97) solved literally, for the record: the impulse is
    always zero.

    Unknowns (Δq̇, Δṡ_6, P)::

        H Δq̇ - J_6ᵀ P = 0,   Δṡ_6 - J_6 Δq̇ = 0,   m_e Δṡ_6 + P = 0

    a homogeneous system with a nonsingular matrix, hence Δq̇ = 0, P = 0 whatever q̇'.
    """
    J = np.atleast_2d(np.asarray(jacobian, dtype=float))
    nv, m = model.nv, J.shape[0]
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    K = np.zeros((nv + 2 * m, nv + 2 * m))
    K[:nv, :nv] = M
    K[:nv, nv + m :] = -J.T
    K[nv : nv + m, :nv] = -J
    K[nv : nv + m, nv : nv + m] = np.eye(m)
    K[nv + m :, nv : nv + m] = environment_mass * np.eye(m)
    K[nv + m :, nv + m :] = np.eye(m)
    sol = np.linalg.solve(K, np.zeros(nv + 2 * m))  # the right-hand side does not contain q̇'
    return ImpactResult(np.asarray(v, dtype=float) + sol[:nv], sol[nv + m :])
