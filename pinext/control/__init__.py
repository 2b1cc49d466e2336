"""Controllers: laws ``u = law(t, q, v, sensors)`` that a real robot's controller computes.

A controller sees what a robot's controller sees: the time, the generalized positions and
velocities, and ``sensors``, the named states of the System's components (e.g.
``sensors["drive:shoulder.motor_angle"]``). It returns the System's inputs (see
``System.describe()``). Pass it as ``control=`` of :func:`pinext.simulate`, which calls it
every ``control_period`` (default 1 ms) and holds its result in between, as a robot's
controller does.

Built-in joint-level laws: :class:`JointPD` (PD to a reference, optional gravity compensation)
and :class:`ComputedTorque`, on joint torques or on DC motors behind elastic transmissions;
:class:`CartesianPD`, a frame's Cartesian springs and dampers about a :class:`QuinticPath`
with gravity compensation. A JointPD and a ComputedTorque (joint torques, a constant or
:class:`~pinext.Schedule` reference) and a CartesianPD run inside the compiled loop with no
Python per evaluation or sample. Task-space laws on the dynamics of
:func:`pinext.task_space_dynamics`: :class:`ImpedanceController` (Cartesian impedance, Hogan
1985) and :class:`HybridForceMotionController` (Raibert & Craig 1981 in the
constrained-dynamics form of Lynch & Park); they compute joint torques and output whatever the
System's inputs are (:mod:`pinext.control.actuation`: joint torques, drive voltages,
motor-angle servos behind elastic transmissions).
"""

from .base import Controller, as_state_law
from .cartesian import CartesianPD, QuinticPath
from .computed_torque import ComputedTorque
from .hybrid import HybridForceMotionController
from .impedance import ImpedanceController
from .joint_pd import JointPD
from .task import TaskSpaceController

__all__ = [
    "CartesianPD",
    "ComputedTorque",
    "Controller",
    "HybridForceMotionController",
    "ImpedanceController",
    "JointPD",
    "QuinticPath",
    "TaskSpaceController",
    "as_state_law",
]
