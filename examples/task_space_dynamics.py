"""The six_dof_arm's pen tip in the task space: Λ, η, the wrench for a tip acceleration and
the dynamically consistent inverse (Lynch & Park ch. 8; Khatib 1987)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

import pinext as px


def main() -> None:
    robot = px.load_robot("six_dof_arm")
    model = robot.model
    q = np.array([0.2, 0.5, 1.0, -0.4, 1.0, 0.3])
    v = np.array([0.5, -0.3, 0.4, 0.2, -0.6, 0.1])
    np.set_printoptions(precision=3, suppress=True, linewidth=110)
    for reference in ("world", "local", "space"):
        rec = px.task_space_dynamics(robot, q, v, "pen_tip", reference)
        print(f"reference {reference!r}: Λ [kg, kg.m, kg.m²] =\n{rec.inertia}")
        print(f"  η = {rec.bias}  (gravity, Coriolis and centrifugal as a tip wrench)")
    # the wrench that accelerates the tip at 1 m/s² along x while it presses 5 N down on a
    # surface, and the joint torques that apply it; checked with Pinocchio's aba
    rec = px.task_space_dynamics(robot, q, v, "pen_tip")
    vdot = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    tip = np.array([0.0, 0.0, -5.0, 0.0, 0.0, 0.0])
    tau = rec.torque(rec.wrench(vdot, tip))
    a = pin.aba(model, model.createData(), q, v, tau - rec.jacobian.T @ tip)
    print(f"τ = {tau} N.m gives V̇ = {rec.jacobian @ a + rec.drift}")
    # near the wrist singularity (wrist_2 → 0) Λ needs damping
    q[4] = 0.0
    try:
        px.task_space_dynamics(robot, q, v, "pen_tip")
    except px.exceptions.SingularConfiguration as error:
        print(f"at wrist_2 = 0: {error}")
    damped = px.task_space_dynamics(robot, q, v, "pen_tip", damping=0.05)
    print(
        f"damped (δ = 0.05): largest eigenvalue of Λ {np.linalg.eigvalsh(damped.inertia)[-1]:.3g}"
    )


if __name__ == "__main__":
    main()
