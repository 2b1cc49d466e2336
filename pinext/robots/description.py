"""A robot rebuilt from the description a trajectory carries (``meta["description"]``).

The description (:mod:`pinext.simulation.description`) holds the URDF's text with portable
``package://`` mesh URIs and the sidecar's text; :func:`load_description` writes both to a
temporary folder, looks every mesh up in the known roots (:func:`mesh_roots`) and loads the
robot with :func:`pinext.load_urdf`, with the description's root joint, flexible links and
elastic support.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..exceptions import FileFormatError, MeshNotFound
from ..simulation.description import FORMAT, MESH, PACKAGE, split_uri

__all__ = ["load_description", "mesh_roots", "resolve_mesh"]


def mesh_roots(package_dirs: Sequence[str | Path] | str | Path | None = None) -> list[Path]:
    """The folders ``package://`` URIs are looked up in, in order.

    Args:
        package_dirs: Folders given by the caller; they come first.

    Returns:
        ``package_dirs``, the entries of ``$ROS_PACKAGE_PATH``, the ``robots`` folder of
        example-robot-data and the ``share`` folder above it (when installed), and the folder
        of the project's robots.
    """
    from . import robots_dir

    given = [package_dirs] if isinstance(package_dirs, (str, Path)) else list(package_dirs or [])
    roots = [Path(p) for p in given]
    ros = os.environ.get("ROS_PACKAGE_PATH", "")
    roots += [Path(p) for p in ros.split(os.pathsep) if p]
    erd = robots_dir()
    if erd is not None:  # its URDFs write package://ur_description/... and
        roots += [erd, erd.parents[1]]  # package://example-robot-data/robots/...
    roots.append(Path(__file__).resolve().parent)
    unique: list[Path] = []
    for root in roots:
        if root not in unique:
            unique.append(root)
    return unique


def resolve_mesh(uri: str, roots: Sequence[Path]) -> Path:
    """The file of a ``package://<package>/<path>`` URI: ``<root>/<package>/<path>`` for the
    first root that has it (or ``<root>/<path>`` when the root is the package's folder).

    Raises:
        MeshNotFound: No root has the file; the message names the URI and the roots.
    """
    package, rest = split_uri(uri)
    for root in roots:
        for candidate in (root / package / rest, root / rest if root.name == package else None):
            if candidate is not None and candidate.is_file():
                return candidate.resolve()
    raise MeshNotFound(uri, [str(r) for r in roots])


def load_description(
    description: Mapping[str, Any],
    *,
    package_dirs: Sequence[str | Path] | str | Path | None = None,
) -> Any:
    """Rebuild the robot of a trajectory from its description.

    Args:
        description: ``trajectory.meta["description"]``.
        package_dirs: Further folders to look ``package://`` meshes up in (first); see
            :func:`mesh_roots` for the others.

    Returns:
        The :class:`pinext.Robot`.

    Raises:
        FileFormatError: The description is not one this pinext reads (format tag, keys).
        MeshNotFound: A mesh is in none of the roots (the message names it and the roots).
    """
    if not isinstance(description, Mapping) or description.get("format") != FORMAT:
        found = description.get("format") if isinstance(description, Mapping) else description
        raise FileFormatError(
            "trajectory", "meta.description", f"format {found!r}; this pinext reads {FORMAT!r}"
        )
    missing = [k for k in ("file", "urdf", "extensions") if k not in description]
    if missing:
        raise FileFormatError("trajectory", "meta.description", f"missing {', '.join(missing)}")
    from ..flexible import FlexibleLink
    from ..robot import load_urdf

    roots = mesh_roots(package_dirs)

    def resolved(match: Any) -> str:
        uri = match.group(3)
        path = resolve_mesh(uri, roots) if uri.startswith(PACKAGE) else Path(uri)
        return f"{match.group(1)}{match.group(2)}{path.as_posix()}{match.group(2)}"

    urdf = MESH.sub(resolved, str(description["urdf"]))
    flexible = [FlexibleLink.from_dict(d) for d in description.get("flexible") or []]
    with tempfile.TemporaryDirectory(prefix="pinext-description-") as folder:
        path = Path(folder) / Path(str(description["file"])).name
        path.write_text(urdf, encoding="utf-8")
        extensions: Any = None if description["extensions"] else False
        if description.get("sidecar") is not None:
            extensions = Path(folder) / "sidecar.toml"
            extensions.write_text(str(description["sidecar"]), encoding="utf-8")
        robot = load_urdf(
            path,
            extensions=extensions,
            flexible=flexible,
            root_joint=description.get("root_joint") or "fixed",
            support=description.get("support") or False,
        )
    robot.path = None  # the temporary file is gone
    return robot
