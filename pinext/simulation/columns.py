"""Column labels of a trajectory's samples: each entry of the state and of the inputs, with its
unit (``q.elbow_joint [rad]``, ``drives.current.j0 [A]``, ``input.j0 [N.m]``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .system import System


#: Joint kind (Pinocchio's shortname, without the axis) -> (q labels and units, v ...).
_JOINT_COORDINATES: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {
    "JointModelFreeFlyer": (
        [("x", "m"), ("y", "m"), ("z", "m"), ("qx", "-"), ("qy", "-"), ("qz", "-"), ("qw", "-")],
        [("vx", "m/s"), ("vy", "m/s"), ("vz", "m/s"), ("wx", "rad/s"), ("wy", "rad/s")]
        + [("wz", "rad/s")],
    ),
    "JointModelPlanar": (
        [("x", "m"), ("y", "m"), ("cos", "-"), ("sin", "-")],
        [("vx", "m/s"), ("vy", "m/s"), ("wz", "rad/s")],
    ),
    "JointModelSpherical": (
        [("qx", "-"), ("qy", "-"), ("qz", "-"), ("qw", "-")],
        [("wx", "rad/s"), ("wy", "rad/s"), ("wz", "rad/s")],
    ),
    "JointModelSphericalZYX": (
        [("z", "rad"), ("y", "rad"), ("x", "rad")],
        [("wz", "rad/s"), ("wy", "rad/s"), ("wx", "rad/s")],
    ),
    "JointModelTranslation": (
        [("x", "m"), ("y", "m"), ("z", "m")],
        [("vx", "m/s"), ("vy", "m/s"), ("vz", "m/s")],
    ),
}
#: Units of the component state blocks, by block name.
_STATE_UNITS = {
    "motor_angle": "rad",
    "motor_velocity": "rad/s",
    "current": "A",
    "input_work": "J",
    "dissipated_energy": "J",
}


#: The unit of a drive's input, by its actuator's ``input_kind``.
_INPUT_UNITS = {"voltage": "V", "torque": "N.m", "control": "-"}


def _joint_labels(kind: str, nq: int, nv: int) -> tuple[list[str], list[str]]:
    """Per-coordinate suffixes with units of one joint, e.g. (['[rad]'], ['[rad/s]'])."""
    if kind in _JOINT_COORDINATES:
        q, v = _JOINT_COORDINATES[kind]
        return [f".{n} [{u}]" for n, u in q], [f".{n} [{u}]" for n, u in v]
    if "Prismatic" in kind or kind.startswith("JointModelP"):
        unit_q, unit_v = "m", "m/s"
    elif "Revolute" in kind or kind.startswith("JointModelR"):
        unit_q, unit_v = "rad", "rad/s"
    else:
        unit_q, unit_v = "-", "-"
    if nq == 2 and nv == 1:  # unbounded revolute: (cos, sin)
        return [".cos [-]", ".sin [-]"], [f" [{unit_v}]"]
    if nq == 1 and nv == 1:
        return [f" [{unit_q}]"], [f" [{unit_v}]"]
    return [f".{i} [{unit_q}]" for i in range(nq)], [f".{i} [{unit_v}]" for i in range(nv)]


def state_columns(system: System) -> list[str]:
    """A label with its unit for each entry of the public state of ``system``."""
    model = system.model
    labels = [""] * system.nx
    for jid in range(1, model.njoints):
        joint = model.joints[jid]
        q_suffix, v_suffix = _joint_labels(joint.shortname(), joint.nq, joint.nv)
        name = model.names[jid]
        for k, suffix in enumerate(q_suffix):
            labels[joint.idx_q + k] = f"q.{name}{suffix}"
        for k, suffix in enumerate(v_suffix):
            labels[model.nq + joint.idx_v + k] = f"v.{name}{suffix}"
    joints = list(system.drives)
    for key, block in system.layout.items():
        if key in ("q", "v"):
            continue
        size = block.stop - block.start
        unit = _STATE_UNITS.get(key.rsplit(".", 1)[-1], "-")
        for k in range(size):
            index = "" if size == 1 else f".{joints[k] if size == len(joints) else k}"
            labels[block.start + k] = f"{key}{index} [{unit}]"
    return labels


def input_columns(system: System) -> list[str]:
    """A label with its unit for each input: joint torques, or the drives' inputs."""
    if system.torque_inputs:
        model = system.model
        labels = []
        for jid in range(1, model.njoints):
            joint = model.joints[jid]
            unit = "N" if "Prismatic" in joint.shortname() else "N.m"
            for k in range(joint.nv):
                suffix = "" if joint.nv == 1 else f".{k}"
                labels.append(f"input.{model.names[jid]}{suffix} [{unit}]")
        return labels
    labels = []
    for joint, drive in system.drives.items():
        actuator = getattr(drive, "actuator", None)
        unit = _INPUT_UNITS.get(getattr(actuator, "input_kind", ""), "-")
        labels.append(f"input.{joint} [{unit}]")
    return labels[: system.n_inputs]
