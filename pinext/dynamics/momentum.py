"""Kinetic-energy gradient and the Celentano momentum scheme (Celentano 2008, §2, Theorem 1).

The Euler–Lagrange equations rearranged as (Celentano 2008, eqs. (6)–(7))

.. math::

    \\frac{d}{dt}(M \\dot q) = \\frac{\\partial T}{\\partial q} + \\tau - g(q) + Q, \\qquad
    T = \\tfrac12 \\dot q^T M(q) \\dot q,

are integrated with the state (q, p = M q̇): Step 1 computes M(q), step 2 q̇ = M⁻¹ p, step 3
∂T/∂q, step 4 ṗ. No Coriolis matrix is needed, only the mass matrix and the gradient of T.

Pinocchio's free-flyer, spherical and planar joints use quasi-velocities (the twist of the
child frame, not q̇). For them the momentum balance gets the Euler–Poincaré (Hamel) term
:math:`\\mathrm{ad}^*_v\\, p` of :func:`hamel_term`:

.. math::

    \\dot p = \\frac{\\partial T}{\\partial q} + \\mathrm{ad}^*_v p + \\tau - g(q),

where ∂T/∂q is the derivative along q ⊕ δ (Pinocchio's tangent convention). With Pinocchio's
Coriolis matrix (Ṁ = C + Cᵀ) the right-hand side equals Cᵀ v + τ − g for every joint type, and
for Euclidean coordinates ∂T/∂q = Cᵀ v.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from pinext.exceptions import InvalidParameter

__all__ = [
    "MomentumRHS",
    "kinetic_energy",
    "kinetic_energy_gradient",
    "kinetic_energy_gradient_error_bound",
    "hamel_term",
    "momentum_from_velocity",
    "momentum_rhs",
    "velocity_from_momentum",
]

_METHODS = ("exact", "forward", "central")
_LIE = ("JointModelFreeFlyer", "JointModelSpherical", "JointModelPlanar")
_EUCLIDEAN_SAFE = (
    "JointModelR",
    "JointModelP",
    "JointModelRevolute",
    "JointModelPrismatic",
    "JointModelTranslation",
    "JointModelSphericalZYX",
    "JointModelRUB",
    "JointModelHelical",
)


def kinetic_energy(model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray) -> float:
    """T = ½ vᵀ M(q) v [J] (Pinocchio's ``crba``; the rotor armature included)."""
    m = pin.crba(model, data, q)
    return 0.5 * float(v @ _sym(m) @ v)


def _sym(m: np.ndarray) -> np.ndarray:
    """Pinocchio's crba fills the upper triangle only."""
    return np.triu(m) + np.triu(m, 1).T


def _default_step(method: str) -> float:
    # Celentano (2008) after Lemma 1: Δ = 1e-3...1e-4 (two points), 1e-2...1e-3 (three points)
    return 1e-6 if method == "forward" else 1e-4


def kinetic_energy_gradient(
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    v: np.ndarray,
    *,
    method: str = "exact",
    step: float | None = None,
) -> np.ndarray:
    """Gradient of the kinetic energy ∂T/∂q at fixed v (Celentano 2008, eq. (7), Lemma 1).

    ``"exact"``:
    :math:`\\partial T/\\partial q = \\tfrac12 v^T \\partial(M(q) w)/\\partial q|_{w=v}`,
    with ∂(M w)/∂q from Pinocchio's RNEA derivatives at (q, 0, w) minus the gravity derivatives.

    ``"forward"`` / ``"central"``: finite differences of the mass matrix (Celentano 2008, eq. (8)),

    .. math::

        \\frac{\\partial T}{\\partial q_k} \\approx \\frac{T(q \\oplus h e_k) - T(q)}{h}
        \\quad\\text{or}\\quad \\frac{T(q \\oplus h e_k) - T(q \\ominus h e_k)}{2h},

    with nv + 1 (forward) or 2 nv (central) evaluations of M. Their error (Celentano 2008, eq.
    (9)): along one coordinate T is a trigonometric polynomial of degree 2 for rotations,
    :math:`T = c_0 + \\sum_{f=1,2} (a_f \\cos f q_k + b_f \\sin f q_k)`, and a polynomial of degree
    2 for translations. Lemma 1 applied to each harmonic gives

    .. math::

        |e_{forward}| \\le \\frac h2 \\sum_f f^2 |c_f| + \\frac{2\\epsilon\\, T_{max}}{h}, \\qquad
        |e_{central}| \\le \\frac{h^2}{6} \\sum_f f^3 |c_f| + \\frac{\\epsilon\\, T_{max}}{h}

    (:math:`|c_f| = \\sqrt{a_f^2 + b_f^2}`, :math:`\\epsilon T_{max}` the rounding error of one
    evaluation of T, taken as 10 nv · 2.2e-16 · T_max; for translations the forward truncation
    error is :math:`|c_2| h` and the central one is zero).
    :func:`kinetic_energy_gradient_error_bound` evaluates this bound.

    For Lie-group joints (free-flyer, spherical, planar) the derivative is along q ⊕ δ e_k
    (``pin.integrate``), i.e. in Pinocchio's tangent coordinates.

    Args:
        model: Pinocchio model.
        data: Its data (overwritten).
        q: Configuration, shape (nq,).
        v: Velocity, shape (nv,).
        method: ``"exact"``, ``"forward"`` or ``"central"``.
        step: Finite-difference step h [rad or m]; default 1e-6 (forward), 1e-4 (central).

    Returns:
        ∂T/∂q, shape (nv,) [N.m or N].
    """
    if method not in _METHODS:
        raise InvalidParameter(
            f"unknown method '{method}'. Available methods: {', '.join(_METHODS)}"
        )
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    if method == "exact":
        dmv = pin.computeRNEADerivatives(model, data, q, np.zeros(model.nv), v)[0]
        dmv = dmv - pin.computeGeneralizedGravityDerivatives(model, data, q)
        return 0.5 * (v @ dmv)
    h = _default_step(method) if step is None else float(step)
    if not h > 0.0:
        raise InvalidParameter(f"step must be positive, got {step}")
    nv = model.nv
    grad = np.empty(nv)
    e = np.zeros(nv)
    t0 = kinetic_energy(model, data, q, v) if method == "forward" else 0.0
    for k in range(nv):
        e[:] = 0.0
        e[k] = h
        tp = kinetic_energy(model, data, pin.integrate(model, q, e), v)
        if method == "forward":
            grad[k] = (tp - t0) / h
        else:
            tm = kinetic_energy(model, data, pin.integrate(model, q, -e), v)
            grad[k] = (tp - tm) / (2.0 * h)
    return grad


def _direction_is_rotation(model: pin.Model, k: int) -> bool | None:
    """Whether tangent direction k is a pure rotation (True), a pure translation (False), or
    neither / unknown (None)."""
    for jm in model.joints[1:]:
        if jm.idx_v <= k < jm.idx_v + jm.nv:
            name = jm.shortname()
            i = k - jm.idx_v
            if name == "JointModelFreeFlyer":
                return i >= 3
            if name == "JointModelPlanar":
                return i == 2
            if name in ("JointModelSpherical", "JointModelSphericalZYX"):
                return True if name == "JointModelSpherical" else None
            if name.startswith(("JointModelRUB", "JointModelR", "JointModelRevolute")):
                return True
            if name.startswith(("JointModelP", "JointModelTranslation")):
                return False
            return None
    return None


def kinetic_energy_gradient_error_bound(
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    v: np.ndarray,
    *,
    method: str,
    step: float | None = None,
) -> np.ndarray:
    """Bound on the finite-difference error of :func:`kinetic_energy_gradient` (Celentano 2008, eq.
    (9)).

    Along a rotation direction k, T(q ⊕ δ e_k) is a trigonometric polynomial of degree 2 in δ
    (the child subtree's twist is linear in cos δ, sin δ and T is quadratic in it); its five
    coefficients are recovered exactly from five samples δ = 2πj/5 (a discrete Fourier transform)
    and Lemma 1 is applied to each harmonic. Along a translation direction T is a quadratic
    polynomial in δ. The rounding part takes 10·nv·ε·T_max as the absolute rounding error of one
    evaluation of T (ε = 2.2e-16, T_max = |c_0| + Σ|c_f|).

    Returns:
        Shape (nv,): the bound per coordinate [N.m or N]; ``inf`` for joints of other kinds
        (helical, composite, spherical-ZYX).
    """
    if method not in ("forward", "central"):
        raise InvalidParameter(f"method must be 'forward' or 'central', got '{method}'")
    h = _default_step(method) if step is None else float(step)
    q = np.asarray(q, dtype=float)
    eps = 10.0 * model.nv * np.finfo(float).eps
    bound = np.full(model.nv, np.inf)
    for k in range(model.nv):
        kind = _direction_is_rotation(model, k)
        if kind is None:
            continue
        e = np.zeros(model.nv)
        if kind:
            n = 5
            samples = []
            for j in range(n):
                e[k] = 2.0 * np.pi * j / n
                samples.append(kinetic_energy(model, data, pin.integrate(model, q, e), v))
            coef = np.fft.rfft(samples) / n
            amp = 2.0 * np.abs(coef[1:3])  # |c_1|, |c_2|
            tmax = abs(coef[0].real) + amp.sum()
            f = np.array([1.0, 2.0])
            if method == "forward":
                bound[k] = 0.5 * h * (f**2 @ amp) + 2.0 * eps * tmax / h
            else:
                bound[k] = h**2 / 6.0 * (f**3 @ amp) + eps * tmax / h
        else:
            t = []
            for d in (-1.0, 0.0, 1.0):
                e[k] = d
                t.append(kinetic_energy(model, data, pin.integrate(model, q, e), v))
            c2 = 0.5 * abs(t[0] - 2.0 * t[1] + t[2])
            tmax = max(abs(x) for x in t) + c2 * h * h
            if method == "forward":
                bound[k] = c2 * h + 2.0 * eps * tmax / h
            else:
                bound[k] = eps * tmax / h
    return bound


def hamel_term(model: pin.Model, q: np.ndarray, v: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Euler–Poincaré (Hamel) term ad*_v p of the quasi-velocity joints, shape (nv,).

    Nonzero only on free-flyer joints, where with v = (ν, ω) and p = (p_l, p_a)
    ad*_v p = (p_l × ω, p_a × ω + p_l × ν); on spherical joints (p_a × ω); and on planar joints
    (the SE(2) restriction). Zero for Euclidean coordinates.

    Args:
        model: Pinocchio model.
        q: Configuration (unused; for signature symmetry).
        v: Velocity, shape (nv,).
        p: Generalized momentum M v, shape (nv,).
    """
    out = np.zeros(model.nv)
    for jm in model.joints[1:]:
        name = jm.shortname()
        if name not in _LIE:
            continue
        i = jm.idx_v
        if name == "JointModelFreeFlyer":
            nu, om = v[i : i + 3], v[i + 3 : i + 6]
            pl, pa = p[i : i + 3], p[i + 3 : i + 6]
            out[i : i + 3] = np.cross(pl, om)
            out[i + 3 : i + 6] = np.cross(pa, om) + np.cross(pl, nu)
        elif name == "JointModelSpherical":
            out[i : i + 3] = np.cross(p[i : i + 3], v[i : i + 3])
        else:  # planar: (vx, vy, wz), momentum (px, py, pz)
            vx, vy, wz = v[i : i + 3]
            px, py, _ = p[i : i + 3]
            out[i] = py * wz
            out[i + 1] = -px * wz
            out[i + 2] = px * vy - py * vx
    return out


class MomentumRHS(NamedTuple):
    """Right-hand side of the momentum scheme (Celentano 2008, Fig. 1, function F)."""

    v: np.ndarray
    """Shape (nv,): velocity M⁻¹ p (step 2)."""
    p_dot: np.ndarray
    """Shape (nv,): ṗ = ∂T/∂q + ad*_v p + τ − g (step 4)."""


def momentum_from_velocity(
    model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """p = M(q) v, shape (nv,) [N.m.s or N.s]."""
    return _sym(pin.crba(model, data, q)) @ np.asarray(v, dtype=float)


def velocity_from_momentum(
    model: pin.Model, data: pin.Data, q: np.ndarray, p: np.ndarray
) -> np.ndarray:
    """v = M(q)⁻¹ p with Pinocchio's sparse Cholesky factorisation, shape (nv,)."""
    pin.crba(model, data, q)
    pin.cholesky.decompose(model, data)
    return pin.cholesky.solve(model, data, np.asarray(p, dtype=float).copy())


def momentum_rhs(
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    p: np.ndarray,
    tau: np.ndarray,
    *,
    gradient: Callable[..., np.ndarray] | None = None,
) -> MomentumRHS:
    """Celentano's function F (Celentano 2008, Theorem 1): (q, p, τ) ↦ (v, ṗ).

    .. math::

        v = M(q)^{-1} p, \\qquad \\dot p = \\frac{\\partial T}{\\partial q}(q, v)
            + \\mathrm{ad}^*_v p + \\tau - g(q)

    ``tau`` collects every generalized force other than gravity (actuation, elasticity,
    damping, ...; Celentano (2008) eq. (6): γ is gravity, the rest η + u_a + u). For Lie-group
    joints q̇ means v integrated with ``pin.integrate``.

    Args:
        model: Pinocchio model.
        data: Its data (overwritten).
        q: Configuration, shape (nq,).
        p: Generalized momentum M v, shape (nv,).
        tau: Generalized forces, shape (nv,) [N.m or N].
        gradient: Optional replacement of :func:`kinetic_energy_gradient` (same signature), e.g.
            ``functools.partial(kinetic_energy_gradient, method="central")``.

    Returns:
        :class:`MomentumRHS` (v, ṗ).
    """
    q = np.asarray(q, dtype=float)
    p = np.asarray(p, dtype=float)
    v = velocity_from_momentum(model, data, q, p)
    grad = (gradient or kinetic_energy_gradient)(model, data, q, v)
    g = pin.computeGeneralizedGravity(model, data, q)
    p_dot = grad + hamel_term(model, q, v, p) + np.asarray(tau, dtype=float) - g
    return MomentumRHS(v, p_dot)
