"""Verification of a drive design by simulation (the ``verify`` of an optimal design,
:func:`~pinext.planning.optimize`): the drives chosen by the inverse-dynamics screening, run
with elastic transmissions under feedforward plus motor-side PD, their tracking error and motor
limits measured in the run (Vukobratović & Potkonjak, Fig. 20.10a; ``examples/size_drives.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..drives import DCMotor, Drive, ElasticTransmission
from ..drives.feedforward import elastic_drive_feedforward
from ..exceptions import InvalidParameter, NameNotFound
from ..simulation.simulate import simulate
from ..simulation.system import System
from ..validation import integer, real
from .drive_sizing import winding_temperature
from .motion import as_motion

if TYPE_CHECKING:
    from .drive_problem import DriveProblem

__all__ = ["VERIFY_KEYS", "ElasticTracking"]

#: Keys of a specification's ``[verify]`` table (:meth:`ElasticTracking.from_table`).
VERIFY_KEYS = ("stiffness", "damping", "max_tracking_error", "settle", "kp", "kd", "samples")


class ElasticTracking:
    """Verify a drive design by simulation with elastic transmissions: the links follow the
    motion under the feedforward of :func:`~pinext.planning.elastic_drive_feedforward`
    (Vukobratović & Potkonjak, Fig. 20.10a) plus motor-side PD, as in
    ``examples/size_drives.py``; the margins are each joint's peak tracking error against
    ``max_tracking_error`` and the motor limits (rated torque against the RMS of
    :math:`C_M i`, peak torque, speed, voltage, winding temperature) measured in the run.

    Args:
        problem: The :class:`DriveProblem` whose designs are verified.
        stiffness: Joint name -> torsional stiffness c [N.m/rad] of its transmission.
        damping: Joint name -> damping d [N.m.s/rad].
        max_tracking_error: Largest |q − q_ref| allowed on every joint [rad].
        settle: Time simulated after the motion ends [s].
        kp: Proportional gain [V/rad] on the motor angles.
        kd: Derivative gain [V.s/rad] on the motor speeds.
        samples: Samples of the feedforward table.
        **simulate_options: Passed to :func:`pinext.simulate` (default rtol 1e-8,
            atol 1e-10, output_dt 2e-3).
    """

    def __init__(
        self,
        problem: DriveProblem,
        stiffness: Mapping[str, float],
        damping: Mapping[str, float],
        max_tracking_error: float,
        *,
        settle: float = 0.5,
        kp: float = 2.0,
        kd: float = 0.05,
        samples: int = 2501,
        **simulate_options: Any,
    ) -> None:
        self.problem = problem
        if set(stiffness) != set(damping):
            raise InvalidParameter(
                f"stiffness and damping must name the same joints, got {sorted(stiffness)} "
                f"and {sorted(damping)}"
            )
        self.stiffness = {
            joint: real(f"stiffness[{joint!r}]", value, unit="[N.m/rad]", low=0.0, strict=True)
            for joint, value in stiffness.items()
        }
        self.damping = {
            joint: real(f"damping[{joint!r}]", value, unit="[N.m.s/rad]", low=0.0)
            for joint, value in damping.items()
        }
        self.max_tracking_error = real(
            "max_tracking_error", max_tracking_error, unit="[rad]", low=0.0, strict=True
        )
        self.settle = real("settle", settle, unit="[s]", low=0.0)
        self.kp = real("kp", kp, unit="[V/rad]", low=0.0)
        self.kd = real("kd", kd, unit="[V.s/rad]", low=0.0)
        self.samples = integer("samples", samples, low=2)
        self.options = {"rtol": 1e-8, "atol": 1e-10, "output_dt": 2e-3, **simulate_options}
        #: (design, trajectory, system) of the last run, or None.
        self.last: tuple[dict[str, Any], Any, Any] | None = None

    @classmethod
    def from_table(cls, problem: DriveProblem, table: Any) -> ElasticTracking:
        """The verification of a specification's ``[verify]`` table::

            [verify]
            max_tracking_error = 0.02          # [rad], every joint
            kp = 2.0                           # optional: motor PD [V/rad], [V.s/rad]
            kd = 0.05
            [verify.stiffness]                 # [N.m/rad] of each joint's transmission
            elbow = 1.5e4
            [verify.damping]                   # [N.m.s/rad], the same joints
            elbow = 8.0

        Raises:
            InvalidParameter: Not a table, an unknown key (the valid ones named), a joint the
                robot does not have, or a bad number.
        """
        if not isinstance(table, Mapping):
            raise InvalidParameter(f"must be a table [verify], got {table!r}")
        unknown = [k for k in table if k not in VERIFY_KEYS]
        if unknown:
            raise InvalidParameter(f"unknown keys {unknown}; valid keys: {', '.join(VERIFY_KEYS)}")
        joints = list(problem.robot.model.names)[1:]
        for key in ("stiffness", "damping"):
            values = table.get(key)
            if not isinstance(values, Mapping) or not values:
                raise InvalidParameter(f"{key} must be a table [verify.{key}] of joint = value")
            for joint in values:
                if joint not in joints:
                    raise InvalidParameter(f"{key}: {NameNotFound('joint', joint, joints)}")
        options = {k: v for k, v in table.items() if k not in ("stiffness", "damping")}
        if "max_tracking_error" not in options:
            raise InvalidParameter("needs max_tracking_error [rad]")
        return cls(problem, dict(table["stiffness"]), dict(table["damping"]), **options)

    def run(self, design: Mapping[str, Any]) -> tuple[Any, Any, dict[str, float]]:
        """(trajectory, system, margins) of one design; the last run is kept as
        :attr:`last` (design, trajectory, system) for the report's playback."""
        problem = self.problem
        rigid = problem.drives_of(design)
        robot = problem.robot_of(design)
        elastic = {  # a design's own elastic transmission (a harmonic drive) is kept
            joint: drive
            if isinstance(drive.transmission, ElasticTransmission)
            else Drive(
                drive.actuator,
                ElasticTransmission(drive.ratio, self.stiffness[joint], self.damping[joint]),
            )
            for joint, drive in rigid.items()
            if joint in self.stiffness or isinstance(drive.transmission, ElasticTransmission)
        }
        system = System(robot, drives=elastic)
        end = float(as_motion(problem.motion, samples=3).t[-1])
        t = np.linspace(0.0, end + self.settle, self.samples)
        q_ref = np.asarray(problem.motion(np.minimum(t, end))[0])
        ff = elastic_drive_feedforward(robot, elastic, t, q_ref)
        angle = system.layout["drives.motor_angle"]
        velocity = system.layout["drives.motor_velocity"]
        law = ff.control(angle, velocity, self.kp, self.kd)
        traj = simulate(
            system, t[-1], x0=system.initial_state(q_ref[0]), control=law, progress=False,
            **self.options,
        )  # fmt: skip
        reference = np.asarray(problem.motion(np.minimum(traj.t, end))[0])
        names = list(robot.model.names)[1:]
        limits = problem.limits_of(design)
        margins: dict[str, float] = {}
        x = traj.x
        omega = x[:, velocity]
        voltage = np.array([law(tk, xk) for tk, xk in zip(traj.t, x, strict=True)])
        current = traj.state("drives.current") if "drives.current" in traj.layout else None
        for k, joint in enumerate(elastic):
            c = names.index(joint)
            error = float(np.abs(traj.q[:, c] - reference[:, c]).max())
            margins[f"{joint}: peak tracking error [rad]"] = 1.0 - error / self.max_tracking_error
            lim = limits.get(joint)
            motor = elastic[joint].actuator
            if lim is None or current is None or not isinstance(motor, DCMotor):
                continue
            torque = motor.torque_constant * current[:, k]
            cycle = traj.t <= end  # the RMS over the motion, as the screening takes it
            rms = float(np.sqrt(np.trapezoid(torque[cycle] ** 2, traj.t[cycle]) / end))
            values = {
                "rated_torque": ("RMS motor torque [N.m]", rms),
                "peak_torque": ("peak motor torque [N.m]", float(np.abs(torque).max())),
                "max_speed": ("peak motor speed [rad/s]", float(np.abs(omega[:, k]).max())),
                "max_voltage": ("peak voltage [V]", float(np.abs(voltage[:, k]).max())),
            }
            r_th, tau_th = motor.thermal_resistance, motor.thermal_time_constant
            if r_th is not None and tau_th is not None:
                heat = winding_temperature(
                    traj.t, motor.resistance * current[:, k] ** 2, r_th, tau_th,
                    motor.ambient_temperature,
                )  # fmt: skip
                values["max_winding_temperature"] = (
                    "peak winding temperature [°C]",
                    float(heat.max()),
                )
            for key, (label, value) in values.items():
                limit = getattr(lim, key)
                if limit is not None:
                    margins[f"{joint}: {label}"] = 1.0 - value / limit
        self.last = (dict(design), traj, system)
        return traj, system, margins

    def __call__(self, design: Mapping[str, Any]) -> dict[str, float]:
        """The margins of one design (see the class docstring)."""
        return self.run(design)[2]
