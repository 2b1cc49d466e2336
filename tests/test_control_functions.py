"""Kinematic control functions from the Jacobian (Negrean et al. 2009, (12)–(16))."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.exceptions import SingularConfiguration
from pinext.planning import jacobian_control

from .conftest import URDF

T = 2.0
TIMES = np.linspace(0.0, T, 101)


def _line(p0: np.ndarray, dp: np.ndarray):
    def path(t):
        s, ds, dds = (
            (t / T) ** 2 * (3 - 2 * t / T),
            6 * t / T**2 * (1 - t / T),
            6 / T**2 * (1 - 2 * t / T),
        )
        return p0 + s * dp, ds * dp, dds * dp

    return path


def _circle(center: np.ndarray, radius: float, plane=(0, 1)):
    w = 2 * np.pi / T

    def path(t):
        c, s = np.cos(w * t), np.sin(w * t)
        x, v, a = (np.zeros(center.size) for _ in range(3))
        x[list(plane)] = radius * np.array([c, s])
        v[list(plane)] = radius * w * np.array([-s, c])
        a[list(plane)] = -radius * w**2 * np.array([c, s])
        return center + x, v, a

    return path


def _check(model, frame, path, motion, rows) -> float:
    """Independent check: forward kinematics of the returned q against the path, and the task
    acceleration J q̈ + J̇ q̇ (Pinocchio's classical acceleration) against ẍ."""
    data = model.createData()
    fid = model.getFrameId(frame)
    position, acceleration = 0.0, 0.0
    for t, q, qd, qdd in zip(motion.t, motion.q, motion.qd, motion.qdd, strict=True):
        pin.forwardKinematics(model, data, q, qd, qdd)
        pin.updateFramePlacements(model, data)
        x, _, xdd = path(t)
        position = max(position, np.abs(data.oMf[fid].translation[list(rows)] - x).max())
        acc = pin.getFrameClassicalAcceleration(model, data, fid, pin.LOCAL_WORLD_ALIGNED)
        acceleration = max(acceleration, np.abs(acc.linear[list(rows)] - xdd).max())
    assert acceleration < 1e-7
    return position


def _planar():
    robot = px.load_urdf(URDF / "planar3r.urdf")
    q0 = np.array([0.3, 0.8, 0.6])
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q0)
    return robot, q0, data.oMf[robot.model.getFrameId("tool")].translation[:2].copy()


def test_planar_3r_tracks_a_line_and_a_circle() -> None:
    robot, q0, p0 = _planar()
    for path in (_line(p0, np.array([-0.2, 0.1])), _circle(p0 - [0.1, 0.0], 0.1)):
        motion = jacobian_control(robot, "tool", path, q0, t=TIMES, rows=(0, 1))
        assert _check(robot.model, "tool", path, motion, (0, 1)) < 1e-8
        assert motion.max_deviation() < 1e-8


def test_ur5_tracks_a_line_and_a_circle(robots_dir: Path) -> None:
    robot = px.load_urdf(robots_dir / "ur_description" / "urdf" / "ur5_robot.urdf")
    model = robot.model
    q0 = np.array([0.0, -1.2, 1.2, -1.5, -1.57, 0.0])
    data = model.createData()
    pin.framesForwardKinematics(model, data, q0)
    start = data.oMf[model.getFrameId("tool0")].copy()
    line = _line(start.translation, np.array([0.1, -0.15, 0.1]))
    circle = _circle(start.translation - [0.08, 0.0, 0.0], 0.08)
    for path in (line, circle):  # position task: redundant (3 rows, 6 joints)
        motion = jacobian_control(robot, "tool0", path, q0, t=TIMES)
        assert _check(model, "tool0", path, motion, (0, 1, 2)) < 1e-8

    def pose(t):  # full pose task along the circle, constant orientation
        x, v, a = circle(t)
        return pin.SE3(start.rotation, x), np.r_[v, 0, 0, 0], np.r_[a, 0, 0, 0]

    motion = jacobian_control(robot, "tool0", pose, q0, t=TIMES)
    assert _check(model, "tool0", circle, motion, (0, 1, 2)) < 1e-8
    data = model.createData()
    for q in motion.q[::10]:
        pin.framesForwardKinematics(model, data, q)
        rotation = data.oMf[model.getFrameId("tool0")].rotation
        assert np.abs(pin.log3(rotation @ start.rotation.T)).max() < 1e-8


def test_null_space_motion_keeps_the_task() -> None:
    robot, q0, p0 = _planar()
    path = _line(p0, np.array([-0.2, 0.1]))
    posture = np.array([0.0, 1.0, 1.0])
    motion = jacobian_control(
        robot, "tool", path, q0, t=TIMES, rows=(0, 1), nullspace=lambda q: posture - q
    )
    plain = jacobian_control(robot, "tool", path, q0, t=TIMES, rows=(0, 1))
    assert _check(robot.model, "tool", path, motion, (0, 1)) < 1e-8
    assert np.abs(motion.q - plain.q).max() > 1e-2  # the secondary task changed the posture


def _through_stretched_arm():
    """A radial line to full extension of the planar 3R and back (singular at t = T/2)."""
    robot, _, _ = _planar()
    model, data = robot.model, robot.model.createData()
    fid = model.getFrameId("tool")
    pin.framesForwardKinematics(model, data, np.zeros(3))
    reach = data.oMf[fid].translation[0]
    start = reach - 0.3

    def path(t):
        w = 2 * np.pi / T
        s, ds, dds = 0.5 * (1 - np.cos(w * t)), 0.5 * w * np.sin(w * t), 0.5 * w**2 * np.cos(w * t)
        u = np.array([1.0, 0.0]) * (reach - start)
        return np.array([start, 0.0]) + s * u, ds * u, dds * u

    q0 = np.array([-0.3, 0.6, -0.3])
    for _ in range(20):  # Newton on the start point
        pin.framesForwardKinematics(model, data, q0)
        error = data.oMf[fid].translation[:2] - path(0.0)[0]
        jac = pin.computeFrameJacobian(model, data, q0, fid, pin.LOCAL_WORLD_ALIGNED)[:2]
        q0 = q0 - np.linalg.pinv(jac) @ error
    return robot, path, q0


def test_singular_configuration_raises_with_the_time() -> None:
    robot, path, q0 = _through_stretched_arm()
    with pytest.raises(SingularConfiguration) as info:
        jacobian_control(robot, "tool", path, q0, t=TIMES, rows=(0, 1))
    assert abs(info.value.time - T / 2) < 0.05
    assert info.value.singular_value < info.value.threshold
    assert "t = " in str(info.value) and "damping" in str(info.value)


def test_damped_least_squares_stays_finite_and_reports_the_deviation() -> None:
    robot, path, q0 = _through_stretched_arm()
    motion = jacobian_control(
        robot, "tool", path, q0, t=TIMES, rows=(0, 1), damping=0.05, singular_threshold=0.05
    )
    assert np.all(np.isfinite(motion.qdd)) and np.abs(motion.qd).max() < 10.0
    assert motion.damping.max() > 0 and motion.min_singular_value.min() < 0.05
    assert 1e-5 < motion.max_deviation() < 1e-2  # leaves the path near the singularity only
    assert motion.deviation[0] < 1e-8 and motion.deviation[TIMES.size // 5] < 1e-8


def test_joint_motion_feeds_drive_requirements() -> None:
    robot, q0, p0 = _planar()
    motion = jacobian_control(
        robot, "tool", _line(p0, np.array([-0.2, 0.1])), q0, t=TIMES, rows=(0, 1)
    )
    report = px.planning.drive_requirements(robot, motion)
    assert report.joints == ["joint1", "joint2", "joint3"]
    np.testing.assert_allclose(report.speed, motion.qd, rtol=0, atol=0)
