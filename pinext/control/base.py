"""The controller contract: ``u = law(t, q, v, sensors)``."""

from __future__ import annotations

from typing import Any

import numpy as np


class Controller:
    """Base class of control laws ``u = law(t, q, v, sensors)``.

    Subclasses implement :meth:`__call__`. ``q`` and ``v`` are the System's generalized
    positions [m, rad] and velocities [m/s, rad/s]; ``sensors`` maps each component state's
    name (the System's layout keys other than ``q`` and ``v``, e.g.
    ``"drive:shoulder.motor_angle"``) to its current value. The result is the input vector
    of the System (shape ``(n_inputs,)``).
    """

    def __call__(
        self, t: float, q: np.ndarray, v: np.ndarray, sensors: dict[str, np.ndarray]
    ) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} does not implement __call__")


#: Layout entries that are bookkeeping, not sensors.
_BOOKKEEPING = ("q", "v", "input_work", "dissipated_energy")


def as_state_law(controller: Any, layout: dict[str, slice]) -> Any:
    """The law ``u(t, x)`` on the public state that calls ``controller(t, q, v, sensors)``.

    Args:
        controller: A :class:`Controller` (or any callable with that signature).
        layout: The System's layout (name -> slice of the public state).
    """
    sq, sv = layout["q"], layout["v"]
    sensed = {k: s for k, s in layout.items() if k not in _BOOKKEEPING}

    def law(t: float, x: np.ndarray) -> np.ndarray:
        sensors = {k: x[s] for k, s in sensed.items()}
        return controller(t, x[sq], x[sv], sensors)

    law.controller = controller  # type: ignore[attr-defined]
    return law
