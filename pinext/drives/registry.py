"""The actuators of the extension format: one table, part name -> class.

A new actuator is one file implementing :class:`pinext.drives.Actuator` plus one line in
:data:`ACTUATORS` (or one :func:`register_actuator` call in user code);
``[drives.<joint>.<part>]`` tables and ``<pinext><drive><part .../></drive>`` elements then
build it. The table is written out here, not filled by imports.
"""

from __future__ import annotations

from ..exceptions import InvalidParameter
from .actuator import LinearActuator
from .base import Actuator, TorqueSource
from .motor import DCMotor

__all__ = ["ACTUATORS", "register_actuator"]

#: Extension-format part -> actuator class (each class's ``part`` is its key here).
ACTUATORS: dict[str, type[Actuator]] = {
    "motor": DCMotor,
    "actuator": LinearActuator,
    "torque_source": TorqueSource,
}


def register_actuator(part: str, cls: type[Actuator]) -> type[Actuator]:
    """Add an actuator class of user code to :data:`ACTUATORS` under its part name.

    Args:
        part: The part name in the extension format (``[drives.<joint>.<part>]``).
        cls: The class, a subclass of :class:`pinext.drives.Actuator`; its ``part`` is set.

    Returns:
        ``cls``.

    Raises:
        InvalidParameter: ``cls`` does not implement :class:`Actuator`, or the part is taken
            by another class.
    """
    if not (isinstance(cls, type) and issubclass(cls, Actuator)):
        raise InvalidParameter(f"an actuator must subclass pinext.drives.Actuator, got {cls!r}")
    if ACTUATORS.get(part, cls) is not cls:
        raise InvalidParameter(f"actuator part '{part}' is taken by {ACTUATORS[part].__name__}")
    ACTUATORS[part] = cls
    cls.part = part
    return cls
