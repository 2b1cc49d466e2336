"""Solo12 lands, then trots under an open-loop PD law to sinusoidal joint targets (time stepping).

The four feet are ``[[contacts]]`` with ``surface = "ground"`` (``pinext/robots/
solo12.pinext.toml``); ``simulate(..., method="timestepping", dt=1e-3)`` solves their
frictional contact problem with Pinocchio's ADMM at every step. The gait: diagonal leg pairs
(FL + HR, FR + HL) swing in antiphase, the hip (HFE) by ``±A_hip sin(2π f t)`` about the
standing posture, the knee (KFE) flexing by ``A_knee`` while its leg swings forward.

Run: ``python examples/solo12_walk.py [--quick] [--html [walk.html]]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

try:
    import pinext as px
    from pinext.robots.solo12 import FEET, load_solo12, posture_law
except ImportError as error:  # pragma: no cover - install hint
    raise SystemExit(f"{error}: pip install -e '.[robots]'") from error

FREQUENCY = 2.0  # steps of each diagonal pair per second [Hz]
HIP_AMPLITUDE = 0.25  # [rad]
KNEE_AMPLITUDE = 0.5  # [rad]
START = 0.5  # the gait starts after the landing [s]
#: (HFE index in q, KFE index in q, phase [rad], knee flexion sign) per leg.
LEGS = {
    "FL": (8, 9, 0.0, -1.0),
    "FR": (11, 12, np.pi, -1.0),
    "HL": (14, 15, np.pi, 1.0),
    "HR": (17, 18, 0.0, 1.0),
}


def trot(q_standing: np.ndarray):
    """``q_ref(t)``: the standing posture with the diagonal-pair trot added after START."""

    def q_ref(t: float) -> np.ndarray:
        q = q_standing.copy()
        if t < START:
            return q
        ramp = min(1.0, (t - START) / 0.5)  # half a second to reach the full amplitude
        for hfe, kfe, phase, flex in LEGS.values():
            angle = 2 * np.pi * FREQUENCY * (t - START) + phase
            q[hfe] += ramp * HIP_AMPLITUDE * np.sin(angle)
            q[kfe] += ramp * flex * KNEE_AMPLITUDE * max(0.0, -np.cos(angle))  # lift to swing
        return q

    return q_ref


def walk(t_final: float) -> px.Trajectory:
    """Drop Solo12 from 0.3 m and trot until ``t_final`` [s] (1 ms steps, 10 ms samples)."""
    robot, q_standing = load_solo12()
    q0 = q_standing.copy()
    q0[2] = 0.3
    law = posture_law(trot(q_standing), kp=10.0, kd=0.2)
    return px.simulate(
        robot, t_final, q0=q0, control=law, method="timestepping", dt=1e-3, output_dt=0.01
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1.5 s instead of 6 s")
    parser.add_argument(
        "--html",
        nargs="?",
        const="out/solo12_walk.html",
        default=None,
        help="write a self-contained meshcat playback (default file: out/solo12_walk.html)",
    )
    args = parser.parse_args()
    t_final = 1.5 if args.quick else 6.0
    start = time.perf_counter()
    traj = walk(t_final)
    wall = time.perf_counter() - start
    walking = traj.t >= START
    distance = traj.q[-1, :2] - traj.q[walking][0, :2]
    touchdowns = sum(e.name.startswith("touchdown") for e in traj.events)
    lift_offs = sum(e.name.startswith("lift-off") for e in traj.events)
    print(f"Solo12 trot, {t_final:g} s simulated in {wall:.2f} s ({t_final / wall:.1f}x real time)")
    print(f"base moved by ({distance[0]:+.3f}, {distance[1]:+.3f}) m after the landing")
    print(f"base height {traj.q[walking, 2].min():.3f}..{traj.q[walking, 2].max():.3f} m")
    print(f"{touchdowns} touchdowns, {lift_offs} lift-offs of the feet {', '.join(FEET)}")
    print(f"deepest foot penetration {max(0.0, -traj.outputs['contact.gap'].min()):.2e} m")
    if args.html:
        from pinext.visualization import export_html

        Path(args.html).parent.mkdir(parents=True, exist_ok=True)
        print(f"playback: {export_html(traj, args.html)}")


if __name__ == "__main__":
    main()
