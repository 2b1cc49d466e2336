"""Save a run, then replay it from the file alone: the robot is rebuilt from the description the
trajectory carries (URDF and sidecar as text, package:// meshes), with no System at hand."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

try:
    import pinext as px
    from pinext.robots.description import mesh_roots
    from pinext.visualization import export_html
except ImportError as err:  # pragma: no cover
    sys.exit(f"{err}: install pinext with its viewer extra: pip install 'pinext[viz]'")


def main(out: Path = Path("out")) -> Path:
    """Simulate the UR5 (the project's six_dof_arm without example-robot-data) swinging under a
    PD law for 0.5 s, save it, load it back and write its HTML page from the file."""
    try:
        robot = px.load_robot("ur5")
    except px.exceptions.RobotNotFound:
        robot = px.load_robot("six_dof_arm", extensions=False)
    nq, nv = robot.nq, robot.nv
    q0 = np.zeros(nq)
    q0[:3] = [0.3, -1.0, 0.8]
    swing = np.zeros(nq)
    swing[:3] = 0.3

    def law(t: float, x: np.ndarray) -> np.ndarray:
        """A PD law around a slow swing of the first three joints [N.m]."""
        reference = q0 + swing * np.sin(2 * np.pi * t)
        return 300.0 * (reference - x[:nq]) - 30.0 * x[nq : nq + nv]

    traj = px.simulate(robot, 0.5, q0=q0, control=law, output_dt=1 / 30)
    saved = traj.save(out / "replay.npz")

    traj = px.Trajectory.load(saved)  # nothing else is needed from here on
    description = traj.meta["description"]
    print(f"{saved}: {description['file']}, {len(description['meshes'])} meshes, e.g.")
    for uri in description["meshes"][:2]:
        print(f"  {uri}")
    print("looked up in:", *[str(root) for root in mesh_roots()], sep="\n  ")
    page = export_html(traj, out / "replay.html", fps=30.0)
    print(f"wrote {page} ({page.stat().st_size / 1e6:.1f} MB)")
    return page


if __name__ == "__main__":
    main(Path(sys.argv[sys.argv.index("--out") + 1]) if "--out" in sys.argv else Path("out"))
