"""The controller contract: law(t, q, v, sensors) as the control of a run."""

import numpy as np
import pinocchio as pin
import pytest

import pinext as px


class Hold(px.control.Controller):
    """PD to the start pose plus the gravity torque: the arm stays where it starts."""

    def __init__(self, model, q_ref):
        self.model, self.data, self.q_ref = model, model.createData(), q_ref
        self.seen = set()

    def __call__(self, t, q, v, sensors):
        self.seen.update(sensors)
        g = pin.computeGeneralizedGravity(self.model, self.data, q)
        return g + 400.0 * (self.q_ref - q) - 40.0 * v


def test_controller_receives_q_v_and_named_component_states():
    robot = px.load_robot("six_dof_arm")
    system = px.System(robot)
    q0 = np.random.default_rng(0).uniform(-0.5, 0.5, robot.model.nq)
    law = Hold(robot.model, q0)
    # continuous: gains this stiff on the light wrist are unstable held over 1 ms
    # (k_d T_s / m ≈ 200 on the last joint; see test_control_rate)
    traj = px.simulate(system, 0.2, q0=q0, control=law, control_period=0)
    # gravity compensated exactly and the PD acts on a zero error: the pose is an equilibrium
    assert np.max(np.abs(traj.q - q0)) < 1e-9
    assert law.seen == {
        k for k in system.layout if k not in ("q", "v", "input_work", "dissipated_energy")
    }


def test_cartesian_pd_bad_inputs_say_what_is_valid():
    """CartesianPD and QuinticPath: an unknown frame lists the frames, gains of the wrong size
    and a move that ends before it starts say what was expected."""
    from pinext.control import CartesianPD, QuinticPath
    from pinext.exceptions import InvalidParameter, NameNotFound

    arm = px.load_robot("six_dof_arm")
    path = QuinticPath.of([0.5, 0.0, 0.5], [(0.0, 1.0, (0.0, 0.0, -0.1))])
    args = dict(rotation=np.eye(3), kp=[1.0, 1.0, 1.0], dp=[0.1] * 3, kr=1.0, dr=0.1, dq=0.0)
    with pytest.raises(NameNotFound, match="tool"):
        CartesianPD(arm.model, "no_such_frame", path, **args)
    with pytest.raises(InvalidParameter, match="kp"):
        CartesianPD(arm.model, "tool", path, **{**args, "kp": [1.0, 2.0]})
    with pytest.raises(InvalidParameter, match="end after it starts"):
        QuinticPath.of([0.0, 0.0, 0.0], [(1.0, 0.5, (0.0, 0.0, 1.0))])


def test_cartesian_pd_equals_its_closed_form():
    """CartesianPD (its statements ``desired`` and ``wrench``, which the compiled loop runs
    too) against the law written out here from its definition, at 20 seeded random states and
    times before, during and after two overlapping moves: Pinocchio's frame placement,
    Jacobian, velocity and gravity torque, the ramp ``10τ³ − 15τ⁴ + 6τ⁵`` and its derivative
    ``30τ²(1 − τ)²/T``. Equal to 1e-13 of the magnitudes summed (rounding only)."""
    from pinext.control import CartesianPD, QuinticPath

    robot = px.load_robot("six_dof_arm")
    model, data = robot.model, robot.model.createData()
    moves = [(0.2, 1.0, (0.1, -0.05, -0.2)), (0.7, 1.5, (0.0, 0.2, 0.05))]
    path = QuinticPath.of([0.5, 0.1, 0.4], moves)
    rng = np.random.default_rng(11)
    rotation = pin.exp3(rng.normal(size=3))
    kp, dp = np.array([800.0, 900.0, 1000.0]), np.array([40.0, 45.0, 50.0])
    kr, dr, dq = 30.0, 2.0, 0.5
    law = CartesianPD(model, "tool", path, rotation, kp=kp, dp=dp, kr=kr, dr=dr, dq=dq)
    frame = model.getFrameId("tool")
    for t in rng.uniform(0.0, 1.8, 20):
        q, v = pin.randomConfiguration(model), rng.normal(size=model.nv)
        p_d, v_d = np.array([0.5, 0.1, 0.4]), np.zeros(3)
        for t0, t1, delta in moves:
            tau = min(max((t - t0) / (t1 - t0), 0.0), 1.0)
            p_d = p_d + (10 * tau**3 - 15 * tau**4 + 6 * tau**5) * np.array(delta)
            v_d = v_d + 30 * tau**2 * (1 - tau) ** 2 / (t1 - t0) * np.array(delta)
        pin.forwardKinematics(model, data, q, v)
        oMf = pin.updateFramePlacement(model, data, frame)
        jac = pin.computeFrameJacobian(model, data, q, frame, pin.LOCAL_WORLD_ALIGNED)
        twist = jac @ v
        force = kp * (p_d - oMf.translation) + dp * (v_d - twist[:3])
        moment = kr * pin.log3(rotation @ oMf.rotation.T) - dr * twist[3:]
        gravity = pin.computeGeneralizedGravity(model, data, q)
        expected = gravity + jac[:3].T @ force + jac[3:].T @ moment - dq * v
        scale = (
            np.abs(gravity)
            + np.abs(jac[:3].T) @ (kp * (np.abs(p_d) + np.abs(oMf.translation)) + dp * np.abs(v_d))
            + np.abs(jac.T) @ np.abs(twist) * 50.0
            + kr * np.abs(jac[3:].T) @ np.full(3, np.pi)
            + dq * np.abs(v)
        )
        u = law(t, q, v)
        assert np.all(np.abs(u - expected) <= 1e-13 * scale), (t, u - expected)
