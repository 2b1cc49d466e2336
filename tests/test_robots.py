"""The project's robots ship as package data: importlib.resources finds every one, the
packaging rules of pyproject.toml list every data file of the package, and each robot loads."""

from __future__ import annotations

import fnmatch
import sys
from importlib import resources
from pathlib import Path

import pytest

import pinext as px
from pinext.exceptions import NameNotFound
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
