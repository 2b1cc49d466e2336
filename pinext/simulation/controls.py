"""Control inputs: a function of (t, x), a constant, or a sampled schedule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..exceptions import InvalidParameter

ControlLaw = Callable[[float, np.ndarray], np.ndarray]


class Schedule:
    """Inputs sampled in time, held (``"zoh"``) or linearly interpolated (``"linear"``).

    Args:
        times: Shape (N,), increasing [s].
        values: Shape (N, n_inputs).
        kind: ``"zoh"`` (zero-order hold) or ``"linear"``.
    """

    def __init__(self, times: Any, values: Any, kind: str = "linear") -> None:
        self.times = np.asarray(times, dtype=float)
        self.values = np.atleast_2d(np.asarray(values, dtype=float))
        if self.values.shape[0] != self.times.size:
            self.values = self.values.T
        if self.values.shape[0] != self.times.size or np.any(np.diff(self.times) <= 0):
            raise InvalidParameter(
                "a schedule needs increasing times (N,) and values (N, n_inputs); got "
                f"times {self.times.shape}, values {np.shape(values)}"
            )
        if kind not in ("zoh", "linear"):
            raise InvalidParameter(f"unknown schedule kind '{kind}'; valid kinds: zoh, linear")
        self.kind = kind

    @property
    def breakpoints(self) -> np.ndarray:
        """Times where the input or its slope jumps; :func:`simulate` restarts there [s]."""
        return self.times

    def __call__(self, t: float, x: np.ndarray | None = None) -> np.ndarray:
        if self.kind == "zoh":
            i = max(int(np.searchsorted(self.times, t, side="right")) - 1, 0)
            return self.values[i]
        return np.array([np.interp(t, self.times, col) for col in self.values.T])


def as_control(control: Any, n_inputs: int) -> ControlLaw:
    """Turn None, a constant vector, a :class:`Schedule` or a callable into a control law."""
    if control is None:
        zero = np.zeros(n_inputs)

        def law(t: float, x: np.ndarray) -> np.ndarray:
            return zero

        law.zero = True  # type: ignore[attr-defined]
        law.value = zero  # type: ignore[attr-defined]
        return law
    if callable(control):
        return control
    value = np.asarray(control, dtype=float).reshape(-1)
    if value.size != n_inputs:
        raise InvalidParameter(f"constant control has {value.size} entries, expected {n_inputs}")

    def constant(t: float, x: np.ndarray) -> np.ndarray:
        return value

    constant.value = value  # type: ignore[attr-defined]
    return constant
