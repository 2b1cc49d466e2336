"""Shared models of the contact tests: the project's 6-DOF arm and a falling ball."""

from pathlib import Path

import numpy as np
import pinocchio as pin

URDF = Path(__file__).resolve().parents[1] / "urdf" / "six_dof_arm.urdf"


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
