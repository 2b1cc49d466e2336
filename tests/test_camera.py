"""Framing of the viewer: the camera sees the robot's box over a trajectory, runaway joints do
not count, the floor grid lies under the robot and wholly in front of the camera."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from pinext.visualization.camera import (
    FIELD_OF_VIEW,
    VIEW_DIRECTION,
    frame_points,
    reach,
    robot_points,
)


def _arm_with_finger() -> pin.Model:
    """A revolute shoulder about z, a 0.5 m link, then a finger sliding 0..4 cm along x."""
    model = pin.Model()
    shoulder = model.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "shoulder")
    model.addJointFrame(shoulder)
    offset = pin.SE3(np.eye(3), np.array([0.5, 0.0, 0.3]))
    finger = model.addJoint(
        shoulder,
        pin.JointModelPX(),
        offset,
        "finger",
        np.ones(1),
        np.ones(1),
        np.zeros(1),
        0.04 * np.ones(1),
    )
    model.addJointFrame(finger)
    return model


def test_camera_sees_every_point_and_looks_along_the_view_direction():
    rng = np.random.default_rng(1)
    points = rng.uniform([-0.3, -0.2, 0.0], [0.5, 0.4, 1.1], size=(200, 3))
    framing = frame_points(points)
    lower, upper = points.min(axis=0), points.max(axis=0)
    np.testing.assert_allclose(framing.lower, lower)
    np.testing.assert_allclose(framing.target, (lower + upper) / 2)
    back = framing.eye - framing.target
    np.testing.assert_allclose(
        back / np.linalg.norm(back), VIEW_DIRECTION / np.linalg.norm(VIEW_DIRECTION)
    )
    # the sphere around the box (radius + 10 %) just fits the vertical field of view
    radius = 1.1 * np.linalg.norm(upper - lower) / 2
    half = np.radians(FIELD_OF_VIEW / 2)
    assert np.linalg.norm(back) == pytest.approx(radius / np.sin(half), rel=1e-12)
    forward = -back / np.linalg.norm(back)
    rays = points - framing.eye
    angles = np.arccos(rays @ forward / np.linalg.norm(rays, axis=1))
    assert angles.max() < half
    assert angles.max() > 0.5 * half  # framed, not a speck


def test_floor_grid_under_the_robot_and_in_front_of_the_camera():
    standing = frame_points(np.array([[0.0, 0.0, 0.0], [0.3, 0.2, 1.0]]))
    assert standing.floor == 0.0
    hanging = frame_points(np.array([[0.0, 0.0, 0.0], [0.4, 0.0, -1.2]]))
    assert hanging.floor < -1.2
    for framing in (standing, hanging):
        grid = framing.grid_transform()
        half = 20.0 / 2 * grid[0, 0]  # meshcat's grid: 20 m before scaling
        assert grid[2, 3] == framing.floor
        assert half * 2 / 40 == pytest.approx(framing.grid_cell)
        corners = np.array(
            [
                [grid[0, 3] + a * half, grid[1, 3] + b * half, grid[2, 3]]
                for a in (-1, 1)
                for b in (-1, 1)
            ]
        )
        forward = (framing.target - framing.eye) / np.linalg.norm(framing.target - framing.eye)
        assert ((corners - framing.eye) @ forward).min() > 0
        assert half >= np.ptp(np.vstack([framing.lower, framing.upper])[:, :2], axis=0).max() / 2


def test_reach_counts_link_offsets_and_prismatic_travel():
    model = _arm_with_finger()
    allowed = reach(model)
    assert allowed[1] == np.inf  # the root joint may move anywhere
    assert allowed[2] == pytest.approx(np.hypot(0.5, 0.3) + 0.04)


def test_a_runaway_joint_does_not_shrink_the_robot():
    model = _arm_with_finger()
    angles = np.linspace(0.0, np.pi / 2, 30)
    sane = np.column_stack([angles, np.full(30, 0.02)])
    runaway = sane.copy()
    runaway[15:, 1] = np.linspace(1.0, 20.0, 15)  # the finger slides off to 20 m
    kept = robot_points(model, runaway)
    reference = robot_points(model, sane)
    assert np.linalg.norm(kept, axis=1).max() < 0.7
    framing = frame_points(kept)
    expected = frame_points(reference)
    # the box of the runaway run lies within the box of the sane run (the finger's frames are
    # left out only while it is away) and both frame the same arm
    assert np.all(framing.lower >= expected.lower - 1e-12)
    assert np.all(framing.upper <= expected.upper + 1e-12)
    assert np.linalg.norm(framing.eye - expected.eye) < 0.1
    # without the filter the camera would stand ~20 m away
    assert np.linalg.norm(frame_points(np.vstack([reference, [[20.0, 0, 0.3]]])).eye) > 10
