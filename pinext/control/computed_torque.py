"""ComputedTorque: inverse dynamics along a reference plus PD feedback."""

from __future__ import annotations

from typing import Any

import numpy as np
import pinocchio as pin

from ..simulation.controls import KernelForm, own_law
from ..validation import real
from .drive_reference import (
    FEEDFORWARD_CHUNK,
    FEEDFORWARD_STEP,
    ElasticFeedforward,
    JointLaw,
    joint_error,
)


class ComputedTorque(JointLaw):
    """Computed-torque control to a joint reference (Spong, Hutchinson & Vidyasagar 2006,
    §8.3; Lynch & Park, §11.4).

    Joint torques (a System without drives): Pinocchio's inverse dynamics at the measured
    state for the commanded acceleration, plus the System's joint springs and dampers
    (``robot.joint_stiffness``, ``robot.joint_damping``),

    .. math::

        \\tau = \\mathrm{rnea}\\big(q, \\dot q,\\; \\ddot q_r + K_p (q_r \\ominus q)
        + K_d (\\dot q_r - \\dot q)\\big) + K (q \\ominus q_0) + D \\dot q,

    so that, held continuously, the error obeys :math:`\\ddot e + K_d \\dot e + K_p e = 0`.
    Sampled every T_s (zero-order hold) the law is exact only at the samples: the error stays
    of the order of what the hold leaves, O(T_s).

    DC motors behind elastic transmissions: the computed torque of the reference motion
    passed through the drives, Vukobratović & Potkonjak's Fig. 20.10a
    (:func:`pinext.planning.elastic_drive_feedforward`: the motor angles that deflect the
    springs by the inverse-dynamics torques and the voltages that drive the rotors along them),
    plus PD feedback on the motor angles and speeds in volts (:class:`~pinext.control.
    drive_reference.DriveReference`).

    Args:
        system: The :class:`pinext.System` (or Robot) it drives.
        reference: See :class:`pinext.control.reference.JointReference`; for elastic drives a
            function of time with continuous derivatives up to the fourth (the feedforward
            differentiates the spring deflection twice), e.g. :func:`pinext.rest_to_rest`.
        kp: Proportional gain(s): [1/s²] on the joints (the error's stiffness per unit
            inertia), [V/rad] on the motors.
        kd: Derivative gain(s): [1/s] on the joints, [V.s/rad] on the motors.
        feedforward_step: Sample step of the elastic drives' feedforward tables [s], in
            (0, :data:`~pinext.control.drive_reference.FEEDFORWARD_CHUNK`].

    Raises:
        InvalidParameter: Negative or mis-sized gains, a ``feedforward_step`` out of range,
            a reference of the wrong size, drives other than DC motors behind elastic
            transmissions.
    """

    def __init__(
        self,
        system: Any,
        reference: Any,
        kp: Any,
        kd: Any,
        *,
        feedforward_step: float = FEEDFORWARD_STEP,
    ) -> None:
        feedforward_step = real(
            "feedforward_step",
            feedforward_step,
            unit="[s]",
            low=0.0,
            high=FEEDFORWARD_CHUNK,
            strict=True,
        )
        super().__init__(system, reference, kp, kd)
        system = self.actuation.system
        self.stiffness, self.damping = system.stiffness, system.damping
        self.q_rest = system.q_rest
        self.elastic = bool(self.stiffness.any())
        self.feedforward = (
            None
            if self.actuation.torque
            else ElasticFeedforward(self.actuation, self.reference, feedforward_step)
        )

    def kernel_form(self, model: pin.Model) -> KernelForm | None:
        """The ``"joint_pd"`` form with its computed-torque ``terms``, the rows K, D, q_rest
        (:class:`~pinext.simulation.controls.KernelForm`), for joint torques on a model of
        one-DOF joints and a constant or Schedule reference; None otherwise (the law then
        runs in Python)."""
        if not own_law(self, ComputedTorque) or self.feedforward is not None:
            return None
        if self.reference.kind == "callable" or model.nv != self.model.nv:
            return None
        if any(j.nq != 1 or j.nv != 1 for j in model.joints[1:]):
            return None
        terms = np.array([self.stiffness, self.damping, self.q_rest], dtype=float)
        return KernelForm("joint_pd", self.reference, self.kp, self.kd, terms)

    def __call__(
        self, t: float, q: np.ndarray, v: np.ndarray, sensors: dict[str, np.ndarray]
    ) -> np.ndarray:
        if self.feedforward is not None:
            return self.actuation.motor_feedback(sensors, self.feedforward(t), self.kp, self.kd)
        q_r, v_r, a_r = self.reference(t)
        a_cmd = a_r + self.kp * joint_error(self.model, q, q_r) + self.kd * (v_r - v)
        tau = pin.rnea(self.model, self.data, q, v, a_cmd) + self.damping * v
        if self.elastic:
            tau += self.stiffness * pin.difference(self.model, self.q_rest, q)
        return tau
