"""The plug-ins a :class:`pinext.System` assembles by default: one list, in order.

Each entry is a *plug-in factory* ``factory(robot, options) -> Component | list[Component] |
None``: it reads the System's keyword arguments (``options``: ``drives``, ``contacts``,
``environment``, ``loops``, ``mimic``, ``joint_limits``, ``saturate_efforts``,
``joint_friction``) and the robot's extension tables, and returns the components of its
physical effect, or None when the robot has none. :class:`pinext.System` runs the factories in
the order of this list, then appends its ``components`` argument; the order is the order of
the components' states in the System's layout.

The System (the assembly layer) imports no plug-in: it receives this list as its default
``plugins`` (:attr:`pinext.System.default_plugins`, set once by :mod:`pinext`'s
``__init__``). A new effect needs no entry here: pass its :class:`pinext.Component` in
``System(robot, components=[...])``, or give ``System(robot, plugins=[*PLUGINS, factory])``.
A plug-in that pinext ships and that the System's keywords or the extension format reach is
one module plus one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .constraints.loop import build_loops
from .constraints.mimic import build_mimic
from .contact.component import build_contacts
from .contact.friction import build_frictional_contacts
from .contact.joint_friction import build_joint_friction
from .contact.limits import build_effort_saturation, build_joint_limits
from .drives.drive import build_drives
from .support import build_support_coupling

__all__ = ["PLUGINS", "Plugin"]

#: ``factory(robot, options) -> Component | list[Component] | None``.
Plugin = Callable[[Any, dict[str, Any]], Any]

#: The plug-in factories of a System, in layout order.
PLUGINS: tuple[Plugin, ...] = (
    build_support_coupling,  # an elastic support's coupled stiffness and damping
    build_drives,  # the drives: DC motors, actuators, gears, elastic transmissions
    build_joint_limits,  # the URDF's position limits as unilateral rows
    build_effort_saturation,  # joint-torque inputs clipped to the URDF's effort limits
    build_joint_friction,  # Coulomb friction in the joints, stick and slip
    build_contacts,  # frictionless contact tasks and the dynamic environment
    build_frictional_contacts,  # contacts with Coulomb friction, one component each
    build_loops,  # loop closures (McClamroch 1986)
    build_mimic,  # the URDF's <mimic> couplings
)
