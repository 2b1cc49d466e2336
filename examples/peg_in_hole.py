"""Peg-in-hole with both parts compliant (Vukobratović & Potkonjak §20.5.1, Problem 9): the peg
and the part with the hole are of the same material, so both deform at the bottom contact.

The peg slides down the hole (``px.peg_in_hole``: x, y, roll and pitch held) under the writing
task's impedance law and is pressed on the bottom, where the peg's axial spring meets the
part's local spring in series, in front of the part's mass on its fixture (model (d))."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pinocchio as pin

import pinext as px
from pinext.contact import Contact, ContactComponent, DynamicEnvironment, plane, series_stiffness
from pinext.robots import robot_path
from pinext.tasks import FRAME, ROTOR_INERTIA, start_configuration, writing_controller

HOLE_TOP = 0.25  # height of the hole's mouth [m]
DEPTH = 0.03  # the hole's depth [m]
PRESSURE = 20.0  # the impedance controller's pressing force on a rigid bottom [N]
#: The same polymer on both sides: the peg's axial stiffness and the part's local stiffness
#: at the hole's bottom [N/m], with their dampers [N.s/m].
K_PEG, D_PEG = 5.0e5, 300.0
K_PART, D_PART = 5.0e5, 300.0
#: The part with the hole: its mass on its fixture (model (d) of Fig. 20.15).
PART = DynamicEnvironment(
    mass=0.5, stiffness=1.0e5, damping=200.0, contact_stiffness=K_PART, contact_damping=D_PART
)


def run(compliant_peg: bool = True, duration: float = 1.5) -> tuple[px.Trajectory, float]:
    """Insert the peg and press it on the hole's bottom; returns the trajectory and the
    controller's vertical stiffness K_z [N/m]."""
    robot = px.load_urdf(robot_path("six_dof_arm"), extensions=False)
    model = robot.model
    for joint, inertia in ROTOR_INERTIA.items():
        ratio = robot.transmissions[joint].reduction if joint in robot.transmissions else 1.0
        model.armature[robot.velocity_index(joint)] = inertia * ratio**2
    axis = np.array([0.5, -0.05])  # where the hole is, in the table's plane [m]
    # the peg starts 10 mm inside the hole, on its axis: the hole's rows hold from the start
    q0 = start_configuration(model, np.array([*axis, HOLE_TOP - 0.01]))
    data = model.createData()
    pin.framesForwardKinematics(model, data, q0)
    start = data.oMf[model.getFrameId(FRAME)].copy()
    bottom = HOLE_TOP - DEPTH
    # the writing task's impedance law, descending onto the bottom with no line to write
    controller = writing_controller(
        model,
        start,
        bottom,
        PRESSURE,
        t_approach=0.5,
        t_line=(duration + 1, duration + 2),
        length=0,
    )
    hole = pin.SE3(np.eye(3), np.array([*axis, HOLE_TOP]))  # its z points out of the hole
    peg = pin.SE3(np.diag([-1.0, 1.0, -1.0]), np.zeros(3))  # the peg's axis, up as the hole's
    lateral = ContactComponent(
        [Contact(px.peg_in_hole(FRAME, hole, tool=peg), name="hole", stabilization=30.0)],
        name="hole",
    )
    bottom_contact = Contact(
        plane(FRAME, (*axis, bottom)),
        name="bottom",
        tool_stiffness=K_PEG if compliant_peg else None,
        tool_damping=D_PEG if compliant_peg else 0.0,
    )
    system = px.System(robot, contacts=[bottom_contact], environment=PART, components=[lateral])
    traj = px.simulate(
        system,
        duration,
        q0=q0,
        control=controller,
        control_period=0.0,  # the continuous law
        output_dt=1e-3,
        rtol=1e-12,
        atol=1e-14,
    )
    return traj, float(controller.kp[2])


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=1.5, help="simulated time [s]")
    parser.add_argument("--plot", action="store_true", help="write out/peg_in_hole.png")
    args = parser.parse_args(argv)
    traj, k_z = run(True, args.duration)
    out = {k.removeprefix("contact."): v for k, v in traj.outputs.items()}
    # at rest the controller's spring K_z pushes through the three springs in series
    stiffness = series_stiffness(K_PEG, K_PART, PART.stiffness)
    expected = PRESSURE * stiffness / (stiffness + k_z)
    summary = {
        "energy_balance": traj.energy_balance().max_relative(),
        "final_force": float(out["force"][-1, 0]),
        "expected_force": expected,
        "peg_compression_um": 1e6 * float(out["tool_deformation"][-1, 0]),
        "part_compression_um": 1e6 * float(out["surface_deformation"][-1, 0]),
        "fixture_deflection_um": -1e6 * float(out["deformation"][-1, 0]),
        "peg_energy_mJ": 1e3 * float(out["tool_energy"][-1, 0]),
        "part_energy_mJ": 1e3 * float(out["environment_energy"][-1, 0]),
    }
    print("events:", ", ".join(f"{e.name} at {e.t:.4f} s" for e in traj.events))
    for key, value in summary.items():
        print(f"{key}: {value:.6g}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rigid, _ = run(False, args.duration)
        folder = Path("out")
        folder.mkdir(exist_ok=True)
        fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
        axes[0].plot(traj.t, out["force"][:, 0], label="compliant peg")
        axes[0].plot(rigid.t, rigid.outputs["contact.force"][:, 0], "--", label="rigid peg")
        axes[0].set_ylabel("force at the bottom [N]")
        axes[1].plot(traj.t, 1e6 * out["tool_deformation"][:, 0], label="peg (robot side)")
        axes[1].plot(traj.t, 1e6 * out["surface_deformation"][:, 0], label="part (environment)")
        axes[1].plot(traj.t, -1e6 * out["deformation"][:, 0], label="fixture (part's mass)")
        axes[1].set_ylabel("deformation [µm]")
        axes[2].plot(traj.t, 1e3 * out["tool_energy"][:, 0], label="in the peg")
        axes[2].plot(traj.t, 1e3 * out["environment_energy"][:, 0], label="in the part")
        axes[2].set_ylabel("stored energy [mJ]")
        axes[2].set_xlabel("t [s]")
        for ax in axes:
            ax.legend(fontsize=8)
        fig.suptitle("Peg-in-hole, both parts compliant (same material)")
        fig.tight_layout()
        fig.savefig(folder / "peg_in_hole.png", dpi=120)
        traj.save(folder / "peg_in_hole.npz")
        print(f"wrote {folder / 'peg_in_hole.png'} and {folder / 'peg_in_hole.npz'}")
    return summary


if __name__ == "__main__":
    main()
