"""DOP853 in compiled code: Hairer's step control, dense output and event location.

A line-by-line port of ``DP86CO`` and ``HINIT853`` of Hairer, Nørsett & Wanner's ``dop853.f``
(Hairer, Nørsett & Wanner 1993, *Solving Ordinary Differential Equations I*, §II.10) with the
defaults ``scipy.integrate.ode("dop853")`` passes (safety 0.9, step ratio within [0.3, 6],
β = 0, stiffness test every 1000 accepted steps, 15 positive tests mean stiff), so that the
compiled run takes the same steps as :mod:`pinext.simulation.dop853` up to rounding. The
right-hand side is the compiled one of :mod:`pinext.compiled.phase`; the loop never returns to
Python except to hand over full output buffers, to let a progress bar move, or at an event.

Events are the compiled forms of :class:`pinext.simulation.component.Event`
(:attr:`Event.compiled`), laid out and evaluated by :mod:`pinext.compiled.events` (joint stops,
the separation test of a stop just left, the reaction of a held row, a control breakpoint); the
loop only watches their signs. A crossing between two accepted steps is located by Brent's
method, to 4 ε, on the step's 7th-order dense output, as ``solve_ivp`` does (three evaluations
for the interpolant, at most one per iteration); the state at the root is then integrated from
the last accepted point (one DOP853 step, as :mod:`pinext.simulation.dop853` gives it). The
roots agree with the Python path's, which integrates at every iteration, to the interpolant's
error (1e-12 s on the Panda's joint-stop and friction events).

A run that reaches ``t_end`` lands on it exactly and can be resumed from there with new inputs
(:func:`resume`: a control sample, :mod:`pinext.compiled.sampled`); the step proposed before
the last step was cut to land on ``t_end`` is kept for the next one.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.integrate._ivp import dop853_coefficients as _coef

from .events import DISTANCES, LEAVING, REACTION, TIME, _event, events_at, values_at
from .jit import cached
from .phase import rhs
from .spatial import helper, kernel

__all__ = ["DISTANCES", "LEAVING", "REACTION", "TIME", "events_at"]

A = np.ascontiguousarray(_coef.A, dtype=np.float64)
B = np.ascontiguousarray(_coef.B, dtype=np.float64)
C = np.ascontiguousarray(_coef.C, dtype=np.float64)
D = np.ascontiguousarray(_coef.D, dtype=np.float64)
# Fortran's error weights: ER (5th order) on stages 1, 6..12; BHH (3rd) on 1, 9, 12
ER = np.array(
    [
        0.1312004499419488073250102996e-01,
        0.0,
        0.0,
        0.0,
        0.0,
        -0.1225156446376204440720569753e01,
        -0.4957589496572501915214079952e00,
        0.1664377182454986536961530415e01,
        -0.3503288487499736816886487290e00,
        0.3341791187130174790297318841e00,
        0.8192320648511571246570742613e-01,
        -0.2235530786388629525884427845e-01,
    ]
)
BHH1, BHH2, BHH3 = (
    0.244094488188976377952755905512,
    0.733846688281611857341361741547,
    0.220588235294117647058823529412e-01,
)
SAFE, FAC1, FAC2, EXPO1 = 0.9, 0.3, 6.0, 1.0 / 8.0
#: Accepted steps between two stiffness tests (the code's default; 1 when a stiff run should
#: switch methods as soon as the test says so).
NSTIFF = 1000
UROUND = 2.220446049250313e-16
EPS = np.finfo(np.float64).eps

# event kinds: pinext.compiled.events (re-exported for the driver)
# codes returned by advance()
DONE, EVENT, PAUSE, STIFF, FAILED_STEPS, FAILED_SMALL, FAILED_NAN = 0, 1, 2, 3, -2, -3, -5

# integer state: it[...]
# _START: 1 until the run's first advance() has started it (st[_T] holds t0)
# _PENDING: the last accepted step's samples did not all fit in the output buffer: the rest
# come from its own interpolant (kept in k[_F:], st[_XOLD:]) at the next call, which then goes
# on (CONTINUE) or returns what the step returned (EVENT, DONE); it holds 1 + that code
(
    _NACCPT, _NSTEP, _IASTI, _NONSTI, _REJECT, _NFEV, _STIFF, _EVENT, _NOUT, _NSAMPLE, _NSTIFF,
    _START, _PENDING,
) = range(13)  # fmt: skip
#: Length of the integer state ``it``.
N_INT = 13
# float state: st[...]; _HFREE: the step proposed before the last one was cut to land on t_end;
# _XOLD, _HSTEP, _XNEW, _UNTIL: the pending step's start, size, end and last sample time
_T, _H, _FACOLD, _HLAMB, _TROOT, _HFREE, _XOLD, _HSTEP, _XNEW, _UNTIL = range(10)
#: Length of the float state ``st``.
N_FLOAT = 10
#: Rows of the stage array ``k`` a run keeps between calls: the 16 stages of a step and its
#: dense output, then a pending step's interpolant (7 rows from _F), its start and end states.
_F, _YOLD, _YNEW = 16, 23, 24
K_ROWS = 25
#: The pending step's code after its samples: go on, or return EVENT or DONE.
_CONTINUE = 3


class Locator(NamedTuple):
    """The workspace of an event's location, made once per :func:`advance` call, so that
    the location's functions allocate nothing and run without Numba's reference counting (a
    call with NRT counts every array of the phase kernel in and out, about 2 µs)."""

    f0: np.ndarray  # (n,) f at the step's start (advance's k[0])
    work: np.ndarray  # (16, n) _state_at's stages (0..12), y1, y_new and y
    it: np.ndarray  # advance's integer state: _state_at counts its evaluations in it[_NFEV]
    s: np.ndarray  # (8,) brent_step's state
    values: np.ndarray  # (events,) the events at a root
    out: np.ndarray  # (n,) an integrated state at a trial root


@kernel
def _stages(P, t, y, h, k, y1, n_stages):
    """Stages 2..n_stages of a step of size h from (t, y), k[0] = f(t, y) given."""
    n = y.size
    for s in range(1, n_stages):
        for i in range(n):
            if s == 1:  # the C code's order of operations for stage 2: (h a21) k1
                y1[i] = y[i] + h * A[1, 0] * k[0, i]
                continue
            acc = 0.0
            for j in range(s):
                acc += A[s, j] * k[j, i]
            y1[i] = y[i] + h * acc
        rhs(P, t + C[s] * h, y1, k[s])


@kernel
def _step(P, t, y, h, k, y1, y_new, rtol, atol):
    """One DOP853 step of size h (12 stages): y_new and the scaled error estimate."""
    n = y.size
    _stages(P, t, y, h, k, y1, 12)
    err = 0.0
    err2 = 0.0
    for i in range(n):
        incr = 0.0
        for j in range(12):
            incr += B[j] * k[j, i]
        y_new[i] = y[i] + h * incr
        sk = atol + rtol * max(abs(y[i]), abs(y_new[i]))
        e3 = incr - BHH1 * k[0, i] - BHH2 * k[8, i] - BHH3 * k[11, i]
        err2 += (e3 / sk) ** 2
        e5 = 0.0
        for j in range(12):
            e5 += ER[j] * k[j, i]
        err += (e5 / sk) ** 2
    deno = err + 0.01 * err2
    if deno <= 0.0:
        deno = 1.0
    return abs(h) * err * np.sqrt(1.0 / (n * deno))


@kernel
def _hinit(P, t, y, t_end, k, y1, hmax, rtol, atol):
    """HINIT853: the initial step guess; k[0] = f(t, y) given, k[1] is overwritten."""
    n = y.size
    dnf = 0.0
    dny = 0.0
    for i in range(n):
        sk = atol + rtol * abs(y[i])
        dnf += (k[0, i] / sk) ** 2
        dny += (y[i] / sk) ** 2
    if dnf <= 1e-10 or dny <= 1e-10:
        h = 1.0e-6
    else:
        h = np.sqrt(dny / dnf) * 0.01
    h = min(h, hmax)
    for i in range(n):
        y1[i] = y[i] + h * k[0, i]
    rhs(P, t + h, y1, k[1])
    der2 = 0.0
    for i in range(n):
        sk = atol + rtol * abs(y[i])
        der2 += ((k[1, i] - k[0, i]) / sk) ** 2
    der2 = np.sqrt(der2) / h
    der12 = max(abs(der2), np.sqrt(dnf))
    if der12 <= 1e-15:
        h1 = max(1.0e-6, abs(h) * 1.0e-3)
    else:
        h1 = (0.01 / der12) ** (1.0 / 8.0)
    return min(100 * abs(h), h1, hmax)


@kernel
def start(P, t0, y0, t_end, hmax, first_step, rtol, atol, k, st, it, g_last, evs):
    """Initialise a run at (t0, y0): f(t0, y0) in k[0], the first step in st (HINIT853), the
    event functions' values in g_last (k[1] and k[13] are overwritten)."""
    y1 = k[13]
    rhs(P, t0, y0, k[0])
    values_at(P, t0, y0, evs, g_last)
    it[_NFEV] += 2
    st[_T] = t0
    st[_H] = first_step if first_step > 0.0 else _hinit(P, t0, y0, t_end, k, y1, hmax, rtol, atol)
    st[_FACOLD] = 1.0e-4
    st[_HLAMB] = 0.0
    it[_IASTI] = 0
    it[_NONSTI] = 0
    it[_REJECT] = 0
    it[_NACCPT] = 0


@kernel
def resume(P, t, y, hmax, k, st, it, g_last, evs):
    """Continue a run at (t, y) after its inputs changed (a new control sample held from t):
    f(t, y) again in k[0] (the FSAL stage belongs to the old inputs), the event functions
    again (a reaction depends on the inputs); the step size, its controller's memory and the
    stiffness test's counters are kept, so the run goes on as if it had never stopped."""
    rhs(P, t, y, k[0])
    values_at(P, t, y, evs, g_last)
    it[_NFEV] += 1
    st[_T] = t
    st[_H] = min(st[_H], hmax)
    it[_REJECT] = 0


@kernel
def _dense(P, t_old, y_old, h, y_new, k, y1, f):
    """The 7th-order interpolant's coefficients over an accepted step (as scipy's
    Dop853DenseOutput builds them): k[12] = f(t_old + h, y_new) given, three more stages."""
    n = y_old.size
    for s in range(13, 16):
        for i in range(n):
            acc = 0.0
            for j in range(s):
                acc += A[s, j] * k[j, i]
            y1[i] = y_old[i] + h * acc
        rhs(P, t_old + C[s] * h, y1, k[s])
    for i in range(n):
        delta = y_new[i] - y_old[i]
        f[0, i] = delta
        f[1, i] = h * k[0, i] - delta
        f[2, i] = 2 * delta - h * (k[12, i] + k[0, i])
        for r in range(4):
            acc = 0.0
            for j in range(16):
                acc += D[r, j] * k[j, i]
            f[3 + r, i] = h * acc


@kernel
def _interpolate(f, t_old, h, y_old, t, out):
    x = (t - t_old) / h
    n = y_old.size
    for i in range(n):
        acc = 0.0
        for r in range(6, -1, -1):
            acc += f[r, i]
            if (6 - r) % 2 == 0:
                acc *= x
            else:
                acc *= 1.0 - x
        out[i] = acc + y_old[i]


@kernel
def record(t, y, out_t, out_y, it, slot):
    """Append the sample (t, y) to the output buffers; ``it[slot]`` counts the samples."""
    o = it[slot]
    out_t[o] = t
    for i in range(y.size):
        out_y[o, i] = y[i]
    it[slot] += 1


@kernel
def _samples(f, x_old, h, y_old, x_new, y_new, until, t_eval, out_t, out_y, it):
    """Output the times t_eval[it[_NSAMPLE]:] up to ``until`` from the step (x_old, x_new]
    (its interpolant ``f``; y_new itself at x_new) while the buffer has room; whether all
    were output."""
    capacity = out_t.size
    ns = it[_NSAMPLE]
    while ns < t_eval.size and t_eval[ns] <= until:
        if it[_NOUT] >= capacity:
            it[_NSAMPLE] = ns
            return False
        o = it[_NOUT]
        out_t[o] = t_eval[ns]
        if t_eval[ns] == x_new:
            for i in range(y_new.size):
                out_y[o, i] = y_new[i]
        else:
            _interpolate(f, x_old, h, y_old, t_eval[ns], out_y[o])
        it[_NOUT] += 1
        ns += 1
    it[_NSAMPLE] = ns
    return True


@kernel
def _defer(k, f, x_old, h, y_old, x_new, y_new, until, st, it, code):
    """Keep the step's interpolant for the samples the buffer could not take; the next call
    outputs them first, then returns ``code`` (or goes on: _CONTINUE)."""
    for i in range(y_old.size):
        for r in range(7):
            k[_F + r, i] = f[r, i]
        k[_YOLD, i] = y_old[i]
        k[_YNEW, i] = y_new[i]
    st[_XOLD] = x_old
    st[_HSTEP] = h
    st[_XNEW] = x_new
    st[_UNTIL] = until
    it[_PENDING] = 1 + code


@kernel
def _active(g_old, g_new, direction):
    up = g_old <= 0.0 <= g_new
    down = g_old >= 0.0 >= g_new
    if direction > 0:
        return up
    if direction < 0:
        return down
    return up or down


@kernel
def _beyond(g_old, g, direction):
    """Whether g is strictly past zero in the event's direction from g_old (an event that
    crossed since g_old was taken)."""
    if direction < 0:
        return g_old > 0.0 and g < 0.0
    if direction > 0:
        return g_old < 0.0 and g > 0.0
    return g_old * g < 0.0


@helper
def _copy(dst, src):
    """dst[:] = src, element by element (a slice assignment needs Numba's runtime)."""
    for i in range(src.size):
        dst[i] = src[i]


@kernel
def _state_at(P, ta, ya, t, rtol, atol, hmax, out, loc):
    """The state at t from (ta, ya), ta < t inside one accepted step: DOP853 from ta with the
    first step t − ta (a rejected trial step shrinks as in the main loop), f(ta, ya) given in
    ``loc.f0``; its evaluations are counted in ``loc.it[_NFEV]``."""
    work = loc.work
    k = work[:13]
    y1, y_new, y = work[13], work[14], work[15]
    _copy(k[0], loc.f0)
    _copy(y, ya)
    x = ta
    h = t - ta
    while True:
        last = False
        if x + 1.01 * h - t > 0.0:
            h = t - x
            last = True
        err = _step(P, x, y, h, k, y1, y_new, rtol, atol)
        loc.it[_NFEV] += 11
        fac11 = err**EXPO1
        fac = max(1.0 / FAC2, min(1.0 / FAC1, fac11 / SAFE))
        if err <= 1.0:
            if last:
                break
            rhs(P, x + h, y_new, k[0])
            loc.it[_NFEV] += 1
            _copy(y, y_new)
            x = x + h
            h = min(h / fac, hmax)
        else:
            h = h / min(1.0 / FAC1, 1.0 / FAC1 / SAFE)
    _copy(out, y_new)


@kernel
def _dense_residual(P, e, t, ta, h, ya, f, tmp, scratch, evs):
    """Event e at t on the accepted step's dense output (ta, h, ya, f)."""
    _interpolate(f, ta, h, ya, t, tmp)
    return _event(P, e, t, tmp, evs, scratch)


@kernel
def brent_step(s):
    """One iteration of scipy's brentq (its C code; xtol = rtol = 4 ε) in reverse
    communication, so that each integrator evaluates its own residual. ``s`` holds
    [xpre, xcur, xblk, fpre, fcur, fblk, spre, scur] with ``fcur`` the residual at ``xcur``
    (start: [a, b, 0, f(a), f(b), 0, 0, 0], f(a) f(b) < 0). Returns (done, x): the root, or
    the next point, whose residual the caller writes to s[4]."""
    xtol = 4 * EPS
    rtol_b = 4 * EPS
    xpre, xcur, xblk, fpre, fcur, fblk, spre, scur = s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
    if fpre != 0 and fcur != 0 and (fpre > 0) != (fcur > 0):
        xblk = xpre
        fblk = fpre
        spre = scur = xcur - xpre
    if abs(fblk) < abs(fcur):
        xpre = xcur
        xcur = xblk
        xblk = xpre
        fpre = fcur
        fcur = fblk
        fblk = fpre
    delta = (xtol + rtol_b * abs(xcur)) / 2
    sbis = (xblk - xcur) / 2
    if fcur == 0 or abs(sbis) < delta:
        return True, xcur
    if abs(spre) > delta and abs(fcur) < abs(fpre):
        if xpre == xblk:
            stry = -fcur * (xcur - xpre) / (fcur - fpre)
        else:
            dpre = (fpre - fcur) / (xpre - xcur)
            dblk = (fblk - fcur) / (xblk - xcur)
            stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
        if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):
            spre = scur
            scur = stry
        else:
            spre = sbis
            scur = sbis
    else:
        spre = sbis
        scur = sbis
    xpre = xcur
    fpre = fcur
    if abs(scur) > delta:
        xcur += scur
    elif sbis > 0:
        xcur += delta
    else:
        xcur -= delta
    s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7] = xpre, xcur, xblk, fpre, fcur, fblk, spre, scur
    return False, xcur


@kernel
def _brentq(P, e, xa, xb, ta, h, ya, f, tmp, scratch, evs, loc):
    """The event's root in [xa, xb] (:func:`brent_step`) on the dense output of the accepted
    step from (ta, ya) (7th order, as solve_ivp locates events; the state at the root is then
    integrated from ta, :func:`_state_at`)."""
    fa = _dense_residual(P, e, xa, ta, h, ya, f, tmp, scratch, evs)
    fb = _dense_residual(P, e, xb, ta, h, ya, f, tmp, scratch, evs)
    return _root(P, e, xa, xb, fa, fb, ta, h, ya, f, False, 0.0, 0.0, 0.0, tmp, scratch, evs, loc)


@kernel
def _root(P, e, xa, xb, fa, fb, ta, h, ya, f, exact, rtol, atol, hmax, out, scratch, evs, loc):
    """Brent's iterations (:func:`brent_step`) for the event's root in [xa, xb] from the
    residuals fa, fb at its ends, on the step's dense output or, ``exact``, on the states
    integrated from (ta, ya) (:func:`_exact`). No bracket left (a residual at rounding level,
    recomputed at the ends): the event at xb, as the caller does."""
    if fa == 0:
        return xa
    if fb == 0 or (fa > 0) == (fb > 0):
        return xb
    s = loc.s
    s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7] = xa, xb, 0.0, fa, fb, 0.0, 0.0, 0.0
    x = xb
    for _ in range(100):
        done, x = brent_step(s)
        if done:
            return x
        if exact:
            s[4] = _exact(P, e, ta, ya, x, rtol, atol, hmax, out, scratch, evs, loc)
        else:
            s[4] = _dense_residual(P, e, x, ta, h, ya, f, out, scratch, evs)
    return x


@kernel
def _earliest(P, ta, h, ya, f, t_root, crossed, g_last, tmp, evs, scratch, loc):
    """The first root of all events in the step from (ta, ya): an event that went through
    zero and back within the step (no sign change at the step's ends) is past zero at the
    root found, and its own root, earlier, is the event (a joint that touched its stop while
    another row's event ended the step would otherwise start the next segment beyond it)."""
    values = loc.values
    again = True
    while again:
        again = False
        _interpolate(f, ta, h, ya, t_root, tmp)
        events_at(P, t_root, tmp, evs, values, scratch)
        for e in range(g_last.size):
            if e != crossed and _beyond(g_last[e], values[e], evs[7][e]):
                tr = _brentq(P, e, ta, t_root, ta, h, ya, f, tmp, scratch, evs, loc)
                if tr < t_root:
                    t_root = tr
                    crossed = e
                    again = True
                    break
    return t_root, crossed


@kernel
def _exact(P, e, ta, ya, t, rtol, atol, hmax, out, scratch, evs, loc):
    """Event e at t on the state integrated from (ta, ya) (:func:`_state_at`), in ``out``."""
    if t > ta:
        _state_at(P, ta, ya, t, rtol, atol, hmax, out, loc)
    else:
        _copy(out, ya)
    return _event(P, e, t, out, evs, scratch)


@kernel
def _exact_root(P, e, ta, ya, end, h, f, rtol, atol, hmax, out, tmp, scratch, evs, loc):
    """Event e's root in (ta, end] on the integrated states, bracketed first on the step's
    dense output (:func:`pinext.simulation.dop853.solve`'s ``root``: a few integrations
    instead of one per iterate over the whole step); ``end`` when the integrated states
    show no sign change."""
    t_d = _brentq(P, e, ta, end, ta, h, ya, f, tmp, scratch, evs, loc)
    width = 1e-6 * (end - ta)
    for _ in range(2):
        lo, hi = max(ta, t_d - width), min(end, t_d + width)
        g_lo = _exact(P, e, ta, ya, lo, rtol, atol, hmax, out, scratch, evs, loc)
        g_hi = _exact(P, e, ta, ya, hi, rtol, atol, hmax, out, scratch, evs, loc)
        if np.sign(g_lo) * np.sign(g_hi) < 0:
            return _root(
                P, e, lo, hi, g_lo, g_hi, ta, h, ya, f, True, rtol, atol, hmax, out, scratch,
                evs, loc,
            )  # fmt: skip
        width *= 1e3
    g_a = _exact(P, e, ta, ya, ta, rtol, atol, hmax, out, scratch, evs, loc)
    g_b = _exact(P, e, ta, ya, end, rtol, atol, hmax, out, scratch, evs, loc)
    if np.sign(g_a) * np.sign(g_b) < 0:
        return _root(
            P, e, ta, end, g_a, g_b, ta, h, ya, f, True, rtol, atol, hmax, out, scratch, evs, loc
        )
    return end


@kernel
def _integrated_ties(
    P, ta, ya, h, f, t_root, crossed, g_last, y_root, tmp, scratch, evs, rtol, atol, hmax, loc
):
    """The event's root checked on the integrated state ``y_root`` at ``t_root`` (updated in
    place): another event a hair past zero there (a tie within the rounding of the dense
    output against the integration, :func:`_earliest` having seen it on the dense output)
    has its own root on the integrated states, earlier, and is the event; otherwise the next
    segment would start beyond it and never see it cross (pr2 from seeded poses: the torso
    8 cm past its stop)."""
    values, out = loc.values, loc.out
    again = True
    while again:
        again = False
        events_at(P, t_root, y_root, evs, values, scratch)
        for e in range(g_last.size):
            if e != crossed and _beyond(g_last[e], values[e], evs[7][e]):
                tr = _exact_root(
                    P, e, ta, ya, t_root, h, f, rtol, atol, hmax, out, tmp, scratch, evs, loc
                )
                if tr < t_root:
                    t_root = tr
                    crossed = e
                    again = True
                    if t_root > ta:
                        _state_at(P, ta, ya, t_root, rtol, atol, hmax, y_root, loc)
                    else:
                        _copy(y_root, ya)
                    break
    return t_root, crossed


@cached()
def advance(
    P,
    y,
    t_end,
    hmax,
    rtol,
    atol,
    k,
    st,
    it,
    t_eval,
    out_t,
    out_y,
    g_last,
    evs,
    nfev_pause,
    stop_when_stiff,
):
    """Step DOP853 from the run's state (st, it, y, k[0]) towards t_end.

    Returns a code: DONE (t_end reached), EVENT (it[_EVENT] crossed; st[_TROOT] its time, y
    the state there), PAUSE (output buffer full or ``nfev_pause`` evaluations counted in
    it[_NFEV]: call again), STIFF (the stiffness test fired 15 times and
    ``stop_when_stiff``), or a failure (too small a step, non-finite state). Output: every
    accepted step, or the times t_eval[it[_NSAMPLE]:] by dense output, into out_t/out_y from
    it[_NOUT]. A run whose it[_START] is set is started first (:func:`start` from st[_T] and
    y): one call into compiled code per segment, not two.
    """
    if it[_START]:
        it[_START] = 0
        start(P, st[_T], y, t_end, hmax, 0.0, rtol, atol, k, st, it, g_last, evs)
    if it[_PENDING]:  # the last step's samples first, each from that step's own interpolant
        f_old = k[_F : _F + 7]
        if not _samples(
            f_old, st[_XOLD], st[_HSTEP], k[_YOLD], st[_XNEW], k[_YNEW], st[_UNTIL], t_eval,
            out_t, out_y, it,
        ):  # fmt: skip
            return PAUSE
        code = it[_PENDING] - 1
        it[_PENDING] = 0
        if code != _CONTINUE:
            return code
    n = y.size
    y1 = np.empty(n)
    y_new = np.empty(n)
    f = np.empty((7, n))
    tmp = np.empty(n)
    scratch = np.empty(n)
    n_events = g_last.size
    g_new = np.empty(n_events)
    loc = Locator(k[0], np.empty((16, n)), it, np.empty(8), np.empty(n_events), np.empty(n))
    capacity = out_t.size
    sampled = t_eval.size > 0
    x = st[_T]
    h = st[_H]
    overflows = 0
    while True:
        if it[_NOUT] >= capacity - 1 or it[_NFEV] >= nfev_pause:
            st[_T] = x
            st[_H] = h
            return PAUSE
        if 0.1 * abs(h) <= abs(x) * UROUND:
            st[_T] = x
            st[_H] = h
            return FAILED_SMALL
        last = False
        if x + 1.01 * h - t_end > 0.0:
            st[_HFREE] = h
            h = t_end - x
            last = True
        it[_NSTEP] += 1
        err = _step(P, x, y, h, k, y1, y_new, rtol, atol)
        it[_NFEV] += 11
        if not np.isfinite(err):  # a trial step that overflowed: rejected, as scipy's
            overflows += 1  # DOP853 does; a derivative that stays non-finite fails
            if overflows > 30:
                st[_T] = x
                st[_H] = h
                return FAILED_NAN
            h = 0.1 * h
            it[_REJECT] = 1
            continue
        overflows = 0
        fac11 = err**EXPO1
        fac = max(1.0 / FAC2, min(1.0 / FAC1, fac11 / SAFE))
        hnew = h / fac
        if err <= 1.0:
            st[_FACOLD] = max(err, 1.0e-4)
            it[_NACCPT] += 1
            x_new = t_end if last else x + h  # lands on t_end exactly (a control sample)
            rhs(P, x_new, y_new, k[12])  # (FSAL; its reactions and gaps serve the events)
            it[_NFEV] += 1
            stiff_now = False
            if it[_NACCPT] % it[_NSTIFF] == 0 or it[_IASTI] > 0:
                stnum = 0.0
                stden = 0.0
                for i in range(n):
                    stnum += (k[12, i] - k[11, i]) ** 2
                    stden += (y_new[i] - y1[i]) ** 2
                if stden > 0.0:
                    st[_HLAMB] = abs(h) * np.sqrt(stnum / stden)
                if st[_HLAMB] > 6.1:
                    it[_NONSTI] = 0
                    it[_IASTI] += 1
                    if it[_IASTI] == 15:
                        stiff_now = True
                else:
                    it[_NONSTI] += 1
                    if it[_NONSTI] == 6:
                        it[_IASTI] = 0
            if stiff_now:  # DP86CO returns before taking the step (IDID = -4)
                it[_STIFF] += 1
                st[_T] = x
                st[_H] = h
                if stop_when_stiff:
                    return STIFF
                # as the Python path does: restart DOP853 from the last accepted point
                start(P, x, y, t_end, hmax, 0.0, rtol, atol, k, st, it, g_last, evs)
                h = st[_H]
                continue
            x_old = x
            # events between the accepted steps
            crossed = -1
            t_root = np.inf
            dense = False  # the step's dense output in f
            if n_events > 0:
                values_at(P, x_new, y_new, evs, g_new)
                for e in range(n_events):
                    if _active(g_last[e], g_new[e], evs[7][e]):
                        if not dense:
                            _dense(P, x_old, y, h, y_new, k, y1, f)
                            it[_NFEV] += 3
                            dense = True
                        ga = _event(P, e, x_old, y, evs, scratch)
                        if np.sign(ga) * np.sign(g_new[e]) < 0:
                            tr = _brentq(P, e, x_old, x_new, x_old, h, y, f, tmp, scratch, evs, loc)
                        else:
                            tr = x_new
                        if tr < t_root:
                            t_root = tr
                            crossed = e
                if crossed >= 0 and n_events > 1:
                    t_root, crossed = _earliest(
                        P, x_old, h, y, f, t_root, crossed, g_last, tmp, evs, scratch, loc
                    )
            until = x_new if crossed < 0 else t_root
            full = False  # samples of this step left for the next call
            if sampled:
                ns = it[_NSAMPLE]
                if ns < t_eval.size and t_eval[ns] <= until:
                    if not dense:
                        _dense(P, x_old, y, h, y_new, k, y1, f)
                        it[_NFEV] += 3
                    if not _samples(f, x_old, h, y, x_new, y_new, until, t_eval, out_t, out_y, it):
                        full = True
                        code = EVENT if crossed >= 0 else DONE if last else _CONTINUE
                        _defer(k, f, x_old, h, y, x_new, y_new, until, st, it, code)
            if crossed >= 0:
                y_root = np.empty(y.size)
                if t_root > x_old:
                    _state_at(P, x_old, y, t_root, rtol, atol, hmax, y_root, loc)
                else:
                    y_root[:] = y
                if n_events > 1:
                    t_root, crossed = _integrated_ties(
                        P,
                        x_old,
                        y,
                        h,
                        f,
                        t_root,
                        crossed,
                        g_last,
                        y_root,
                        tmp,
                        scratch,
                        evs,
                        rtol,
                        atol,
                        hmax,
                        loc,
                    )
                y[:] = y_root
                st[_TROOT] = t_root
                st[_T] = t_root
                it[_EVENT] = crossed
                if not sampled:
                    record(t_root, y, out_t, out_y, it, _NOUT)
                return PAUSE if full else EVENT
            for e in range(n_events):
                g_last[e] = g_new[e]
            y[:] = y_new
            k[0] = k[12]
            x = x_new
            if not sampled:
                record(x, y, out_t, out_y, it, _NOUT)
            if last:
                st[_T] = x
                # the step cut to land on t_end says little about the next one when the cut
                # was deep (its growth is capped at FAC2): keep the step proposed before it
                st[_H] = max(hnew, st[_HFREE]) if fac <= 1.0 / FAC2 else hnew
                return PAUSE if full else DONE
            if abs(hnew) > hmax:
                hnew = hmax
            if it[_REJECT] == 1:
                hnew = min(abs(hnew), abs(h))
            it[_REJECT] = 0
        else:
            hnew = h / min(1.0 / FAC1, 1.0 / FAC1 / SAFE)  # scipy's dop.c: a rejection
            it[_REJECT] = 1
            last = False
        h = hnew
