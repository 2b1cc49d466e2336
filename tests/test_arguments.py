"""simulate's arguments: output grid, initial-state layouts, control laws, Pinocchio objects."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.drives import DCMotor, Drive, ElasticTransmission
from pinext.simulation.arguments import as_initial_state, output_times
from tests.conftest import URDF, pendulum_urdf


@pytest.fixture
def pendulum(tmp_path) -> px.Robot:
    path = tmp_path / "p.urdf"
    path.write_text(pendulum_urdf(n=2))
    return px.load_urdf(path)


def test_output_grid_ends_at_t_final():
    np.testing.assert_allclose(
        output_times(0.0, 1.0, 0.3), [0, 0.3, 0.6, 0.9, 1.0], rtol=0, atol=1e-15
    )
    # a period that divides t_final up to rounding: no extra sample a hair before the end
    times = output_times(0.0, 0.3, 0.1)
    assert times.size == 4 and times[-1] == 0.3
    # a later phase keeps the same grid k * dt
    np.testing.assert_allclose(
        output_times(0.25, 1.0, 0.3), [0.3, 0.6, 0.9, 1.0], rtol=0, atol=1e-15
    )


def test_simulate_with_an_output_period_that_does_not_divide_t_final(pendulum):
    traj = px.simulate(pendulum, 1.0, q0=np.array([0.3, 0.1]), output_dt=0.3)
    np.testing.assert_allclose(traj.t, [0, 0.3, 0.6, 0.9, 1.0], rtol=0, atol=1e-15)
    assert traj.t[-1] == 1.0


def test_cli_prints_the_true_final_time(tmp_path, capsys):
    from pinext.cli import main

    out = tmp_path / "run.npz"
    argv = ["simulate", str(URDF / "planar3r.urdf"), "--duration", "1", "--output-dt", "0.3"]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    assert "final time [s]             1\n" in capsys.readouterr().out
    assert px.Trajectory.load(out).t[-1] == 1.0


def test_x0_as_pinocchio_state_and_with_component_states(tmp_path):
    path = tmp_path / "p.urdf"
    path.write_text(pendulum_urdf(n=1))
    robot = px.load_urdf(path)
    drive = Drive(DCMotor(1.0, 0.05, 0.05, 3e-5), ElasticTransmission(50.0, 1500.0))
    system = px.System(robot, drives={"j0": drive})
    q, v = np.array([0.2]), np.array([0.1])
    full = system.initial_state(q, v)
    nq, nv = 1, 1
    assert system.nx == nq + nv + 2 + 2  # motor angle and velocity, two energy entries
    np.testing.assert_array_equal(as_initial_state(system, np.r_[q, v]), full)
    np.testing.assert_array_equal(as_initial_state(system, full[:-2]), full)
    np.testing.assert_array_equal(as_initial_state(system, full), full)
    short = px.simulate(system, 0.01, x0=np.r_[q, v], output_dt=0.005)
    long = px.simulate(system, 0.01, x0=full, output_dt=0.005)
    np.testing.assert_array_equal(short.x, long.x)


def test_control_lists_and_scalars_are_converted(pendulum, tmp_path):
    ref = px.simulate(pendulum, 0.05, control=np.array([0.5, -0.2]), output_dt=0.01)
    listed = px.simulate(pendulum, 0.05, control=lambda t, x: [0.5, -0.2], output_dt=0.01)
    # the constant runs compiled, the Python law on the Python path: equal to the tolerance
    np.testing.assert_allclose(ref.x, listed.x, rtol=1e-9, atol=1e-11)
    path = tmp_path / "one.urdf"
    path.write_text(pendulum_urdf(n=1))
    one = px.load_urdf(path)
    scalar = px.simulate(one, 0.05, control=lambda t, x: 0.5, output_dt=0.01)
    vector = px.simulate(one, 0.05, control=np.array([0.5]), output_dt=0.01)
    np.testing.assert_allclose(scalar.x, vector.x, rtol=1e-9, atol=1e-11)


def test_robot_wrapper_is_accepted(pendulum):
    wrapper = pin.RobotWrapper(pendulum.model, pendulum.collision_model, pendulum.visual_model)
    robot = px.Robot.from_model(wrapper)
    assert robot.model is wrapper.model and robot.visual_model is wrapper.visual_model
    ref = px.simulate(pendulum, 0.05, q0=np.array([0.3, 0.1]), output_dt=0.01)
    for given in (wrapper, px.System(wrapper)):
        traj = px.simulate(given, 0.05, q0=np.array([0.3, 0.1]), output_dt=0.01)
        np.testing.assert_array_equal(traj.x, ref.x)
    with pytest.raises(px.exceptions.InvalidParameter, match="pin.RobotWrapper"):
        px.Robot.from_model("ur5")
