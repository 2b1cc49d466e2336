"""A four-bar linkage from a URDF with one <loop>: the crank torque over a revolution, plotted."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import pinext as px

URDF = Path(__file__).resolve().parent / "four_bar.urdf"  # the chain and its <loop>
GUESS = np.array([0.0, 1.5, 1.5])  # joint angles near the closed linkage [rad]


def build() -> tuple[px.System, np.ndarray]:
    """The linkage closed by the URDF's <loop> (no loops= argument) and a closed rest pose
    (McClamroch (1986) (32): consistent initial conditions by :func:`pinext.close_loops`)."""
    system = px.System(px.load_urdf(URDF))
    return system, px.close_loops(system, GUESS)


def revolution(duration: float):
    """One revolution of the crank, rest to rest: θ0 + 2π s(t/T), s the quintic
    10τ³ - 15τ⁴ + 6τ⁵; returns t -> (θ - θ0, θ̇, θ̈)."""

    def law(t: float) -> tuple[float, float, float]:
        tau = float(np.clip(t / duration, 0.0, 1.0))
        s = tau**3 * (10 - 15 * tau + 6 * tau**2)
        ds = 30 * tau**2 * (1 - tau) ** 2 / duration
        dds = 60 * tau * (1 - tau) * (1 - 2 * tau) / duration**2
        return 2 * np.pi * s, 2 * np.pi * ds, 2 * np.pi * dds

    return law


def crank_run(duration: float, output_dt: float = 0.005):
    """The crank driven through one revolution in ``duration`` [s] (a Prescribed joint: its
    reaction is the driving torque); returns (system, trajectory)."""
    linkage, x0 = build()
    theta0 = float(linkage.split(x0)[0][0])
    law = revolution(duration)

    def position(t: float) -> tuple[float, float, float]:
        angle, rate, acceleration = law(t)
        return theta0 + angle, rate, acceleration

    crank = px.Prescribed("crank_joint", position, name="crank")
    system = px.System(linkage.robot, components=[crank])
    # a planar loop in 3D: its hinge rows have rank 2 (said once at INFO; reactions min-norm)
    traj = px.simulate(system, duration, x0=x0, output_dt=output_dt)
    return system, traj


def main() -> None:
    """Crank torque against crank angle for a slow (gravity) and a fast revolution."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the fast revolution only")
    args = parser.parse_args()
    durations = (1.0,) if args.quick else (8.0, 1.0)
    runs = {}
    for duration in durations:
        system, traj = crank_run(duration)
        torque = traj.outputs["crank.torque"][:, 0]
        runs[duration] = (np.degrees(traj.q[:, 0] - traj.q[0, 0]), torque)
        print(
            f"revolution in {duration:g} s: crank torque {torque.min():+.3f} .. "
            f"{torque.max():+.3f} N.m, closure {traj.constraint_residual('pivot').max():.1e} m, "
            f"energy balance {traj.energy_balance().max_relative():.1e}"
        )
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        sys.exit("the plot needs matplotlib: pip install matplotlib")
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for duration, (angle, torque) in runs.items():
        ax.plot(angle, torque, label=f"one revolution in {duration:g} s")
    ax.set_xlabel("crank angle from the start [deg]")
    ax.set_ylabel("crank torque [N.m]")
    ax.set_title("four-bar crank-rocker: driving torque")
    ax.grid(True, alpha=0.3)
    ax.legend()
    out = Path("out")
    out.mkdir(exist_ok=True)
    fig.tight_layout()
    fig.savefig(out / "four_bar_torque.png", dpi=120)
    print(f"wrote {out / 'four_bar_torque.png'}")


if __name__ == "__main__":
    main()
