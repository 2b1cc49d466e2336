"""A 6-DOF arm with DC motors and harmonic-drive-like elastic transmissions tracking a motion
with a computed-torque feedforward (seed 000 Fig. 20.10a) plus motor-side PD feedback."""

from __future__ import annotations

import site
import sysconfig
from pathlib import Path

import numpy as np

import pinext as px
from pinext.drives import harmonic_drives
from pinext.drives.presets import HARMONIC_DRIVE_TRANSMISSIONS
from pinext.planning import rest_to_rest, track_rest_to_rest
from pinext.robots import robot_path

ROOT = Path(__file__).resolve().parents[1]
DURATION = 2.0
RATIO = np.array([n for n, _, _ in HARMONIC_DRIVE_TRANSMISSIONS])


def load_arm() -> px.Robot:
    """The UR5 of example-robot-data if installed, else the project's six_dof_arm."""
    for base in [sysconfig.get_paths()["purelib"], *site.getsitepackages()]:
        path = (
            Path(base)
            / "cmeel.prefix/share/example-robot-data/robots"
            / "ur_description/urdf/ur5_robot.urdf"
        )
        if path.is_file():
            return px.load_urdf(path)
    return px.load_urdf(robot_path("six_dof_arm"), extensions=False)


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    robot = load_arm()
    joints = list(robot.model.names)[1:7]
    drives = harmonic_drives(joints)
    system = px.System(robot, drives=drives)
    q0 = np.array([0.0, -1.2, 1.2, -1.5, -1.57, 0.0])
    dq = np.array([1.0, 0.5, -0.6, 0.8, 0.6, -1.0])
    traj, ff = track_rest_to_rest(
        system,
        q0,
        dq,
        DURATION,
        move_time=0.75 * DURATION,
        samples=2001,
        rtol=1e-8,
        atol=1e-10,
        output_dt=2e-3,
        progress=True,
    )
    q_des = rest_to_rest(traj.t, q0, dq, 0.75 * DURATION)
    error = np.abs(traj.q - q_des).max(axis=0)
    balance = traj.energy_balance()
    print(f"robot: {robot.name} ({robot.path})")
    stats = traj.meta["stats"]
    print(f"right-hand sides: {stats['nfev']}, wall {stats['wall_time']:.2f} s")
    print("max tracking error per joint [mrad]:", np.array2string(1e3 * error, precision=3))
    print(f"energy balance residual (relative): {balance.max_relative():.2e}")

    out = Path("out")
    out.mkdir(exist_ok=True)
    motor_angle = traj.outputs["drives.motor_angle"] / RATIO
    spring = traj.outputs["drives.spring_torque"]
    fig, axes = plt.subplots(3, 1, figsize=(9, 10), sharex=True)
    for k, name in enumerate(joints):
        line = axes[0].plot(traj.t, traj.q[:, k], label=name)[0]
        axes[0].plot(traj.t, motor_angle[:, k], "--", color=line.get_color())
        axes[1].plot(traj.t, 1e3 * (motor_angle[:, k] - traj.q[:, k]), color=line.get_color())
        axes[2].plot(traj.t, spring[:, k], color=line.get_color())
        axes[2].plot(ff.t, ff.joint_torque[:, k], ":", color=line.get_color())
    axes[0].set_ylabel("link q (solid), motor θ/N (dashed) [rad]")
    axes[0].legend(ncol=3, fontsize=8)
    axes[1].set_ylabel("spring deflection θ/N − q [mrad]")
    axes[2].set_ylabel("spring torque [N.m] (dotted: rnea)")
    axes[2].set_xlabel("t [s]")
    fig.suptitle("Elastic drives with computed-torque feedforward (seed 000 Fig. 20.10a)")
    fig.tight_layout()
    fig.savefig(out / "elastic_drives.png", dpi=120)
    traj.save(out / "elastic_drives.npz")
    print(f"wrote {out / 'elastic_drives.png'} and {out / 'elastic_drives.npz'}")


if __name__ == "__main__":
    main()
