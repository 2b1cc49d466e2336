"""The states of components in a time step: drives' rotors and currents, linearly implicit.

Time stepping (:mod:`pinext.contact.timestepping`) integrates a component's states when it
declares them (:meth:`pinext.simulation.component.Component.stepped_states`):
:class:`ComponentStates` joins them to the mechanism's step and books their energy terms in
closed form. :class:`LinearEfforts` gives the compiled loop the efforts of components without
states of their own (a DC motor on a rigid gear) as a linear form.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter
from ..simulation.system import System


class StateStep(NamedTuple):
    """What the component states add to one step (see :class:`ComponentStates`) [J]."""

    #: ``h p_in`` and ``h p_diss`` of the components at the start of the step.
    work: float
    lost: float
    #: The components' parts of the step's numerical dissipation and explicit error.
    numerical: float
    explicit: float


def _checked_states(system: System, comp: Any) -> tuple[np.ndarray, ...]:
    """``comp.stepped_states()`` as arrays, checked against the component's own states: every
    state named once, as a position with its velocity and a finite J > 0, or as a first-order
    state with a finite P > 0."""
    kinds = comp.stepped_states()
    own = np.concatenate(
        [np.arange(system.nx)[comp.layout.slices[name]] for name, _ in comp.states()]
    )
    try:
        p, w, inertias, first, metric = (np.atleast_1d(np.asarray(f, float)) for f in kinds)
    except (TypeError, ValueError):
        p = w = inertias = first = metric = np.full(1, np.nan)  # refused below
    named = np.concatenate((p, w, first))
    if (
        len({p.size, w.size, inertias.size}) != 1
        or first.size != metric.size
        or not np.array_equal(named, np.round(named))
        or sorted(named.tolist()) != sorted(own.tolist())
        or not (np.all(np.isfinite(inertias)) and np.all(inertias > 0))
        or not (np.all(np.isfinite(metric)) and np.all(metric > 0))
    ):
        raise InvalidParameter(
            f"component '{comp.name}' ({type(comp).__name__}): its stepped_states() {kinds} do "
            f"not describe its states {comp.states()} (at {own.tolist()} in the state); valid: "
            "each state once, positions and velocities of equal number with one inertia > 0 "
            "each, first-order states with one metric P > 0 each"
        )
    return p.astype(int), w.astype(int), inertias, first.astype(int), metric


class LinearEfforts:
    """The efforts of components without states of their own (a DC motor on a rigid gear)
    that a step holds explicit (:func:`pinext.contact.timestepping._effort_law`), as the
    compiled loop takes them: ``τ = τ(rest, u) + J d`` with ``d = (Δq, v)`` from the run's
    start at rest (Δq along the tangent), J by unit steps; :attr:`reason` says why not when
    they are not linear (checked at a random point and input).

    Args:
        items: The components and their modes.
        model: The stepper's model; x: the run's start.
    """

    def __init__(
        self, system: System, items: list[tuple[Any, Any]], model: pin.Model, x: np.ndarray
    ) -> None:
        self.system, self.items, self.model = system, items, model
        self.q_block, self.v_block = system.layout["q"], system.layout["v"]
        self.rest = x.copy()
        self.rest[self.v_block] = 0.0
        nv, zero = model.nv, np.zeros(system.n_inputs)
        base = self.forces(0.0, self.rest, zero)
        self.jacobian = np.column_stack(
            [self.forces(0.0, self._moved(e), zero) - base for e in np.eye(2 * nv)]
        )
        rng = np.random.default_rng(2)
        d, u = rng.uniform(-0.1, 0.1, 2 * nv), rng.uniform(-1.0, 1.0, zero.size)
        moved = self.forces(0.0, self._moved(d), u) - self.forces(0.0, self.rest, u)
        scale = max(np.abs(moved).max(), np.abs(base).max(), 1e-300)
        linear = np.allclose(moved, self.jacobian @ d, rtol=1e-9, atol=1e-9 * scale)
        #: None, or why the efforts are not of the compiled loop's form.
        self.reason = None if linear else "their efforts are not linear in q and v"

    def _moved(self, d: np.ndarray) -> np.ndarray:
        nv, y = self.model.nv, self.rest.copy()
        y[self.q_block] = pin.integrate(self.model, self.rest[self.q_block], d[:nv])
        y[self.v_block] += d[nv:]
        return y

    def forces(self, t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The components' efforts on the mechanism at ``(t, x, u)``."""
        q, v = x[self.q_block], x[self.v_block]
        tau = np.zeros(self.model.nv)
        for comp, mode in self.items:
            effort = comp.effort(t, x, q, v, u, mode)
            if effort is not None:
                tau += effort
        return tau


class ComponentStates:
    """The states of the components that the steps integrate (:meth:`pinext.simulation.
    component.Component.stepped_states`): the angles p and velocities w of rotors of constant
    inertia J behind elastic transmissions, and first-order states s (motors' currents), all
    acted on by linear forces. With ``Q = (q, p)``, ``V = (v, w)``, the forces
    ``F = (τ_c, J ẇ)`` and the rates ``g = ṡ``: ``∂F/∂(Q, V, s) = (K, C, E)`` (the
    transmissions' springs; their dampers, back-EMF and friction; the currents' torques),
    ``∂g/∂(Q, V, s) = (G_Q, G_V, G_s)``, differenced once at the start of the run (exact for
    linear forces, checked at a random point).

    A stiff transmission on a light link has modes far beyond ``1/h`` (the six-DOF arm's
    wrist: 4 700 rad/s), an inductance a time constant far below it, so the forces and rates
    are taken at the end of the step, linearly implicit (the θ = 1 step of the mechanism
    extended to them),

    .. math::

        (M_{ext} - hC - h^2 K)\\, ΔV = h F + h^2 K V + h E Δs + J_c^T λ, \\qquad
        Δs = h g + h G_V ΔV + h G_s Δs + h^2 G_Q V^+, \\qquad Q^+ = Q \\oplus h V^+.

    The currents eliminated leave ``A ΔV = b`` with ``A = hC + h²K + hE R (hG_V + h²G_Q)``,
    ``R = (I − hG_s)⁻¹``; the rotors eliminated, ``Δw = (J − A_ww)⁻¹ (b_w + A_wv Δv)``, leave
    the mechanism's matrix ``M − S``, ``S = A_vv + A_vw (J − A_ww)⁻¹ A_wv``: diagonal for
    drives on single joints, so it is the armature of the stepper's model
    (:meth:`stepper_model`), and Pinocchio's ABA, Delassus operator and conic solvers run
    unchanged. The applied forces are ``F + C ΔV + h K V⁺ + E Δs``: the springs at the end of
    the step, ``F_U(Q⁺)``, and the rest, ``F_nc``. The step's energy identity takes them as
    the mechanism's (:func:`pinext.contact.timestepping.step_audit`, on the forces applied to
    its own M); the states add

    .. math::

        D_{num} = \\tfrac12 ΔwᵀJ Δw + \\tfrac12 ΔsᵀP Δs, \\qquad
        S_{expl} = \\big[U(Q^+) - U(Q) + h F_U(Q^+)^T V^+\\big]
        + \\big[h F_{nc}^T V^+ + s^{+T} P Δs\\big] - h\\,(p_{in} - p_{diss})

    (``U`` the components' energy at rest, ``½ sᵀPs`` the currents' store), while the input
    work and the dissipation receive ``h p_in`` and ``h p_diss`` of the start of the step,
    where ``F_ncᵀV + sᵀP g = p_in − p_diss``. The first term is ``½ h² V⁺ᵀ K V⁺ ≤ 0`` (the
    springs' numerical damping, O(h²) per step), the second the change of the
    non-conservative power over the step."""

    def __init__(
        self, system: System, items: list[tuple[Any, Any]], model: pin.Model, x: np.ndarray
    ) -> None:
        self.system, self.items = system, items
        parts = [_checked_states(system, comp) for comp, _ in items]

        def joined(k: int, dtype: type) -> np.ndarray:
            return np.concatenate([part[k] for part in parts]).astype(dtype)

        self.p, self.w, self.inertia = joined(0, int), joined(1, int), joined(2, float)
        self.s, self.metric = joined(3, int), joined(4, float)
        self.q_block, self.v_block = system.layout["q"], system.layout["v"]
        self.nv = model.nv
        self.armature = np.array(model.armature, dtype=float)
        self.model = model
        #: The start at rest (velocities and first-order states zero): the origin of the
        #: coordinates ``d = (ΔQ, V, s)`` of the forces' linear form (:attr:`jacobian`).
        self.rest = self._still(x)
        self.jacobian = self._derivatives(model, x)
        self.h = np.nan

    def forces(self, t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``(F, g) = (τ_c, J ẇ, ṡ)``: the components' efforts on the mechanism, on their
        rotors, and their first-order states' rates at ``(t, x, u)``."""
        q, v = x[self.q_block], x[self.v_block]
        tau = np.zeros(self.nv)
        out = np.zeros_like(x)
        for comp, mode in self.items:
            effort = comp.effort(t, x, q, v, u, mode)
            if effort is not None:
                tau += effort
            comp.derivative(t, x, q, v, u, mode, out, None)
        return np.concatenate((tau, self.inertia * out[self.w], out[self.s]))

    def _moved(self, model: pin.Model, x: np.ndarray, d: np.ndarray) -> np.ndarray:
        """``x`` moved by ``d = (dQ, dV, ds)`` (q along the tangent)."""
        nv, n_p, n_s = model.nv, self.p.size, self.s.size
        dq, dv, ds = d[: nv + n_p], d[nv + n_p : 2 * (nv + n_p)], d[2 * (nv + n_p) :]
        y = x.copy()
        y[self.q_block] = pin.integrate(model, x[self.q_block], dq[:nv])
        y[self.p] += dq[nv:]
        y[self.v_block] += dv[:nv]
        y[self.w] += dv[nv:]
        y[self.s] += ds[:n_s]
        return y

    def _derivatives(self, model: pin.Model, x: np.ndarray) -> np.ndarray:
        """``∂(F, g)/∂(Q, V, s)`` by unit steps from ``x``, checked at a random point."""
        n = 2 * (model.nv + self.p.size) + self.s.size
        zero = np.zeros(self.system.n_inputs)
        base = self.forces(0.0, x, zero)
        jacobian = np.column_stack(
            [self.forces(0.0, self._moved(model, x, e), zero) - base for e in np.eye(n)]
        )
        d = np.random.default_rng(0).uniform(-0.1, 0.1, n)
        moved = self.forces(0.0, self._moved(model, x, d), zero)
        scale = np.abs(moved).max()
        if not np.allclose(moved, base + jacobian @ d, rtol=1e-9, atol=1e-9 * scale):
            raise InvalidParameter(
                f"the forces of {', '.join(c.name for c, _ in self.items)} are not linear in "
                "the positions, velocities and currents, which time stepping needs of the "
                "states it integrates; use the event-driven simulate"
            )
        return jacobian

    def stepper_model(self, model: pin.Model, h: float) -> None:
        """Set ``model.armature`` to the mechanism's part of the step's matrix ``M − S``
        for a step ``h``, and keep the step's elimination (:class:`ComponentStates`); refuse
        components that couple joints."""
        if h == self.h:
            return
        nv, n_q = model.nv, model.nv + self.p.size
        jac = self.jacobian
        k, c, e = jac[:n_q, :n_q], jac[:n_q, n_q : 2 * n_q], jac[:n_q, 2 * n_q :]
        g_q, g_v, g_s = jac[n_q:, :n_q], jac[n_q:, n_q : 2 * n_q], jac[n_q:, 2 * n_q :]
        self.rate = np.linalg.inv(np.eye(self.s.size) - h * g_s)  # R
        self.couple = h * e @ self.rate  # h E R
        self.rate_v = h * g_v + h * h * g_q  # ∂(h g)/∂ΔV at the step's end
        a = h * c + h * h * k + self.couple @ self.rate_v
        self.solve_w = np.linalg.inv(np.diag(self.inertia) - a[nv:, nv:])
        self.a, self.k, self.c, self.e, self.g_q, self.h = a, k, c, e, g_q, h
        schur = a[:nv, :nv] + a[:nv, nv:] @ self.solve_w @ a[nv:, :nv]
        if np.abs(schur - np.diag(np.diag(schur))).max() > 1e-12 * np.abs(schur).max():
            raise InvalidParameter(
                "the components whose states time stepping integrates couple several joints; "
                "valid: drives on single joints, or the event-driven simulate"
            )
        model.armature = self.armature - np.diag(schur)

    def _rhs(self, x: np.ndarray, f: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
        """(b of ``A ΔV = b`` before the contacts, ``h g + h² G_Q V``) from ``f`` at x."""
        n_q = self.nv + self.p.size
        velocity = np.concatenate((x[self.v_block], x[self.w]))
        rate = h * f[n_q:] + h * h * (self.g_q @ velocity)
        return h * f[:n_q] + h * h * (self.k @ velocity) + self.couple @ rate, rate

    def efforts(self, x: np.ndarray, f: np.ndarray, h: float) -> np.ndarray:
        """The efforts on the mechanism that the stepper's model (:meth:`stepper_model`)
        turns into the step's velocity update, from the forces ``f`` at ``x``."""
        nv = self.nv
        b = self._rhs(x, f, h)[0]
        return (b[:nv] + self.a[:nv, nv:] @ self.solve_w @ b[nv:]) / h

    def advance(
        self,
        t: float,
        x: np.ndarray,
        u: np.ndarray,
        f: np.ndarray,
        x_next: np.ndarray,
        h: float,
    ) -> tuple[np.ndarray, StateStep]:
        """The states' step from ``x`` (``f`` of :meth:`forces` there) to ``x_next``, whose
        mechanism part is the step's end: their states written into ``x_next``, the forces
        applied to the mechanism over the step, and the energy terms."""
        nv, n_q = self.nv, self.nv + self.p.size
        q, v = x[self.q_block], x[self.v_block]
        w, s, v_next = x[self.w], x[self.s], x_next[self.v_block]
        b, rate = self._rhs(x, f, h)
        dv = v_next - v
        dw = self.solve_w @ (b[nv:] + self.a[nv:, :nv] @ dv)
        step = np.concatenate((dv, dw))
        ds = self.rate @ (rate + self.rate_v @ step)
        w_next = w + dw
        x_next[self.w], x_next[self.p], x_next[self.s] = w_next, x[self.p] + h * w_next, s + ds
        velocity_next = np.concatenate((v_next, w_next))
        applied = f[:n_q] + self.c @ step + h * (self.k @ velocity_next) + self.e @ ds
        work = lost = 0.0
        for comp, mode in self.items:
            p_in, p_diss = comp.power(t, x, q, v, u, mode, None)
            work, lost = work + h * p_in, lost + h * p_diss
        still, after = self._still(x), self._still(x_next)
        potential = self.forces(t, still, np.zeros_like(u))[:n_q]  # F_U(Q)
        potential_next = potential + h * (self.k @ velocity_next)  # F_U(Q⁺)
        remainder = (
            self._stored(after) - self._stored(still) + h * float(potential_next @ velocity_next)
        )
        stored = float((s + ds) @ (self.metric * ds))  # s⁺ᵀ P Δs
        held = h * float((applied - potential_next) @ velocity_next) + stored - (work - lost)
        numerical = 0.5 * float(dw @ (self.inertia * dw) + ds @ (self.metric * ds))
        return applied[:nv], StateStep(work, lost, numerical, remainder + held)

    def dissipated(self, t: float, x: np.ndarray, u: np.ndarray) -> float:
        """The components' dissipated power at ``(t, x, u)`` [W]."""
        q, v = x[self.q_block], x[self.v_block]
        return sum(comp.power(t, x, q, v, u, mode, None)[1] for comp, mode in self.items)

    def _lost(self, d: np.ndarray, u: np.ndarray) -> float:
        """The components' dissipated power at :attr:`rest` moved by ``d`` under input u."""
        return self.dissipated(0.0, self._moved(self.model, self.rest, d), u)

    def dissipation_form(self) -> np.ndarray | str:
        """``D`` with the components' dissipated power ``p_diss = c(u) + l(u)·d + dᵀ D d``
        in the coordinates ``d = (ΔQ, V, s)`` from :attr:`rest` (ΔQ along the tangent;
        :meth:`dissipation_affine` gives ``c`` and ``l``), fitted by unit steps; or why the
        components' powers are not of the form the compiled loop books (checked at a random
        point and input: that form, and the identity ``p_in − p_diss = F_ncᵀ V + sᵀ P g`` of
        :class:`ComponentStates`)."""
        n = self.jacobian.shape[1]
        zero = np.zeros(self.system.n_inputs)
        unit = np.eye(n)
        c = self._lost(np.zeros(n), zero)
        up = np.array([self._lost(e, zero) for e in unit])
        down = np.array([self._lost(-e, zero) for e in unit])
        form = np.diag(0.5 * (up + down) - c)
        for i in range(n):
            for j in range(i + 1, n):
                pair = self._lost(unit[i] + unit[j], zero)
                form[i, j] = form[j, i] = 0.5 * (pair - up[i] - up[j] + c)
        self.diss = form
        rng = np.random.default_rng(1)
        d = np.asarray(rng.uniform(-0.1, 0.1, n))
        u = rng.uniform(-1.0, 1.0, zero.size)
        varies = 0.5 * (up - down) != 0.0
        varies |= np.array([self._lost(e, u) != self._lost(-e, u) for e in unit])
        self.lost_columns = np.flatnonzero(varies)
        y = self._moved(self.model, self.rest, d)
        q, v = y[self.q_block], y[self.v_block]
        p_in = p_diss = 0.0
        for comp, mode in self.items:
            into, out = comp.power(0.0, y, q, v, u, mode, None)
            p_in, p_diss = p_in + into, p_diss + out
        n_q = self.nv + self.p.size
        f = self.forces(0.0, y, u)
        potential = self.forces(0.0, self._still(y), zero)[:n_q]
        velocity = np.concatenate((y[self.v_block], y[self.w]))
        balance = (f[:n_q] - potential) @ velocity + y[self.s] @ (self.metric * f[n_q:])
        c_u, l_u = self.dissipation_affine(u)
        scale = max(abs(p_in), abs(p_diss), 1.0)
        if abs(p_diss - (c_u + l_u @ d + d @ form @ d)) > 1e-9 * scale:
            return "their dissipated power is not a quadratic form of the state"
        if abs(p_in - p_diss - balance) > 1e-9 * scale:
            return "their powers do not balance their forces"
        moved = f - self.forces(0.0, self.rest, u)
        if not np.allclose(moved, self.jacobian @ d, rtol=1e-9, atol=1e-9 * np.abs(f).max()):
            return "their forces are not linear in the state under an input"
        return form

    def dissipation_affine(self, u: np.ndarray) -> tuple[float, np.ndarray]:
        """``(c(u), l(u))`` of :meth:`dissipation_form` (after it) under the input u: one
        evaluation of the powers for c and one per column of l that is not zero."""
        n = self.jacobian.shape[1]
        c = self._lost(np.zeros(n), u)
        linear = np.zeros(n)
        for i in self.lost_columns:
            e = np.zeros(n)
            e[i] = 1.0
            linear[i] = self._lost(e, u) - c - self.diss[i, i]
        return c, linear

    def _still(self, x: np.ndarray) -> np.ndarray:
        """``x`` at rest: the velocities and the first-order states zero."""
        still = x.copy()
        still[self.v_block], still[self.w], still[self.s] = 0.0, 0.0, 0.0
        return still

    def _stored(self, x: np.ndarray) -> float:
        q, v = x[self.q_block], x[self.v_block]
        return sum(comp.energy(x, q, v) for comp, _ in self.items)
