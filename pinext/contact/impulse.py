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
(De Saxcé's form of Coulomb's law at the impulse level, Stronge (1990)'s energetic
restitution), chosen by :func:`solve_impact` when the System's rows carry a friction
coefficient. Its solver is a nonsmooth block Gauss–Seidel method (Jean & Moreau 1992) with
each cone solved exactly, polished by Newton's method on the mode it finds, with proximal
iterations on Tikhonov's regularisation where rows are redundant; the
convex relaxation of the law (Anitescu 2006) is the documented fallback. Why this solver,
and what is known of the existence of a solution: :func:`frictional_impulse`.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin
from numba import njit

from ..dynamics.first_call import FirstCallNotice
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


def stacked(rows: list, flag: Any) -> np.ndarray:
    """``flag(r)`` of each block of ``(name, ConstraintRows)`` pairs, repeated on its rows:
    one boolean per stacked row."""
    return np.repeat(np.array([bool(flag(r)) for _, r in rows], dtype=bool), [r.m for _, r in rows])


def bilateral_rows(rows: list) -> np.ndarray:
    """Which stacked rows are held in both directions (every kind but unilateral)."""
    from ..simulation.component import RowKind

    return stacked(rows, lambda r: r.kind is not RowKind.UNILATERAL)


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

        w_{k+1} = (G + \\varepsilon I) P_{k+1} + b - \\varepsilon P_k,

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
            keep a velocity above :data:`HELD_DRIFT` and above the rounding of the problem's
            largest products after the iterations (each row converges to its own rounding
            when it can). The message gives that velocity.
    """
    G = np.ascontiguousarray(delassus, dtype=float)
    b = np.ascontiguousarray(b, dtype=float)
    m = b.size
    bilateral = np.zeros(m, dtype=bool) if bilateral is None else np.asarray(bilateral, bool)
    if m == 0:
        return np.zeros(0), np.zeros(0, dtype=bool)
    P, active = np.zeros(m), np.zeros(m, dtype=bool)
    status, held = _k._proximal_lcp(G, b, np.ascontiguousarray(bilateral), P, active)
    _raise_unsolved(status, held, m)
    return P, active


#: The compiled kernels below, each saying at its first call that it compiles (10–20 s in a
#: fresh installation: the first impact).
_k = FirstCallNotice(
    sys.modules[__name__],
    "pinext: compiling the impact kernels (first impact only, cached)...",
    1.0,
)


def _raise_unsolved(status: int, held: float, m: int) -> None:
    """The :class:`ConstraintError` of an impact problem of m rows :func:`_proximal_lcp`
    did not solve."""
    if status == _CONTRADICTION:
        raise ConstraintError(
            f"the {m} rows of the impact problem contradict each other: the held rows keep "
            f"a velocity of {held:.3g} (a bilateral row drives a unilateral one through its "
            "surface)"
        )
    if status == _NO_PIVOT:  # unreachable for a positive definite G (Murty (1974))
        raise ConstraintError(
            f"principal pivoting found no solution of the impact problem of {m} rows"
        )


#: Tikhonov's ε of :func:`solve_lcp`, relative to the Delassus matrix's largest diagonal entry.
PROXIMAL_REGULARIZATION = 1e-9
#: Proximal iterations of :func:`solve_lcp` before its rows count as contradicting each other.
PROXIMAL_ITERATIONS = 50
#: Relative velocity residual of held rows below which :func:`solve_lcp` has converged.
LCP_TOLERANCE = 1e-10
#: The rounding of the products ``G P`` (a few hundred machine epsilons).
ROUNDING = 1e-13
#: Velocity [m/s or rad/s] that held rows may keep after an impact: dependent rows (two finger
#: stops and the `<mimic>` coupling) carry their Baumgarte-held drift of ~1e-13 into ``b``,
#: where no impulse can cancel it; the rows' stabilisation removes it. A contradiction (a
#: bilateral row driving a unilateral one through) keeps a velocity of the approach's order.
HELD_DRIFT = 1e-10


#: :func:`_proximal_lcp`'s outcomes.
_SOLVED, _CONTRADICTION, _NO_PIVOT = 0, 1, 2


@njit(cache=True)
def _proximal_lcp(
    G: np.ndarray, b: np.ndarray, bilateral: np.ndarray, P: np.ndarray, active: np.ndarray
) -> tuple[int, float]:
    """:func:`solve_lcp`'s iterations, compiled (a problem of a few rows costs a few µs,
    where numpy's calls on small arrays cost ~100 µs): P and active are written in place.
    Returns (outcome, the held rows' largest velocity)."""
    m = b.size
    scale = max(np.abs(b).max(), 1e-300)
    g_scale = max(np.abs(np.diag(G)).max(), 1e-300)
    eps = PROXIMAL_REGULARIZATION * g_scale
    regularized = G + eps * np.eye(m)
    active[:] = bilateral
    held = 0.0
    for _ in range(PROXIMAL_ITERATIONS):
        if not _murty(regularized, b - eps * P, bilateral, P, active):
            return _NO_PIVOT, 0.0
        w = np.abs(G @ P + b)
        # each row's own rounding, of its products G_ij P_j: rows of a light finger (large G)
        # and of a heavy torso (small G) in one problem have scales 1e6 apart
        rounding = ROUNDING * (np.abs(G) @ np.abs(P))
        held, converged = 0.0, True
        for i in range(m):
            if active[i]:
                held = max(held, w[i])
                if w[i] > max(LCP_TOLERANCE * scale, rounding[i]):
                    converged = False
        if converged:
            break
    else:
        # what no impulse can cancel: a velocity along G's null space (dependent rows), at the
        # rounding of the problem's largest products or below HELD_DRIFT
        if held > max(HELD_DRIFT, ROUNDING * g_scale * np.abs(P).max()):
            return _CONTRADICTION, held
    for i in range(m):
        if not bilateral[i]:
            P[i] = max(P[i], 0.0)
    return _SOLVED, held


@njit(cache=True)
def _spd_solve(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A⁻¹ B for a symmetric positive definite A read from its upper triangle (as ``crba``
    fills the mass matrix), by Cholesky (A = UᵀU); B of shape (n, k). LAPACK's route
    (``np.linalg.solve`` compiled in Numba) was a quarter of a first bounce's compilation."""
    n = A.shape[0]
    U = np.zeros((n, n))
    for i in range(n):
        d = A[i, i]
        for k in range(i):
            d -= U[k, i] * U[k, i]
        if not d > 0.0:
            raise np.linalg.LinAlgError("Matrix is not positive definite.")
        d = np.sqrt(d)
        U[i, i] = d
        for j in range(i + 1, n):
            s = A[i, j]
            for k in range(i):
                s -= U[k, i] * U[k, j]
            U[i, j] = s / d
    X = np.empty((n, B.shape[1]))
    for c in range(B.shape[1]):
        for i in range(n):  # Uᵀ y = b
            s = B[i, c]
            for k in range(i):
                s -= U[k, i] * X[k, c]
            X[i, c] = s / U[i, i]
        for i in range(n - 1, -1, -1):  # U x = y
            s = X[i, c]
            for k in range(i + 1, n):
                s -= U[i, k] * X[k, c]
            X[i, c] = s / U[i, i]
    return X


@njit(cache=True)
def _murty(
    G: np.ndarray, b: np.ndarray, bilateral: np.ndarray, P: np.ndarray, active: np.ndarray
) -> bool:
    """The LCP of a positive definite G by Murty's (1974) least-index principal pivoting,
    from the guess ``active`` (bilateral rows always held); P and active are written in
    place. False when no pivot sequence ended (unreachable for a positive definite G)."""
    m = b.size
    active |= bilateral
    scale = max(np.abs(b).max(), 1e-300)
    g_scale = max(np.abs(G).max(), 1e-300)
    for _ in range(2 ** min(m, 20) + m):
        P[:] = 0.0
        held = np.flatnonzero(active)
        if held.size:
            P[held] = _spd_solve(G[held][:, held], (-b[held]).reshape((held.size, 1)))[:, 0]
        w = G @ P + b
        for i in range(m):
            if (active[i] and not bilateral[i] and P[i] < -TOLERANCE * scale / g_scale) or (
                not active[i] and w[i] < -TOLERANCE * scale
            ):
                active[i] = not active[i]
                break
        else:
            return True
    return False


def impact_impulse(
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    v: np.ndarray,
    jacobian: np.ndarray,
    *,
    restitution: np.ndarray | float = 0.0,
    bilateral: np.ndarray | None = None,
    stopping: np.ndarray | None = None,
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
        bilateral: Shape (m,) booleans: rows held in both directions (default none); they
            keep their velocity, satisfied before the impact.
        stopping: Shape (m,) booleans: bilateral rows that the impact brings to rest
            instead (``J q̇⁺ = 0``: the joints that friction holds, creeping at the rounding
            of earlier impacts; default none).
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
    J = np.ascontiguousarray(np.atleast_2d(np.asarray(jacobian, dtype=float)))
    if J.shape[1] != model.nv:
        raise InvalidParameter(f"jacobian must have {model.nv} columns, got shape {J.shape}")
    m = J.shape[0]
    e = np.broadcast_to(np.asarray(restitution, dtype=float), (m,))
    if m and (e.min() < 0.0 or e.max() > 1.0):
        raise InvalidParameter(f"restitution must be in [0, 1], got {e}")
    bilateral = np.zeros(m, dtype=bool) if bilateral is None else np.asarray(bilateral, bool)
    bilateral = np.ascontiguousarray(bilateral)
    stopping = np.zeros(m, dtype=bool) if stopping is None else np.asarray(stopping, bool)
    keeping = np.ascontiguousarray(bilateral & ~stopping)
    if m == 0:
        return ImpulseResult(np.array(v, dtype=float), np.zeros(0), np.zeros(0, dtype=bool))
    pin.crba(model, data, q)
    v_plus, P, active = np.array(v, dtype=float), np.zeros(m), np.zeros(m, dtype=bool)
    status, held = _k._frictionless(
        data.M, J, e.copy(), bilateral, keeping, rest_velocity, v_plus, P, active
    )
    _raise_unsolved(status, held, m)
    return ImpulseResult(v_plus, P, active)


@njit(cache=True)
def _frictionless(
    upper: np.ndarray,
    J: np.ndarray,
    e: np.ndarray,
    bilateral: np.ndarray,
    keeping: np.ndarray,
    rest_velocity: float,
    v: np.ndarray,
    P: np.ndarray,
    active: np.ndarray,
) -> tuple[int, float]:
    """:func:`impact_impulse` after its checks, compiled: M from its upper triangle (as
    ``crba`` fills it); v (before, then after the impact), P and active written in place;
    ``keeping``: the bilateral rows that keep their velocity (the others come to rest).
    Returns :func:`_proximal_lcp`'s (outcome, held velocity)."""
    minv_jt = _spd_solve(upper, np.ascontiguousarray(J.T))
    rate = J @ v
    b = rate + e * np.minimum(rate, 0.0)
    for i in range(b.size):
        if keeping[i]:  # satisfied before the impact, they keep their velocity
            b[i] = 0.0
        elif bilateral[i]:  # brought to rest, without restitution
            b[i] = rate[i]
    delassus = J @ minv_jt
    status, held = _proximal_lcp(delassus, b, bilateral, P, active)
    if status != _SOLVED:
        return status, held
    if rest_velocity > 0.0:
        w = delassus @ P + b
        slow = ~active & ~bilateral & (w < rest_velocity)
        if slow.any():
            rows = bilateral | active | slow
            P_held, held_active = np.zeros(b.size), np.zeros(b.size, dtype=np.bool_)
            status, held = _proximal_lcp(delassus, b, rows, P_held, held_active)
            if status != _SOLVED:
                return status, held
            lowest = 0.0  # the fastest approach of a unilateral row
            for i in range(b.size):
                if not bilateral[i]:
                    lowest = min(lowest, rate[i])
            if -lowest < rest_velocity or np.all(P_held[~bilateral] >= 0.0):
                P[:] = P_held
                active[:] = rows
    v += minv_jt @ P
    return _SOLVED, 0.0


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

    jacobian = np.vstack([r.jacobian for _, r in rows])
    drift = np.concatenate([r.drift for _, r in rows])
    compliance = np.concatenate(
        [np.zeros(r.m) if r.compliance is None else r.compliance for _, r in rows]
    )
    bilateral = bilateral_rows(rows)
    m = drift.size
    forces, active = np.zeros(m), np.zeros(m, dtype=bool)
    status, held = _k._forces(
        np.ascontiguousarray(mass, dtype=float),
        np.ascontiguousarray(jacobian, dtype=float),
        np.ascontiguousarray(tau - bias, dtype=float),
        np.ascontiguousarray(drift, dtype=float),
        np.ascontiguousarray(compliance, dtype=float),
        bilateral,
        forces,
        active,
    )
    _raise_unsolved(status, held, m)
    return forces, active


@njit(cache=True)
def _forces(
    mass: np.ndarray,
    J: np.ndarray,
    effort: np.ndarray,
    drift: np.ndarray,
    compliance: np.ndarray,
    bilateral: np.ndarray,
    forces: np.ndarray,
    active: np.ndarray,
) -> tuple[int, float]:
    """:func:`contact_forces` after stacking the rows, compiled: ``G = J M⁻¹ Jᵀ + C`` and
    ``b = J M⁻¹ (τ − h) + γ`` (``effort`` = τ − h), then :func:`_proximal_lcp`, which writes
    the forces and the active rows in place and returns its (outcome, held velocity)."""
    minv_jt = _spd_solve(mass, np.ascontiguousarray(J.T))
    delassus = J @ minv_jt
    for i in range(compliance.size):
        delassus[i, i] += compliance[i]
    b = J @ _spd_solve(mass, np.ascontiguousarray(effort).reshape((effort.size, 1)))[:, 0] + drift
    return _proximal_lcp(delassus, b, bilateral, forces, active)


class FrictionalImpulseResult(NamedTuple):
    """Result of :func:`frictional_impulse` (unpacks as ``v_plus, impulse, active, cones``)."""

    v_plus: np.ndarray
    """Shape (nv,). Velocity just after the impact [rad/s or m/s]."""
    impulse: np.ndarray
    """Shape (m,). Impulse of every row over the whole impact (compression and restitution)
    [N.s or N.m.s]: P_n >= 0 on unilateral and normal rows, the tangential impulses of every
    cone within ``μ P_n``."""
    active: np.ndarray
    """Shape (m,). Whether a row is held by the impact: bilateral rows, normal and unilateral
    rows that push (P > 0), the tangential rows of a sticking cone."""
    cones: tuple[str, ...]
    """One of ``"open"``, ``"stick"``, ``"slip"`` per cone, at the end of the impact."""
    restitution_scale: float
    """The factor (≤ 1) applied to the restitution coefficients so that the impact creates no
    energy (1 unless the restitution phase with friction would have created energy)."""
    jammed: bool = False
    """The solver found no solution of the plastic law (rows that contradict each other have
    none: see :func:`frictional_impulse`); the impulses are then those of the convex
    relaxation (Anitescu (2006)), which never creates energy and stays in the cones, lets
    no row penetrate unless the rows contradict each other, but lets a sliding contact
    separate at ``μ |ṡ_t|``."""


class _Kind(Enum):
    """The set of a block of rows in the impulse problem."""

    BILATERAL = "bilateral"  # every bilateral row together: w = 0, any impulse
    UNILATERAL = "unilateral"  # one frictionless row: 0 <= P ⊥ w >= 0
    CONE = "cone"  # a normal row and its tangents: De Saxcé's form of Coulomb's law


class _Block(NamedTuple):
    rows: np.ndarray  # indices into the stacked rows; a cone's normal row first
    kind: _Kind
    mu: float  # friction coefficient of a cone (0 otherwise)
    W: np.ndarray  # the diagonal block G[rows, rows]
    W_pinv: np.ndarray  # its pseudo-inverse
    null: np.ndarray  # an orthonormal basis of its null space (columns)
    forced: bool  # a unilateral or normal row held (w_n = 0) by the Zeno cut


class _Problem(NamedTuple):
    """``σ = G P + b`` with one set per block; the unknown is P (the impulses)."""

    G: np.ndarray
    b: np.ndarray
    blocks: list[_Block]

    @property
    def speed(self) -> float:
        """The velocity scale of the problem [m/s or rad/s]."""
        return max(float(np.abs(self.b).max(initial=0.0)), 1e-300)


#: Sweeps of the nonsmooth Gauss–Seidel method before (and between) the Newton polishes.
SWEEPS = (60, 600)
#: Bisections of the restitution scale when the full restitution creates energy or has no
#: solution (the scale to ``2⁻²⁰``).
RESTITUTION_BISECTIONS = 20
#: Tikhonov's ε of the proximal iterations of the frictional law, relative to G's largest
#: diagonal entry.
FRICTION_REGULARIZATION = 1e-8
#: Proximal iterations of the frictional law at most.
PROXIMAL_STEPS = 20
#: Combinations of modes that :func:`_enumerate` tries at most.
ENUMERATED_MODES = 2000
#: Relative tolerance of the final checks of the law (velocities by the problem's velocity
#: scale, impulses by the impulse it takes to change that velocity).
LAW_TOLERANCE = 1e-9


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
    rows: Coulomb's cone at the impulse level (Moreau 1988; De Saxcé & Feng 1998) with
    Stronge's (1990) energetic restitution.

    **Compression** (the plastic law). With ``G = J M⁻¹ Jᵀ`` and ``σ = J q̇⁺ = G P + J q̇⁻``:

    .. math::

        0 \\le P_i \\perp σ_i \\ge 0 \\;\\text{(unilateral rows)},\\qquad σ_i = 0
        \\;\\text{(bilateral rows)},\\qquad
        K_μ \\ni P_c \\perp σ_c + μ\\,\\|σ_{c,t}\\|\\,e_n \\in K_μ^*

    per cone c (normal row n, tangential rows t, ``K_μ = {‖P_t‖ ≤ μ P_n}``), De Saxcé's
    bipotential form of Coulomb's law, which holds exactly when the contact is **open**
    (P = 0, σ_n ≥ 0), **sticks** (σ = 0, P in the cone) or **slides** (σ_n = 0,
    ``P_t = −μ P_n σ_t/‖σ_t‖``: maximal dissipation against the sliding after the impact).
    The cone is exact: the Euclidean norm in 3D, ``|P_t|`` on a planar contact.

    Energy. ``ΔT = Pᵀσ − ½ PᵀGP`` and complementarity gives ``Pᵀσ = −μ Σ P_n ‖σ_t‖ ≤ 0``:
    the plastic impact never creates energy.

    **Restitution** (Stronge (1990)'s energetic coefficient). The normal work of compression
    of row i along the impulse, ``W_c,i = P_i (σ_i⁻ + σ_i^c)/2 ≤ 0``, sets the target
    separation velocity ``γ_i = e_i · 2|W_c,i|/P_i`` of a second problem of the same law from
    the velocity after compression, with ``σ_i − γ_i`` in place of σ_i on the normal and
    unilateral rows: on an uncoupled row (``σ`` linear in the impulse) its normal work is
    then exactly ``e_i² |W_c,i|``, Stronge's definition, and ``γ_i = e_i |σ_i⁻|``, Newton's.
    With friction and coupled rows the restitution phase may create energy or have no
    solution (its targets need not be reachable); the targets are then scaled by the largest
    common factor (bisection, reported as ``restitution_scale``) that gives a solution
    creating no energy — the factor 0 always does (no restitution impulse).

    Solver. Nonsmooth block Gauss–Seidel (Jean & Moreau 1992; Jean 1999) on the blocks of
    rows (all bilateral rows, each unilateral row, each cone), each block solved exactly: a
    cone's local problem is open, sticking or sliding, the sliding direction the roots of a
    quartic (the tangent half-angle substitution in ``t̂ × σ_t = 0``, as Bonnefon and
    Bertails-Descoubes et al. 2011 solve the same local problem). Gauss–Seidel handles
    redundant rows (a singular G: it keeps the impulses bounded where a Newton method on the
    whole problem has no unique step) but need not converge (the law is not the optimality
    condition of a convex problem: with μ ≳ 1 the sweeps can settle on a cycle of modes).
    Its answer fixes the mode of every block, and a Newton method on that mode's equations
    (the sliding directions included) polishes the impulses to rounding; the law is then
    checked to ``LAW_TOLERANCE``. Where that fails (redundant rows, a singular G, a cycle)
    the proximal-point method on Tikhonov's regularisation takes over, as in
    :func:`solve_lcp`: the law of ``G + εI`` (ε = ``FRICTION_REGULARIZATION`` of G's largest
    diagonal entry; every block positive definite) with ``b − ε P_k``, iterated from
    P₀ = 0 (the least-norm split of redundant rows) until the original law holds, with a
    Newton polish of the unregularised law on the iterate's modes. Its first iterate is
    found by Gauss–Seidel, else by following the solution down from ε = 1e-2 of that
    entry (continuation by Newton on the previous answer's modes; at a fold of the branch,
    Gauss–Seidel or the enumeration of the modes), else by enumerating the modes. Near the
    edge between sticking and sliding, Newton also uses the sliding equations in a smooth
    form (P on the cone, σ_t parallel to P_t, the sense left to the check). Newton on the
    whole problem (Alart & Curnier 1991) needs a good start and Pinocchio's ADMM
    (``ADMMConstraintSolver``, used by the time stepper) solves the point-contact cone
    only to its tolerance.

    Existence. A solution exists (Acary, Cadoux, Lemaréchal & Malick 2011: a fixed point of
    ``s ↦ μ‖σ_t‖`` of the convex problem of the velocity closest to q̇⁻ in
    ``{J_c q̇ + s e_n ∈ K_μ^*}``, which q̇ = 0 satisfies for every s, so that its solutions
    stay bounded) when that problem's multipliers exist; they may fail to in degenerate
    problems (a cone with no strictly separating velocity), and no other solution method is
    complete: deciding whether a frictional contact problem has a solution is NP-hard
    (Baraff 1991). The solver finds one on each of 1 000 seeded random problems with
    redundant rows and μ up to 3 (``tests/test_frictional_impact.py``). The one class of
    problems known to have none is that of :func:`solve_lcp`: rows that contradict each
    other, no velocity keeping the bilateral rows' velocities and letting the normal and
    unilateral rows not approach (a bilateral row equal to an approaching normal row: it
    can only arise when the bilateral rows move before the impact). If the solver fails
    (``jammed``), the fallback is the convex relaxation
    of the law (Anitescu (2006): the same problem with ``σ + μ‖σ_t‖e_n`` replaced by σ),
    which always has a solution, is computed by a monotone projected gradient from P = 0 and
    so never creates energy (``ΔT = ½PᵀGP + Pᵀ J q̇⁻``, the objective it decreases; where
    the bilateral rows move before the impact, the impulses are scaled down to where ΔT ≤ 0),
    keeps the impulses in the cones and, when the rows do not contradict each other, lets
    no row penetrate; a sliding contact then leaves with the normal velocity ``μ‖σ_t‖``
    instead of 0.

    Args:
        mass: M, shape (nv, nv) [kg or kg.m^2].
        v: q̇⁻, shape (nv,).
        jacobian: Shape (m, nv); velocities ``J q̇`` positive when a normal row separates.
        cones: (normal row, tangential rows, μ) of every frictional contact.
        restitution: Stronge's energetic e ∈ [0, 1] per row (read on unilateral and normal
            rows).
        bilateral: Shape (m,) booleans: rows held in both directions (default none); their
            velocity does not change in the impact.
        rest_velocity: The Zeno cut [m/s or rad/s], as in :func:`impact_impulse`: normal
            and unilateral rows that the impulses leave separating slower than this are held
            too when they can be (P_n ≥ 0, in the cone); when the impact itself is slower,
            every engaged row is held (an M-orthogonal projection of q̇⁻, which adds no
            kinetic energy; the acceleration-level problem then decides stick, slip and
            lift-off). Without it, feet landing one after another rock between them in
            impacts at geometrically decreasing speeds (inelastic collapse).

    Returns:
        :class:`FrictionalImpulseResult`; ``jammed`` when the fallback was used.

    Raises:
        InvalidParameter: e outside [0, 1], μ < 0, or a cone on a bilateral row.
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
    mass = np.asarray(mass, dtype=float)
    v = np.asarray(v, dtype=float)
    minv_jt = np.linalg.solve(mass, J.T)
    G = J @ minv_jt
    G = 0.5 * (G + G.T)
    normal = ~bilateral
    for _, tangents, _ in cones:
        normal[tangents] = False
        e[tangents] = 0.0  # restitution acts on the normal rows only
    e[bilateral] = 0.0
    b = np.where(bilateral, 0.0, J @ v)
    result = _impact(G, b, cones, bilateral, normal, e, np.zeros(m, dtype=bool))
    assert result is not None
    if rest_velocity > 0.0:
        slow = normal & (result.impulse <= 0.0) & (result.v_plus < rest_velocity)
        if slow.any():  # result.v_plus holds σ⁺ = J q̇⁺ until the end
            held = _impact(G, b, cones, bilateral, normal, np.where(slow, 0.0, e), slow)
            if held is not None:
                result = held
            elif -float(np.min(b[normal], initial=0.0)) < rest_velocity:
                result = _held(G, b, cones)
    if result.jammed:  # no solution: rows that contradict each other (below); the convex
        # relaxation's objective is ΔT only with b = J q̇⁻, so scale its impulses (they stay
        # in the cones) to where the kinetic energy has not risen: ΔT(t) = t Pᵀ J q̇⁻ + ½ t²
        # PᵀGP ≤ 0 for t ≤ −2 Pᵀ J q̇⁻ / PᵀGP
        P = result.impulse
        power, curvature = float(P @ (J @ v)), float(P @ G @ P)
        if power + 0.5 * curvature > 0.0:
            t = max(-2.0 * power / curvature, 0.0) if curvature > 0.0 else 0.0
            result = _result(G, b, cones, bilateral, min(t, 1.0) * P, 1.0, jammed=True)
    return result._replace(v_plus=v + np.linalg.inv(mass) @ (J.T @ result.impulse))


def _impact(G, b, cones, bilateral, normal, e, forced) -> FrictionalImpulseResult | None:
    """Compression then restitution, rows ``forced`` held (``v_plus`` holds σ⁺ = J q̇⁺);
    None when rows are forced and the law has no solution found with them held."""
    problem = _problem(G, b, cones, bilateral, forced)
    P_c = _solve(problem)
    if P_c is None:
        if forced.any():
            return None
        P_c = _relaxed(problem)
        return _result(G, b, cones, bilateral, P_c, 1.0, jammed=True)
    sigma_c = G @ P_c + b
    work = P_c * 0.5 * (b + sigma_c)  # normal work of compression, row by row
    pushed = normal & (P_c > 0.0) & (work < 0.0) & (e > 0.0)
    if not pushed.any():
        return _result(G, b, cones, bilateral, P_c, 1.0)
    target = np.zeros_like(b)
    target[pushed] = e[pushed] * 2.0 * -work[pushed] / P_c[pushed]
    kinetic_loss = -float(P_c @ (b + 0.5 * G @ P_c))  # ≥ 0: ΔT of the compression
    base = np.where(bilateral, 0.0, sigma_c)

    unsolved = []

    def restitution(scale: float) -> np.ndarray | None:
        P_r = _solve(problem._replace(b=base - scale * target), SWEEPS[:1], scale == 1.0)
        if P_r is None:
            unsolved.append(scale)
            return None
        gain = float(P_r @ (base + 0.5 * G @ P_r))  # ΔT of the restitution phase
        slack = 1e-12 * max(kinetic_loss, 1e-300) + 1e-15 * float(P_r @ G @ P_r)
        return P_r if gain <= kinetic_loss + slack else None

    P_r = restitution(1.0)
    scale = 1.0
    at_rest = np.abs(base).max() <= LAW_TOLERANCE * problem.speed
    if P_r is None and unsolved and at_rest:
        # every row at rest after compression: the law is positively homogeneous in the
        # targets, so no scale > 0 has a solution found either
        P_r, scale = np.zeros_like(b), 0.0
    elif P_r is None:
        low, high, P_r = 0.0, 1.0, np.zeros_like(b)
        for _ in range(RESTITUTION_BISECTIONS):
            mid = 0.5 * (low + high)
            trial = restitution(mid)
            if trial is None:
                high = mid
            else:
                low, P_r = mid, trial
        scale = low
    return _result(G, b, cones, bilateral, P_c + P_r, scale)


def _result(G, b, cones, bilateral, P, scale, jammed=False) -> FrictionalImpulseResult:
    sigma = G @ P + b
    tol = LAW_TOLERANCE * max(float(np.abs(b).max(initial=0.0)), 1e-300)
    active = bilateral | (P > 0.0)
    kinds = []
    for n, tangents, _ in cones:
        active[tangents] = False
        if P[n] <= 0.0:
            kinds.append("open")
        elif float(np.linalg.norm(sigma[tangents])) <= tol:
            kinds.append("stick")
            active[tangents] = True
        else:
            kinds.append("slip")
    return FrictionalImpulseResult(sigma, P, active, tuple(kinds), scale, jammed)


def _held(G, b, cones) -> FrictionalImpulseResult:
    """Every row held (J q̇⁺ = 0): the M-orthogonal projection of q̇⁻, which never adds
    kinetic energy; the cones stick."""
    P = np.linalg.lstsq(G, -b, rcond=1e-12)[0]
    active = np.ones(b.size, dtype=bool)
    return FrictionalImpulseResult(G @ P + b, P, active, tuple("stick" for _ in cones), 1.0)


def _problem(G, b, cones, bilateral, forced) -> _Problem:
    blocks = []

    def block(rows, kind, mu=0.0, held=False):
        rows = np.asarray(rows, dtype=int)
        W = G[np.ix_(rows, rows)]
        values, vectors = np.linalg.eigh(W)
        null = vectors[:, values <= 1e-12 * max(float(values.max()), 1e-300)]
        blocks.append(_Block(rows, kind, mu, W, np.linalg.pinv(W, rcond=1e-12), null, held))

    if bilateral.any():
        block(np.flatnonzero(bilateral), _Kind.BILATERAL)
    in_cone = bilateral.copy()
    for n, tangents, mu in cones:
        in_cone[[n, *tangents]] = True
        if tangents:
            block([n, *tangents], _Kind.CONE, float(mu), bool(forced[n]))
        else:
            block([n], _Kind.UNILATERAL, held=bool(forced[n]))
    for i in np.flatnonzero(~in_cone):
        block([i], _Kind.UNILATERAL, held=bool(forced[i]))
    return _Problem(G, b, blocks)


def _solve(
    problem: _Problem, sweeps: tuple[int, ...] = SWEEPS, thorough: bool = True
) -> np.ndarray | None:
    """The impulses of the plastic law, or None when the solver finds none: directly, and
    where that fails (a singular G, a cycling Gauss–Seidel), by proximal iterations
    (:func:`_proximal`; ``thorough``: with the enumeration of modes)."""
    P = _direct(problem, sweeps)
    return P if P is not None else _proximal(problem, sweeps, thorough)


def _proximal(problem: _Problem, sweeps: tuple[int, ...], thorough: bool) -> np.ndarray | None:
    """The law for a semi-definite G (redundant rows) by the proximal-point method on
    Tikhonov's regularisation, as :func:`solve_lcp` does: iterate ``k`` solves the law of
    ``G + εI`` (every block positive definite, and a solution exists: Acary et al. 2011)
    with ``b − ε P_k``, from P₀ = 0 (the first iterate splits the load of redundant rows as
    the least-norm impulses do), until P satisfies the original law to ``LAW_TOLERANCE``
    and the iterates have settled; None if they do not.

    Each iterate: Newton's method on the previous iterate's mode, else Gauss–Seidel and
    polish; the first one, where Gauss–Seidel cycles (the law is not monotone: with μ ≳ 1
    the sweeps can settle on a cycle of modes), by the enumeration of the modes
    (:func:`_enumerate`)."""
    b = problem.b
    g_scale = max(float(np.abs(np.diag(problem.G)).max(initial=0.0)), 1e-300)
    eps = FRICTION_REGULARIZATION * g_scale
    regularized = _regularized(problem, eps)
    P = _direct(regularized, sweeps)
    if P is None and thorough:
        P = _continuation(problem, sweeps, eps)
    if P is None and thorough:
        P = _enumerate(regularized)
    if P is None:
        return None
    solved = _check(problem, P)
    last = regularized  # the problem that P solves
    for _ in range(PROXIMAL_STEPS):
        if not solved:  # Newton on the unregularised law, from the iterate: its modes
            polished = _follow(problem, P, last)  # are known now (rounding limits the
            if polished is not None:  # sliding directions of ε-slow slips)
                return polished
        shifted = regularized._replace(b=b - eps * P)
        step = _follow(shifted, P, last)
        if step is None:
            step = _direct(shifted, sweeps, start=P)
        if step is None:
            break
        last = shifted
        settled = np.abs(step - P).max() <= 1e-13 * max(np.abs(step).max(), 1e-300)
        P = step
        if _check(problem, P):
            solved = True
            if settled:
                break
    return P if solved and _check(problem, P) else None


def _regularized(problem: _Problem, eps: float) -> _Problem:
    """The problem with ``G + εI`` (its blocks' matrices too)."""
    blocks = []
    for k in problem.blocks:
        W = k.W + eps * np.eye(len(k.rows))
        blocks.append(k._replace(W=W, W_pinv=np.linalg.inv(W), null=np.zeros((len(k.rows), 0))))
    return _Problem(problem.G + eps * np.eye(problem.b.size), problem.b, blocks)


def _continuation(problem: _Problem, sweeps: tuple[int, ...], eps: float) -> np.ndarray | None:
    """A solution of the problem regularised by ``ε``, followed down from a strong
    regularisation (``1e-2`` of G's largest diagonal entry, where the regularisation damps
    Gauss–Seidel) by Newton's method on the modes of the previous answer, in steps of
    ``10^-½`` shortened (to a ratio of ``1.01``) where the answer is lost; there (a fold
    of the branch) Gauss–Seidel or the enumeration of the modes finds another branch; None
    when they do not."""
    g_scale = max(float(np.abs(np.diag(problem.G)).max(initial=0.0)), 1e-300)
    level = 1e-2 * g_scale
    solved = _regularized(problem, level)
    P = _direct(solved, sweeps)
    if P is None:
        return None
    ratio = np.sqrt(10.0)
    while level > eps:
        trial = max(level / ratio, eps)
        regularized = _regularized(problem, trial)
        step = _follow(regularized, P, solved)
        if step is None and ratio < 1.01:  # a fold: the answer jumps to another branch
            step = _direct(regularized, sweeps, start=P)
            if step is None:
                step = _enumerate(regularized, P)
            if step is None:
                return None
        if step is None:
            ratio = np.sqrt(ratio)
            continue
        P, level, solved = step, trial, regularized
        ratio = min(ratio * ratio, np.sqrt(10.0))
    return P


def _follow(problem: _Problem, P: np.ndarray, solved: _Problem) -> np.ndarray | None:
    """Newton's method from P, a solution of the nearby problem ``solved``, on P's modes
    there (both on an edge between sticking and sliding, and sliding in the smooth form):
    the first answer that satisfies the law of ``problem``, or None."""
    import itertools

    candidates = _candidate_modes(solved, P)
    first = tuple(c[0] for c in candidates)
    edge = tuple("edge" if "edge" in c else c[0] for c in candidates)
    sliding = tuple(
        "edge" if c[0] in ("slip", "held") and k.kind is _Kind.CONE else c[0]
        for c, k in zip(candidates, problem.blocks, strict=True)
    )
    combinations = [first, edge, *itertools.islice(itertools.product(*candidates), 16), sliding]
    combinations = list(dict.fromkeys(combinations))
    for damped in (False, True):
        for modes in combinations:
            step = _newton(problem, P, modes, damped)
            if step is not None and _check(problem, step):
                return step
    return None


def _enumerate(problem: _Problem, near: np.ndarray | None = None) -> np.ndarray | None:
    """Newton's method on every combination of modes (open, held, sliding per cone; open,
    held per unilateral row), from P = 0 (and ``near``) and from the last Gauss–Seidel
    iterates: the first combination whose answer satisfies the law, or None. At most
    ``ENUMERATED_MODES`` combinations."""
    import itertools

    choices: list[tuple[str, ...]] = []
    for k in problem.blocks:
        if k.kind is _Kind.BILATERAL or k.forced and k.kind is _Kind.UNILATERAL:
            choices.append(("held",))
        elif k.kind is _Kind.UNILATERAL:
            choices.append(("open", "held"))
        elif k.forced:
            choices.append(("held", "slip"))
        else:
            choices.append(("open", "held", "slip"))
    P = np.zeros(problem.b.size)
    starts = [P.copy()] if near is None else [P.copy(), near]
    for _ in range(6):
        _gauss_seidel(problem, P, 1)
        starts.append(P.copy())
    for n, modes in enumerate(itertools.product(*choices)):
        if n >= ENUMERATED_MODES:
            break
        for start in starts if "slip" in modes else starts[:1]:
            found = _newton(problem, start, modes)
            if found is not None and _check(problem, found):
                return found
    return None


def _direct(
    problem: _Problem, sweeps: tuple[int, ...], start: np.ndarray | None = None
) -> np.ndarray | None:
    """Gauss–Seidel sweeps then Newton polishes (from ``start``, default 0)."""
    P = np.zeros(problem.b.size) if start is None else start.copy()
    if not problem.blocks:
        return P
    if not any(k.forced for k in problem.blocks) and _check(problem, np.zeros_like(P)):
        return np.zeros_like(P)  # nothing approaches: no impulse
    for count in sweeps:
        converged = _gauss_seidel(problem, P, count)
        polished = _polish(problem, P)
        if polished is not None and _check(problem, polished):
            return polished
        if _check(problem, P):
            return P
        if converged:
            break
    return None


def _gauss_seidel(problem: _Problem, P: np.ndarray, sweeps: int) -> bool:
    """Nonsmooth block Gauss–Seidel sweeps on P (in place); whether the residual of the law
    fell below ``1e-7`` of the velocity scale."""
    G, b = problem.G, problem.b
    goal = 1e-7 * problem.speed
    for sweep in range(sweeps):
        for k in problem.blocks:
            rows = k.rows
            q = b[rows] + G[rows] @ P - k.W @ P[rows]
            P[rows] = _local(k, q, P[rows])
        if sweep % 4 == 3 and _residual(problem, P) <= goal:
            return True
    return _residual(problem, P) <= goal


def _local(k: _Block, q: np.ndarray, now: np.ndarray) -> np.ndarray:
    """The exact solution of one block's problem ``σ = W P + q`` (the others fixed)."""
    if k.kind is _Kind.BILATERAL:
        return -k.W_pinv @ q
    if k.kind is _Kind.UNILATERAL:
        g = k.W[0, 0]
        if g <= 0.0:
            return np.zeros(1)
        p = -q[0] / g
        return np.array([p if k.forced else max(p, 0.0)])
    if q[0] >= 0.0 and not k.forced:
        return np.zeros_like(q)  # open
    stick = -k.W_pinv @ q
    if np.abs(k.W @ stick + q).max() <= 1e-12 * np.abs(q).max():
        held = _sticking(k, stick, now)
        if held is not None:
            return held
    slides = _sliding(k.W, q, k.mu)
    if slides:
        return min(slides, key=lambda p: float(np.linalg.norm(p - now)))
    return _project_cone(stick, k.mu)


def _sticking(k: _Block, stick: np.ndarray, now: np.ndarray) -> np.ndarray | None:
    """A sticking impulse in the cone: ``stick`` (W P + q = 0, least norm) plus an impulse in
    the null space of W (redundant rows in the contact), the one nearest ``now``; None when
    the affine set of sticking impulses misses the cone."""
    mu = k.mu
    slack = 1e-12 * float(np.abs(stick).max(initial=0.0))

    def inside(P: np.ndarray) -> bool:
        return P[0] >= -slack and float(np.linalg.norm(P[1:])) <= mu * P[0] + slack

    if inside(stick):
        return stick
    null = k.null
    if null.shape[1] == 0:
        return None
    if null.shape[1] == 1:  # |a_t + s z_t|² ≤ μ²(a_n + s z_n)², a quadratic in s
        z = null[:, 0]
        quadratic = [
            mu * mu * z[0] ** 2 - z[1:] @ z[1:],
            2.0 * (mu * mu * stick[0] * z[0] - stick[1:] @ z[1:]),
            mu * mu * stick[0] ** 2 - stick[1:] @ stick[1:],
        ]
        s_now = float(z @ (now - stick))
        candidates = [s_now] + [r.real for r in np.roots(quadratic) if abs(r.imag) < 1e-12]
        if quadratic[0] < 0.0 and len(candidates) == 3:
            candidates.append(0.5 * (candidates[1] + candidates[2]))
        held = [stick + s * z for s in candidates if inside(stick + s * z)]
        if not held:
            return None
        return min(held, key=lambda P: float(np.linalg.norm(P - now)))
    P = now.copy()  # alternating projections between the cone and the affine set
    for _ in range(200):
        P = stick + null @ (null.T @ (_project_cone(P, mu) - stick))
        if inside(P):
            return P
    return None


def _sliding(W: np.ndarray, q: np.ndarray, mu: float) -> list[np.ndarray]:
    """Every sliding solution ``P = P_n (1, −μ t̂)`` of one cone's problem ``σ = W P + q``:
    ``σ_n = 0``, ``σ_t = κ t̂`` with κ > 0, P_n > 0. With ``t̂ = (cos φ, sin φ)`` and
    ``P_n = −q_n / (W_nn − μ W_nt t̂)``, ``t̂ × σ_t = 0`` times ``(W_nn − μ W_nt t̂)(1+u²)²``
    is a quartic in ``u = tan(φ/2)``."""
    a, c, w, B = W[0, 0], W[0, 1:], W[1:, 0], W[1:, 1:]
    qn, qt = q[0], q[1:]
    if len(qt) == 1:
        directions = [np.array([1.0]), np.array([-1.0])]
    else:
        axx = mu * (qn * B[1, 0] - c[0] * qt[1])
        axy = mu * (qn * (B[1, 1] - B[0, 0]) - c[1] * qt[1] + c[0] * qt[0])
        ayy = mu * (-qn * B[0, 1] + c[1] * qt[0])
        lx = -qn * w[1] + a * qt[1]
        ly = qn * w[0] - a * qt[0]
        quartic = np.array([axx - lx, 2 * (ly - axy), 4 * ayy - 2 * axx, 2 * (axy + ly), axx + lx])
        directions = [np.array([-1.0, 0.0])]  # u = ∞
        if np.abs(quartic).max() > 0.0:
            derivative = np.polyder(quartic)
            for root in np.roots(quartic):
                if abs(root.imag) > 1e-6 * (1.0 + abs(root)):
                    continue
                u = root.real
                for _ in range(3):  # Newton on the quartic: roots to rounding
                    slope = np.polyval(derivative, u)
                    if slope == 0.0:
                        break
                    u -= np.polyval(quartic, u) / slope
                directions.append(np.array([1.0 - u * u, 2.0 * u]) / (1.0 + u * u))
    slides = []
    for d in directions:
        den = a - mu * float(c @ d)
        if den == 0.0:
            continue
        pn = -qn / den
        if not pn > 0.0:
            continue
        P = pn * np.concatenate([[1.0], -mu * d])
        sigma_t = (W @ P + q)[1:]
        speed = float(np.linalg.norm(sigma_t))
        if speed > 0.0 and float(d @ sigma_t) >= (1.0 - 1e-9) * speed:
            slides.append(P)
    return slides


def _project_cone(P: np.ndarray, mu: float) -> np.ndarray:
    """The Euclidean projection onto ``K_μ = {‖P_t‖ ≤ μ P_n}``."""
    pn, pt = P[0], P[1:]
    norm = float(np.linalg.norm(pt))
    if norm <= mu * pn:
        return P.copy()
    if mu * norm <= -pn:
        return np.zeros_like(P)
    alpha = (pn + mu * norm) / (1.0 + mu * mu)
    return np.concatenate([[alpha], mu * alpha * pt / norm])


def _residual(problem: _Problem, P: np.ndarray) -> float:
    """The natural-map residual of the law [m/s or rad/s]: 0 exactly at a solution."""
    sigma = problem.G @ P + problem.b
    worst = 0.0
    for k in problem.blocks:
        p, s = P[k.rows], sigma[k.rows]
        g = max(float(k.W[0, 0]), 1e-300)
        if k.kind is _Kind.BILATERAL:
            r = float(np.abs(s).max())
        elif k.kind is _Kind.UNILATERAL:
            r = abs(s[0]) if k.forced else abs(p[0] - max(p[0] - s[0] / g, 0.0)) * g
        else:
            shifted = s.copy()
            shifted[0] += k.mu * float(np.linalg.norm(s[1:]))
            r = float(np.abs(p - _project_cone(p - shifted / g, k.mu)).max()) * g
            if k.forced:
                r = max(r, abs(s[0]))
        worst = max(worst, r)
    return worst


def _polish(problem: _Problem, P: np.ndarray) -> np.ndarray | None:
    """Newton's method on the equations of the mode that the Gauss–Seidel answer P is in,
    and, for the cones on the edge between sticking and sliding (the slow end of
    Gauss–Seidel), on both of their modes: the first that satisfies the law, started from
    P = 0 (the least-norm impulses where rows are redundant), else from P."""
    import itertools

    modes = _candidate_modes(problem, P)
    for n, choice in enumerate(itertools.product(*modes)):
        if n >= 16:
            break
        for start in (np.zeros_like(P), P):  # from 0 first: the least-norm split of
            polished = _newton(problem, start, choice)  # redundant rows (a symmetric rod)
            if polished is not None and _check(problem, polished):
                return polished
    return None


def _modes(problem: _Problem, P: np.ndarray) -> tuple[str, ...]:
    """The mode of every block at P (the likelier one on an edge)."""
    return tuple(m[0] for m in _candidate_modes(problem, P))


def _candidate_modes(problem: _Problem, P: np.ndarray) -> list[tuple[str, ...]]:
    """The modes of every block at P, both on the edge between sticking and sliding."""
    sigma = problem.G @ P + problem.b
    speed = problem.speed
    modes: list[tuple[str, ...]] = []
    for k in problem.blocks:
        p, s = P[k.rows], sigma[k.rows]
        g = max(float(k.W[0, 0]), 1e-300)
        if k.kind is _Kind.BILATERAL:
            modes.append(("held",))
        elif k.kind is _Kind.UNILATERAL:
            modes.append(("held",) if k.forced or p[0] * g >= s[0] else ("open",))
        elif not k.forced and p[0] * g < s[0]:
            modes.append(("open",))
        else:
            slip = float(np.linalg.norm(s[1:]))
            edge = float(np.linalg.norm(p[1:])) >= k.mu * p[0] * (1.0 - 1e-4)
            if slip <= 1e-6 * speed:
                modes.append(("held", "slip", "edge") if edge else ("held",))  # sticking
            else:
                modes.append(("slip", "held", "edge") if slip <= 1e-3 * speed else ("slip",))
    return modes


def _newton(
    problem: _Problem, P: np.ndarray, modes: tuple[str, ...], damped: bool = False
) -> np.ndarray | None:
    """Newton's method on the equations of one mode per block (``"held"``, ``"open"``,
    ``"slip"``, the sliding directions included, or ``"edge"``, sliding written as P on the
    cone with ``σ_t ∥ P_t``, smooth as σ_t → 0), with backtracking on the residual's norm
    (equations in velocity units): the impulses to rounding, or None when it does not
    converge. Undamped (full steps) unless ``damped``."""
    G, b = problem.G, problem.b
    m = b.size
    speed = problem.speed
    g = max(float(np.abs(np.diag(G)).max(initial=0.0)), 1e-300)
    equations = list(zip(problem.blocks, modes, strict=True))

    def equations_at(P: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        sigma = G @ P + b
        F = np.zeros(m)
        D = np.zeros((m, m))
        for k, mode in equations:
            rows = k.rows
            if mode == "held":
                F[rows], D[rows] = sigma[rows], G[rows]
            elif mode == "open":
                F[rows], D[rows, rows] = g * P[rows], g
            elif mode == "edge":
                n, t = rows[0], rows[1:]
                F[n], D[n] = sigma[n], G[n]
                norm = float(np.linalg.norm(P[t]))
                if k.mu == 0.0 or norm == 0.0:
                    F[t], D[np.ix_(t, t)] = g * P[t], g * np.eye(len(t))
                    continue
                F[t[0]] = g * (norm - k.mu * P[n])
                D[t[0], t] = g * P[t] / norm
                D[t[0], n] -= g * k.mu
                if len(t) == 2:  # the cross product σ_t × P_t / ‖P_t‖
                    F[t[1]] = (P[t[0]] * sigma[t[1]] - P[t[1]] * sigma[t[0]]) / norm
                    D[t[1]] = (P[t[0]] * G[t[1]] - P[t[1]] * G[t[0]]) / norm
                    D[t[1], t[0]] += sigma[t[1]] / norm
                    D[t[1], t[1]] -= sigma[t[0]] / norm
            else:
                n, t = rows[0], rows[1:]
                slip = sigma[t]
                speed_t = float(np.linalg.norm(slip))
                if speed_t == 0.0:
                    return None
                d = slip / speed_t
                F[n], D[n] = sigma[n], G[n]
                F[t] = g * (P[t] + k.mu * P[n] * d)
                D[np.ix_(t, t)] = g * np.eye(len(t))
                D[t, n] += g * k.mu * d
                D[t] += g * k.mu * P[n] * ((np.eye(len(t)) - np.outer(d, d)) / speed_t) @ G[t]
        return F, D

    P = P.copy()
    state = equations_at(P)
    if state is None:
        return None
    for _ in range(40):
        F, D = state
        norm = float(np.linalg.norm(F))
        if np.abs(F).max() <= 1e-14 * max(speed, np.abs(P).max() * g):
            return P
        step = np.linalg.lstsq(D, F, rcond=1e-13)[0]
        if not np.all(np.isfinite(step)):
            return None
        for _ in range(30 if damped else 1):  # backtracking: a step that lowers ‖F‖
            trial = P - step
            new = equations_at(trial)
            if new is not None and (not damped or float(np.linalg.norm(new[0])) < norm):
                break
            step = 0.5 * step
        else:
            return P  # stalled: the caller checks the law
        if new is None:
            return None
        P, state = trial, new
    return P


def _check(problem: _Problem, P: np.ndarray) -> bool:
    """Whether P satisfies the law to ``LAW_TOLERANCE``."""
    G, b = problem.G, problem.b
    sigma = G @ P + b
    vel = LAW_TOLERANCE * problem.speed
    g_max = max(float(np.abs(np.diag(G)).max(initial=0.0)), 1e-300)
    imp = LAW_TOLERANCE * max(problem.speed / g_max, float(np.abs(P).max(initial=0.0)))
    for k in problem.blocks:
        p, s = P[k.rows], sigma[k.rows]
        if k.kind is _Kind.BILATERAL:
            if np.abs(s).max() > vel:
                return False
            continue
        pn, sn = p[0], s[0]
        if pn < -imp or (sn < -vel) or abs(sn) > vel and (k.forced or abs(pn) > imp):
            return False
        if k.kind is _Kind.CONE:
            pt, st = p[1:], s[1:]
            speed_t = float(np.linalg.norm(st))
            if np.linalg.norm(pt) > k.mu * pn + imp:
                return False
            if pn > imp and speed_t > vel:  # sliding: against the velocity, on the cone
                if np.abs(pt + k.mu * pn * st / speed_t).max() > imp:
                    return False
    return True


def _relaxed(problem: _Problem) -> np.ndarray:
    """The convex relaxation of the law (Anitescu (2006)): ``min ½PᵀGP + bᵀP`` over the
    cones, half-lines and free bilateral rows, by a monotone accelerated projected gradient
    (FISTA with restarts, Beck & Teboulle 2009) from P = 0: its objective, ΔT when
    ``b = J q̇⁻``, never rises above 0."""
    G, b = problem.G, problem.b
    step = 1.0 / max(float(np.linalg.eigvalsh(G).max(initial=0.0)), 1e-300)

    def project(P: np.ndarray) -> np.ndarray:
        P = P.copy()
        for k in problem.blocks:
            if k.kind is _Kind.UNILATERAL and not k.forced:
                P[k.rows] = np.maximum(P[k.rows], 0.0)
            elif k.kind is _Kind.CONE:
                P[k.rows] = _project_cone(P[k.rows], k.mu)
        return P

    def objective(P: np.ndarray) -> float:
        return float(0.5 * P @ G @ P + b @ P)

    P = np.zeros(b.size)
    best, y, theta = 0.0, P.copy(), 1.0
    for _ in range(2000):
        new = project(y - step * (G @ y + b))
        value = objective(new)
        if value > best:  # restart: keep the objective monotone
            y, theta = P.copy(), 1.0
            continue
        theta_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * theta * theta))
        y = new + (theta - 1.0) / theta_next * (new - P)
        if abs(best - value) <= 1e-15 * max(abs(best), 1e-300) and np.allclose(new, P):
            P = new
            break
        P, best, theta = new, value, theta_next
    return P


def impact_speed(rows: list, v: np.ndarray) -> float:
    """How fast the rows of an impact approach [m/s or rad/s]: the largest ``−J q̇`` of the
    unilateral rows (a frictional contact's normal row) and ``|J q̇|`` of the others, the
    ``slow_only`` rows aside; ``rows`` as :func:`solve_impact` takes them."""
    from ..simulation.component import RowKind

    speed = 0.0
    for _, r in rows:
        if not r.slow_only:
            rate = (r.jacobian[:1] if r.friction > 0.0 else r.jacobian) @ v
            speed = max(speed, float(np.max(-rate if r.kind is RowKind.UNILATERAL else abs(rate))))
    return speed


def taking_part(rows: list, speed: float, rest_velocity: float) -> list:
    """The rows that take part in an impact of that speed: all of them when it is slower
    than ``rest_velocity``, else all but the ``slow_only`` ones (the joints that friction
    holds: :mod:`pinext.contact.joint_friction`)."""
    return [row for row in rows if speed < rest_velocity or not row[1].slow_only]


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
    normal row then its tangential rows) make it :func:`frictional_impulse`. Rows that hold
    through slow impacts only (``slow_only``: the joints that friction holds) take part in
    an impact slower than ``rest_velocity`` only (:func:`impact_speed`, :func:`taking_part`).

    Returns:
        The result; its ``impulse`` and ``active`` follow the stacked rows (zero and False
        on the rows that took no part).
    """

    part = taking_part(rows, impact_speed(rows, v), rest_velocity)
    if len(part) < len(rows):  # a fast impact: the slow-only rows aside, their entries zero
        taking = stacked(rows, lambda r: not r.slow_only)
        result = solve_impact(
            model,
            data,
            q,
            v,
            part,
            restitution=np.broadcast_to(np.asarray(restitution, float), taking.shape)[taking],
            rest_velocity=rest_velocity,
        )
        impulse, active = np.zeros(taking.size), np.zeros(taking.size, dtype=bool)
        impulse[taking], active[taking] = result.impulse, result.active
        return result._replace(impulse=impulse, active=active)
    jacobian = np.vstack([r.jacobian for _, r in rows])
    bilateral = bilateral_rows(rows)
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
            stopping=stacked(rows, lambda r: r.slow_only),
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
