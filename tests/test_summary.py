"""Short reprs of Robot, System and Trajectory."""

from __future__ import annotations

import numpy as np

import pinext as px
from pinext.drives import DCMotor, Drive, Gear
from tests.conftest import URDF


def test_reprs_are_short_and_say_what_matters():
    robot = px.load_urdf(URDF / "flexible_arm.urdf")
    text = repr(robot)
    assert len(text) < 400
    for part in ("flexible_arm", "nq=6", "nv=6", "hub", "flexible links: bar", "drives: none"):
        assert part in text, text
    system = px.System(robot, drives={"hub": Drive(DCMotor(1.2, 0.05, 0.05, 1e-5), Gear(50))})
    text = repr(system)
    assert len(text) < 400
    for part in ("flexible_arm", "state 14 = q 6 + v 6 + 2 energy entries", "DriveComponent"):
        assert part in text, text
    assert "1 drive inputs (hub)" in text
    traj = px.simulate(system, 0.02, control=np.array([1.0]), output_dt=0.01)
    text = repr(traj)
    assert len(text) < 400
    for part in ("0-0.02 s", "3 samples", "1 phase(s)", "0 event(s)"):
        assert part in text, text


def test_long_lists_are_cut_with_their_count(robots_dir):
    robot = px.load_robot("talos")
    text = repr(robot)
    assert len(text) < 400 and "..." in text and "(33)" in text
