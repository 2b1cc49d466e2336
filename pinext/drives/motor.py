"""Permanent-magnet DC motor (Vukobratović & Potkonjak, §20.3.1, eqs. (20.62)–(20.67))."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..exceptions import InvalidParameter
from ..validation import describe
from .actuator import LinearActuator
from .base import Actuator, ActuatorPower, shared_copy


def _check(name: str, value: float, *, positive: bool = False) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InvalidParameter(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise InvalidParameter(
            f"{name} must be {'positive' if positive else 'non-negative'} and finite, got {value}"
        )
    return value


@dataclass(frozen=True)
class DCMotor(Actuator):
    """A permanent-magnet DC motor driven by its armature voltage.

    Mechanical and electrical equilibrium (20.62)–(20.63):

    .. math::

        J \\ddot\\theta = C_M i - B \\dot\\theta - M, \\qquad
        u = R i + L \\frac{di}{dt} + C_E \\dot\\theta,

    with rotor angle :math:`\\theta`, armature current :math:`i`, output torque :math:`M` and
    voltage :math:`u`, saturated at :math:`\\pm u_{max}` (after (20.74)). With ``inductance > 0``
    the motor is the third-order model (20.64)–(20.65) (the current is a state); with
    ``inductance == 0`` it is the reduced second-order model (20.66)–(20.67), where
    :math:`i = (u - C_E \\dot\\theta)/R`.

    In SI units :math:`C_M = C_E`; if they differ, the difference ``(C_E - C_M) i θ̇`` is booked
    as a conversion loss so that the energy audit still closes.

    *Amplifier limits.* ``voltage_limit`` U and ``current_limit`` I are the limits of the
    amplifier, not of the joint: the amplifier applies the commanded voltage clipped to ±U, and
    lowers it further where the current would exceed ±I (a current-limited voltage source),

    .. math::

        i = \\operatorname{clip}\\big((\\operatorname{clip}(u, \\pm U) - C_E \\dot\\theta)/R,\\
        \\pm I\\big), \\qquad u_{applied} = R i + C_E \\dot\\theta,

    which bounds the steady torque ``C_M i − B θ̇`` by the speed–torque envelope
    (:meth:`torque_speed_envelope`): the stall torque ``C_M I`` up to the corner speed
    ``(U − R I)/C_E``, then the voltage line down to the no-load speed (``U/C_E`` when B = 0).

    Args:
        resistance: Armature resistance R [Ohm], > 0.
        torque_constant: Torque constant C_M [N.m/A], >= 0.
        back_emf_constant: Back-EMF constant C_E [V.s/rad], >= 0.
        rotor_inertia: Rotor moment of inertia J [kg.m^2], >= 0.
        inductance: Armature inductance L [H], >= 0.
        viscous_friction: Viscous friction B on the rotor [N.m.s/rad], >= 0.
        voltage_limit: Saturation u_max [V], > 0, or None (no saturation).
        thermal_resistance: Winding-to-ambient thermal resistance R_th [K/W], > 0, or None
            (no thermal model). Used by :func:`pinext.planning.drive_requirements` only.
        thermal_time_constant: Winding thermal time constant τ_th = R_th C_th [s], > 0, or
            None; the winding temperature obeys
            :math:`\\tau_{th}\\dot T = R_{th} R i^2 - (T - T_a)` (first order).
        ambient_temperature: Ambient temperature T_a [°C].
        current_limit: Amplifier current limit I_max [A], > 0, or None (none). Needs the
            second-order model (``inductance == 0``).
    """

    __deepcopy__ = shared_copy

    resistance: float
    torque_constant: float
    back_emf_constant: float
    rotor_inertia: float
    inductance: float = 0.0
    viscous_friction: float = 0.0
    voltage_limit: float | None = None
    thermal_resistance: float | None = None
    thermal_time_constant: float | None = None
    ambient_temperature: float = 25.0
    current_limit: float | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "resistance", _check("resistance", self.resistance, positive=True))
        set_(self, "torque_constant", _check("torque_constant", self.torque_constant))
        set_(self, "back_emf_constant", _check("back_emf_constant", self.back_emf_constant))
        set_(self, "rotor_inertia", _check("rotor_inertia", self.rotor_inertia))
        set_(self, "inductance", _check("inductance", self.inductance))
        set_(self, "viscous_friction", _check("viscous_friction", self.viscous_friction))
        if self.voltage_limit is not None:
            set_(self, "voltage_limit", _check("voltage_limit", self.voltage_limit, positive=True))
        for name in ("thermal_resistance", "thermal_time_constant"):
            if getattr(self, name) is not None:
                set_(self, name, _check(name, getattr(self, name), positive=True))
        if self.current_limit is not None:
            set_(self, "current_limit", _check("current_limit", self.current_limit, positive=True))
            if self.inductance > 0:
                raise InvalidParameter(
                    "current_limit needs the second-order model (inductance 0, where the "
                    f"amplifier sets the current); got inductance {self.inductance} [H]"
                )
        if not math.isfinite(float(self.ambient_temperature)):
            raise InvalidParameter(
                f"ambient_temperature must be finite, got {self.ambient_temperature}"
            )
        set_(self, "ambient_temperature", float(self.ambient_temperature))

    @property
    def thermal(self) -> bool:
        """Whether the first-order winding thermal model is given."""
        return self.thermal_resistance is not None and self.thermal_time_constant is not None

    @property
    def order(self) -> int:
        """3 with inductance (current state), 2 without."""
        return 3 if self.inductance > 0 else 2

    @property
    def input_bound(self) -> float:
        """``voltage_limit`` [V] (inf: none); :meth:`saturate` clips the voltage there."""
        return math.inf if self.voltage_limit is None else self.voltage_limit

    def current(self, voltage: float, velocity: float) -> float:
        """Steady armature current of the second-order model (20.66) [A], within the
        amplifier's limits.

        Args:
            voltage: Commanded armature voltage u [V] (saturated here).
            velocity: Rotor velocity [rad/s].
        """
        i = (float(self.saturate(voltage)) - self.back_emf_constant * velocity) / self.resistance
        return self._clip_current(i)

    def _clip_current(self, i: float) -> float:
        if self.current_limit is None:
            return i
        return min(max(i, -self.current_limit), self.current_limit)

    @property
    def stall_torque(self) -> float:
        """Largest torque at rest [N.m]: ``C_M min(I_max, U/R)`` (inf without limits)."""
        currents = [math.inf]
        if self.current_limit is not None:
            currents.append(self.current_limit)
        if self.voltage_limit is not None:
            currents.append(self.voltage_limit / self.resistance)
        return self.torque_constant * min(currents)

    @property
    def no_load_speed(self) -> float:
        """Speed at full voltage without load [rad/s]: ``C_M U / (C_M C_E + B R)`` (``U/C_E``
        without friction; inf without a voltage limit)."""
        if self.voltage_limit is None:
            return math.inf
        damping = self.torque_constant * self.back_emf_constant + self.viscous_friction * (
            self.resistance
        )
        if damping == 0:
            return math.inf
        return self.torque_constant * self.voltage_limit / damping

    def torque_speed_envelope(self, speed: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """The steady shaft torques the amplifier allows at each speed: (lowest, highest) [N.m].

        .. math::

            T_{max}(\\dot\\theta) = C_M \\min\\big(I, (U - C_E\\dot\\theta)/R\\big)
            - B\\dot\\theta, \\qquad
            T_{min}(\\dot\\theta) = C_M \\max\\big(-I, (-U - C_E\\dot\\theta)/R\\big)
            - B\\dot\\theta

        (an absent limit drops its term). Four quadrants: the envelope of the speed–torque plane.

        Args:
            speed: Rotor speed θ̇ [rad/s], a number or an array of any shape (finite).

        Raises:
            InvalidParameter: ``speed`` is not numbers (text, None) or not finite.
        """
        wrong = (
            f"speed must be the rotor speed [rad/s], a number or an array of numbers, got "
            f"{describe(speed)}"
        )
        if isinstance(speed, (str, bytes, bool, np.bool_)) or speed is None:
            raise InvalidParameter(wrong)
        try:
            w = np.asarray(speed, dtype=float)
        except (TypeError, ValueError):
            raise InvalidParameter(wrong) from None
        if not np.all(np.isfinite(w)):
            raise InvalidParameter(f"speed must be finite [rad/s], got {speed!r}")
        high = np.full(w.shape, np.inf)
        low = np.full(w.shape, -np.inf)
        if self.voltage_limit is not None:
            high = (self.voltage_limit - self.back_emf_constant * w) / self.resistance
            low = (-self.voltage_limit - self.back_emf_constant * w) / self.resistance
        if self.current_limit is not None:
            high = np.minimum(high, self.current_limit)
            low = np.maximum(low, -self.current_limit)
        friction = self.viscous_friction * w
        return self.torque_constant * low - friction, self.torque_constant * high - friction

    def state_matrices(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The canonical form ``ẋ = C x + f M + d u`` of the motor.

        Third order (20.65), ``x = [θ, θ̇, i]``, when ``inductance > 0``; second order (20.67),
        ``x = [θ, θ̇]``, otherwise.

        Returns:
            ``(C, f, d)`` with shapes (n, n), (n,), (n,).

        Raises:
            InvalidParameter: The rotor inertia is zero (the canonical form divides by it).
        """
        if self.rotor_inertia == 0:
            raise InvalidParameter("the canonical form (20.65) needs a positive rotor_inertia")
        J, B, R, L = self.rotor_inertia, self.viscous_friction, self.resistance, self.inductance
        cm, ce = self.torque_constant, self.back_emf_constant
        if L > 0:
            C = np.array([[0.0, 1.0, 0.0], [0.0, -B / J, cm / J], [0.0, -ce / L, -R / L]])
            return C, np.array([0.0, -1.0 / J, 0.0]), np.array([0.0, 0.0, 1.0 / L])
        C = np.array([[0.0, 1.0], [0.0, -cm * ce / (R * J) - B / J]])
        return C, np.array([0.0, -1.0 / J]), np.array([0.0, cm / (R * J)])

    # -- the Actuator protocol ---------------------------------------------------------------
    part = "motor"
    input_kind = "voltage"
    state_block = "current"

    @property
    def inertia(self) -> float:
        """Rotor inertia J [kg.m^2]."""
        return self.rotor_inertia

    @property
    def n_states(self) -> int:
        """1 (the current) for the third-order model, 0 otherwise."""
        return 1 if self.inductance > 0 else 0

    @property
    def linear(self) -> bool:
        """Linear in the clipped voltage without a current limit (which clips a state)."""
        return self.current_limit is None

    def _current(self, states: np.ndarray, omega: float, u: float) -> float:
        if self.inductance > 0:
            return float(states[0])
        return self._clip_current((u - self.back_emf_constant * omega) / self.resistance)

    def applied_voltage(self, current: float, omega: float, u: float) -> float:
        """The voltage the amplifier applies [V]: u, or ``R i + C_E θ̇`` while it limits the
        current."""
        if self.current_limit is None or self.inductance > 0:
            return u
        return self.resistance * current + self.back_emf_constant * omega

    def linear_coefficients(self) -> np.ndarray | None:
        """The active torque and the current's derivative as rows over ``(θ, θ̇, i, u)``:
        ``τ_s = C_M i − B θ̇``, ``di/dt = (u − R i − C_E θ̇)/L`` (20.62), (20.64); without
        inductance, ``τ_s = C_M (u − C_E θ̇)/R − B θ̇`` over ``(θ, θ̇, u)`` (20.66). None
        with a current limit (which clips)."""
        if not self.linear:
            return None
        R, L, B = self.resistance, self.inductance, self.viscous_friction
        cm, ce = self.torque_constant, self.back_emf_constant
        if L > 0:
            return np.array([[0.0, -B, cm, 0.0], [0.0, -ce / L, -R / L, 1.0 / L]])
        return np.array([[0.0, -cm * ce / R - B, cm / R]])

    def active_torque(self, states: np.ndarray, theta: float, omega: float, u: float) -> float:
        """``C_M i - B θ̇`` (20.62)."""
        return self.torque_constant * self._current(states, omega, u) - (
            self.viscous_friction * omega
        )

    def state_derivative(
        self, states: np.ndarray, theta: float, omega: float, u: float
    ) -> np.ndarray:
        """``di/dt = (u - R i - C_E θ̇) / L`` (20.64) with inductance."""
        if self.inductance == 0:
            return np.zeros(0)
        i = float(states[0])
        di = (u - self.resistance * i - self.back_emf_constant * omega) / self.inductance
        return np.array([di])

    def power(self, states: np.ndarray, theta: float, omega: float, u: float) -> ActuatorPower:
        """``u i`` in (u as applied); ``R i²``, ``B θ̇²`` and ``(C_E - C_M) i θ̇`` lost."""
        i = self._current(states, omega, u)
        return ActuatorPower(
            self.applied_voltage(i, omega, u) * i,
            self.resistance * i * i,
            self.viscous_friction * omega * omega,
            (self.back_emf_constant - self.torque_constant) * i * omega,
        )

    def signals(self, states, theta, omega, u):
        i = self._current(states, omega, u)
        return {
            "voltage": self.applied_voltage(i, omega, u),
            "current": i,
            "torque": self.torque_constant * i,
        }

    def linear_model(self) -> LinearActuator:
        """The motor as a general linear actuator (20.74) with the matrices of
        :meth:`state_matrices` and ``T`` selecting θ̇ (used to cross-check the two paths)."""
        C, f, d = self.state_matrices()
        T = np.zeros(C.shape[0])
        T[1] = 1.0
        return LinearActuator(C, f, d, T, input_limit=self.voltage_limit)
