"""Prescribed joint motions: samples of (q, q̇, q̈) from splines, rest-to-rest laws or data."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from scipy.interpolate import CubicSpline

from ..exceptions import InvalidParameter
from ..validation import real, vector

__all__ = ["Motion", "RestToRest", "as_motion"]


class Motion(NamedTuple):
    """A prescribed joint motion, sampled."""

    t: np.ndarray
    """Shape (N,). Sample times [s], strictly increasing."""
    q: np.ndarray
    """Shape (N, nq). Configurations [rad or m]."""
    v: np.ndarray
    """Shape (N, nv). Velocities [rad/s or m/s]."""
    a: np.ndarray
    """Shape (N, nv). Accelerations [rad/s^2 or m/s^2]."""
    law: Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
    """The continuous law ``t -> (q, v, a)`` when known (used to refine peaks), else None."""


class RestToRest:
    """The rest-to-rest law of :func:`pinext.planning.rest_to_rest` with exact derivatives.

    .. math::

        q(t) = q_0 + h(s)\\,\\Delta q, \\quad s = t/T, \\quad
        h(s) = 35 s^4 - 84 s^5 + 70 s^6 - 20 s^7,

    with zero velocity, acceleration and jerk at both ends; at rest after ``T``.

    Args:
        q0: Start configuration, shape (n,) [rad or m].
        dq: Displacement, shape (n,) [rad or m].
        duration: Move time T [s], > 0.
    """

    def __init__(self, q0: np.ndarray, dq: np.ndarray, duration: float) -> None:
        self.duration = real("duration", duration, unit="[s]", low=0.0, strict=True)
        self.q0 = vector("q0", q0, None, what="the start configuration [rad or m]")
        if np.ndim(dq) == 0:
            dq = np.full(self.q0.size, real("dq", dq, unit="[rad or m]"))
        self.dq = vector("dq", dq, self.q0.size, what="the displacement, one per joint of q0")

    def __call__(self, t: float | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q, q̇, q̈) at ``t`` [s]: shapes (n,) for a scalar, (len(t), n) for an array."""
        tt = np.asarray(t, dtype=float)
        T = self.duration
        s = np.clip(tt / T, 0.0, 1.0)[..., None]
        h = 35 * s**4 - 84 * s**5 + 70 * s**6 - 20 * s**7
        dh = 140 * s**3 - 420 * s**4 + 420 * s**5 - 140 * s**6
        ddh = 420 * s**2 - 1680 * s**3 + 2100 * s**4 - 840 * s**5
        return self.q0 + h * self.dq, dh * self.dq / T, ddh * self.dq / T**2


def as_motion(motion: Any, t: np.ndarray | None = None, *, samples: int = 1001) -> Motion:
    """Samples of a prescribed motion.

    Args:
        motion: One of: a :class:`Motion`; a callable ``t -> (q, q̇, q̈)`` such as
            :class:`~pinext.planning.Spline3m` or :class:`RestToRest`; a tuple ``(t, q)`` of
            samples (derivatives from scipy's not-a-knot ``CubicSpline``); a tuple
            ``(t, q, v, a)``; or a :class:`~pinext.planning.JointMotion`.
        t: Sample times [s] for a callable; default ``samples`` points over its ``times`` or
            ``[0, duration]``.
        samples: Number of samples when ``t`` is not given.

    Returns:
        :class:`Motion`.

    Raises:
        InvalidParameter: Unknown kind of motion, mismatched shapes or non-increasing times.
    """
    if isinstance(motion, Motion):
        return motion
    if hasattr(motion, "t") and hasattr(motion, "qdd") and hasattr(motion, "qd"):
        return _checked(Motion(motion.t, motion.q, motion.qd, motion.qdd))
    if callable(motion):
        if t is None:
            if hasattr(motion, "times"):
                lo, hi = motion.times[0], motion.times[-1]
            elif hasattr(motion, "duration"):
                lo, hi = 0.0, motion.duration
            else:
                raise InvalidParameter("give the sample times t= for a motion law without times")
            t = np.linspace(lo, hi, samples)
        t = np.asarray(t, dtype=float)
        q, v, a = (np.atleast_2d(x) for x in motion(t))
        return _checked(Motion(t, q, v, a, motion))
    if isinstance(motion, tuple) and len(motion) in (2, 4):
        t = np.asarray(motion[0], dtype=float)
        q = np.asarray(motion[1], dtype=float)
        q = q[:, None] if q.ndim == 1 else q
        if len(motion) == 4:
            v, a = (np.asarray(x, dtype=float).reshape(q.shape[0], -1) for x in motion[2:])
            return _checked(Motion(t, q, v, a))
        _increasing(t)
        if q.ndim != 2 or q.shape[0] != t.size:
            raise InvalidParameter(
                f"motion (t, q): q has shape {q.shape}, expected ({t.size}, n) (one row per "
                "sample time)"
            )
        if not np.all(np.isfinite(q)):
            k = int(np.flatnonzero(~np.isfinite(q).all(axis=1))[0])
            raise InvalidParameter(
                f"motion (t, q): q is not finite at t = {t[k]:g} s (sample {k}): {q[k]}"
            )
        spline = CubicSpline(t, q, axis=0)
        return _checked(Motion(t, q, spline(t, 1), spline(t, 2)))
    raise InvalidParameter(
        "motion must be a Motion, a callable t -> (q, qd, qdd) (Spline3m, RestToRest), "
        f"a tuple (t, q) or (t, q, v, a), got {type(motion).__name__}"
    )


def _increasing(t: np.ndarray) -> None:
    if t.ndim == 1 and not np.all(np.isfinite(t)):
        raise InvalidParameter("sample times must be finite")
    if t.ndim != 1 or t.size < 2 or np.any(np.diff(t) <= 0):
        raise InvalidParameter(
            "sample times must be a strictly increasing 1-D array of >= 2 values"
        )


def _checked(motion: Motion) -> Motion:
    _increasing(motion.t)
    n = motion.t.size
    for name in ("q", "v", "a"):
        x = getattr(motion, name)
        if x.ndim != 2 or x.shape[0] != n:
            raise InvalidParameter(f"motion.{name} has shape {x.shape}, expected ({n}, ...)")
        if not np.all(np.isfinite(x)):
            k = int(np.flatnonzero(~np.isfinite(x).all(axis=1))[0])
            raise InvalidParameter(
                f"motion.{name} is not finite at t = {motion.t[k]:g} s (sample {k}): {x[k]}"
            )
    return motion
