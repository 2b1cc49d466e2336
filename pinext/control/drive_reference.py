"""Motor references of the built-in joint-level controllers (:class:`JointPD`,
:class:`ComputedTorque`): joint torques, or DC motors behind elastic transmissions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..drives.feedforward import elastic_drive_feedforward
from ..exceptions import InvalidParameter
from ..model import FreshData
from .base import Controller
from .reference import JointReference, gains

if TYPE_CHECKING:
    from ..simulation.system import System

#: Sample step [s] and chunk length [s] of the elastic drives' feedforward tables.
FEEDFORWARD_STEP = 5e-4
FEEDFORWARD_CHUNK = 0.5
#: Samples computed beyond each end of a chunk (``numpy.gradient`` is one-sided at the ends).
_MARGIN = 8


def as_system(system_or_robot: Any) -> System:
    """The System a controller drives (a Robot is wrapped as :func:`pinext.simulate` does)."""
    from ..simulation.system import System

    return system_or_robot if isinstance(system_or_robot, System) else System(system_or_robot)


class DriveReference(FreshData):
    """What a built-in controller commands: joint torques (a System without drives, whose
    inputs are the joint torques) or the voltages of DC motors behind elastic transmissions
    (Vukobratović & Potkonjak, (20.98)–(20.99)).

    For elastic drives a joint-level command is a motor reference: the motor angle
    :math:`\\theta_r = N (q_r + \\tau_r / c)` that deflects the spring by the torque
    :math:`\\tau_r` the joint needs, and the voltage (20.64)–(20.67)
    :math:`u_r = \\frac{R}{C_M}(J \\ddot\\theta_r + B \\dot\\theta_r + \\tau_r / N) + C_E
    \\dot\\theta_r`; the feedback acts on the motor angles and speeds the drives measure,
    :math:`u = u_r + k_p (\\theta_r - \\theta) + k_d (\\dot\\theta_r - \\dot\\theta)`.

    Args:
        system: The System.

    Raises:
        InvalidParameter: A drive that is not a DC motor with an elastic transmission (the
            message names it and says what is supported).
    """

    def __init__(self, system: System) -> None:
        from ..drives import DCMotor, ElasticTransmission

        self.system = system
        self.model = system.model
        self.data = system.model.createData()
        self.torque = bool(system.torque_inputs)
        if self.torque:
            return
        motors, springs = [], []
        for joint, drive in system.drives.items():
            if not (
                isinstance(drive.actuator, DCMotor)
                and isinstance(drive.transmission, ElasticTransmission)
            ):
                raise InvalidParameter(
                    f"the built-in controllers drive joint torques or DC motors behind elastic "
                    f"transmissions; the drive of '{joint}' is {drive!r}"
                )
            motors.append(drive.actuator)
            springs.append(drive.transmission)
        if len(motors) != system.n_inputs:
            raise InvalidParameter(
                f"the System has {system.n_inputs} inputs but {len(motors)} drives: the "
                "built-in controllers drive the drives' voltages only"
            )
        self.joints = list(system.drives)
        self.index = np.array([system.robot.velocity_index(j) for j in self.joints])
        self.ratio = np.array([s.ratio for s in springs])
        self.stiffness = np.array([s.stiffness for s in springs])
        self.resistance = np.array([m.resistance for m in motors])
        self.torque_constant = np.array([m.torque_constant for m in motors])
        self.back_emf = np.array([m.back_emf_constant for m in motors])
        self.friction = np.array([m.viscous_friction for m in motors])
        keys = {
            name.rsplit(".", 1)[1]: name
            for name in system.layout
            if name.endswith((".motor_angle", ".motor_velocity"))
        }
        if set(keys) != {"motor_angle", "motor_velocity"}:
            raise InvalidParameter("elastic drives without motor angle and speed states")
        self.angle_key, self.velocity_key = keys["motor_angle"], keys["motor_velocity"]

    @property
    def size(self) -> int:
        """Number of commanded coordinates: nv for joint torques, else the drives."""
        return self.model.nv if self.torque else self.index.size

    def motor_reference(
        self, q_r: np.ndarray, v_r: np.ndarray, tau_r: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(θ_r, θ̇_r, u_r) of a static joint torque ``tau_r`` (nv,) at the reference
        (q_r, v_r): the spring deflected by it, the motor turning with the joint."""
        tau = tau_r[self.index]
        theta = self.ratio * (q_r[self.index] + tau / self.stiffness)
        omega = self.ratio * v_r[self.index]
        torque = self.friction * omega + tau / self.ratio
        voltage = self.resistance / self.torque_constant * torque + self.back_emf * omega
        return theta, omega, voltage

    def motor_feedback(
        self,
        sensors: dict[str, np.ndarray],
        reference: tuple[np.ndarray, np.ndarray, np.ndarray],
        kp: np.ndarray,
        kd: np.ndarray,
    ) -> np.ndarray:
        """``u_r + k_p (θ_r − θ) + k_d (θ̇_r − θ̇)`` [V] from the measured motor states."""
        theta, omega, voltage = reference
        return (
            voltage
            + kp * (theta - sensors[self.angle_key])
            + kd * (omega - sensors[self.velocity_key])
        )


class ElasticFeedforward:
    """:func:`pinext.drives.elastic_drive_feedforward` along a reference, tabulated chunk by
    chunk as a run reaches it (:data:`FEEDFORWARD_CHUNK` seconds sampled every
    :data:`FEEDFORWARD_STEP`, with margins so that ``numpy.gradient``'s one-sided ends are
    never used) and interpolated linearly, as :meth:`pinext.planning.Feedforward.control`.

    Args:
        actuation: The elastic drives (:class:`DriveReference`).
        reference: The reference motion.
        step: Sample step of the tables [s].
    """

    def __init__(
        self, actuation: DriveReference, reference: JointReference, step: float = FEEDFORWARD_STEP
    ) -> None:
        self.actuation = actuation
        self.reference = reference
        self.step = float(step)
        self.t = np.zeros(0)
        self.tables: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def _tabulate(self, t: float) -> None:
        n = round(FEEDFORWARD_CHUNK / self.step)
        start = np.floor(t / self.step) * self.step
        grid = start + self.step * np.arange(-_MARGIN, n + _MARGIN + 1)
        q = self.reference.positions(grid)
        system = self.actuation.system
        ff = elastic_drive_feedforward(system.robot, system.drives, grid, q)
        keep = slice(_MARGIN, grid.size - _MARGIN)
        self.t = grid[keep]
        self.tables = (ff.motor_angle[keep], ff.motor_velocity[keep], ff.voltage[keep])

    def __call__(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(θ_r, θ̇_r, u_r) at time t [s]."""
        if self.tables is None or not (self.t[0] <= t <= self.t[-1]):
            self._tabulate(t)
        assert self.tables is not None
        i = min(max(int(np.searchsorted(self.t, t)) - 1, 0), self.t.size - 2)
        w = (t - self.t[i]) / (self.t[i + 1] - self.t[i])
        theta, omega, voltage = self.tables
        return tuple(  # type: ignore[return-value]
            (1 - w) * s[i] + w * s[i + 1] for s in (theta, omega, voltage)
        )


def joint_error(model: pin.Model, q: np.ndarray, q_r: np.ndarray) -> np.ndarray:
    """``q_r ⊖ q`` (Pinocchio's ``difference``: the velocity that takes q to q_r in 1 s)."""
    return pin.difference(model, q, q_r)


class JointLaw(Controller):
    """The common part of the joint-level built-ins (:class:`~pinext.control.JointPD`,
    :class:`~pinext.control.ComputedTorque`): the System's model and a Data, the reference
    (:class:`~pinext.control.reference.JointReference`), the drives' references
    (:class:`DriveReference`) and the gains, one per commanded coordinate.

    Raises:
        InvalidParameter: Negative or mis-sized gains, a reference of the wrong size, drives
            other than DC motors behind elastic transmissions.
    """

    def __init__(self, system: Any, reference: Any, kp: Any, kd: Any) -> None:
        system = as_system(system)
        self.actuation = DriveReference(system)
        model = system.model
        self.model, self.data = model, model.createData()
        self.reference = JointReference(reference, model.nq, model.nv)
        self.kp = gains("kp", kp, self.actuation.size)
        self.kd = gains("kd", kd, self.actuation.size)

    @property
    def breakpoints(self) -> np.ndarray:
        """The times [s] where the reference jumps or kinks (a Schedule's samples): a
        continuous run stops and restarts there, as at a Schedule of inputs."""
        ref = self.reference
        return ref.schedule.times if ref.kind == "schedule" else np.zeros(0)
