"""A trajectory's outputs: named arrays, each with its unit and a one-line description
(:meth:`pinext.Trajectory.describe_outputs`), computed from the samples by
:func:`sample_outputs` at their first use, on a private copy of the System taken at the end of
the run (:class:`LazyOutputs`).

Output names are made of the producing component's name and its signal
(``"loop:tip-universe.residual"``, ``"crank.torque"``, ``"drives.current"``); the units and
descriptions come from the components themselves (:meth:`Component.output_info`), so a new
component documents its outputs where it computes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..exceptions import NameNotFound
from .component import Phase

if TYPE_CHECKING:
    from .system import System

#: Outputs that every run records, whatever its components: name -> (unit, description).
BUILT_IN: dict[str, tuple[str, str]] = {
    "energy.kinetic": ("J", "kinetic energy of the mechanism (with the armature)"),
    "energy.gravity": ("J", "potential energy of gravity"),
    "energy.elastic": ("J", "energy of the joint springs (flexible sublinks, elastic joints)"),
    "input": ("V, N.m or N", "the inputs after the control law (meta['input_columns'])"),
    "audit.numerical_dissipation": (
        "J",
        "energy removed by the fixed-step scheme itself, cumulative (time stepping)",
    ),
    "audit.explicit_error": (
        "J",
        "energy added by the explicit evaluation of the forces, cumulative (time stepping)",
    ),
}


class Outputs(dict):
    """A trajectory's outputs: output name -> array whose first dimension is the samples.

    A name that does not exist raises :class:`~pinext.exceptions.NameNotFound` (a
    ``KeyError``) listing the names that do, with the closest ones.
    """

    def __missing__(self, name: str) -> Any:
        raise NameNotFound("output", name, sorted(self))


class LazyOutputs(Outputs):
    """A trajectory's outputs (a dict of arrays), computed at their first use.

    Evaluating every component's outputs at every sample costs 30 to 400 µs per sample, up
    to several times a compiled run (``benchmarks/bench_outputs.py``); most runs are only
    read for their states. Any reading or writing access (and pickling) computes them once
    and drops ``compute`` (with what it holds); afterwards this is a plain dict. ``compute``
    must hold only data and private copies, never a live System or control law (see
    :meth:`pinext.simulation.recorder.Recorder.trajectory`).
    """

    def __init__(self, compute: Any) -> None:
        super().__init__()
        self._compute = compute

    def _fill(self) -> None:
        if self._compute is not None:
            compute, self._compute = self._compute, None
            dict.update(self, compute())

    def __reduce__(self):  # noqa: D105 - pickled as the plain dict it computes
        self._fill()
        return (Outputs, (dict(self),))


def _filling(name: str):
    method = getattr(dict, name)

    def filled(self, *args, **kwargs):
        self._fill()
        return method(self, *args, **kwargs)

    filled.__name__ = name
    filled.__doc__ = method.__doc__
    return filled


for _name in (
    "__getitem__", "__contains__", "__iter__", "__len__", "__repr__", "__eq__", "__setitem__",
    "__delitem__", "keys", "items", "values", "get", "copy", "update", "setdefault", "pop",
    "popitem",
):  # fmt: skip
    setattr(LazyOutputs, _name, _filling(_name))


def sample_outputs(
    system: System,
    t: np.ndarray,
    x: np.ndarray,
    inputs: np.ndarray,
    phase_index: np.ndarray,
    modes: list[tuple],
) -> dict[str, np.ndarray]:
    """Every output of a run at each of its samples: the stored energies, the inputs and
    what the components report (:meth:`Component.outputs`, given the accelerations and
    reactions of one acceleration step per sample).

    Args:
        system: The System that ran (or a copy of it).
        t: Shape (N,). Sample times [s].
        x: Shape (N, nx). Public states.
        inputs: Shape (N, n_inputs). The inputs applied at each sample.
        phase_index: Shape (N,). Index in ``modes`` of each sample's phase.
        modes: The modes of each phase (:attr:`PhaseRecord.modes`).
    """
    outputs: dict[str, list] = {}
    by_phase: dict[int, dict[str, Any]] = {}
    steps: dict[int, Any] = {}
    for i, (ti, xi) in enumerate(zip(t, x, strict=True)):
        q, v = system.split(xi)
        for name, energy in system.energy_terms(xi).items():
            outputs.setdefault(f"energy.{name}", []).append(energy)
        u = inputs[i]
        outputs.setdefault("input", []).append(u)
        pid = int(phase_index[i])
        if pid not in by_phase:
            by_phase[pid] = dict(modes[pid])
            steps[pid] = system.acceleration_step(Phase(modes[pid]))
        if system.components:
            step = steps[pid](ti, xi, u)
        for comp in system.components:
            mode = by_phase[pid].get(comp.name)
            for name, value in comp.outputs(ti, xi, q, v, u, mode, step).items():
                outputs.setdefault(f"{comp.name}.{name}", []).append(value)
    return {k: np.asarray(v, dtype=float) for k, v in outputs.items()}


def output_info(system: System) -> dict[str, dict[str, str]]:
    """Unit and description of every output a run of ``system`` records, by output name
    (JSON-serialisable: stored in :attr:`Trajectory.meta` ``["outputs"]``)."""
    info = {name: {"unit": u, "description": d} for name, (u, d) in BUILT_IN.items()}
    for comp in system.components:
        info[f"energy.{comp.name}"] = {
            "unit": "J",
            "description": f"energy stored in {comp.name} (zero when it stores none)",
        }
        for name, (unit, description) in comp.output_info().items():
            info[name] = {"unit": unit, "description": description}
    return info


class OutputInfo(NamedTuple):
    """One row of :meth:`pinext.Trajectory.describe_outputs`."""

    name: str
    """The key in :attr:`Trajectory.outputs`."""
    shape: tuple[int, ...]
    """Shape of the array: (N,) or (N, size) with N samples."""
    unit: str
    """SI unit ("-" for flags and counts)."""
    description: str
    """What the output is, in one line."""


class OutputTable(tuple):
    """The rows (:class:`OutputInfo`) of a trajectory's outputs; prints as a table."""

    def __str__(self) -> str:
        header = OutputInfo("name", (), "unit", "description")
        rows = [(r.name, "x".join(map(str, r.shape)), r.unit, r.description) for r in self]
        cells = [(header.name, "shape", header.unit, header.description), *rows]
        widths = [max(len(row[k]) for row in cells) for k in range(3)]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths, strict=True))
            + "  "
            + row[3]
            for row in cells
        ]
        lines.insert(1, "  ".join("-" * w for w in widths) + "  " + "-" * len(header.description))
        return "\n".join(line.rstrip() for line in lines)

    __repr__ = __str__


def describe(outputs: dict[str, np.ndarray], info: dict[str, Any]) -> OutputTable:
    """The :class:`OutputTable` of ``outputs`` from the stored ``info`` (name -> unit and
    description); unknown names read as unit "-" and no description."""
    rows = []
    for name in sorted(outputs):
        unit, description = BUILT_IN.get(name, ("-", ""))
        entry = info.get(name) or {"unit": unit, "description": description}
        rows.append(
            OutputInfo(
                name,
                tuple(int(n) for n in np.shape(outputs[name])),
                str(entry.get("unit", "-")),
                str(entry.get("description", "")),
            )
        )
    return OutputTable(rows)
