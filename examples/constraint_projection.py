"""Lynch & Park's constrained dynamics of the six_dof_arm with its pen tip held at a point:
the projection P, the multipliers λ and the tip force, against Pinocchio's constraintDynamics."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

import pinext as px
from pinext.contact import Contact, point_contact


def main() -> None:
    robot = px.load_robot("six_dof_arm")
    model = robot.model
    q = np.array([0.2, 0.5, 1.0, -0.4, 1.0, 0.3])
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    fid = model.getFrameId("pen_tip")
    anchor = data.oMf[fid].translation.copy()
    held = Contact(point_contact("pen_tip", pin.SE3(np.eye(3), anchor)), name="tip")
    system = px.System(robot, contacts=[held], joint_limits=False)
    # a velocity that keeps the tip in place (the null space of the rows A)
    jac = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)[:3]
    v = np.linalg.svd(jac)[2][3:].T @ np.array([0.5, -0.3, 0.2])
    tau = np.array([5.0, -20.0, 8.0, 1.0, -0.5, 0.2])
    rec = px.constraint_projection(system, q, v, tau, frame="pen_tip")
    np.set_printoptions(precision=4, suppress=True, linewidth=110)
    rank = np.linalg.matrix_rank(rec.projection, tol=1e-10)
    print(f"P (rank {rank} = n − k) =\n{rec.projection}")
    print(f"λ = {rec.multipliers} N (the force the tip applies to the holder)")
    print(f"F_tip = {rec.tip_wrench}")
    same = np.allclose(rec.projection @ tau, rec.projected_torque(rec.acceleration))
    print(f"P τ = P (M θ̈ + h): {same}")
    cm = pin.RigidConstraintModel(
        pin.ContactType.CONTACT_3D,
        model,
        model.frames[fid].parentJoint,
        model.frames[fid].placement,
        0,
        data.oMf[fid],
        pin.LOCAL_WORLD_ALIGNED,
    )
    models = pin.StdVec_RigidConstraintModel()
    models.append(cm)
    datas = pin.StdVec_RigidConstraintData()
    datas.append(cm.createData())
    pin.initConstraintDynamics(model, data, models, datas)
    a = pin.constraintDynamics(
        model, data, q, v, tau, models, datas, pin.ProximalSettings(1e-14, 0, 1)
    )
    force = datas[0].contact_force.vector[:3]
    print(
        f"Pinocchio: θ̈ differs by {np.abs(a - rec.acceleration).max():.1e}, its force on the "
        f"robot is −λ to {np.abs(force + rec.multipliers).max():.1e} N"
    )


if __name__ == "__main__":
    main()
