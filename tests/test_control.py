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
