"""Real robots from any start (example-robot-data): the neutral pose, poses outside the
ranges, seeded random poses inside them, with joint limits, ``<mimic>`` couplings and URDF
joint friction on. Every run obeys :func:`tests.models.assert_sound_run` (limits hold, the
energy balances, no repeated empty event); the long sweeps are marked ``slow``."""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.contact import JointLimitWarning
from tests.models import assert_sound_run, random_pose

READY_CLOSED = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.0, 0.0])


def _quiet_run(system, t_final, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return px.simulate(system, t_final, **kwargs)


def test_panda_default_start_is_inside_its_ranges(panda):
    """``simulate(robot, T)`` starts from the nearest pose inside the ranges: the neutral
    pose's joint 4 (0, outside [-3.0718, -0.0698]) on its upper limit, said once."""
    with pytest.warns(JointLimitWarning, match="panda_joint4' 0 -> -0.0698") as caught:
        traj = px.simulate(panda, 3.0)
    assert sum("nearest pose inside" in str(w.message) for w in caught) == 1
    joint4 = panda.model.joints[panda.model.getJointId("panda_joint4")].idx_q
    assert traj.q[0, joint4] == panda.model.upperPositionLimit[joint4]
    assert_sound_run(panda.model, traj)


def test_panda_from_its_neutral_pose_excuses_joint_4_only(panda):
    """From an explicit q0 = neutral, joint 4 starts outside its range: its upper limit is
    excused until it is back inside; every other joint's limits act from t = 0 (they used to
    be switched off, and the arm flew 31 rad past them)."""
    q0 = pin.neutral(panda.model)
    with pytest.warns(JointLimitWarning, match="'panda_joint4' starts at 0"):
        traj = px.simulate(panda, 3.0, q0=q0)
    assert any(e.name.startswith("limit:") and "joint4" not in e.name for e in traj.events)
    assert_sound_run(panda.model, traj)


def test_panda_from_the_closed_finger_ready_pose(panda):
    """Both finger stops and the ``<mimic>`` coupling are dependent rows: one impulse problem
    with a positive semi-definite Delassus matrix, no error."""
    traj = _quiet_run(panda, 3.0, q0=READY_CLOSED)
    assert_sound_run(panda.model, traj)
    i1, i2 = (
        panda.model.joints[panda.model.getJointId(f"panda_finger_joint{k}")].idx_q for k in (1, 2)
    )
    assert np.abs(traj.q[:, i2] - traj.q[:, i1]).max() < 1e-12


@pytest.mark.parametrize("seed", range(5))
def test_panda_from_seeded_random_poses(panda, seed):
    q0 = random_pose(panda.model, np.random.default_rng(seed))
    q0[-1] = q0[-2]  # the <mimic> coupling holds at the start
    assert_sound_run(panda.model, _quiet_run(panda, 1.0, q0=q0))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(200))
def test_panda_from_200_seeded_random_poses(panda, seed):
    q0 = random_pose(panda.model, np.random.default_rng(1000 + seed))
    q0[-1] = q0[-2]
    assert_sound_run(panda.model, _quiet_run(panda, 3.0, q0=q0))


def test_ur5_with_shoulder_pan_outside_its_range():
    """shoulder_pan at 7 rad (outside ±2π) excuses that joint only: the elbow stays on its
    stops (it used to go 11.5 rad past them)."""
    robot = _robot("ur5")
    q0 = pin.neutral(robot.model)
    q0[0] = 7.0
    with pytest.warns(JointLimitWarning, match="'shoulder_pan_joint' starts at 7"):
        traj = px.simulate(robot, 2.0, q0=q0)
    assert_sound_run(robot.model, traj)


@pytest.mark.parametrize("root", ["fixed", "freeflyer"])
@pytest.mark.parametrize("seed", range(3))
def test_go1_with_its_urdf_joint_friction(root, seed):
    """URDF ``<dynamics friction="0.2">`` on every joint: a joint stuck on its stop is one
    mode, not an event per step."""
    robot = _robot("go1", root_joint=root)
    assert np.all(robot.model.friction[-12:] > 0)
    q0 = random_pose(robot.model, np.random.default_rng(seed))
    traj = _quiet_run(robot, 3.0, q0=q0)
    assert_sound_run(robot.model, traj)
    assert len(traj.events) < 100  # one event per stick/slip switch and impact, not per step


def test_a_joint_that_touches_its_stop_within_another_rows_step():
    """alex_nub_hands from a seeded random pose: at t = 0.57477 s the neck's yaw touches its
    stop and would come back within the integrator's step, which another joint's impact ends
    with the neck 1.2e-9 rad past it. Its own, earlier, root is the event; it was missed, the
    next segment started beyond the stop, and the neck went 1.41 rad past it."""
    robot = _robot("alex_nub_hands", root_joint="fixed")
    q0 = random_pose(robot.model, np.random.default_rng(0))
    traj = _quiet_run(robot, 1.0, q0=q0)
    assert_sound_run(robot.model, traj)


@pytest.mark.parametrize("seed", [11, 19])
def test_an_event_past_zero_at_the_integrated_root_is_not_missed(seed):
    """pr2 from seeded random poses: roots located on DOP853's dense output alone put, at the
    state integrated to a wrist joint's impact, the torso a hair past its stop (seed 11), or,
    checked there and moved to the tie's other event, the head's tilt a hair past its own
    (seed 19): the next segment started beyond the stop and never saw it cross (8 cm and
    0.5 rad past). Roots are found on the integrated states, bracketed on the dense output,
    on both paths. With the wheels' continuous joints in the angle chart the run is compiled,
    and seed 19 has an exact tie: a gripper finger that started outside its range comes
    back inside at the instant its mimic partners reach their stops, one 1.3e-17 rad past;
    the nearest-stop event then started negative and stayed blind (the head tilt 0.5 rad
    past). A bound past zero at a segment's start now fires its event at once."""
    robot = _robot("pr2")
    system = px.System(robot)
    q0 = random_pose(robot.model, np.random.default_rng(seed))
    traj = _quiet_run(system, 2.0, x0=px.close_loops(system, q0))
    assert_sound_run(robot.model, traj)


def test_the_paths_agree_on_the_ur5_from_random_poses(monkeypatch):
    """The compiled and Python paths give the same run (1e-8) where no two events tie."""
    robot = _robot("ur5")
    for seed in range(3):
        q0 = random_pose(robot.model, np.random.default_rng(seed))
        runs = []
        for flag in ("0", "1"):
            monkeypatch.setenv("PINEXT_NO_COMPILED", flag)
            runs.append(_quiet_run(robot, 1.0, q0=q0, output_dt=0.01))
        a, b = runs
        assert [e.name for e in a.events] == [e.name for e in b.events]
        assert np.abs(a.x - b.x).max() <= 1e-8 * max(1.0, float(np.abs(b.x).max()))


def _robot(name: str, **kwargs):
    try:
        return px.load_robot(name, **kwargs)
    except px.exceptions.RobotNotFound:
        pytest.skip("example-robot-data not installed (pip install '.[robots]')")
