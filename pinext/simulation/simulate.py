"""simulate: event-driven, phase-aware integration of a System with scipy's integrators."""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
import pinocchio as pin
from scipy.integrate import solve_ivp
from tqdm.auto import tqdm

from ..dynamics.momentum import (
    hamel_term,
    kinetic_energy_gradient,
    momentum_from_velocity,
    velocity_from_momentum,
)
from ..exceptions import IntegrationError, InvalidParameter
from ..robot import Robot
from . import dop853
from .arguments import as_initial_state, check_options, checked_control, output_times
from .component import Event, Phase
from .linear import fused_rhs
from .system import System
from .trajectory import EventRecord, PhaseRecord, Trajectory

#: Integration methods of :func:`scipy.integrate.solve_ivp` accepted by :func:`simulate`.
METHODS = ("DOP853", "RK45", "RK23", "Radau", "BDF", "LSODA")
#: The implicit ones, which receive an analytic Jacobian in linear phases.
IMPLICIT = ("Radau", "BDF", "LSODA")
#: Largest tangent-space excursion [rad or m] from the anchor before the chart is re-centred.
_CHART_RADIUS = 1.0


class _Chart:
    """Local coordinates on the configuration manifold: ``q = integrate(anchor, delta)``.

    Configurations with quaternions (free-flyer, spherical joints) or unbounded revolute joints
    are integrated in the tangent space at an anchor; the anchor moves at phase boundaries and
    whenever ``|delta|`` reaches :data:`_CHART_RADIUS`, so ``q`` always stays on the manifold.
    For Euclidean models the chart is the identity.
    """

    def __init__(self, system: System, x: np.ndarray, momentum: bool = False) -> None:
        self.system = system
        self.model = system.model
        self.data = self.model.createData()
        nq, nv = self.model.nq, self.model.nv
        self.momentum = momentum
        self.identity = system.euclidean and not momentum
        self.anchor = x[:nq].copy()
        self.shift = nq - nv  # public index = internal index + shift, after the q block
        self.nv = nv

    def to_internal(self, x: np.ndarray) -> np.ndarray:
        if self.identity:
            return x.copy()
        nq, nv = self.model.nq, self.nv
        y = np.concatenate([np.zeros(nv), x[nq:]])
        if self.system.euclidean:
            y[:nv] = x[:nq]
        if self.momentum:
            y[nv : 2 * nv] = momentum_from_velocity(self.model, self.data, x[:nq], x[nq : nq + nv])
        return y

    def configuration(self, y: np.ndarray) -> np.ndarray:
        if self.system.euclidean:
            return y[: self.nv]
        return pin.integrate(self.model, self.anchor, y[: self.nv])

    def to_public(self, y: np.ndarray) -> np.ndarray:
        if self.identity:
            return y
        q = self.configuration(y)
        x = np.concatenate([q, y[self.nv :]])
        if self.momentum:
            nq, nv = self.model.nq, self.nv
            x[nq : nq + nv] = velocity_from_momentum(self.model, self.data, q, y[nv : 2 * nv])
        return x

    def q_rate(self, y: np.ndarray, v: np.ndarray) -> np.ndarray:
        """d(delta)/dt for generalized velocity v at q = integrate(anchor, delta)."""
        if self.system.euclidean:
            return v
        jac = pin.dIntegrate(self.model, self.anchor, y[: self.nv], pin.ArgumentPosition.ARG1)
        return np.linalg.solve(jac, v)


def _event_wrapper(event: Event, chart: _Chart):
    def g(t: float, y: np.ndarray) -> float:
        return event.function(t, chart.to_public(y))

    g.terminal = True  # type: ignore[attr-defined]
    g.direction = event.direction  # type: ignore[attr-defined]
    return g


def _rhs(
    system: System, phase: Phase, chart: _Chart, control, progress, implicit: bool = False
) -> Any:
    """The right-hand side of the ODE in one phase, on the chart's internal state.

    Written for speed: one ``pin.aba`` (or constrained solve) per call and a handful of numpy
    operations. A bare mechanism takes :func:`_plain_rhs`, a linear phase the fused matrices of
    :mod:`.linear` (which also give the Jacobian that implicit methods use: ``rhs.jac``), the
    rest the component loops below.
    """
    model, data = system.model, system.data
    modes = [(comp, phase.get(comp.name)) for comp in system.components]
    nq, nv, shift = model.nq, model.nv, chart.shift
    v_block = slice(nq - shift, nq - shift + nv)
    n_internal = system.nx - shift
    torque_inputs = system.torque_inputs
    zero_control = getattr(control, "zero", False)
    damping, stiffness = system.damping, system.stiffness
    damped, elastic = bool(damping.any()), system.elastic.size > 0
    q_rest = system.q_rest
    aba = pin.aba
    identity = chart.identity
    momentum = chart.momentum
    if identity and not modes and torque_inputs and not implicit:
        return _plain_rhs(system, control, progress)
    if identity and not momentum:
        fused = fused_rhs(system, phase, control, progress)
        if fused is not None:
            return fused

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        x = y if identity else chart.to_public(y)
        q = x[:nq]
        v = x[nq : nq + nv]
        if damped:
            dv = damping * v
            tau = -dv
            p_diss = v @ dv
        else:
            tau = np.zeros(nv)
            p_diss = 0.0
        if elastic:
            tau -= stiffness * (q - q_rest if identity else system.deflection(q))
        if zero_control:
            u = control.value
            p_in = 0.0
        else:
            u = control(t, x)
            if torque_inputs:
                tau += u
                p_in = u @ v
            else:
                p_in = 0.0
        a = None
        if modes:
            for comp, mode in modes:
                effort = comp.effort(t, x, q, v, u, mode)
                if effort is not None:
                    tau += effort
            for comp, mode in modes:
                a = comp.constrained_acceleration(t, x, q, v, tau, mode)
                if a is not None:
                    break
        if momentum:
            if a is not None:
                raise InvalidParameter("the momentum method does not support constrained phases")
            # seed 001 Theorem 1: p_dot = dT/dq + ad*_v p + tau - g(q), p = M v
            p = y[v_block]
            a = (
                kinetic_energy_gradient(model, data, q, v)
                + hamel_term(model, q, v, p)
                + tau
                - pin.computeGeneralizedGravity(model, data, q)
            )
        elif a is None:
            a = aba(model, data, q, v, tau)
        if modes:
            out = np.zeros(system.nx)
            for comp, mode in modes:
                comp.derivative(t, x, q, v, u, mode, out)
                p = comp.power(t, x, q, v, u, mode)
                p_in += p[0]
                p_diss += p[1]
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


class _Recorder:
    """The samples, phases and events of a run, segment by segment.

    A segment is what one ``solve_ivp`` call integrated. Its samples are the solver's output
    plus, at a physical event, the state just before the map (the next segment starts with the
    state after it, so an impact shows as two samples at the same time). A restart that does
    not change the state (chart re-centring, control breakpoint) continues the phase without
    duplicating samples.
    """

    def __init__(self) -> None:
        self.times: list[np.ndarray] = []
        self.states: list[np.ndarray] = []
        self.phase_ids: list[np.ndarray] = []
        self.phases: list[PhaseRecord] = []
        self.events: list[EventRecord] = []

    def segment(
        self,
        sol,
        chart: _Chart,
        t: float,
        x: np.ndarray,
        phase: Phase,
        fired: int | None,
        *,
        physical: bool,
        continuing: bool,
    ):
        """Record one solve_ivp segment; return (end time, public state at the end)."""
        seg_t = list(np.atleast_1d(sol.t))
        seg_y = [sol.y[:, i] for i in range(len(seg_t))]
        if fired is not None:
            t_end, y_end = float(sol.t_events[fired][0]), sol.y_events[fired][0]
            if physical and (not seg_t or seg_t[-1] < t_end):
                seg_t.append(t_end)  # the state just before the event's map
                seg_y.append(y_end)
        if continuing:
            if seg_t and seg_t[0] == t:
                del seg_t[0], seg_y[0]
        elif not seg_t or seg_t[0] > t:
            seg_t.insert(0, t)  # the state at the start of the phase (after a map)
            seg_y.insert(0, chart.to_internal(x))
        seg_x = np.array([chart.to_public(y) for y in seg_y]).reshape(len(seg_t), x.size)
        if not np.all(np.isfinite(seg_x)):
            bad = int(np.argmax(~np.all(np.isfinite(seg_x), axis=1)))
            raise IntegrationError("non-finite state", seg_t[bad], seg_x[max(bad - 1, 0)])
        if fired is None:
            t_end, x_end = float(seg_t[-1]), seg_x[-1].copy()
        else:
            x_end = chart.to_public(y_end).copy()
        if continuing:
            self.phases[-1] = PhaseRecord(self.phases[-1].t_start, t_end, phase.name, phase.modes)
        else:
            self.phases.append(PhaseRecord(float(t), t_end, phase.name, phase.modes))
        self.times.append(np.array(seg_t))
        self.states.append(seg_x)
        self.phase_ids.append(np.full(len(seg_t), len(self.phases) - 1))
        return t_end, x_end

    def point(self, t: float, x: np.ndarray, phase: Phase) -> None:
        """Record a single state as a zero-length phase (a map at the final time)."""
        self.phases.append(PhaseRecord(t, t, phase.name, phase.modes))
        self.times.append(np.array([t]))
        self.states.append(x[None, :].copy())
        self.phase_ids.append(np.array([len(self.phases) - 1]))

    def trajectory(self, system: System, law) -> Trajectory:
        """The :class:`Trajectory` of everything recorded."""
        return Trajectory.from_run(
            system,
            np.concatenate(self.times),
            np.vstack(self.states),
            np.concatenate(self.phase_ids),
            self.phases,
            self.events,
            law,
        )


def _plain_rhs(system: System, control, progress) -> Any:
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


def simulate(
    system_or_robot: System | Robot,
    t_final: float,
    *,
    x0: np.ndarray | None = None,
    q0: np.ndarray | None = None,
    v0: np.ndarray | None = None,
    control: Any = None,
    method: str = "DOP853",
    rtol: float = 1e-10,
    atol: float = 1e-12,
    max_step: float | None = None,
    output_dt: float | None = None,
    progress: bool = False,
    max_events: int = 10_000,
) -> Trajectory:
    """Simulate a System from t = 0 to ``t_final``, phase by phase.

    Each phase is integrated with scipy: the default DOP853 runs Hairer's compiled code
    (:mod:`pinext.simulation.dop853`, through ``scipy.integrate.ode``), the other methods run
    :func:`scipy.integrate.solve_ivp`. The events of the
    components (contact, lift-off, gear efficiency switch, ...) end a phase, their map changes
    the state (impact) and the phase, and integration restarts. Configurations are integrated
    on the manifold (``pin.integrate`` on a local chart), never as ``q + v dt``. Without
    constraints the accelerations are Pinocchio's ``aba`` of

    .. math::

        M(q) \\dot v + h(q, v) = u - K (q - q_0) - D v + \\tau_{components}

    Args:
        system_or_robot: The :class:`System`, or a :class:`Robot` (wrapped in a System).
        t_final: End time [s].
        x0: Initial state: ``[q, v]``, ``[q, v, component states]`` or the full public
            state (see :func:`pinext.simulation.arguments.as_initial_state`); default from
            ``q0``, ``v0``.
        q0: Initial configuration (default: neutral).
        v0: Initial velocity (default: zero).
        control: Inputs: None (zero), a constant vector, a :class:`Schedule`, or a function
            ``u(t, x)``. Joint torques [N.m] for a robot without drives, else the drives'
            inputs (voltages [V], ...).
        method: A solve_ivp method among :data:`METHODS`, or ``"momentum"`` for the Celentano
            scheme of seed 001 Theorem 1 (state (q, p = M v)). For stiff damped models (finely
            split flexible links with ``damping_ratio``, very stiff transmissions) use
            ``"Radau"``: in linear phases it gets the analytic Jacobian (Pinocchio's
            ``computeABADerivatives``) and its steps no longer shrink with the stiffness.
        rtol: Relative tolerance.
        atol: Absolute tolerance.
        max_step: Largest step [s] (compiled DOP853 may stretch its last step by 1 %).
        output_dt: Sample period of the output [s]; None keeps the solver's steps. The last
            sample is at ``t_final`` even when ``output_dt`` does not divide it.
        progress: Show a tqdm progress bar.
        max_events: Stop with :class:`IntegrationError` after this many events (Zeno guard).

    Returns:
        The :class:`Trajectory`.

    Raises:
        IntegrationError: The solver failed, a state became NaN or infinite, or too many events.
    """
    system = system_or_robot if isinstance(system_or_robot, System) else System(system_or_robot)
    momentum = method == "momentum"
    if momentum:
        method = "DOP853"
    elif method not in METHODS:
        raise InvalidParameter(
            f"unknown method '{method}'; valid methods: {', '.join(METHODS)}, momentum"
        )
    t_final = check_options(t_final, rtol=rtol, atol=atol, max_step=max_step, output_dt=output_dt)
    x = as_initial_state(system, x0, q0, v0)
    if not np.all(np.isfinite(x)):
        raise IntegrationError("non-finite initial state", 0.0, x)
    law = checked_control(control, system, x)
    system.control = law  # components' events and initial modes may need u(t, x)
    options: dict[str, Any] = {"rtol": rtol, "atol": atol}
    if max_step is not None:
        options["max_step"] = max_step
    if method == "DOP853":  # the same method, stepped in compiled code
        solver = dop853.solve
    else:
        solver = solve_ivp
        options["method"] = method

    t = 0.0
    phase = system.initial_phase(t, x)
    record = _Recorder()
    bar = tqdm(
        total=float(t_final),
        unit="s",
        disable=not progress,
        desc="simulate",
        bar_format="{l_bar}{bar}| {n:.3f}/{total:.3f} s [{elapsed}<{remaining}]",
    )
    bar.step = t_final / 200  # type: ignore[attr-defined]
    stalled = 0
    restarted = False  # the previous segment ended with a restart (chart, breakpoint): same state
    breakpoints = np.asarray(getattr(law, "breakpoints", ()), dtype=float)
    nfev = 0
    stiff_warned = False
    started = time.perf_counter()
    try:
        while True:
            system.phase = phase  # components may need the other components' modes
            chart = _Chart(system, x, momentum)
            evs = [e for comp in system.components for e in comp.events(phase.get(comp.name))]
            functions = [_event_wrapper(e, chart) for e in evs]
            if not system.euclidean:
                functions.append(_chart_event(chart))
            upcoming = breakpoints[(breakpoints > t + 1e-12) & (breakpoints < t_final - 1e-12)]
            if upcoming.size:
                functions.append(_time_event(float(upcoming[0])))
            if output_dt is not None:
                options["t_eval"] = output_times(t, t_final, output_dt)
            rhs = _rhs(system, phase, chart, law, bar if progress else None, method in IMPLICIT)
            if method in IMPLICIT:
                options["jac"] = getattr(rhs, "jac", None)
            sol = solver(
                rhs, (t, t_final), chart.to_internal(x), events=functions or None, **options
            )
            nfev += sol.nfev
            if getattr(sol, "stiff", False) and not stiff_warned:
                stiff_warned = True
                warnings.warn(
                    f"the run looks stiff from t = {t:.6g} s (DOP853's stiffness test); "
                    "method='Radau' takes steps that do not shrink with the stiffness",
                    RuntimeWarning,
                    stacklevel=2,
                )
            if sol.status == -1:
                _raise_if_non_finite(system, phase, chart, law, sol)
                t_fail = np.atleast_1d(sol.t)
                y_fail = np.asarray(sol.y)  # the last state the solver accepted, not the start
                raise IntegrationError(
                    f"solver failed ({sol.message})",
                    float(t_fail[-1]) if t_fail.size else t,
                    chart.to_public(y_fail[:, -1]) if y_fail.size else x,
                )
            fired = next((i for i, te in enumerate(sol.t_events or ()) if te.size), None)
            t_end, x_end = record.segment(
                sol,
                chart,
                t,
                x,
                phase,
                fired,
                physical=fired is not None and fired < len(evs),
                continuing=restarted,
            )
            stalled = stalled + 1 if t_end - t < 1e-12 else 0
            t, x = t_end, x_end
            if fired is None:
                break
            restarted = fired >= len(evs)
            if restarted:  # chart re-centring or control breakpoint: restart, same state
                if t >= t_final:
                    break
                continue
            event = evs[fired]
            energy_before = system.energy(x)
            info: dict[str, Any] = {}
            if event.action is not None:
                x, phase, info = event.action(t, x, phase)
            info = {**info, "energy_loss": energy_before - system.energy(x)}
            record.events.append(EventRecord(t, event.name, info))
            if len(record.events) > max_events or stalled > 50:
                raise IntegrationError(
                    f"{len(record.events)} events, {stalled} of them without time advancing "
                    "(Zeno?)",
                    t,
                    x,
                )
            if t >= t_final:  # an event exactly at the end: keep the state after its map
                record.point(t, x, phase)
                break
    finally:
        bar.update(max(bar.total - bar.n, 0) if t >= t_final else 0)
        bar.close()
    wall = time.perf_counter() - started
    traj = record.trajectory(system, law)
    traj.meta["stats"] = {
        "nfev": int(nfev),
        "wall_time": wall,
        "method": "momentum" if momentum else method,
    }
    return traj


def _raise_if_non_finite(system: System, phase: Phase, chart: _Chart, law, sol) -> None:
    """After a solver failure: report a non-finite right-hand side at the last state."""
    t_last = float(np.atleast_1d(sol.t)[-1]) if len(np.atleast_1d(sol.t)) else 0.0
    y_last = np.asarray(sol.y)[:, -1] if np.asarray(sol.y).size else None
    if y_last is None:
        return
    rhs = _rhs(system, phase, chart, law, None)
    h = 1e-6
    for t in (t_last, t_last + h, t_last + 10 * h):
        with np.errstate(all="ignore"):
            if not np.all(np.isfinite(rhs(t, y_last))):
                raise IntegrationError("non-finite acceleration", t, chart.to_public(y_last))


def _time_event(t_break: float):
    """Restart at a discontinuity of the control (a Schedule's sample time)."""

    def g(t: float, y: np.ndarray) -> float:
        return t - t_break

    g.terminal = True  # type: ignore[attr-defined]
    g.direction = 1  # type: ignore[attr-defined]
    return g


def _chart_event(chart: _Chart):
    def g(t: float, y: np.ndarray) -> float:
        return _CHART_RADIUS - float(np.max(np.abs(y[: chart.nv])))

    g.terminal = True  # type: ignore[attr-defined]
    g.direction = -1  # type: ignore[attr-defined]
    return g
