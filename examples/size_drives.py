"""Choose motors and gears for the six_dof_arm from a catalogue for a pick-and-place motion,
then simulate the chosen design with elastic transmissions and show the tracking error."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import pinext as px
from pinext.planning import (
    Spline3m,
    best_gear_ratio,
    check_design,
    drive_requirements,
    elastic_drive_feedforward,
    load_catalogue,
    write_design_html,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: Standard harmonic-drive reductions.
RATIOS = (30.0, 50.0, 80.0, 100.0, 120.0, 160.0)
#: Torsional stiffness [N.m/rad] and damping [N.m.s/rad] of the transmissions, base to wrist.
STIFFNESS = (2.0e4, 2.0e4, 1.5e4, 4.0e3, 4.0e3, 4.0e3)
DAMPING = (10.0, 10.0, 8.0, 2.0, 2.0, 2.0)
#: Duration of the pick-and-place motion [s].
DURATION = 2.0


def pick_and_place() -> Spline3m:
    """A pick-and-place cycle as a spline with 3·m restrictions (Negrean et al. 2009): pick,
    lift, transfer, above the place, place; at rest at both ends. The second and the
    second-to-last knots are times only."""
    times = [0.0, 0.25, 0.6, 1.0, 1.4, 1.75, DURATION]
    pick = np.array([0.0, 0.6, 1.2, 0.2, -1.2, 0.0])
    lift = np.array([0.15, 0.35, 1.0, 0.4, -1.2, 0.3])
    transfer = np.array([0.8, 0.3, 0.9, 0.4, -1.0, 0.8])
    above = np.array([1.4, 0.35, 1.0, 0.3, -0.9, 1.2])
    place = np.array([1.5, 0.6, 1.25, 0.1, -0.9, 1.3])
    return Spline3m(times, [pick, None, lift, transfer, above, None, place])


def size(robot: px.Robot, motion: Spline3m, catalogue: dict) -> tuple[dict, dict]:
    """For each joint, the lightest catalogue motor and a standard ratio that pass every check
    (rated and peak torque, speed, voltage, winding temperature), preferring the largest
    margin on the rated torque."""
    joints = list(robot.model.names)[1:7]
    by_mass = sorted(catalogue.values(), key=lambda entry: entry.mass)
    chosen: dict[str, tuple] = {}
    for entry in by_mass:
        for ratio in RATIOS:
            drives = {j: px.Drive(entry.motor, px.Gear(ratio, efficiency=0.85)) for j in joints}
            report = drive_requirements(robot, motion, drives=drives, samples=401)
            check = check_design(report, {j: entry.limits for j in joints})
            for joint in joints:
                if joint in chosen and chosen[joint][0].mass < entry.mass:
                    continue
                rows = [r for r in check.rows if r.name == joint]
                if all(r.passed for r in rows):
                    margin = rows[0].margin  # rated torque
                    if joint not in chosen or margin > chosen[joint][2]:
                        chosen[joint] = (entry, ratio, margin)
    missing = [j for j in joints if j not in chosen]
    if missing:
        raise SystemExit(f"no catalogue motor and ratio pass for {', '.join(missing)}")
    drives = {
        j: px.Drive(chosen[j][0].motor, px.Gear(chosen[j][1], efficiency=0.85)) for j in joints
    }
    limits = {j: chosen[j][0].limits for j in joints}
    return drives, limits


def main() -> None:
    robot = px.load_urdf(ROOT / "urdf" / "six_dof_arm.urdf", extensions=False)
    catalogue = load_catalogue(HERE / "dc_motors.toml")
    motion = pick_and_place()
    drives, limits = size(robot, motion, catalogue)
    report = drive_requirements(robot, motion, drives=drives, samples=801)
    check = check_design(report, limits)
    names = {id(entry.motor): name for name, entry in catalogue.items()}
    print("chosen drives (lightest passing motor, standard ratio):")
    for joint, drive in drives.items():
        n_star = best_gear_ratio(
            robot, motion, joint, np.linspace(10, 300, 146), drives=drives, samples=401
        ).ratio
        print(
            f"  {joint:14s} {names[id(drive.actuator)]:15s} N = {drive.ratio:5.0f}"
            f"   (RMS-optimal N* = {n_star:.0f})"
        )
    print()
    print(check.table())

    out = Path("out")
    out.mkdir(exist_ok=True)
    html = write_design_html(
        report, check, out / "size_drives.html", title="six_dof_arm pick and place", limits=limits
    )
    print(f"\nwrote {html}")

    # the chosen design with elastic transmissions: feedforward (Fig. 20.10a) + motor-side PD
    elastic = {
        joint: px.Drive(drive.actuator, px.ElasticTransmission(drive.ratio, c, d))
        for (joint, drive), c, d in zip(drives.items(), STIFFNESS, DAMPING, strict=True)
    }
    system = px.System(robot, drives=elastic)
    t = np.linspace(0.0, DURATION + 0.5, 2501)
    q_ref = motion(np.minimum(t, DURATION))[0]
    ff = elastic_drive_feedforward(robot, elastic, t, q_ref)
    control = ff.control(
        system.layout["drives.motor_angle"], system.layout["drives.motor_velocity"], 2.0, 0.05
    )
    traj = px.simulate(
        system, t[-1], x0=system.initial_state(q_ref[0]), control=control,
        rtol=1e-8, atol=1e-10, output_dt=2e-3, progress=True,
    )  # fmt: skip
    error = traj.q[:, :6] - motion(np.minimum(traj.t, DURATION))[0]
    print(
        "max tracking error per joint [mrad]:",
        np.array2string(1e3 * np.abs(error).max(0), precision=3),
    )

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for k, joint in enumerate(drives):
        line = axes[0].plot(traj.t, traj.q[:, k], label=joint)[0]
        axes[0].plot(t, q_ref[:, k], ":", color=line.get_color())
        axes[1].plot(traj.t, 1e3 * error[:, k], color=line.get_color())
    axes[0].set_ylabel("q [rad] (dotted: reference)")
    axes[0].legend(ncol=3, fontsize=8)
    axes[1].set_ylabel("tracking error [mrad]")
    axes[1].set_xlabel("t [s]")
    fig.suptitle("Chosen drives with elastic transmissions: feedforward + motor PD")
    fig.tight_layout()
    fig.savefig(out / "size_drives.png", dpi=120)
    print(f"wrote {out / 'size_drives.png'}")


if __name__ == "__main__":
    main()
