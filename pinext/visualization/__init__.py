"""Browser playback (meshcat) and plots (matplotlib) of pinext trajectories.

* :class:`Viewer`, :func:`play`, :func:`export_html`: the robot with its URDF meshes, flexible
  sublinks, surfaces, the moving environment mass, contact-force and impulse arrows and
  end-effector trails, in a live viewer (server on 127.0.0.1) or a self-contained HTML file.
* :mod:`pinext.visualization.plots`: the plots engineers expect (imported on first use).
* :func:`view`: what ``pinext view RESULT.npz [--html out.html]`` runs.

Modules: :mod:`.viewer` (the :class:`Viewer`), :mod:`.replay` (a saved trajectory's robot
rebuilt from its description, :func:`viewer_for`, :func:`play`, :func:`export_html`),
:mod:`.scene` (what components declare for it to draw), :mod:`.geometry` (generated
geometry), :mod:`.sampling` (fixed frame rate), :mod:`.camera` (framing and floor),
:mod:`.html` (the self-contained page), :mod:`.server` (the live server on 127.0.0.1, stopped
at exit and on SIGTERM).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:
    import meshcat  # noqa: F401
except ImportError as _err:  # pragma: no cover - meshcat is a declared dependency
    raise ImportError(
        "pinext.visualization needs meshcat, a dependency of pinext: pip install meshcat"
    ) from _err

from .geometry import skeleton_geometry
from .replay import export_html, play, viewer_for
from .server import LiveServer
from .viewer import Viewer

__all__ = [
    "LiveServer",
    "Viewer",
    "demo_outputs",
    "export_html",
    "play",
    "plots",
    "skeleton_geometry",
    "view",
    "viewer_for",
]


def view(
    path: str | Path,
    html: str | Path | None = None,
    *,
    speed: float = 1.0,
    fps: float = 30.0,
    block: bool = True,
    package_dirs: Sequence[str | Path] | str | Path | None = None,
) -> Any:
    """Show a saved trajectory: live in the browser, or as a self-contained HTML file.

    The robot is rebuilt from the trajectory's description alone (``meta["description"]``,
    see :func:`viewer_for`): the file may come from another machine.

    Args:
        path: A ``.npz`` file written by :meth:`pinext.Trajectory.save`.
        html: Write this HTML file instead of starting the live viewer.
        speed: Playback speed of the live viewer.
        fps: Frames per second of simulated time.
        block: Live viewer only: after playing, keep the server running until Ctrl-C.
        package_dirs: Folders to look the robot's ``package://`` meshes up in first.

    Returns:
        The HTML path, or the live :class:`Viewer`.

    The live server stops when this returns (``block=True``), on Ctrl-C, on SIGTERM or SIGHUP,
    and at interpreter exit.
    """
    from ..simulation import Trajectory

    trajectory = Trajectory.load(path)
    if html is not None:
        written = export_html(trajectory, html, fps=fps, package_dirs=package_dirs)
        print(f"pinext: wrote {written}")
        return written
    viewer = viewer_for(trajectory, package_dirs=package_dirs)
    try:
        print(f"pinext: open {viewer.url} in a browser (Ctrl-C to stop)", flush=True)
        viewer.play(trajectory, speed, fps=fps)
        if block:
            import time

            while True:
                time.sleep(1.0)
    except KeyboardInterrupt:
        block = True
    finally:
        if block:
            viewer.close()
    return viewer


def demo_outputs(out: str | Path, *, fps: float = 30.0) -> list[Path]:
    """Write the demo's browser animations and plots from the trajectories in ``out``.

    Reads ``writing_compliant.npz`` (else ``writing_rigid.npz``), ``flexible_slew.npz`` and
    ``elastic_drives.npz`` when present (what ``pinext demo`` saves) and writes ``demo.html``
    (the writing task), ``flexible_slew.html`` (bending drawn 20 times larger) and PNG + SVG
    plots: contact force, energy audit, joint trajectories, torque-speed points, mode shapes,
    link vs motor angle, motor trajectories.

    Returns:
        The files written.
    """
    import matplotlib

    matplotlib.use("Agg")
    from ..simulation import Trajectory
    from . import plots

    out = Path(out)
    written: list[Path] = []
    writing = next(
        (
            out / f"writing_{e}.npz"
            for e in ("compliant", "rigid")
            if (out / f"writing_{e}.npz").is_file()
        ),
        None,
    )
    if writing is not None:
        traj = Trajectory.load(writing)
        written.append(export_html(traj, out / "demo.html", fps=fps))
        written += plots.save(plots.contact_force(traj), out / "contact_force")
        written += plots.save(plots.energy_audit(traj), out / "energy_audit")
        written += plots.save(plots.joint_trajectories(traj), out / "joint_trajectories")
        written += plots.save(plots.torque_speed(traj), out / "torque_speed")
    flexible = out / "flexible_slew.npz"
    if flexible.is_file():
        traj = Trajectory.load(flexible)
        viewer = viewer_for(traj, deflection_scale=20.0)
        written.append(
            viewer.export_html(
                traj,
                out / "flexible_slew.html",
                fps=fps,
                title="pinext: flexible arm (bending x20)",
            )
        )
        written += plots.save(plots.mode_shapes(viewer.robot), out / "mode_shapes")
        written += plots.save(plots.energy_audit(traj), out / "flexible_energy_audit")
    drives = out / "elastic_drives.npz"
    if drives.is_file():
        traj = Trajectory.load(drives)
        written += plots.save(plots.link_vs_motor(traj, 1), out / "link_vs_motor")
        written += plots.save(plots.motor_trajectories(traj), out / "motor_trajectories")
        written += plots.save(plots.torque_speed(traj), out / "drive_torque_speed")
    return written


def __getattr__(name: str) -> Any:
    """Import :mod:`plots` (matplotlib) only when it is used."""
    if name == "plots":
        import importlib

        return importlib.import_module(".plots", __name__)
    raise AttributeError(f"module 'pinext.visualization' has no attribute '{name}'")
