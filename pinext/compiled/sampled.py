"""Sampled control inside the compiled integrators: one Python call per control period, or
none for a built-in law the kernel evaluates itself (a :class:`pinext.control.JointPD`).

A control law written in Python and held between samples (:class:`pinext.simulation.sampling.
HeldControl`) is a constant for the compiled right-hand side between two sample times. The
loops here keep the integration in compiled code across the samples: each lands on the next
sample time (the step is cut there, never stepped over), asks Python for the next input
through Numba's object mode (one call: the law and the next sample time), writes it into the
kernel's input in place and resumes the same run (:func:`pinext.compiled.dop853.resume`,
:func:`pinext.compiled.radau.resume`: the step size and the integrator's memory are kept). A
call from Python into a compiled function unboxes the whole phase kernel (about 25 µs for the
Panda's); a call from compiled code into Python costs a few microseconds.

The Python side is installed per thread by :func:`pinext.compiled.path.solve`
(:data:`callback`).
"""

from __future__ import annotations

import threading

import numpy as np
from numba import objmode

from ..simulation.sampling import SAME_SAMPLE
from . import dop853 as _dop
from . import events as _events
from . import radau as _rad
from .jit import COMPILED_ONLY, cached
from .phase import pd_torques
from .spatial import helper

#: ``callback.function(t, y) -> (u, t_next)``: the input held from t for the internal state y,
#: and the next sample time [s]; set by :func:`pinext.compiled.path.solve` for its thread.
callback = threading.local()


def _sample(t: float, y: np.ndarray) -> tuple[np.ndarray, float]:
    u, t_next = callback.function(t, y)
    return np.ascontiguousarray(u, dtype=np.float64), float(t_next)


@cached()
def _python_sample(u_values, t, y):
    """The input held from the sample at t, from Python (one object-mode call: the law and
    the next sample time), into ``u_values[0]``; returns the next sample time."""
    with objmode(t_next="float64"):
        u, t_next = _sample(t, y.copy())
        u_values[0, :] = u
    return t_next


@helper
def _held_sample(P, t, y):
    """A PD law held in the kernel (:attr:`PhaseKernel.pd_held`): its torques at (t, y) into
    P.pd_u and the sample's record; returns the next sample time, as
    :meth:`pinext.simulation.sampling.HeldControl.next_time` gives it."""
    pd_torques(P, t, y, P.pd_u)
    k = P.pd_count[0]
    P.pd_times[k] = t
    for j in range(P.pd_u.size):
        P.pd_values[k, j] = P.pd_u[j]
    P.pd_count[0] = k + 1
    return (np.floor(t / P.pd_period + SAME_SAMPLE) + 1.0) * P.pd_period


@helper
def _next(P, t, y):
    """The input held from the sample at t and the next sample time: from the PD law held in
    the kernel (:func:`_held_sample`), or from Python (:func:`_python_sample`)."""
    if P.pd_held:
        return _held_sample(P, t, y)
    return _python_sample(P.u_values, t, y)


@cached(**COMPILED_ONLY)
def _turned(g, evs):
    """The first reaction past zero in its direction once the new sample is held, or -1: the
    input's jump turned a held row's reaction (or a stuck joint's friction) between two
    instants no step sees apart, so its event fires at the sample
    (:func:`pinext.simulation.rhs.turned`, the same test)."""
    for e in range(g.size):
        d = evs[7][e]
        if evs[0][e] == _events.REACTION and g[e] * d > 0.0:
            return e
    return -1


@cached()
def dop853_sampled(
    P, y, clock, t1, hmax, rtol, atol, k, st, it, t_eval, out_t, out_y, g_last, evs,
    nfev_pause, stop_when_stiff,
):  # fmt: skip
    """:func:`pinext.compiled.dop853.advance` across control samples: ``clock`` holds
    [the next sample time (or t1), the number of samples taken]. Returns advance's code when
    it is not a sample time reached before t1 (an event, a pause, the end, a failure)."""
    while True:
        code = _dop.advance(
            P, y, clock[0], hmax, rtol, atol, k, st, it, t_eval, out_t, out_y, g_last, evs,
            nfev_pause, stop_when_stiff,
        )  # fmt: skip
        if code != _dop.DONE or clock[0] >= t1:
            return code
        t_next = _next(P, clock[0], y)
        clock[1] += 1.0
        _dop.resume(P, clock[0], y, hmax, k, st, it, g_last, evs)
        e = _turned(g_last, evs)
        if e >= 0:  # its event fires at the sample: y is the state there
            st[_dop._TROOT] = clock[0]
            it[_dop._EVENT] = e
            clock[0] = min(t_next, t1)
            return _dop.EVENT
        clock[0] = min(t_next, t1)


@cached()
def radau_sampled(
    P, y, clock, t1, hmax, rtol, atol, f, J, lu_r, piv_r, lu_c, piv_c, Q, y_old, st, it,
    t_eval, out_t, out_y, g_last, evs, nfev_pause,
):  # fmt: skip
    """:func:`pinext.compiled.radau.advance` across control samples (see
    :func:`dop853_sampled`)."""
    while True:
        code = _rad.advance(
            P, y, clock[0], hmax, rtol, atol, f, J, lu_r, piv_r, lu_c, piv_c, Q, y_old, st,
            it, t_eval, out_t, out_y, g_last, evs, nfev_pause,
        )  # fmt: skip
        if code != _rad.DONE or clock[0] >= t1:
            return code
        t_next = _next(P, clock[0], y)
        clock[1] += 1.0
        _rad.resume(P, clock[0], y, hmax, f, st, it, g_last, evs)
        e = _turned(g_last, evs)
        if e >= 0:
            st[_rad._TROOT] = clock[0]
            it[_rad._EVENT] = e
            clock[0] = min(t_next, t1)
            return _rad.EVENT
        clock[0] = min(t_next, t1)
