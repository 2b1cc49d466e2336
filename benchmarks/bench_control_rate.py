"""A Python control law at a control rate: the Panda with seven elastic DC drives tracking a
rest-to-rest motion for 2 s.

The law is written in Python (a :class:`pinext.control.Controller`: the feedforward of
Vukobratović & Potkonjak's Fig. 20.10a, tabulated before the run by
:func:`pinext.elastic_drive_feedforward`, plus motor-side PD in volts). Three ways to run it:

- sampled at 1 kHz (``control_period=1e-3``, zero-order hold): the dynamics between samples
  runs compiled, one Python call per period;
- continuous (``control_period=0``): the law at every evaluation, on the Python path;
- the built-in :class:`pinext.control.ComputedTorque` at 1 kHz (the same law).

Then the difference between the sampled and the continuous trajectories at T_s = 1, 0.5 and
0.25 ms: the hold's error is O(T_s), so it should halve with the period.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import robots_dir  # noqa: E402
from _peers import machine_load, median_run  # noqa: E402
from bench_drives import Q0, panda_robot, panda_system  # noqa: E402

import pinext as px  # noqa: E402
from pinext.planning import elastic_drive_feedforward, rest_to_rest  # noqa: E402

DURATION = 2.0
MOVE = 1.5
DQ = np.array([0.5, 0.4, -0.4, 0.5, 0.6, -0.5, 0.7])
KP, KD = 2.0, 0.05  # [V/rad], [V.s/rad] on the motors
RTOL = 1e-8
PERIODS = (1e-3, 5e-4, 2.5e-4)
REPEATS = 5
REPEATS_CONTINUOUS = 3


class Tracking(px.control.Controller):
    """Feedforward along the motion + motor PD, written in Python as a user would."""

    def __init__(self, system: px.System) -> None:
        t = np.linspace(0.0, DURATION, 4001)
        ff = elastic_drive_feedforward(
            system.robot, system.drives, t, rest_to_rest(t, Q0, DQ, MOVE)
        )
        self.t, self.theta, self.omega, self.voltage = (
            ff.t, ff.motor_angle, ff.motor_velocity, ff.voltage
        )  # fmt: skip

    def __call__(self, t, q, v, sensors):
        i = min(max(int(np.searchsorted(self.t, t)) - 1, 0), self.t.size - 2)
        w = (t - self.t[i]) / (self.t[i + 1] - self.t[i])
        theta = (1 - w) * self.theta[i] + w * self.theta[i + 1]
        omega = (1 - w) * self.omega[i] + w * self.omega[i + 1]
        voltage = (1 - w) * self.voltage[i] + w * self.voltage[i + 1]
        return (
            voltage
            + KP * (theta - sensors["drives.motor_angle"])
            + KD * (omega - sensors["drives.motor_velocity"])
        )


def run(system: px.System, law, period: float):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return px.simulate(
            system,
            DURATION,
            x0=system.initial_state(Q0),
            control=law,
            control_period=period,
            rtol=RTOL,
            atol=RTOL * 1e-2,
            output_dt=0.01,
            progress=False,
        )


def main() -> None:
    base = robots_dir()
    if base is None:
        print("example-robot-data is not installed (pip install '.[robots]')")
        return
    robot = panda_robot(base)
    system = panda_system(robot)
    law = Tracking(system)
    print(
        f"Panda, 7 DC motors + elastic transmissions, rest-to-rest in {MOVE:g} s, "
        f"{DURATION:g} s simulated, rtol {RTOL:g}; {machine_load()}"
    )
    run(system, law, 1e-3)  # compilation and the System's one-time work
    held, wall = median_run(lambda: run(system, law, 1e-3), REPEATS)
    stats = held.meta["stats"]
    print(
        f"Python law at 1 kHz (compiled between samples): {wall:.3f} s median of {REPEATS} "
        f"(target <= 0.3 s), {stats['control_samples']} calls, {stats['nfev']} evaluations, "
        f"method {stats['method']}, {stats['compiled_segments']}/{stats['segments']} "
        "segments compiled"
    )
    builtin = px.control.ComputedTorque(
        system, lambda t: rest_to_rest(np.atleast_1d(t), Q0, DQ, MOVE).squeeze(), kp=KP, kd=KD
    )
    run(system, builtin, 1e-3)
    _, wall_builtin = median_run(lambda: run(system, builtin, 1e-3), REPEATS)
    print(f"built-in ComputedTorque at 1 kHz: {wall_builtin:.3f} s median of {REPEATS}")
    continuous, wall_c = median_run(lambda: run(system, law, 0.0), REPEATS_CONTINUOUS)
    stats_c = continuous.meta["stats"]
    print(
        f"the same law continuous (Python path): {wall_c:.2f} s median of "
        f"{REPEATS_CONTINUOUS}, {stats_c['nfev']} evaluations, method {stats_c['method']}; "
        f"ratio {wall_c / wall:.0f}x"
    )
    print("hold's error against the continuous law (max over the run, all 7 joints):")
    print(f"{'T_s [ms]':>9} {'max |dq| [rad]':>15} {'ratio':>7} {'wall [s]':>9}")
    previous = None
    for period in PERIODS:
        traj, wall_p = median_run(lambda p=period: run(system, law, p), 3)
        error = float(np.abs(traj.q - continuous.q).max())
        ratio = f"{previous / error:7.2f}" if previous else f"{'':>7}"
        print(f"{period * 1e3:9.3g} {error:15.3e} {ratio} {wall_p:9.3f}")
        previous = error


if __name__ == "__main__":
    main()
