"""The right-hand side of the ODE in one phase, on a chart's internal state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..dynamics.momentum import hamel_term, kinetic_energy_gradient
from ..exceptions import InvalidParameter
from .chart import Chart
from .component import Event, Phase, overrides
from .events import Breakpoint
from .linear import fused_rhs

if TYPE_CHECKING:
    from .system import System


def make_rhs(
    system: System, phase: Phase, chart: Chart, control, progress, implicit: bool = False
) -> Any:
    """The right-hand side ``dy/dt = f(t, y)`` of a phase.

    Written for speed: one acceleration step (one ``pin.aba``, or one constrained solve) per
    call and a handful of numpy operations. A bare mechanism takes :func:`plain_rhs`, a linear
    phase the fused matrices of :mod:`.linear` (which also give the Jacobian that implicit
    methods use: ``rhs.jac``), the rest the System's :class:`AccelerationStep` and the
    components' derivatives and powers.
    """
    model, data = system.model, system.data
    nq, nv, shift = model.nq, model.nv, chart.shift
    v_block = slice(nq - shift, nq - shift + nv)
    n_internal = system.nx - shift
    identity, momentum = chart.identity, chart.momentum
    if identity and system.torque_inputs and not implicit and _silent(system, phase):
        return plain_rhs(system, control, progress)
    if identity and not momentum:
        fused = fused_rhs(system, phase, control, progress)
        if fused is not None:
            return fused
    step = system.acceleration_step(phase)
    if momentum and (step.dense or step.added is not None):
        raise InvalidParameter(
            "the momentum method does not support constrained phases, added inertia or a "
            "replaced mechanism; use a solve_ivp method"
        )
    evolving = [
        (c, m) for c, m in step.modes if overrides(c, "derivative") or overrides(c, "power")
    ]
    torque_inputs = system.torque_inputs
    zero_control = getattr(control, "zero", False)
    damping = system.damping
    damped = bool(damping.any())
    impose = system.impose if system.imposing else None

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        x = y if identity else chart.to_public(y)
        if impose is not None:
            x = impose(t, x)
        q = x[:nq]
        v = x[nq : nq + nv]
        u = control.value if zero_control else control(t, x)
        tau = step.efforts(t, x, u)
        p_in = float(u @ v) if torque_inputs and not zero_control else 0.0
        p_diss = float(v @ (damping * v)) if damped else 0.0
        if momentum:
            # Celentano (2008) Theorem 1: p_dot = dT/dq + ad*_v p + tau - g(q), p = M v
            p = y[v_block]
            a = (
                kinetic_energy_gradient(model, data, q, v)
                + hamel_term(model, q, v, p)
                + tau
                - pin.computeGeneralizedGravity(model, data, q)
            )
            solved = None
        else:
            solved = step.solve(t, x, tau, u)
            a = solved.a
        if evolving:
            out = np.zeros(system.nx)
            for comp, mode in evolving:
                comp.derivative(t, x, q, v, u, mode, out, solved)
                supplied, dissipated = comp.power(t, x, q, v, u, mode, solved)
                p_in += supplied
                p_diss += dissipated
            dy = out[shift:]
        else:
            dy = np.empty(n_internal)
        dy[-2] = p_in
        dy[-1] = p_diss
        dy[: nq - shift] = v if identity else chart.q_rate(y, v)
        dy[v_block] = a
        if progress is not None and t > progress.n + progress.step:
            progress.update(min(t, progress.total) - progress.n)
        return dy

    return rhs


def _silent(system: System, phase: Phase) -> bool:
    """Whether no component adds anything to the right-hand side in this phase (no states,
    efforts, powers, rows, inertia or imposed motion — joint limits far from their stops):
    the bare mechanism's hot path applies."""
    if system.nx != 2 * system.model.nv + 2 or system.imposing:
        return False
    hooks = ("effort", "derivative", "power", "mechanism")
    if any(overrides(c, hook) for c in system.components for hook in hooks):
        return False
    step = system.acceleration_step(phase)
    return not step.dense and step.added is None


def plain_rhs(system: System, control, progress) -> Any:
    """The right-hand side of a bare mechanism (Euclidean, no components): the hot path.

    ``[q, v, W_in, W_diss]' = [v, aba(q, v, u - K (q - q0) - D v), u.v, v.D v]`` with nothing
    else in the loop; a non-finite acceleration makes the solver fail, which :func:`simulate`
    reports as an :class:`IntegrationError`.
    """
    model, data = system.model, system.data
    nv = model.nv
    damping, stiffness = system.damping, system.stiffness
    damped, elastic = bool(damping.any()), system.elastic.size > 0
    q_rest = system.q_rest if system.q_rest.any() else None
    zero = np.zeros(nv)
    zero_control = getattr(control, "zero", False)
    aba, concatenate = pin.aba, np.concatenate

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        q = y[:nv]
        v = y[nv : 2 * nv]
        if zero_control:
            tau, p_in = zero, 0.0
        else:
            tau = control(t, y)
            p_in = tau @ v
        p_diss = 0.0
        if damped:
            dv = damping * v
            tau = tau - dv
            p_diss = v @ dv
        if elastic:
            tau = tau - stiffness * (q if q_rest is None else q - q_rest)
        a = aba(model, data, q, v, tau)
        if progress is not None and t > progress.n + progress.step:
            progress.update(min(t, progress.total) - progress.n)
        return concatenate((v, a, (p_in, p_diss)))

    return rhs


def event_functions(events: list[Event], chart: Chart, system: System, phase: Phase, control):
    """The solver's event functions ``g(t, y)``, on the public state. The dynamic ones take
    the phase's acceleration step, solved once per state for all of them (a phase with many
    held rows or stuck joints has an event per row, every one evaluated at the same states)."""
    step = system.acceleration_step(phase) if any(e.dynamic for e in events) else None
    last: dict[str, Any] = {"key": None}

    def state(t: float, y: np.ndarray) -> dict[str, Any]:
        key = (t, y.tobytes())
        if last["key"] != key:
            x = system.impose(t, chart.to_public(y))
            last.update(key=key, x=x.copy() if x is y else x, solved=None)  # y: reused buffer
        return last

    def wrap(event: Event):
        def g(t: float, y: np.ndarray) -> float:
            s = state(t, y)
            if not event.dynamic:
                return event.function(t, s["x"])
            if s["solved"] is None:
                assert step is not None  # built when any event is dynamic
                s["solved"] = step(t, s["x"], np.asarray(control(t, s["x"]), dtype=float))
            return event.function(t, s["x"], s["solved"])

        g.terminal = True  # type: ignore[attr-defined]
        g.direction = event.direction  # type: ignore[attr-defined]
        return g

    return [wrap(e) for e in events]


def past_bound(events: list[Event], t: float, x: np.ndarray) -> int | None:
    """The first event with :attr:`Event.bound` that is already past zero in its direction
    at a segment's start, or None. Two rows that reach their stops at the same instant tie
    within rounding: the first one's event ends the segment, and the other, a hair past,
    would never be seen crossing (its zero lies behind the start: a gripper's excused finger
    back inside at the instant its mimic partners reach their stops left the nearest-stop
    event of every joint negative, blind for the rest of the run). A bound is never past
    where the physics holds, so its event (the impact) fires at once."""
    for i, event in enumerate(events):
        if event.bound and not event.dynamic:
            g = event.function(t, x)
            if g * event.direction > 0.0:
                return i
    return None


def time_event(t_break: float):
    """The event ``t − t_break`` that ends a segment at a jump of the control law (a
    Schedule's breakpoint, a held law's next sample; :class:`Breakpoint`)."""
    value = Breakpoint(t_break).value

    def g(t: float, y: np.ndarray) -> float:
        return value(t, y)

    g.terminal = True  # type: ignore[attr-defined]
    g.direction = 1  # type: ignore[attr-defined]
    return g


def accepted_time(progress):
    """An event function that never fires and moves ``progress`` to the time of each step
    solve_ivp accepts (it evaluates its events once there): an implicit method's trials run
    ahead of that time (scipy's Radau evaluates near the end of its first, rejected trial),
    so the time its right-hand side sees is no measure of the run's pace."""

    def g(t: float, y: np.ndarray) -> float:
        if t > progress.n:
            progress.update(min(t, progress.total) - progress.n)
        return 1.0

    return g


def turned(events: list[Event], functions: list, t: float, y: np.ndarray) -> int | None:
    """The first dynamic event already past zero in its direction where a segment starts at a
    control breakpoint or sample, or None. The law's input jumps there, and with it a held
    row's reaction or a stuck joint's friction: a reaction that turns from pushing to pulling
    at the jump crosses zero between two instants the solver never sees apart, so its event
    (the release) fires at once. ``functions``: :func:`event_functions` of ``events``, on the
    internal state y."""
    for i, event in enumerate(events):
        if event.dynamic and event.direction and functions[i](t, y) * event.direction > 0.0:
            return i
    return None
