"""Computed-torque feedforward through elastic DC drives (Vukobratović & Potkonjak, §20.4, Fig.
20.10a): a rest-to-rest motion tracked with the drives' inverse-dynamics table
(:func:`elastic_drive_feedforward`, in :mod:`pinext.drives.feedforward`) plus motor-side PD."""

from __future__ import annotations

import numpy as np

from ..drives.feedforward import Feedforward, elastic_drive_feedforward
from ..simulation.simulate import simulate
from ..simulation.system import System
from ..simulation.trajectory import Trajectory

__all__ = ["Feedforward", "elastic_drive_feedforward", "rest_to_rest", "track_rest_to_rest"]


def rest_to_rest(t: np.ndarray, q0: np.ndarray, dq: np.ndarray, duration: float) -> np.ndarray:
    """A rest-to-rest motion ``q0 -> q0 + dq`` in ``duration`` [s], then at rest.

    The 7th-order polynomial :math:`h(s) = 35 s^4 - 84 s^5 + 70 s^6 - 20 s^7` starts and ends
    with zero velocity, acceleration and jerk, so the drive voltages stay continuous.

    Returns:
        Shape (len(t), n) [rad or m].
    """
    s = np.clip(np.asarray(t, dtype=float) / duration, 0.0, 1.0)[:, None]
    return q0 + (35 * s**4 - 84 * s**5 + 70 * s**6 - 20 * s**7) * dq


def track_rest_to_rest(
    system: System,
    q0: np.ndarray,
    dq: np.ndarray,
    duration: float,
    *,
    move_time: float | None = None,
    kp: float = 2.0,
    kd: float = 0.05,
    samples: int = 1501,
    **simulate_options,
) -> tuple[Trajectory, Feedforward]:
    """Track ``q0 -> q0 + dq`` through the System's elastic DC drives (Vukobratović & Potkonjak,
    Fig. 20.10a).

    The feedforward of :func:`elastic_drive_feedforward` along :func:`rest_to_rest`, plus
    motor-side PD feedback; the run starts at rest with the springs deflected to hold gravity.

    Args:
        system: A System whose drives are DC motors with elastic transmissions.
        q0: Start configuration.
        dq: Displacement [rad or m].
        duration: Simulated time [s].
        move_time: Duration of the motion [s] (default ``0.8 * duration``).
        kp: Proportional gain [V/rad] on the motor angles.
        kd: Derivative gain [V.s/rad] on the motor speeds.
        samples: Number of samples of the feedforward.
        **simulate_options: Passed to :func:`pinext.simulate` (tolerances, output_dt, ...).

    Returns:
        (the trajectory, the feedforward).
    """
    move_time = 0.8 * duration if move_time is None else move_time
    t_ref = np.linspace(0.0, duration, samples)
    ff = elastic_drive_feedforward(
        system.robot, system.drives, t_ref, rest_to_rest(t_ref, q0, dq, move_time)
    )
    control = ff.control(
        system.layout["drives.motor_angle"], system.layout["drives.motor_velocity"], kp, kd
    )
    traj = simulate(
        system, duration, x0=system.initial_state(q0), control=control, **simulate_options
    )
    return traj, ff
