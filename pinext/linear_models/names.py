"""Names and units of a linear model's states, inputs and outputs, and the output signals.

The state of a linear model is the deviation ``δx = [δq, δv, δs]`` of a System's public
state from the linearization point, without the two energy accumulators: ``δq`` lives in the
tangent space of the configuration (Pinocchio's ``difference``/``integrate``, one entry per
velocity DOF), ``δs`` are the components' own states (motor angles and velocities, currents).
A DOF whose joint has a Euclidean configuration is named ``q:<joint>``; a DOF of a joint on a
manifold (free flyer, spherical, planar, continuous) ``dq:<joint>[<axis>]``: a tangent
displacement, not a coordinate.

Outputs are chosen by name: any state name, the signals ``<frame>.position``,
``<frame>.velocity``, ``<frame>.acceleration`` (the frame origin's, world-aligned, Pinocchio's
LOCAL_WORLD_ALIGNED; the acceleration is the classical one) and every signal a component
reports (:meth:`pinext.Component.outputs`, e.g. ``drives.current``, ``drives.spring_torque``).
A vector signal expands to one output per entry, ``<signal>[<label>]``; such an entry may also
be asked for on its own.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pinocchio as pin

from ..exceptions import NameNotFound

if TYPE_CHECKING:
    from ..simulation.component import Phase
    from ..simulation.system import System

__all__ = ["Signals", "input_labels", "resolve_outputs", "state_labels"]

#: Axis labels and units of the tangent DOFs of multi-DOF joints, by Pinocchio short name.
_AXES: dict[str, tuple[tuple[str, str], ...]] = {
    "JointModelFreeFlyer": (
        ("x", "m"),
        ("y", "m"),
        ("z", "m"),
        ("rx", "rad"),
        ("ry", "rad"),
        ("rz", "rad"),
    ),
    "JointModelSpherical": (("rx", "rad"), ("ry", "rad"), ("rz", "rad")),
    "JointModelSphericalZYX": (("rz", "rad"), ("ry", "rad"), ("rx", "rad")),
    "JointModelPlanar": (("x", "m"), ("y", "m"), ("rz", "rad")),
    "JointModelTranslation": (("x", "m"), ("y", "m"), ("z", "m")),
}

#: Units of the components' state blocks, by the block name's last word.
_STATE_UNITS = {"angle": "rad", "velocity": "rad/s", "current": "A", "flux": "Wb"}

_FRAME_SIGNALS = {"position": "m", "velocity": "m/s", "acceleration": "m/s^2"}


def _dof_labels(model: pin.Model) -> list[tuple[str, str, bool]]:
    """(label, unit, on a manifold) for each velocity DOF."""
    labels: list[tuple[str, str, bool]] = []
    for j in range(1, model.njoints):
        joint = model.joints[j]
        name, kind = model.names[j], joint.shortname()
        curved = joint.nq != joint.nv
        if joint.nv == 1:
            unit = "m" if "Prismatic" in kind else "rad"
            labels.append((f"{name}[r]" if curved else name, unit, curved))
            continue
        axes = _AXES.get(kind) or tuple((str(k), "-") for k in range(joint.nv))
        labels += [(f"{name}[{axis}]", unit, curved) for axis, unit in axes]
    return labels


def _component_state_labels(comp: Any, block: str, size: int) -> list[str]:
    """Entry labels of a component's state block: the drives' joints when the block has one
    entry per (elastic) drive, else indices."""
    joints = list(getattr(comp, "joints", []) or [])
    elastic = getattr(comp, "elastic", None)
    if joints and size == len(joints):
        return joints
    if joints and elastic is not None and size == len(elastic):
        return [joints[int(i)] for i in elastic]
    return [str(k) for k in range(size)]


#: System -> (state names, units, input names, units): a System's layout is frozen.
_LABELS: weakref.WeakKeyDictionary[Any, tuple] = weakref.WeakKeyDictionary()


def _labels(system: System) -> tuple:
    found = _LABELS.get(system)
    if found is None:
        found = _LABELS[system] = (*_state_labels(system), *_input_labels(system))
    return found


def state_labels(system: System) -> tuple[list[str], list[str]]:
    """The names and units of the linear model's states (module docstring)."""
    names, units, _, _ = _labels(system)
    return list(names), list(units)


def input_labels(system: System) -> tuple[list[str], list[str]]:
    """The names and units of the System's inputs: ``tau:<joint>`` [N.m or N] for joint
    torque inputs, ``<component>.<joint>.<kind>`` for the drives' inputs (voltage [V])."""
    _, _, names, units = _labels(system)
    return list(names), list(units)


def _state_labels(system: System) -> tuple[list[str], list[str]]:
    names, units = [], []
    dofs = _dof_labels(system.model)
    for label, unit, curved in dofs:
        names.append(f"{'dq' if curved else 'q'}:{label}")
        units.append(unit)
    for label, unit, _ in dofs:
        names.append(f"v:{label}")
        units.append(f"{unit}/s")
    for comp in system.components:
        for block, size in comp.states():
            word = block.rsplit("_", 1)[-1]
            for entry in _component_state_labels(comp, block, size):
                names.append(f"{comp.name}.{block}[{entry}]")
                units.append(_STATE_UNITS.get(word, "-"))
    return names, units


def _input_labels(system: System) -> tuple[list[str], list[str]]:
    if system.torque_inputs:
        dofs = _dof_labels(system.model)
        return [f"tau:{label}" for label, _, _ in dofs], [
            "N" if unit == "m" else "N.m" for _, unit, _ in dofs
        ]
    names, units = [], []
    for comp in system.components:
        if not comp.n_inputs:
            continue
        labels = getattr(comp, "input_names", None)
        entries = list(labels()) if callable(labels) else [str(k) for k in range(comp.n_inputs)]
        for entry in entries:
            names.append(f"{comp.name}.{entry}")
            units.append("V" if entry.endswith("voltage") else "-")
    return names, units


class Signals:
    """The output signals of a System in one phase: ``values(x, u) -> {signal: array}``.

    Args:
        system: The System.
        phase: The phase whose acceleration step gives the accelerations and reactions.
        t: Time of the evaluation [s].
    """

    def __init__(self, system: System, phase: Phase, t: float) -> None:
        self.system, self.phase, self.t = system, phase, t
        self.step = system.acceleration_step(phase)
        self.data = system.model.createData()
        self.frames = [f.name for f in system.model.frames]
        self.units: dict[str, str] = {}
        for comp in system.components:
            for name, (unit, _) in comp.output_info().items():
                self.units[name] = unit

    def frame_signals(self) -> list[str]:
        """``<frame>.position|velocity|acceleration`` for every frame of the model."""
        return [f"{frame}.{kind}" for frame in self.frames for kind in _FRAME_SIGNALS]

    def values(self, x: np.ndarray, u: np.ndarray, frames: set[str]) -> dict[str, np.ndarray]:
        """Every component signal and the frame signals of ``frames`` at (x, u)."""
        system = self.system
        q, v = system.split(x)
        solved = self.step(self.t, x, u)
        out: dict[str, np.ndarray] = {}
        for comp, mode in self.step.modes:
            for name, value in comp.outputs(self.t, x, q, v, u, mode, solved).items():
                out[f"{comp.name}.{name}"] = np.atleast_1d(np.asarray(value, dtype=float))
        if frames:
            model, data = system.model, self.data
            pin.forwardKinematics(model, data, q, v, solved.a)
            pin.updateFramePlacements(model, data)
            for frame in frames:
                fid = model.getFrameId(frame)
                world = pin.LOCAL_WORLD_ALIGNED
                out[f"{frame}.position"] = np.array(data.oMf[fid].translation)
                out[f"{frame}.velocity"] = pin.getFrameVelocity(model, data, fid, world).linear
                out[f"{frame}.acceleration"] = pin.getFrameClassicalAcceleration(
                    model, data, fid, world
                ).linear
        return out

    def entry_labels(self, signal: str, size: int) -> list[str]:
        """Labels of a vector signal's entries: x, y, z for frames, the drives' joints."""
        if signal.rsplit(".", 1)[-1] in _FRAME_SIGNALS and size == 3:
            return ["x", "y", "z"]
        name = signal.split(".", 1)[0]
        comp = next((c for c in self.system.components if c.name == name), None)
        joints = list(getattr(comp, "joints", []) or [])
        return joints if len(joints) == size else [str(k) for k in range(size)]


class OutputRow(NamedTuple):
    """One scalar output: a state (``state`` its index) or an entry of a signal."""

    name: str
    unit: str
    state: int | None
    signal: str | None
    entry: int


def resolve_outputs(
    requested: list[str], state_names: list[str], state_units: list[str], signals: Signals, x, u
) -> list[OutputRow]:
    """The scalar outputs of the requested names (module docstring).

    Raises:
        NameNotFound: A name that is neither a state nor a signal nor an entry of one; the
            message lists the valid names.
    """
    frames = {r.rsplit(".", 1)[0] for r in requested if r.rsplit(".", 1)[0] in signals.frames}
    sample = signals.values(x, u, frames)
    rows: list[OutputRow] = []
    for name in requested:
        if name in state_names:
            k = state_names.index(name)
            rows.append(OutputRow(name, state_units[k], k, None, 0))
            continue
        signal, _, entry = name.partition("[")
        if signal not in sample:
            valid = list(state_names) + sorted(set(sample) | set(signals.frame_signals()))
            raise NameNotFound("output", name, valid)
        unit = signals.units.get(signal) or _FRAME_SIGNALS.get(signal.rsplit(".", 1)[-1], "-")
        labels = signals.entry_labels(signal, sample[signal].size)
        if entry:
            label = entry.rstrip("]")
            if label not in labels:
                raise NameNotFound("output", name, [f"{signal}[{x}]" for x in labels])
            rows.append(OutputRow(name, unit, None, signal, labels.index(label)))
            continue
        for k, label in enumerate(labels):
            rows.append(OutputRow(f"{signal}[{label}]", unit, None, signal, k))
    return rows
