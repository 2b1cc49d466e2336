"""Watch a writing task and a flexible-arm slew in the browser; write HTML animations and plots."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

try:
    import matplotlib

    matplotlib.use("Agg")
    import pinext as px
    from pinext.tasks import run_writing_task
    from pinext.visualization import Viewer, plots
except ImportError as err:  # pragma: no cover
    sys.exit(f"{err}: install pinext with its viewer extra: pip install 'pinext[viz]'")


def main(out: Path = Path("out"), live: bool = False) -> None:
    """Simulate, export self-contained HTML files, and write PNG/SVG plots to ``out``."""
    out.mkdir(parents=True, exist_ok=True)

    # seed 000 §20.5: approach, impact, writing on a compliant massive table (model (c))
    writing = run_writing_task("compliant", 3.0, output_dt=1e-2)
    writing.save(out / "writing_compliant.npz")
    html = px.visualization.export_html(writing, out / "demo.html")
    print(f"wrote {html} ({html.stat().st_size / 1e6:.1f} MB): open it in a browser")
    for name, fig in [
        ("contact_force", plots.contact_force(writing)),
        ("energy_audit", plots.energy_audit(writing)),
        ("joint_trajectories", plots.joint_trajectories(writing)),
        ("torque_speed", plots.torque_speed(writing)),
    ]:
        print("wrote", *plots.save(fig, out / name))

    # seed 001 §5.2: a 2 m steel bar driven by a torque pulse, bending drawn 20 times larger
    robot = px.load_urdf(px.robot_path("flexible_arm"))
    hub = np.zeros(robot.nv)
    hub[0] = 2.0
    torque = px.Schedule([0.0, 0.3, 0.6], [hub, -hub, 0 * hub], kind="zoh")
    slew = px.simulate(robot, 1.5, control=torque, output_dt=1 / 60)
    viewer = Viewer(robot, deflection_scale=20.0)
    print(
        "wrote",
        viewer.export_html(
            slew, out / "flexible_slew.html", title="pinext: flexible arm (bending x20)"
        ),
    )
    print("wrote", *plots.save(plots.mode_shapes(robot), out / "mode_shapes"))
    if live:
        viewer.play(slew, speed=0.5)
        input("press Enter to stop the live viewer ")
        viewer.close()


if __name__ == "__main__":
    main(live="--live" in sys.argv)
