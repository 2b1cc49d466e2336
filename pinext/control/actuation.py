"""From the joint torques a control law asks for to the System's inputs.

A task-space law computes joint torques τ_d [N.m or N]. What it must output depends on how
the System is actuated (``System.describe()``, row ``inputs``):

* **joint torques** (no drives): ``u = τ_d``.
* **rigid drives** (no transmission or a :class:`pinext.Gear`): the actuator must produce
  the shaft torque ``τ_s = τ_d / N``. The actuator's input is found from its own law
  ``τ_s = active_torque(states, θ, θ̇, u)``, affine in u for every actuator with a direct
  input (a DC motor without inductance: ``u = R (τ_s + B θ̇) / C_M + C_E θ̇`` (20.74);
  an ideal torque source: ``u = τ_s``; a linear actuator).
* **elastic transmissions** ((20.98)–(20.99)): the joint receives the spring torque
  ``c (θ/N − q) + d (θ̇/N − q̇)``, not the motor's. The motor is servoed to the angle that
  makes the spring carry τ_d, ``θ_d = N (q + τ_d / c)``, with the feedforward ``τ_d / N``:

  .. math::

      \\tau_s = \\tau_d / N + k_m (\\theta_d - \\theta) + d_m (N \\dot q - \\dot\\theta),

  k_m = J_m ω_m², d_m = 2 J_m ω_m (J_m the motor-side inertia, ω_m the loop's bandwidth).
  At rest the motor's balance ``τ_s = τ_spring / N`` gives ``τ_spring = τ_d`` exactly,
  whatever the gains: a static task-space law keeps its steady state (its force, its
  stiffness) through elastic joints. The damping term damps the transmission's oscillation.
  Since the servo keeps each rotor with its link, the laws plan τ_d for the links *and* the
  rotors: their model carries ``J_m N²`` as armature on those joints
  (:attr:`Actuation.reflected_inertia`; the singular-perturbation view of a stiff
  transmission), and the springs' target leaves out the rotors' share ``J_m N² q̈_ref`` of
  the accelerations the law plans, ``θ_d = N (q + (τ_d − J_m N² q̈_ref)/c)`` (zero at rest).
  Without these the rotors' inertia, unknown to the law, lags the torque: the writing
  task's force rings for seconds at 1.6 Hz and errs by 13 % while writing; with them it
  settles in 0.5 s and errs by about 2 % while writing.

Joints without a drive receive no torque (their entries of τ_d are dropped). Gear efficiency
is not compensated (a lossy gear delivers ``η N τ_s`` when driving). Actuators without a
direct input (a DC motor with inductance, whose current is a state) are not supported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..exceptions import InvalidParameter

if TYPE_CHECKING:
    from ..simulation.system import System

#: Default bandwidth of the motor-angle loop of elastic drives [rad/s].
MOTOR_BANDWIDTH = 2 * np.pi * 30.0


class Actuation:
    """The map ``u = inputs(q, v, sensors, τ_d)`` of one System.

    Args:
        system: The System the law controls.
        motor_bandwidth: ω_m [rad/s] of the motor-angle loop of elastic drives.

    Raises:
        InvalidParameter: Inputs that are neither joint torques nor drives, or an actuator
            without a direct input.
    """

    def __init__(self, system: System, motor_bandwidth: float = MOTOR_BANDWIDTH) -> None:
        if not (np.isfinite(motor_bandwidth) and motor_bandwidth > 0):
            raise InvalidParameter(
                f"motor_bandwidth must be a positive number [rad/s], got {motor_bandwidth}"
            )
        self.n_inputs = system.n_inputs
        self.torque_inputs = system.torque_inputs
        self.drives = None
        #: Shape (nv,). The elastic drives' motor-side inertia reflected to their joints,
        #: J_m N² [kg.m^2]: the inertia the joint torque must also move when the servo keeps
        #: the motor with its link (zero elsewhere).
        self.reflected_inertia = np.zeros(system.model.nv)
        if self.torque_inputs:
            return
        from ..drives.drive import DriveComponent

        owners = [c for c in system.components if c.n_inputs]
        drives = [c for c in owners if isinstance(c, DriveComponent)]
        if len(drives) != 1 or len(owners) != 1:
            raise InvalidParameter(
                "a task-space controller needs a System whose inputs are joint torques or its "
                f"drives' inputs; this one's inputs belong to {[c.name for c in owners]}"
            )
        comp = drives[0]
        self.drives = comp
        self.inputs = comp.layout.inputs
        for joint, src in zip(comp.joints, comp.sources, strict=True):
            gain = self._gain(src, np.zeros(src.n_states), 0.0, 0.0)
            if not gain:
                raise InvalidParameter(
                    f"the actuator of joint '{joint}' ({type(src).__name__}) has no direct "
                    "input (its torque does not depend on u at once, e.g. a DC motor with "
                    "inductance): a torque-level controller cannot drive it"
                )
        el = comp.elastic
        inertia = comp.motor_inertia[el]
        self.reflected_inertia[comp.iv[el]] = inertia * comp.ratio[el] ** 2
        self.k_motor = inertia * motor_bandwidth**2
        self.d_motor = 2.0 * inertia * motor_bandwidth
        self.angle_key = f"{comp.name}.motor_angle"
        self.velocity_key = f"{comp.name}.motor_velocity"

    @staticmethod
    def _gain(src, states: np.ndarray, theta: float, omega: float) -> float:
        return src.active_torque(states, theta, omega, 1.0) - src.active_torque(
            states, theta, omega, 0.0
        )

    def __call__(
        self,
        q: np.ndarray,
        v: np.ndarray,
        sensors: dict[str, np.ndarray],
        torque: np.ndarray,
        acceleration: np.ndarray | None = None,
    ) -> np.ndarray:
        """The System's inputs (shape ``(n_inputs,)``) that apply the joint torques
        ``torque`` (shape (nv,)) [N.m or N].

        ``acceleration`` (shape (nv,)), the joint accelerations the law plans for, takes the
        rotors' share ``J_m N² q̈`` off the springs' target (the law's τ_d moves links and
        rotors); None: zero."""
        if self.drives is None:
            return np.asarray(torque, dtype=float)
        comp = self.drives
        iv, ratio = comp.iv, comp.ratio
        shaft = torque[iv] / ratio
        theta = ratio * comp.joint_angle(q)
        omega = ratio * v[iv]
        el = comp.elastic
        if el.size:
            angle, speed = sensors[self.angle_key], sensors[self.velocity_key]
            carried = torque[iv[el]]
            if acceleration is not None:
                carried = carried - self.reflected_inertia[iv[el]] * acceleration[iv[el]]
            target = ratio[el] * (q[comp.iq[el]] + carried / comp.stiffness)
            shaft[el] += self.k_motor * (target - angle) + self.d_motor * (omega[el] - speed)
            theta[el], omega[el] = angle, speed
        u = np.zeros(self.n_inputs)
        for i, src in enumerate(comp.sources):
            states = self._states(sensors, i)
            base = src.active_torque(states, theta[i], omega[i], 0.0)
            gain = src.active_torque(states, theta[i], omega[i], 1.0) - base
            u[self.inputs.start + i] = (shaft[i] - base) / gain
        return u

    def _states(self, sensors: dict[str, np.ndarray], i: int) -> np.ndarray:
        """Drive i's own actuator states from the sensors."""
        comp = self.drives
        assert comp is not None
        for name, members in comp.blocks.items():
            for j, offset, size in members:
                if j == i:
                    return sensors[f"{comp.name}.{name}"][offset : offset + size]
        return np.zeros(0)
