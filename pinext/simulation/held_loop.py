"""Stability of a control law sampled at a period and held in between (zero-order hold).

A law ``u = law(t, x)`` sampled every ``T`` and held feeds the plant ``ẋ = A x + B u`` with
a constant over each period; linearised at the start (``u ≈ u_0 + G δx``, ``C = B G``) one
period maps the state as

.. math::

    \\delta x_{k+1} = \\Big(e^{A T} + \\int_0^T e^{A s}\\,ds\\; C\\Big)\\, \\delta x_k
    = \\Phi_{cl}(T)\\, \\delta x_k,

the zero-order-hold discretisation of the loop (Åström & Wittenmark 1997, *Computer-Controlled
Systems*, 3rd ed., ch. 2), computed as the exponential of ``[[A, C], [0, 0]] T``. The held
loop is stable when the spectral radius of ``Φ_cl`` is below 1 (ch. 3). For a PD
``u = −k x − d ẋ`` held on one degree of freedom of inertia m (``m ẍ = u``) the
characteristic polynomial of ``Φ_cl`` is ``z² − (2 − kT²/2m − dT/m) z + 1 − dT/m + kT²/2m``,
and Jury's test (same work, ch. 3) gives

.. math::

    k > 0, \\qquad \\frac{k T}{2} < d < \\frac{2 m}{T}
    \\iff T < T^* = \\min\\Big(\\frac{2 m}{d}, \\frac{2 d}{k}\\Big),

:func:`held_pd_period`: a held PD needs damping, and at most ``T^* = 2 \\sqrt{m/k}``
(``d = \\sqrt{k m}``); critically damped (``d = 2\\sqrt{k m}``) ``T^* = \\sqrt{m/k}``.
:func:`check_held_loop` applies the multi-DOF form at the start of a run: the law's gains
against the joint-space inertia (Pinocchio's ``crba`` inside the linearised right-hand side),
Cartesian laws included (their gains reach the joints through the Jacobian).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.linalg import expm

from ..exceptions import IntegrationError, InvalidParameter
from .arguments import MAX_CONTROL_SAMPLES, MIN_CONTROL_PERIOD

if TYPE_CHECKING:
    from .system import System

#: Relative growth per period beyond the continuous loop's that counts as unstable [-].
UNSTABLE = 1e-6
#: Growth per period [-] from which an unstable held loop is refused rather than warned about:
#: the state doubles each period, a divergence within a few periods that no motion away from
#: the start can save. Below, the linear estimate is local (a shipped example's tracking law
#: at 1 ms grows by 1.035 a period at its start pose and tracks to the end): a warning.
REFUSE_GROWTH = 2.0
#: A joint speed beyond which a sampled run counts as diverging [rad/s or m/s] (about
#: 950 000 rpm: beyond any robot joint; a held loop that diverges passes it within a few
#: periods, long before the integrator's steps shrink and its record grows). A light wrist
#: PD-driven into its stop legitimately rings at 1.1e4 rad/s (tests/test_joint_pd.py).
EXPLODING_SPEED = 1e5


def held_pd_period(mass: float, stiffness: float, damping: float) -> float:
    """The longest stable period of a PD held on one DOF: ``min(2m/d, 2d/k)`` [s].

    Args:
        mass: Inertia m of the degree of freedom [kg or kg.m^2].
        stiffness: Proportional gain k [N/m or N.m/rad], > 0.
        damping: Derivative gain d [N.s/m or N.m.s/rad]; 0: no stable period (0).
    """
    if damping <= 0:
        return 0.0 if stiffness > 0 else np.inf
    return min(2.0 * mass / damping, 2.0 * damping / stiffness if stiffness > 0 else np.inf)


def held_matrix(a_open: np.ndarray, coupling: np.ndarray, period: float) -> np.ndarray:
    """``Φ_cl(T) = e^{AT} + ∫_0^T e^{As} ds C``: the map of one held period (module doc)."""
    n = a_open.shape[0]
    block = np.zeros((2 * n, 2 * n))
    block[:n, :n], block[:n, n:] = a_open, coupling
    with np.errstate(all="ignore"):
        big = expm(block * period)
    return big[:n, :n] + big[:n, n:]


def _growth(a_open: np.ndarray, a_closed: np.ndarray, period: float) -> tuple[float, np.ndarray]:
    """The held loop's growth per period beyond the continuous loop's, ``|z| / max(1,
    e^{T max Re λ(A_cl)})`` (an open-loop instability the law does not cure, gravity on an
    uncontrolled joint, is not the hold's), and the eigenvector of the fastest mode."""
    values, vectors = np.linalg.eig(held_matrix(a_open, a_closed - a_open, period))
    if not np.all(np.isfinite(values)):
        return np.inf, np.ones(a_open.shape[0])
    k = int(np.argmax(np.abs(values)))
    continuous = np.linalg.eigvals(a_closed).real.max(initial=0.0)
    return float(np.abs(values[k]) / np.exp(min(period * continuous, 700.0))), vectors[:, k]


def stable_period(a_open: np.ndarray, a_closed: np.ndarray, period: float) -> float:
    """The longest period up to ``period`` [s] at which the held loop is stable (halving
    until it is, then bisection to 1 %); 0 when none above ``period · 2^-40`` is."""
    low, high = 0.0, period
    for _ in range(40):
        high *= 0.5
        if _growth(a_open, a_closed, high)[0] <= 1.0 + UNSTABLE:
            low, high = high, 2.0 * high
            break
    else:
        return 0.0
    while high - low > 0.01 * low:
        middle = 0.5 * (low + high)
        if _growth(a_open, a_closed, middle)[0] <= 1.0 + UNSTABLE:
            low = middle
        else:
            high = middle
    return low


def dof_name(system: System, k: int) -> str:
    """The joint that velocity coordinate ``k`` belongs to (its name in the model)."""
    model = system.model
    for j in range(1, model.njoints):
        start = model.joints[j].idx_v
        if start <= k < start + model.joints[j].nv:
            return str(model.names[j])
    return f"coordinate {k}"


def shortest_period(t_final: float | None) -> float:
    """The shortest control period [s] a run to ``t_final`` accepts
    (:func:`pinext.simulation.arguments.control_period_of`): :data:`~pinext.simulation.
    arguments.MIN_CONTROL_PERIOD`, or longer when the run would take more than
    :data:`~pinext.simulation.arguments.MAX_CONTROL_SAMPLES` samples."""
    if t_final is None or not np.isfinite(t_final) or t_final <= 0:
        return MIN_CONTROL_PERIOD
    return max(MIN_CONTROL_PERIOD, float(t_final) / MAX_CONTROL_SAMPLES)


def check_held_loop(
    system: System,
    x0: np.ndarray,
    law: Callable,
    period: float,
    force: bool,
    t_final: float | None = None,
) -> None:
    """Refuse, at the start, a law held over ``period`` that the hold makes unstable.

    The law is linearised at ``x0`` (``A_cl``: the right-hand side with the law continuous;
    ``A``: with its value at ``x0`` held) by :func:`pinext.simulation.stiffness.
    linearised_matrix`; ``Φ_cl`` (module doc) with a spectral radius above the continuous
    loop's is unstable. A :class:`pinext.control.Controller` is called ``4 n + 1`` times at
    ``t = 0`` (n the state's tangent size); a plain function ``u(t, x)`` is not probed (it
    may keep state between its calls).

    An error when the loop grows by :data:`REFUSE_GROWTH` or more a period, else a warning.
    An error: a held loop that diverges gives a growing oscillation of the
    hold, not the controller's behaviour, and its run costs time and memory until it stops
    at the first sign of divergence (:func:`diverging`); ``force=True`` runs it, for a user
    who wants to see the divergence (a linearisation is local: a loop unstable at the start
    may be stable elsewhere).

    Raises:
        InvalidParameter: The held loop grows by REFUSE_GROWTH or more a period at the
            start (below: a RuntimeWarning with the same message); the message names the joint
            that moves most in the fastest mode, the growth per period, the gains and inertia
            of that joint, the stable period and the ways out; when that period is below
            the shortest a run to ``t_final`` accepts (:func:`shortest_period`), it says so
            and proposes the other ways out (continuous control, lower or damped gains).
    """
    if force or period is None or getattr(law, "controller", None) is None:
        return  # a plain u(t, x) may count its calls: only Controllers are probed
    from .stiffness import linearised_matrix  # the one linearisation of the right-hand side

    u0 = np.array(law(0.0, x0), dtype=float).reshape(-1)
    with np.errstate(all="ignore"):
        a_open = linearised_matrix(system, x0, u0)
        a_closed = linearised_matrix(system, x0, law)
    if not (np.all(np.isfinite(a_open)) and np.all(np.isfinite(a_closed))):
        return  # the run's own checks name a non-finite law or state
    growth, shape = _growth(a_open, a_closed, period)
    if growth <= 1.0 + UNSTABLE:
        return
    nv = system.model.nv
    k = int(np.argmax(np.abs(shape[:nv]))) if nv else 0
    gains = a_open - a_closed  # M⁻¹ [K D] on the joints' rows
    k_over_m, d_over_m = float(gains[nv + k, k]), float(gains[nv + k, nv + k])
    shortest = stable_period(a_open, a_closed, period)
    allowed = shortest_period(t_final)
    if shortest >= allowed:
        stable = f"the longest stable period here is {shortest:.3g} s"
        ways = "shorten control_period, lower the gains or damp them"
    else:  # no period the run accepts carries these gains: the other ways out
        stable = (
            f"the longest stable period here is {shortest:.3g} s"
            if shortest > 0
            else f"no period above {period * 2.0**-40:.3g} s is stable"
        )
        stable += (
            f", below the shortest control_period a run accepts ({allowed:g} s): no sampled "
            "period carries these gains"
        )
        ways = "lower the gains or damp them"
    message = (
        f"control_period={period:g} s is too long for the gains of the control law: the "
        f"held loop is unstable at the start, its fastest mode (mostly joint "
        f"{dof_name(system, k)}: stiffness/inertia {k_over_m:.3g} 1/s², damping/inertia "
        f"{d_over_m:.3g} 1/s) grows by {growth:.4g} times per period; {stable} (a PD held "
        "on a joint of inertia m needs T < min(2 m/d, 2 d/k), Åström & Wittenmark 1997); "
        f"{ways} (a pure P term held is never stable), run the law continuously with "
        "control_period=0, or pass force=True to see the divergence (the run stops at its "
        "first sign)"
    )
    if growth < REFUSE_GROWTH:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
        return
    raise InvalidParameter(message)


def diverging(system: System, law: Callable) -> Callable:
    """``law`` (a state law ``u(t, x)``, sampled by :class:`pinext.simulation.sampling.
    HeldControl`) that first checks the state it samples: a non-finite state or a joint
    speed beyond :data:`EXPLODING_SPEED` ends the run with an :class:`IntegrationError`
    naming the time, the joint and the cause. The law's attributes (its ``controller``,
    which the compiled path reads) are kept."""
    sv = system.layout["v"]

    def guarded(t: float, x: np.ndarray) -> Any:
        x = np.asarray(x)
        v = x[sv]
        finite = bool(np.isfinite(x).all())
        if not finite or (v.size and np.abs(v).max() > EXPLODING_SPEED):
            k = int(np.argmax(np.where(np.isfinite(v), np.abs(v), np.inf))) if v.size else 0
            what = "is not finite" if not finite else f"moves at {v[k]:.3g} [rad/s or m/s]"
            raise IntegrationError(
                f"the run diverges: joint {dof_name(system, k)} {what} (beyond "
                f"{EXPLODING_SPEED:g}) at a sample of the control law held every period; "
                "the held loop is unstable (a PD held on a joint of inertia m needs "
                "T < min(2 m/d, 2 d/k)): shorten control_period, lower or damp the gains, "
                "or run the law continuously with control_period=0",
                float(t),
                x,
            )
        return law(t, x)

    for name, value in vars(law).items() if hasattr(law, "__dict__") else ():
        setattr(guarded, name, value)
    return guarded
