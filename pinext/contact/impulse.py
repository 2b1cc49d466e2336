"""Simultaneous impacts: one impulse problem for every engaged row (McClamroch (1986) §6).

McClamroch (1986) (40)–(42) write a unilateral constraint as an inequality ``φ(q) ≥ 0`` whose
multiplier may only push, ``λ ≥ 0``, and which is active only on the surface (``λ φ = 0``).
At an impact of several rows at once (a rod falling flat on two supports, a joint at its limit
while the tip hits a table) the same complementarity holds for the impulses: integrating the
equations of motion over the impact, Vukobratović & Potkonjak (20.90), gives

.. math::

    M\\,(\\dot q^+ - \\dot q^-) = J^T P,\\qquad
    w = J\\dot q^+ + e \\circ \\min(J\\dot q^-, 0),\\qquad
    P \\ge 0,\\; w \\ge 0,\\; P^T w = 0

for the unilateral rows (no row pulls, none leaves with a velocity below its Newton target
``-e ṡ⁻``), and ``w = 0`` with a free-sign impulse for the bilateral ones. With the Delassus
matrix ``G = J M⁻¹ Jᵀ`` it is the linear complementarity problem ``w = G P + b``,
``b = J q̇⁻ + e ∘ min(J q̇⁻, 0)``. G is positive definite for independent rows, so the problem
has exactly one solution, which Murty's (1974) least-index principal pivoting finds in a
finite number of pivots. Redundant rows (G only semi-definite) get least-squares impulses on
each trial active set.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pinocchio as pin

from ..exceptions import ConstraintError, InvalidParameter

#: Velocities [m/s or rad/s] and impulses [N.s] above ``-TOLERANCE * scale`` count as >= 0.
TOLERANCE = 1e-12


class ImpulseResult(NamedTuple):
    """Result of :func:`impact_impulse` (unpacks as ``v_plus, impulse``)."""

    v_plus: np.ndarray
    """Shape (nv,). Velocity just after the impact [rad/s or m/s]."""
    impulse: np.ndarray
    """Shape (m,). Impulse P of every row [N.s or N.m.s]; >= 0 on unilateral rows."""
    active: np.ndarray
    """Shape (m,). Whether a row ends the impact on its surface (w = 0)."""


def solve_lcp(
    delassus: np.ndarray, b: np.ndarray, bilateral: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The mixed LCP ``w = G P + b``: ``P ≥ 0, w ≥ 0, Pᵀw = 0`` on unilateral rows, ``w = 0``
    on bilateral rows, by Murty's least-index principal pivoting.

    Args:
        delassus: G, shape (m, m), symmetric positive (semi-)definite.
        b: Shape (m,).
        bilateral: Shape (m,) booleans (default: all rows unilateral).

    Returns:
        (P, active): the impulses and the rows held with w = 0.

    Raises:
        ConstraintError: No solution after ``2^m`` pivots (G not positive semi-definite), or
            rows that contradict each other (a bilateral row drives a unilateral one through
            its surface).
    """
    G = np.asarray(delassus, dtype=float)
    b = np.asarray(b, dtype=float)
    m = b.size
    bilateral = np.zeros(m, dtype=bool) if bilateral is None else np.asarray(bilateral, bool)
    active = bilateral.copy()
    scale = max(float(np.abs(b).max(initial=0.0)), 1e-300)
    g_scale = max(float(np.abs(G).max(initial=0.0)), 1e-300)
    for _ in range(2 ** min(m, 20) + m):
        P = np.zeros(m)
        if active.any():
            sub = G[np.ix_(active, active)]
            P[active] = np.linalg.lstsq(sub, -b[active], rcond=1e-12)[0]
        w = G @ P + b
        bad = (active & ~bilateral & (P < -TOLERANCE * scale / g_scale)) | (
            ~active & (w < -TOLERANCE * scale)
        )
        if not bad.any():
            held = np.abs(w[active]).max(initial=0.0)
            # relative to the problem's velocities, with a floor: 1e-14 m/s is rounding
            if held > 1e-8 * max(scale, g_scale * np.abs(P).max(initial=0.0), 1e-6):
                raise ConstraintError(
                    f"the {m} rows of the impact problem contradict each other: the held rows "
                    f"keep a velocity of {held:.3g} (a bilateral row drives a unilateral one "
                    "through its surface)"
                )
            P[~bilateral] = np.maximum(P[~bilateral], 0.0)
            return P, active
        i = int(np.flatnonzero(bad)[0])
        active[i] = not active[i]
    raise ConstraintError(
        f"the impact problem of {m} rows has no solution (is the Delassus matrix positive "
        "semi-definite?)"
    )


def impact_impulse(
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    v: np.ndarray,
    jacobian: np.ndarray,
    *,
    restitution: np.ndarray | float = 0.0,
    bilateral: np.ndarray | None = None,
    rest_velocity: float = 0.0,
) -> ImpulseResult:
    """The impulses of a simultaneous impact of several rows, McClamroch (1986) (40)–(42) with
    Vukobratović & Potkonjak (20.90).

    .. math::

        P = \\arg\\{P \\ge 0,\\; G P + b \\ge 0,\\; P^T (G P + b) = 0\\},\\qquad
        \\dot q^+ = \\dot q^- + M^{-1} J^T P

    One row with e = 0 is :func:`pinext.contact.plastic_impact`'s plastic impact when it
    approaches, and no impulse when it separates.

    Args:
        model: Pinocchio model.
        data: Its data (``crba`` is called).
        q: Configuration at the impact, shape (nq,).
        v: Velocity just before the impact, shape (nv,).
        jacobian: J, shape (m, nv): the engaged rows (their velocity ``J q̇`` is positive
            when the row separates).
        restitution: Newton's coefficients e ∈ [0, 1], scalar or shape (m,).
        bilateral: Shape (m,) booleans: rows held in both directions (default none).
        rest_velocity: The Zeno cut [m/s or rad/s]: unilateral rows that the impulses leave
            separating slower than this are held too (w = 0) when they can be with P ≥ 0,
            or whatever the sign when the impact itself is slower than this (the rows come
            to rest together: the M-orthogonal projection of q̇⁻, which never adds kinetic
            energy; the acceleration-level problem then decides which rows stay closed).
            Without it two rows that share a mass (a joint at its limit and the tip on a
            table) alternate plastic impacts at geometrically decreasing speeds: infinitely
            many before a finite time (inelastic collapse).

    Returns:
        :class:`ImpulseResult` ``(v_plus, impulse, active)``.

    Raises:
        InvalidParameter: Bad shapes or e outside [0, 1].
    """
    J = np.atleast_2d(np.asarray(jacobian, dtype=float))
    if J.shape[1] != model.nv:
        raise InvalidParameter(f"jacobian must have {model.nv} columns, got shape {J.shape}")
    m = J.shape[0]
    e = np.broadcast_to(np.asarray(restitution, dtype=float), (m,))
    if np.any(e < 0.0) or np.any(e > 1.0):
        raise InvalidParameter(f"restitution must be in [0, 1], got {e}")
    v = np.asarray(v, dtype=float)
    pin.crba(model, data, q)
    M = np.triu(data.M) + np.triu(data.M, 1).T
    minv_jt = np.linalg.solve(M, J.T)
    rate = J @ v
    b = rate + e * np.minimum(rate, 0.0)
    if bilateral is not None:  # satisfied before the impact, they keep their velocity
        b = np.where(bilateral, 0.0, b)
    delassus = J @ minv_jt
    bilateral = np.zeros(m, dtype=bool) if bilateral is None else np.asarray(bilateral, bool)
    P, active = solve_lcp(delassus, b, bilateral)
    if rest_velocity > 0.0:
        w = delassus @ P + b
        slow = ~active & ~bilateral & (w < rest_velocity)
        if slow.any():
            held = bilateral | active | slow
            P_held, _ = solve_lcp(delassus, b, held)
            resting = -float(np.min(rate[~bilateral], initial=0.0)) < rest_velocity
            if resting or np.all(P_held[~bilateral] >= 0.0):
                P, active = P_held, held
    return ImpulseResult(v + minv_jt @ P, P, active)


def contact_forces(
    rows: list, mass: np.ndarray, bias: np.ndarray, tau: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The reactions of engaged rows with complementarity at the acceleration level,
    McClamroch (1986) (40)–(42) on a closed contact:

    .. math::

        w = J \\ddot q + C\\lambda + \\gamma = G\\lambda + J M^{-1}(\\tau - h) + \\gamma,
        \\qquad \\lambda \\ge 0,\\; w \\ge 0,\\; \\lambda^T w = 0

    on the unilateral rows (a row either pushes and holds, or lets go and separates), ``w = 0``
    on the others, with ``G = J M⁻¹ Jᵀ + C``.

    Args:
        rows: ``(name, ConstraintRows)`` pairs (``trial.dynamics`` of a System).
        mass: M, shape (nv, nv) [kg.m^2 or kg].
        bias: h, shape (nv,) [N.m or N].
        tau: Every generalized force but the reactions, shape (nv,) [N.m or N].

    Returns:
        (λ, active): the reactions of every row in order, and whether each row holds.
    """
    from ..simulation.component import RowKind

    jacobian = np.vstack([r.jacobian for _, r in rows])
    drift = np.concatenate([r.drift for _, r in rows])
    compliance = np.concatenate(
        [np.zeros(r.m) if r.compliance is None else r.compliance for _, r in rows]
    )
    bilateral = np.concatenate([np.full(r.m, r.kind is not RowKind.UNILATERAL) for _, r in rows])
    minv_jt = np.linalg.solve(mass, jacobian.T)
    delassus = jacobian @ minv_jt + np.diag(compliance)
    b = jacobian @ np.linalg.solve(mass, tau - bias) + drift
    return solve_lcp(delassus, b, bilateral)
