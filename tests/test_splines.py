"""Cubic spline with 3·m restrictions (Negrean et al. 2009, (17)–(24))."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.interpolate import CubicSpline

from pinext.exceptions import InvalidParameter
from pinext.planning import Spline3m


def _problem(m: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    times = np.concatenate([[0.0], np.cumsum(rng.uniform(0.2, 1.0, m))])
    positions = list(rng.standard_normal((m + 1, n)))
    positions[1] = None
    positions[m - 1] = None
    ends = rng.standard_normal((4, n))
    return times, positions, ends


def _monomial_solve(times, positions, v0, a0, vf, af) -> np.ndarray:
    """Independent construction: 4m monomial coefficients from the continuity conditions.

    Segment k (1..m) is q(τ) = c0 + c1 s + c2 s² + c3 s³ with s = τ − τ_{k−1}. Conditions:
    prescribed positions at both ends of every segment whose knot has a position, C⁰ at the
    free knots, C¹ and C² at every inner knot, and q̇, q̈ at both ends.
    """
    m = len(times) - 1
    h = np.diff(times)
    size = 4 * m
    rows, rhs = [], []

    def row(k, s, order):
        r = np.zeros(size)
        powers = [
            [1, s, s**2, s**3],
            [0, 1, 2 * s, 3 * s**2],
            [0, 0, 2, 6 * s],
        ][order]
        r[4 * k : 4 * k + 4] = powers
        return r

    for k in range(m):  # segment k spans knots k and k+1
        for knot, s in ((k, 0.0), (k + 1, h[k])):
            if positions[knot] is not None:
                rows.append(row(k, s, 0))
                rhs.append(positions[knot])
    for k in range(m - 1):  # inner knot k+1
        for order in (0, 1, 2) if positions[k + 1] is None else (1, 2):
            rows.append(row(k, h[k], order) - row(k + 1, 0.0, order))
            rhs.append(0.0)
    rows += [row(0, 0.0, 1), row(0, 0.0, 2), row(m - 1, h[-1], 1), row(m - 1, h[-1], 2)]
    rhs += [v0, a0, vf, af]
    A, b = np.array(rows), np.array(rhs)
    assert A.shape == (size, size)
    return np.linalg.solve(A, b).reshape(m, 4)


@pytest.mark.parametrize("m", [3, 4, 5, 9])
def test_interpolates_is_c2_and_meets_end_conditions(m: int) -> None:
    times, positions, (v0, a0, vf, af) = _problem(m, 3, seed=m)
    spline = Spline3m(times, positions, v0, a0, vf, af)
    q, v, a = spline(times)
    for k in range(m + 1):
        if positions[k] is not None:
            np.testing.assert_allclose(q[k], positions[k], rtol=0, atol=1e-12)
    for k in range(1, m):  # left and right limits at every inner knot
        left = spline(times[k], segment=k)
        right = spline(times[k], segment=k + 1)
        for x, y in zip(left, right, strict=True):
            assert np.abs(x - y).max() < 1e-9
    for x, y in ((v[0], v0), (a[0], a0), (v[-1], vf), (a[-1], af)):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12)


@pytest.mark.parametrize("m", [3, 6])
def test_equals_an_independent_monomial_solve(m: int) -> None:
    times, positions, (v0, a0, vf, af) = _problem(m, 1, seed=10 + m)
    scalar = [None if p is None else float(p[0]) for p in positions]
    spline = Spline3m(times, scalar, v0[0], a0[0], vf[0], af[0])
    coefficients = _monomial_solve(times, scalar, v0[0], a0[0], vf[0], af[0])
    tt = np.linspace(times[0], times[-1], 301)
    k = np.clip(np.searchsorted(times, tt, side="right") - 1, 0, m - 1)
    s = tt - times[k]
    c = coefficients[k]
    expected = c[:, 0] + c[:, 1] * s + c[:, 2] * s**2 + c[:, 3] * s**3
    expected_acc = 2 * c[:, 2] + 6 * c[:, 3] * s
    q, _, a = spline(tt)
    np.testing.assert_allclose(q[:, 0], expected, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a[:, 0], expected_acc, rtol=0, atol=1e-10)


def test_equals_scipy_clamped_cubic_spline_through_the_knots() -> None:
    """A clamped C² cubic spline through given knots is unique: scipy's is the same curve."""
    times, positions, (v0, a0, vf, af) = _problem(7, 2, seed=3)
    spline = Spline3m(times, positions, v0, a0, vf, af)
    reference = CubicSpline(times, spline.knot_positions, bc_type=((1, v0), (1, vf)))
    tt = np.linspace(times[0], times[-1], 401)
    q, v, a = spline(tt)
    for order, x in enumerate((q, v, a)):
        np.testing.assert_allclose(x, reference(tt, order), rtol=0, atol=1e-10)
    np.testing.assert_allclose(spline.knot_velocities, reference(times, 1), rtol=0, atol=1e-10)


def test_errors() -> None:
    with pytest.raises(InvalidParameter, match="strictly increasing; times\\[2\\]"):
        Spline3m([0, 1, 2, 2, 3], [0, None, 1, None, 2])
    with pytest.raises(InvalidParameter, match="at least 4 knots"):
        Spline3m([0, 1, 2], [0, None, 1])
    spline = Spline3m([0, 1, 2, 3], [0, None, None, 1])
    with pytest.raises(InvalidParameter, match="must lie in"):
        spline(3.5)


def test_end_condition_shape_error_names_the_argument() -> None:
    with pytest.raises(InvalidParameter, match="v0 must be a scalar or have 2 values"):
        Spline3m([0, 1, 2, 3], [[0, 0], None, None, [1, 1]], v0=[1, 2, 3])
