"""Linearization of a System's right-hand side about an equilibrium or any state.

The right-hand side that :func:`pinext.simulate` integrates, ``ẋ = f(x, u)`` in one phase
(the modes of every component fixed), is differentiated in the tangent space of the
configuration: ``x(δx) = [integrate(q0, δq), v0 + δv, s0 + δs]``.

**Analytic** (``method="analytic"``, chosen by ``"auto"`` when it applies): in an unconstrained
phase the accelerations are ``a = ABA(q, v, τ(x, u))`` (Featherstone's articulated-body
algorithm, on the model whose armature carries the drives' reflected inertias), so

.. math::

    \\frac{\\partial a}{\\partial x} = \\Big[\\frac{\\partial a}{\\partial q},
    \\frac{\\partial a}{\\partial v}, 0\\Big]_\\tau + M^{-1}\\frac{\\partial \\tau}{\\partial x},
    \\qquad \\frac{\\partial a}{\\partial u} = M^{-1}\\frac{\\partial \\tau}{\\partial u},

with Pinocchio's ``computeABADerivatives`` (Carpentier & Mansard 2018, analytical derivatives
of rigid body dynamics; Pinocchio: Carpentier et al. 2019). The efforts τ and the component
states' derivatives are affine in (x, u) in such a phase (every component reports
:meth:`~pinext.Component.linear`): on Euclidean models their Jacobian is the sum of the
components' closed forms (:meth:`~pinext.Component.linear_terms`: the drives' equations),
else the linear form the engine identifies (:func:`pinext.simulation.linear.identify`,
shared with the simulator's cache); on other models the central difference below of those
terms alone (no ABA call; exact up to rounding for affine terms).

In a constrained phase the same efforts' terms enter one KKT solve beside Pinocchio's RNEA
derivatives (:mod:`pinext.linear_models.constrained`).

**Central difference** (``method="central"``, and ``"auto"`` for a replaced mechanism,
prescribed motions or a component that is not linear in its mode): column k of
``[A B]`` is ``(f(z + h_k e_k) − f(z − h_k e_k)) / (2 h_k)`` of the System's own right-hand
side, with ``h_k = ε^{1/3} max(1, |z_k|)`` (ε the machine epsilon). The truncation error is
``h_k² |f'''| / 6`` and the rounding error ``ε |f| / h_k``; this step balances them, so an
entry is exact to about ``ε^{2/3} ≈ 4e-11`` of the scale of the terms it sums (for a function
whose third derivative has the scale of f over the variable's scale cubed).

The top-left block: ``d(δq)/dt = ∂difference(q0, q)/∂q · v``, the identity at δq = 0; about
a moving state (v0 ≠ 0) on a manifold its dependence on δq is differenced too (no ABA call).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter, NotAtEquilibrium, PinextError
from ..simulation.caches import cache as engine_cache
from ..simulation.component import Phase, overrides
from ..simulation.controls import checked_control
from ..simulation.linear import _own_part, closed_terms, identify
from ..simulation.system import System
from .constrained import constrained_matrices
from .model import LinearModel
from .names import Signals, input_labels, resolve_outputs, state_labels
from .reduction import independent_coordinates

__all__ = ["STEP_ERROR", "central_jacobian", "equilibrium", "linearize"]

METHODS = ("auto", "analytic", "central")
COORDINATES = ("full", "independent")

#: Relative step of the central differences: ε^{1/3}, balancing truncation and rounding.
STEP = float(np.finfo(float).eps) ** (1.0 / 3.0)

#: The central difference's error relative to the scale of the terms: ε^{2/3} ≈ 4e-11.
STEP_ERROR = STEP**2


def central_jacobian(
    func: Callable[[np.ndarray], np.ndarray], z0: np.ndarray, scale: np.ndarray | None = None
) -> np.ndarray:
    """The Jacobian of ``func`` at ``z0`` by central differences (module docstring).

    Args:
        func: ``func(δz) -> array`` of the deviation δz from ``z0``.
        z0: Shape (n,). The point, used for the steps ``h_k = ε^{1/3} max(1, |z0_k|)``.
        scale: Shape (n,). Overrides ``max(1, |z0_k|)``.

    Returns:
        Shape (len(func(0)), n).
    """
    z0 = np.asarray(z0, dtype=float)
    scale = np.maximum(1.0, np.abs(z0)) if scale is None else np.asarray(scale, dtype=float)
    columns = []
    for k in range(z0.size):
        h = STEP * scale[k]
        dz = np.zeros(z0.size)
        dz[k] = h
        columns.append((np.asarray(func(dz)) - np.asarray(func(-dz))) / (2.0 * h))
    return np.array(columns).T if columns else np.zeros((0, 0))


class _Point:
    """A System's state space about one point: composition of deviations, the phase."""

    def __init__(
        self, system: System, x0: np.ndarray, u0: np.ndarray, t: float, phase: Phase | None = None
    ) -> None:
        self.system, self.x0, self.u0, self.t = system, x0, u0, t
        model = system.model
        self.nq, self.nv = model.nq, model.nv
        self.ns = system.nx - 2 - self.nq - self.nv
        self.n = 2 * self.nv + self.ns
        self.phase: Phase = system.initial_phase(t, x0, u0) if phase is None else phase
        self.step = system.acceleration_step(self.phase)  # the phase's, looked up once
        self.structure = self.phase.structure  # what decides its rows and efforts

    def state(self, dx: np.ndarray) -> np.ndarray:
        """The public state at deviation ``dx`` (shape (n,))."""
        system, nq, nv = self.system, self.nq, self.nv
        x = self.x0.copy()
        q0 = self.x0[:nq]
        x[:nq] = q0 + dx[:nv] if system.euclidean else pin.integrate(system.model, q0, dx[:nv])
        x[nq : system.nx - 2] += dx[nv:]
        return x

    def deviation(self, x: np.ndarray) -> np.ndarray:
        """The deviation of public state x from x0 (inverse of :meth:`state`)."""
        system, nq = self.system, self.nq
        q = x[:nq] - self.x0[:nq]
        if not system.euclidean:
            q = pin.difference(system.model, self.x0[:nq], x[:nq])
        return np.concatenate((q, (x - self.x0)[nq : system.nx - 2]))

    def rhs(self, dx: np.ndarray, du: np.ndarray) -> np.ndarray:
        """``[a, ṡ]``: the System's right-hand side without the configuration block and the
        energy accumulators, at the deviation (dx, du), in the point's phase."""
        x = self.state(dx)
        out = self.system.derivative(self.t, x, self.u0 + du, self.phase)
        return out[self.nv : self.n]

    def configuration_rows(self) -> np.ndarray:
        """``∂(dδq/dt)/∂δx``, shape (nv, n): ``[·, I, 0]``, with the δq block differenced
        about a moving state on a manifold."""
        nv = self.nv
        rows = np.zeros((nv, self.n))
        rows[:, nv : 2 * nv].flat[:: nv + 1] = 1.0  # the identity
        v0 = self.x0[self.nq : self.nq + nv]
        if not self.system.euclidean and v0.any():
            model, q0 = self.system.model, self.x0[: self.nq]

            def rate(dq: np.ndarray) -> np.ndarray:
                q = pin.integrate(model, q0, dq)
                return pin.dDifference(model, q0, q, pin.ARG1) @ v0

            rows[:, :nv] = central_jacobian(rate, np.zeros(nv))
        return rows

    def scales(self) -> np.ndarray:
        """``max(1, |x0_k|)`` over the deviation's entries (the tangent δq: 1)."""
        nq, nv = self.nq, self.nv
        tail = np.abs(self.x0[nq : self.system.nx - 2])
        head = np.abs(self.x0[:nq]) if self.system.euclidean else np.zeros(nv)
        return np.maximum(1.0, np.concatenate((head, tail)))


def _central(point: _Point) -> tuple[np.ndarray, np.ndarray]:
    """A and B by central differences of the System's right-hand side."""
    n, m = point.n, point.u0.size
    scale = np.concatenate((point.scales(), np.maximum(1.0, np.abs(point.u0))))
    jac = central_jacobian(lambda dz: point.rhs(dz[:n], dz[n:]), np.zeros(n + m), scale)
    a = np.vstack((point.configuration_rows(), jac[:, :n]))
    return a, np.vstack((np.zeros((point.nv, m)), jac[:, n:]))


def _analytic_reason(point: _Point) -> str | None:
    """Why the analytic path does not apply in the point's phase, or None when it does (once
    a phase: kept in the engine's cache of the System)."""
    found = engine_cache(point.system, "linear_models")
    key = ("reason", point.phase)
    if key not in found:
        found[key] = _reason(point)
    return found[key]


def _reason(point: _Point) -> str | None:
    system = point.system
    step = point.step
    if step.mechanism is not None:
        return f"{step.mechanism.name} replaces the mechanism's mass matrix"
    if system.imposing:
        return f"{', '.join(c.name for c in system.imposing)} impose states (prescribed motion)"
    hooks = ("effort", "derivative")
    for comp, mode in step.modes:
        if any(overrides(comp, h) for h in hooks) and not comp.linear(mode):
            return f"{comp.name} is not linear in its mode {mode!r} (no derivative of its own)"
        if comp.acceleration_coupling(mode) is not None:
            return f"{comp.name}'s states in its mode {mode!r} are driven by the accelerations"
    return None


def _linear_terms(point: _Point) -> np.ndarray | None:
    """``[τ; ṡ] = T [q, v, s, u, 1]`` of a linear phase on a Euclidean model: the components'
    closed forms (:func:`pinext.simulation.linear.closed_terms`), else their identified form
    (:func:`~pinext.simulation.linear.identify`, the simulator's), and the System's own
    springs, dampers and torque inputs; None when the phase is not linear. Once a phase."""
    system, structure = point.system, point.structure
    own = engine_cache(system, "linear_models")
    if ("terms", structure) not in own:
        terms = closed_terms(system, point.step.modes)
        if terms is None:
            forms = engine_cache(system, "linear_forms")
            rows = frozenset(c.name for c, _ in point.step.constrained)
            key = (structure, rows, frozenset()) if rows else structure
            if key not in forms:
                forms[key] = identify(system, point.phase, rows)
            form = forms[key]
            terms = None if form is None else form.a
        own["terms", structure] = (
            None if terms is None else terms + _own_part(system, terms.shape[1])
        )
    return own["terms", structure]


def _component_terms(point: _Point) -> tuple[np.ndarray, np.ndarray, np.ndarray, str | None]:
    """``∂[τ; ṡ]/∂(δx, δu)`` (every effort but the reactions, the component states'
    derivatives), τ at the point, and a note when the terms were differenced."""
    system, t = point.system, point.t
    nv, n = point.nv, point.n
    step = point.step
    if system.euclidean and step.added is None:
        terms = _linear_terms(point)  # columns [q, v, s, u, 1]
        if terms is not None:
            bounds = system.input_bounds  # a saturated input moves nothing
            inside = np.abs(point.u0) < bounds
            if inside.all():
                u0, terms_u = point.u0, terms[:, n:-1]
            else:
                u0 = np.minimum(np.maximum(point.u0, -bounds), bounds)
                terms_u = terms[:, n:-1] * inside
            z0 = np.concatenate((point.x0[: system.nx - 2], u0, (1.0,)))
            return terms[:, :n], terms_u, terms[:nv] @ z0, None
    evolving = [(c, m) for c, m in step.modes if overrides(c, "derivative")]

    def terms_at(dz: np.ndarray) -> np.ndarray:
        x = point.state(dz[:n])
        u = point.u0 + dz[n:]
        q, v = system.split(x)
        out = np.zeros(system.nx)
        for comp, mode in evolving:
            comp.derivative(t, x, q, v, u, mode, out, None)
        return np.concatenate((step.efforts(t, x, u), out[point.nq + nv : system.nx - 2]))

    m = point.u0.size
    scale = np.concatenate((point.scales(), np.maximum(1.0, np.abs(point.u0))))
    jac = central_jacobian(terms_at, np.zeros(n + m), scale)
    tau0 = step.efforts(t, point.x0, point.u0)
    note = (
        "the efforts and the component states' derivatives (affine in this phase) by central "
        "differences"
    )
    return jac[:, :n], jac[:, n:], tau0, note


def _analytic(point: _Point) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """A and B from Pinocchio's ABA derivatives and the components' terms."""
    system, nv, n = point.system, point.nv, point.n
    step = point.step
    terms_x, terms_u, tau0, note = _component_terms(point)
    q0, v0 = system.split(point.x0)
    da_dq, da_dv, m_inv = pin.computeABADerivatives(step.model, step.data, q0, v0, tau0)
    a = np.zeros((n, n))
    a[:nv] = point.configuration_rows()
    a[nv : 2 * nv] = m_inv @ terms_x[:nv]
    a[nv : 2 * nv, :nv] += da_dq
    a[nv : 2 * nv, nv : 2 * nv] += da_dv
    a[2 * nv :] = terms_x[nv:]
    b = np.zeros((n, point.u0.size))
    b[nv : 2 * nv] = m_inv @ terms_u[:nv]
    b[2 * nv :] = terms_u[nv:]
    return a, b, [] if note is None else [note]


def _state_matrices(point: _Point, method: str) -> tuple[np.ndarray, np.ndarray, str, list[str]]:
    reason = _analytic_reason(point)
    if method == "analytic" and reason is not None:
        raise InvalidParameter(
            f"method='analytic' does not apply here: {reason}; method='auto' or 'central' "
            "differentiates the System's right-hand side instead"
        )
    if method == "central" or reason is not None:
        a, b = _central(point)
        why = "asked for" if method == "central" else reason
        return a, b, "central difference", [f"A and B by central differences ({why})"]
    step = point.step
    if step.constrained:
        terms_x, terms_u, tau0, note = _component_terms(point)
        matrices = constrained_matrices(point, terms_x, terms_u, tau0, central_jacobian)
    if step.constrained and matrices is not None:
        a, b, differenced = matrices
        a[: point.nv] = point.configuration_rows()
        names = ", ".join(c.name for c, _ in step.constrained)
        rows = (
            f"the rows' own terms of {', '.join(differenced)} by central differences"
            if differenced
            else "the rows' own terms in closed form (constant Jacobians)"
        )
        notes = [
            f"constrained phase (rows of {names}): Pinocchio's RNEA derivatives and one KKT "
            f"solve; {rows}"
        ]
        return a, b, "analytic", notes + ([] if note is None else [note])
    a, b, notes = _analytic(point)
    return a, b, "analytic", notes


def _gain(point: _Point, law: Any) -> np.ndarray:
    """``K = ∂law(t, x)/∂δx`` by central differences, shape (n_inputs, n)."""

    def output(dx: np.ndarray) -> np.ndarray:
        return np.asarray(law(point.t, point.state(dx)), dtype=float)

    return central_jacobian(output, np.zeros(point.n), point.scales())


def _checked_state(system: System, x0: Any, names: Sequence[str]) -> np.ndarray:
    """x0 as a public state (shape (nx,)); also accepted without the two energy
    accumulators."""
    nx = system.nx
    try:
        x = np.array(x0, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise InvalidParameter(f"x0 must be a System state (numbers), got {x0!r}") from None
    if x.size == nx - 2:
        x = np.concatenate((x, (0.0, 0.0)))
    if np.ndim(x0) != 1 or x.size != nx:
        raise InvalidParameter(
            f"x0 has shape {np.shape(x0)}, expected ({nx},): the System's public state "
            f"(system.initial_state(q, v); layout {', '.join(system.layout)}), or "
            f"({nx - 2},) without the energy accumulators"
        )
    finite = np.isfinite(x[: nx - 2])
    if not finite.all():
        bad = np.flatnonzero(~finite)
        public = _public_names(system, names)
        raise InvalidParameter(
            f"x0 has non-finite entries: {', '.join(public[k] for k in bad[:8])}"
        )
    return x


def _public_names(system: System, names: Sequence[str]) -> list[str]:
    """A name for each entry of the public state (configuration entries by index)."""
    nq, nv = system.model.nq, system.model.nv
    if system.euclidean:
        return list(names)
    return [f"q[{k}]" for k in range(nq)] + list(names[nv:])


def _checked_inputs(system: System, u0: Any, names: Sequence[str]) -> np.ndarray:
    m = system.n_inputs
    if u0 is None:
        return np.zeros(m)
    try:
        u = np.array(u0, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise InvalidParameter(f"u0 must be {m} numbers, got {u0!r}") from None
    if u.size != m or np.ndim(u0) > 1:
        raise InvalidParameter(
            f"u0 has shape {np.shape(u0)}, expected ({m},): the inputs {', '.join(names)}"
        )
    if not np.all(np.isfinite(u)):
        raise InvalidParameter(f"u0 has non-finite entries: {u}")
    return u


def _residual(point: _Point) -> np.ndarray:
    """``[v, a, ṡ]`` at the point: zero at an equilibrium."""
    v0 = point.x0[point.nq : point.nq + point.nv]
    return np.concatenate((v0, point.rhs(np.zeros(point.n), np.zeros(point.u0.size))))


def _residual_scale(a: np.ndarray, b: np.ndarray, point: _Point) -> np.ndarray:
    """Per row, the size of the terms it sums: ``|A| max(1, |x0|) + |B| max(1, |u0|)``."""
    return np.abs(a) @ point.scales() + np.abs(b) @ np.maximum(1.0, np.abs(point.u0))


def equilibrium(
    system: System,
    x0: Any = None,
    u0: Any = None,
    *,
    t: float = 0.0,
    tol: float = 1e-10,
    max_iterations: int = 50,
    control: Any = None,
) -> np.ndarray:
    """A state where the System rests under constant inputs: ``v = 0, a = 0, ṡ = 0``.

    Newton's method on the accelerations and the component states' derivatives at v = 0,
    over the configuration and the component states, with the least-squares (minimum-norm)
    step, so that free directions (a rigid-body rotation without gravity) stay where they
    start, as :func:`pinext.static_deflection` solves its Newton on the elastic DOFs. The
    phase of the start is kept during the iterations (a loop's rows, with their drift
    stabilization, close the loop on the way); steps are limited to 0.5 in any entry.

    Args:
        system: The System.
        x0: Starting state (public layout); default ``system.initial_state()``.
        u0: Constant inputs; default zero.
        t: Time [s].
        tol: Convergence: every residual within ``tol`` of the size of the terms it sums.
        max_iterations: Newton iteration limit.
        control: A control law closing the loop (:func:`linearize`); ``u0`` adds to it.

    Returns:
        Shape (nx,). The equilibrium (public layout, energy accumulators zero).

    Raises:
        PinextError: Newton did not converge (no equilibrium near x0 under u0).
    """
    state_names, _ = state_labels(system)
    in_names, _ = input_labels(system)
    x = system.initial_state() if x0 is None else _checked_state(system, x0, state_names)
    u = _checked_inputs(system, u0, in_names)
    x[-2:] = 0.0
    x[system.layout["v"]] = 0.0
    law = None if control is None else checked_control(control, system, x, t)
    phase = system.initial_phase(t, x, u if law is None else u + law(t, x))
    for _ in range(max_iterations):
        point = _Point(system, x, u if law is None else u + law(t, x), t, phase)
        a, b, _, _ = _state_matrices(point, "auto")
        if law is not None:
            a = a + b @ _gain(point, law)
        residual = _residual(point)
        if np.all(np.abs(residual) <= tol * _residual_scale(a, b, point)):
            return x
        nv = point.nv
        unknowns = np.r_[np.arange(nv), np.arange(2 * nv, point.n)]  # δq, δs (v stays 0)
        step = np.zeros(point.n)
        step[unknowns] = np.linalg.lstsq(a[nv:][:, unknowns], -residual[nv:], rcond=1e-12)[0]
        step *= min(1.0, 0.5 / max(np.abs(step).max(), 1e-300))
        x = point.state(step)
    raise PinextError(
        f"equilibrium: Newton did not converge in {max_iterations} iterations (largest "
        f"residual {np.abs(residual).max():.3g}); there may be no equilibrium near x0 under "
        f"u0 = {u}: give x0 near one, or inputs that hold the System"
    )


def linearize(
    system: System,
    x0: Any = None,
    u0: Any = None,
    outputs: Sequence[str] | None = None,
    *,
    t: float = 0.0,
    method: str = "auto",
    require_equilibrium: bool = False,
    tol: float = 1e-10,
    coordinates: str = "full",
    control: Any = None,
) -> LinearModel:
    """The linear model of a System about a state, ``δẋ = A δx + B δu, δy = C δx + D δu``.

    Args:
        system: The :class:`pinext.System`.
        x0: The state (public layout, ``system.initial_state(q, v)``; shape (nx,) or (nx−2,)
            without the energy accumulators). None: the equilibrium under ``u0`` that
            :func:`equilibrium` finds from ``system.initial_state()``.
        u0: The inputs [V, N.m or N], shape (n_inputs,); default zero.
        outputs: Output names (:mod:`pinext.linear_models.names`): states (``"q:hub"``),
            frame signals (``"tip.position"``), component signals (``"drives.current"``);
            default: every state (C = I, D = 0).
        t: Time of the linearization [s].
        method: ``"auto"`` (analytic where it applies, else central differences),
            ``"analytic"`` or ``"central"`` (module docstring).
        require_equilibrium: Check that x0 is an equilibrium under u0 (``v = 0``, ``ẋ = 0``)
            and raise :class:`~pinext.exceptions.NotAtEquilibrium` if not.
        tol: The equilibrium test: each residual within ``tol`` of the size of the terms its
            row sums (``|A| max(1, |x0|) + |B| max(1, |u0|)``).
        coordinates: ``"full"`` (every DOF) or ``"independent"``: in a phase with constraint
            rows (loops, held contacts, mimic couplings), the model about a rest state on the
            independent DOFs only, without the poles of the rows' drift stabilization
            (McClamroch (1986) (24)–(28); :mod:`pinext.linear_models.reduction`).
        control: A control law ``u(t, x)`` or a :class:`pinext.control` law
            (``law(t, q, v, sensors)``): the closed loop ``A + B K``, ``C + D K`` with
            ``K = ∂law/∂x`` by central differences; ``u0`` is then an input added to the law's
            output (default zero), and ``B``, ``D`` map that added input.

    Returns:
        :class:`pinext.linear_models.LinearModel`; C and D of frame and component signals
        by central differences of the signals (the step of :func:`central_jacobian`).

    Raises:
        InvalidParameter: x0 or u0 of the wrong shape or not finite, an unknown method, or
            ``method="analytic"`` where it does not apply (the reason is given).
        NameNotFound: An unknown output name (the valid names are listed).
        NotAtEquilibrium: ``require_equilibrium`` and x0 is not one.
        PinextError: No equilibrium found (x0 None).
    """
    if not isinstance(system, System):
        raise InvalidParameter(f"system must be a pinext.System, got {type(system).__name__}")
    if method not in METHODS:
        raise InvalidParameter(f"unknown method {method!r}; valid methods: {', '.join(METHODS)}")
    if coordinates not in COORDINATES:
        raise InvalidParameter(
            f"unknown coordinates {coordinates!r}; valid: {', '.join(COORDINATES)}"
        )
    state_names, state_units = state_labels(system)
    in_names, in_units = input_labels(system)
    u = _checked_inputs(system, u0, in_names)
    if x0 is None:
        x = equilibrium(system, None, u, t=t, tol=tol, control=control)
    else:
        x = _checked_state(system, x0, state_names)
        x[-2:] = 0.0
    law = None if control is None else checked_control(control, system, x, t)
    point = _Point(system, x, u if law is None else u + law(t, x), t)
    a, b, used, notes = _state_matrices(point, method)
    gain = None if law is None else _gain(point, law)
    if gain is not None:
        a = a + b @ gain
    if require_equilibrium:
        residual = _residual(point)
        scale = _residual_scale(a, b, point)
        off = np.flatnonzero(np.abs(residual) > tol * scale)
        if off.size:
            raise NotAtEquilibrium(
                {f"d/dt {state_names[k]}": float(residual[k]) for k in off},
                tol,
            )
    c, d, out_names, out_units, measured = _output_matrices(
        point, outputs, state_names, state_units
    )
    if measured:
        notes.append("C and D of the frame and component signals by central differences")
    if gain is not None:
        c = c + d @ gain
        notes.append("closed loop: the law's gain K = ∂u/∂x by central differences")
    if coordinates == "independent":
        (a, b, c), state_names, state_units, note = independent_coordinates(
            system, point.phase, x, u, t, (a, b, c), state_names, state_units
        )
        if note is not None:
            notes.append(note)
            if outputs is None:  # every state: the kept ones
                c, d = np.eye(len(state_names)), np.zeros((len(state_names), u.size))
                out_names, out_units = list(state_names), list(state_units)
    return LinearModel(
        A=a,
        B=b,
        C=c,
        D=d,
        state_names=tuple(state_names),
        input_names=tuple(in_names),
        output_names=tuple(out_names),
        state_units=tuple(state_units),
        input_units=tuple(in_units),
        output_units=tuple(out_units),
        x0=x,
        u0=point.u0,
        t0=float(t),
        method=used,
        notes=tuple(notes),
    )


def _output_matrices(
    point: _Point,
    outputs: Sequence[str] | None,
    state_names: list[str],
    state_units: list[str],
) -> tuple[np.ndarray, np.ndarray, list[str], list[str], bool]:
    """C, D, the names and units of the outputs, and whether any was differenced."""
    n, m = point.n, point.u0.size
    if outputs is None:
        return np.eye(n), np.zeros((n, m)), list(state_names), list(state_units), False
    if isinstance(outputs, str):
        outputs = [outputs]
    signals = Signals(point.system, point.phase, point.t)
    rows = resolve_outputs(list(outputs), state_names, state_units, signals, point.x0, point.u0)
    c, d = np.zeros((len(rows), n)), np.zeros((len(rows), m))
    measured = [k for k, r in enumerate(rows) if r.signal is not None]
    for k, r in enumerate(rows):
        if r.state is not None:
            c[k, r.state] = 1.0
    if measured:
        frames = {rows[k].signal.rsplit(".", 1)[0] for k in measured}  # type: ignore[union-attr]
        frames &= set(signals.frames)

        def measure(dz: np.ndarray) -> np.ndarray:
            values = signals.values(point.state(dz[:n]), point.u0 + dz[n:], frames)
            return np.array([values[rows[k].signal][rows[k].entry] for k in measured])  # type: ignore[index]

        scale = np.concatenate((point.scales(), np.maximum(1.0, np.abs(point.u0))))
        jac = central_jacobian(measure, np.zeros(n + m), scale)
        c[measured], d[measured] = jac[:, :n], jac[:, n:]
    return c, d, [r.name for r in rows], [r.unit for r in rows], bool(measured)
