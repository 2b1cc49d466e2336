"""The constrained dynamics of Lynch & Park (*Modern Robotics*, ch. 8, "Constrained dynamics").

k Pfaffian constraints ``A(θ) θ̇ = 0`` (holonomic or not: loop closures, closed contacts,
mimic couplings — every row of a :class:`pinext.System`'s phase) act through workless
generalized forces ``Aᵀ λ``:

.. math::

    \\tau = M\\ddot\\theta + h + A^T\\lambda,\\qquad A\\ddot\\theta + \\dot A\\dot\\theta = 0,

    \\lambda = (A M^{-1} A^T)^{-1}\\left(A M^{-1}(\\tau - h) + \\dot A\\dot\\theta\\right),

    P = I - A^T (A M^{-1} A^T)^{-1} A M^{-1},\\qquad P\\tau = P(M\\ddot\\theta + h),

and, when the constraints act at a frame with Jacobian J, the wrench the frame applies to the
constraint ``Jᵀ F_tip = Aᵀ λ`` (``F_tip = J⁻ᵀ Aᵀ λ``; least squares for a redundant arm).

Signs: Lynch & Park's λ is the force the robot applies *against* the constraints; McClamroch's
multipliers of :func:`pinext.reduce` and :func:`pinext.constrained_inverse_dynamics`, and
Pinocchio's ``constraintDynamics`` forces, act *on* the robot: they are ``−λ``.

The rows ``A``, ``Ȧθ̇`` are the System's own (:func:`pinext.singular_form`), written once by
the components that own them; this module only combines them. ``Ȧθ̇`` is the rows' drift γ,
which includes their Baumgarte terms: zero on a consistent state (the constraint holds in
position and velocity), where the formulas above are exact.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pinocchio as pin

from ..contact.constrained import RANK_TOLERANCE
from ..dynamics.task_space import REFERENCES, state
from ..exceptions import ConstraintError, InvalidParameter
from ..model import resolve_frame
from ..validation import describe, real, vector
from .singular import singular_form

if TYPE_CHECKING:
    from ..simulation.system import System


class ConstraintProjection(NamedTuple):
    """Lynch & Park's constrained dynamics at one state (:func:`constraint_projection`)."""

    projection: np.ndarray
    """Shape (nv, nv). P = I − Aᵀ(A M⁻¹ Aᵀ)⁻¹ A M⁻¹, rank nv − k; ``P Aᵀ = 0``."""
    multipliers: np.ndarray
    """Shape (k,). λ, the force the robot applies against the constraints [N, N.m]."""
    acceleration: np.ndarray
    """Shape (nv,). θ̈ = M⁻¹(τ − h − Aᵀλ) [rad/s^2 or m/s^2]."""
    constraint_jacobian: np.ndarray
    """Shape (k, nv). A(θ), the System's rows stacked."""
    drift: np.ndarray
    """Shape (k,). Ȧ θ̇ (with the rows' Baumgarte terms, zero on a consistent state)."""
    mass: np.ndarray
    """Shape (nv, nv). M(θ) with armature and the components' added inertia."""
    bias: np.ndarray
    """Shape (nv,). h(θ, θ̇): Coriolis, centrifugal and gravity terms [N, N.m]."""
    force: np.ndarray
    """Shape (nv,). τ: the inputs and every other generalized force but the reactions."""
    rows: dict[str, slice]
    """Component name -> its rows in A and λ."""
    tip_wrench: np.ndarray | None
    """Shape (6,). F_tip with ``Jᵀ F_tip = Aᵀ λ`` at ``frame`` (None without a frame): the
    wrench the frame applies to the constraint, ``[force, moment]`` in ``reference``."""

    def projected_torque(self, acceleration: np.ndarray) -> np.ndarray:
        """Shape (nv,). ``P (M θ̈ + h)``: the constrained inverse dynamics, equal to ``P τ``
        for every τ that realises θ̈ (the torques against the constraints, ``Aᵀλ``, are
        projected out)."""
        a = np.asarray(acceleration, dtype=float)
        return self.projection @ (self.mass @ a + self.bias)


def projector(
    constraint_jacobian: np.ndarray, inverse_mass_at: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``P = I − Aᵀ (A M⁻¹ Aᵀ)⁻¹ A M⁻¹`` and ``(A M⁻¹ Aᵀ)⁻¹`` (Lynch & Park, ch. 8).

    The same formula serves in the joint space (M the mass matrix) and in the task space (M
    the task inertia Λ, A the constrained directions of the end effector: the hybrid
    motion–force controller). Redundant rows get the pseudo-inverse (singular values below
    :data:`~pinext.contact.constrained.RANK_TOLERANCE` relative to the largest).

    Args:
        constraint_jacobian: A, shape (k, n).
        inverse_mass_at: M⁻¹ Aᵀ, shape (n, k).

    Returns:
        (P, shape (n, n); (A M⁻¹ Aᵀ)⁻¹, shape (k, k)).
    """
    A = constraint_jacobian
    delassus = A @ inverse_mass_at
    inverse = (
        np.linalg.pinv(delassus, rcond=RANK_TOLERANCE, hermitian=True)
        if np.any(delassus)
        else delassus
    )
    return np.eye(A.shape[1]) - A.T @ inverse @ inverse_mass_at.T, inverse


def constraint_projection(
    system: System,
    q: np.ndarray,
    v: np.ndarray,
    u: Any = None,
    *,
    frame: str | int | None = None,
    reference: str = "world",
    t: float = 0.0,
    x: np.ndarray | None = None,
) -> ConstraintProjection:
    """P, λ, θ̈ and F_tip of Lynch & Park's constrained dynamics at (t, q, v) under inputs u.

    Args:
        system: The System; its rows (loops, closed contacts, mimic couplings, prescribed
            joints) in the phase a run from (t, x) starts in are A.
        q: Configuration, shape (nq,).
        v: Velocity, shape (nv,); consistent with the rows (``A v = 0``) for the formulas to
            be exact (Baumgarte terms vanish there).
        u: Inputs as :meth:`pinext.System.step` takes them (None: zero). τ is every
            generalized force but the reactions: the inputs, joint springs and damping, the
            components' efforts.
        frame: The frame at which the constraints act, for F_tip (None: no F_tip).
        reference: Reference of F_tip: ``"world"``, ``"local"`` or ``"space"`` (as
            :func:`pinext.task_space_dynamics`).
        t: Time [s].
        x: The full public state (default ``system.initial_state(q, v)``).

    Returns:
        :class:`ConstraintProjection`.

    Raises:
        ConstraintError: The phase has no rows, or rows coupled to an environment mass (a
            dynamic environment's contact is not a Pfaffian constraint).
        InvalidParameter: A system that is not a :class:`pinext.System`; q, v (or x) of the
            wrong shape or not finite, a quaternion of q not of unit norm; an unknown
            reference.
        NameNotFound: An unknown frame.
    """
    from ..simulation.system import System

    if not isinstance(system, System):
        raise InvalidParameter(
            f"system must be a pinext.System (its rows are the constraints), got "
            f"{describe(system)}; wrap a Robot as pinext.System(robot, loops=..., "
            "contacts=..., components=...)"
        )
    if not isinstance(reference, str) or reference not in REFERENCES:
        raise InvalidParameter(
            f"unknown reference {reference!r}; valid: {', '.join(map(repr, REFERENCES))}"
        )
    q, v = state(system.model, q, v)
    t = real("t", t, unit="[s]")
    if x is not None:
        x = vector("x", x, system.nx, what="the full public state")
    form = singular_form(system, q, v, u, t=t, x=x)
    A, k = form.jacobian, form.jacobian.shape[0]
    if not k:
        raise ConstraintError(
            "the System has no constraint rows at this state (no loop, closed contact, mimic "
            "coupling or prescribed joint): P is the identity and λ empty"
        )
    if np.any(form.compliance):
        names = [n for n, s in form.rows.items() if np.any(form.compliance[s])]
        raise ConstraintError(
            f"rows of {', '.join(names)} are coupled to an environment mass (a dynamic "
            "environment): they are not Pfaffian constraints A θ̇ = 0; Lynch & Park's "
            "projection applies to rigid constraints"
        )
    minv_at = np.linalg.solve(form.mass, A.T)
    projection, inverse = projector(A, minv_at)
    free = np.linalg.solve(form.mass, form.force - form.bias)  # M⁻¹(τ − h)
    multipliers = inverse @ (A @ free + form.drift)
    acceleration = free - minv_at @ multipliers
    tip = None
    if frame is not None:
        q_now = system.split(system.impose(t, system.initial_state(q, v) if x is None else x))[0]
        model, data = system.model, system.data
        fid = resolve_frame(model, frame)
        jac = pin.computeFrameJacobian(model, data, q_now, fid, REFERENCES[reference])
        tip = np.linalg.lstsq(jac.T, A.T @ multipliers, rcond=None)[0]
    return ConstraintProjection(
        projection,
        multipliers,
        acceleration,
        A,
        form.drift,
        form.mass,
        form.bias,
        form.force,
        dict(form.rows),
        tip,
    )
