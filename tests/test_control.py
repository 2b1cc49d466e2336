"""The controller contract: law(t, q, v, sensors) as the control of a run."""

import numpy as np
import pinocchio as pin

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
