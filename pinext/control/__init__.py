"""Controllers: laws ``u = law(t, q, v, sensors)`` that a real robot's controller computes.

A controller sees what a robot's controller sees: the time, the generalized positions and
velocities, and ``sensors``, the named states of the System's components (e.g.
``sensors["drive:shoulder.motor_angle"]``). It returns the System's inputs (see
``System.describe()``). Pass it as ``control=`` of :func:`pinext.simulate`.
"""

from .base import Controller, as_state_law

__all__ = ["Controller", "as_state_law"]
