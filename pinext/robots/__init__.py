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
from importlib import resources
from pathlib import Path

from ..exceptions import NameNotFound

__all__ = ["robot_names", "robot_path"]

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
