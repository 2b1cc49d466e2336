"""JointPD: proportional-derivative control to a joint reference, with optional gravity
compensation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pinocchio as pin

from ..simulation.controls import KernelForm, own_law
from ..validation import flag
from .drive_reference import JointLaw, joint_error


class JointPD(JointLaw):
    """PD control to a joint reference (a constant, a :class:`pinext.Schedule` or a spline).

    Joint torques (a System without drives):

    .. math::

        \\tau = K_p (q_r \\ominus q) + K_d (\\dot q_r - \\dot q) \\;[+\\, g(q)],

    with the gravity torque :math:`g(q)` of Pinocchio's ``computeGeneralizedGravity`` when
    ``gravity_compensation`` (Takegaki & Arimoto 1981: the reference, at rest, is then
    asymptotically stable for any positive gains). Without it a pendulum settles where
    :math:`K_p (q_r - q) = g(q)`.

    DC motors behind elastic transmissions: the same law on the motor side (Tomei 1991), in
    volts; the motor reference holds the spring deflected by the gravity torque at the
    reference :math:`g(q_r)` when ``gravity_compensation`` (:class:`~pinext.control.drive_reference.
    DriveReference`): :math:`\\theta_r = N (q_r + g(q_r)/c)`,
    :math:`u = u_r + K_p (\\theta_r - \\theta) + K_d (N \\dot q_r - \\dot\\theta)`.

    Args:
        system: The :class:`pinext.System` (or Robot) it drives.
        reference: See :class:`pinext.control.reference.JointReference`.
        kp: Proportional gain(s): [N.m/rad] (or [N/m]) on the joints, [V/rad] on the motors;
            a scalar or one per input.
        kd: Derivative gain(s): [N.m.s/rad] on the joints, [V.s/rad] on the motors.
        gravity_compensation: Add the gravity torque (see above): True or False (text such
            as ``"no"`` is refused).

    Raises:
        InvalidParameter: Negative, non-finite or mis-sized gains, a non-boolean
            ``gravity_compensation``, a reference of the wrong size, drives
            other than DC motors behind elastic transmissions.
    """

    def __init__(
        self,
        system: Any,
        reference: Any,
        kp: Any,
        kd: Any,
        *,
        gravity_compensation: bool = False,
    ) -> None:
        super().__init__(system, reference, kp, kd)
        self.gravity_compensation = flag("gravity_compensation", gravity_compensation)
        self._zero = np.zeros(self.model.nv)

    def __call__(
        self, t: float, q: np.ndarray, v: np.ndarray, sensors: dict[str, np.ndarray]
    ) -> np.ndarray:
        q_r, v_r, _ = self.reference(t)
        act = self.actuation
        if act.torque:
            tau = self.kp * joint_error(self.model, q, q_r) + self.kd * (v_r - v)
            if self.gravity_compensation:
                tau = tau + pin.computeGeneralizedGravity(self.model, self.data, q)
            return tau
        if self.gravity_compensation:
            tau_r = pin.computeGeneralizedGravity(self.model, self.data, q_r)
        else:
            tau_r = self._zero
        return act.motor_feedback(sensors, act.motor_reference(q_r, v_r, tau_r), self.kp, self.kd)

    def kernel_form(self, model: pin.Model) -> KernelForm | None:
        """The ``"joint_pd"`` form (:class:`~pinext.simulation.controls.KernelForm`) of a
        law on joint torques to a constant or :class:`pinext.Schedule` reference, without
        gravity compensation, its gains on one-DOF joints only (where ``q_r ⊖ q = q_r − q``);
        None otherwise."""
        if not own_law(self, JointPD) or self.gravity_compensation:
            return None
        if not self.actuation.torque or self.reference.kind == "callable":
            return None
        kp, kd = np.asarray(self.kp, float), np.asarray(self.kd, float)
        if kp.shape != (model.nv,) or kd.shape != (model.nv,):
            return None
        flat = np.zeros(model.nv, dtype=bool)
        for joint in model.joints[1:]:
            if joint.nq == 1 and joint.nv == 1:
                flat[joint.idx_v] = True
        if np.any((kp != 0) & ~flat) or np.any((kd != 0) & ~flat):
            return None
        return KernelForm("joint_pd", self.reference, kp, kd)
