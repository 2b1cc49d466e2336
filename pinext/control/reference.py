"""Joint-space references of the built-in controllers: ``t -> (q_r, v_r, a_r)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..exceptions import InvalidParameter

#: Time step [s] of the central differences that give the velocity and acceleration of a
#: reference that returns positions only.
DIFFERENCE_STEP = 1e-4


class JointReference:
    """A reference motion in joint space, evaluated as ``(q_r, v_r, a_r)`` at any time.

    Args:
        reference: One of

            - a constant configuration, shape (nq,) (``v_r = a_r = 0``);
            - a :class:`pinext.Schedule` of configurations (values (N, nq)): ``"linear"``
              gives the interpolated positions and the slope of the current segment as
              ``v_r`` (``a_r = 0``), ``"zoh"`` the held positions (``v_r = a_r = 0``);
            - a callable ``t -> q``, ``t -> (q, v)`` or ``t -> (q, v, a)`` (e.g.
              :class:`pinext.planning.Spline3m`); missing derivatives are central
              differences with step :data:`DIFFERENCE_STEP`. A reference with ``times``
              (a spline) is held at its end values outside ``[times[0], times[-1]]``.
        nq: Size of a configuration.
        nv: Size of a velocity.
    """

    def __init__(self, reference: Any, nq: int, nv: int) -> None:
        from ..simulation.controls import Schedule

        self.nq, self.nv = nq, nv
        self.kind = "callable"
        self._zero = np.zeros(nv)
        if isinstance(reference, Schedule):
            if reference.values.shape[1] != nq:
                raise InvalidParameter(
                    f"reference Schedule has {reference.values.shape[1]} values per sample, "
                    f"expected nq = {nq} (a configuration per sample time)"
                )
            self.kind = "schedule"
            self.schedule = reference
            if reference.kind == "linear":
                self.slopes = np.diff(reference.values, axis=0) / np.diff(reference.times)[:, None]
        elif callable(reference):
            self.function: Callable = reference
            times = getattr(reference, "times", None)
            self.span = (float(times[0]), float(times[-1])) if times is not None else None
            self(0.0 if self.span is None else self.span[0])  # its form, checked at once
        else:
            try:
                value = np.array(reference, dtype=float).reshape(-1)
            except (TypeError, ValueError):
                value = np.zeros(0)
            if value.shape != (nq,) or not np.all(np.isfinite(value)):
                raise InvalidParameter(
                    f"reference must be a configuration of shape ({nq},), a Schedule of "
                    f"configurations or a function t -> q | (q, v) | (q, v, a); got {reference!r}"
                )
            self.kind = "constant"
            self.value = value

    def __call__(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q_r, v_r, a_r)`` at time t [s]."""
        if self.kind == "constant":
            return self.value, self._zero, self._zero
        if self.kind == "schedule":
            sched = self.schedule
            q = np.asarray(sched(t), dtype=float)
            if sched.kind == "zoh" or sched.times.size < 2:
                return q, self._zero, self._zero
            i = int(np.searchsorted(sched.times, t, side="right")) - 1
            if i < 0 or i >= sched.times.size - 1:
                return q, self._zero, self._zero
            return q, self.slopes[i], self._zero
        if self.span is not None:
            t = min(max(t, self.span[0]), self.span[1])
        value = self.function(t)
        if isinstance(value, tuple):
            parts = [np.asarray(p, dtype=float).reshape(-1) for p in value]
        else:
            parts = [np.asarray(value, dtype=float).reshape(-1)]
        if parts[0].shape != (self.nq,):
            raise InvalidParameter(
                f"reference({t:g}) returned a configuration of shape {parts[0].shape}, "
                f"expected ({self.nq},)"
            )
        for what, part in zip(("q", "v", "a"), parts, strict=False):
            if not np.all(np.isfinite(part)):
                raise InvalidParameter(
                    f"reference({t:g}) returned a non-finite {what}: {part}; a reference must "
                    "be finite at every time"
                )
        h = DIFFERENCE_STEP
        if len(parts) == 1:
            before, after = self._positions(t - h), self._positions(t + h)
            parts.append((after - before) / (2 * h))
            parts.append((after - 2 * parts[0] + before) / h**2)
        elif len(parts) == 2:
            parts.append((self._velocity(t + h) - self._velocity(t - h)) / (2 * h))
        return parts[0], parts[1], parts[2]

    def positions(self, times: np.ndarray) -> np.ndarray:
        """The reference configurations at the given times, shape (N, nq) (one vectorised
        call when a callable reference accepts an array of times and returns (N, nq))."""
        times = np.asarray(times, dtype=float)
        if self.kind == "callable":
            clipped = times if self.span is None else np.clip(times, *self.span)
            try:
                value = self.function(clipped)
            except Exception:  # a scalar-only function: one call per time below
                value = None
            if value is not None and not isinstance(value, tuple):
                array = np.asarray(value, dtype=float)
                if array.shape == (times.size, self.nq):
                    return array
            return np.array([self._positions(t) for t in times])
        return np.array([self(t)[0] for t in times])

    def _part(self, t: float, index: int) -> np.ndarray:
        if self.span is not None:
            t = min(max(t, self.span[0]), self.span[1])
        value = self.function(t)
        part = value[index] if isinstance(value, tuple) else value
        return np.asarray(part, dtype=float).reshape(-1)

    def _positions(self, t: float) -> np.ndarray:
        return self._part(t, 0)

    def _velocity(self, t: float) -> np.ndarray:
        return self._part(t, 1)


def gains(name: str, value: Any, n: int) -> np.ndarray:
    """A gain as a vector of n non-negative entries (a scalar is broadcast); text, booleans
    and None are refused (numpy would read "50" as 50 and True as 1)."""
    expected = f"{name} must be a non-negative number or {n} of them, got {value!r}"
    try:
        if value is None or np.asarray(value).dtype.kind not in "iuf":
            raise TypeError
        array = np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()
    except (TypeError, ValueError):
        raise InvalidParameter(expected) from None
    if not np.all(np.isfinite(array) & (array >= 0)):
        raise InvalidParameter(f"{name} must be non-negative and finite, got {value!r}")
    return array
