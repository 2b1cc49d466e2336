"""The run of :func:`pinext.simulation.simulate.simulate` as an object: phase by phase, each
integrated to its first event on the compiled path or with scipy, the events applied between.

:func:`~pinext.simulation.simulate.simulate` checks its arguments and chooses the method;
:class:`Run` holds the state reached, the phase, the record and the counters, and steps them
(:meth:`Run.due`, :meth:`Run.integrate`, :meth:`Run.apply`).
"""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from typing import Any

import numpy as np
from scipy.integrate import solve_ivp

from ..exceptions import ConstraintError, EventError, IntegrationError
from . import dop853
from .arguments import explained_start, output_times
from .chart import Chart, chart_event
from .component import Component, Event, Phase
from .cost import CostProbe
from .linear import fused_rhs
from .progress import bar as progress_bar
from .recorder import Recorder
from .rhs import accepted_time, event_functions, make_rhs, past_bound, time_event, turned
from .sampling import HeldControl
from .stiffness import DOP853_STABILITY_BOUND
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
#: The implicit methods, which receive an analytic Jacobian in linear phases.
IMPLICIT = ("Radau", "BDF", "LSODA")


class Run:
    """One run of :func:`simulate`, as an object: the state reached ``(t, x)`` in its ``phase``,
    the :class:`Recorder` of what has been integrated, and the run's counters.

    :meth:`go` repeats three steps until ``t_final``: :meth:`due` (an event already at its
    bound fires at once), :meth:`integrate` (one segment of the phase up to its first event,
    on the compiled path when the phase compiles), :meth:`apply` (the fired event's map and
    the modes it settles). ``method`` and ``options`` are the integrator's; DOP853's stiffness
    test may hand the rest of the run to Radau (:meth:`integrate`)."""

    def __init__(
        self,
        system: System,
        x: np.ndarray,
        given: Any,
        law: Any,
        t_final: float,
        method: str,
        options: dict[str, Any],
        *,
        momentum: bool,
        chosen: str | None,
        rho: float | None,
        output_dt: float | None,
        progress: bool | None,
        max_events: int,
        probe: tuple[str, str] | None = None,
    ) -> None:
        self.system, self.law, self.t_final = system, law, t_final
        self.probe = probe  # the stiff element and its ways out: the run's pace is judged
        self.method, self.options, self.momentum = method, options, momentum
        self.chosen, self.rho = chosen, rho  # the method asked for; ρ of the start's spectrum
        self.output_dt, self.progress, self.max_events = output_dt, progress, max_events
        self.t = 0.0
        self.x = system.impose(self.t, x)
        self.held = law if isinstance(law, HeldControl) else None
        if self.held is not None:
            self.held.update(self.t, self.x)  # the sample at t = 0 with the imposed state
        with explained_start(system, given):
            self.phase = system.initial_phase(self.t, self.x, law)
        self.record = Recorder(system)
        self.breakpoints = np.asarray(getattr(law, "breakpoints", ()), dtype=float)
        self.stalled = 0  # events in a row without time advancing
        self.restarted = False  # the last segment ended with a restart: the same state goes on
        self.jumped = False  # the last segment ended at a control breakpoint or sample
        self.finished = False
        self.nfev, self.looped = 0, 0.0  # evaluations; wall time in compiled loops [s]
        self.segments = self.compiled_segments = self.loop_events = 0
        self.stiff_warned = False
        self.switched_at: float | None = None

    @property
    def solver(self) -> Any:
        """The Python path's integrator of :attr:`method`: the DOP853 driver or solve_ivp."""
        return dop853.solve if self.method == "DOP853" else solve_ivp

    def go(self) -> Trajectory:
        """Integrate to ``t_final``; the :class:`Trajectory` with its ``meta["stats"]`` (the
        components' reports on it are :func:`simulate`'s, whose caller their warnings name)."""
        shown = progress_bar(self.progress, self.t_final, "simulate")
        shown.step = self.t_final / 200  # type: ignore[attr-defined]
        self.bar = shown if self.probe is None else CostProbe(shown, self.t, *self.probe)
        started = time.perf_counter()
        try:
            while not self.finished:
                if self.held is not None:
                    self.held.update(self.t, self.x)  # a segment that starts at a sample time
                chart = Chart(self.system, self.x, self.momentum)
                owned = [
                    (c, e) for c in self.system.components for e in c.events(self.phase.get(c.name))
                ]
                fired = self.due(chart, owned)
                if fired is None:
                    fired = self.integrate(chart, owned)
                if fired is not None:
                    self.apply(owned, fired)
        finally:
            done = self.t >= self.t_final
            shown.update(max(shown.total - shown.n, 0) if done else 0)
            shown.close()
        wall = time.perf_counter() - started
        held = self.held
        traj = self.record.trajectory(self.law if held is None else held.applied())
        traj.meta["stats"] = {
            "nfev": int(self.nfev),
            "wall_time": wall,
            "method": "momentum" if self.momentum else self.method,
            "switched_to_radau_at": self.switched_at,
            "spectral_radius": self.rho,
            "segments": self.segments,
            "compiled_segments": self.compiled_segments,
            "loop_events": self.loop_events,
            "compiled_time": self.looped,
            "control_period": None if held is None else held.period,
            "control_samples": 0 if held is None else held.samples,
        }
        return traj

    def due(self, chart: Chart, owned: list[tuple[Component, Event]]) -> int | None:
        """The event that fires where the segment would start: a bound a hair past, or (after
        the law jumped) a held row's reaction that turned; None: integrate."""
        t, x, evs = self.t, self.x, [e for _, e in owned]
        due = past_bound(evs, t, x)
        if due is None and self.jumped:  # the law jumped here: a held row's reaction may turn
            functions = event_functions(evs, chart, self.system, self.phase, self.law)
            due = turned(evs, functions, t, chart.to_internal(x))
            if due is not None:
                self.record.close(t, x)  # the state before the event, as a located one has
        self.jumped = False
        if due is not None:
            self.stalled, self.restarted = self.stalled + 1, False
        return due

    def integrate(self, chart: Chart, owned: list[tuple[Component, Event]]) -> int | None:
        """Integrate one segment from (t, x) to its first event or ``t_final``: the index of
        the component event that fired, or None (the end, a restart of the same phase, or the
        hand-over to Radau)."""
        t, x, t_final, options = self.t, self.x, self.t_final, self.options
        n_events = len(owned)
        restarts: list = []  # the events of a restart, after the components' (internal y)
        if not chart.flat:  # an anchored chart re-centres
            restarts.append(chart_event(chart))
        upcoming = self.breakpoints[
            (self.breakpoints > t + 1e-12) & (self.breakpoints < t_final - 1e-12)
        ]
        if self.held is not None and self.held.next_time(t) < t_final - 1e-12:
            upcoming = np.array([self.held.next_time(t)])  # the next sample of the law
        if upcoming.size:
            restarts.append(time_event(float(upcoming[0])))
        if self.output_dt is not None:
            options["t_eval"] = output_times(t, t_final, self.output_dt)
        # DOP853's stability-bound steps for the rest of the run, when a switch may pay
        rest = None if self.rho is None else (t_final - t) * self.rho / DOP853_STABILITY_BOUND
        switchable = self.chosen is None and self.method == "DOP853" and not self.momentum
        switch = rest if switchable and rest is not None and rest > SWITCH_STEPS else None
        sol, on_compiled = _segment(
            self.system,
            self.phase,
            chart,
            self.law,
            owned,
            restarts,
            float(upcoming[0]) if upcoming.size else None,
            (t, t_final),
            x,
            self.method,
            self.solver,
            options,
            switch,
            None if self.bar.disable and self.probe is None else self.bar,
            self.max_events + 1 - len(self.record.events),
        )
        self.segments += 1
        self.compiled_segments += on_compiled
        self.nfev += sol.nfev
        self.looped += getattr(sol, "loop_time", 0.0)
        record = self.record
        if getattr(sol, "maps", None):  # bounces the compiled loop applied itself
            self.loop_events += len(sol.maps)
            t, x, self.phase, sol = record.mapped(
                sol, chart, owned, self.phase, t, x, self.restarted
            )
            self.t, self.x, self.restarted = t, x, False
            if len(record.events) > self.max_events:
                raise IntegrationError(_cascade(record.events, 0, self.max_events), t, x)
        if sol.status == 2:  # DOP853's stiffness test: the rest of the run with Radau
            self.t, self.x = record.segment(
                sol, chart, t, x, self.phase, None, physical=False, continuing=self.restarted
            )
            self.restarted = True
            _LOG.info(
                "the run became stiff at t = %.6g s (DOP853's stiffness test): continuing "
                "with method='Radau', whose steps follow the accuracy instead of the "
                "stiffness",
                float(np.atleast_1d(sol.t)[-1]),
            )
            self.stiff_warned = True
            self.method = "Radau"
            options["method"] = self.method
            self.switched_at = self.t
            return None
        if getattr(sol, "stiff", False) and not self.stiff_warned:
            self.stiff_warned = True
            warnings.warn(
                f"the run looks stiff from t = {t:.6g} s (DOP853's stiffness test); "
                "method='Radau' takes steps that do not shrink with the stiffness",
                RuntimeWarning,
                stacklevel=4,  # simulate's caller (integrate < go < simulate)
            )
        if sol.status == -1:
            held = self.held
            _raise_if_non_finite(self.system, self.phase, chart, self.law, sol, _hold_hint(held))
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
            self.phase,
            fired,
            physical=fired is not None and fired < n_events,
            continuing=self.restarted,
        )
        self.stalled = self.stalled + 1 if t_end - t < 1e-12 else 0
        self.t, self.x = t_end, x_end
        if fired is None:
            self.finished = True
            return None
        self.restarted = fired >= n_events
        if not self.restarted:
            return fired
        # chart re-centring or control breakpoint: restart, same state
        self.finished = self.t >= t_final
        self.jumped = upcoming.size > 0 and fired == n_events + len(restarts) - 1
        if self.jumped and not self.finished:  # the next segment starts on the law's new piece
            self.t = max(self.t, float(upcoming[0]))
        return None

    def apply(self, owned: list[tuple[Component, Event]], fired: int) -> None:
        """Apply the fired event: its map of the state, the modes the system settles in, its
        record; stop at an event cascade."""
        owner, event = owned[fired]
        system, t, x = self.system, self.t, self.x
        before = x
        info: dict[str, Any] = {}
        if event.action is not None:
            trial = system.trial(t, self.phase, owner, self.law)
            try:
                x, mode, info = event.action(t, x, self.phase.get(owner.name), trial)
            except ConstraintError as err:
                involved = [
                    c.name
                    for c in system.components
                    if c is owner or c.is_constrained(self.phase.get(c.name))
                ]
                raise EventError(str(err), event.name, involved, t, x) from None
            x = system.impose(t, x)
            self.phase = system.settle(
                t, x, self.phase.replace(owner.name, mode), self.law, skip=owner
            )
        self.x = x
        record = self.record
        record.event(t, event.name, info, before, x)
        if len(record.events) > self.max_events or self.stalled > 50:
            raise IntegrationError(_cascade(record.events, self.stalled, self.max_events), t, x)
        if t >= self.t_final:  # an event exactly at the end: keep the state after its map
            record.point(t, x, self.phase)
            self.finished = True


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
    if kernel is not None:
        forms = compiled.phase_events(  # a sampled law's samples: inside compiled.solve
            system,
            phase,
            owned,
            None if sampler is not None else breakpoint,
            None if system.euclidean else chart.index,
            chart.recentring,  # the chart re-centres (after the events)
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
    rhs = make_rhs(system, phase, chart, law, None if implicit else bar, implicit)
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
    if implicit and bar is not None:  # the bar at the accepted steps (never fires: last)
        functions.append(accepted_time(bar))
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
        "too high for that period make the held loop unstable (a PD held on a joint of "
        "inertia m needs T_s < min(2 m/k_d, 2 k_d/k_p)); shorten control_period, lower "
        "the gains, or run the law continuously with control_period=0"
    )
