"""Replay of a trajectory: a :class:`~.viewer.Viewer` for it, rebuilt from its description
when no System is given, and the two one-call outputs (:func:`play`, :func:`export_html`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..exceptions import InvalidParameter
from .scene import items_of_trajectory
from .viewer import Viewer

__all__ = ["export_html", "play", "viewer_for"]


def viewer_for(
    trajectory: Any,
    system: Any = None,
    *,
    package_dirs: Sequence[str | Path] | str | Path | None = None,
    **kwargs: Any,
) -> Viewer:
    """A :class:`Viewer` for a trajectory: of ``system`` if given, else rebuilt from its meta.

    Without a system, the robot is rebuilt from ``meta["description"]`` alone (the URDF and
    sidecar as text, the root joint, flexible links and elastic support; see
    :mod:`pinext.simulation.description`): the trajectory's file can be moved to another
    machine. Its ``package://`` meshes are looked up in ``package_dirs``, then
    ``$ROS_PACKAGE_PATH``, example-robot-data's ``robots`` folder and the project's robots
    (:func:`pinext.robots.description.mesh_roots`). Trajectories saved before descriptions
    existed name the URDF by its absolute path in ``meta["urdf"]`` (with ``meta["flexible"]``,
    ``meta["support"]`` and the sidecar ``meta["sidecar"]``); they still load from there while
    that file exists. The scene (contact surfaces, environment, trails) is what the components
    of ``system`` declare, or, for a saved trajectory or a bare robot, the scene items of
    ``meta`` (``"scene"`` and ``"scene.<component>"`` keys, see
    :mod:`pinext.visualization.scene`).

    Args:
        trajectory: A :class:`pinext.Trajectory`.
        system: The System or Robot it was simulated with (default: rebuilt from its meta).
        package_dirs: Folders to look ``package://`` meshes up in first.
        **kwargs: Options of :class:`Viewer`.

    Raises:
        InvalidParameter: No system is given and the trajectory has no description (a robot
            not loaded from a URDF: :func:`pinext.assemble`, :func:`pinext.free_body`) nor an
            existing ``meta["urdf"]``, or the rebuilt robot does not match the trajectory.
        MeshNotFound: A mesh of the description is in none of the roots (the message names
            the mesh and the roots searched).
    """
    meta = getattr(trajectory, "meta", {}) or {}
    if system is not None:
        if not hasattr(system, "components") and "scene" not in kwargs:
            kwargs["scene"] = items_of_trajectory(meta, getattr(trajectory, "outputs", {}))
        return Viewer(system, **kwargs)
    robot, source = _rebuild(meta, package_dirs)
    names = list(robot.model.names)[1:]
    expected = meta.get("joint_names")
    if robot.model.nq != np.asarray(trajectory.q).shape[1] or (expected and expected != names):
        raise InvalidParameter(
            f"the robot rebuilt from {source} has nq = {robot.model.nq} and joints "
            f"{', '.join(names)}; the trajectory has nq = {np.asarray(trajectory.q).shape[1]}"
            f"{' and joints ' + ', '.join(expected) if expected else ''}; pass the System or "
            "Robot it was simulated with"
        )
    kwargs.setdefault("scene", items_of_trajectory(meta, getattr(trajectory, "outputs", {})))
    return Viewer(robot, **kwargs)


def _rebuild(meta: Mapping[str, Any], package_dirs: Any) -> tuple[Any, str]:
    """The robot of a trajectory's meta and what it was rebuilt from (for messages)."""
    description = meta.get("description")
    if description is not None:
        from ..robots.description import load_description

        robot = load_description(description, package_dirs=package_dirs)
        return robot, f"the trajectory's description of {description.get('file')}"
    urdf = meta.get("urdf")  # a trajectory saved before descriptions existed
    if not urdf or not Path(urdf).is_file():
        raise InvalidParameter(
            "the trajectory holds no robot description (meta['description']; its robot was "
            f"not loaded from a URDF) nor a URDF file that exists (meta['urdf'] = {urdf!r}); "
            "pass the System or Robot it was simulated with"
        )
    from ..flexible import FlexibleLink
    from ..robot import load_urdf

    flexible = [FlexibleLink.from_dict(d) for d in meta.get("flexible") or []]
    sidecar = meta.get("sidecar")
    # "sidecar" names the last source of extensions: the URDF itself or a TOML file
    toml = (
        sidecar if sidecar and str(sidecar).endswith(".toml") and Path(sidecar).is_file() else None
    )
    robot = load_urdf(
        urdf,
        package_dirs=[str(p) for p in _as_list(package_dirs)],
        flexible=flexible,
        extensions=toml,
        support=meta.get("support"),
    )
    return robot, str(urdf)


def _as_list(package_dirs: Any) -> list[Any]:
    if isinstance(package_dirs, (str, Path)):
        return [package_dirs]
    return list(package_dirs or [])


def export_html(
    trajectory: Any, path: str | Path, system: Any = None, *, fps: float = 30.0, **kwargs: Any
) -> Path:
    """Write a trajectory as a self-contained HTML animation; see :meth:`Viewer.export_html`.

    Args:
        trajectory: A :class:`pinext.Trajectory`.
        path: Output ``.html`` file.
        system: The System / Robot it was simulated with (default: rebuilt from its meta).
        fps: Frames per second of simulated time.
        **kwargs: ``package_dirs`` of :func:`viewer_for`, options of :class:`Viewer`
            (trails, frames, force_scale, ...).
    """
    return viewer_for(trajectory, system, **kwargs).export_html(trajectory, path, fps=fps)


def play(
    trajectory: Any,
    speed: float = 1.0,
    system: Any = None,
    *,
    fps: float = 30.0,
    wait: bool = False,
    **kwargs: Any,
) -> Viewer:
    """Play a trajectory in the live viewer (server on 127.0.0.1; the URL is printed).

    ``kwargs`` are ``package_dirs`` of :func:`viewer_for` and the options of :class:`Viewer`.

    Returns:
        The :class:`Viewer` (call ``close()`` to stop its server).
    """
    viewer = viewer_for(trajectory, system, **kwargs)
    viewer.play(trajectory, speed, fps=fps, wait=wait)
    return viewer
