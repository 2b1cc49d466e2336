"""Benchmark: the writing task (3 s): wall time, events, RHS calls, impact-time error."""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from pinext.contact import run_writing_task
from pinext.contact.tasks import FRAME, ROTOR_INERTIA, URDF, WritingController


def impact_time_reference(traj) -> float:
    """The approach crossing by brentq on a tightly integrated (rtol 1e-13) free motion."""
    import pinext as px

    robot = px.load_urdf(URDF, extensions=False)
    model = robot.model
    for joint, inertia in ROTOR_INERTIA.items():
        ratio = robot.transmissions[joint].reduction
        model.armature[robot.velocity_index(joint)] = inertia * ratio**2
    data = model.createData()
    fid = model.getFrameId(FRAME)
    pin.framesForwardKinematics(model, data, traj.q[0])
    ctrl = WritingController(model, data.oMf[fid].copy(), 0.2, 10.0, 0.6, (0.8, 2.6), 0.2)

    def f(t, y):
        return np.concatenate([y[6:], pin.aba(model, data, y[:6], y[6:], ctrl(t, y))])

    t_event = traj.events[0].t
    sol = solve_ivp(
        f,
        (0.0, t_event + 0.01),
        np.concatenate([traj.q[0], traj.v[0]]),
        method="DOP853",
        rtol=1e-13,
        atol=1e-15,
        dense_output=True,
    )

    def gap(t):
        pin.framesForwardKinematics(model, data, sol.sol(t)[:6])
        return data.oMf[fid].translation[2] - 0.2

    return brentq(gap, t_event - 0.01, t_event + 0.01, xtol=1e-15, rtol=1e-15)


def main() -> None:
    print(
        f"{'environment':12s} {'wall [s]':>9s} {'events':>7s} {'rhs calls':>10s} "
        f"{'rhs [us]':>9s} {'impact error [s]':>17s} {'energy residual':>16s}"
    )
    t_ref = None
    for environment in ("rigid", "compliant", "spring"):
        start = time.perf_counter()
        traj = run_writing_task(environment, 3.0)
        wall = time.perf_counter() - start
        stats = traj.meta["stats"]
        if t_ref is None:
            t_ref = impact_time_reference(traj)  # the approach is the same for all three
        error = traj.events[0].t - t_ref
        print(
            f"{environment:12s} {wall:9.2f} {len(traj.events):7d} {stats['nfev']:10d} "
            f"{1e6 * stats['wall_time'] / stats['nfev']:9.1f} {error:17.2e} "
            f"{traj.energy_balance().max_relative():16.1e}"
        )


if __name__ == "__main__":
    main()
