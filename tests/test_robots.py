"""Robots by name: the project's ship as package data (importlib.resources finds every one,
the packaging rules of pyproject.toml list every data file, each loads); example-robot-data's
load by name."""

from __future__ import annotations

import fnmatch
import sys
from importlib import resources
from pathlib import Path

import pytest

import pinext as px
from pinext.exceptions import NameNotFound, RobotNotFound
from pinext.robots.example_robot_data import names as example_names
from tests.conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

EXPECTED = {"flexible_arm", "planar3r", "six_dof_arm", "twotr"}


def test_importlib_resources_finds_every_urdf():
    packaged = {e.name for e in resources.files("pinext.robots").iterdir()}
    on_disk = {p.name for p in (ROOT / "pinext" / "robots").glob("*.urdf")}
    assert on_disk == {f"{name}.urdf" for name in EXPECTED}
    assert on_disk <= packaged
    assert set(px.robot_names()) == EXPECTED
    for name in EXPECTED:
        path = px.robot_path(name)
        assert path.is_file() and path == px.robot_path(f"{name}.urdf")
        assert px.load_urdf(path).model.nq >= 1


def test_package_data_rules_cover_every_data_file():
    """Every non-Python file inside ``pinext/`` matches a package-data pattern of its package,
    so a built wheel holds it (``.ci/run`` builds one and runs the demo from it)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    rules = config["tool"]["setuptools"]["package-data"]
    package_root = ROOT / "pinext"
    data = [
        p
        for p in package_root.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    ]
    assert any(p.name == "py.typed" for p in data)
    for path in data:
        relative = path.relative_to(ROOT)
        covered = False
        for package, patterns in rules.items():
            folder = Path(*package.split("."))
            if folder in relative.parents:
                rest = relative.relative_to(folder).as_posix()
                covered |= any(fnmatch.fnmatch(rest, pattern) for pattern in patterns)
        assert covered, f"{relative} is not package data in pyproject.toml"


def test_unknown_robot_lists_the_existing_ones():
    with pytest.raises(NameNotFound, match="six_dof_arm"):
        px.robot_path("ur5")


def test_project_robots_load_by_name():
    robot = px.load_robot("flexible_arm")
    assert robot.model.nv == px.load_urdf(px.robot_path("flexible_arm")).model.nv


def test_names_load_the_same_robot_as_the_file(robots_dir):
    robot = px.load_robot("ur5")
    reference = px.load_urdf(robots_dir / "ur_description" / "urdf" / "ur5_robot.urdf")
    assert (robot.nq, robot.nv) == (6, 6)
    assert list(robot.model.names) == list(reference.model.names)
    assert len(robot.transmissions) == 6
    assert "ur5" in example_names() and "ur5_robot" in example_names()  # name and file stem


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
    assert "pip install" not in message  # the collection is installed: nothing to install
    assert ".." not in message.replace("...", "")


def test_missing_collection_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr("pinext.robots.example_robot_data.robots_dir", lambda: None)
    with pytest.raises(RobotNotFound, match=r'pip install "pinext\[robots\]"'):
        px.load_robot("ur5")


def test_robots_dir_matches_the_test_fixture(robots_dir):
    from pinext.robots import robots_dir as find

    assert robots_dir.resolve() == find().resolve()


def test_every_named_robot_file_exists(robots_dir):
    from pinext.robots.example_robot_data import ROBOTS

    missing = [n for n, (rel, _) in ROBOTS.items() if not (robots_dir / rel).is_file()]
    assert not missing, f"names pointing to no file: {missing}"
    assert set(ROBOTS) <= set(example_names())
