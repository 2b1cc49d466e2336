"""Actuator: what turns a drive's input into torque on the motor shaft.

Vukobratović & Potkonjak §20.3 write every actuator in the form (20.74)–(20.78): its own states,
an inertia that moves with the shaft, and an *active torque* — the torque on the shaft when the
shaft does not accelerate. The drive (:class:`pinext.drives.Drive`) puts the inertia into the
mechanism (reflected through a gear) or on the motor side of an elastic transmission, and the
active torque through the transmission; the acceleration step of the System does the rest.

A new actuator is one class implementing :class:`Actuator` (one file) plus one line in the
table :data:`pinext.drives.registry.ACTUATORS` (or, from user code, one call
``register_actuator("part", MyActuator)``), which makes it available to the extension format
(``[drives.<joint>.part]`` tables, ``<pinext><drive>`` children).
"""

from __future__ import annotations

import abc
import math
from typing import Any, ClassVar, NamedTuple

import numpy as np


def shared_copy(self: Any, memo: dict) -> Any:
    """``__deepcopy__`` of a frozen value object whose fields are numbers (a motor, a gear):
    the object itself, as a copy would equal it and neither can change (a run's private copy
    of its System, :func:`pinext.simulation.recorder.frozen_copy`, then shares it)."""
    return self


class ActuatorPower(NamedTuple):
    """Where an actuator's power goes at one instant [W]."""

    input: float
    """Power taken from the input (u i for a DC motor)."""
    copper: float = 0.0
    """Resistive (Joule) loss R i²."""
    friction: float = 0.0
    """Viscous friction on the shaft B θ̇²."""
    conversion: float = 0.0
    """(C_E − C_M) i θ̇: the loss when the torque and back-EMF constants differ."""


class Actuator(abc.ABC):
    """The protocol of every actuator of a :class:`pinext.drives.Drive`.

    The shaft angle θ and velocity θ̇ belong to the drive (the joint angle times the ratio, or
    the motor states of an elastic transmission); an actuator may add states of its own
    (:attr:`n_states`, stored in the System's state block :attr:`state_block`).
    """

    #: Part name in the extension format (the key of its line in
    #: :data:`pinext.drives.registry.ACTUATORS`; :func:`register_actuator` sets it).
    part: ClassVar[str] = ""
    #: What its input is: ``"voltage"``, ``"control"`` or ``"torque"``.
    input_kind: ClassVar[str] = "control"
    #: Name of the System state block of its own states (``"drives.<state_block>"``).
    state_block: ClassVar[str] = "actuator_states"

    @property
    @abc.abstractmethod
    def inertia(self) -> float:
        """Inertia moving with the shaft [kg.m^2]."""

    @property
    def n_states(self) -> int:
        """Number of states of its own."""
        return 0

    @property
    def linear(self) -> bool:
        """Whether its torque, state derivative and power are affine/quadratic in
        (θ, θ̇, states, u), u the input clipped to ±:attr:`input_bound` (the System then
        fuses the phase's right-hand side and clips the input in it)."""
        return True

    @property
    def input_bound(self) -> float:
        """The bound u_max of the input's saturation ±u_max (inf: none)."""
        return math.inf

    def saturate(self, u: float) -> float:
        """The input clipped to ±:attr:`input_bound`."""
        bound = self.input_bound
        return min(max(float(u), -bound), bound)

    @abc.abstractmethod
    def active_torque(self, states: np.ndarray, theta: float, omega: float, u: float) -> float:
        """Torque on the shaft when it does not accelerate [N.m] (u already saturated)."""

    def state_derivative(
        self, states: np.ndarray, theta: float, omega: float, u: float
    ) -> np.ndarray:
        """Time derivative of its own states (free of the shaft acceleration)."""
        return np.zeros(0)

    def power(self, states: np.ndarray, theta: float, omega: float, u: float) -> ActuatorPower:
        """Input power and losses [W]; default: a black box whose input power is the power of
        its active torque."""
        return ActuatorPower(self.active_torque(states, theta, omega, u) * omega)

    def signals(self, states: np.ndarray, theta: float, omega: float, u: float) -> dict[str, float]:
        """Recorded signals: ``voltage`` [V] (or the control), ``current`` [A], ``torque``
        [N.m] (default: the input and the active torque)."""
        return {"voltage": u, "torque": self.active_torque(states, theta, omega, u)}

    @classmethod
    def parameters(cls) -> tuple[str, ...]:
        """The keyword parameters accepted in the extension format."""
        import inspect

        signature = inspect.signature(cls.__init__)
        return tuple(name for name in signature.parameters if name != "self")

    @classmethod
    def from_spec(cls, params: dict[str, Any]) -> Actuator:
        """The actuator of an extension-file table (keys: :meth:`parameters`)."""
        return cls(**params)


class TorqueSource(Actuator):
    """An ideal torque source: the input is the shaft torque [N.m], no inertia, no losses."""

    part = "torque_source"
    input_kind = "torque"

    def __init__(self) -> None:
        pass

    @property
    def inertia(self) -> float:
        return 0.0

    def active_torque(self, states, theta, omega, u):
        return u

    def signals(self, states, theta, omega, u):
        return {"torque": u}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TorqueSource)

    def __hash__(self) -> int:
        return hash(TorqueSource)

    def __repr__(self) -> str:
        return "TorqueSource()"
