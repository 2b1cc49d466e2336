"""What a run's outputs cost: the wall time of simulate and of the first reading of the outputs.

Four representative runs: a UR5 with six DC drives on the compiled path, the flexible arm
(nu = 10) and two six_dof_arms welded to a box on the Python path, and Solo12 dropped on the
ground with time stepping. ``run`` is the wall time of :func:`pinext.simulate` (it returns a
Trajectory whose outputs are complete), ``outputs`` the wall time of the first reading of
``traj.outputs`` afterwards; medians of ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from _common import print_table  # noqa: E402
from _peers import machine_load  # noqa: E402

import pinext as px  # noqa: E402
from pinext.drives import DCMotor, Drive, Gear  # noqa: E402
from pinext.robots import robot_path  # noqa: E402

MOTOR = dict(
    resistance=0.5,
    torque_constant=0.05,
    back_emf_constant=0.05,
    rotor_inertia=2e-5,
    viscous_friction=1e-6,
)
RATIO = 50.0


def ur5_drives():
    """UR5, six DC motors behind rigid gears, constant voltages near gravity compensation."""
    robot = px.load_robot("ur5")
    joints = list(robot.model.names)[1:]
    system = px.System(
        robot,
        drives={j: Drive(DCMotor(**MOTOR), Gear(RATIO)) for j in joints},
        joint_limits=False,
    )
    q0 = np.array([0.0, -1.0, 1.0, 0.0, 0.5, 0.0])
    g = pin.computeGeneralizedGravity(robot.model, robot.model.createData(), q0)
    u = g / RATIO * MOTOR["resistance"] / MOTOR["torque_constant"] + 0.5
    return lambda: px.simulate(system, 2.0, q0=q0, control=u)


def flexible_arm():
    """The flexible arm, nu = 10, a constant hub torque of 0.5 N.m, 0.5 s."""
    bar = px.FlexibleLink("bar", 10, 1e11, 0.01**4 / 12, damping_ratio=0.02)
    system = px.System(px.load_urdf(robot_path("flexible_arm"), flexible=[bar]))
    u = np.r_[0.5, np.zeros(system.n_inputs - 1)]
    return lambda: px.simulate(system, 0.5, q0=pin.neutral(system.model), control=u)


def two_arms():
    """Two six_dof_arms welded to a 2 kg box, planned torques played back (a Python law)."""
    import two_arms_carry as carry

    system, x0 = carry.build()
    planner = carry.Planner(system, x0, 2.0)
    start = planner(0.0)
    x0 = system.initial_state(start.q, start.v)
    return lambda: px.simulate(
        system, 0.5, x0=x0, control=lambda t, x: planner(t).tau, output_dt=0.01
    )


def solo12():
    """Solo12 dropped from 0.3 m under a Python PD posture law, time stepping, 1 s."""
    from pinext.robots.solo12 import load_solo12, posture_law

    robot, q_ref = load_solo12()
    q0 = q_ref.copy()
    q0[2] = 0.3
    law = posture_law(q_ref, 10.0, 0.2)
    return lambda: px.simulate(
        robot, 1.0, q0=q0, control=law, method="timestepping", dt=1e-3, output_dt=0.01
    )


SCENES = (
    ("UR5, 6 DC drives, 2 s, compiled", ur5_drives, False),
    ("flexible arm nu = 10, 0.5 s, Python path", flexible_arm, True),
    ("two arms welded to a box, 0.5 s, Python path", two_arms, True),
    ("Solo12 drop, time stepping dt = 1 ms, 1 s", solo12, False),
)


def measure(make, python: bool, repeats: int) -> tuple[float, float, int]:
    """Median wall time [s] of the run and of the first reading of its outputs; samples."""
    if python:
        os.environ["PINEXT_NO_COMPILED"] = "1"
    try:
        run = make()
        run()  # warm-up: caches, compiled kernels
        runs, reads, n = [], [], 0
        for _ in range(repeats):
            start = time.perf_counter()
            traj = run()
            runs.append(time.perf_counter() - start)
            start = time.perf_counter()
            _ = traj.outputs["input"]
            reads.append(time.perf_counter() - start)
            n = len(traj)
    finally:
        os.environ.pop("PINEXT_NO_COMPILED", None)
    return float(np.median(runs)), float(np.median(reads)), n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = []
    warnings.simplefilter("ignore")
    for name, make, python in SCENES:
        run, read, n = measure(make, python, args.repeats)
        rows.append([name, n, f"{run * 1e3:.1f}", f"{read * 1e3:.2f}", f"{(run + read) * 1e3:.1f}"])
        print(rows[-1], flush=True)
    print(f"median of {args.repeats} runs; {machine_load()}")
    print_table(rows, ["run", "samples", "simulate [ms]", "outputs read [ms]", "total [ms]"])


if __name__ == "__main__":
    main()
