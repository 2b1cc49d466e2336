"""Every URDF of example-robot-data through pinext: load, 0.5 s from the neutral pose and from a
random pose within limits, and `pinext check`; one row per robot, each step under a 60 s guard.

Run: ``python benchmarks/robot_zoo.py [--markdown]`` (needs ``pip install "pinext[robots]"``).
"""

from __future__ import annotations

import signal
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import pinext as px  # noqa: E402
from pinext.check import check_model  # noqa: E402
from pinext.exceptions import PinextError  # noqa: E402
from pinext.robots import robots_dir  # noqa: E402
from pinext.robots.example_robot_data import ROBOTS  # noqa: E402

LIMIT = 60  # seconds per step


class _Timeout(Exception):
    pass


def _guarded(step):
    def alarm(signum, frame):
        raise _Timeout

    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(LIMIT)
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = step()
        return f"{result} ({time.perf_counter() - start:.1f} s)"
    except _Timeout:
        return f"TIMEOUT > {LIMIT} s"
    except PinextError as err:
        message = str(err).replace(str(robots_dir()) + "/", "")
        return f"error: {type(err).__name__}: {message[:110]}"
    except Exception as err:  # noqa: BLE001 - a foreign error is the finding to report
        return f"UNCAUGHT {type(err).__name__}: {str(err)[:60]}"
    finally:
        signal.alarm(0)


def random_pose(model: pin.Model, rng: np.random.Generator) -> np.ndarray:
    low, high = model.lowerPositionLimit.copy(), model.upperPositionLimit.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.isfinite(low) & np.isfinite(high) & (high - low < 1e3)
    q = pin.neutral(model)
    q[finite] = rng.uniform(low[finite], high[finite])
    return pin.normalize(model, q)


def row(path: Path, free_flyer: bool) -> list[str]:
    rng = np.random.default_rng(0)
    robot = None

    def load():
        nonlocal robot
        robot = px.load_urdf(
            path,
            package_dirs=[str(path.parents[2])],
            root_joint="freeflyer" if free_flyer else "fixed",
        )
        return f"nq {robot.nq} nv {robot.nv}"

    loaded = _guarded(load)
    if robot is None:
        return [path.stem, loaded, "-", "-", "-"]

    def run(q0):
        def simulate():
            system = px.System(robot)
            x0 = px.close_loops(system, q0)  # mimic couplings: a consistent start
            traj = px.simulate(system, 0.5, x0=x0)
            return f"t = {traj.t[-1]:.2f} s, {traj.meta['stats']['method']}"

        return simulate

    neutral = _guarded(run(pin.neutral(robot.model)))
    randomised = _guarded(run(random_pose(robot.model, rng)))
    checked = _guarded(lambda: "pass" if check_model(robot.model, samples=2).passed else "FAIL")
    return [path.stem, loaded, neutral, randomised, checked]


def main() -> None:
    folder = robots_dir()
    if folder is None:
        print('example-robot-data is not installed: pip install "pinext[robots]"')
        return
    free = {str(folder / rel) for rel, ff in ROBOTS.values() if ff}
    rows = [row(p, str(p) in free) for p in sorted(folder.rglob("*.urdf"))]
    header = ["URDF", "load", "0.5 s from neutral", "0.5 s from a random pose", "pinext check"]
    if "--markdown" in sys.argv:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        for r in rows:
            print(" ; ".join(r))


if __name__ == "__main__":
    main()
