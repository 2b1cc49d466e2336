"""Shared fixtures: project robots, example-robot-data location, small reference models."""

from __future__ import annotations

import site
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
URDF = ROOT / "pinext" / "robots"


def example_robot_data_dir() -> Path | None:
    """The ``robots`` folder of the example-robot-data wheel, or None if not installed."""
    candidates = [sysconfig.get_paths()["purelib"], *site.getsitepackages()]
    for base in candidates:
        path = Path(base) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if path.is_dir():
            return path
    return None


@pytest.fixture
def robots_dir() -> Path:
    path = example_robot_data_dir()
    if path is None:
        pytest.skip("example-robot-data not installed (pip install '.[robots]')")
    return path


@pytest.fixture(scope="module")
def panda():
    """example-robot-data's Panda as a :class:`pinext.Robot` (its ``<mimic>`` fingers
    included), or the test is skipped."""
    import pinext as px

    try:
        return px.load_robot("panda")
    except px.exceptions.RobotNotFound:
        pytest.skip("example-robot-data not installed (pip install '.[robots]')")


@pytest.fixture
def ur5_urdf(robots_dir: Path) -> Path:
    return robots_dir / "ur_description" / "urdf" / "ur5_robot.urdf"


def pendulum_urdf(n: int = 3, length: float = 0.4, mass: float = 1.0, damping: float = 0.0) -> str:
    """An n-link pendulum swinging in the vertical x-z plane (revolute joints about y)."""
    parts = ['<robot name="pendulum"><link name="base"/>']
    parent = "base"
    for i in range(n):
        z = 0.0 if i == 0 else -length
        izz = mass * length**2 / 12
        parts.append(
            f'<joint name="j{i}" type="revolute"><parent link="{parent}"/><child link="l{i}"/>'
            f'<origin xyz="0 0 {z}"/><axis xyz="0 1 0"/>'
            f'<limit lower="-10" upper="10" effort="100" velocity="100"/>'
            f'<dynamics damping="{damping}"/></joint>'
            f'<link name="l{i}"><inertial><origin xyz="0 0 {-length / 2}"/><mass value="{mass}"/>'
            f'<inertia ixx="{izz}" ixy="0" ixz="0" iyy="{izz}" iyz="0" izz="1e-4"/></inertial>'
            f'<visual><origin xyz="0 0 {-length / 2}"/><geometry><box size="0.02 0.02 {length}"/>'
            f"</geometry></visual></link>"
        )
        parent = f"l{i}"
    parts.append("</robot>")
    return "".join(parts)


@pytest.fixture
def pendulum_path(tmp_path: Path) -> Path:
    path = tmp_path / "pendulum.urdf"
    path.write_text(pendulum_urdf())
    return path


def pytest_collection_modifyitems(config, items):
    """Skip tests marked ``slow`` unless PINEXT_SLOW=1 or ``-m slow`` is given."""
    import os

    if os.environ.get("PINEXT_SLOW") == "1" or "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="slow: run with PINEXT_SLOW=1 or -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def _simulates(module) -> bool:
    """Whether a test module runs simulations (its source names ``simulate``)."""
    import inspect

    cached = getattr(module, "_pinext_simulates", None)
    if cached is None:
        try:
            cached = "simulate" in inspect.getsource(module)
        except (OSError, TypeError):
            cached = False
        module._pinext_simulates = cached
    return cached


def pytest_generate_tests(metafunc):
    """Run every test of a module that simulates on both paths: the compiled one and the
    Python reference (``PINEXT_NO_COMPILED=1``); ``PINEXT_PATHS=compiled`` (or ``python``)
    keeps one."""
    import os

    if "simulation_path" not in metafunc.fixturenames or not _simulates(metafunc.module):
        return
    if not getattr(metafunc.module, "BOTH_PATHS", True):  # the module chooses its paths
        return
    paths = [p for p in os.environ.get("PINEXT_PATHS", "compiled,python").split(",") if p]
    metafunc.parametrize("simulation_path", paths, indirect=True)


@pytest.fixture(autouse=True)
def simulation_path(request, monkeypatch) -> str:
    """The simulation path of the test: ``compiled`` (default) or ``python``."""
    path = getattr(request, "param", "compiled")
    if path == "python":
        monkeypatch.setenv("PINEXT_NO_COMPILED", "1")
    return path
