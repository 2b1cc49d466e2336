"""Two 6-DOF arms carry one box: several robots in one model, a free body and two weld loops."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pinocchio as pin

import pinext as px

WIDTH = 0.3  # between the grips [m]
BOX_MASS = 3.0  # [kg]
BOX_INERTIA = pin.Inertia.FromBox(BOX_MASS, WIDTH, 0.2, 0.15).inertia  # a 30 x 20 x 15 cm box
GAINS = (100.0, 5.0)  # joint PD holding the start pose [N.m/rad, N.m.s/rad]


def build() -> tuple[px.System, np.ndarray]:
    """Two arms facing each other 1 m apart (McClamroch (1986) (12)–(19)), the box between
    them welded to both tools; returns the System and a consistent initial state."""
    arm = px.load_robot("six_dof_arm")
    facing = pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, np.pi), np.array([1.0, 0.0, 0.0]))
    pair = px.assemble({"left": arm, "right": arm}, placements={"right": facing})
    box = pin.SE3(np.eye(3), np.array([0.5, 0.0, 0.5]))
    robot = px.free_body(pair, "box", BOX_MASS, BOX_INERTIA, box)

    def grip(side: float) -> pin.SE3:  # the tool's z axis into the box's side
        rotation = pin.rpy.rpyToMatrix(0.0, side * np.pi / 2, 0.0)
        return pin.SE3(rotation, np.array([-side * WIDTH / 2, 0.0, 0.0]))

    loops = [
        px.Loop("left/tool", "box", "weld", grip(1.0), name="left grip"),
        px.Loop("right/tool", "box", "weld", grip(-1.0), name="right grip"),
    ]
    system = px.System(robot, loops=loops)
    q = pin.neutral(robot.model)
    q[:6] = q[6:12] = [0.0, -0.6, 1.2, -0.6, -1.57, 0.0]
    return system, px.close_loops(system, q)


def main() -> None:
    """Let the box sag into the arms' joint PD for 2 s; print the audit, write the HTML."""
    system, x0 = build()
    q_hold = system.split(x0)[0][:12].copy()

    def hold(t: float, x: np.ndarray) -> np.ndarray:
        q, v = system.split(x)
        u = np.zeros(system.model.nv)
        u[:12] = GAINS[0] * (q_hold - q[:12]) - GAINS[1] * v[:12]
        return u

    traj = px.simulate(system, 2.0, x0=x0, control=hold, output_dt=1 / 60)
    for name in ("left grip", "right grip"):
        force = traj.outputs[f"{name}.force"]
        print(
            f"{name}: closure {traj.constraint_residual(name).max():.1e}, "
            f"final force on the tool {np.round(force[-1], 2)} N"
        )
    print(f"energy balance {traj.energy_balance().max_relative():.1e}")
    out = Path("out")
    out.mkdir(exist_ok=True)
    try:
        from pinext.visualization import Viewer
    except ImportError:  # pragma: no cover
        sys.exit("the viewer needs meshcat: pip install 'pinext[viz]'")
    path = Viewer(system).export_html(traj, out / "two_arms_box.html", title="pinext: two arms")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
