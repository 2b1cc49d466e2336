"""A control law sampled at a fixed period and held in between (zero-order hold).

A real robot's controller runs at a fixed rate: it reads the sensors at ``t_k = k T_s``,
computes the input, and the drives hold it until the next sample (MuJoCo's ``ctrl`` is used
the same way). :class:`HeldControl` is that law for :func:`pinext.simulate`
(``control_period=T_s``):

.. math::

    u(t) = \\mathrm{law}(t_k, x(t_k)), \\qquad t_k \\le t < t_{k+1}, \\quad t_k = k T_s.

Between two samples the input is a constant, so the phase runs on the compiled path
(:func:`pinext.compiled.path.solve` lands on each ``t_k``, calls the law once, and goes on with
the same compiled run; a :class:`pinext.control.JointPD` is sampled there by the kernel itself,
and its samples are added to the record, :meth:`HeldControl.record`); on the Python path each
``t_k`` is a breakpoint of the integration. The samples are kept: after the run they are the
:class:`Schedule` (``"zoh"``) that the trajectory's ``input`` output reads.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..exceptions import InvalidParameter
from .controls import ControlLaw, Schedule

#: Relative distance to a sample time under which a time is that sample's (rounding of k T_s).
SAME_SAMPLE = 1e-9


class HeldControl:
    """The law ``u(t, x)`` sampled every ``period`` from t = 0 and held in between.

    Args:
        law: The control law ``u(t, x)`` on the public state (a :class:`pinext.control.
            Controller` already wrapped by :func:`pinext.control.as_state_law`).
        period: Sample period ``T_s`` [s], > 0.
        n_inputs: Number of inputs of the System (None: the first sample's size).
        lazy: Sample at the first call in a new period (for fixed-step integrators that call
            the law once per step, at the step's start: time stepping); a call at an earlier
            time reads the inputs applied then. Otherwise the driver samples
            (:meth:`update`, :meth:`sample`) and a call returns the held input.

    Attributes:
        value: The input held now, shape (n_inputs,) (a new array at each sample).
        index: The index k of the last sample (-1 before the first).
    """

    def __init__(
        self, law: ControlLaw, period: float, n_inputs: int | None, *, lazy: bool = False
    ) -> None:
        self.law = law
        self.lazy = lazy
        self.period = float(period)
        self.n_inputs = n_inputs
        self.index = -1
        self.value = np.zeros(0 if n_inputs is None else n_inputs)
        self._times: list[float] = []
        self._values: list[np.ndarray] = []

    def index_at(self, t: float) -> int:
        """The index k of the sample that holds at time t [s] (t within rounding of
        ``k T_s`` is sample k's)."""
        return math.floor(t / self.period + SAME_SAMPLE)

    def next_time(self, t: float) -> float:
        """The first sample time after t [s]."""
        return (self.index_at(t) + 1) * self.period

    def sample(self, t: float, x: np.ndarray) -> np.ndarray:
        """Call the law at (t, x) and hold its result from t; returns the held input."""
        u = np.array(self.law(t, x), dtype=float).reshape(-1)
        if self.n_inputs is None:
            self.n_inputs = u.size
        if u.shape != (self.n_inputs,) or not np.isfinite(u).all():
            raise InvalidParameter(
                f"the control law returned {u!r} at t = {t:.9g} s; expected {self.n_inputs} "
                "finite inputs"
            )
        self.index = self.index_at(t)
        self.value = u
        self._times.append(float(t))
        self._values.append(u)
        return u

    def record(self, times: np.ndarray, values: np.ndarray) -> None:
        """Add samples taken elsewhere (a built-in law sampled inside the compiled loop,
        :mod:`pinext.compiled.sampled`): the law's results ``values[i]`` at ``times[i]``; the
        last one is held."""
        for t, u in zip(times, values, strict=True):
            self._times.append(float(t))
            self._values.append(np.array(u, dtype=float))
        if len(times):
            self.value = np.array(values[-1], dtype=float)
            self.index = self.index_at(float(times[-1]))

    def update(self, t: float, x: np.ndarray) -> None:
        """Sample at (t, x) when t is in a period not sampled yet (a run's segment starts
        there); otherwise keep holding (a segment that starts after an event in the period)."""
        if self.index_at(t) != self.index:
            self.sample(t, x)

    def __call__(self, t: float, x: Any = None) -> np.ndarray:
        """The held input (the same at every time and state of the current period)."""
        if self.lazy:
            k = self.index_at(t)
            if k > self.index:
                return self.sample(t, x)
            if k < self.index:
                return self.applied()(t)
        return self.value

    @property
    def samples(self) -> int:
        """Number of calls of the law so far."""
        return len(self._times)

    def applied(self) -> Schedule:
        """The inputs applied so far as a zero-order-hold :class:`Schedule`."""
        if not self._times:
            return Schedule([0.0], self.value[None, :], kind="zoh")
        return Schedule(self._times, np.array(self._values), kind="zoh")
