"""load_robot: example-robot-data's robots by name."""

from __future__ import annotations

import pytest

import pinext as px
from pinext.exceptions import RobotNotFound
from pinext.robots import robot_names


def test_names_load_the_same_robot_as_the_file(robots_dir):
    robot = px.load_robot("ur5")
    reference = px.load_urdf(robots_dir / "ur_description" / "urdf" / "ur5_robot.urdf")
    assert (robot.nq, robot.nv) == (6, 6)
    assert list(robot.model.names) == list(reference.model.names)
    assert len(robot.transmissions) == 6
    assert "ur5" in robot_names() and "ur5_robot" in robot_names()  # name and file stem


def test_legged_robots_get_a_free_flyer_unless_told_otherwise(robots_dir):
    floating = px.load_robot("solo12")
    assert floating.model.joints[1].shortname() == "JointModelFreeFlyer"
    assert (floating.nq, floating.nv) == (19, 18)
    fixed = px.load_robot("solo12", root_joint="fixed")
    assert (fixed.nq, fixed.nv) == (12, 12)


def test_unknown_name_suggests_and_lists(robots_dir):
    with pytest.raises(RobotNotFound) as caught:
        px.load_robot("ur55")
    message = str(caught.value)
    assert "Did you mean 'ur5'" in message and "panda" in message
    assert 'pip install "pinext[robots]"' in message


def test_missing_collection_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr("pinext.robots.robots_dir", lambda: None)
    with pytest.raises(RobotNotFound, match=r'pip install "pinext\[robots\]"'):
        px.load_robot("ur5")


def test_robots_dir_matches_the_test_fixture(robots_dir):
    from pinext.robots import robots_dir as find

    assert robots_dir.resolve() == find().resolve()


def test_every_named_robot_file_exists(robots_dir):
    from pinext.robots import ROBOTS

    missing = [n for n, (rel, _) in ROBOTS.items() if not (robots_dir / rel).is_file()]
    assert not missing, f"names pointing to no file: {missing}"
    assert set(ROBOTS) <= set(robot_names())
