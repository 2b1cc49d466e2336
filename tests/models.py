"""Reference models and seeded random states shared by the dynamics tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin

from pinext.robots import robot_path


def humanoid() -> pin.Model:
    """Pinocchio's sample humanoid (free flyer) with a bounded base position."""
    model = pin.buildSampleModelHumanoid()
    model.lowerPositionLimit[:3] = -1.0
    model.upperPositionLimit[:3] = 1.0
    return model


def panda(robots_dir: Path) -> pin.Model:
    """The Panda arm of example-robot-data."""
    return pin.buildModelFromUrdf(str(robots_dir / "panda_description" / "urdf" / "panda.urdf"))


def ur5(robots_dir: Path) -> pin.Model:
    """The UR5 arm of example-robot-data."""
    return pin.buildModelFromUrdf(str(robots_dir / "ur_description" / "urdf" / "ur5_robot.urdf"))


def named(which: str, request) -> pin.Model:
    """``"twotr"`` (the project's 2TR robot), ``"manipulator"`` (Pinocchio's sample arm) or
    ``"ur5"`` (example-robot-data; skips without it, through the ``robots_dir`` fixture)."""
    if which == "twotr":
        return pin.buildModelFromUrdf(str(robot_path("twotr")))
    if which == "manipulator":
        return pin.buildSampleModelManipulator()
    return ur5(request.getfixturevalue("robots_dir"))


def state(model: pin.Model, rng: np.random.Generator):
    """A seeded random (q, v, a) within the joint limits (clipped to ±3)."""
    lo = np.where(np.isfinite(model.lowerPositionLimit), model.lowerPositionLimit, -1.0)
    hi = np.where(np.isfinite(model.upperPositionLimit), model.upperPositionLimit, 1.0)
    pin.seed(int(rng.integers(2**31)))  # Pinocchio's own generator, seeded from rng
    q = pin.randomConfiguration(model, np.maximum(lo, -3.0), np.minimum(hi, 3.0))
    return q, rng.standard_normal(model.nv), rng.standard_normal(model.nv)


def rel(x, ref) -> float:
    """Largest error relative to 1 + the largest reference value."""
    return float(np.max(np.abs(x - ref)) / (1.0 + np.max(np.abs(ref))))
