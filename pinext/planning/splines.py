"""Cubic spline with 3·m kinematic restrictions (Negrean et al. 2009, §2.2, eqs. (17)–(24)).

The control function of each joint is a cubic spline on the knots :math:`\\tau_0 < \\dots <
\\tau_m` whose acceleration is piecewise linear (24). The restrictions are the positions at the
knots 0, 2, 3, ..., m-2, m and the velocity and acceleration at both ends; the positions of the
second and the second-to-last knots (1 and m-1) are free: they follow from the end velocities.
With :math:`t_k = \\tau_k - \\tau_{k-1}` and the knot accelerations :math:`\\ddot q_k`, (23) is

.. math::

    q(\\tau) = \\frac{(\\tau_k-\\tau)^3}{6t_k}\\ddot q_{k-1}
             + \\frac{(\\tau-\\tau_{k-1})^3}{6t_k}\\ddot q_k
             + \\Big(\\frac{q_k}{t_k} - \\frac{t_k}{6}\\ddot q_k\\Big)(\\tau-\\tau_{k-1})
             + \\Big(\\frac{q_{k-1}}{t_k} - \\frac{t_k}{6}\\ddot q_{k-1}\\Big)(\\tau_k-\\tau),

and continuity of the velocity at the inner knots, with

.. math::

    q_1 = q_0 + t_1\\dot q_0 + \\tfrac{t_1^2}{3}\\ddot q_0 + \\tfrac{t_1^2}{6}\\ddot q_1, \\qquad
    q_{m-1} = q_m - t_m\\dot q_m + \\tfrac{t_m^2}{3}\\ddot q_m + \\tfrac{t_m^2}{6}\\ddot q_{m-1},

gives the (m-1) × (m-1) tridiagonal system :math:`A X = B` of (17)–(21) in the unknown
accelerations :math:`X = [\\ddot q_1 \\dots \\ddot q_{m-1}]`. Its first row is

.. math::

    \\Big(3t_1 + 2t_2 + \\frac{t_1^2}{t_2}\\Big)\\ddot q_1 + t_2\\ddot q_2
    = 6\\Big[\\frac{q_2-q_0}{t_2} - \\dot q_0\\frac{t_1+t_2}{t_2}
      - \\ddot q_0\\Big(\\frac{t_1}{2} + \\frac{t_1^2}{3t_2}\\Big)\\Big].

Two misprints of the paper are corrected here (the derivation above is checked in the tests
against an independent solve of the continuity conditions): in (18) the first entry of
:math:`A_1` reads :math:`t_1^2/2` for :math:`t_1^2/t_2`, and in (20) the term
:math:`(q_3-q_2)/t_3` of :math:`b_2` enters with a plus sign (as in the symmetric
:math:`b_{m-2}`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.linalg import solve_banded

from ..exceptions import InvalidParameter

__all__ = ["Spline3m"]


def _vector(name: str, value: Any, n: int) -> np.ndarray:
    try:
        array = np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()
    except ValueError:
        raise InvalidParameter(
            f"{name} must be a scalar or have {n} values (one per joint), got {value!r}"
        ) from None
    if not np.all(np.isfinite(array)):
        raise InvalidParameter(f"{name} must be finite, got {value!r}")
    return array


class Spline3m:
    """Cubic spline with 3·m kinematic restrictions (Negrean et al. 2009, (17)–(24)).

    Args:
        times: Shape (m+1,), strictly increasing knot times τ_k [s], m ≥ 3.
        positions: Shape (m+1,) or (m+1, n): joint positions at the knots [rad or m]. Rows 1
            and m-1 are ignored (they may be None or NaN): the spline sets them from the end
            conditions (see :attr:`knot_positions`).
        v0: Initial velocity, scalar or shape (n,) [rad/s or m/s].
        a0: Initial acceleration, scalar or shape (n,) [rad/s^2 or m/s^2].
        vf: Final velocity, scalar or shape (n,).
        af: Final acceleration, scalar or shape (n,).

    Calling ``spline(t)`` returns ``(q, qd, qdd)``: shapes (n,) for a scalar ``t``, (len(t), n)
    for an array.

    Raises:
        InvalidParameter: Fewer than 4 knots, times not strictly increasing, non-finite values,
            wrong shapes, or ``t`` outside ``[times[0], times[-1]]`` when called.
    """

    def __init__(
        self,
        times: Sequence[float] | np.ndarray,
        positions: Sequence[Any] | np.ndarray,
        v0: float | np.ndarray = 0.0,
        a0: float | np.ndarray = 0.0,
        vf: float | np.ndarray = 0.0,
        af: float | np.ndarray = 0.0,
    ) -> None:
        tau = np.asarray(times, dtype=float).reshape(-1)
        if tau.size < 4:
            raise InvalidParameter(
                f"Spline3m needs at least 4 knots (m >= 3), got {tau.size}: the second and the "
                "second-to-last knots carry no position, so m = 2 leaves no position to meet"
            )
        if not np.all(np.isfinite(tau)):
            raise InvalidParameter(f"knot times must be finite, got {tau}")
        steps = np.diff(tau)
        if np.any(steps <= 0):
            k = int(np.flatnonzero(steps <= 0)[0])
            raise InvalidParameter(
                f"knot times must be strictly increasing; times[{k}] = {tau[k]:g} s and "
                f"times[{k + 1}] = {tau[k + 1]:g} s"
            )
        m = tau.size - 1
        rows = [
            np.atleast_1d(np.asarray(p if p is not None else np.nan, dtype=float))
            for p in (positions[k] for k in range(len(positions)))
        ]
        if len(rows) != m + 1:
            raise InvalidParameter(
                f"positions has {len(rows)} rows, expected {m + 1} (one per knot)"
            )
        n = max(r.size for r in rows)
        q = np.full((m + 1, n), np.nan)
        for k, r in enumerate(rows):
            if k in (1, m - 1):
                continue
            if r.size != n:
                raise InvalidParameter(
                    f"positions[{k}] has {r.size} value(s), expected {n} (one per joint; a row "
                    "is not broadcast)"
                )
            q[k] = r
            if not np.all(np.isfinite(q[k])):
                raise InvalidParameter(f"positions[{k}] must be finite, got {positions[k]!r}")
        self.times = tau
        self.v0, self.a0 = _vector("v0", v0, n), _vector("a0", a0, n)
        self.vf, self.af = _vector("vf", vf, n), _vector("af", af, n)
        t = np.concatenate([[np.nan], steps])  # t[k] = τ_k − τ_{k−1}, k = 1..m
        # (17)-(20): tridiagonal A X = B, X = accelerations at knots 1..m-1
        size = m - 1
        ab = np.zeros((3, size))  # banded storage: upper, diagonal, lower
        rhs = np.zeros((size, n))
        for k in range(1, m):
            row = k - 1
            diag = 2.0 * (t[k] + t[k + 1])
            lower = t[k]  # coefficient of a_{k-1}
            upper = t[k + 1]  # coefficient of a_{k+1}
            b = np.zeros(n)
            # q_{k+1} and q_k, q_{k-1} with the free knots substituted (affine in a_1, a_{m-1})
            # 6[(q_{k+1} - q_k)/t_{k+1} - (q_k - q_{k-1})/t_k]
            coeff = {k + 1: 6.0 / t[k + 1], k: -6.0 / t[k + 1] - 6.0 / t[k], k - 1: 6.0 / t[k]}
            for j, c in coeff.items():
                if j == 1:  # q_1 = q_0 + t1 v0 + t1²/3 a0 + t1²/6 a1
                    b += c * (q[0] + t[1] * self.v0 + t[1] ** 2 / 3.0 * self.a0)
                    extra = -c * t[1] ** 2 / 6.0  # moves to the left side as a_1 coefficient
                    if k == 1:
                        diag += extra
                    else:
                        lower += extra
                elif j == m - 1:  # q_{m-1} = q_m - tm vf + tm²/3 af + tm²/6 a_{m-1}
                    b += c * (q[m] - t[m] * self.vf + t[m] ** 2 / 3.0 * self.af)
                    extra = -c * t[m] ** 2 / 6.0
                    if k == m - 1:
                        diag += extra
                    else:
                        upper += extra
                else:
                    b += c * q[j]
            if k == 1:
                b -= t[1] * self.a0
            if k == m - 1:
                b -= t[m] * self.af
            ab[1, row] = diag
            if row > 0:
                ab[2, row - 1] = lower
            if row < size - 1:
                ab[0, row + 1] = upper
            rhs[row] = b
        inner = solve_banded((1, 1), ab, rhs)  # (21)
        acc = np.vstack([self.a0, inner, self.af])
        q[1] = q[0] + t[1] * self.v0 + t[1] ** 2 / 3.0 * self.a0 + t[1] ** 2 / 6.0 * acc[1]
        q[m - 1] = q[m] - t[m] * self.vf + t[m] ** 2 / 3.0 * self.af + t[m] ** 2 / 6.0 * acc[m - 1]
        self.knot_positions = q
        """Shape (m+1, n): positions at every knot, the free knots 1 and m-1 included."""
        self.knot_accelerations = acc
        """Shape (m+1, n): accelerations at the knots (the unknowns X of (21) inside)."""
        self._t = t

    @property
    def knot_velocities(self) -> np.ndarray:
        """Shape (m+1, n): velocities at the knots, (22) at k = 1..m (and v0 at k = 0)."""
        q, a, t = self.knot_positions, self.knot_accelerations, self._t
        k = np.arange(1, q.shape[0])
        v = (a[k] / 3.0 + a[k - 1] / 6.0) * t[k][:, None] + (q[k] - q[k - 1]) / t[k][:, None]
        return np.vstack([self.v0, v])

    @property
    def duration(self) -> float:
        """τ_m − τ_0 [s]."""
        return float(self.times[-1] - self.times[0])

    def __call__(
        self, t: float | np.ndarray, *, segment: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Position, velocity and acceleration at ``t`` [s], (23)–(24).

        Args:
            t: Time(s) [s] in ``[times[0], times[-1]]``.
            segment: Evaluate the cubic of segment ``k`` (1..m, between knots k-1 and k) even
                at its end knots, e.g. to compare the left and right limits at a knot; default:
                the segment that contains ``t``.
        """
        tt = np.asarray(t, dtype=float)
        scalar_t = tt.ndim == 0
        tt = np.atleast_1d(tt)
        lo, hi = self.times[0], self.times[-1]
        if not np.all(np.isfinite(tt)):
            raise InvalidParameter(f"t must be finite times in [{lo:g}, {hi:g}] s, got {t!r}")
        slack = 1e-12 * max(1.0, abs(hi))
        if np.any(tt < lo - slack) or np.any(tt > hi + slack):
            raise InvalidParameter(
                f"t must lie in [{lo:g}, {hi:g}] s, got values from {tt.min():g} to {tt.max():g}"
            )
        tt = np.clip(tt, lo, hi)
        k = np.clip(np.searchsorted(self.times, tt, side="right"), 1, self.times.size - 1)
        if segment is not None:
            if not 1 <= segment < self.times.size:
                raise InvalidParameter(
                    f"segment must be in 1..{self.times.size - 1}, got {segment}"
                )
            k = np.full(tt.shape, int(segment))
        tk = self._t[k][:, None]
        left = (tt - self.times[k - 1])[:, None]  # τ − τ_{k−1}
        right = (self.times[k] - tt)[:, None]  # τ_k − τ
        q, a = self.knot_positions, self.knot_accelerations
        c1 = q[k] / tk - tk / 6.0 * a[k]
        c0 = q[k - 1] / tk - tk / 6.0 * a[k - 1]
        pos = right**3 / (6 * tk) * a[k - 1] + left**3 / (6 * tk) * a[k] + c1 * left + c0 * right
        vel = -(right**2) / (2 * tk) * a[k - 1] + left**2 / (2 * tk) * a[k] + c1 - c0
        acc = right / tk * a[k - 1] + left / tk * a[k]
        if scalar_t:
            return pos[0], vel[0], acc[0]
        return pos, vel, acc
