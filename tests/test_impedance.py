"""Cartesian impedance control (Hogan 1985): the closed loop Λ ë + D ė + K e = F_tip at any
state (Pinocchio's aba), and the static force against compliant tables = springs in series."""

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.control import ImpedanceController
from pinext.control.impedance import critical_damping
from pinext.control.task import pose_error
from pinext.exceptions import InvalidParameter
from pinext.tasks import run_force_controlled_writing

from .models import random_pose

STIFFNESS = np.array([3000.0, 2000.0, 2500.0, 80.0, 100.0, 120.0])


def classical_acceleration(model, fid, q, v, a):
    data = model.createData()
    pin.forwardKinematics(model, data, q, v, a)
    pin.updateFramePlacements(model, data)
    return pin.getFrameClassicalAcceleration(model, data, fid, pin.LOCAL_WORLD_ALIGNED).vector


@pytest.mark.parametrize("given_damping", [False, True])
def test_closed_loop_is_the_impedance(given_damping):
    """With τ from the law and a wrench F_tip applied by the frame (Pinocchio's aba with the
    reaction −F_tip as an external force), Λ(V̇_d − V̇) + D ė + K e = F_tip at seeded random
    states, Λ from crba through J (independent of the law)."""
    robot = px.load_robot("six_dof_arm")
    system = px.System(robot, joint_limits=False)
    model, fid = system.model, system.model.getFrameId("pen_tip")
    rng = np.random.default_rng(30)
    damping = np.diag([90.0, 80.0, 70.0, 3.0, 2.0, 1.0]) if given_damping else None
    for _ in range(5):
        q, v = random_pose(model, rng), rng.standard_normal(model.nv)
        goal = pin.SE3(pin.exp3(0.2 * rng.standard_normal(3)), rng.uniform(-0.5, 0.5, 3))
        twist, acc = rng.standard_normal(6), rng.standard_normal(6)
        law = ImpedanceController(
            system, "pen_tip", lambda t, g=goal, w=twist, a=acc: (g, w, a), STIFFNESS, damping
        )
        tau = law(0.0, q, v, {})
        tip = rng.standard_normal(6) * 3.0
        data = model.createData()
        jac = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
        a = pin.aba(model, model.createData(), q, v, tau - jac.T @ tip)
        vdot = classical_acceleration(model, fid, q, v, a)
        M = pin.crba(model, model.createData(), q)
        M = np.triu(M) + np.triu(M, 1).T
        jinv = np.linalg.inv(jac)
        lam = jinv.T @ M @ jinv
        pin.framesForwardKinematics(model, data, q)
        e = pose_error(data.oMf[fid], goal)
        edot = twist - jac @ v
        d = critical_damping(lam, np.diag(STIFFNESS), 1.0) if damping is None else damping
        lhs = lam @ (acc - vdot) + d @ edot + np.diag(STIFFNESS) @ e
        scale = np.abs(lam).max() * np.abs(vdot).max() + np.abs(d @ edot).max() + 1.0
        assert np.max(np.abs(lhs - tip)) < 1e-9 * scale


def test_critical_damping_gives_the_damping_ratio():
    """Every mode of Λ ë + D ė + K e = 0 has the requested ratio (the generalized eigenvalues
    of the quadratic problem: s = −ζω ± ω sqrt(ζ² − 1))."""
    rng = np.random.default_rng(31)
    b = rng.standard_normal((6, 6))
    lam = b @ b.T + 6 * np.eye(6)
    k = np.diag(rng.uniform(10, 1000, 6))
    for zeta in (0.3, 1.0):
        d = critical_damping(lam, k, zeta)
        assert np.allclose(d, d.T)
        companion = np.block(
            [[np.zeros((6, 6)), np.eye(6)], [-np.linalg.solve(lam, k), -np.linalg.solve(lam, d)]]
        )
        s = np.linalg.eigvals(companion)
        omega = np.abs(s)
        ratio = -s.real / omega
        assert np.allclose(ratio, zeta, atol=1e-6 if zeta == 1.0 else 1e-10)


def _series(env, kz):
    compliance = 1.0 / kz
    if env is not None:
        compliance += 1.0 / env.stiffness
        if env.contact_stiffness is not None:
            compliance += 1.0 / env.contact_stiffness
    return 1.0 / compliance


@pytest.mark.parametrize("environment", ["rigid", "compliant", "spring"])
def test_static_force_is_that_of_the_springs_in_series(environment):
    """The pen pressing at rest (no stroke within the run): the normal force is
    d K_z k_e/(K_z + k_e) (model (d): three springs K_z, k_c, k_e; rigid: K_z d), with the
    target a depth d below the surface; here d is chosen for 10 N. Energy balances to 1e-8."""
    from pinext.tasks import ENVIRONMENTS

    traj = run_force_controlled_writing(environment, 2.0, controller="impedance", t_write=5.0)
    task = traj.meta["task"]
    kz = task["stiffness"][2]
    env = ENVIRONMENTS[environment]
    expected = task["depth"] * _series(env, kz)
    assert abs(expected - 10.0) < 1e-12  # the depth of the task is the closed form's
    force = traj.outputs["contact.force"][-1, 0]
    assert abs(force / expected - 1.0) < 1e-8, force  # the transient has decayed to 5e-10
    assert traj.energy_balance().max_relative() < 1e-8


def test_bad_gains():
    system = px.System(px.load_robot("six_dof_arm"))
    with pytest.raises(InvalidParameter, match="stiffness"):
        ImpedanceController(system, "pen_tip", pin.SE3.Identity(), np.ones(5))
    with pytest.raises(InvalidParameter, match="positive semi-definite"):
        ImpedanceController(system, "pen_tip", pin.SE3.Identity(), -np.ones(6))
    with pytest.raises(InvalidParameter, match="target"):
        ImpedanceController(system, "pen_tip", np.zeros(3), 100.0)
    with pytest.raises(px.exceptions.NameNotFound, match="pen_tip"):
        ImpedanceController(system, "pen", pin.SE3.Identity(), 100.0)


def test_a_robot_is_controlled_as_simulate_wraps_it():
    """Before: ``ImpedanceController(robot, …)`` ended in ``AttributeError: 'Robot' object has
    no attribute 'n_inputs'``. A Robot is taken as JointPD and CartesianPD take it (the System
    simulate makes of it, joint torques as inputs); anything else is refused naming what is
    valid."""
    robot = px.load_robot("six_dof_arm")
    q0 = np.array([0.3, -0.6, 1.2, -0.4, 0.8, 0.2])
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q0)
    pose = data.oMf[robot.model.getFrameId("pen_tip")]
    law = ImpedanceController(robot, "pen_tip", pose, 50.0)
    on_system = ImpedanceController(px.System(robot), "pen_tip", pose, 50.0)
    v = np.linspace(-0.2, 0.3, 6)
    np.testing.assert_array_equal(law(0.0, q0, v, {}), on_system(0.0, q0, v, {}))
    traj = px.simulate(robot, 0.01, q0=q0, control=law, control_period=0, progress=False)
    assert traj.t[-1] == pytest.approx(0.01, abs=1e-12)
    with pytest.raises(InvalidParameter, match="expected a pinext.Robot"):
        ImpedanceController("six_dof_arm", "pen_tip", pose, 50.0)


def test_a_gain_not_positive_semi_definite_is_shown():
    """Before: "stiffness must be symmetric positive semi-definite [N/m | N.m/rad]", without
    the value given; the message now shows it and what is wrong with it."""
    system = px.System(px.load_robot("six_dof_arm"))
    with pytest.raises(InvalidParameter, match=r"stiffness .*got -1.0, of smallest eigenvalue -1"):
        ImpedanceController(system, "pen_tip", pin.SE3.Identity(), -1.0)
    skew = np.eye(6)
    skew[0, 1] = 5.0
    with pytest.raises(
        InvalidParameter, match=r"damping .* \|damping\[i, j\] - damping\[j, i\]\| is 5"
    ):
        ImpedanceController(system, "pen_tip", pin.SE3.Identity(), 100.0, skew)
