"""What a viewer draws of contacts, as scene items in a trajectory's metadata.

A component declares what a viewer should draw in :meth:`pinext.Component.metadata` under the
key ``"scene.<component name>"``: a list of JSON dicts (``Trajectory.meta`` keeps them, so a
saved trajectory is drawn the same). :mod:`pinext.visualization` reads these keys and nothing
else of the components. The items of contacts:

``{"kind": "contact", ...}`` — a surface with a force arrow at a robot frame:

* ``name``: the contact's name (impact events carry it in ``info["contact"]``);
* ``frame``: the robot frame that touches; ``tool``: 4×4 placement of the contact point in it;
* ``surface``: ``"plane"`` (a plate, normal = the surface frame's z) or ``"frame"`` (a triad);
* ``placement``: 4×4 placement of the surface frame in the world at the start [m];
* ``force``: ``{"output": "<component>.force", "first_row": r0, "rows": [[row, [x, y, z]], ...]}``
  — rows of that output holding this contact's reaction, each with its unit direction in the
  surface frame; an impact's ``info["impulse"]`` uses the rows ``row - first_row``;
* ``friction`` (optional): Coulomb's μ: the viewer draws the friction cone (half-angle atan μ
  about the normal) at the contact point; ``state``: the output whose value is 0 (free),
  1 (stick) or 2 (slip), which colours the cone.

``{"kind": "environment", ...}`` — the moving mass of a dynamic environment (Vukobratović &
Potkonjak, §20.5.3) behind a contact: ``contact`` (its name), ``normal`` (world, unit),
``displacement`` (the output of s_e [m]) and ``layer`` (the output of the contact layer's
compression w [m], model (d), or None).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pinocchio as pin

__all__ = ["contact_scene_items", "legacy_scene_items_from_meta", "scene_metadata"]

#: Key prefix of scene items in ``Component.metadata()`` and ``Trajectory.meta``.
SCENE_KEY = "scene"


def _matrix(placement: Any) -> list[list[float]]:
    matrix = placement.homogeneous if isinstance(placement, pin.SE3) else np.eye(4)
    return [[float(x) for x in row] for row in matrix]


def contact_scene_items(
    contacts: Sequence[Any],
    environment: Any = None,
    *,
    component: str = "contact",
    layered: bool = False,
) -> list[dict[str, Any]]:
    """Scene items of contacts and of the dynamic environment behind the first one.

    Args:
        contacts: :class:`pinext.contact.Contact` objects (or bare constraints), in the order of
            the rows of the component's ``force`` output.
        environment: The :class:`pinext.DynamicEnvironment`, or None.
        component: The component's name (prefix of its outputs).
        layered: The environment has a contact layer (model (d)).

    Returns:
        JSON-serialisable dicts (see the module's documentation).
    """
    items: list[dict[str, Any]] = []
    row = 0
    for c in contacts:
        constraint = getattr(c, "constraint", c)
        m = int(getattr(constraint, "m", 1))
        frame = getattr(constraint, "frame", None)
        placement = getattr(constraint, "placement", None)
        if getattr(constraint, "law", None) is not None:
            placement = constraint.law(0.0)[0]
        names = tuple(getattr(constraint, "names", ("z",)))
        rows = [
            [row + k, [float(x) for x in np.eye(3)[:, "xyz".index(n)]]]
            for k, n in enumerate(names)
            if n in ("x", "y", "z")
        ]
        if frame is not None:
            items.append(
                {
                    "kind": "contact",
                    "name": str(getattr(c, "name", None) or frame),
                    "frame": int(frame) if isinstance(frame, (int, np.integer)) else str(frame),
                    "tool": _matrix(getattr(constraint, "tool", None)),
                    "surface": "plane" if names == ("z",) else "frame",
                    "placement": _matrix(placement),
                    "force": {"output": f"{component}.force", "first_row": row, "rows": rows},
                }
            )
        row += m
    contact_items = [i for i in items if i["kind"] == "contact"]
    if environment is not None and contact_items:
        normal = np.asarray(contact_items[0]["placement"])[:3, 2]
        items.append(
            {
                "kind": "environment",
                "contact": contact_items[0]["name"],
                "normal": [float(x) for x in normal],
                "displacement": f"{component}.deformation",
                "layer": f"{component}.layer" if layered else None,
            }
        )
    return items


def scene_metadata(component: Any) -> dict[str, list[dict[str, Any]]]:
    """``{"scene.<name>": items}`` of a contact component (what its ``metadata()`` declares).

    Args:
        component: A :class:`pinext.contact.component.ContactComponent`.
    """
    items = contact_scene_items(
        component.contacts,
        getattr(component, "environment", None),
        component=component.name,
        layered=bool(getattr(component, "layered", False)),
    )
    return {f"{SCENE_KEY}.{component.name}": items}


def legacy_scene_items_from_meta(
    meta: Mapping[str, Any], outputs: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Scene items of a trajectory saved without them (older versions of pinext).

    Reads ``meta["contacts"]`` (dicts of :meth:`pinext.contact.Contact.from_dict`), else the
    writing task's ``meta["task"]`` (``table_height``, ``frame``); the environment is drawn when
    ``outputs`` hold ``contact.deformation``.
    """
    from .coordinates import plane
    from .unilateral import Contact

    specs = meta.get("contacts")
    task = meta.get("task")
    if specs:
        contacts = [Contact.from_dict(s) for s in specs]
    elif isinstance(task, Mapping) and "table_height" in task and "frame" in task:
        table = plane(str(task["frame"]), (0.0, 0.0, float(task["table_height"])))
        contacts = [Contact(table, name=str(task.get("contact", "table")))]
    else:
        return []
    prefix = "contact"
    environment = f"{prefix}.deformation" in outputs
    return contact_scene_items(
        contacts,
        True if environment else None,
        component=prefix,
        layered=f"{prefix}.layer" in outputs,
    )
