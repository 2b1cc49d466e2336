"""Scenes whose components change mode as they run, compiled against the Python path.

The six-DOF arm, 0.5 s, each scene on the compiled path and with ``PINEXT_NO_COMPILED=1``:

- lossy gears (η' = 0.7, η'' = 0.5) on its six joints behind 6 V amplifiers, the voltages
  reversed twice: the gears drive, are backdriven, stop and stick;
- 0.02 rad of backlash (restitution 0.3) on the elbow beside a lossy wrist gear: the motor
  crosses its play and its flanks meet;
- a pen with a damped tool on the damped layer of a 2 kg table: the arm falls onto it, the pen
  presses, lifts off and lands.

Wall time: median of several runs, each building its System (the linear forms of the phases'
mode structures are identified once per System); the evaluations, the events and the
segments compiled are printed beside it, and the largest difference of the two paths'
samples.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table  # noqa: E402
from _peers import machine_load, median_run  # noqa: E402

import pinext as px  # noqa: E402
from pinext.contact import DynamicEnvironment  # noqa: E402
from pinext.drives import DCMotor, Drive, Gear  # noqa: E402

JOINTS = ["shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3"]
Q0 = np.array([0.3, -0.6, 1.2, -2.1, 0.8, 0.2])
DURATION = 0.5
REPEATS = 5


def lossy_gears():
    motor = DCMotor(1.2, 0.05, 0.05, 2e-5, voltage_limit=6.0)
    lossy = Gear(50.0, efficiency=0.7, backdrive_efficiency=0.5)
    push = np.array([8.0, 4.0, -4.0, 2.0, -2.0, 1.0])
    volts = px.Schedule([0.0, 0.15, 0.3, 0.45], [push, -push, push, np.zeros(6)])
    system = px.System(
        px.load_robot("six_dof_arm"), drives=dict.fromkeys(JOINTS, Drive(motor, lossy))
    )
    return system, volts


def backlash():
    motor = DCMotor(1.2, 0.05, 0.05, 2e-5, voltage_limit=12.0)
    drives = {
        "elbow": Drive(motor, Gear(50.0, backlash=0.02, restitution=0.3)),
        "wrist_1": Drive(motor, Gear(30.0, efficiency=0.8)),
    }
    volts = px.Schedule([0.0, 0.2, 0.4], [[6.0, 3.0], [-6.0, -3.0], [6.0, 3.0]], kind="zoh")
    return px.System(px.load_robot("six_dof_arm"), drives=drives), volts


def compliant_tool():
    robot = px.load_robot("six_dof_arm")
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, Q0)
    table = px.plane("pen_tip", data.oMf[robot.model.getFrameId("pen_tip")].translation)
    env = DynamicEnvironment(
        mass=2.0, stiffness=2e4, damping=100.0, contact_stiffness=5e4, contact_damping=30.0
    )
    pen = px.Contact(table, tool_stiffness=8e4, tool_damping=20.0)
    return px.System(robot, contacts=[pen], environment=env), None


SCENES = {
    "six lossy gears": lossy_gears,
    "backlash beside a lossy gear": backlash,
    "damped tool on a damped layer": compliant_tool,
}


def run(build):
    system, control = build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return px.simulate(system, DURATION, q0=Q0, control=control, output_dt=0.01, progress=False)


def main() -> None:
    print(f"the six-DOF arm, {DURATION:g} s, median of {REPEATS}; {machine_load()}")
    rows = []
    for label, build in SCENES.items():
        cells, runs = [label], {}
        for path in ("0", "1"):
            os.environ["PINEXT_NO_COMPILED"] = path
            run(build)  # the kernels loaded (or compiled)
            traj, wall = median_run(lambda b=build: run(b), REPEATS)
            stats = traj.meta["stats"]
            runs[path] = traj
            cells += [
                f"{wall:.3f}",
                f"{stats['nfev']:,}",
                f"{stats['compiled_segments']}/{stats['segments']}",
            ]
        a, b = runs["0"], runs["1"]
        same = a.t.shape == b.t.shape and [e.name for e in a.events] == [e.name for e in b.events]
        cells += [str(len(a.events)), f"{np.abs(a.x - b.x).max():.1e}" if same else "differ"]
        cells.insert(4, f"{float(cells[4]) / float(cells[1]):.1f}")
        rows.append(cells)
    os.environ.pop("PINEXT_NO_COMPILED")
    header = [
        "scene", "compiled [s]", "evaluations", "segments", "Python / compiled", "Python [s]",
        "evaluations", "segments", "events", "max |Δx|",
    ]  # fmt: skip
    print_table(rows, header)


if __name__ == "__main__":
    main()
