"""Short, readable summaries: the reprs of Robot, System and Trajectory (under 400 characters).

A repr says what a user needs first: the robot's name and size, the joint names, what is
attached (drives, flexible links, components), the state size and the inputs; a trajectory's
duration, samples, phases and events. Long lists are cut with their count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import Robot
    from .simulation.system import System
    from .simulation.trajectory import Trajectory

#: Longest repr [characters].
LIMIT = 400


def names(items: Sequence[Any], limit: int = 4) -> str:
    """``a, b, c, ..., z (26)``: the first and the last names of a long list, with its count."""
    items = [str(i) for i in items]
    if not items:
        return "none"
    if len(items) <= limit:
        return ", ".join(items)
    return f"{', '.join(items[: limit - 1])}, ..., {items[-1]} ({len(items)})"


def _fit(text: str) -> str:
    return text if len(text) <= LIMIT else text[: LIMIT - 4] + " ...)"


def robot_repr(robot: Robot) -> str:
    """``Robot('ur5', nq=6, nv=6, joints: ..., drives: ..., flexible: ...)``."""
    model = robot.model
    joints = list(model.names)[1:]
    flexible = [getattr(f, "link", str(f)) for f in robot.flexible]
    parts = [
        f"Robot({robot.name!r}, nq={model.nq}, nv={model.nv}",
        f"joints: {names(joints)}",
        f"drives: {names(list(robot.drives))}",
        f"flexible links: {names(flexible)}",
    ]
    if robot.elastic_dofs().size:
        parts.append(f"elastic DOFs: {robot.elastic_dofs().size}")
    return _fit(", ".join(parts) + ")")


def state_size_text(system: System) -> str:
    """The state size and how it splits, e.g. ``14 = q 6 + v 6 + 2 energy entries``."""
    nq, nv, nx = system.model.nq, system.model.nv, system.nx
    extra = nx - 2 - nq - nv
    parts = [f"q {nq}", f"v {nv}"] + ([f"components {extra}"] if extra else [])
    return f"{nx} = {' + '.join(parts)} + 2 energy entries"


def inputs_text(system: System) -> str:
    """What the inputs are: joint torques, or the drives' inputs."""
    if system.torque_inputs:
        return f"{system.n_inputs} joint torques [N.m or N]"
    return f"{system.n_inputs} drive inputs ({names(list(system.drives))})"


def system_repr(system: System) -> str:
    """``System(robot='ur5', state 14 = ..., components: ..., inputs: ...)``."""
    components = [type(c).__name__ for c in system.components]
    return _fit(
        f"System(robot={system.model.name!r}, state {state_size_text(system)}, "
        f"components: {names(components)}, inputs: {inputs_text(system)})"
    )


def trajectory_repr(trajectory: Trajectory) -> str:
    """``Trajectory(robot 'ur5', 0-1 s, 101 samples, phases: ..., events: ...)``."""
    t = trajectory.t
    span = f"{t[0]:.6g}-{t[-1]:.6g} s" if t.size else "empty"
    phases = [p.name or "free" for p in trajectory.phases]
    events = [f"{e.name} at {e.t:.4g} s" for e in trajectory.events]
    robot = trajectory.meta.get("robot")
    head = f"Trajectory(robot {robot!r}, " if robot else "Trajectory("
    return _fit(
        f"{head}{span}, {len(trajectory)} samples, "
        f"{len(phases)} phase(s): {names(phases, 3)}, "
        f"{len(events)} event(s): {names(events, 3)})"
    )
