"""Simulator overhead: wall time per right-hand side against one pin.aba call, same run."""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import per_call, print_table, robots_dir  # noqa: E402

import pinext as px  # noqa: E402


def stiff_chain(n: int = 11) -> px.Robot:
    """An n-link chain of 0.2 m links with stiff elastic joints (k = 2000 N.m/rad)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.conftest import pendulum_urdf

    path = Path(tempfile.mkdtemp()) / "chain.urdf"
    path.write_text(pendulum_urdf(n=n, length=0.2, mass=0.5))
    robot = px.load_urdf(path)
    robot.joint_stiffness[:] = 2000.0
    return robot


def measure(
    name: str, robot: px.Robot, q0: np.ndarray, duration: float = 2.0, limits: bool = True
) -> list:
    system = px.System(robot, joint_limits=limits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # velocity-limit reports of a free fall
        runs = [px.simulate(system, duration, q0=q0).meta["stats"] for _ in range(3)]
    stats = sorted(runs, key=lambda s: s["wall_time"])[1]  # the median of three runs
    model, data = robot.model, robot.model.createData()
    v, tau = np.zeros(model.nv), np.zeros(model.nv)
    aba = per_call(lambda: pin.aba(model, data, q0, v, tau))
    per_eval = stats["wall_time"] / stats["nfev"]
    return [
        name,
        model.nv,
        f"{stats['wall_time']:.3f}",
        stats["nfev"],
        f"{per_eval * 1e6:.1f}",
        f"{aba * 1e6:.2f}",
        f"{per_eval / aba:.1f}",
        f"{duration / stats['wall_time']:.1f}",
    ]


def main() -> None:
    rows = []
    chain = stiff_chain()
    rows.append(measure("11-DOF stiff chain", chain, np.full(chain.nv, 0.1)))
    base = robots_dir()
    if base is None:
        print("example-robot-data not installed: UR5 row skipped (pip install '.[robots]')")
    else:
        ur5 = px.load_urdf(base / "ur_description/urdf/ur5_robot.urdf")
        q0 = np.array([0, -1.0, 1.0, 0, 0.5, 0])
        rows.append(measure("UR5 under gravity, joint limits off", ur5, q0, limits=False))
        rows.append(measure("UR5 under gravity, hitting its limits", ur5, q0))
    print("simulate, 2 s, DOP853, rtol 1e-10, atol 1e-12 (median of 3 runs)")
    print_table(
        rows,
        [
            "model",
            "nv",
            "wall [s]",
            "rhs evals",
            "per eval [us]",
            "aba [us]",
            "ratio eval/aba",
            "real-time factor",
        ],
    )


if __name__ == "__main__":
    main()
