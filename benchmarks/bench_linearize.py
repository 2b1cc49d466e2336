"""Linearizing the Panda with seven elastic DC drives, in units of one ``pin.aba`` call.

``pinext.linearize`` analytic (Pinocchio's ``computeABADerivatives`` beside the drives' linear
form that the engine identifies once per phase) against the central difference of the System's
right-hand side (2 (n + m) evaluations), at a seeded random state of the 32-state, 7-input model;
the first analytic call (which identifies the drives' form) is timed on its own. Then the
same robot with its mimic fingers and limits (a constrained phase: RNEA derivatives and a KKT
solve, the rows' terms differenced). Times are
medians of 5 batches (``_common.per_call``); the two are timed in turn so that the ratio is
taken in one state of the machine.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import per_call, print_table  # noqa: E402

import pinext as px  # noqa: E402
from pinext.drives import DCMotor, Drive, ElasticTransmission  # noqa: E402

JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
RATIO = 100.0


def panda_system(constrained: bool = False) -> px.System:
    """The Panda, each arm joint behind a DC motor and an elastic transmission; fingers free
    (no mimic row, no limits: an unconstrained phase) or, ``constrained``, coupled by their
    ``<mimic>`` row with the URDF's limits (a finger on its stop)."""
    robot = px.load_robot("panda")
    motor = DCMotor(0.5, 0.05, 0.05, 2e-5, viscous_friction=1e-6)
    drives = {j: Drive(motor, ElasticTransmission(RATIO, 6000.0, 3.0)) for j in JOINTS}
    return px.System(robot, drives=drives, mimic=constrained, joint_limits=constrained)


def main() -> None:
    system = panda_system()
    rng = np.random.default_rng(0)
    q = pin.randomConfiguration(system.model)
    v = rng.uniform(-1.0, 1.0, system.model.nv)
    x = system.initial_state(q, v)
    x[system.layout["drives.motor_angle"]] = RATIO * q[:7]
    x[system.layout["drives.motor_velocity"]] = RATIO * v[:7]
    u = rng.uniform(-5.0, 5.0, 7)
    start = time.perf_counter()
    first = px.linearize(system, x, u, method="analytic")
    first_call = time.perf_counter() - start
    data = system.model.createData()
    aba = per_call(lambda: pin.aba(system.model, data, q, v, v))
    analytic = per_call(lambda: px.linearize(system, x, u, method="analytic"), 0.5)
    central = per_call(lambda: px.linearize(system, x, u, method="central"), 1.0)
    reference = px.linearize(system, x, u, method="central")
    agreement = np.abs(first.A - reference.A).max() / np.abs(reference.A).max()
    n, m = first.B.shape
    rows = [
        ("pin.aba", f"{aba * 1e6:.2f}", "1.0"),
        ("linearize, analytic (first call)", f"{first_call * 1e6:.0f}", f"{first_call / aba:.0f}"),
        ("linearize, analytic", f"{analytic * 1e6:.0f}", f"{analytic / aba:.1f}"),
        ("linearize, central difference", f"{central * 1e6:.0f}", f"{central / aba:.0f}"),
    ]
    held = panda_system(constrained=True)
    with warnings.catch_warnings():  # the neutral pose's joint 4 moved inside its range
        warnings.simplefilter("ignore")
        x_held = held.initial_state()
    x_held[held.layout["drives.motor_angle"]] = RATIO * x_held[:7]
    held_analytic = per_call(lambda: px.linearize(held, x_held, method="analytic"), 0.5)
    held_central = per_call(lambda: px.linearize(held, x_held, method="central"), 1.0)
    rows += [
        ("mimic row + finger on its stop, analytic", f"{held_analytic * 1e6:.0f}",
         f"{held_analytic / aba:.0f}"),
        ("mimic row + finger on its stop, central", f"{held_central * 1e6:.0f}",
         f"{held_central / aba:.0f}"),
    ]  # fmt: skip
    print(f"Panda with 7 elastic DC drives: {n} states, {m} inputs")
    print_table(rows, ["", "time [us]", "aba calls"])
    print(
        f"central / analytic: {central / analytic:.0f} x; "
        f"max |A_an - A_cd| / max |A| = {agreement:.1e}"
    )


if __name__ == "__main__":
    main()
