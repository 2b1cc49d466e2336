"""Shared models of the contact tests: the project's 6-DOF arm and a falling ball, and the
independent reference of the writing task's contact time (also used by bench_contact)."""

import numpy as np
import pinocchio as pin
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

import pinext as px
from pinext.robots import robot_path
from pinext.tasks import FRAME, ROTOR_INERTIA, writing_controller

URDF = robot_path("six_dof_arm")


def arm() -> pin.Model:
    """The six_dof_arm model."""
    return pin.buildModelFromUrdf(str(URDF))


def ball(mass: float = 1.0) -> pin.Model:
    """A point mass on a vertical prismatic joint with a frame "ball"."""
    model = pin.Model()
    model.name = "ball"
    j = model.addJoint(0, pin.JointModelPZ(), pin.SE3.Identity(), "z")
    model.appendBodyToJoint(j, pin.Inertia.FromSphere(mass, 0.05), pin.SE3.Identity())
    model.addFrame(pin.Frame("ball", j, 0, pin.SE3.Identity(), pin.FrameType.OP_FRAME))
    return model


def mass_matrix(model: pin.Model, data: pin.Data, q: np.ndarray) -> np.ndarray:
    M = pin.crba(model, data, q)
    return np.triu(M) + np.triu(M, 1).T


def kkt(M, h, tau, J, A):
    """Reference KKT solve of M a + h = tau + J^T F, J a + A = 0."""
    m, n = J.shape
    K = np.block([[M, -J.T], [J, np.zeros((m, m))]])
    sol = np.linalg.solve(K, np.concatenate([tau - h, -A]))
    return sol[:n], sol[n:]


def finite_difference_kinematics(constraint, model, q, v, t=0.0, eps=1e-6):
    """s^c and its first two time derivatives along q(t) = integrate(q, v t) by differences."""
    data = model.createData()

    def s(tt):
        qq = pin.integrate(model, q, v * tt)
        pin.computeAllTerms(model, data, qq, np.zeros(model.nv))
        return constraint.evaluate(model, data, t + tt).residual

    return s(0.0), (s(eps) - s(-eps)) / (2 * eps), (s(eps) - 2 * s(0.0) + s(-eps)) / eps**2


def impact_time_reference(traj) -> float:
    """The writing task's approach crossing, independently of pinext's simulator: the free
    motion under the task's controller integrated by solve_ivp at rtol 1e-13, the table height
    crossed by brentq."""
    robot = px.load_urdf(URDF, extensions=False)
    model = robot.model
    for joint, inertia in ROTOR_INERTIA.items():
        ratio = robot.transmissions[joint].reduction
        model.armature[robot.velocity_index(joint)] = inertia * ratio**2
    data = model.createData()
    fid = model.getFrameId(FRAME)
    pin.framesForwardKinematics(model, data, traj.q[0])
    ctrl = writing_controller(model, data.oMf[fid].copy(), 0.2, 10.0, 0.6, (0.8, 2.6), 0.2)

    def f(t, y):
        return np.concatenate([y[6:], pin.aba(model, data, y[:6], y[6:], ctrl(t, y[:6], y[6:]))])

    t_event = traj.events[0].t
    sol = solve_ivp(
        f,
        (0.0, t_event + 0.01),
        np.concatenate([traj.q[0], traj.v[0]]),
        method="DOP853",
        rtol=1e-13,
        atol=1e-15,
        dense_output=True,
    )

    def gap(t):
        pin.framesForwardKinematics(model, data, sol.sol(t)[:6])
        return data.oMf[fid].translation[2] - 0.2

    return brentq(gap, t_event - 0.01, t_event + 0.01, xtol=1e-15, rtol=1e-15)


def pinocchio_loop_rows(loop, model, data):
    """(φ, J, J̇ v) of a :class:`pinext.Loop`, independently of pinext's frame rows: Pinocchio's
    frame Jacobians, velocities and classical accelerations in LOCAL_WORLD_ALIGNED at the two
    frames, carried by hand to the joint point B' = B·placement, and ``pin.log3`` for a weld's
    residual (data after ``computeAllTerms``)."""
    lwa = pin.LOCAL_WORLD_ALIGNED
    ia, ib = model.getFrameId(loop.frame_a), model.getFrameId(loop.frame_b)
    oMa = pin.updateFramePlacement(model, data, ia)
    oMf = pin.updateFramePlacement(model, data, ib)
    ja, jb = pin.getFrameJacobian(model, data, ia, lwa), pin.getFrameJacobian(model, data, ib, lwa)
    va, vb = pin.getFrameVelocity(model, data, ia, lwa), pin.getFrameVelocity(model, data, ib, lwa)
    aa = pin.getFrameClassicalAcceleration(model, data, ia, lwa)
    ab = pin.getFrameClassicalAcceleration(model, data, ib, lwa)
    oMb = oMf * loop.placement
    r = oMb.translation - oMf.translation  # the lever from B to B' (world axes)
    w_b, alpha_b = vb.angular, ab.angular
    rows = [ja[:3] - (jb[:3] - pin.skew(r) @ jb[3:])]
    residual = [oMa.translation - oMb.translation]
    drift = [aa.linear - (ab.linear + np.cross(alpha_b, r) + np.cross(w_b, np.cross(w_b, r)))]
    if loop.kind == "weld":
        rows.append(ja[3:] - jb[3:])
        residual.append(oMb.rotation @ pin.log3(oMb.rotation.T @ oMa.rotation))
        drift.append(aa.angular - alpha_b)
    elif loop.kind == "hinge":
        normals = oMb.rotation @ loop.normals  # world, (3, 2)
        rows.append(normals.T @ (ja[3:] - jb[3:]))
        e_a, e_b = oMa.rotation @ loop.axis, oMb.rotation @ loop.axis
        residual.append(normals.T @ np.cross(e_b, e_a))
        turning = np.cross(w_b, normals.T)  # (2, 3): the normals' rates ω_B × n_k
        drift.append(normals.T @ (aa.angular - alpha_b) + turning @ (va.angular - w_b))
    return np.concatenate(residual), np.vstack(rows), np.concatenate(drift)
