"""Hairer's DOP853 through :class:`scipy.integrate.ode`, with solve_ivp's events.

:func:`scipy.integrate.solve_ivp` steps its Runge–Kutta methods in Python, which costs about
10 µs per right-hand-side evaluation on top of the evaluation itself; for a robot whose
``pin.aba`` takes 2 µs that overhead dominates the run. ``scipy.integrate.ode("dop853")`` runs
the same method (Hairer and Wanner's DOP853, the code solve_ivp's ``"DOP853"`` is ported from)
in compiled code and calls Python only for the right-hand side.

:func:`solve` wraps it with the part of solve_ivp's interface :func:`pinext.simulate` uses:
terminal events with directions (detected after every accepted step, located to machine
precision by Brent's method on re-integrations from the last accepted step), the evaluation
count, and a result with ``t``, ``y``, ``t_events``, ``y_events``, ``status``, ``message``,
``nfev``. Output is every accepted step (sampled output, ``t_eval``, needs the dense output that
only solve_ivp exposes). Exceptions raised in the right-hand side or in an event function
propagate unchanged.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
from scipy.integrate import ode
from scipy.optimize import brentq

_MESSAGES = {
    -1: "input is not consistent",
    -2: "larger nsteps is needed",
    -3: "step size becomes too small",
    -4: "problem is probably stiff",
}
_MAX_STEPS = 2**31 - 1
_EPS = np.finfo(float).eps


class _Run:
    """One integration: the wrapped right-hand side, the evaluation count, a pending error."""

    def __init__(self, fun, n: int, rtol: float, atol: float, max_step: float) -> None:
        self.fun = fun
        self.nfev = 0
        self.error: BaseException | None = None
        self.nan = np.full(n, np.nan)
        self.options = dict(rtol=rtol, atol=atol, nsteps=_MAX_STEPS, max_step=max_step)

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        # The compiled loop swallows exceptions; keep the first one and make the step fail.
        if self.error is not None:
            return self.nan
        self.nfev += 1
        try:
            return self.fun(t, y)
        except BaseException as exc:  # noqa: BLE001 - re-raised by advance()
            self.error = exc
            return self.nan

    def integrator(self, solout=None, first_step: float = 0.0) -> ode:
        r = ode(self.rhs).set_integrator("dop853", first_step=first_step, **self.options)
        if solout is not None:
            r.set_solout(solout)
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
        r = self.integrator(first_step=t - t0)
        r.set_initial_value(y0, t0)
        self.advance(r, t)
        return r.y.copy()


def _active(g_old: float, g_new: float, direction: float) -> bool:
    """solve_ivp's rule: a crossing in the event's direction between two accepted steps."""
    up = g_old <= 0 <= g_new
    down = g_old >= 0 >= g_new
    return up if direction > 0 else down if direction < 0 else up or down


def solve(
    fun,
    t_span: tuple[float, float],
    y0: np.ndarray,
    *,
    events=None,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    max_step: float | None = None,
) -> SimpleNamespace:
    """Integrate ``y' = fun(t, y)`` over ``t_span`` with DOP853, stopping at the first event.

    Args:
        fun: Right-hand side ``fun(t, y) -> dy``.
        t_span: (t0, t1), t0 < t1.
        y0: Initial state.
        events: Event functions ``g(t, y)`` with a ``direction`` attribute; all are terminal.
        rtol: Relative tolerance.
        atol: Absolute tolerance.
        max_step: Largest step (None: unbounded).

    Returns:
        A namespace like solve_ivp's result: ``t`` (every accepted step, and the event),
        ``y`` (n × k), ``t_events``, ``y_events``, ``status`` (0 end reached, 1 event,
        -1 failure), ``message``, ``nfev``; and ``stiff``: DOP853's stiffness test fired (the
        run went on regardless).
    """
    t0, t1 = float(t_span[0]), float(t_span[1])
    y0 = np.array(y0, dtype=float)
    events = list(events or ())
    run = _Run(fun, y0.size, rtol, atol, float(max_step or 0.0))
    ts, ys = [t0], [y0.copy()]
    g_last = [g(t0, y0) for g in events]
    crossing: list[int] = []

    def solout(t: float, y: np.ndarray) -> int:
        if t == ts[-1]:  # DOP853 reports the initial point too
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
                return -1
            g_last[:] = g_new
        ts.append(t)
        ys.append(y.copy())
        return 0

    code, stiff = 1, False
    while t1 - ts[-1] > 4 * _EPS * max(abs(t1), 1.0) and not crossing:
        r = run.integrator(solout)
        r.set_initial_value(ys[-1], ts[-1])
        code = run.advance(r, t1)
        if code != -4:
            break
        stiff = True  # DOP853's stiffness test stops the run; solve_ivp would go on: so do we
    status = -1 if code < 0 else 0
    t_events = [np.empty(0) for _ in events]
    y_events = [np.empty((0, y0.size)) for _ in events]
    if crossing:
        status = 1
        ta, ya, tb = ts[-1], ys[-1], r.t

        def state(t: float) -> np.ndarray:
            return run.state_at(ta, ya, t) if t > ta else ya

        roots = []
        for i in crossing:
            residual = lambda t, g=events[i]: g(t, state(t))  # noqa: E731
            roots.append((brentq(residual, ta, tb, xtol=4 * _EPS, rtol=4 * _EPS), i))
        t_root, i = min(roots)
        y_root = state(t_root).copy()
        t_events[i] = np.array([t_root])
        y_events[i] = y_root[None, :]
        ts.append(t_root)
        ys.append(y_root)
    return SimpleNamespace(
        t=np.array(ts),
        y=np.array(ys).T,
        t_events=t_events if events else None,
        y_events=y_events if events else None,
        status=status,
        message=_MESSAGES.get(code, f"solver status {code}") if status == -1 else "success",
        nfev=run.nfev,
        stiff=stiff,
    )
