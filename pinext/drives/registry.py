"""The actuators of the extension format: one line per actuator, part name -> class.

A new actuator is one file implementing :class:`pinext.drives.Actuator` plus one line here
(or one :func:`register_actuator` call in user code); ``[drives.<joint>.<part>]`` tables and
``<pinext><drive><part .../></drive>`` elements then build it.
"""

from .actuator import LinearActuator
from .base import TorqueSource, register_actuator
from .motor import DCMotor

register_actuator("motor", DCMotor)
register_actuator("actuator", LinearActuator)
register_actuator("torque_source", TorqueSource)
