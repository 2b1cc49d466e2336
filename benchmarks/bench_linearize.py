"""Linearizing Systems in units of one ``pin.aba`` call: analytic against the central
difference of the right-hand side, unconstrained and in constrained phases.

Cases (each at a fixed state, the linearization's every step included: the phase at the
state, the matrices, the model):

* the Panda with seven elastic DC drives, fingers free (no rows): 32 states, 7 inputs;
  ``computeABADerivatives`` beside the drives' efforts and state derivatives in closed form
  (``DriveComponent.linear_terms``), built once per phase (the first call in a process, which
  also runs Python's and Pinocchio's code for the first time, and the first call on a new
  System, which builds its phase, labels and terms, are timed on their own);
* the same with its ``<mimic>`` finger coupling (a constrained phase, one constant row);
* the same with the mimic row and the URDF's limits, joint 4 and a finger on their stops
  (three constant rows); the phase alone (``System.initial_phase``: the limits' active set,
  from the System's contact problem) is timed apart;
* the four-bar's loop (a hinge between two frames: its rows differenced over q and v);
* the six-DOF arm holding a pen on a plane (a bilateral contact: rows without a compiled form,
  differenced over every state), and pressing it onto the plane (a unilateral contact, closed:
  a normal row whose Jacobian is its gap's gradient, differenced over q alone).

The constrained cases solve one KKT system with Pinocchio's RNEA derivatives; their rows' own
terms are in closed form for constant rows and differenced for frame rows
(:mod:`pinext.linear_models.constrained`). Each ratio is the median over ``REPEATS`` rounds in
which ``pin.aba``, the analytic and the central linearization are timed one after the other, so
that a ratio is taken in one state of the machine.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table  # noqa: E402

import pinext as px  # noqa: E402
from pinext.drives import DCMotor, Drive, ElasticTransmission  # noqa: E402

JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
RATIO = 100.0
REPEATS = 9
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def panda_system(mimic: bool = False, limits: bool = False) -> px.System:
    """The Panda, each arm joint behind a DC motor and an elastic transmission; the fingers
    free, or coupled by their ``<mimic>`` row, with or without the URDF's limits."""
    robot = px.load_robot("panda")
    motor = DCMotor(0.5, 0.05, 0.05, 2e-5, viscous_friction=1e-6)
    drives = {j: Drive(motor, ElasticTransmission(RATIO, 6000.0, 3.0)) for j in JOINTS}
    return px.System(robot, drives=drives, mimic=mimic, joint_limits=limits)


def _panda_state(system: px.System, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    x = system.initial_state(q, v)
    x[system.layout["drives.motor_angle"]] = RATIO * q[:7]
    x[system.layout["drives.motor_velocity"]] = RATIO * v[:7]
    return x


def cases() -> list[tuple[str, px.System, np.ndarray, np.ndarray]]:
    """(name, System, x, u) of every case."""
    rng = np.random.default_rng(0)
    free = panda_system()
    q = pin.randomConfiguration(free.model)
    v = rng.uniform(-1.0, 1.0, free.model.nv)
    u = rng.uniform(-5.0, 5.0, 7)
    out = [("Panda, 7 elastic drives (no rows)", free, _panda_state(free, q, v), u)]
    mimic = panda_system(mimic=True)
    q[8], v[8] = q[7], v[7]  # on the coupling
    out.append(("+ mimic row", mimic, _panda_state(mimic, q, v), u))
    held = panda_system(mimic=True, limits=True)
    with warnings.catch_warnings():  # the neutral pose's joint 4 moved onto its stop
        warnings.simplefilter("ignore")
        x = held.initial_state()
    x[held.layout["drives.motor_angle"]] = RATIO * x[:7]
    out.append(("+ mimic row, joint 4 and a finger on their stops", held, x, np.zeros(7)))
    loop = px.System(px.load_urdf(EXAMPLES / "four_bar.urdf"))
    x = px.close_loops(loop, np.array([0.0, 1.5, 1.5]))
    out.append(("four-bar loop (a hinge between frames)", loop, x, np.array([0.5, -0.2, 0.1])))
    out.append(("six-DOF arm, pen held on a plane (bilateral)", *_pen(unilateral=False)))
    out.append(("six-DOF arm, pen pressed on a plane (unilateral)", *_pen(unilateral=True)))
    return out


def _pen(unilateral: bool) -> tuple[px.System, np.ndarray, np.ndarray]:
    """The six-DOF arm's pen on a plane: held there by a bilateral row (no compiled form:
    its rows differenced over every state) or pressed onto it by gravity (a unilateral
    contact, closed: the normal row of its compiled form, differenced over q alone)."""
    from pinext.contact import Contact, consistent_initial_state, plane

    contact = Contact(plane("pen_tip", (0, 0, 0.3)), unilateral=unilateral)
    system = px.System(
        px.load_urdf(px.robot_path("six_dof_arm")), contacts=[contact], joint_limits=False
    )
    with warnings.catch_warnings():  # the pose projected onto the plane
        warnings.simplefilter("ignore")
        x = consistent_initial_state(system, np.array([0.3, 0.7, 1.2, 0.2, 0.9, 0.1]))
    return system, x, np.random.default_rng(7).uniform(-1, 1, 6)


def in_turn(funcs: list[Callable[[], object]], min_time: float = 0.02) -> list[float]:
    """The time of one call of each function [s], medians over :data:`REPEATS` rounds in which
    the functions run one after the other (each for at least ``min_time``)."""
    numbers = []
    for func in funcs:
        func()  # warm up (identification of the linear form, compilation)
        n, start = 1, time.perf_counter()
        func()
        while (time.perf_counter() - start) * n < min_time:
            n *= 2
        numbers.append(n)
    samples: list[list[float]] = [[] for _ in funcs]
    for _ in range(REPEATS):
        for func, n, out in zip(funcs, numbers, samples, strict=True):
            start = time.perf_counter()
            for _ in range(n):
                func()
            out.append((time.perf_counter() - start) / n)
    return [float(np.median(s)) for s in samples]


def _calls(system: px.System, x: np.ndarray, u: np.ndarray) -> list[Callable[[], object]]:
    """``pin.aba`` at the state, the analytic and the central linearization, the phase."""
    data = system.model.createData()
    q, v = system.split(x)
    return [
        lambda: pin.aba(system.model, data, q, v, v),
        lambda: px.linearize(system, x, u, method="analytic"),
        lambda: px.linearize(system, x, u, method="central"),
        lambda: system.initial_phase(0.0, x, u),
    ]


def main() -> None:
    rows, notes = [], []
    for k, (name, system, x, u) in enumerate(cases()):
        if k == 0:  # the first call in the process, then the first on a second System
            firsts = []
            for fresh in (system, panda_system()):
                start = time.perf_counter()
                px.linearize(fresh, x, u, method="analytic")
                firsts.append(time.perf_counter() - start)
        analytic = px.linearize(system, x, u, method="auto")
        central = px.linearize(system, x, u, method="central")
        agreement = np.abs(analytic.A - central.A).max() / np.abs(central.A).max()
        aba, t_an, t_cd, t_phase = in_turn(_calls(system, x, u))
        if k == 0:
            for label, first in zip(("in the process", "on a new System"), firsts, strict=True):
                rows.append((f"  first call {label}", "", f"{first / aba:.0f}", "", "", ""))
        n = analytic.A.shape[0]
        ratios = (f"{t_an / aba:.1f}", f"{t_cd / aba:.0f}", f"{t_phase / aba:.1f}")
        rows.append((name, str(n), *ratios, f"{agreement:.1e}"))
        notes += [f"{name}: {note}" for note in analytic.notes]
    print("pin.aba calls of time per linearization (medians of in-turn rounds)")
    header = ["System", "states", "analytic", "central", "of it: phase", "|dA|/max|A|"]
    print_table(rows, header)
    print("\n".join(notes))


if __name__ == "__main__":
    main()
