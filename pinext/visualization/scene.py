"""The scene around the robot: what components declare for a viewer to draw.

A component lists scene items in its :meth:`pinext.Component.metadata` under the key
``"scene"`` or ``"scene.<component name>"``; :attr:`pinext.Trajectory.meta` keeps them. The
viewer reads these items and knows nothing else of the components. Item kinds (JSON dicts, the
fields are documented in :mod:`pinext.contact.scene`):

* ``"contact"``: a surface (plate or triad) and a force arrow at a robot frame, impulse arrows at
  the impacts whose ``event.info["contact"]`` names it;
* ``"environment"``: a moving mass behind a contact's surface (and its contact layer);
* ``"trail"``: ``{"kind": "trail", "frame": name}``, the path of a frame;
* ``"loop"``: a loop closure (:class:`pinext.Loop`): ``frame_a``, ``frame_b``, ``placement``
  (4 x 4, the joint point B' in frame B), ``force`` (the output of the force on frame A,
  world axes); the viewer marks both joined points and draws the force as an arrow at A.

Unknown kinds are ignored, so that components may declare items for other viewers.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pinocchio as pin

__all__ = [
    "SCENE_KEY",
    "ContactView",
    "EnvironmentView",
    "LoopView",
    "declared_items",
    "items_of_system",
    "items_of_trajectory",
    "loop_views",
    "views",
]

#: Key (or key prefix, ``"scene.<component>"``) of scene items in metadata.
SCENE_KEY = "scene"


@dataclasses.dataclass
class ContactView:
    """What the viewer draws of one contact.

    Attributes:
        name: The contact's name.
        frame_id: The robot frame that touches.
        tool: Placement of the contact point in that frame.
        placement: Surface frame in the world at the start.
        rows: Rows of the force output holding this contact's reaction.
        directions: (row, unit direction in the surface frame) of each force row.
        kind: ``"plane"`` or ``"frame"``.
        output: Name of the force output.
        center: Where the contact point meets the surface, in the surface frame [m].
        friction: Coulomb's μ (0: no cone drawn).
        state: Output of the stick/slip state (0 free, 1 stick, 2 slip), or "".
    """

    name: str
    frame_id: int
    tool: pin.SE3
    placement: pin.SE3
    rows: slice
    directions: list[tuple[int, np.ndarray]]
    kind: str
    output: str
    center: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))
    friction: float = 0.0
    state: str = ""


@dataclasses.dataclass
class EnvironmentView:
    """The moving mass of a dynamic environment behind the first contact.

    Attributes:
        normal: Unit normal of the surface (world).
        displacement: Output of the mass's displacement s_e [m] along the normal.
        layer: Output of the contact layer's compression w [m], or None (no layer).
        contact: Name of the contact whose surface the mass carries.
    """

    normal: np.ndarray
    displacement: str
    layer: str | None
    contact: str = ""

    @property
    def layered(self) -> bool:
        """The environment has a contact layer (model (d))."""
        return self.layer is not None


@dataclasses.dataclass
class LoopView:
    """What the viewer draws of one loop closure.

    Attributes:
        name: The loop's name.
        frame_a: Frame A (it receives ``force``).
        frame_b: Frame B.
        placement: The joint point B' in frame B.
        output: Name of the force output (world axes, [N]).
    """

    name: str
    frame_a: int
    frame_b: int
    placement: pin.SE3
    output: str


def loop_views(model: pin.Model, items: Sequence[Mapping[str, Any]]) -> list[LoopView]:
    """The ``"loop"`` items resolved on ``model`` (items naming a missing frame are skipped
    with a warning)."""
    loops = []
    for item in items:
        if item.get("kind") != "loop":
            continue
        try:
            ids = [_frame_id(model, item[key]) for key in ("frame_a", "frame_b")]
            if None in ids:
                raise KeyError(f"frame {item['frame_a']!r} or {item['frame_b']!r}")
            loops.append(
                LoopView(
                    str(item["name"]),
                    int(ids[0]),  # type: ignore[arg-type]
                    int(ids[1]),  # type: ignore[arg-type]
                    _se3(item.get("placement")),
                    str(item.get("force", "")),
                )
            )
        except (KeyError, TypeError, ValueError, IndexError) as err:
            warnings.warn(f"scene item {dict(item)!r} not drawn: {err}", stacklevel=2)
    return loops


def declared_items(meta: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The scene items of metadata: ``meta["scene"]`` then ``meta["scene.<name>"]`` by name."""
    if not meta:
        return []
    keys = sorted(k for k in meta if k == SCENE_KEY or str(k).startswith(f"{SCENE_KEY}."))
    items: list[dict[str, Any]] = []
    for key in keys:
        value = meta[key]
        if isinstance(value, Sequence) and not isinstance(value, str):
            items += [dict(item) for item in value if isinstance(item, Mapping)]
    return items


def items_of_system(components: Sequence[Any]) -> list[dict[str, Any]]:
    """The scene items the components of a System declare in their ``metadata()``."""
    items: list[dict[str, Any]] = []
    for comp in components:
        items += declared_items(comp.metadata())
    return items


def items_of_trajectory(meta: Mapping[str, Any], outputs: Mapping[str, Any]) -> list[dict]:
    """The scene items of a (saved) trajectory's metadata."""
    items = declared_items(meta)
    if items:
        return items
    # backward compatibility: trajectories saved before components declared scene items
    from ..contact.scene import legacy_scene_items_from_meta

    try:
        return legacy_scene_items_from_meta(meta, outputs)
    except Exception as err:  # noqa: BLE001 - a viewer never fails on an old file
        warnings.warn(f"contacts of the trajectory not drawn: {err}", stacklevel=3)
        return []


def _se3(matrix: Any) -> pin.SE3:
    if matrix is None:
        return pin.SE3.Identity()
    m = np.asarray(matrix, dtype=float)
    return pin.SE3(m[:3, :3], m[:3, 3])


def _frame_id(model: pin.Model, frame: Any) -> int | None:
    if isinstance(frame, (int, np.integer)):
        return int(frame) if 0 <= int(frame) < model.nframes else None
    return model.getFrameId(str(frame)) if model.existFrame(str(frame)) else None


def views(
    model: pin.Model, items: Sequence[Mapping[str, Any]]
) -> tuple[list[ContactView], EnvironmentView | None, list[int]]:
    """Contacts, environment and trail frames of scene items, resolved on ``model``.

    Items naming a frame the model does not have are skipped with a warning.

    Returns:
        (contacts, environment or None, frame ids of the ``"trail"`` items).
    """
    contacts: list[ContactView] = []
    environment: EnvironmentView | None = None
    trails: list[int] = []
    for item in items:
        kind = item.get("kind")
        try:
            if kind == "contact":
                fid = _frame_id(model, item["frame"])
                if fid is None:
                    raise KeyError(f"frame {item['frame']!r}")
                force = item.get("force") or {}
                rows = [(int(r), np.asarray(d, dtype=float)) for r, d in force.get("rows", [])]
                first = int(force.get("first_row", rows[0][0] if rows else 0))
                last = max([r for r, _ in rows], default=first - 1) + 1
                contacts.append(
                    ContactView(
                        name=str(item["name"]),
                        frame_id=fid,
                        tool=_se3(item.get("tool")),
                        placement=_se3(item.get("placement")),
                        rows=slice(first, last),
                        directions=rows,
                        kind="plane" if item.get("surface", "plane") == "plane" else "frame",
                        output=str(force.get("output", "")),
                        friction=float(item.get("friction", 0.0)),
                        state=str(item.get("state", "")),
                    )
                )
            elif kind == "environment" and environment is None:
                environment = EnvironmentView(
                    normal=np.asarray(item["normal"], dtype=float),
                    displacement=str(item["displacement"]),
                    layer=item.get("layer"),
                    contact=str(item.get("contact", "")),
                )
            elif kind == "trail":
                fid = _frame_id(model, item["frame"])
                if fid is None:
                    raise KeyError(f"frame {item['frame']!r}")
                trails.append(fid)
        except (KeyError, TypeError, ValueError, IndexError) as err:
            warnings.warn(f"scene item {dict(item)!r} not drawn: {err}", stacklevel=2)
    if environment is not None:
        # the mass carries the surface of its contact: that contact comes first
        carrier = next((c for c in contacts if c.name == environment.contact), None)
        if carrier is not None:
            contacts = [carrier] + [c for c in contacts if c is not carrier]
        if not contacts:
            environment = None
    return contacts, environment, trails
