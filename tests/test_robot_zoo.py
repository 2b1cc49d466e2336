"""Every URDF of example-robot-data through pinext (slow: ``PINEXT_SLOW=1`` or ``-m slow``).

Each robot loads, runs 0.5 s from its neutral pose and from a random pose within its limits,
and passes ``pinext check`` — or stops with a ``pinext.exceptions`` error that names the
cause — and no step runs longer than 60 s (a hang guard, not a speed target; the table of
``benchmarks/robot_zoo.py`` reports the times).
"""

from __future__ import annotations

import signal
import warnings

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.check import check_model
from pinext.exceptions import PinextError
from pinext.robots import robots_dir
from pinext.robots.example_robot_data import ROBOTS
from tests.models import random_pose

FOLDER = robots_dir()
URDFS = sorted(FOLDER.rglob("*.urdf")) if FOLDER is not None else []
FREE_FLYER = {str(FOLDER / rel) for rel, ff in ROBOTS.values() if ff} if FOLDER else set()
GUARD = 60  # [s]


class Hang(Exception):
    """A step ran past the guard."""


def guarded(step):
    """Run a step under the guard; a pinext error is a valid outcome, anything else fails."""

    def alarm(signum, frame):
        raise Hang(f"more than {GUARD} s")

    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(GUARD)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return step()
    except PinextError as err:
        assert str(err), "a pinext error must say what was wrong"
        return err
    finally:
        signal.alarm(0)


@pytest.mark.slow
@pytest.mark.parametrize("path", URDFS, ids=[p.stem for p in URDFS])
def test_every_example_robot_loads_simulates_and_checks(path):
    root = "freeflyer" if str(path) in FREE_FLYER else "fixed"
    robot = guarded(
        lambda: px.load_urdf(path, package_dirs=[str(path.parents[2])], root_joint=root)
    )
    if isinstance(robot, PinextError):
        return  # a clear error at load (an invalid URDF, a non-physical inertia)
    for q0 in (pin.neutral(robot.model), random_pose(robot.model, np.random.default_rng(0))):

        def run(q0=q0):
            # joint friction off: tiago's and tiago_dual's wrists stick and slip around every
            # finger-limit impact, minutes of events for 0.5 s (a known cost of event-driven
            # joint friction on these hands; tests/test_joint_friction.py covers the effect)
            system = px.System(robot, joint_friction=False)
            return px.simulate(system, 0.5, x0=px.close_loops(system, q0))

        traj = guarded(run)
        if not isinstance(traj, PinextError):
            assert traj.t[-1] == pytest.approx(0.5)
            assert np.all(np.isfinite(traj.x))
    report = guarded(lambda: check_model(robot.model, samples=2))
    assert isinstance(report, PinextError) or report.passed
