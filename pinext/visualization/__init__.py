"""Browser playback (meshcat) and plots (matplotlib) of pinext trajectories.

* :class:`Viewer`, :func:`play`, :func:`export_html`: the robot with its URDF meshes, flexible
  sublinks, surfaces, the moving environment mass, contact-force and impulse arrows and
  end-effector trails, in a live viewer (server on 127.0.0.1) or a self-contained HTML file.
* :mod:`pinext.visualization.plots`: the plots engineers expect (imported on first use).
* :func:`view`: what ``pinext view RESULT.npz [--html out.html]`` runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .meshcat_viewer import LiveServer, Viewer, export_html, play, skeleton_geometry, viewer_for

__all__ = [
    "LiveServer",
    "Viewer",
    "export_html",
    "play",
    "plots",
    "skeleton_geometry",
    "view",
    "viewer_for",
]


def view(path: str | Path, html: str | Path | None = None, *, speed: float = 1.0,
         fps: float = 30.0, block: bool = True) -> Any:
    """Show a saved trajectory: live in the browser, or as a self-contained HTML file.

    The robot is rebuilt from ``trajectory.meta`` (``urdf``, ``flexible``, ``sidecar``).

    Args:
        path: A ``.npz`` file written by :meth:`pinext.Trajectory.save`.
        html: Write this HTML file instead of starting the live viewer.
        speed: Playback speed of the live viewer.
        fps: Frames per second of simulated time.
        block: Live viewer only: after playing, keep the server running until Ctrl-C.

    Returns:
        The HTML path, or the live :class:`Viewer`.
    """
    from ..simulation import Trajectory

    trajectory = Trajectory.load(path)
    if html is not None:
        written = export_html(trajectory, html, fps=fps)
        print(f"pinext: wrote {written}")
        return written
    viewer = viewer_for(trajectory)
    print(f"pinext: open {viewer.url} in a browser (Ctrl-C to stop)")
    viewer.play(trajectory, speed, fps=fps)
    if block:  # pragma: no cover - interactive
        import time

        try:
            while True:
                time.sleep(1.0)
        except KeyboardInterrupt:
            pass
        viewer.close()
    return viewer


def __getattr__(name: str) -> Any:
    """Import :mod:`plots` (matplotlib) only when it is used."""
    if name == "plots":
        import importlib

        return importlib.import_module(".plots", __name__)
    raise AttributeError(f"module 'pinext.visualization' has no attribute '{name}'")
