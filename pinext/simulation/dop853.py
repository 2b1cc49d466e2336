"""Hairer's DOP853 through :class:`scipy.integrate.ode`, with solve_ivp's events and output.

:func:`scipy.integrate.solve_ivp` steps its Runge–Kutta methods in Python, which costs about
10 µs per right-hand-side evaluation on top of the evaluation itself; for a robot whose
``pin.aba`` takes 2 µs that overhead dominates the run. ``scipy.integrate.ode("dop853")`` runs
the same method (Hairer and Wanner's DOP853, the code solve_ivp's ``"DOP853"`` is ported from)
in compiled code and calls Python only for the right-hand side.

:func:`solve` wraps it with the part of solve_ivp's interface :func:`pinext.simulate` uses:
terminal events with directions (detected after every accepted step, located to machine
precision by Brent's method on re-integrations from the last accepted step), output at given
times (DOP853's dense output, built as solve_ivp builds it from the stages of the compiled
step), the evaluation count, and a result with ``t``, ``y``, ``t_events``, ``y_events``,
``status``, ``message``, ``nfev``. Exceptions raised in the right-hand side or in an event
function propagate unchanged.
"""

from __future__ import annotations

import warnings
import weakref
from types import SimpleNamespace
from typing import Any

import numpy as np
from scipy.integrate import ode
from scipy.integrate._ivp import dop853_coefficients as _COEF
from scipy.integrate._ivp.rk import Dop853DenseOutput
from scipy.optimize import brentq

_MESSAGES = {
    -1: "input is not consistent",
    -2: "larger nsteps is needed",
    -3: "step size becomes too small",
    -4: "problem is probably stiff",
}
_MAX_STEPS = 2**31 - 1
_EPS = np.finfo(float).eps


def _weakly(function):
    """``function`` (a function or a bound method) called through a weak reference: scipy's
    compiled DOP853 keeps a reference to the callbacks of its last run (its solout's argument
    list), which would keep the run, and with it the System, alive after the run has ended
    (a legged robot's System on the Python path: 370 MB a run)."""
    ref = weakref.WeakMethod(function) if hasattr(function, "__self__") else weakref.ref(function)
    return lambda *args: ref()(*args)


class _Run:
    """One integration: the wrapped right-hand side, the evaluation count, a pending error, and
    (for sampled output) the derivatives since the last accepted step."""

    def __init__(self, fun, n: int, rtol: float, atol: float, max_step: float) -> None:
        self.fun = fun
        self.nfev = 0
        self.error: BaseException | None = None
        self.nan = np.full(n, np.nan)
        self.options = dict(rtol=rtol, atol=atol, nsteps=_MAX_STEPS, max_step=max_step)
        self.history: list[np.ndarray] | None = None  # a list when stages are kept
        self.probe: ode | None = None  # the integrator of state_at, reused

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        # The compiled loop swallows exceptions; keep the first one and make the step fail.
        if self.error is not None:
            return self.nan
        self.nfev += 1
        try:
            f = self.fun(t, y)
        except BaseException as exc:  # noqa: BLE001 - re-raised by advance()
            self.error = exc
            return self.nan
        if self.history is not None:
            self.history.append(f)  # pinext's right-hand sides return a new array per call
        return f

    def integrator(self, solout=None, first_step: float = 0.0) -> ode:
        r = ode(_weakly(self.rhs)).set_integrator("dop853", first_step=first_step, **self.options)
        if solout is not None:
            r.set_solout(_weakly(solout))
        return r

    def advance(self, r: ode, t: float) -> int:
        """Integrate ``r`` to t; return the solver's status code (re-raising callback errors)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # failures are reported through the status
            r.integrate(t)
        if self.error is not None:
            raise self.error
        return r.get_return_code()

    def state_at(self, t0: float, y0: np.ndarray, t: float) -> np.ndarray:
        """The state at t from (t0, y0), t0 < t within one accepted step."""
        history, self.history = self.history, None
        # one integrator for every call: each new scipy dop853 object stays alive after the
        # run (its compiled wrapper keeps a reference to it), a leak of ~10n doubles per call
        if self.probe is None:
            self.probe = self.integrator(first_step=t - t0)
        r = self.probe
        r._integrator.first_step = t - t0  # read again by set_initial_value's reset
        r.set_initial_value(y0, t0)
        self.advance(r, t)
        self.history = history
        return r.y.copy()

    def dense_output(self, t_old: float, y_old: np.ndarray, t: float, y: np.ndarray):
        """DOP853's 7th-order interpolant over the step just accepted (scipy's, as solve_ivp
        builds it): the step's 12 stage derivatives are the last calls of the compiled loop
        (its first is the derivative at the step's start, kept from the previous step), and
        three more evaluations complete it."""
        h = t - t_old
        stages = self.history
        if stages is None:
            raise RuntimeError("dense output needs the stages (kept with events or samples)")
        k = np.empty((_COEF.N_STAGES_EXTENDED, y.size))
        k[0] = stages[0]
        k[1 : _COEF.N_STAGES + 1] = stages[-_COEF.N_STAGES :]
        history, self.history = self.history, None
        for s in range(_COEF.N_STAGES + 1, _COEF.N_STAGES_EXTENDED):
            k[s] = self.rhs(t_old + _COEF.C[s] * h, y_old + h * (_COEF.A[s, :s] @ k[:s]))
        self.history = history
        if self.error is not None:
            raise self.error
        delta = y - y_old
        f = np.empty((_COEF.INTERPOLATOR_POWER, y.size))
        f[0] = delta
        f[1] = h * k[0] - delta
        f[2] = 2 * delta - h * (k[_COEF.N_STAGES] + k[0])
        f[3:] = h * (_COEF.D @ k)
        return Dop853DenseOutput(t_old, t, y_old, f)


def _active(g_old: float, g_new: float, direction: float) -> bool:
    """solve_ivp's rule: a crossing in the event's direction between two accepted steps."""
    up = g_old <= 0 <= g_new
    down = g_old >= 0 >= g_new
    return up if direction > 0 else down if direction < 0 else up or down


def _beyond(g_old: float, g: float, direction: float) -> bool:
    """Whether g is strictly past zero in the event's direction from g_old."""
    if direction < 0:
        return g_old > 0.0 > g
    if direction > 0:
        return g_old < 0.0 < g
    return g_old * g < 0.0


def _earliest(events, g_last, state, locate, t_root: float, crossed: int) -> tuple[float, int]:
    """The first root of all events in the step: an event that went through zero and back
    within the step (no sign change at the step's ends) is past zero at the root found, and
    its own root, earlier (``locate(g, t_root)``: its root before t_root), is the event (a
    joint that touched its stop while another row's event ended the step would otherwise
    start the next segment beyond it)."""
    again = True
    while again:
        again = False
        y_root = state(t_root)
        for j, g in enumerate(events):
            if j != crossed and _beyond(g_last[j], g(t_root, y_root), getattr(g, "direction", 0)):
                root = locate(g, t_root)
                if root < t_root:
                    t_root, crossed, again = root, j, True
                    break
    return t_root, crossed


def solve(
    fun,
    t_span: tuple[float, float],
    y0: np.ndarray,
    *,
    t_eval: np.ndarray | None = None,
    events=None,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    max_step: float | None = None,
    stop_when_stiff: bool = False,
) -> SimpleNamespace:
    """Integrate ``y' = fun(t, y)`` over ``t_span`` with DOP853, stopping at the first event.

    Args:
        fun: Right-hand side ``fun(t, y) -> dy``, returning a new array at each call.
        t_span: (t0, t1), t0 < t1.
        y0: Initial state.
        t_eval: Sorted output times within t_span, interpolated with DOP853's dense output;
            None outputs every accepted step.
        events: Event functions ``g(t, y)`` with a ``direction`` attribute; all are terminal.
        rtol: Relative tolerance.
        atol: Absolute tolerance.
        max_step: Largest step (None: unbounded).
        stop_when_stiff: End the run at the last accepted step when DOP853's stiffness test
            fires (status 2) instead of going on.

    Returns:
        A namespace like solve_ivp's result: ``t`` (every accepted step and the event, or the
        output times up to the event), ``y`` (n × k), ``t_events``, ``y_events``, ``status``
        (0 end reached, 1 event, 2 stopped by the stiffness test, -1 failure), ``message``,
        ``nfev``; and ``stiff``: DOP853's stiffness test fired.
    """
    t0, t1 = float(t_span[0]), float(t_span[1])
    y0 = np.array(y0, dtype=float)
    events = list(events or ())
    run = _Run(fun, y0.size, rtol, atol, float(max_step or 0.0))
    times = np.asarray([] if t_eval is None else t_eval, dtype=float)
    sampled = t_eval is not None
    pending = [float(t) for t in times if t0 < t <= t1]
    starts = not sampled or (times.size and times[0] == t0)
    ts: list[float] = [t0] if starts else []
    ys: list[np.ndarray] = [y0.copy()] if starts else []
    last: list[Any] = [t0, y0.copy()]  # the last accepted step's end: (t, y)
    g_last = [g(t0, y0) for g in events]
    crossing: list[int] = []
    crossing_step: list[Any] = []  # (t, y) at the end of the step in which an event crossed

    def sample(t_old: float, y_old: np.ndarray, t: float, y: np.ndarray, until: float) -> None:
        """Output the pending times up to ``until`` from the step (t_old, t]."""
        if not pending or pending[0] > until:
            return
        interpolant = run.dense_output(t_old, y_old, t, y)
        while pending and pending[0] <= until:
            tk = pending.pop(0)
            ts.append(tk)
            ys.append(y.copy() if tk == t else interpolant(tk))

    def solout(t: float, y: np.ndarray) -> int:
        if t == last[0]:  # DOP853 reports the initial point of every run
            return 0
        if events:
            try:
                g_new = [g(t, y) for g in events]
            except BaseException as exc:  # noqa: BLE001 - re-raised by advance()
                run.error = exc
                return -1
            for i, (g, old, new) in enumerate(zip(events, g_last, g_new, strict=True)):
                if _active(old, new, getattr(g, "direction", 0)):
                    crossing.append(i)
            if crossing:
                crossing_step[:] = [t, y.copy()]
                return -1
            g_last[:] = g_new
        try:
            sample(last[0], last[1], t, y, t)
        except BaseException as exc:  # noqa: BLE001 - re-raised by advance()
            run.error = exc
            return -1
        if run.history is not None:
            run.history = run.history[-1:]  # the next step starts from this derivative
        if not sampled:
            ts.append(t)
            ys.append(y.copy())
        last[:] = [t, y.copy()]
        return 0

    code, stiff = 1, False
    while t1 - last[0] > 4 * _EPS * max(abs(t1), 1.0) and not crossing:
        run.history = [] if sampled or events else None
        r = run.integrator(solout)
        r.set_initial_value(last[1], last[0])
        code = run.advance(r, t1)
        if code != -4:
            break
        stiff = True  # DOP853's stiffness test stops the run; solve_ivp would go on: so do we
        if stop_when_stiff:
            break
    status = -1 if code < 0 else 0
    if code == -4 and stop_when_stiff:
        status = 2
    t_events = [np.empty(0) for _ in events]
    y_events = [np.empty((0, y0.size)) for _ in events]
    if crossing:
        status = 1
        (ta, ya), (tb, yb) = last, crossing_step
        interpolant = run.dense_output(ta, ya, tb, yb)

        integrated: dict[float, np.ndarray] = {ta: ya, tb: yb}

        def state(t: float) -> np.ndarray:  # the step integrated from ta to t
            if t not in integrated:
                integrated[t] = run.state_at(ta, ya, t)
            return integrated[t]

        def dense_state(t: float) -> np.ndarray:  # the step's dense output (7th order)
            return yb if t == tb else interpolant(t) if t > ta else ya

        def dense_root(g, end: float) -> float:
            """g's root in (ta, end] on the dense output (as solve_ivp locates events), or
            the end where the dense output shows no sign change."""
            dense = lambda t: g(t, dense_state(t))  # noqa: E731
            if np.sign(dense(ta)) * np.sign(dense(end)) < 0:
                return brentq(dense, ta, end, xtol=4 * _EPS, rtol=4 * _EPS)
            return end

        def root(g, end: float) -> float:
            """g's root in (ta, end] on the integrated states, bracketed first on the step's
            dense output (a few integrations instead of one per iterate of Brent's method
            over the whole step: tiago spent 3 400 evaluations on 5e-9 s)."""
            exact = lambda t: g(t, state(t))  # noqa: E731
            t_d = dense_root(g, end)
            for width in (1e-6 * (end - ta), 1e-3 * (end - ta)):
                lo, hi = max(ta, t_d - width), min(end, t_d + width)
                if np.sign(exact(lo)) * np.sign(exact(hi)) < 0:
                    return brentq(exact, lo, hi, xtol=4 * _EPS, rtol=4 * _EPS)
            if np.sign(exact(ta)) * np.sign(exact(end)) < 0:
                return brentq(exact, ta, end, xtol=4 * _EPS, rtol=4 * _EPS)
            return end  # the end crossed, the integration's rounding did not: the end

        # the first root on the dense output, the state integrated to it; another event past
        # zero there (a tie within the rounding of the dense output against the integration)
        # has its root on the integrated states (:func:`pinext.compiled.dop853.advance`
        # locates events the same way)
        t_root, i = min((dense_root(events[k], tb), k) for k in crossing)
        t_root, i = _earliest(events, g_last, dense_state, dense_root, t_root, i)
        t_root, i = _earliest(events, g_last, state, root, t_root, i)
        y_root = state(t_root).copy()
        t_events[i] = np.array([t_root])
        y_events[i] = y_root[None, :]
        if sampled:
            t_cross, y_cross = crossing_step
            sample(ta, ya, t_cross, y_cross, t_root)
        else:
            ts.append(t_root)
            ys.append(y_root)
    elif status == -1 and sampled and (not ts or ts[-1] < last[0]):
        ts.append(last[0])  # the last good state, for the caller's diagnosis
        ys.append(last[1])
    y = np.array(ys).T if ys else np.empty((y0.size, 0))
    return SimpleNamespace(
        t=np.array(ts),
        y=y,
        t_events=t_events if events else None,
        y_events=y_events if events else None,
        status=status,
        message=_MESSAGES.get(code, f"solver status {code}") if status == -1 else "success",
        nfev=run.nfev,
        stiff=stiff,
    )
