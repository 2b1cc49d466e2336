"""ComputedTorque against closed forms: the error of the continuous law obeys
ë + K_d ė + K_p e = 0 exactly; held every T_s the error is O(T_s); through elastic drives
the feedforward of the reference tracks it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pinext as px
from pinext import Schedule
from pinext.planning import rest_to_rest

from .conftest import pendulum_urdf
from .test_compiled_path import assert_same_events, stiff_drives

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


def test_compiled_law_gives_the_closed_form_error(tmp_path, simulation_path):
    """A constant reference (q̇_r = q̈_r = 0) on a pendulum with joint springs and dampers,
    which the law compensates: evaluated inside the compiled right-hand side (every segment
    compiled), the error is e0 (1 + 20 t) exp(−20 t) on each joint (K_p = 400, K_d = 40)."""
    robot = pendulum(tmp_path, damping=0.3)
    robot.joint_stiffness[:] = [5.0, 2.0]
    q_r = np.array([0.4, -0.3])
    law = px.control.ComputedTorque(robot, q_r, kp=400.0, kd=40.0)
    e0 = np.array([0.1, -0.05])
    traj = quiet(robot, 1.0, q0=q_r - e0, control=law, control_period=0, output_dt=0.01,
                 **OPTIONS)  # fmt: skip
    stats = traj.meta["stats"]
    compiled = simulation_path == "compiled"
    assert stats["segments"] >= 1 and stats["compiled_segments"] == compiled * stats["segments"]
    expected = e0 * ((1 + 20 * traj.t) * np.exp(-20 * traj.t))[:, None]
    assert np.abs((q_r - traj.q) - expected).max() < 1e-7


def _runs(monkeypatch, system, q0, law, period, simulation_path):
    """The run of ``law`` on the compiled and on the Python path."""
    if simulation_path == "python":
        pytest.skip("compares both paths itself")
    runs = {}
    for flag in ("0", "1"):
        monkeypatch.setenv("PINEXT_NO_COMPILED", flag)
        runs[flag] = quiet(system, 1.0, q0=q0, control=law, control_period=period,
                           output_dt=0.01, **OPTIONS)  # fmt: skip
    compiled, python = runs["0"], runs["1"]
    stats = compiled.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"]  # the law in the kernel
    assert python.meta["stats"]["compiled_segments"] == 0
    return compiled, python


GOAL = np.array([0.8, -0.5, 0.6, -0.4, 0.9, 3.5])  # wrist_3 driven into its stop


@pytest.mark.parametrize("period", [0.0, 1e-3])
@pytest.mark.parametrize("reference_kind", ["constant", "linear"])
def test_compiled_law_equals_the_python_law(reference_kind, period, monkeypatch, simulation_path):
    """ComputedTorque to a constant and to an interpolated Schedule, continuous and held every
    1 ms, on the six-DOF arm with its joint limits (wrist_3 driven onto its stop): evaluated
    inside the compiled loop (every segment compiled; held, it is sampled there), the run
    equals the Python path's, which calls the law (``pin.rnea``) at every evaluation or
    sample: the same events at the same times (1e-9 s), paths to 1e-9 (both at rtol 1e-10)."""
    system = px.System(px.load_robot("six_dof_arm"))
    q0 = np.array([0.2, 0.6, -1.1, 0.3, 1.2, 0.0])
    if reference_kind == "constant":
        target = q0 + GOAL
    else:
        target = Schedule([0.0, 0.3, 0.6], [q0, q0 + GOAL, q0], "linear")
    law = px.control.ComputedTorque(system, target, kp=100.0, kd=20.0)
    compiled, python = _runs(monkeypatch, system, q0, law, period, simulation_path)
    names = [e.name for e in compiled.events]
    assert names == [e.name for e in python.events] and "limit:wrist_3" in names
    times = np.array([e.t for e in compiled.events])
    assert np.abs(times - [e.t for e in python.events]).max() < 1e-9
    assert np.abs(compiled.q - python.q).max() < 1e-9


def test_compiled_law_with_mimic_fingers_limits_and_friction(panda, monkeypatch, simulation_path):
    """The Panda with its ``<mimic>`` fingers (a coupling row), its joint limits and joint
    friction (Coulomb, 0.5 N.m on the arm) under ComputedTorque to an interpolated Schedule
    that drives joint 4 and the fingers onto their stops (joints stick and slip on the way
    back): the compiled run (law in the kernel) equals the Python path's (the law through
    ``pin.rnea`` at every evaluation): same events, paths to 1e-8."""
    friction = {f"panda_joint{i}": 0.5 for i in range(1, 8)}
    system = px.System(panda, joint_friction=friction)
    q0 = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.6, 0.02, 0.02])
    goal = q0 + np.array([0.4, 0.3, -0.3, 2.2, 0.5, -0.4, 0.8, 0.03, 0.03])
    target = Schedule([0.0, 0.4, 0.8], [q0, goal, q0], "linear")
    law = px.control.ComputedTorque(system, target, kp=100.0, kd=20.0)
    compiled, python = _runs(monkeypatch, system, q0, law, 0.0, simulation_path)
    assert_same_events(compiled, python)
    names = {e.name for e in compiled.events}
    assert {"limit:panda_joint4", "limit:panda_finger_joint1"} <= names
    # the reference turns back at 0.4 s: every stop's reaction turns to pulling at once, and
    # every one of them leaves its stop there, whichever event the solver met first
    for run in (compiled, python):
        (off,) = [e for e in run.events if e.name.startswith("limit-off")]
        assert off.t == 0.4
        assert off.info["joints"] == ["panda_joint4", "panda_finger_joint1", "panda_finger_joint2"]
    assert np.abs(compiled.q - python.q).max() < 1e-8
