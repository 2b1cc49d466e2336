"""Time stepping with elastic drives and loops: what the rotors' step and the loops' rows cost.

Elastic drives run on the compiled loop, their rotors linearly implicit in its step
(:class:`pinext.contact.stepped_states.ComponentStates`), or on Pinocchio's solvers step by
step (``solver="admm"``); loops, held by their own rows
(:class:`pinext.contact.timestepping.HeldRows`), on Pinocchio's solvers. Scenes, 1 s at
dt = 1 ms, medians of several runs, each also in ``pin.aba`` calls of time per step (one
call on the scene's model, measured in the same run):

- Solo12 dropped 0.3 m under a PD law in Python: on rigid joints and on twelve series elastic
  drives (DC motors behind 200 N.m/rad springs, the law on the motor angles), each on the
  compiled loop and on Pinocchio's ADMM per step. The drives' rows over the rigid ones are
  the price of the rotors' step.
- The six-DOF arm on harmonic drives under constant voltages: time stepping at 2 and 1 ms
  (compiled; at 1 ms also on ADMM per step) against the event-driven run (DOP853,
  compiled), with the error at the end against a tight event-driven reference.
- The four-bar falling limp (a hinge loop), the same.

Run: ``python benchmarks/bench_timestepping_components.py``.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import per_call, print_table  # noqa: E402
from _peers import machine_load, median_run  # noqa: E402

import pinext as px  # noqa: E402
from pinext.drives import DCMotor, Drive, ElasticTransmission, harmonic_drives  # noqa: E402
from pinext.simulation.timestepping import simulate_timestepping  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ARM = ["shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3"]
REPEATS = 5


def _aba_time(model: pin.Model) -> float:
    data = model.createData()
    q, v = pin.neutral(model), np.zeros(model.nv)
    return per_call(lambda: pin.aba(model, data, q, v, v))


def solo_rows() -> list[tuple]:
    from pinext.robots.solo12 import load_solo12, posture_law

    robot, q_ref = load_solo12()
    q0 = q_ref.copy()
    q0[2] = 0.3
    rigid = px.System(robot, contacts=())
    law = posture_law(q_ref, 10.0, 0.2)
    motor = DCMotor(0.3, 0.025, 0.025, 5e-6, viscous_friction=1e-6, voltage_limit=24.0)
    drive = Drive(motor, ElasticTransmission(9.0, 200.0, 0.5))
    sea = px.System(robot, contacts=(), drives=dict.fromkeys(list(robot.model.names)[2:], drive))
    angle, speed = sea.layout["drives.motor_angle"], sea.layout["drives.motor_velocity"]

    def sea_law(t, x):
        return 20.0 * (q_ref[7:] - x[angle] / 9.0) - 0.05 * x[speed] / 9.0

    runs = {
        "rigid joints, compiled loop": lambda: simulate_timestepping(
            rigid, 1.0, dt=1e-3, q0=q0, control=law, progress=False
        ),
        "rigid joints, Pinocchio's ADMM": lambda: simulate_timestepping(
            rigid, 1.0, dt=1e-3, q0=q0, control=law, solver="admm", progress=False
        ),
        "12 series elastic drives, compiled loop": lambda: simulate_timestepping(
            sea, 1.0, dt=1e-3, q0=q0, control=sea_law, progress=False
        ),
        "12 series elastic drives, ADMM": lambda: simulate_timestepping(
            sea, 1.0, dt=1e-3, q0=q0, control=sea_law, solver="admm", progress=False
        ),
    }
    aba = _aba_time(robot.model)
    walls = {name: median_run(run, REPEATS)[1] for name, run in runs.items()}
    base = walls["rigid joints, Pinocchio's ADMM"]
    return [
        (f"Solo12, {name}", f"{wall:.3f}", f"{wall / 1000 / aba:.0f}", f"{wall / base:.2f}", "")
        for name, wall in walls.items()
    ]


def _against_event_driven(name, system, x0, control) -> list[tuple]:
    """Time stepping at 2 and 1 ms and the event-driven run (default tolerances), 1 s, with
    their errors at the end against the event-driven run at rtol 1e-12."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tight = px.simulate(system, 1.0, x0=x0, control=control, rtol=1e-12, atol=1e-14)
        end = tight.x[-1, : system.model.nq]
        aba = _aba_time(system.model)
        rows = []
        runs = {
            f"time stepping, dt = {dt:g} s": (
                lambda dt=dt: px.simulate(
                    system, 1.0, x0=x0, control=control, method="timestepping", dt=dt,
                    progress=False,
                )
            )
            for dt in (2e-3, 1e-3)
        }  # fmt: skip
        runs["time stepping, dt = 0.001 s, ADMM per step"] = lambda: simulate_timestepping(
            system, 1.0, x0=x0, control=control, dt=1e-3, solver="admm", progress=False
        )
        runs["event-driven (DOP853, rtol 1e-10)"] = lambda: px.simulate(
            system, 1.0, x0=x0, control=control, progress=False
        )
        for label, run in runs.items():
            traj, wall = median_run(run, REPEATS)
            error = np.abs(traj.x[-1, : system.model.nq] - end).max()
            rows.append((f"{name}, {label}", f"{wall:.3f}", f"{wall / 1000 / aba:.0f}", "",
                         f"{error:.1e}"))  # fmt: skip
    return rows


def main() -> None:
    rows = solo_rows()
    arm = px.System(px.load_robot("six_dof_arm"), drives=harmonic_drives(ARM))
    volts = np.array([3.0, -2.0, 4.0, 1.0, -1.0, 2.0])
    x0 = arm.initial_state(np.array([0.3, -0.6, 1.2, -2.1, 0.8, 0.2]))
    rows += _against_event_driven("six-DOF arm, harmonic drives", arm, x0, volts)
    bar = px.System(px.load_urdf(EXAMPLES / "four_bar.urdf"))
    rows += _against_event_driven(
        "four-bar (hinge loop)", bar, px.close_loops(bar, np.array([0.0, 1.5, 1.5])), None
    )
    print(f"Time stepping with elastic drives and loops, 1 s ({machine_load()})")
    header = ["scene, path", "wall [s]", "aba calls / ms", "/ rigid ADMM", "error at 1 s"]
    print_table(rows, header)


if __name__ == "__main__":
    main()
