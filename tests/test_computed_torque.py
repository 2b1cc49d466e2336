"""ComputedTorque against closed forms: the error of the continuous law obeys
ë + K_d ė + K_p e = 0 exactly; held every T_s the error is O(T_s); through elastic drives
the feedforward of the reference tracks it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pinext as px
from pinext.planning import rest_to_rest

from .conftest import pendulum_urdf
from .test_compiled_path import stiff_drives

OPTIONS = dict(rtol=1e-10, atol=1e-12)


def pendulum(tmp_path, n=2, damping=0.0):
    path = tmp_path / "pendulum.urdf"
    path.write_text(pendulum_urdf(n, damping=damping))
    return px.load_urdf(path)


def quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return px.simulate(*args, **kwargs)


def reference(t):
    """A smooth reference: positions, velocities, accelerations."""
    return (
        np.array([0.4 * np.sin(3 * t), -0.3 + 0.2 * np.cos(2 * t)]),
        np.array([1.2 * np.cos(3 * t), -0.4 * np.sin(2 * t)]),
        np.array([-3.6 * np.sin(3 * t), -0.8 * np.cos(2 * t)]),
    )


def test_continuous_law_gives_the_closed_form_error(tmp_path):
    """K_p = 400, K_d = 40 (critically damped, ω = 20 rad/s): from e(0) = e0, ė(0) = 0 the
    error is e0 (1 + 20 t) exp(−20 t) on each joint, whatever the arm's inertia."""
    robot = pendulum(tmp_path, damping=0.3)
    law = px.control.ComputedTorque(robot, reference, kp=400.0, kd=40.0)
    q_r0, v_r0, _ = reference(0.0)
    e0 = np.array([0.1, -0.05])
    traj = quiet(robot, 1.0, q0=q_r0 - e0, v0=v_r0, control=law, control_period=0,
                 output_dt=0.01, **OPTIONS)  # fmt: skip
    q_r = np.array([reference(t)[0] for t in traj.t])
    expected = e0 * ((1 + 20 * traj.t) * np.exp(-20 * traj.t))[:, None]
    assert np.abs((q_r - traj.q) - expected).max() < 1e-7


def test_held_law_tracks_within_the_hold(tmp_path):
    """Started on the reference, the sampled law's error comes from the hold alone: O(T_s)
    (it halves with the period) and below 2e-3 T_s / (1 ms) rad here."""
    robot = pendulum(tmp_path)
    law = px.control.ComputedTorque(robot, reference, kp=400.0, kd=40.0)
    q_r0, v_r0, _ = reference(0.0)
    errors = []
    for period in (2e-3, 1e-3, 5e-4):
        traj = quiet(robot, 1.0, q0=q_r0, v0=v_r0, control=law, control_period=period,
                     output_dt=0.01, **OPTIONS)  # fmt: skip
        q_r = np.array([reference(t)[0] for t in traj.t])
        errors.append(np.abs(q_r - traj.q).max())
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 1.7) & (ratios < 2.3)), (errors, ratios)
    assert errors[1] < 2e-3, errors


def test_elastic_drives_follow_a_rest_to_rest_motion(tmp_path):
    """Through DC motors and elastic transmissions the law is the feedforward of the reference
    (Vukobratović & Potkonjak Fig. 20.10a) plus motor PD: the links follow the motion and
    end at rest at its goal."""
    robot = pendulum(tmp_path, damping=0.05)
    system = stiff_drives(robot, ("j0", "j1"), stiffness=2e3, damping=2.0, resistance=1.0)
    q0, dq = np.array([0.2, -0.3]), np.array([0.5, 0.4])
    motion = lambda t: rest_to_rest(np.atleast_1d(t), q0, dq, 1.0)[0]  # noqa: E731
    law = px.control.ComputedTorque(system, motion, kp=2.0, kd=0.02)
    traj = quiet(system, 1.5, x0=system.initial_state(q0), control=law, output_dt=0.01,
                 rtol=1e-9, atol=1e-11)  # fmt: skip
    q_r = rest_to_rest(traj.t, q0, dq, 1.0)
    assert np.abs(traj.q - q_r).max() < 2e-3
    assert np.abs(traj.q[-1] - (q0 + dq)).max() < 1e-4
    with pytest.raises(px.exceptions.InvalidParameter, match="kp"):
        px.control.ComputedTorque(system, motion, kp=[1.0, 2.0, 3.0], kd=0.0)
