"""A fast rest-to-rest motion of the six_dof_arm on a compliant mount (Vukobratović & Potkonjak
§20.5.1, Problem 6): the base's oscillation and its effect on the tip, with and without it."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pinocchio as pin

import pinext as px
from pinext.control.base import Controller
from pinext.planning.motion import RestToRest
from pinext.robots import robot_path

#: The mount: vertical and tilting springs [N/m, N.m/rad], lightly damped [N.s/m, N.m.s/rad].
SUPPORT = px.ElasticSupport(
    stiffness={"x": 4.0e5, "y": 4.0e5, "z": 2.0e5, "rx": 1.5e4, "ry": 1.5e4, "rz": 2.0e4},
    damping={"x": 150.0, "y": 150.0, "z": 100.0, "rx": 6.0, "ry": 6.0, "rz": 8.0},
)
Q0 = np.array([0.0, 0.4, 0.9, 0.0, 0.6, 0.0])
DQ = np.array([0.7, 0.5, -0.6, 0.5, 0.4, -0.8])
MOVE_TIME = 0.6
FRAME = "pen_tip"


class ComputedTorque(Controller):
    """Arm joints: the rigid arm's inverse dynamics along the plan plus a PD on the error
    (the controller does not know the mount); the mount's DOFs take no input. The PD gains
    follow each joint's inertia: a 10 Hz loop with damping ratio 0.7."""

    def __init__(self, robot: px.Robot, plan: RestToRest, bandwidth: float = 2 * np.pi * 10.0):
        self.model = robot.rigid_model
        self.data = self.model.createData()
        inertia = np.diag(pin.crba(self.model, self.data, plan.q0)).copy()
        self.plan = plan
        self.kp, self.kd = bandwidth**2 * inertia, 1.4 * bandwidth * inertia
        self.arm = np.array([robot.velocity_index(n) for n in list(self.model.names)[1:]])
        self.nv = robot.nv

    def __call__(self, t, q, v, sensors):
        q_d, v_d, a_d = self.plan(t)
        qa, va = q[self.arm], v[self.arm]
        tau = pin.rnea(self.model, self.data, q_d, v_d, a_d)
        tau = tau + self.kp * (q_d - qa) + self.kd * (v_d - va)
        u = np.zeros(self.nv)
        u[self.arm] = tau
        return u


def run(support: bool, duration: float = 1.5, output_dt: float = 2e-3) -> px.Trajectory:
    """The motion with (``support=True``) or without the compliant mount."""
    robot = px.load_urdf(robot_path("six_dof_arm"), extensions=False)
    if support:
        robot = px.add_support(robot, SUPPORT)
    plan = RestToRest(Q0, DQ, MOVE_TIME)
    q0 = robot.neutral()
    q0[[robot.velocity_index(n) for n in list(robot.rigid_model.names)[1:]]] = Q0
    if support:  # start on the mount's static sag under the arm's weight
        q0 = px.static_deflection(robot, q0, frame=FRAME, wrench=np.zeros(6), linear=False)
    system = px.System(robot)
    return px.simulate(
        system,
        duration,
        q0=q0,
        control=ComputedTorque(robot, plan),
        control_period=0,  # the law continuous: its stiff wrist gains, held at 1 kHz, ring
        output_dt=output_dt,
        rtol=1e-9,
        atol=1e-11,
    )


def tip_path(robot_or_model, traj: px.Trajectory) -> np.ndarray:
    """The pen tip's position along a trajectory [m], shape (N, 3)."""
    model = robot_or_model.model
    data = model.createData()
    fid = model.getFrameId(FRAME)
    out = []
    for q in traj.q:
        pin.framesForwardKinematics(model, data, q)
        out.append(data.oMf[fid].translation.copy())
    return np.array(out)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=1.5, help="simulated time [s]")
    parser.add_argument("--plot", action="store_true", help="write out/compliant_support.png")
    args = parser.parse_args(argv)
    rigid_robot = px.load_urdf(robot_path("six_dof_arm"), extensions=False)
    robot = px.add_support(rigid_robot, SUPPORT)
    q_start = robot.neutral()
    q_start[robot.nv - 6 :] = Q0
    frequencies = px.natural_frequencies(
        robot, q_start, locked_joints=list(rigid_robot.model.names)[1:]
    )
    print("mount frequencies (arm held) [Hz]:", np.array2string(frequencies, precision=2))
    on_mount, rigid = run(True, args.duration), run(False, args.duration)
    tip_mount, tip_rigid = tip_path(robot, on_mount), tip_path(rigid_robot, rigid)
    deviation = np.linalg.norm(tip_mount - tip_rigid, axis=1)
    after = on_mount.t >= MOVE_TIME
    base = on_mount.q[:, :6]
    summary = {
        "energy_balance": on_mount.energy_balance().max_relative(),
        "peak_tip_deviation_mm": 1e3 * float(deviation.max()),
        "residual_tip_deviation_mm": 1e3 * float(deviation[after].max()) if after.any() else 0.0,
        "peak_base_tilt_mrad": 1e3 * float(np.abs(base[:, 3:5] - base[0, 3:5]).max()),
    }
    for key, value in summary.items():
        print(f"{key}: {value:.4g}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        out = Path("out")
        out.mkdir(exist_ok=True)
        fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
        for k, axis in enumerate(SUPPORT.axes):
            scale, unit = (1e3, "mm") if k < 3 else (1e3, "mrad")
            axes[0 if k < 3 else 1].plot(
                on_mount.t, scale * (base[:, k] - base[0, k]), label=f"{axis} [{unit}]"
            )
        axes[0].set_ylabel("base translation from rest [mm]")
        axes[1].set_ylabel("base rotation from rest [mrad]")
        for k, name in enumerate("xyz"):
            axes[2].plot(on_mount.t, 1e3 * (tip_mount[:, k] - tip_rigid[:, k]), label=name)
        axes[2].plot(on_mount.t, 1e3 * deviation, "k", lw=0.8, label="|Δp|")
        axes[2].set_ylabel("tip on mount − tip on rigid base [mm]")
        axes[2].set_xlabel("t [s]")
        for ax in axes:
            ax.axvline(MOVE_TIME, color="0.6", lw=0.8)
            ax.legend(fontsize=8, ncol=3)
        fig.suptitle("six_dof_arm on an elastic mount: rest-to-rest motion in 0.6 s")
        fig.tight_layout()
        fig.savefig(out / "compliant_support.png", dpi=120)
        on_mount.save(out / "compliant_support.npz")
        print(f"wrote {out / 'compliant_support.png'} and {out / 'compliant_support.npz'}")
    return summary


if __name__ == "__main__":
    main()
