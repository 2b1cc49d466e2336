"""Real robots of example-robot-data from seeded random poses, with joint limits, `<mimic>`
couplings and URDF joint friction on (the scenes of tests/test_real_robots.py and the robot
zoo), on the compiled and the Python path.

- go1 (free-flyer, URDF joint friction), 3 s: its orientation integrated as a rotation
  vector at an anchor, on both paths (target of the one-engine issue: 3 s in at most 1 s).
- pr2 (continuous wheel and caster joints, ten `<mimic>` couplings), 2 s: continuous joints
  run compiled in the angle chart.

Each row: the median and the largest wall time over the poses (seeds 0 .. POSES - 1), the
events and the evaluations, per path. Run: ``python benchmarks/bench_real_robots.py``
(needs example-robot-data).
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
from _common import print_table  # noqa: E402
from _peers import machine_load  # noqa: E402

import pinext as px  # noqa: E402
from tests.models import random_pose  # noqa: E402 - the poses of the tests and the zoo

POSES = 10
#: (robot, duration [s]) of each row.
SCENES = (("go1", 3.0), ("pr2", 2.0))


def runs(robot: px.Robot, duration: float, path: str) -> list[tuple[float, int, int]]:
    """(wall [s], events, evaluations) of a run from each seeded pose on one path."""
    os.environ["PINEXT_NO_COMPILED"] = "1" if path == "python" else "0"
    out = []
    for seed in range(POSES):
        q0 = random_pose(robot.model, np.random.default_rng(seed))
        system = px.System(robot)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            traj = px.simulate(system, duration, x0=px.close_loops(system, q0), progress=False)
            out.append((time.perf_counter() - start, len(traj.events), traj.meta["stats"]["nfev"]))
    return out


def main() -> None:
    rows = []
    for name, duration in SCENES:
        try:
            robot = px.load_robot(name)
        except px.exceptions.RobotNotFound:
            print(f"{name}: example-robot-data is not installed")
            continue
        cells = [f"{name}, {duration:g} s"]
        for path in ("compiled", "python"):
            walls, events, evals = zip(*runs(robot, duration, path), strict=True)
            cells.append(f"{np.median(walls):.2f} / {max(walls):.2f} ({sum(events)}, {sum(evals)})")
        rows.append(cells)
    print(
        f"{POSES} seeded random poses, limits, <mimic> and URDF friction on; wall [s] median / "
        f"largest (events, evaluations over the poses); {machine_load()}"
    )
    print_table(rows, ["scene", "compiled path", "Python path"])


if __name__ == "__main__":
    main()
