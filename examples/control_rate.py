"""Controllers at a control rate: computed torque on the six_dof_arm sampled at 1 kHz, 250 Hz
and continuously, and a PD with gravity compensation holding a pose."""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin

import pinext as px
from pinext.robots import robot_path

DURATION = 1.0
Q0 = np.array([0.0, -0.8, 1.0, 0.0, 0.5, 0.0])
AMPLITUDE = np.array([0.4, 0.3, -0.3, 0.5, 0.4, 0.6])


def reference(t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions [rad], velocities [rad/s] and accelerations [rad/s²] of a smooth motion."""
    w = 2.0 * np.pi
    s, c = np.sin(w * t), np.cos(w * t)
    return Q0 + AMPLITUDE * s, AMPLITUDE * w * c, -AMPLITUDE * w**2 * s


def track(periods: tuple[float, ...] = (1e-3, 4e-3, 0.0)) -> dict[float, tuple[float, float]]:
    """{control period [s] (0: continuous): (largest tracking error [rad], wall time [s])}."""
    robot = px.load_urdf(robot_path("six_dof_arm"), extensions=False)
    system = px.System(robot, joint_limits=False)
    law = px.control.ComputedTorque(system, reference, kp=400.0, kd=40.0)
    q_start, v_start, _ = reference(0.0)
    results = {}
    for period in periods:
        started = time.perf_counter()
        traj = px.simulate(
            system, DURATION, q0=q_start, v0=v_start, control=law, control_period=period,
            output_dt=0.005, rtol=1e-9, atol=1e-11,
        )  # fmt: skip
        wall = time.perf_counter() - started
        q_ref = np.array([reference(t)[0] for t in traj.t])
        results[period] = (float(np.abs(traj.q - q_ref).max()), wall)
    return results


def hold_pose() -> float:
    """PD + gravity compensation (1 kHz) from the neutral pose to Q0: the final error [rad].

    The gains follow each joint's inertia at the goal (ω = 30 rad/s, critically damped): the
    wrist's last joint is 10⁴ times lighter than the shoulder, and uniform gains stiff enough
    for the shoulder make the held law unstable there (k_d T_s / m ≫ 2)."""
    robot = px.load_urdf(robot_path("six_dof_arm"), extensions=False)
    system = px.System(robot, joint_limits=False)
    inertia = np.diag(pin.crba(robot.model, robot.model.createData(), Q0))
    omega = 30.0
    law = px.control.JointPD(system, Q0, kp=omega**2 * inertia, kd=2 * omega * inertia,
                             gravity_compensation=True)  # fmt: skip
    traj = px.simulate(system, 3.0, control=law, output_dt=0.01)
    return float(np.abs(traj.q[-1] - Q0).max())


def main() -> None:
    for period, (error, wall) in track().items():
        label = "continuous" if period == 0 else f"{1 / period:.0f} Hz"
        print(f"computed torque, {label:>10}: largest error {error:.2e} rad, {wall:.2f} s")
    print(f"PD + gravity compensation: final error {hold_pose():.1e} rad")


if __name__ == "__main__":
    main()
