"""Simulator overhead: wall time per right-hand side against one call of the Pinocchio
algorithm the scene builds on (``pin.aba``; ``pin.constraintDynamics`` for loops), same run.

``python benchmarks/bench_simulate.py --markdown docs/bench_simulate_table.md`` also writes
the table that ``docs/performance.md`` includes, with the date, the versions and the load."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import markdown, per_call, print_table, robots_dir  # noqa: E402
from _peers import machine_load  # noqa: E402

import pinext as px  # noqa: E402
from pinext.flexible import FlexibleLink  # noqa: E402
from pinext.robots import robot_path  # noqa: E402


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
    name: str,
    system: px.System,
    q0: np.ndarray,
    duration: float = 2.0,
    control: Any = None,
    x0: np.ndarray | None = None,
    reference: tuple[str, Callable[[], object]] | None = None,
    control_period: float | None = None,
) -> list:
    """One row: the run's wall time and evaluations on the compiled and the Python path, and
    the cost of one evaluation (integrator step included) against one call of the Pinocchio
    algorithm the scene builds on: ``pin.aba``, or ``reference`` (its name and the call). The
    call is timed again before each of the 5 runs, and the ratio is the median of the 5
    ratios, so that each is taken in one state of the machine. On the compiled path, the
    share of the wall time spent in the compiled loops (``stats["compiled_time"]``; the rest
    is Python between the segments: events, modes, kernels)."""
    model, data = system.model, system.model.createData()
    v, tau = np.zeros(model.nv), np.zeros(model.nv)
    if reference is None:
        reference = ("aba", lambda: pin.aba(model, data, q0, v, tau))
    row: list = [name, model.nv]
    calls, counts = [], []
    for flag in ("0", "1"):
        os.environ["PINEXT_NO_COMPILED"] = flag

        def run():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # velocity-limit reports of a free fall
                start = {"q0": q0} if x0 is None else {"x0": x0}
                traj = px.simulate(
                    system,
                    duration,
                    **start,
                    control=control,
                    control_period=control_period,
                    method="DOP853",
                )
                return traj.meta["stats"]

        run()  # loads the kernels
        samples = []
        for _ in range(5):
            call = per_call(reference[1], min_time=0.05)
            stats = run()
            wall = stats["wall_time"]
            samples.append((wall, wall / stats["nfev"], call, stats["compiled_time"] / wall))
        calls += [c for _, _, c, _ in samples]
        counts.append(stats["nfev"])
        wall, per_eval, _, share = np.median(np.array(samples), axis=0)
        ratio = float(np.median([e / c for _, e, c, _ in samples]))
        row += [f"{wall:.3f}", f"{per_eval * 1e6:.2f}", f"{ratio:.2f}"]
        if flag == "0":
            row.append(f"{100 * share:.0f}")
    os.environ.pop("PINEXT_NO_COMPILED")
    row.insert(2, counts[0] if counts[0] == counts[1] else f"{counts[0]} / {counts[1]}")
    row.insert(3, reference[0])
    row.insert(4, f"{float(np.median(calls)) * 1e6:.2f}")
    return row


def two_arm_cell() -> list:
    """The two-arm cell of bench_constrained.py (two weld loops on a free-flying box), against
    ``pin.constraintDynamics`` with the same two 6D constraints."""
    from bench_constrained import cell, pin_constraints

    system, x0, u, loops = cell()
    model = system.model
    data = model.createData()
    models, datas = pin_constraints(system, loops)
    pin.initConstraintDynamics(model, data, models, datas)
    settings = pin.ProximalSettings(1e-12, 0.0, 1)
    q, v = system.split(x0)

    def call():
        return pin.constraintDynamics(model, data, q, v, u, models, datas, settings)

    return measure(
        "two arms welded to a box: 2 weld loops, free flyer",
        system,
        q,
        control=u,
        x0=x0,
        reference=("constraintDynamics", call),
    )


def bouncing_tool() -> list:
    """The six-DOF arm falling limp onto a tilted table: its tool bounces (e = 0.5) until the
    bounces are cut, then rests, slides and lifts off (contact rows and gap events)."""
    from pinext.contact import Contact, plane

    arm = px.load_robot("six_dof_arm")
    q0 = np.array([0.2, 0.6, -1.1, 0.3, 1.2, 0.0])
    data = arm.model.createData()
    pin.framesForwardKinematics(arm.model, data, q0)
    normal = pin.rpy.rpyToMatrix(0.2, -0.1, 0.0) @ np.array([0.0, 0.0, 1.0])
    point = data.oMf[arm.model.getFrameId("tool")].translation - 0.1 * normal
    table = Contact(plane("tool", point, normal), restitution=0.5)
    system = px.System(arm, contacts=[table], joint_limits=False)
    return measure("six-DOF arm's tool bouncing on a table: contact row, gap events", system, q0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", type=Path, help="also write the table there (Markdown)")
    args = parser.parse_args()
    rows = []
    chain = stiff_chain()
    rows.append(measure("11-DOF stiff chain", px.System(chain), np.full(chain.nv, 0.1)))
    bar = FlexibleLink("bar", 10, 1e11, 0.01**4 / 12)
    flexible = px.load_urdf(robot_path("flexible_arm"), flexible=[bar])
    rows.append(
        measure(
            "flexible arm nu = 10, undamped",
            px.System(flexible),
            pin.neutral(flexible.model),
            control=np.r_[0.5, np.zeros(10)],
        )
    )
    rows.append(two_arm_cell())
    rows.append(bouncing_tool())
    base = robots_dir()
    if base is None:
        print("example-robot-data not installed: UR5 rows skipped (pip install '.[robots]')")
    else:
        ur5 = px.load_urdf(base / "ur_description/urdf/ur5_robot.urdf")
        q0 = np.array([0, -1.0, 1.0, 0, 0.5, 0])
        rows.append(
            measure("UR5 under gravity, joint limits off", px.System(ur5, joint_limits=False), q0)
        )
        ur5_system = px.System(ur5)
        goal = px.Schedule([0.0, 1.0, 2.0], [q0, q0 + 0.5, q0], "linear")
        pd = px.control.JointPD(ur5_system, goal, kp=np.full(6, 200.0), kd=np.full(6, 20.0))
        rows.append(
            measure(
                "UR5 under a continuous JointPD to a Schedule (the law compiled)",
                ur5_system,
                q0,
                control=pd,
                control_period=0.0,
            )
        )
        computed = px.control.ComputedTorque(ur5_system, goal, kp=100.0, kd=20.0)
        rows.append(
            measure(
                "UR5 under a continuous ComputedTorque to a Schedule (the law compiled)",
                ur5_system,
                q0,
                control=computed,
                control_period=0.0,
            )
        )
        rows.append(measure("UR5 under gravity, hitting its limits", px.System(ur5), q0))
        from bench_drives import Q0 as PANDA_Q0
        from bench_drives import panda_robot, panda_system, voltages

        full = px.load_urdf(base / "panda_description/urdf/panda.urdf")
        rows.append(
            measure(
                "Panda with its mimic fingers (a coupling row), limits off",
                px.System(full, joint_limits=False),
                np.r_[PANDA_Q0, 0.02, 0.02],
            )
        )
        go1 = px.load_robot("go1")
        rng = np.random.default_rng(3)
        q_go1 = pin.neutral(go1.model)
        q_go1[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(*rng.uniform(-1, 1, 3))).coeffs()
        rows.append(
            measure(
                "go1 tumbling: free flyer, URDF joint friction and limits",
                px.System(go1),
                q_go1,
            )
        )
        panda = panda_robot(base)
        rows.append(
            measure(
                "Panda, 7 elastic DC drives",
                panda_system(panda),
                PANDA_Q0,
                control=voltages(panda),
            )
        )
    caption = (
        "simulate, 2 s, DOP853, rtol 1e-10, atol 1e-12 (median of 5 runs, the call timed "
        "before each; ratio: median of the 5); one evaluation = wall / evaluations (the "
        f"integrator's own work included); {machine_load()}"
    )
    header = [
        "model",
        "nv",
        "rhs evals (compiled / Python)",
        "Pinocchio call",
        "call [us]",
        "compiled wall [s]",
        "compiled per eval [us]",
        "compiled eval/call",
        "compiled in loops [%]",
        "Python wall [s]",
        "Python per eval [us]",
        "Python eval/call",
    ]
    print(caption)
    print_table(rows, header)
    if args.markdown is not None:
        args.markdown.write_text(markdown(rows, header, caption, bold="compiled eval/call"))


if __name__ == "__main__":
    main()
