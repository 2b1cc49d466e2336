"""Controllers: laws ``u = law(t, q, v, sensors)`` that a real robot's controller computes.

A controller sees what a robot's controller sees: the time, the generalized positions and
velocities, and ``sensors``, the named states of the System's components (e.g.
``sensors["drive:shoulder.motor_angle"]``). It returns the System's inputs (see
``System.describe()``). Pass it as ``control=`` of :func:`pinext.simulate`.

Task-space laws on the dynamics of :func:`pinext.task_space_dynamics`:
:class:`ImpedanceController` (Cartesian impedance, Hogan 1985) and
:class:`HybridForceMotionController` (Raibert & Craig 1981 in the constrained-dynamics form of
Lynch & Park). They compute joint torques and output whatever the System's inputs are
(:mod:`pinext.control.actuation`: joint torques, drive voltages, motor-angle servos behind
elastic transmissions).
"""

from .base import Controller, as_state_law
from .hybrid import HybridForceMotionController
from .impedance import ImpedanceController
from .task import TaskSpaceController

__all__ = [
    "Controller",
    "HybridForceMotionController",
    "ImpedanceController",
    "TaskSpaceController",
    "as_state_law",
]
