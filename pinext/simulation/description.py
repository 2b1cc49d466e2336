"""The robot description a trajectory carries: what a viewer needs to redraw the run anywhere.

A :class:`~pinext.Trajectory` stores in ``meta["description"]`` the robot as text, not as a
path, so that a saved run replays on another machine or after the checkout moved:

* ``urdf``: the URDF's text, each ``<mesh filename>`` made a portable ``package://`` URI:
  a ``package://`` URI stays as written; a mesh given relative to the URDF's folder, as an
  absolute path or as a ``file://`` URI becomes ``package://<folder>/<path below it>``, with
  ``<folder>`` the nearest folder holding both the URDF and the mesh (a ROS package:
  ``pkg/urdf/arm.urdf`` with ``../meshes/x.stl`` gives ``package://pkg/meshes/x.stl``);
* ``sidecar``: the text of the TOML sidecar the extensions were read from, if any;
* ``extensions``: whether pinext extensions were read at all (``extensions=False`` of
  :func:`pinext.load_urdf` ignores the URDF's ``<pinext>`` block too);
* ``root_joint`` (``"freeflyer"``, ``"planar"`` or None), ``flexible`` (the flexible-link
  split, one :class:`pinext.FlexibleLink` dict per link) and ``support`` (the elastic
  support's table);
* ``meshes``: the portable mesh URIs, in the URDF's order;
* ``file``, ``sidecar_file``: the file names (no folder), for messages;
* ``format``: :data:`FORMAT`.

The viewer rebuilds the robot from it (:func:`pinext.robots.description.load_description`),
looking the ``package://`` URIs up in known roots. Nothing in it is an absolute path.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from pathlib import Path, PurePosixPath
from typing import Any

#: Format tag of a description.
FORMAT = "pinext-description-1"

#: The ``filename`` attribute of a URDF ``<mesh>`` element: (prefix, quote, value).
MESH = re.compile(r"(<mesh\b[^>]*?\bfilename\s*=\s*)([\"'])(.*?)\2", re.DOTALL)

PACKAGE = "package://"


def robot_description(robot: Any) -> dict[str, Any] | None:
    """The portable description of a robot loaded from a URDF, or None for one that was not
    (a bare Pinocchio model, :func:`pinext.assemble`, :func:`pinext.free_body`).

    Args:
        robot: A :class:`pinext.Robot`.

    Returns:
        A JSON-serialisable dict (see the module's docstring), holding no absolute path.
    """
    if not getattr(robot, "path", None) or not Path(robot.path).is_file():
        return None
    path = Path(robot.path)
    urdf, meshes = _portable_file(str(path), *_stamp(path))
    sources = list(getattr(robot.extensions, "sources", []) or [])
    tomls = [Path(s) for s in sources if str(s).endswith(".toml") and Path(s).is_file()]
    support = getattr(robot, "support", None)
    return {
        "format": FORMAT,
        "file": path.name,
        "urdf": urdf,
        "meshes": list(meshes),
        "extensions": bool(sources),
        "sidecar": _text(str(tomls[-1]), *_stamp(tomls[-1])) if tomls else None,
        "sidecar_file": tomls[-1].name if tomls else None,
        "root_joint": root_joint_of(robot.rigid_model),
        "flexible": [
            dataclasses.asdict(f)
            for f in robot.flexible
            if dataclasses.is_dataclass(f) and not isinstance(f, type)
        ],
        "support": support.to_dict() if support is not None else None,
    }


def _stamp(path: Path) -> tuple[int, int]:
    """The file's modification time [ns] and size: a file read again when either changes."""
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


@functools.lru_cache(maxsize=64)
def _text(path: str, mtime: int, size: int) -> str:
    """The text of a file, read once per version (:func:`_stamp`)."""
    return Path(path).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=64)
def _portable_file(path: str, mtime: int, size: int) -> tuple[str, tuple[str, ...]]:
    """:func:`portable_urdf` of a URDF file, once per version of the file (:func:`_stamp`)."""
    urdf, meshes = portable_urdf(_text(path, mtime, size), Path(path).resolve().parent)
    return urdf, tuple(meshes)


def root_joint_of(rigid_model: Any) -> str | None:
    """The root joint :func:`pinext.load_urdf` added to the URDF (Pinocchio names it
    ``root_joint``): ``"freeflyer"``, ``"planar"``, or None when the base is fixed."""
    if rigid_model.njoints < 2 or rigid_model.names[1] != "root_joint":
        return None
    kind = rigid_model.joints[1].shortname()
    return {"JointModelFreeFlyer": "freeflyer", "JointModelPlanar": "planar"}.get(kind)


def portable_urdf(text: str, folder: Path) -> tuple[str, list[str]]:
    """The URDF text with every ``<mesh filename>`` a ``package://`` URI, and those URIs.

    Args:
        text: The URDF.
        folder: The folder of the URDF file (relative mesh paths start there).
    """
    uris: list[str] = []

    def replace(match: re.Match) -> str:
        uri = portable_uri(match.group(3), folder)
        uris.append(uri)
        return f"{match.group(1)}{match.group(2)}{uri}{match.group(2)}"

    return MESH.sub(replace, text), uris


def portable_uri(filename: str, folder: Path) -> str:
    """A mesh reference as ``package://<package>/<path>`` (see the module's docstring).

    Args:
        filename: The ``filename`` attribute as the URDF writes it.
        folder: The URDF's folder.
    """
    if filename.startswith(PACKAGE):
        return filename
    local = filename[len("file://") :] if filename.startswith("file://") else filename
    mesh = Path(os.path.normpath(folder / local))  # an absolute local path stays as it is
    try:
        base = Path(os.path.commonpath([str(folder), str(mesh)]))
    except ValueError:  # different drives
        base = mesh.parent
    if base == Path(base.anchor) or base == mesh:
        base = mesh.parent
    relative = PurePosixPath(*mesh.relative_to(base).parts)
    return f"{PACKAGE}{base.name}/{relative}"


def split_uri(uri: str) -> tuple[str, str]:
    """``package://pkg/a/b.stl`` -> (``"pkg"``, ``"a/b.stl"``)."""
    package, _, rest = (
        uri[len(PACKAGE) :].partition("/") if uri.startswith(PACKAGE) else ("", "", uri)
    )
    return package, rest
