"""The singular form of a constrained System, its reduction and its inverse dynamics.

McClamroch (1986) §3 writes every constrained robot system as the singular system (23)

.. math::

    \\begin{bmatrix} M & 0 \\\\ 0 & 0 \\end{bmatrix}
    \\begin{bmatrix} \\ddot x \\\\ \\lambda \\end{bmatrix} =
    \\begin{bmatrix} u - G + B^T \\lambda \\\\ \\Theta(x) \\end{bmatrix}

and reduces it with the multipliers of (24)–(26),

.. math::

    A = B M^{-1} B^T \\quad (25),\\qquad
    A \\lambda = B M^{-1} (G - u) - \\dot B \\dot x \\quad (24),\\qquad
    M \\ddot x + G = u + B^T \\lambda \\quad (27).

:func:`singular_form` gives the terms of (23) at one state of a :class:`pinext.System` (every
row of its phase: loops, mimic couplings, closed contacts, prescribed joints),
:func:`reduce` solves (24)–(28) with dense linear algebra — an independent check of the
System's acceleration step — and :func:`constrained_inverse_dynamics` goes the other way
(McClamroch (1986) §5: the joint torques that realise a motion and contact forces).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pinocchio as pin

from ..contact.constrained import RANK_TOLERANCE
from ..exceptions import InvalidParameter, NameNotFound, UnactuatedLoad
from ..simulation.controls import as_control

if TYPE_CHECKING:
    from ..simulation.system import System


class SingularForm(NamedTuple):
    """The terms of McClamroch (1986) (23) at one state, with the rows at acceleration level
    ``B ẍ + C λ + γ = 0`` (γ = Ḃẋ and any Baumgarte stabilisation)."""

    mass: np.ndarray
    """Shape (nv, nv). M(x), with armature and the components' added inertia [kg, kg.m^2]."""
    bias: np.ndarray
    """Shape (nv,). G(x, ẋ): Coriolis, centrifugal and gravity terms [N or N.m]."""
    force: np.ndarray
    """Shape (nv,). u: every generalized force but the reactions (inputs, joint springs and
    damping, the components' efforts) [N or N.m]."""
    jacobian: np.ndarray
    """Shape (m, nv). B(x) (22), the rows of every constrained component stacked."""
    drift: np.ndarray
    """Shape (m,). γ [m/s^2 or rad/s^2]."""
    compliance: np.ndarray
    """Shape (m,). Diagonal of C (a row coupled to an environment mass), else zeros."""
    rows: dict[str, slice]
    """Component name -> its rows."""

    def residual(self, acceleration: np.ndarray, multipliers: np.ndarray) -> np.ndarray:
        """Shape (nv + m,). ``[M ẍ + G - u - Bᵀλ, B ẍ + C λ + γ]``: zero at a solution."""
        dynamics = self.mass @ acceleration + self.bias - self.force
        dynamics -= self.jacobian.T @ multipliers
        rows = self.jacobian @ acceleration + self.compliance * multipliers + self.drift
        return np.concatenate([dynamics, rows])


class Reduction(NamedTuple):
    """The reduced form (24)–(28) of McClamroch (1986)."""

    delassus: np.ndarray
    """Shape (m, m). A = B M⁻¹ Bᵀ (+ C) (25)."""
    multipliers: np.ndarray
    """Shape (m,). λ = Λ(x, ẋ, u) (26), (28); minimum norm when A is singular."""
    acceleration: np.ndarray
    """Shape (nv,). ẍ of (27)."""
    forces: dict[str, np.ndarray]
    """Component name -> its block of λ."""


class ConstrainedInverseDynamics(NamedTuple):
    """Result of :func:`constrained_inverse_dynamics`."""

    tau: np.ndarray
    """Shape (nv,). The input torques u [N.m or N] (zero on the unactuated DOFs)."""
    multipliers: np.ndarray
    """Shape (m,). λ, given or chosen."""
    forces: dict[str, np.ndarray]
    """Component name -> its block of λ."""
    internal_basis: np.ndarray
    """Shape (m, k). Orthonormal basis N of the internal forces: the λ that the unactuated
    DOFs do not feel (``B_pᵀ N = 0``), e.g. the squeeze of a load held by two robots
    (McClamroch (1986) (36)); k = 0 when λ is fixed by the motion."""
    internal: np.ndarray
    """Shape (m,). The internal part N Nᵀ λ of the multipliers [N, N.m]."""


def _state(system: System, q: np.ndarray, v: np.ndarray, x: np.ndarray | None) -> np.ndarray:
    if x is not None:
        return np.asarray(x, dtype=float)
    return system.initial_state(q, v)


def singular_form(
    system: System,
    q: np.ndarray,
    v: np.ndarray,
    u: Any = None,
    *,
    t: float = 0.0,
    x: np.ndarray | None = None,
) -> SingularForm:
    """The terms of the singular system (23) of McClamroch (1986) at (t, q, v).

    Args:
        system: The System.
        q: Configuration, shape (nq,).
        v: Velocity, shape (nv,).
        u: Inputs as :meth:`pinext.System.step` takes them (None: zero).
        t: Time [s].
        x: The full public state, when the components have states of their own (default
            ``system.initial_state(q, v)``).

    Returns:
        :class:`SingularForm`; the rows are those of the phase a run from (t, x) starts in.
    """
    x = system.impose(t, _state(system, q, v, x))
    q, v = system.split(x)
    law = as_control(u, system.n_inputs)
    inputs = np.asarray(law(t, x), dtype=float)
    step = system.acceleration_step(system.initial_phase(t, x, law))
    force = step.efforts(t, x, inputs)
    model, data = step.model, step.data
    pin.computeAllTerms(model, data, q, v)
    if step.mechanism is not None:
        replaced = step.mechanism.mechanism(q, v)
        assert replaced is not None  # a component that overrides mechanism() replaces it
        mass, bias = np.array(replaced[0], dtype=float), replaced[1]
        if step.added is not None:
            mass[np.diag_indices_from(mass)] += step.added
    else:
        mass, bias = np.triu(data.M) + np.triu(data.M, 1).T, np.array(data.nle)
    jacobians, drifts, compliances, rows, start = [], [], [], {}, 0
    for comp, mode in step.constrained:
        r = comp.constraint_rows(t, x, q, v, mode, data)
        if r is None or not r.m:
            continue
        jacobians.append(r.jacobian)
        drifts.append(r.drift)
        compliances.append(np.zeros(r.m) if r.compliance is None else r.compliance)
        rows[comp.name] = slice(start, start + r.m)
        start += r.m
    nv = model.nv
    return SingularForm(
        mass,
        np.asarray(bias, dtype=float),
        np.asarray(force, dtype=float),
        np.vstack(jacobians) if jacobians else np.zeros((0, nv)),
        np.concatenate(drifts) if drifts else np.zeros(0),
        np.concatenate(compliances) if compliances else np.zeros(0),
        rows,
    )


def reduce(
    system: System,
    q: np.ndarray,
    v: np.ndarray,
    u: Any = None,
    *,
    t: float = 0.0,
    x: np.ndarray | None = None,
) -> Reduction:
    """The reduction (24)–(28) of McClamroch (1986), by dense linear algebra.

    .. math::

        A = B M^{-1} B^T + C,\\quad
        \\lambda = A^{+} \\left( B M^{-1} (G - u) - \\gamma \\right),\\quad
        \\ddot x = M^{-1} (u - G + B^T \\lambda)

    (A⁺ the pseudo-inverse: redundant rows get the minimum-norm multipliers.) The System's
    acceleration step solves the same problem with Pinocchio's sparse factorisation; this is
    the textbook route, for checks and teaching.

    Args:
        system, q, v, u, t, x: As :func:`singular_form`.

    Returns:
        :class:`Reduction`.
    """
    form = singular_form(system, q, v, u, t=t, x=x)
    free = np.linalg.solve(form.mass, form.force - form.bias)
    if not form.jacobian.shape[0]:
        return Reduction(np.zeros((0, 0)), np.zeros(0), free, {})
    minv_bt = np.linalg.solve(form.mass, form.jacobian.T)
    delassus = form.jacobian @ minv_bt + np.diag(form.compliance)
    rhs = -(form.jacobian @ free) - form.drift  # (24): B M⁻¹ (G - u) - Ḃẋ
    multipliers = np.linalg.pinv(delassus, rcond=1e-10, hermitian=True) @ rhs
    forces = {name: multipliers[rows] for name, rows in form.rows.items()}
    return Reduction(delassus, multipliers, free + minv_bt @ multipliers, forces)


def _unactuated_dofs(system: System, joints: Sequence[str] | None) -> dict[str, np.ndarray]:
    """Unactuated joint name -> its DOFs (velocity indices)."""
    model = system.model
    if joints is None:
        joints = getattr(system.robot, "free_bodies", [])
    names = list(model.names)[1:]
    dofs: dict[str, np.ndarray] = {}
    for joint in joints:
        if joint not in names:
            raise NameNotFound("joint", joint, names)
        jmodel = model.joints[model.getJointId(joint)]
        dofs[joint] = np.arange(jmodel.idx_v, jmodel.idx_v + jmodel.nv)
    return dofs


def _least_squares(
    matrix: np.ndarray, rhs: np.ndarray, cutoff: float
) -> tuple[np.ndarray, np.ndarray]:
    """The minimum-norm least-squares solution y of ``matrix y = rhs`` and an orthonormal
    basis of the null space of ``matrix``, singular values at or below the absolute
    ``cutoff`` counted as zero.

    The cutoff is absolute on purpose: the matrices here are blocks and products of B, and
    a block that is zero up to rounding (1e-17 where B is 0.3) must count as zero, which a
    cutoff relative to the block's own largest singular value (``lstsq``'s ``rcond``) does
    not do."""
    n = matrix.shape[1]
    if not min(matrix.shape):
        return np.zeros(n), np.eye(n)
    u, s, vt = np.linalg.svd(matrix)
    rank = int(np.count_nonzero(s > cutoff))
    return vt[:rank].T @ ((u[:, :rank].T @ rhs) / s[:rank]), vt[rank:].T


def constrained_inverse_dynamics(
    system: System,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    forces: np.ndarray | None = None,
    *,
    unactuated: Sequence[str] | None = None,
    internal: np.ndarray | None = None,
    t: float = 0.0,
    x: np.ndarray | None = None,
) -> ConstrainedInverseDynamics:
    """The input torques that realise a constrained motion (McClamroch (1986) §5).

    From (23), ``u = M ẍ + G - τ_passive - Bᵀλ`` with τ_passive the System's generalized
    forces at zero input (joint springs and damping, the components' efforts). With
    ``forces`` the multipliers λ are given (a planned contact force); without, λ makes the
    torque vanish on the unactuated DOFs (a gripped load's). Those λ are

    .. math::

        \\lambda = \\lambda_p + N z,\\qquad B_p^T \\lambda_p = (M\\ddot x + G - \\tau_{passive})_p,
        \\qquad B_p^T N = 0,

    λ_p the minimum-norm particular solution and N an orthonormal basis of the internal
    forces (a load held by two robots: the squeeze, McClamroch (1986) (36)). The internal
    part is the free parameter: given (``internal``, e.g. a squeeze force), ``z = Nᵀ
    internal``; otherwise z gives the smallest torques ``min |u_a|``, least squares on
    ``B_aᵀ N z = (M ẍ + G - τ_passive)_a - B_aᵀ λ_p`` (a for the actuated DOFs). Ranks
    are decided by singular values relative to |B| (a block of B that is zero up to
    rounding counts as zero), and the returned torque is zero on the unactuated DOFs once
    ``Bᵀλ`` is checked to carry their load; with ``forces`` it is ``M ẍ + G - τ_passive -
    Bᵀλ`` on every DOF.

    Args:
        system: A System with torque inputs (no drives).
        q: Configuration, shape (nq,).
        v: Velocity, shape (nv,).
        a: Accelerations, shape (nv,); they should satisfy the rows ``B a + γ = 0``.
        forces: λ, shape (m,), in the rows' order (:attr:`SingularForm.rows`), or None.
        unactuated: Joints without actuation; default the robot's free bodies
            (:func:`pinext.free_body`).
        internal: The internal forces, shape (m,) in the rows' order, e.g. equal and
            opposite forces of two grippers along the line between them [N, N.m]; they must
            be internal (``B_pᵀ internal = 0``). None: the internal part that gives the
            smallest torques. Not with ``forces``.
        t: Time [s].
        x: Full public state (default ``system.initial_state(q, v)``).

    Returns:
        :class:`ConstrainedInverseDynamics` (tau, multipliers, forces).

    Raises:
        InvalidParameter: The System's inputs are not joint torques, ``forces`` or
            ``internal`` has the wrong size, both are given, or ``internal`` is not internal
            (it would accelerate the unactuated DOFs).
        UnactuatedLoad: No λ gives the unactuated joints zero torque (the constraints cannot
            carry their load, e.g. a load held at one point asked to turn); the error names
            the joints and the torque that would remain.
    """
    if not system.torque_inputs:
        raise InvalidParameter(
            "constrained_inverse_dynamics needs a System whose inputs are joint torques; "
            "this one's are its drives' inputs"
        )
    form = singular_form(system, q, v, None, t=t, x=x)
    required = form.mass @ np.asarray(a, dtype=float) + form.bias - form.force
    m = form.jacobian.shape[0]
    if forces is not None and internal is not None:
        raise InvalidParameter("give either forces (all of λ) or internal (its free part)")
    unactuated_dofs = _unactuated_dofs(system, unactuated)
    passive = np.sort(np.concatenate([np.zeros(0, dtype=int), *unactuated_dofs.values()]))
    actuated = np.setdiff1d(np.arange(form.mass.shape[0]), passive)
    b_passive, b_actuated = form.jacobian[:, passive].T, form.jacobian[:, actuated].T
    # rank decisions relative to B as a whole (RANK_TOLERANCE, as the acceleration step)
    cutoff = RANK_TOLERANCE * (float(np.linalg.norm(form.jacobian, 2)) if m else 0.0)
    particular, null = _least_squares(b_passive, required[passive], cutoff)
    if forces is not None:
        multipliers = np.asarray(forces, dtype=float).reshape(-1)
        if multipliers.shape != (m,):
            raise InvalidParameter(f"forces must have shape ({m},), got {multipliers.shape}")
    else:
        if internal is not None:
            given = np.asarray(internal, dtype=float).reshape(-1)
            if given.shape != (m,):
                raise InvalidParameter(f"internal must have shape ({m},), got {given.shape}")
            z = null.T @ given
            outside = float(np.abs(given - null @ z).max(initial=0.0))
            if outside > 1e-9 * (1.0 + float(np.abs(given).max(initial=0.0))):
                raise InvalidParameter(
                    f"internal forces must be balanced on the unactuated DOFs (B_pᵀ internal "
                    f"= 0); these are not, by {outside:.3g}: they would move the load"
                )
        else:
            residual = required[actuated] - b_actuated @ particular
            z = _least_squares(b_actuated @ null, residual, cutoff)[0]
        multipliers = particular + null @ z
        _check_balanced(form, required, multipliers, unactuated_dofs)
    tau = required - form.jacobian.T @ multipliers
    if forces is None:
        tau[passive] = 0.0  # balanced to rounding by _check_balanced: no actuator there
    split = {name: multipliers[rows] for name, rows in form.rows.items()}
    return ConstrainedInverseDynamics(tau, multipliers, split, null, null @ (null.T @ multipliers))


def _check_balanced(
    form: SingularForm,
    required: np.ndarray,
    multipliers: np.ndarray,
    unactuated: dict[str, np.ndarray],
) -> None:
    """Raise :class:`UnactuatedLoad` unless ``Bᵀλ`` carries the load ``required`` on the
    unactuated DOFs, to 1e-8 of the larger of the load and ``|B| |λ|`` (the rounding of a
    consistent solve is eps times these)."""
    if not unactuated:
        return
    left = required - form.jacobian.T @ multipliers
    scale = max(
        float(np.abs(required).max(initial=0.0)),
        float(np.linalg.norm(form.jacobian, 2) * np.abs(multipliers).max(initial=0.0))
        if multipliers.size
        else 0.0,
    )
    tolerance = 1e-8 * scale
    unbalanced = {
        joint: left[dofs]
        for joint, dofs in unactuated.items()
        if np.abs(left[dofs]).max() > tolerance
    }
    if unbalanced:
        raise UnactuatedLoad(unbalanced)
