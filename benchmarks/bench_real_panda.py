"""The real Panda of example-robot-data with harmonic drives: the cost of a run in
``pin.aba`` calls of time.

The robot as its URDF gives it: joint limits, the ``<mimic>`` coupling of its fingers, and on
each of its seven arm joints the 48 V DC motor of :data:`pinext.drives.HARMONIC_DRIVE_MOTOR`
(its amplifier clips the voltage) behind an elastic transmission (ratio 100, 2e4 N.m/rad,
10 N.m.s/rad). 2 s from the ready pose, on each path (compiled, then Python with
``PINEXT_NO_COMPILED=1``):

- a constant schedule of voltages;
- a PD law on the motor angles written in Python as a plain function
  ``law(t, q, v, sensors)``, sampled at 1 kHz;
- the same law with every third joint's voltage beyond the amplifier's limit (clipped).

Each wall time is a median of several runs, printed in seconds and divided by the time of
one ``pin.aba`` call on the same model (measured in the same run).
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import per_call, print_table, robots_dir  # noqa: E402
from _peers import machine_load, median_run  # noqa: E402

import pinext as px  # noqa: E402
from pinext.drives import HARMONIC_DRIVE_MOTOR, Drive, ElasticTransmission  # noqa: E402

DURATION = 2.0
READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
RATIO = 100.0
KP, KD = 3.0, 0.02  # [V/rad], [V.s/rad] on the motor angles
REPEATS = 5


def system() -> tuple[px.System, np.ndarray]:
    """The real Panda with its drives, and the state at the ready pose (fingers at 1 cm)."""
    robot = px.load_robot("panda")
    drive = Drive(HARMONIC_DRIVE_MOTOR, ElasticTransmission(RATIO, 2e4, 10.0))
    panda = px.System(robot, drives=dict.fromkeys(JOINTS, drive))
    q = pin.neutral(robot.model)
    q[:7], q[7:] = READY, 0.01
    return panda, panda.initial_state(q)


def pd_law(offset: float):
    """A motor-angle PD law to the ready pose plus ``offset`` [rad], a plain function."""
    target = RATIO * (READY + offset)

    def law(t, q, v, sensors):
        return KP * (target - sensors["drives.motor_angle"]) - KD * sensors["drives.motor_velocity"]

    return law


def run(panda: px.System, x0: np.ndarray, control, period: float | None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        extra = {} if period is None else {"control_period": period}
        return px.simulate(
            panda, DURATION, x0=x0, control=control, output_dt=0.01, progress=False, **extra
        )


def main() -> None:
    if robots_dir() is None:
        print("example-robot-data is not installed (pip install '.[robots]')")
        return
    panda, x0 = system()
    model, data = panda.model, panda.model.createData()
    q, v = x0[: model.nq], x0[model.nq : model.nq + model.nv]
    aba = per_call(lambda: pin.aba(model, data, q, v, np.zeros(model.nv)))
    cases = {
        "constant schedule (2 V)": (np.full(7, 2.0), None),
        "Python PD law at 1 kHz": (pd_law(0.3), 1e-3),
        "the same, a third saturated": (pd_law(np.array([3.0, 0.3, 0.3] * 2 + [3.0])), 1e-3),
    }
    print(
        f"real Panda (limits, <mimic> fingers), 7 harmonic drives, {DURATION:g} s; "
        f"one pin.aba call {aba * 1e6:.2f} us; {machine_load()}"
    )
    rows = []
    for label, (control, period) in cases.items():
        cells = [label]
        for path in ("0", "1"):
            os.environ["PINEXT_NO_COMPILED"] = path
            run(panda, x0, control, period)  # compilation and the System's one-time work
            traj, wall = median_run(lambda c=control, p=period: run(panda, x0, c, p), REPEATS)
            stats = traj.meta["stats"]
            compiled = f"{stats['compiled_segments']}/{stats['segments']}"
            cells += [f"{wall:.3f}", f"{wall / aba:,.0f}", compiled]
        rows.append(cells)
    os.environ.pop("PINEXT_NO_COMPILED")
    header = ["run", "compiled [s]", "aba calls", "segments", "Python [s]", "aba calls", "segments"]
    print_table(rows, header)


if __name__ == "__main__":
    main()
