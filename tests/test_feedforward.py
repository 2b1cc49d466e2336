"""Computed-torque feedforward through elastic DC drives (seed 000 Fig. 20.10a)."""

import numpy as np
import pytest

import pinext as px
from pinext.drives import DCMotor, Drive, ElasticTransmission, Gear
from pinext.exceptions import InvalidParameter
from pinext.planning import rest_to_rest, track_rest_to_rest
from tests.conftest import pendulum_urdf


@pytest.fixture
def arm(tmp_path):
    path = tmp_path / "p.urdf"
    path.write_text(pendulum_urdf(n=2))
    return px.load_urdf(path)


MOTOR = DCMotor(resistance=0.8, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=2e-5)


def test_rest_to_rest_is_smooth_and_reaches_the_goal():
    t = np.linspace(0.0, 1.0, 1001)
    q = rest_to_rest(t, np.array([0.1]), np.array([0.5]), 0.8)
    assert q[0, 0] == 0.1 and np.all(q[t >= 0.8, 0] == pytest.approx(0.6))
    v = np.gradient(q[:, 0], t)
    assert abs(v[0]) < 1e-6 and abs(v[800]) < 1e-4 and v.max() > 0.5


def test_open_loop_feedforward_makes_the_links_follow(arm):
    """Without feedback the motors' voltages alone must move the links along the reference:
    the feedforward inverts (20.64)-(20.67), the springs (20.99) and the links (rnea)."""
    drives = {j: Drive(MOTOR, ElasticTransmission(50.0, 400.0)) for j in ("j0", "j1")}
    system = px.System(arm, drives=drives)
    q0, dq = np.array([0.3, -0.2]), np.array([0.6, 0.4])
    options = dict(output_dt=0.01, rtol=1e-8, atol=1e-10)
    traj, ff = track_rest_to_rest(system, q0, dq, 1.0, kp=0.0, kd=0.0, samples=4001, **options)
    error = np.abs(traj.q - rest_to_rest(traj.t, q0, dq, 0.8)).max()
    assert error < 2e-3 * np.abs(dq).max()
    assert np.abs(ff.voltage).max() > 0.1  # the motors really work
    closed, _ = track_rest_to_rest(system, q0, dq, 1.0, samples=4001, **options)
    assert np.abs(closed.q - rest_to_rest(closed.t, q0, dq, 0.8)).max() < error  # PD helps


def test_feedforward_needs_elastic_dc_drives(arm):
    drives = {"j0": Drive(MOTOR, Gear(50.0))}
    with pytest.raises(InvalidParameter, match="ElasticTransmission"):
        track_rest_to_rest(px.System(arm, drives=drives), np.zeros(2), np.ones(2), 0.1)
