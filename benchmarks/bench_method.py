"""The default integrator against DOP853 and Radau on a scene zoo (issue: the default never
costs more than 1.25 × the cheaper of the two).

For every scene, ``simulate`` runs with ``method=None`` (the default: DOP853, or Radau when the
spectrum at the start is stiff, or a switch to Radau when DOP853's stiffness test fires), then
``"DOP853"``, then ``"Radau"``, in turn, the same tolerances; the wall time of each is the
median of ``REPEATS`` runs (one warm-up first). A run longer than ``CAP`` seconds is stopped
and reported as such. The stiff transmissions (1e9 to 1e15 N.m/rad) run for milliseconds to
tenths of microseconds (``STIFF_DURATIONS``): an undamped mode that fast forces millions of
evaluations on every method.

Run: ``python benchmarks/bench_method.py`` (needs example-robot-data for the UR5 rows).
"""

from __future__ import annotations

import signal
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table  # noqa: E402
from _peers import machine_load  # noqa: E402

import pinext as px  # noqa: E402
from pinext.drives import DCMotor, Drive, ElasticTransmission  # noqa: E402
from pinext.flexible.sublinks import expand_configuration  # noqa: E402
from pinext.robots import robot_path  # noqa: E402

REPEATS = 3
CAP = 60.0  # [s]
DURATION = 1.0  # [s]
ARM_Q0 = np.array([0.0, -1.2, 1.2, -1.5, -1.57, 0.0])
#: Duration [s] of the stiff transmission rows, by stiffness [N.m/rad].
STIFF_DURATIONS = {1e9: 2e-3, 1e12: 6e-5, 1e15: 2e-7}
MOTOR = dict(resistance=0.5, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5)


class _Capped(Exception):
    pass


def _run(system, duration, q0, control, method):
    """(wall [s], evaluations) of one run, or None past the cap or on a failure (printed)."""

    def alarm(signum, frame):
        raise _Capped

    signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, CAP)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            traj = px.simulate(
                system, duration, q0=q0, control=control, method=method, progress=False
            )
            return time.perf_counter() - start, traj.meta["stats"]["nfev"]
    except _Capped:
        return None
    except px.exceptions.PinextError as err:  # a method that fails is reported, not fatal
        print(f"  {method or 'default'}: {type(err).__name__}: {str(err)[:120]}", flush=True)
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _timed(system, duration, q0, control, methods):
    """Per method: (median wall [s], evaluations), or None past the cap. The methods run in
    turn within every repeat, so that their ratios are taken in the same state of the machine
    (one warm-up run each first)."""
    first = {m: _run(system, duration, q0, control, m) for m in methods}
    walls: dict = {m: [] for m in methods if first[m] is not None}
    for _ in range(REPEATS):
        for m in walls:
            walls[m].append(_run(system, duration, q0, control, m)[0])
    return [
        None if first[m] is None else (float(np.median(walls[m])), first[m][1]) for m in methods
    ]


def elastic_arm(stiffness: float, damping: float) -> px.System:
    """The six_dof_arm with DC motors behind elastic transmissions of one stiffness."""
    robot = px.load_robot("six_dof_arm")
    joints = list(robot.model.names)[1:]
    drives = {
        j: Drive(DCMotor(**MOTOR), ElasticTransmission(100.0, stiffness, damping)) for j in joints
    }
    return px.System(robot, drives=drives, joint_limits=False)


def gravity_voltages(system: px.System, q0: np.ndarray) -> np.ndarray:
    """Constant voltages holding the arm near q0 (gravity through the gears)."""
    g = pin.computeGeneralizedGravity(system.model, system.model.createData(), q0)
    return g / 100.0 * MOTOR["resistance"] / MOTOR["torque_constant"]


def pd_law(system: px.System, q_ref: np.ndarray, kp: float, kd: float):
    """A joint PD law written in Python on the robot's joints (zero on elastic joints)."""
    model = system.model
    named = [model.getJointId(n) for n in model.names[1:] if not n.startswith("forearm_link")]
    named = [j for j in named if model.joints[j].nq == 1][: q_ref.size]
    index = np.array([model.joints[j].idx_q for j in named])
    nq = model.nq

    def law(t, x):
        u = np.zeros(system.n_inputs)
        u[index] = kp * (q_ref - x[index]) - kd * x[nq + index]
        return u

    return law


def scenes():
    arm = px.System(px.load_robot("six_dof_arm"))
    yield "rigid six_dof_arm, gravity", arm, ARM_Q0, None, DURATION
    for zeta in (0.0, 0.02):
        bar = px.FlexibleLink("bar", 10, 1e11, 0.01**4 / 12, damping_ratio=zeta)
        flexible = px.System(px.load_urdf(robot_path("flexible_arm"), flexible=[bar]))
        u = np.r_[0.5, np.zeros(flexible.n_inputs - 1)]
        q0 = pin.neutral(flexible.model)
        yield f"flexible arm nu = 10, zeta = {zeta:g}", flexible, q0, u, DURATION
    for stiffness in (1e6, 1e9, 1e12, 1e15):
        for damping in (0.0, 2 * np.sqrt(stiffness * 1e-2) * 0.05):
            system = elastic_arm(stiffness, damping)
            q0 = np.r_[ARM_Q0]
            u = gravity_voltages(system, ARM_Q0)
            name = f"elastic drives k = {stiffness:.0e}, {'undamped' if damping == 0 else 'damped'}"
            # an excited undamped mode at ω ∝ √k forces ≳ t ω / rtol^(1/8) steps on any
            # method (measured: 1.6e6 evaluations for 63 µs at 1e12, 2.4e7 for 2 µs at 1e15):
            # the stiff rows are short, so that each takes seconds
            duration = STIFF_DURATIONS.get(stiffness, DURATION)
            yield f"{name}, {duration:.2g} s", system, q0, u, duration
    try:
        ur5 = px.load_robot("ur5")
    except px.exceptions.RobotNotFound:
        return
    tube = px.FlexibleLink("forearm_link", 6, 7.0e10, 4.0e-8)
    flexible_ur5 = px.System(px.load_robot("ur5", flexible=[tube]))
    q0 = expand_configuration(ur5.model, flexible_ur5.model, ARM_Q0)
    law = pd_law(flexible_ur5, ARM_Q0, 400.0, 20.0)
    yield "flexible UR5, Python PD law", flexible_ur5, q0, law, DURATION
    rigid_ur5 = px.System(ur5)
    law = pd_law(rigid_ur5, ARM_Q0, 400.0, 20.0)
    yield "rigid UR5, Python PD law", rigid_ur5, ARM_Q0, law, DURATION


def main() -> None:
    rows = []
    worst = 0.0
    for name, system, q0, control, duration in scenes():
        results = _timed(system, duration, q0, control, (None, "DOP853", "Radau"))
        walls = [None if r is None else r[0] for r in results]
        best = min(w for w in walls[1:] if w is not None) if any(walls[1:]) else None
        ratio = walls[0] / best if walls[0] is not None and best else float("nan")
        worst = max(worst, ratio) if np.isfinite(ratio) else worst
        cells = [f"{r[0]:.3f} ({r[1]})" if r is not None else f"> {CAP:g}" for r in results]
        rows.append([name, *cells, f"{ratio:.2f}"])
        print(rows[-1], flush=True)
    print(
        f"simulate, {DURATION:g} s unless said, rtol 1e-10, atol 1e-12; wall [s] (evaluations), "
        f"median of {REPEATS}; {machine_load()}"
    )
    print_table(rows, ["scene", "default", "DOP853", "Radau", "default / cheaper"])
    print(f"largest ratio default / cheaper of DOP853 and Radau: {worst:.2f} (target <= 1.25)")


if __name__ == "__main__":
    main()
