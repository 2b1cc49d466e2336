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

Frictional contacts add their tangential rows and Coulomb's cone: :func:`frictional_impulse`
(Newton's law with the cone at the impulse level), chosen by :func:`solve_impact` when the
System's rows carry a friction coefficient.
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
    on bilateral rows, for G positive semi-definite: dependent rows (both finger stops of a
    gripper and its ``<mimic>`` coupling, a joint stop and a stuck joint's friction row) are
    the normal case.

    The proximal-point method (Rockafellar (1976)) on Tikhonov's regularisation: each
    iterate solves the LCP of ``G + εI`` (positive definite: one solution, found by Murty's
    (1974) least-index principal pivoting in a finite number of pivots) with ``b − ε P_k``,

    .. math::

        w_{k+1} = (G + \varepsilon I) P_{k+1} + b - \varepsilon P_k,

    and the iterates converge to a solution of the semi-definite problem whenever one exists
    (at the rate ε/(σ + ε) along an eigenvalue σ of G; ε is 1e-9 of G's largest diagonal
    entry, so two or three iterates reach rounding). Starting from P₀ = 0, the first iterate
    is Tikhonov's solution: redundant rows share their load as the minimum-norm reactions of
    :mod:`pinext.simulation.step` do, instead of one row carrying it and the others
    separating with zero force.

    Args:
        delassus: G, shape (m, m), symmetric positive (semi-)definite.
        b: Shape (m,).
        bilateral: Shape (m,) booleans (default: all rows unilateral).

    Returns:
        (P, active): the impulses and the rows held with w = 0.

    Raises:
        ConstraintError: The problem has no solution: rows that contradict each other (a
            bilateral row drives a unilateral one through its surface), so that the held rows
            keep a velocity. The message gives that velocity.
    """
    G = np.asarray(delassus, dtype=float)
    b = np.asarray(b, dtype=float)
    m = b.size
    bilateral = np.zeros(m, dtype=bool) if bilateral is None else np.asarray(bilateral, bool)
    if m == 0:
        return np.zeros(0), np.zeros(0, dtype=bool)
    scale = max(float(np.abs(b).max(initial=0.0)), 1e-300)
    g_scale = max(float(np.abs(np.diag(G)).max(initial=0.0)), 1e-300)
    eps = PROXIMAL_REGULARIZATION * g_scale
    regularized = G + eps * np.eye(m)
    P = np.zeros(m)
    active = bilateral.copy()
    for _ in range(PROXIMAL_ITERATIONS):
        P, active = _murty(regularized, b - eps * P, bilateral, active)
        held = float(np.abs((G @ P + b)[active]).max(initial=0.0))
        rounding = ROUNDING * g_scale * np.abs(P).max(initial=0.0)  # of G P's products
        if held <= max(LCP_TOLERANCE * scale, rounding):
            P[~bilateral] = np.maximum(P[~bilateral], 0.0)
            return P, active
    raise ConstraintError(
        f"the {m} rows of the impact problem contradict each other: the held rows keep a "
        f"velocity of {held:.3g} (a bilateral row drives a unilateral one through its surface)"
    )


#: Tikhonov's ε of :func:`solve_lcp`, relative to the Delassus matrix's largest diagonal entry.
PROXIMAL_REGULARIZATION = 1e-9
#: Proximal iterations of :func:`solve_lcp` before its rows count as contradicting each other.
PROXIMAL_ITERATIONS = 50
#: Relative velocity residual of held rows below which :func:`solve_lcp` has converged.
LCP_TOLERANCE = 1e-10
#: The rounding of the products ``G P`` (a few hundred machine epsilons).
ROUNDING = 1e-13


def _murty(
    G: np.ndarray, b: np.ndarray, bilateral: np.ndarray, active: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The LCP of a positive definite G by Murty's (1974) least-index principal pivoting,
    from the guess ``active`` (bilateral rows always held)."""
    m = b.size
    active = active | bilateral
    scale = max(float(np.abs(b).max(initial=0.0)), 1e-300)
    g_scale = max(float(np.abs(G).max(initial=0.0)), 1e-300)
    for _ in range(2 ** min(m, 20) + m):
        P = np.zeros(m)
        if active.any():
            P[active] = np.linalg.solve(G[np.ix_(active, active)], -b[active])
        w = G @ P + b
        bad = (active & ~bilateral & (P < -TOLERANCE * scale / g_scale)) | (
            ~active & (w < -TOLERANCE * scale)
        )
        if not bad.any():
            return P, active
        i = int(np.flatnonzero(bad)[0])
        active = active.copy()
        active[i] = not active[i]
    raise ConstraintError(  # unreachable for a positive definite G (Murty (1974))
        f"principal pivoting found no solution of the impact problem of {m} rows"
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


class FrictionalImpulseResult(NamedTuple):
    """Result of :func:`frictional_impulse` (unpacks as ``v_plus, impulse, active, cones``)."""

    v_plus: np.ndarray
    """Shape (nv,). Velocity just after the impact [rad/s or m/s]."""
    impulse: np.ndarray
    """Shape (m,). Impulse of every row [N.s or N.m.s]: P_n >= 0 on unilateral and normal rows,
    the tangential impulses of every cone within ``μ P_n``."""
    active: np.ndarray
    """Shape (m,). Whether a row ends the impact held (w = 0); a sliding cone's tangents are not."""
    cones: tuple[str, ...]
    """One of ``"open"``, ``"stick"``, ``"slip"`` per cone."""
    restitution_scale: float
    """The factor (≤ 1) applied to the restitution coefficients so that the impact creates no
    energy (1 unless Newton's law with friction would have created energy)."""
    jammed: bool = False
    """No stick/slip/open mode satisfies the law (strong normal–tangential coupling, the
    impact form of Painlevé's paradox): every engaged row is held instead (the contacts stick,
    Génot & Brogliato (1999)'s resolution), an M-orthogonal projection of q̇⁻."""


#: Iterations of the slip-direction fixed point ``t̂ = v_t⁺/|v_t⁺|`` of a sliding cone before
#: the angle search.
SLIP_ITERATIONS = 8


def frictional_impulse(
    mass: np.ndarray,
    v: np.ndarray,
    jacobian: np.ndarray,
    *,
    cones: list[tuple[int, list[int], float]],
    restitution: np.ndarray | float = 0.0,
    bilateral: np.ndarray | None = None,
    rest_velocity: float = 0.0,
) -> FrictionalImpulseResult:
    """The impulses of a simultaneous impact of frictional contacts, unilateral and bilateral
    rows: Newton's impact law with Coulomb's friction cone at the impulse level (Moreau's law
    of the post-impact velocity, Moreau 1988, Glocker & Pfeiffer).

    .. math::

        M(\\dot q^+ - \\dot q^-) = \\sum_k J_k^T P_k,\\qquad
        0 \\le P_n \\perp w_n = J_n\\dot q^+ + e\\,\\min(J_n\\dot q^-, 0) \\ge 0,

    and per cone (normal row n, tangential rows t, coefficient μ) either **stick** —
    ``J_t q̇⁺ = 0`` with ``|P_t| ≤ μ P_n`` (a plastic sticking impact: the impulse stays in
    the cone) — or **slip** — ``P_t = −μ P_n t̂`` with ``t̂ = J_t q̇⁺ / |J_t q̇⁺|`` (the
    friction impulse opposes the sliding velocity after the impact, maximal dissipation) —
    or **open** (P = 0, w_n ≥ 0). The cone is exact: the Euclidean norm of the tangential
    impulse in 3D (second-order cone), ``|P_t|`` on a planar contact.

    Energy. With ``ΔT = q̇⁺ᵀ Jᵀ P − ½ Δq̇ᵀ M Δq̇`` and ``w_n P_n = 0``: for e = 0 every
    normal row gives ``J_n q̇⁺ P_n = 0``, every sticking cone ``J_t q̇⁺ = 0``, every sliding
    one ``J_t q̇⁺ · P_t = −μ P_n |J_t q̇⁺| ≤ 0``, so ``ΔT ≤ −½ Δq̇ᵀ M Δq̇ ≤ 0``: a plastic
    frictional impact never creates energy. With e > 0 Newton's law with friction may (a
    tangential impulse that couples into the normal direction, Stronge (1990)); the
    coefficients are then scaled down (bisection on one common factor, reported as
    ``restitution_scale``) to the largest value that creates none, Stronge's energetic
    bound.

    The solution is found by enumerating the modes of the rows (held/open, stick/slip/open),
    fewest sliding cones first, then in the order "held before open, stick before slip",
    each slip direction by the fixed
    point above (an angle search on the circle of directions where it does not converge:
    strongly coupled normal and tangential rows), and keeping the first that satisfies every
    sign and cone condition.

    Args:
        mass: M, shape (nv, nv) [kg or kg.m^2].
        v: q̇⁻, shape (nv,).
        jacobian: Shape (m, nv); velocities ``J q̇`` positive when a normal row separates.
        cones: (normal row, tangential rows, μ) of every frictional contact.
        restitution: Newton's e ∈ [0, 1] per row (read on unilateral and normal rows).
        bilateral: Shape (m,) booleans: rows held in both directions (default none).
        rest_velocity: The Zeno cut [m/s or rad/s], as in :func:`impact_impulse`: normal
            and unilateral rows that the impulses leave separating slower than this are held
            too when they can be (P_n ≥ 0, in the cone); when the impact itself is slower,
            every engaged row is held (an M-orthogonal projection of q̇⁻, which adds no
            kinetic energy; the acceleration-level problem then decides stick, slip and
            lift-off). Without it, feet landing one after another rock between them in
            impacts at geometrically decreasing speeds (inelastic collapse).

    Returns:
        :class:`FrictionalImpulseResult`; ``jammed`` when no mode satisfies the law (then
        every row is held).
    """
    J = np.atleast_2d(np.asarray(jacobian, dtype=float))
    m = J.shape[0]
    e = np.array(np.broadcast_to(np.asarray(restitution, dtype=float), (m,)))
    if np.any(e < 0.0) or np.any(e > 1.0):
        raise InvalidParameter(f"restitution must be in [0, 1], got {e}")
    bilateral = np.zeros(m, dtype=bool) if bilateral is None else np.asarray(bilateral, bool)
    for n, tangents, mu in cones:
        if mu < 0.0 or bilateral[n] or bilateral[tangents].any():
            raise InvalidParameter("a cone needs μ >= 0 and unilateral normal/tangential rows")
    try:
        result = _frictional(mass, v, J, cones, e, bilateral)
    except ConstraintError:
        return _held(mass, v, J, cones)._replace(jammed=True)
    if rest_velocity > 0.0:
        result = _rest(mass, v, J, cones, e, bilateral, result, rest_velocity)
    kinetic = 0.5 * float(v @ mass @ v)

    def gain(r: FrictionalImpulseResult) -> float:
        return 0.5 * float(r.v_plus @ mass @ r.v_plus) - kinetic

    slack = 1e-12 * max(kinetic, 1e-300)
    if e.any() and gain(result) > slack:
        low, high = 0.0, 1.0
        for _ in range(60):
            mid = 0.5 * (low + high)
            if gain(_frictional(mass, v, J, cones, mid * e, bilateral)) > slack:
                high = mid
            else:
                low = mid
        result = _frictional(mass, v, J, cones, low * e, bilateral)._replace(restitution_scale=low)
    return result


def _rest(mass, v, J, cones, e, bilateral, result, rest_velocity) -> FrictionalImpulseResult:
    """The Zeno cut of :func:`frictional_impulse` (``rest_velocity``)."""
    normal = ~bilateral.copy()
    for _, tangents, _ in cones:
        normal[tangents] = False
    w = J @ result.v_plus
    slow = normal & ~result.active & (w < rest_velocity)
    if not slow.any():
        return result
    try:
        return _frictional(mass, v, J, cones, e, bilateral, forced=slow | result.active & normal)
    except ConstraintError:
        pass
    if -float(np.min((J @ v)[normal], initial=0.0)) >= rest_velocity:
        return result
    return _held(mass, v, J, cones)


def _held(mass, v, J, cones) -> FrictionalImpulseResult:
    """Every row held (J q̇⁺ = 0): the M-orthogonal projection of q̇⁻, which never adds
    kinetic energy; the cones stick."""
    held = np.ones(J.shape[0], dtype=bool)
    kinds = tuple("stick" for _ in cones)
    P, v_plus = _solve_modes(np.linalg.inv(mass), v, J, J @ v, held, cones, kinds, {})
    return FrictionalImpulseResult(v_plus, P, held, kinds, 1.0)


def _frictional(mass, v, J, cones, e, bilateral, forced=None) -> FrictionalImpulseResult:
    """One solve of :func:`frictional_impulse` for fixed restitution coefficients."""
    import itertools

    m = J.shape[0]
    e = e.copy()
    for _, tangents, _ in cones:
        e[tangents] = 0.0  # restitution acts on the normal rows only
    minv = np.linalg.inv(mass)
    rate = J @ v
    b = np.where(bilateral, 0.0, rate + e * np.minimum(rate, 0.0))
    in_cone = np.zeros(m, dtype=bool)
    for n, tangents, _ in cones:
        in_cone[[n, *tangents]] = True
    single = [i for i in range(m) if not bilateral[i] and not in_cone[i]]
    scale = max(float(np.abs(b).max(initial=0.0)), 1e-300)
    tol = 1e-9 * scale
    forced = np.zeros(m, dtype=bool) if forced is None else forced
    options = [("held",) if forced[i] else ("held", "open") for i in single] + [
        ("stick", "slip") if forced[n] else ("stick", "slip", "open") for n, _, _ in cones
    ]
    # fewest sliding cones first (each costs a search of its direction), then in the order
    # held before open, stick before slip
    choices = sorted(itertools.product(*options), key=lambda c: c.count("slip"))
    for choice in choices:
        held = bilateral.copy()
        for i, c in zip(single, choice[: len(single)], strict=True):
            held[i] = c == "held"
        kinds = choice[len(single) :]
        for (n, tangents, _), c in zip(cones, kinds, strict=True):
            held[n] = c != "open"
            held[tangents] = c == "stick"
        directions = {}
        for k, ((_n, tangents, _), c) in enumerate(zip(cones, kinds, strict=True)):
            if c == "slip":  # start from the sliding velocity before the impact
                t_rate = rate[tangents]
                directions[k] = _unit_or_none(t_rate)
        P, v_plus = _solve_modes(minv, v, J, b, held, cones, kinds, directions)
        if directions:
            P, v_plus = _slip_directions(minv, v, J, b, held, cones, kinds, directions, P, v_plus)
        w = J @ v_plus - J @ v + b
        ok = bool(np.all(np.abs(w[held]) <= tol + 1e-9 * np.abs(J[held] @ v_plus)))
        for i in single:
            ok &= P[i] >= -tol if held[i] else w[i] >= -tol
        for k, ((n, tangents, mu), c) in enumerate(zip(cones, kinds, strict=True)):
            if c == "open":
                ok &= w[n] >= -tol
            elif c == "stick":
                ok &= P[n] >= -tol and float(np.linalg.norm(P[tangents])) <= mu * P[n] + tol
            else:
                slip = J[tangents] @ v_plus
                d, now = directions.get(k), _unit_or_none(slip)
                ok &= P[n] >= -tol and float(np.linalg.norm(slip)) > tol
                ok &= d is not None and now is not None and float(np.abs(now - d).max()) < 1e-9
            if not ok:
                break
        if ok:
            active = held.copy()
            for i in single:
                P[i] = max(P[i], 0.0)
            return FrictionalImpulseResult(v_plus, P, active, tuple(kinds), 1.0)
    raise ConstraintError(
        f"the frictional impact problem of {m} rows and {len(cones)} cones has no solution "
        "in any stick/slip/open mode (rows that contradict each other)"
    )


def _slip_directions(minv, v, J, b, held, cones, kinds, directions, P, v_plus):
    """The sliding directions ``t̂_k ∥ J_t q̇⁺`` of every sliding cone (updates
    ``directions``): first the fixed point ``t̂ ← J_t q̇⁺ / |J_t q̇⁺|`` (it converges at once
    when the tangential and normal rows are uncoupled), then, cone by cone, the angle φ of
    ``t̂ = (cos φ, sin φ)`` where ``t̂ × J_t q̇⁺ = 0`` with ``t̂ · J_t q̇⁺ > 0`` (a scan of the
    circle, refined by Brent's method), in sweeps until the directions settle."""
    from scipy.optimize import brentq

    sliding = [k for k, c in enumerate(kinds) if c == "slip"]

    def settled() -> bool:
        for k in sliding:
            now = _unit_or_none(J[cones[k][1]] @ v_plus)
            d = directions.get(k)
            if now is None or d is None or np.abs(now - d).max() > 1e-12:
                return False
        return True

    for _ in range(SLIP_ITERATIONS):
        if settled():
            return P, v_plus
        for k in sliding:
            new = _unit_or_none(J[cones[k][1]] @ v_plus)
            if new is not None:
                directions[k] = new
        P, v_plus = _solve_modes(minv, v, J, b, held, cones, kinds, directions)
    for _ in range(20):
        if settled():
            break
        for k in sliding:
            tangents = cones[k][1]

            def at(phi: float, k: int = k, tangents: list = tangents) -> tuple[float, float]:
                d = np.array([np.cos(phi), np.sin(phi)])[: len(tangents)]
                if len(tangents) == 1:
                    d = np.sign(d) if d[0] != 0 else np.ones(1)
                directions[k] = d
                slip = J[tangents] @ _solve_modes(minv, v, J, b, held, cones, kinds, directions)[1]
                cross = d[0] * slip[1] - d[1] * slip[0] if len(tangents) == 2 else 0.0
                return float(cross), float(d @ slip)

            if len(tangents) == 1:
                candidates = [0.0, np.pi]
            else:
                grid = np.linspace(0.0, 2 * np.pi, 37)
                values = [at(phi) for phi in grid]
                candidates = []
                for i in range(36):
                    (c0, d0), (c1, d1) = values[i], values[i + 1]
                    if c0 == 0.0 and d0 > 0.0:
                        candidates.append(grid[i])
                    elif c0 * c1 < 0.0 and (d0 > 0.0 or d1 > 0.0):
                        candidates.append(
                            brentq(lambda p: at(p)[0], grid[i], grid[i + 1], xtol=1e-15)
                        )
            best = max(candidates, key=lambda p: at(p)[1], default=None)
            if best is None:
                return P, v_plus
            at(best)
            P, v_plus = _solve_modes(minv, v, J, b, held, cones, kinds, directions)
    return P, v_plus


def _unit_or_none(vector: np.ndarray) -> np.ndarray | None:
    norm = float(np.linalg.norm(vector))
    return None if norm <= 1e-14 else vector / norm


def _solve_modes(minv, v, J, b, held, cones, kinds, directions):
    """(P, q̇⁺) of one mode: the held rows' impulses, each sliding normal row's impulse along
    ``J_n − μ t̂ᵀ J_t`` (frictionless while it has no direction yet)."""
    m = J.shape[0]
    W = J.copy()  # the force map of the held rows
    slipping = {}
    for k, ((n, tangents, mu), c) in enumerate(zip(cones, kinds, strict=True)):
        if c == "slip":
            d = directions.get(k)
            if d is None:  # no direction yet: start from the frictionless impact's sliding
                d = np.zeros(len(tangents))
            W[n] = J[n] - mu * (d @ J[tangents])
            slipping[n] = (tangents, mu, d)
    rows = np.flatnonzero(held)
    P = np.zeros(m)
    if rows.size:
        G = J[rows] @ minv @ W[rows].T
        P[rows] = np.linalg.lstsq(G, -b[rows], rcond=1e-12)[0]
    v_plus = v + minv @ (W[rows].T @ P[rows])
    for n, (tangents, mu, d) in slipping.items():
        P[tangents] = -mu * P[n] * d
    return P, v_plus


def solve_impact(
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    v: np.ndarray,
    rows: list,
    *,
    restitution: np.ndarray | float = 0.0,
    rest_velocity: float = 0.0,
) -> ImpulseResult | FrictionalImpulseResult:
    """The impact of every engaged row of a System: ``(name, ConstraintRows)`` pairs as
    ``trial.rows(x, mode, impulse=True)`` gives them. Frictionless rows go to
    :func:`impact_impulse`; rows with a friction coefficient (a frictional contact: its
    normal row then its tangential rows) make it :func:`frictional_impulse`.

    Returns:
        The result; its ``impulse`` and ``active`` follow the stacked rows.
    """
    from ..simulation.component import RowKind

    jacobian = np.vstack([r.jacobian for _, r in rows])
    bilateral = np.concatenate([np.full(r.m, r.kind is not RowKind.UNILATERAL) for _, r in rows])
    cones, start = [], 0
    for _, r in rows:
        if r.friction > 0.0:
            cones.append((start, list(range(start + 1, start + r.m)), float(r.friction)))
            bilateral[start : start + r.m] = False
        start += r.m
    if not cones:
        return impact_impulse(
            model,
            data,
            q,
            v,
            jacobian,
            restitution=restitution,
            bilateral=bilateral,
            rest_velocity=rest_velocity,
        )
    pin.crba(model, data, q)
    mass = np.triu(data.M) + np.triu(data.M, 1).T
    return frictional_impulse(
        mass,
        v,
        jacobian,
        cones=cones,
        restitution=restitution,
        bilateral=bilateral,
        rest_velocity=rest_velocity,
    )
