"""simulate: event-driven, phase-aware integration of a System with scipy's integrators."""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from typing import Any

import numpy as np
from scipy.integrate import solve_ivp
from tqdm.auto import tqdm

from ..exceptions import ConstraintError, EventError, IntegrationError, InvalidParameter
from ..model import Robot
from . import dop853
from .arguments import (
    as_initial_state,
    check_options,
    checked_control,
    control_period_of,
    explained_start,
    output_times,
)
from .chart import Chart, chart_event
from .component import Component, Event, Phase
from .controls import Controller, as_state_law
from .linear import fused_rhs
from .recorder import Recorder
from .rhs import event_functions, make_rhs, past_bound, time_event, turned
from .sampling import HeldControl
from .stiffness import DOP853_STABILITY_BOUND, decaying_fast_modes, report_vibration, spectrum
from .system import System
from .trajectory import EventRecord, Trajectory

#: The automatic choices of the integration method (facts a user need not act on: the method
#: and the switch time are in ``Trajectory.meta["stats"]``) are INFO records of this logger.
_LOG = logging.getLogger("pinext")
#: Least DOP853 steps (from the spectrum at the start) above which the default is Radau.
STIFF_STEPS = 1e6
#: Least DOP853 steps that the rest of a run needs at its stability bound for the default to
#: switch to Radau when DOP853's stiffness test fires: below, DOP853 finishes the run in about
#: 1.2e4 evaluations whatever Radau would take. Measured (bench_method.py): elastic drives of
#: 1e12 N.m/rad, damped, over 60 µs leave 720 such steps, and the switch took over 60 s
#: instead of DOP853's 2 s; the damped flexible arm (ζ = 0.02, 1 s) leaves 3 525, and Radau
#: takes 19 433 evaluations against DOP853's 55 554.
SWITCH_STEPS = 1e3
#: Tightest rtol at which the default starts with Radau when the fast modes die out
#: (:func:`pinext.simulation.stiffness.decaying_fast_modes`): tighter, DOP853's eighth order
#: takes fewer evaluations than Radau IIA's fifth (measured on the Panda's elastic drives:
#: Radau 0.7 × DOP853's time at rtol 1e-8, 1.2 × at 1e-9, 3 × at 1e-10).
RADAU_RTOL = 1e-8
#: Wall time [s] after which a run shows its progress bar (``progress=None``).
PROGRESS_DELAY = 2.0
#: Integration methods of :func:`scipy.integrate.solve_ivp` accepted by :func:`simulate`.
METHODS = ("DOP853", "RK45", "RK23", "Radau", "BDF", "LSODA")
#: The implicit ones, which receive an analytic Jacobian in linear phases.
IMPLICIT = ("Radau", "BDF", "LSODA")


def simulate(
    system_or_robot: System | Robot,
    t_final: float,
    *,
    x0: np.ndarray | None = None,
    q0: np.ndarray | None = None,
    v0: np.ndarray | None = None,
    control: Any = None,
    method: str | None = None,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    max_step: float | None = None,
    output_dt: float | None = None,
    progress: bool | None = None,
    max_events: int = 10_000,
    dt: float | None = None,
    force: bool = False,
    control_period: float | None = None,
) -> Trajectory:
    """Simulate a System from t = 0 to ``t_final``, phase by phase.

    Each phase is integrated with scipy: the default DOP853 runs Hairer's compiled code
    (:mod:`pinext.simulation.dop853`, through ``scipy.integrate.ode``), the other methods run
    :func:`scipy.integrate.solve_ivp`. Phases that compile (:func:`pinext.compiled.
    phase_kernel`) run DOP853 and Radau in compiled code instead (:mod:`pinext.compiled.
    dop853`, :mod:`pinext.compiled.radau`, the same algorithms). The events of the
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
        control: Inputs: None (zero), a constant vector, a :class:`Schedule`, a
            :class:`pinext.control.Controller` ``law(t, q, v, sensors)``, or a function
            ``u(t, x)``. Joint torques [N.m] for a robot without drives, else the drives'
            inputs (voltages [V], ...).
        method: A solve_ivp method among :data:`METHODS`, or ``"momentum"`` for the Celentano
            (2008) scheme of Theorem 1 (state (q, p = M v)). None (default): DOP853, unless
            the linearised system at the start is so stiff that DOP853's stability would need
            more than :data:`STIFF_STEPS` steps (:func:`pinext.simulation.stiffness.
            dop853_steps`), or its fast modes all die out early in the run and ``rtol`` is at
            least :data:`RADAU_RTOL` (:func:`pinext.simulation.stiffness.
            decaying_fast_modes`): then ``"Radau"``, announced by a warning. With a sampled
            control law whose period is within DOP853's stability limit (``T_s ρ`` below
            :data:`pinext.simulation.stiffness.DOP853_STABILITY_BOUND`), DOP853: the
            period bounds the steps anyway. For stiff damped models
            (finely split flexible links with ``damping_ratio``, very stiff transmissions)
            Radau gets, in linear phases, the analytic Jacobian (Pinocchio's
            ``computeABADerivatives``; in compiled phases forward differences) and its steps
            no longer shrink with the stiffness. When DOP853's own stiffness test fires
            during a run with ``method=None``, the rest of the run continues with Radau.
            A vibration that does not die out and forces more than
            :data:`~pinext.simulation.stiffness.VIBRATION_STEPS` steps is reported at the
            start (its frequency, the steps and evaluations it costs, and what removes it),
            whatever the method.
        rtol: Relative tolerance.
        atol: Absolute tolerance.
        max_step: Largest step [s] (compiled DOP853 may stretch its last step by 1 %).
        output_dt: Sample period of the output [s]; None keeps the solver's steps. The last
            sample is at ``t_final`` even when ``output_dt`` does not divide it.
        progress: Show a tqdm progress bar with an estimate of the time left: True from the
            start, False never, None (default) once the run has lasted
            :data:`PROGRESS_DELAY` seconds.
        max_events: Stop with :class:`IntegrationError` after this many events (Zeno guard).
        dt: Step [s] of ``method="timestepping"`` (Moreau–Jean time stepping for many
            contacts, :func:`pinext.simulation.timestepping.simulate_timestepping`; rtol, atol,
            max_step and max_events do not apply to it).
        force: Run even when the start estimates a wall time above
            :data:`pinext.validation.LONG_RUN` (a lasting vibration that forces tens of
            millions of steps, a time step far too small): without it such a run is refused at
            the start, with the estimate and what shortens it.
        control_period: Sample period ``T_s`` [s] of the control law: the law is called at
            ``t_k = k T_s`` and its result held until ``t_{k+1}`` (zero-order hold, as a real
            controller and MuJoCo's ``ctrl``), and the dynamics between samples run on the
            compiled path when the phase compiles. None (default): a
            :class:`pinext.control.Controller` is sampled every
            :data:`pinext.simulation.arguments.CONTROL_PERIOD` (1 ms); a function ``u(t, x)``
            stays continuous (called at every evaluation of the right-hand side, on the
            Python path). ``0``: continuous for any law (reference runs of a Controller).
            A constant or a :class:`Schedule` is already a function of time only: a
            ``control_period`` with one is an error.

    Returns:
        The :class:`Trajectory`. ``meta["stats"]`` holds ``nfev``, ``wall_time``, ``method``
        (the one that finished the run), ``switched_to_radau_at`` (the time DOP853's stiffness
        test handed over, or None), ``spectral_radius`` (ρ of the linearised system at the
        start [1/s], when the default or DOP853 read it), ``segments`` and
        ``compiled_segments`` (how many ran on the compiled path), ``loop_events`` (the
        events a compiled loop applied itself: contact bounces, :mod:`pinext.compiled.
        impacts`), ``compiled_time`` (the
        part of ``wall_time`` [s] in compiled loops), ``control_period`` (None when
        continuous) and ``control_samples`` (calls of a sampled law).

    Raises:
        IntegrationError: The solver failed, a state became NaN or infinite, or too many events.
    """
    if method == "timestepping":
        from .timestepping import simulate_timestepping

        period = control_period_of(control, control_period)
        if period is not None:  # sampled at the first step of each period
            if isinstance(control, Controller):
                if isinstance(system_or_robot, System):
                    layout = system_or_robot.layout
                else:  # time stepping integrates no component states: q and v are the state
                    nq, nv = system_or_robot.model.nq, system_or_robot.model.nv
                    layout = {"q": slice(0, nq), "v": slice(nq, nq + nv)}
                control = as_state_law(control, layout)
            control = HeldControl(control, period, None, lazy=True)
        return simulate_timestepping(
            system_or_robot,
            t_final,
            dt=dt,
            x0=x0,
            q0=q0,
            v0=v0,
            control=control,
            output_dt=output_dt,
            progress=progress,
            force=force,
        )
    if dt is not None:
        raise InvalidParameter("dt is the step of method='timestepping' only")
    system = system_or_robot if isinstance(system_or_robot, System) else System(system_or_robot)
    chosen = method
    method = "DOP853" if method is None else method
    momentum = method == "momentum"
    if momentum:
        method = "DOP853"
    elif method not in METHODS:
        raise InvalidParameter(
            f"unknown method '{method}'; valid methods: {', '.join(METHODS)}, momentum, "
            "timestepping"
        )
    t_final = check_options(
        t_final, rtol=rtol, atol=atol, max_step=max_step, output_dt=output_dt, method=method
    )
    x = given = as_initial_state(system, x0, q0, v0)
    if not np.all(np.isfinite(x)):
        raise IntegrationError("non-finite initial state", 0.0, x)
    period = control_period_of(control, control_period)
    law: Any = checked_control(control, system, x)
    if period is not None:
        law = HeldControl(law, period, system.n_inputs)
    rho = None
    if method == "DOP853" and not momentum:
        with explained_start(system, given):
            eigenvalues = spectrum(system, x)
        rho = float(np.abs(eigenvalues).max()) if eigenvalues.size else 0.0
        report_vibration(eigenvalues, t_final, rtol, force)
        steps = t_final * rho / DOP853_STABILITY_BOUND
        if period is not None and steps <= t_final / period:
            pass  # a sampled law cuts the steps at its period, within DOP853's stability
        elif steps > STIFF_STEPS:
            advice = (
                f"the run is stiff from the start: DOP853's stability needs at least "
                f"{steps:.2g} steps for {t_final:g} s"
            )
            if chosen is None:
                method = "Radau"
                _LOG.info("%s; integrating with method='Radau'", advice)
            else:
                warnings.warn(f"{advice}; method='Radau' would not", RuntimeWarning, 2)
        elif chosen is None and rtol >= RADAU_RTOL and decaying_fast_modes(eigenvalues, t_final):
            method = "Radau"
            _LOG.info(
                "the run is stiff from the start: its fast modes die out early; integrating "
                "with method='Radau'"
            )
    options: dict[str, Any] = {"rtol": rtol, "atol": atol}
    if max_step is not None:
        options["max_step"] = max_step
    if method == "DOP853":  # the same method, stepped in compiled code
        solver = dop853.solve
    else:
        solver = solve_ivp
        options["method"] = method

    t = 0.0
    x = system.impose(t, x)
    held = law if isinstance(law, HeldControl) else None
    if held is not None:
        held.update(t, x)  # the sample at t = 0 with the imposed state
    with explained_start(system, given):
        phase = system.initial_phase(t, x, law)
    record = Recorder(system)
    bar = tqdm(
        total=float(t_final),
        unit="s",
        disable=progress is False,
        delay=PROGRESS_DELAY if progress is None else 0.0,
        desc="simulate",
        bar_format="{l_bar}{bar}| {n:.3f}/{total:.3f} s [{elapsed}<{remaining}]",
    )
    bar.step = t_final / 200  # type: ignore[attr-defined]
    stalled = 0
    restarted = False  # the previous segment ended with a restart (chart, breakpoint): same state
    jumped = False  # the previous segment ended at a control breakpoint or sample
    breakpoints = np.asarray(getattr(law, "breakpoints", ()), dtype=float)
    nfev, looped = 0, 0.0  # evaluations; wall time in compiled loops [s]
    stiff_warned = False
    switched_at = None
    segments = compiled_segments = loop_events = 0

    started = time.perf_counter()
    try:
        while True:
            if held is not None:
                held.update(t, x)  # a segment that starts at a sample time samples there
            chart = Chart(system, x, momentum)
            owned = [(c, e) for c in system.components for e in c.events(phase.get(c.name))]
            evs = [e for _, e in owned]
            fired: int | None
            restarts: list = []  # the events of a restart, after the components' (internal y)
            due = past_bound(evs, t, x)
            if due is None and jumped:  # the law jumped here: a held row's reaction may turn
                functions = event_functions(evs, chart, system, phase, law)
                due = turned(evs, functions, t, chart.to_internal(x))
                if due is not None:
                    record.close(t, x)  # the state before the event, as a located one has
            jumped = False
            if due is not None:  # a bound a hair past, a reaction turned: it fires at once
                fired, stalled, restarted = due, stalled + 1, False
            else:
                if not chart.flat:  # an anchored chart re-centres
                    restarts.append(chart_event(chart))
                upcoming = breakpoints[(breakpoints > t + 1e-12) & (breakpoints < t_final - 1e-12)]
                if held is not None and held.next_time(t) < t_final - 1e-12:
                    upcoming = np.array([held.next_time(t)])  # the next sample of the law
                if upcoming.size:
                    restarts.append(time_event(float(upcoming[0])))
                if output_dt is not None:
                    options["t_eval"] = output_times(t, t_final, output_dt)
                # DOP853's stability-bound steps for the rest of the run, when a switch may pay
                rest = None if rho is None else (t_final - t) * rho / DOP853_STABILITY_BOUND
                switchable = chosen is None and method == "DOP853" and not momentum
                switch = rest if switchable and rest is not None and rest > SWITCH_STEPS else None
                sol, on_compiled = _segment(
                    system,
                    phase,
                    chart,
                    law,
                    owned,
                    restarts,
                    float(upcoming[0]) if upcoming.size else None,
                    (t, t_final),
                    x,
                    method,
                    solver,
                    options,
                    switch,
                    None if progress is False else bar,
                    max_events + 1 - len(record.events),
                )
                segments += 1
                compiled_segments += on_compiled
                nfev += sol.nfev
                looped += getattr(sol, "loop_time", 0.0)
                if getattr(sol, "maps", None):  # bounces the compiled loop applied itself
                    loop_events += len(sol.maps)
                    t, x, phase, sol = record.mapped(sol, chart, owned, phase, t, x, restarted)
                    restarted = False
                    if len(record.events) > max_events:
                        raise IntegrationError(_cascade(record.events, 0, max_events), t, x)
                if sol.status == 2:  # DOP853's stiffness test: the rest of the run with Radau
                    t, x = record.segment(
                        sol, chart, t, x, phase, None, physical=False, continuing=restarted
                    )
                    restarted = True
                    _LOG.info(
                        "the run became stiff at t = %.6g s (DOP853's stiffness test): continuing "
                        "with method='Radau', whose steps follow the accuracy instead of the "
                        "stiffness",
                        float(np.atleast_1d(sol.t)[-1]),
                    )
                    stiff_warned = True
                    method, solver = "Radau", solve_ivp
                    options["method"] = method
                    switched_at = t
                    continue
                if getattr(sol, "stiff", False) and not stiff_warned:
                    stiff_warned = True
                    warnings.warn(
                        f"the run looks stiff from t = {t:.6g} s (DOP853's stiffness test); "
                        "method='Radau' takes steps that do not shrink with the stiffness",
                        RuntimeWarning,
                        stacklevel=2,
                    )
                if sol.status == -1:
                    _raise_if_non_finite(system, phase, chart, law, sol, _hold_hint(held))
                    t_fail = np.atleast_1d(sol.t)
                    y_fail = np.asarray(sol.y)  # the last state the solver accepted, not the start
                    raise IntegrationError(
                        f"solver failed ({sol.message}){_hold_hint(held)}",
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
                    jumped = upcoming.size > 0 and fired == len(evs) + len(restarts) - 1
                    if jumped:  # the law jumps here: the next segment starts on its new piece
                        t = max(t, float(upcoming[0]))
                    continue
            owner, event = owned[fired]
            before = x
            info: dict[str, Any] = {}
            if event.action is not None:
                trial = system.trial(t, phase, owner, law)
                try:
                    x, mode, info = event.action(t, x, phase.get(owner.name), trial)
                except ConstraintError as err:
                    involved = [
                        c.name
                        for c in system.components
                        if c is owner or c.is_constrained(phase.get(c.name))
                    ]
                    raise EventError(str(err), event.name, involved, t, x) from None
                x = system.impose(t, x)
                phase = system.settle(t, x, phase.replace(owner.name, mode), law, skip=owner)
            record.event(t, event.name, info, before, x)
            if len(record.events) > max_events or stalled > 50:
                raise IntegrationError(_cascade(record.events, stalled, max_events), t, x)
            if t >= t_final:  # an event exactly at the end: keep the state after its map
                record.point(t, x, phase)
                break
    finally:
        bar.update(max(bar.total - bar.n, 0) if t >= t_final else 0)
        bar.close()
    wall = time.perf_counter() - started
    traj = record.trajectory(law if held is None else held.applied())
    for comp in system.components:
        comp.report(traj)
    traj.meta["stats"] = {
        "nfev": int(nfev),
        "wall_time": wall,
        "method": "momentum" if momentum else method,
        "switched_to_radau_at": switched_at,
        "spectral_radius": rho,
        "segments": segments,
        "compiled_segments": compiled_segments,
        "loop_events": loop_events,
        "compiled_time": looped,
        "control_period": period,
        "control_samples": 0 if held is None else held.samples,
    }
    return traj


def _cascade(events: list[EventRecord], stalled: int, max_events: int) -> str:
    """What an event cascade is, named by its events, and what ends it."""
    recent = sorted({e.name for e in events[-20:]})
    if stalled > 50:
        what = f"{stalled} events without time advancing (a Zeno cascade of {', '.join(recent)})"
    else:
        what = f"more than max_events = {max_events} events (the last of {', '.join(recent)})"
    if all(name.startswith("limit") for name in recent):
        advice = (
            "joints on their limits that the other rows push through; start from a consistent "
            "state, or leave the limits out with joint_limits=False"
        )
    else:
        advice = (
            "a bounce that never dies out (raise the contact's rest_velocity or lower its "
            "restitution) or rows that push each other through; or raise max_events"
        )
    return f"{what}: {advice}"


def _segment(
    system: System,
    phase: Phase,
    chart: Chart,
    law: Any,
    owned: list[tuple[Component, Event]],
    restarts: list,
    breakpoint: float | None,
    span: tuple[float, float],
    x: np.ndarray,
    method: str,
    solver: Any,
    options: dict[str, Any],
    switch: float | None,
    bar: Any,
    bounces: int,
) -> tuple[Any, bool]:
    """Integrate one segment of a phase: (solver result, whether it ran compiled).

    The compiled path (:mod:`pinext.compiled`) takes the phase when its right-hand side and
    every event have a compiled form; otherwise the phase's Python right-hand side goes to
    ``solver`` (the DOP853 driver or :func:`solve_ivp`). ``switch`` (not None: DOP853's
    stability-bound steps for the rest of the run, above :data:`SWITCH_STEPS`): stop when
    DOP853's stiffness test fires (result status 2), for the caller to go on with Radau. On
    the Python path scipy's Radau
    has an analytic Jacobian only in linear phases; elsewhere it estimates it by finite
    differences and again whenever Newton stalls (an Allegro hand with its fingers stuck by
    friction: 5 980 Jacobians in 6 118 steps, 165 000 evaluations where DOP853 takes
    ~35 000), so there DOP853 keeps the run unless those steps exceed :data:`STIFF_STEPS`.
    ``bounces``: how many contact bounces the compiled loop may apply itself
    (:mod:`pinext.compiled.impacts`; the result's ``maps``).
    The Python path's event functions are the components' events, then ``restarts`` (the
    chart's re-centring, the law's next jump), in the order of the compiled path's events.
    """
    from .. import compiled  # imported here: pinext.compiled imports this package

    events = [e for _, e in owned]
    kernel = forms = None
    if method in compiled.METHODS:  # DOP853 (or Celentano's form), Radau
        kernel = compiled.phase_kernel(system, phase, chart, law, events)
    sampler = law if isinstance(law, HeldControl) else None
    if kernel is not None:  # a Reaction's row is its owner's: offset by the rows before it
        offsets = compiled.rows.row_offsets(system, phase)
        forms = compiled.compiled_events(  # a sampled law's samples: inside compiled.solve
            events,
            None if sampler is not None else breakpoint,
            [offsets.get(c.name, 0) for c, _ in owned],
            None if system.euclidean else chart.index,
            None if chart.flat else chart.anchored,  # the chart re-centres (after the events)
        )
    if kernel is not None and forms is not None:
        return compiled.solve(
            kernel,
            span,
            chart.to_internal(x),
            events=forms,
            t_eval=options.get("t_eval"),
            rtol=options["rtol"],
            atol=options["atol"],
            max_step=options.get("max_step"),
            progress=bar,
            stop_when_stiff=switch is not None,
            method=method,
            sampler=sampler,
            to_public=chart.to_public,
            bounces=bounces,
        ), True
    implicit = method in IMPLICIT
    rhs = make_rhs(system, phase, chart, law, bar, implicit)
    extra: dict[str, Any] = {}
    if implicit:
        extra["jac"] = getattr(rhs, "jac", None)
    if switch is not None and (
        switch > STIFF_STEPS or (chart.identity and fused_rhs(system, phase, law, None) is not None)
    ):
        extra["stop_when_stiff"] = True
    # without an analytic Jacobian scipy estimates one by finite differences, whose step
    # factor may overflow (a warning from scipy's num_jac a user cannot act on; a Jacobian
    # that becomes useless shows as the solver's failure, which is reported)
    finite_differences = implicit and extra.get("jac") is None
    functions = event_functions(events, chart, system, phase, law) + restarts
    with np.errstate(over="ignore") if finite_differences else contextlib.nullcontext():
        sol = solver(rhs, span, chart.to_internal(x), events=functions or None, **options, **extra)
    return sol, False


def _raise_if_non_finite(
    system: System, phase: Phase, chart: Chart, law, sol, hint: str = ""
) -> None:
    """After a solver failure: report a non-finite right-hand side at the last state."""
    t_last = float(np.atleast_1d(sol.t)[-1]) if len(np.atleast_1d(sol.t)) else 0.0
    y_last = np.asarray(sol.y)[:, -1] if np.asarray(sol.y).size else None
    if y_last is None:
        return
    rhs = make_rhs(system, phase, chart, law, None)
    h = 1e-6
    for t in (t_last, t_last + h, t_last + 10 * h):
        with np.errstate(all="ignore"):
            if not np.all(np.isfinite(rhs(t, y_last))):
                raise IntegrationError(f"non-finite acceleration{hint}", t, chart.to_public(y_last))


def _hold_hint(held: HeldControl | None) -> str:
    """What to try when a run with a sampled law fails: a law held too long is unstable."""
    if held is None:
        return ""
    return (
        f" with the control law sampled every {held.period:g} s and held in between: gains "
        "too high for that period make the held loop unstable (a PD on a joint of inertia m "
        "needs k_d T_s / m < 2); shorten control_period, lower the gains, or run the law "
        "continuously with control_period=0"
    )
