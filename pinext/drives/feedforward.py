"""The elastic drives' inverse dynamics: the motor angles and voltages that make the links
follow a motion (Vukobratović & Potkonjak, §20.4, Fig. 20.10a).

A table computed from the motion alone (Pinocchio's ``rnea`` and the drives' equations), with
no simulation: the built-in controllers (:mod:`pinext.control`) tabulate it along their
reference, and :func:`pinext.planning.track_rest_to_rest` runs it as a feedforward.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter
from ..model import Robot
from .drive import Drive
from .motor import DCMotor
from .transmission import ElasticTransmission


class Feedforward(NamedTuple):
    """Nominal drive signals along a reference motion; every field has shape (N, n_drives)."""

    t: np.ndarray
    """Shape (N,): sample times [s]."""
    motor_angle: np.ndarray
    """Motor angles θ [rad]."""
    motor_velocity: np.ndarray
    """Motor speeds θ' [rad/s]."""
    voltage: np.ndarray
    """Motor voltages u [V]."""
    joint_torque: np.ndarray
    """Joint torques from Pinocchio's inverse dynamics (``rnea``) [N.m]."""

    def control(self, angle: slice, velocity: slice, kp: float, kd: float) -> Callable:
        """A control law ``u(t, x)``: this feedforward plus motor-side PD feedback.

        Args:
            angle: Slice of the motor angles in the System state.
            velocity: Slice of the motor speeds in the System state.
            kp: Proportional gain [V/rad].
            kd: Derivative gain [V.s/rad].
        """

        def law(t: float, x: np.ndarray) -> np.ndarray:
            i = min(max(int(np.searchsorted(self.t, t)) - 1, 0), self.t.size - 2)
            w = (t - self.t[i]) / (self.t[i + 1] - self.t[i])
            at = [
                (1 - w) * s[i] + w * s[i + 1]
                for s in (self.voltage, self.motor_angle, self.motor_velocity)
            ]
            return at[0] + kp * (at[1] - x[angle]) + kd * (at[2] - x[velocity])

        return law


def elastic_drive_feedforward(
    robot: Robot, drives: Mapping[str, Drive], t: np.ndarray, q: np.ndarray
) -> Feedforward:
    """Motor angles and voltages that make the links follow ``q(t)`` (Vukobratović & Potkonjak,
    Fig. 20.10a).

    Links: :math:`\\tau = \\mathrm{rnea}(q, \\dot q, \\ddot q)` (Pinocchio's inverse dynamics).
    Springs (20.99) without damping: :math:`\\theta = N (q + \\tau / c)`. Motors (20.98) with
    (20.64)-(20.67): :math:`u = \\frac{R}{C_M}(J\\ddot\\theta + B\\dot\\theta + \\tau/N)
    + C_E\\dot\\theta`. Derivatives along the samples are taken with ``numpy.gradient``.

    Args:
        robot: The robot.
        drives: Joint name -> Drive with a :class:`DCMotor` and an :class:`ElasticTransmission`;
            the joints are the first ``len(drives)`` DOFs' order of ``drives``.
        t: Shape (N,), uniformly spaced sample times [s].
        q: Shape (N, nv) reference configurations (one-DOF joints).

    Returns:
        The :class:`Feedforward`.
    """
    motors: list[DCMotor] = []
    springs: list[ElasticTransmission] = []
    for joint, drive in drives.items():
        actuator, transmission = drive.actuator, drive.transmission
        if not (isinstance(actuator, DCMotor) and isinstance(transmission, ElasticTransmission)):
            raise InvalidParameter(
                f"drive of '{joint}' must be a DCMotor with an ElasticTransmission, got {drive!r}"
            )
        motors.append(actuator)
        springs.append(transmission)
    model, data = robot.model, robot.model.createData()
    dt = t[1] - t[0]
    v = np.gradient(q, dt, axis=0)
    a = np.gradient(v, dt, axis=0)
    tau_all = np.array(
        [pin.rnea(model, data, qi, vi, ai) for qi, vi, ai in zip(q, v, a, strict=True)]
    )
    index = [robot.velocity_index(j) for j in drives]
    tau = tau_all[:, index]
    ratio = np.array([s.ratio for s in springs])
    stiffness = np.array([s.stiffness for s in springs])
    theta = ratio * (q[:, index] + tau / stiffness)
    omega = np.gradient(theta, dt, axis=0)
    alpha = np.gradient(omega, dt, axis=0)
    inertia = np.array([m.rotor_inertia for m in motors])
    friction = np.array([m.viscous_friction for m in motors])
    resistance = np.array([m.resistance for m in motors])
    torque_constant = np.array([m.torque_constant for m in motors])
    back_emf = np.array([m.back_emf_constant for m in motors])
    torque = inertia * alpha + friction * omega + tau / ratio
    voltage = resistance / torque_constant * torque + back_emf * omega
    return Feedforward(np.asarray(t, dtype=float), theta, omega, voltage, tau)
