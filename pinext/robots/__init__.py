"""The project's own robot descriptions, shipped as package data.

* ``twotr.urdf`` — the 2TR robot of Negrean et al. (2009), Fig. 2: prismatic x, prismatic z,
  revolute z with an offset centre of mass;
* ``planar3r.urdf`` — the three-link planar arm of Celentano (2008), Fig. 4;
* ``flexible_arm.urdf`` — Celentano (2008) §5.2: one revolute joint driving a 2 m steel bar of
  1 cm square section (its ``<pinext>`` block makes the bar flexible);
* ``six_dof_arm.urdf`` — a 6-DOF arm with a pen, for the contact and drive demos.

They are read through :mod:`importlib.resources`, so an installed wheel finds them outside a
checkout::

    import pinext as px

    robot = px.load_urdf(px.robot_path("flexible_arm"))
"""

from __future__ import annotations

import atexit
import contextlib
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ..exceptions import NameNotFound
from .example_robot_data import ROBOTS, load, locate, names, robots_dir  # noqa: F401

__all__ = ["load_robot", "robot_names", "robot_path", "robots_dir"]

_SUFFIXES = (".urdf", ".pinext.toml")
_extracted = contextlib.ExitStack()
atexit.register(_extracted.close)


def robot_names() -> list[str]:
    """Names of the project's robots (file stems), sorted."""
    return sorted(
        entry.name[: -len(".urdf")]
        for entry in resources.files(__name__).iterdir()
        if entry.name.endswith(".urdf")
    )


def robot_path(name: str) -> Path:
    """The file of one of the project's robots, as a path on disk.

    Args:
        name: A robot name (``"flexible_arm"``) or file name (``"flexible_arm.urdf"``, or a
            sidecar ``"<stem>.pinext.toml"`` if one ships).

    Returns:
        The path of the file (inside the installed package, or extracted to a temporary file
        when the package is imported from a zip archive).

    Raises:
        NameNotFound: No such robot; the message lists the existing ones.
    """
    file_name = name if name.endswith(_SUFFIXES) else f"{name}.urdf"
    resource = resources.files(__name__) / file_name
    if not resource.is_file():
        raise NameNotFound("robot", name, robot_names())
    if isinstance(resource, Path):
        return resource
    return _extracted.enter_context(resources.as_file(resource))  # pragma: no cover - zip


def load_robot(
    name: str,
    *,
    root_joint: Any = None,
    package_dirs: Sequence[str] | str | None = None,
    **kwargs: Any,
):
    """Load a robot by name: one of the project's (:func:`robot_names`) or of
    example-robot-data (``"ur5"``, ``"panda"``, ``"talos"``, ``"solo12"``, ...).

    Args:
        name: A project robot, a name of example-robot-data
            (:data:`pinext.robots.example_robot_data.ROBOTS`) or the stem of any URDF file of
            that collection (case-insensitive; ``-`` and ``_`` are the same).
        root_joint: Override the root joint (``"fixed"``, ``"freeflyer"``, ``"planar"`` or a
            Pinocchio joint model); default: free flyer for legged robots, humanoids and
            drones, fixed otherwise.
        package_dirs: Further folders for ``package://`` meshes.
        **kwargs: Passed on to :func:`pinext.load_urdf` (``flexible``, ``drives``,
            ``extensions``). An example-robot-data robot for which pinext ships extensions
            (``pinext/robots/<name>.pinext.toml``: Solo12's four feet on the ground) gets
            them unless ``extensions`` is given (``extensions=False``: none).

    Returns:
        The :class:`pinext.Robot`.

    Raises:
        RobotNotFound: Unknown name (the message lists the available ones and suggests the
            closest), or example-robot-data is not installed (the message says how to
            install it).
    """
    if name in robot_names():
        from ..robot import load_urdf

        options = {} if root_joint is None else {"root_joint": root_joint}
        return load_urdf(robot_path(name), package_dirs=package_dirs, **options, **kwargs)
    return load(name, root_joint=root_joint, package_dirs=package_dirs, **kwargs)
