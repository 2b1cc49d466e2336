"""A stop-and-go motion of one joint through a gear with 0.5° of backlash: the lost motion at
each reversal and the impacts of the flanks (restitution 0.3), plotted to the given file.

Usage: ``python examples/backlash.py backlash.png``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import pinext as px
from pinext.drives import DCMotor, Drive, Gear
from pinext.robots import robot_path

#: Total free play at the joint [rad].
BACKLASH = np.deg2rad(0.5)
RATIO = 100.0
RESTITUTION = 0.3
DURATION = 2.4
#: A 48 V, 10 A amplifier in front of a DC motor of the size of a 5–10 kg arm joint.
MOTOR = DCMotor(
    resistance=0.6,
    torque_constant=0.06,
    back_emf_constant=0.06,
    rotor_inertia=3e-5,
    voltage_limit=48.0,
    current_limit=10.0,
)
#: The stops of the motion (joint angle [rad]) and the times [s] it moves between them.
STOPS = (0.0, 0.5, 0.5, -0.2, -0.2, 0.3)
TIMES = (0.0, 0.5, 0.9, 1.4, 1.8, 2.1)


def reference(t: float) -> tuple[float, float]:
    """Joint angle [rad] and velocity [rad/s] of the stop-and-go motion (quintic steps)."""
    for k in range(len(TIMES) - 1):
        t0, t1 = TIMES[k], TIMES[k + 1]
        if t < t1:
            s = min(max((t - t0) / (t1 - t0), 0.0), 1.0)
            shape = s**3 * (10 - 15 * s + 6 * s * s)
            rate = 30 * s * s * (1 - s) ** 2 / (t1 - t0)
            step = STOPS[k + 1] - STOPS[k]
            return STOPS[k] + step * shape, step * rate
    return STOPS[-1], 0.0


def run(duration: float = DURATION) -> tuple[px.System, px.Trajectory]:
    """The hub of the 2 m bar (the project's flexible_arm, rigid) driven through the gear."""
    robot = px.load_urdf(robot_path("flexible_arm"), extensions=False)
    gear = Gear(RATIO, backlash=BACKLASH, restitution=RESTITUTION)
    system = px.System(robot, drives={"hub": Drive(MOTOR, gear)}, joint_limits=False)
    angle, rate = system.layout["drives.play_angle"], system.layout["drives.play_velocity"]
    kp, kd = 2.2, 0.1  # [V/rad], [V.s/rad] on the motor shaft

    def voltage(t: float, x: np.ndarray) -> np.ndarray:
        """PD on the motor angle θ = N (q + ψ): the motor follows, the link lags by the play."""
        q_ref, v_ref = reference(t)
        theta = RATIO * (x[0] + x[angle][0])
        omega = RATIO * (x[1] + x[rate][0])
        return np.array([kp * (RATIO * q_ref - theta) + kd * (RATIO * v_ref - omega)])

    x0 = system.initial_state(np.zeros(1), np.zeros(1))
    x0[angle] = -BACKLASH / 2  # the motor rests on the backward flank
    traj = px.simulate(system, duration, x0=x0, control=voltage, rtol=1e-9, atol=1e-11)
    return system, traj


def lost_motion(traj: px.Trajectory) -> list[float]:
    """The lost motion of each crossing of the play [rad, at the joint]: between leaving one
    flank and meeting the other, the motor's travel θ/N minus the link's travel q."""
    out = []
    motor = traj.outputs["drives.motor_angle"][:, 0] / RATIO
    left = None
    for event in traj.events:
        at = np.flatnonzero(traj.t == event.t)
        if not at.size:
            continue
        if event.name.endswith("separates"):
            left = (motor[at[-1]] - traj.q[at[-1], 0], event.info.get("flank"))
        elif event.name.endswith("engages") and left is not None:
            out.append(abs(motor[at[0]] - traj.q[at[0], 0] - left[0]))
            left = None
    return out


def plot(system: px.System, traj: px.Trajectory, path: Path) -> None:
    """Joint and motor angles, the position in the play, and the flanks' impulses."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    half = 1e3 * BACKLASH / 2
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True, layout="constrained")
    motor = traj.outputs["drives.motor_angle"][:, 0] / RATIO
    axes[0].plot(traj.t, traj.q[:, 0], label="link q")
    axes[0].plot(traj.t, motor, "--", label="motor θ/N")
    axes[0].plot(traj.t, [reference(t)[0] for t in traj.t], ":", color="k", label="reference")
    axes[0].set_ylabel("angle [rad]")
    axes[0].legend(loc="upper right")
    axes[1].plot(traj.t, 1e3 * traj.outputs["drives.play"][:, 0], color="C2")
    for bound in (half, -half):
        axes[1].axhline(bound, color="k", lw=0.8, ls="--")
    axes[1].set_ylabel("play ψ = θ/N − q [mrad]")
    impacts = [e for e in traj.events if e.name.endswith("engages") and e.info.get("impulse")]
    times = [e.t for e in impacts]
    impulses = [1e3 * e.info["impulse"] for e in impacts]
    if impacts:
        axes[2].stem(times, impulses, basefmt=" ")
    axes[2].set_ylabel("flank impulse [mN.m.s]")
    axes[2].set_xlabel("time [s]")
    fig.suptitle(
        f"0.5° backlash, e = {RESTITUTION}: {len(impacts)} impacts, "
        f"{1e3 * sum(e.info['energy_loss'] for e in impacts):.2f} mJ lost"
    )
    Path(path).parent.mkdir(parents=True, exist_ok=True)  # e.g. out/, as the README says
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path, help="the figure (PNG, PDF, SVG)")
    parser.add_argument("--duration", type=float, default=DURATION, help="[s]")
    args = parser.parse_args(argv)
    system, traj = run(args.duration)
    lost = lost_motion(traj)
    impacts = sum(e.name.endswith("engages") for e in traj.events)
    print(f"{impacts} flank events; lost motion of each crossing of the play [deg]:")
    print(np.array2string(np.rad2deg(lost), precision=10))
    print(f"energy balance residual (relative): {traj.energy_balance().max_relative():.2e}")
    plot(system, traj, args.output)
    print(f"figure: {args.output}")
    return args.output


if __name__ == "__main__":
    main()
