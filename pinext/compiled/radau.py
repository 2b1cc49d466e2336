"""Radau IIA (order 5) in compiled code: scipy's step control, dense output and event location.

A port of :class:`scipy.integrate.Radau` (``scipy/integrate/_ivp/radau.py``), which follows
Hairer & Wanner (1996, *Solving Ordinary Differential Equations II*, §IV.8): the three-stage
collocation system is solved by a simplified Newton iteration in the eigenbasis of the
Butcher matrix, :math:`A = T \\Lambda T^{-1}`, so that one real and one complex n×n LU
factorisation,

.. math::

    (\\mu_{re}/h\\, I - J), \\qquad (\\mu_{c}/h\\, I - J),

serve every iteration; the error is the embedded third-order estimate filtered by the real
LU, :math:`e = (\\mu_{re}/h\\, I - J)^{-1} (f_0 + Z^T E / h)`; the step factor is the
predictive (Gustafsson) controller ``predict_factor`` with safety
``0.9 (2 N_{max} + 1) / (2 N_{max} + n_{iter})``; the dense output is the collocation
polynomial ``y_old + Q [x, x², x³]``, ``Q = Zᵀ P``. Constants and defaults are scipy's
(``NEWTON_MAXITER`` = 6, step ratio within [0.2, 10], Newton tolerance
``max(10 ε / rtol, min(0.03, √rtol))``), so a run agrees with scipy's Radau to the tolerance.

The difference is the Jacobian (:func:`_jacobian`): forward differences of the compiled
right-hand side in every core column (increment ``√ε · max(|y_j|, 1)``, one evaluation
each), computed at the start and when scipy's Radau would call its Jacobian (a slow Newton
convergence after an accepted step, or a failed Newton iteration with a Jacobian that is not
current).

Events, outputs, resumable state and return codes are those of :mod:`pinext.compiled.dop853`;
a crossing is located by Brent's method (4 ε) on the collocation polynomial, as
:func:`scipy.integrate.solve_ivp` does on ``Radau``'s dense output.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate._ivp import radau as _sr

from .dop853 import _active, _beyond, brent_step, events_at, record, values_at
from .events import _event as _dop_event
from .jit import COMPILED_ONLY, cached
from .phase import rhs
from .spatial import helper, kernel

T = np.ascontiguousarray(_sr.T, dtype=np.float64)
TI = np.ascontiguousarray(_sr.TI, dtype=np.float64)
C = np.ascontiguousarray(_sr.C, dtype=np.float64)
E = np.ascontiguousarray(_sr.E, dtype=np.float64)
P = np.ascontiguousarray(_sr.P, dtype=np.float64)
MU_REAL = float(_sr.MU_REAL)
MU_COMPLEX = complex(_sr.MU_COMPLEX)
NEWTON_MAXITER = int(_sr.NEWTON_MAXITER)
MIN_FACTOR = float(_sr.MIN_FACTOR)
MAX_FACTOR = float(_sr.MAX_FACTOR)
EPS = np.finfo(np.float64).eps
SQRT_EPS = float(np.sqrt(EPS))

# codes returned by advance() (those of dop853.advance)
DONE, EVENT, PAUSE, FAILED_SMALL, FAILED_NAN = 0, 1, 2, -3, -5

# integer state: it[...]
(
    _NACCPT,
    _NSTEP,
    _NFEV,
    _NJEV,
    _NLU,
    _EVENT,
    _NOUT,
    _NSAMPLE,
    _CURRENT_JAC,
    _HAS_LU,
    _HAS_SOL,
    _NREJECT,
    _START,  # 1 until the run's first advance() has started it (st[_T] holds t0)
    _PENDING,  # samples of the last step left for the next call: 1 + the code it then returns
) = range(14)
N_INT = 14
# float state: st[...]: t, the proposed |h|, scipy's h_abs_old and error_norm_old (< 0: None),
# the event time, the Newton tolerance, and the last accepted step (t_old, h) of the dense output
# the step of the current LU factors, and the step proposed before the last one was cut to land
# on t_end; _UNTIL: the last sample time of a step whose samples are pending
_T, _H, _H_OLD, _ERR_OLD, _TROOT, _NEWTON_TOL, _T_OLD, _H_SOL, _H_LU, _HFREE, _UNTIL = range(11)
N_FLOAT = 11
#: The pending step's code after its samples: go on (or EVENT, DONE).
_CONTINUE = 3


def workspace(n: int) -> tuple:
    """The arrays a run keeps between :func:`advance` calls: f(t, y), J, the real and complex
    LU factors with their pivots, the dense output's Q (3, n) and y_old."""
    return (
        np.zeros(n),
        np.zeros((n, n)),
        np.zeros((n, n)),
        np.zeros(n, dtype=np.int64),
        np.zeros((n, n), dtype=np.complex128),
        np.zeros(n, dtype=np.int64),
        np.zeros((3, n)),
        np.zeros(n),
    )


@cached(**COMPILED_ONLY)
def _lu_factor(a, piv):
    """In-place LU factorisation with partial pivoting (LAPACK getrf's algorithm), real or
    complex: P a = L U, L unit lower (below the diagonal of a), U upper."""
    n = a.shape[0]
    for k in range(n):
        p = k
        m = abs(a[k, k])
        for i in range(k + 1, n):
            v = abs(a[i, k])
            if v > m:
                m = v
                p = i
        piv[k] = p
        if p != k:
            for j in range(n):
                tmp = a[k, j]
                a[k, j] = a[p, j]
                a[p, j] = tmp
        d = a[k, k]
        if d != 0:
            inv = 1.0 / d
            for i in range(k + 1, n):
                lik = a[i, k] * inv
                a[i, k] = lik
                if lik != 0:
                    for j in range(k + 1, n):
                        a[i, j] -= lik * a[k, j]


@cached(**COMPILED_ONLY)
def _lu_solve(a, piv, b):
    """Solve (the factored) a x = b in place in b."""
    n = a.shape[0]
    for k in range(n):
        p = piv[k]
        if p != k:
            tmp = b[k]
            b[k] = b[p]
            b[p] = tmp
    for i in range(n):
        acc = b[i]
        for j in range(i):
            acc -= a[i, j] * b[j]
        b[i] = acc
    for i in range(n - 1, -1, -1):
        acc = b[i]
        for j in range(i + 1, n):
            acc -= a[i, j] * b[j]
        b[i] = acc / a[i, i]


@kernel
def _jacobian(Pk, t, y, f, J, y1, f1):
    """∂f/∂y of the phase's right-hand side (:func:`pinext.compiled.phase.rhs`) by forward
    differences, J[:, j] = (f(t, y + δ_j e_j) − f) / δ_j with δ_j = √ε max(|y_j|, 1), over
    the core states (q, v and the components' states: one evaluation each). The power
    integrals are read by nothing: their columns are zero. Returns the evaluations made.

    Every column comes from the one right-hand side, called by symbol: no second copy of
    its ABA, rows and laws to compile for each kind of scene (an exact M⁻¹ block for the
    components' states once cost Radau's first run 10 s of compilation)."""
    n = y.size
    n_core = n - 2  # y = [core states, p_in, p_diss]
    for i in range(n):
        y1[i] = y[i]
        J[i, n_core] = 0.0  # (the other columns are written below)
        J[i, n_core + 1] = 0.0
    for j in range(n_core):
        d = (y[j] + SQRT_EPS * max(abs(y[j]), 1.0)) - y[j]
        y1[j] = y[j] + d
        rhs(Pk, t, y1, f1)
        y1[j] = y[j]
        for i in range(n):
            J[i, j] = (f1[i] - f[i]) / d
    return n_core


@kernel
def _factor(J, h, nq, lu_r, piv_r, lu_c, piv_c):
    """The real and complex iteration matrices c I − J (c = μ/h), factored.

    With ``nq`` > 0 the first nq rows are q̇ = v (J's rows there are [0 I 0]) and the last two
    columns, the power integrals', are zero: the q rows and the two power rows are eliminated
    and only the reduced matrix of the velocity and component-state rows is factored, in the
    leading block, R = c I − J_xx − J_xq P / c (P picks the velocity columns; :func:`_solve`),
    21 × 21 instead of 30 × 30 for the Panda with elastic drives."""
    n = J.shape[0]
    mr = MU_REAL / h
    mc = MU_COMPLEX / h
    if nq == 0:
        for i in range(n):
            for j in range(n):
                lu_r[i, j] = -J[i, j]
                lu_c[i, j] = -J[i, j]
            lu_r[i, i] += mr
            lu_c[i, i] += mc
        _lu_factor(lu_r[:n, :n], piv_r[:n])  # (slices: one compiled variant per dtype)
        _lu_factor(lu_c[:n, :n], piv_c[:n])
        return
    r = n - 2 - nq
    for a in range(r):
        for b in range(r):
            lu_r[a, b] = -J[nq + a, nq + b]
            lu_c[a, b] = -J[nq + a, nq + b]
            if b < nq:  # a velocity column: its q row gives q = (b_q + v) / c
                lu_r[a, b] -= J[nq + a, b] / mr
                lu_c[a, b] -= J[nq + a, b] / mc
        lu_r[a, a] += mr
        lu_c[a, a] += mc
    _lu_factor(lu_r[:r, :r], piv_r[:r])
    _lu_factor(lu_c[:r, :r], piv_c[:r])


@kernel
def _solve(lu, piv, b, J, c, nq):
    """Solve (c I − J) x = b in place in b from :func:`_factor`'s factors (lu, piv: the real
    or the complex ones, c the matching μ/h): with ``nq`` > 0 the reduced system, then the q
    rows (q = (b_q + v) / c) and the two power rows (whose columns in J are zero)."""
    n = b.size
    if nq == 0:
        _lu_solve(lu[:n, :n], piv[:n], b[:n])  # (slices: one compiled variant per dtype)
        return
    m = n - 2
    for i in range(nq, m):
        acc = b[i]
        for j in range(nq):
            acc += J[i, j] * b[j] / c
        b[i] = acc
    _lu_solve(lu[: m - nq, : m - nq], piv[: m - nq], b[nq:m])
    for j in range(nq):
        b[j] = (b[j] + b[nq + j]) / c
    for i in range(m, n):
        acc = b[i]
        for j in range(m):
            acc += J[i, j] * b[j]
        b[i] = acc / c


@cached(**COMPILED_ONLY)
def _rms(x, scale):
    acc = 0.0
    for i in range(x.size):
        acc += (x[i] / scale[i]) ** 2
    return np.sqrt(acc / x.size)


@kernel
def _collocation(
    Pk, t, y, h, Z, scale, tol, J, nq, lu_r, piv_r, lu_c, piv_c, W, F, dwr, dwc, y1, it
):
    """scipy's ``solve_collocation_system``: Z (3, n) from the guess in Z, in place.

    Returns (converged, n_iter, rate); rate < 0 stands for scipy's None.
    """
    n = y.size
    mr = MU_REAL / h
    mc = MU_COMPLEX / h
    for r in range(3):
        for i in range(n):
            W[r, i] = TI[r, 0] * Z[0, i] + TI[r, 1] * Z[1, i] + TI[r, 2] * Z[2, i]
    dw_norm_old = -1.0
    rate = -1.0
    converged = False
    k = 0
    for k in range(NEWTON_MAXITER):
        finite = True
        for s in range(3):
            for i in range(n):
                y1[i] = y[i] + Z[s, i]
            rhs(Pk, t + h * C[s], y1, F[s])
            it[_NFEV] += 1
            for i in range(n):
                if not np.isfinite(F[s, i]):
                    finite = False
        if not finite:
            break
        for i in range(n):
            fr = TI[0, 0] * F[0, i] + TI[0, 1] * F[1, i] + TI[0, 2] * F[2, i]
            f1 = TI[1, 0] * F[0, i] + TI[1, 1] * F[1, i] + TI[1, 2] * F[2, i]
            f2 = TI[2, 0] * F[0, i] + TI[2, 1] * F[1, i] + TI[2, 2] * F[2, i]
            dwr[i] = fr - mr * W[0, i]
            dwc[i] = complex(f1, f2) - mc * complex(W[1, i], W[2, i])
        _solve(lu_r, piv_r, dwr, J, mr, nq)
        _solve(lu_c, piv_c, dwc, J, mc, nq)
        acc = 0.0
        for i in range(n):
            acc += (dwr[i] / scale[i]) ** 2
            acc += (dwc[i].real / scale[i]) ** 2
            acc += (dwc[i].imag / scale[i]) ** 2
        dw_norm = np.sqrt(acc / (3 * n))
        if dw_norm_old >= 0.0:
            rate = dw_norm / dw_norm_old
        if rate >= 0.0 and (
            rate >= 1.0 or rate ** (NEWTON_MAXITER - k) / (1.0 - rate) * dw_norm > tol
        ):
            break
        for i in range(n):
            W[0, i] += dwr[i]
            W[1, i] += dwc[i].real
            W[2, i] += dwc[i].imag
        for r in range(3):
            for i in range(n):
                Z[r, i] = T[r, 0] * W[0, i] + T[r, 1] * W[1, i] + T[r, 2] * W[2, i]
        if dw_norm == 0.0 or (rate >= 0.0 and rate / (1.0 - rate) * dw_norm < tol):
            converged = True
            break
        dw_norm_old = dw_norm
    return converged, k + 1, rate


@cached(**COMPILED_ONLY)
def _predict_factor(h_abs, h_abs_old, error_norm, error_norm_old):
    """scipy's ``predict_factor`` (Hairer & Wanner 1996, §IV.8); negative olds mean None."""
    if error_norm_old < 0.0 or h_abs_old < 0.0 or error_norm == 0.0:
        multiplier = 1.0
    else:
        multiplier = h_abs / h_abs_old * (error_norm_old / error_norm) ** 0.25
    if error_norm == 0.0:
        return np.inf
    return min(1.0, multiplier) * error_norm**-0.25


@cached(**COMPILED_ONLY)
def _interpolate(Q, t_old, h, y_old, t, out):
    """The collocation polynomial: y_old + Q·[x, x², x³], x = (t − t_old)/h (scipy's
    ``RadauDenseOutput``; Q already carries the factor h)."""
    x = (t - t_old) / h
    x2 = x * x
    x3 = x2 * x
    for i in range(y_old.size):
        out[i] = y_old[i] + Q[0, i] * x + Q[1, i] * x2 + Q[2, i] * x3


@kernel
def _samples(Q, y_old, until, t_eval, out_t, out_y, st, it):
    """Output the times t_eval[it[_NSAMPLE]:] up to ``until`` from the last accepted step's
    collocation polynomial (Q, y_old, st[_T_OLD], st[_H_SOL]) while the buffer has room;
    whether all were output (else the next call outputs the rest first: it[_PENDING])."""
    ns = it[_NSAMPLE]
    while ns < t_eval.size and t_eval[ns] <= until:
        if it[_NOUT] >= out_t.size:
            it[_NSAMPLE] = ns
            st[_UNTIL] = until
            return False
        o = it[_NOUT]
        out_t[o] = t_eval[ns]
        _interpolate(Q, st[_T_OLD], st[_H_SOL], y_old, t_eval[ns], out_y[o])
        it[_NOUT] += 1
        ns += 1
    it[_NSAMPLE] = ns
    return True


@cached(**COMPILED_ONLY)
def _select_initial_step(Pk, t0, y0, t_bound, max_step, f0, rtol, atol, y1, f1):
    """scipy's ``select_initial_step`` with order 3 (Hairer, Nørsett & Wanner 1993, §II.4)."""
    n = y0.size
    interval = abs(t_bound - t0)
    if interval == 0.0:
        return 0.0
    d0 = 0.0
    d1 = 0.0
    for i in range(n):
        sc = atol + abs(y0[i]) * rtol
        d0 += (y0[i] / sc) ** 2
        d1 += (f0[i] / sc) ** 2
    d0 = np.sqrt(d0 / n)
    d1 = np.sqrt(d1 / n)
    if d0 < 1e-5 or d1 < 1e-5:
        h0 = 1e-6
    else:
        h0 = 0.01 * d0 / d1
    h0 = min(h0, interval)
    for i in range(n):
        y1[i] = y0[i] + h0 * f0[i]
    rhs(Pk, t0 + h0, y1, f1)
    d2 = 0.0
    for i in range(n):
        sc = atol + abs(y0[i]) * rtol
        d2 += ((f1[i] - f0[i]) / sc) ** 2
    d2 = np.sqrt(d2 / n) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** 0.25
    return min(100 * h0, h1, interval, max_step)


@cached(**COMPILED_ONLY)
def start(Pk, t0, y0, t_end, hmax, rtol, atol, f, J, st, it, g_last, evs):
    """Initialise a run at (t0, y0) as scipy's ``Radau.__init__`` does: f(t0, y0), the first
    step, the Newton tolerance and the Jacobian at the start; the event functions' values in
    g_last."""
    n = y0.size
    y1 = np.empty(n)
    f1 = np.empty(n)
    rhs(Pk, t0, y0, f)
    values_at(Pk, t0, y0, evs, g_last)
    it[_NFEV] += 2
    st[_T] = t0
    st[_H] = _select_initial_step(Pk, t0, y0, t_end, hmax, f, rtol, atol, y1, f1)
    st[_H_OLD] = -1.0
    st[_ERR_OLD] = -1.0
    st[_NEWTON_TOL] = max(10 * EPS / rtol, min(0.03, rtol**0.5))
    it[_NFEV] += _jacobian(Pk, t0, y0, f, J, y1, f1)
    it[_NJEV] += 1
    it[_CURRENT_JAC] = 1
    it[_HAS_LU] = 0
    it[_HAS_SOL] = 0


@cached(**COMPILED_ONLY)
def resume(Pk, t, y, hmax, f, st, it, g_last, evs):
    """Continue a run at (t, y) after its inputs changed (a new control sample held from t):
    f(t, y) again, the event functions again; the step size, the Jacobian, its LU factors and
    the last collocation polynomial (the Newton guess) are kept."""
    rhs(Pk, t, y, f)
    values_at(Pk, t, y, evs, g_last)
    it[_NFEV] += 1
    st[_T] = t


@helper
def _event(Pk, e, t, y, evs, tmp):
    """Event e at (t, y) (:func:`pinext.compiled.events._event`: a REACTION evaluates the
    right-hand side into tmp)."""
    return _dop_event(Pk, e, t, y, evs, tmp)


@cached(**COMPILED_ONLY)
def _brentq(Pk, e, xa, xb, Q, t_old, h, y_old, tmp, scratch, evs):
    """The event's root in [xa, xb] (:func:`pinext.compiled.dop853.brent_step`, scipy's
    brentq) along the collocation polynomial of the step."""
    _interpolate(Q, t_old, h, y_old, xa, tmp)
    fa = _event(Pk, e, xa, tmp, evs, scratch)
    _interpolate(Q, t_old, h, y_old, xb, tmp)
    fb = _event(Pk, e, xb, tmp, evs, scratch)
    if fa == 0:
        return xa
    if fb == 0 or (fa > 0) == (fb > 0):  # no bracket left (a residual at rounding level,
        return xb  # recomputed at the ends): the event at the step's end, as the caller does
    s = np.array([xa, xb, 0.0, fa, fb, 0.0, 0.0, 0.0])
    x = xb
    for _ in range(100):
        done, x = brent_step(s)
        if done:
            return x
        _interpolate(Q, t_old, h, y_old, x, tmp)
        s[4] = _event(Pk, e, x, tmp, evs, scratch)
    return x


@cached(**COMPILED_ONLY)
def _earliest(Pk, t_root, crossed, g_last, Q, t_old, h, y_old, tmp, scratch, evs):
    """The first root of all events in the step (:func:`pinext.compiled.dop853._earliest`:
    an event that went through zero and back within the step is past zero at the root found,
    and its own root is earlier)."""
    values = np.empty(g_last.size)
    again = True
    while again:
        again = False
        _interpolate(Q, t_old, h, y_old, t_root, tmp)
        events_at(Pk, t_root, tmp, evs, values, scratch)
        for e in range(g_last.size):
            if e != crossed and _beyond(g_last[e], values[e], evs[7][e]):
                tr = _brentq(Pk, e, t_old, t_root, Q, t_old, h, y_old, tmp, scratch, evs)
                if tr < t_root:
                    t_root = tr
                    crossed = e
                    again = True
                    break
    return t_root, crossed


@cached()
def advance(
    Pk,
    y,
    t_end,
    hmax,
    rtol,
    atol,
    f,
    J,
    lu_r,
    piv_r,
    lu_c,
    piv_c,
    Q,
    y_old,
    st,
    it,
    t_eval,
    out_t,
    out_y,
    g_last,
    evs,
    nfev_pause,
):
    """Step Radau IIA from the run's state (st, it, y, f, J, LU factors, dense output) towards
    t_end: scipy's ``Radau._step_impl`` in a loop, with ``solve_ivp``'s events and outputs.

    Returns a code: DONE (t_end reached), EVENT (it[_EVENT] crossed; st[_TROOT] its time, y
    the state there on the collocation polynomial), PAUSE (output buffer full or
    ``nfev_pause`` evaluations counted in it[_NFEV]: call again), or a failure (too small a
    step, non-finite state). Output: every accepted step, or the times t_eval[it[_NSAMPLE]:]
    by dense output, into out_t/out_y from it[_NOUT]. A run whose it[_START] is set is
    started first (:func:`start` from st[_T] and y).
    """
    if it[_START]:
        it[_START] = 0
        start(Pk, st[_T], y, t_end, hmax, rtol, atol, f, J, st, it, g_last, evs)
    if it[_PENDING]:  # the last step's samples first, from that step's own polynomial
        if not _samples(Q, y_old, st[_UNTIL], t_eval, out_t, out_y, st, it):
            return PAUSE
        code = it[_PENDING] - 1
        it[_PENDING] = 0
        if code != _CONTINUE:
            return code
    n = y.size
    Z = np.zeros((3, n))
    W = np.empty((3, n))
    F = np.empty((3, n))
    dwr = np.empty(n)
    dwc = np.empty(n, dtype=np.complex128)
    err = np.empty(n)
    y1 = np.empty(n)
    f1 = np.empty(n)
    y_new = np.empty(n)
    f_new = np.empty(n)
    scale = np.empty(n)
    tmp = np.empty(n)
    nq = 0 if Pk.momentum or Pk.rotating else Pk.damping.size  # q̇ = v rows: _factor
    n_events = g_last.size
    g_new = np.empty(n_events)
    capacity = out_t.size
    sampled = t_eval.size > 0
    t = st[_T]
    while True:
        if it[_NOUT] >= capacity - 1 or it[_NFEV] >= nfev_pause:
            st[_T] = t
            return PAUSE
        if t >= t_end:
            st[_T] = t
            return DONE
        # ---- one step of Radau._step_impl
        min_step = 10 * abs(np.nextafter(t, np.inf) - t)
        if st[_H] > hmax:
            h_abs = hmax
            h_abs_old = -1.0
            error_norm_old = -1.0
        elif st[_H] < min_step:
            h_abs = min_step
            h_abs_old = -1.0
            error_norm_old = -1.0
        else:
            h_abs = st[_H]
            h_abs_old = st[_H_OLD]
            error_norm_old = st[_ERR_OLD]
        current_jac = it[_CURRENT_JAC] == 1
        has_lu = it[_HAS_LU] == 1
        rejected = False
        accepted = False
        cut = False
        n_iter = 0
        rate = -1.0
        error_norm = 0.0
        safety = 0.0
        h = 0.0
        t_new = t
        while not accepted:
            if not h_abs >= min_step:  # also a NaN step: never loop on it
                st[_T] = t
                return FAILED_SMALL
            h = h_abs
            t_new = t + h
            cut = t_new - t_end > 0
            if cut:
                st[_HFREE] = h_abs
                t_new = t_end
            h = t_new - t
            h_abs = abs(h)
            if has_lu and h != st[_H_LU]:  # the factors of another step (a cut one)
                has_lu = False
            it[_NSTEP] += 1
            for i in range(n):
                scale[i] = atol + abs(y[i]) * rtol
            converged = False
            while not converged:
                if not has_lu:
                    _factor(J, h, nq, lu_r, piv_r, lu_c, piv_c)
                    st[_H_LU] = h
                    it[_NLU] += 2
                    has_lu = True
                # the guess Z0: the last step's collocation polynomial at t + c h, or zero
                if it[_HAS_SOL] == 0:
                    for r in range(3):
                        for i in range(n):
                            Z[r, i] = 0.0
                else:
                    for r in range(3):
                        _interpolate(Q, st[_T_OLD], st[_H_SOL], y_old, t + h * C[r], y1)
                        for i in range(n):
                            Z[r, i] = y1[i] - y[i]
                converged, n_iter, rate = _collocation(
                    Pk, t, y, h, Z, scale, st[_NEWTON_TOL], J, nq, lu_r, piv_r, lu_c, piv_c,
                    W, F, dwr, dwc, y1, it,
                )  # fmt: skip
                if not converged:
                    if current_jac:
                        break
                    it[_NFEV] += _jacobian(Pk, t, y, f, J, y1, f1)
                    it[_NJEV] += 1
                    current_jac = True
                    has_lu = False
            if not converged:
                h_abs *= 0.5
                has_lu = False
                continue
            for i in range(n):
                y_new[i] = y[i] + Z[2, i]
                err[i] = f[i] + (Z[0, i] * E[0] + Z[1, i] * E[1] + Z[2, i] * E[2]) / h
                f1[i] = err[i] - f[i]  # ZE, kept for a second estimate
            _solve(lu_r, piv_r, err, J, MU_REAL / h, nq)
            for i in range(n):
                scale[i] = atol + max(abs(y[i]), abs(y_new[i])) * rtol
            error_norm = _rms(err, scale)
            safety = 0.9 * (2 * NEWTON_MAXITER + 1) / (2 * NEWTON_MAXITER + n_iter)
            if rejected and error_norm > 1:
                for i in range(n):
                    y1[i] = y[i] + err[i]
                rhs(Pk, t, y1, err)
                it[_NFEV] += 1
                for i in range(n):
                    err[i] += f1[i]
                _solve(lu_r, piv_r, err, J, MU_REAL / h, nq)
                error_norm = _rms(err, scale)
            if not np.isfinite(error_norm):
                st[_T] = t
                return FAILED_NAN
            if error_norm > 1:
                factor = _predict_factor(h_abs, h_abs_old, error_norm, error_norm_old)
                h_abs *= max(MIN_FACTOR, safety * factor)
                has_lu = False
                rejected = True
                it[_NREJECT] += 1
            else:
                accepted = True
        it[_NACCPT] += 1
        recompute_jac = n_iter > 2 and rate > 1e-3
        factor = _predict_factor(h_abs, h_abs_old, error_norm, error_norm_old)
        factor = min(MAX_FACTOR, safety * factor)
        if not recompute_jac and factor < 1.2:
            factor = 1.0
        else:
            has_lu = False
        rhs(Pk, t_new, y_new, f_new)
        values_at(Pk, t_new, y_new, evs, g_new)  # (before the Jacobian's evaluations)
        it[_NFEV] += 1
        if recompute_jac:
            it[_NFEV] += _jacobian(Pk, t_new, y_new, f_new, J, y1, f1)
            it[_NJEV] += 1
            current_jac = True
        else:
            current_jac = False
        st[_H_OLD] = st[_H]
        st[_ERR_OLD] = error_norm
        st[_H] = h_abs * factor
        if cut and st[_H] < st[_HFREE]:  # a step cut to land on t_end: keep the one before it
            st[_H] = st[_HFREE]
        it[_CURRENT_JAC] = 1 if current_jac else 0
        it[_HAS_LU] = 1 if has_lu else 0
        # the dense output of the accepted step: Q = Zᵀ P (stored (3, n))
        for r in range(3):
            for i in range(n):
                Q[r, i] = Z[0, i] * P[0, r] + Z[1, i] * P[1, r] + Z[2, i] * P[2, r]
        for i in range(n):
            y_old[i] = y[i]
        st[_T_OLD] = t
        st[_H_SOL] = t_new - t
        it[_HAS_SOL] = 1
        if not np.all(np.isfinite(y_new)):
            st[_T] = t
            return FAILED_NAN
        # ---- solve_ivp's event handling and output on the accepted step
        t_old = t
        crossed = -1
        t_root = np.inf
        if n_events > 0:
            for e in range(n_events):
                if _active(g_last[e], g_new[e], evs[7][e]):
                    ga = _event(Pk, e, t_old, y_old, evs, f1)
                    if np.sign(ga) * np.sign(g_new[e]) < 0:
                        tr = _brentq(
                            Pk, e, t_old, t_new, Q, t_old, t_new - t_old, y_old, tmp, f1, evs
                        )
                    else:
                        tr = t_new
                    if tr < t_root:
                        t_root = tr
                        crossed = e
            if crossed >= 0 and n_events > 1:
                t_root, crossed = _earliest(
                    Pk, t_root, crossed, g_last, Q, t_old, t_new - t_old, y_old, tmp, f1, evs
                )
        until = t_new if crossed < 0 else t_root
        full = sampled and not _samples(Q, y_old, until, t_eval, out_t, out_y, st, it)
        if crossed >= 0:
            _interpolate(Q, t_old, t_new - t_old, y_old, t_root, y)
            st[_TROOT] = t_root
            st[_T] = t_root
            it[_EVENT] = crossed
            if not sampled:
                record(t_root, y, out_t, out_y, it, _NOUT)
            if full:
                it[_PENDING] = EVENT + 1
                return PAUSE
            return EVENT
        for e in range(n_events):
            g_last[e] = g_new[e]
        for i in range(n):
            y[i] = y_new[i]
            f[i] = f_new[i]
        t = t_new
        if not sampled:
            record(t, y, out_t, out_y, it, _NOUT)
        if full:  # the loop's next turn pauses: the buffer is full
            it[_PENDING] = 1 + (DONE if t >= t_end else _CONTINUE)
        if t >= t_end:
            st[_T] = t
            return PAUSE if full else DONE
