"""Trajectory: what a simulation produces, with its own energy audit."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..exceptions import FileFormatError, InvalidParameter, NameNotFound
from ..validation import describe as describe_value
from .columns import input_columns, state_columns
from .description import robot_description
from .outputs import Outputs, OutputTable, describe, output_info

if TYPE_CHECKING:
    from .system import System


@dataclass(frozen=True)
class PhaseRecord:
    """One phase of a run: ``[t_start, t_end]`` [s] in mode ``name``; ``modes`` per component."""

    t_start: float
    t_end: float
    name: str
    modes: tuple = ()


@dataclass(frozen=True)
class EventRecord:
    """An event: time [s], name, and what its map reported (impulse, energy_loss [J], ...)."""

    t: float
    name: str
    info: dict = field(default_factory=dict)


class EnergyBalance(NamedTuple):
    """Energy audit of a run; every field has shape (N,) [J], accumulated from the start.

    The balance is

    .. math::

        E - E_0 = W_{in} - D - L_{jump} - D_{num} + S_{expl} + r

    (``energy - energy[0] = input_work - dissipated - jump_losses - numerical_dissipation
    + explicit_error + residual``). The two scheme terms are zero for the event-driven
    :func:`pinext.simulate`, whose integrator error is left in the residual (bounded by its
    tolerances); a fixed-step scheme books its own discretisation energy there (time stepping:
    see :func:`pinext.contact.timestepping.step_audit`), so its residual is round-off.
    """

    t: np.ndarray
    energy: np.ndarray
    input_work: np.ndarray
    dissipated: np.ndarray
    jump_losses: np.ndarray
    #: Energy removed by the fixed-step scheme itself (time stepping: the θ = 1 velocity
    #: update, ½ h fᵀ(v⁺ − v) per step, ≥ 0 in smooth motion).
    numerical_dissipation: np.ndarray
    #: Energy added by the explicit (start-of-step) evaluation of the potential and
    #: gyroscopic forces (time stepping), of either sign.
    explicit_error: np.ndarray
    residual: np.ndarray
    #: The largest swing of one stored-energy term (kinetic, gravity, elastic, ...) over the
    #: run [J]: the energy exchanged, which a conserved total (a body falling from rest, at
    #: E = 0 throughout) does not show.
    exchanged: float = 0.0

    def scale(self) -> float:
        """The energy scale that residuals are relative to [J]: the largest of the stored
        energy, the energy exchanged between its terms, the work and the losses."""
        return float(
            max(
                np.abs(self.energy).max(),
                self.exchanged,
                np.abs(self.input_work).max(),
                np.abs(self.dissipated).max(),
                np.abs(self.jump_losses).max(),
                np.abs(self.numerical_dissipation).max(),
                np.abs(self.explicit_error).max(),
                1e-300,
            )
        )

    def max_relative(self) -> float:
        """Largest residual relative to :meth:`scale`."""
        return float(np.abs(self.residual).max() / self.scale())


#: Outputs of a fixed-step scheme's own energy terms (cumulative [J]), read by
#: :meth:`Trajectory.energy_balance`.
AUDIT_NUMERICAL = "audit.numerical_dissipation"
AUDIT_EXPLICIT = "audit.explicit_error"


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)  # a mode (enum, small dataclass): its readable form


def run_metadata(system: Any) -> dict[str, Any]:
    """The metadata every run's Trajectory carries about its System: the robot (its
    description for the viewer, its sizes, joint names and flexible links), the drives and
    their reductions, and the columns of the state, the inputs and the outputs."""
    model, robot = system.model, system.robot
    return {
        "robot": model.name,
        "description": robot_description(robot),
        "nq": model.nq,
        "nv": model.nv,
        "joint_names": list(model.names)[1:],
        "flexible": [
            dataclasses.asdict(f)
            for f in robot.flexible
            if dataclasses.is_dataclass(f) and not isinstance(f, type)
        ],
        "drives": list(system.drives),
        "reductions": {j: float(getattr(d, "ratio", 1.0)) for j, d in system.drives.items()},
        "state_columns": state_columns(system),
        "input_columns": input_columns(system),
        "outputs": output_info(system),
    }


@dataclass
class Trajectory:
    """The samples of a simulation.

    Attributes:
        t: Shape (N,). Sample times [s]; an event appears twice (before and after its map).
        x: Shape (N, nx). Public states ``[q, v, extra..., input_work, dissipated_energy]``.
        layout: Name -> (start, stop) in x.
        phase_index: Shape (N,). Index in :attr:`phases` of each sample.
        phases: The phases in order.
        events: The events in order.
        outputs: Name -> array with first dimension N: energies (``energy.kinetic``, ...),
            ``input``, what the components report (motor currents, contact forces, ...), and
            for time stepping the scheme's own energy terms ``audit.numerical_dissipation``
            and ``audit.explicit_error`` (cumulative [J], see :class:`EnergyBalance`).
            :meth:`describe_outputs` lists them with their units; an unknown name raises
            :class:`~pinext.exceptions.NameNotFound` listing those that exist.
        meta: Robot name, joint names, the run's statistics and what a viewer needs:
            ``meta["description"]``, the robot as text with portable mesh URIs (no absolute
            path; see :mod:`pinext.simulation.description`), and the scene items of the
            components (``"scene"``, ``"scene.<component>"``).
    """

    t: np.ndarray
    x: np.ndarray
    layout: dict[str, tuple[int, int]]
    phase_index: np.ndarray
    phases: list[PhaseRecord]
    events: list[EventRecord]
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.outputs, Outputs):
            self.outputs = Outputs(self.outputs)

    def describe_outputs(self) -> OutputTable:
        """The outputs with their units and a one-line description, one row
        (:class:`~pinext.simulation.outputs.OutputInfo`: name, shape, unit, description) per
        output, sorted by name; ``print`` it for a table::

            >>> print(traj.describe_outputs())
            name                          shape  unit   description
            ----------------------------  -----  -----  -----------
            crank.torque                  201x1  N.m …  driving effort of the prescribed joint …

        Units and descriptions come from the components that produce the outputs
        (:meth:`Component.output_info`), stored in ``meta["outputs"]`` (kept by :meth:`save`).
        """
        return describe(self.outputs, self.meta.get("outputs") or {})

    @classmethod
    def from_run(
        cls, system: System, t, x, phase_index, phases, events, outputs: dict
    ) -> Trajectory:
        """Build a trajectory from a run (used by the engine's recorder): the samples, the
        ``outputs`` it computed (or a :class:`LazyOutputs` over its private copy of the
        System), and the metadata read from ``system`` now. The trajectory keeps no
        reference to ``system``."""
        robot = system.robot
        meta = run_metadata(system)  # built afresh
        meta["support"] = robot.support.to_dict() if getattr(robot, "support", None) else None
        for comp in system.components:  # nothing shared with the components' own lists
            meta.update(copy.deepcopy(comp.metadata()))
        return cls(
            t=np.asarray(t, dtype=float),
            x=np.asarray(x, dtype=float),
            layout={k: (s.start, s.stop) for k, s in system.layout.items()},
            phase_index=np.asarray(phase_index, dtype=int),
            phases=list(phases),
            events=list(events),
            outputs=outputs,
            meta=meta,
        )

    # -- access ----------------------------------------------------------------------------
    def state(self, name: str) -> np.ndarray:
        """The samples of a named block of the state, shape (N, size)."""
        if name not in self.layout:
            from ..exceptions import NameNotFound

            raise NameNotFound("state", name, self.layout)
        start, stop = self.layout[name]
        return self.x[:, start:stop]

    @property
    def q(self) -> np.ndarray:
        """Configurations, shape (N, nq)."""
        return self.state("q")

    @property
    def v(self) -> np.ndarray:
        """Generalized velocities, shape (N, nv)."""
        return self.state("v")

    def __len__(self) -> int:
        return self.t.size

    def __repr__(self) -> str:
        from ..summary import trajectory_repr

        return trajectory_repr(self)

    # -- tables ----------------------------------------------------------------------------
    def columns(self) -> dict[str, np.ndarray]:
        """The samples as named columns, units in the names: time, phase, every entry of the
        state, the stored energies and the inputs.

        Example names: ``t [s]``, ``q.elbow_joint [rad]``, ``v.root_joint.vx [m/s]``,
        ``drives.current.j0 [A]``, ``energy.kinetic [J]``, ``input.j0 [N.m]``.
        """
        n = len(self)
        labels = self.meta.get("state_columns") or [f"x{i} [-]" for i in range(self.x.shape[1])]
        columns: dict[str, np.ndarray] = {"t [s]": self.t}
        names = [p.name for p in self.phases]
        columns["phase"] = np.array([names[i] for i in self.phase_index], dtype=object)
        for i, label in enumerate(labels):
            columns[label] = self.x[:, i]
        for name, value in self.energy_terms().items():
            columns[f"energy.{name} [J]"] = np.asarray(value, dtype=float).reshape(n)
        if "input" in self.outputs:
            inputs = np.asarray(self.outputs["input"], dtype=float).reshape(n, -1)
            labels = self.meta.get("input_columns") or [
                f"input{i} [-]" for i in range(inputs.shape[1])
            ]
            for i, label in enumerate(labels[: inputs.shape[1]]):
                columns[label] = inputs[:, i]
        return columns

    def to_dataframe(self) -> Any:
        """The samples as a :class:`pandas.DataFrame` (columns of :meth:`columns`).

        Raises:
            PinextError: pandas is not installed (``pip install pandas``).
        """
        try:
            import pandas as pd
        except ImportError:
            from ..exceptions import PinextError

            raise PinextError(
                "Trajectory.to_dataframe needs pandas: pip install pandas "
                "(Trajectory.to_csv and Trajectory.columns work without it)"
            ) from None
        return pd.DataFrame(self.columns())

    def to_csv(self, path: str | Path) -> Path:
        """Write the samples as CSV, one row per sample, units in the header (no pandas
        needed): the columns of :meth:`columns`."""
        import csv

        path = _output_file(path, "result.csv")
        columns = self.columns()
        with open(path, "w", newline="", encoding="utf-8") as stream:
            writer = csv.writer(stream)
            writer.writerow(list(columns))
            for row in zip(*columns.values(), strict=True):
                writer.writerow([v if isinstance(v, str) else repr(float(v)) for v in row])
        return path

    # -- energy ----------------------------------------------------------------------------
    def energy_terms(self) -> dict[str, np.ndarray]:
        """Stored energies by name (kinetic, gravity, elastic, per component) [J], shape (N,)."""
        return {k[len("energy.") :]: v for k, v in self.outputs.items() if k.startswith("energy.")}

    def energy(self) -> np.ndarray:
        """Total stored energy: kinetic + gravity + elastic + components [J], shape (N,)."""
        return np.sum(list(self.energy_terms().values()), axis=0)

    def energy_balance(self) -> EnergyBalance:
        """Audit: stored energy against input work, dissipation, event (impact) losses and the
        energy terms of a fixed-step scheme.

        The scheme terms are read from the outputs ``audit.numerical_dissipation`` and
        ``audit.explicit_error`` (cumulative [J], written by time stepping; zero when absent).
        """
        terms = self.energy_terms()
        energy = np.sum(list(terms.values()), axis=0)
        exchanged = max((float(np.ptp(term)) for term in terms.values()), default=0.0)
        work = self.state("input_work")[:, 0]
        dissipated = self.state("dissipated_energy")[:, 0]
        numerical = np.zeros_like(energy)
        explicit = np.zeros_like(energy)
        if AUDIT_NUMERICAL in self.outputs:
            numerical = np.asarray(self.outputs[AUDIT_NUMERICAL], dtype=float).reshape(-1)
        if AUDIT_EXPLICIT in self.outputs:
            explicit = np.asarray(self.outputs[AUDIT_EXPLICIT], dtype=float).reshape(-1)
        jumps = np.zeros_like(energy)
        for event in self.events:
            loss = event.info.get("energy_loss", 0.0)
            after = np.flatnonzero(self.t >= event.t)
            # the sample after the map is the second sample at the event time
            same = after[self.t[after] == event.t]
            first = same[1] if same.size > 1 else (after[0] if after.size else len(energy))
            jumps[first:] += loss
        residual = energy - energy[0] - work + dissipated + jumps + numerical - explicit
        return EnergyBalance(
            self.t, energy, work, dissipated, jumps, numerical, explicit, residual, exchanged
        )

    def constraint_residual(self, component: str | None = None) -> np.ndarray:
        """Largest constraint residual at each sample, shape (N,): |s^c| of the closed
        contacts, |Θ| of the loops and mimic couplings [m or rad].

        Args:
            component: The component to read (``"contact"``, ``"loop:tip-pivot"``, ...); None
                (default): every component that records a residual, i.e. every closed
                constraint of the run (zero for a run without any).

        Read from the recorded ``<component>.residual`` and ``<component>.closed`` outputs;
        zero where none of the component's rows is closed.

        Raises:
            NameNotFound: ``component`` records no residual (the message lists those that do).
        """
        names = [
            key[: -len(".residual")]
            for key in self.outputs
            if key.endswith(".residual") and f"{key[: -len('.residual')]}.closed" in self.outputs
        ]
        if component is None:
            parts = [self._residual(name) for name in names]
            return np.max(parts, axis=0) if parts else np.zeros(len(self))
        if component not in names:
            raise NameNotFound("constrained component", component, names)
        return self._residual(component)

    def _residual(self, component: str) -> np.ndarray:
        residual = np.abs(self.outputs[f"{component}.residual"]).reshape(len(self), -1)
        closed = self.outputs[f"{component}.closed"].reshape(len(self), -1)
        if closed.shape[1] == residual.shape[1]:  # one flag per row (loops, mimic couplings)
            return np.where(closed > 0, residual, 0.0).max(axis=1, initial=0.0)
        rows = np.asarray(self.meta.get("contact_rows", [residual.shape[1]]), dtype=int)
        closed_rows = np.repeat(closed, rows, axis=1) > 0
        return np.where(closed_rows, residual, 0.0).max(axis=1, initial=0.0)

    # -- files -----------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the trajectory to a ``.npz`` archive at exactly ``path``.

        The archive is written under the name given, whatever its suffix (NumPy alone would
        append ``.npz`` to another suffix): ``save("run.txt")`` writes ``run.txt``, which
        :meth:`load` reads. Missing parent folders are made.

        Returns:
            The path written (``path`` itself).

        Raises:
            InvalidParameter: ``path`` is not a path (text or ``os.PathLike``), is empty, or
                names an existing folder.
        """
        path = _output_file(path, "result.npz")
        header = {
            "layout": self.layout,
            "phases": [_jsonable(dataclasses.asdict(p)) for p in self.phases],
            "events": [_jsonable(dataclasses.asdict(e)) for e in self.events],
            "meta": _jsonable(self.meta),
            "format": FORMAT,
        }
        arrays: dict[str, Any] = {
            "t": self.t,
            "x": self.x,
            "phase_index": self.phase_index,
            "header": np.array(json.dumps(header)),
        }
        arrays.update({f"out:{k}": v for k, v in self.outputs.items()})
        with path.open("wb") as out:  # a file object: NumPy adds no suffix
            np.savez_compressed(out, **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path) -> Trajectory:
        """Read a trajectory written by :meth:`save`.

        Raises:
            FileFormatError: The file is missing, not a ``.npz`` archive (a URDF, a ``.npy``
                array, a truncated download), or not a pinext trajectory: another format tag,
                missing arrays or header keys, inconsistent sizes, non-finite samples, or a
                layout pointing outside ``x``. The message names the file and what is wrong.
        """
        path = Path(path)
        try:
            with open(path, "rb") as stream:
                magic = stream.read(6)
        except OSError as err:
            raise FileFormatError(str(path), "file", str(err)) from None
        if not magic.startswith(b"PK"):
            raise FileFormatError(str(path), "file", _not_npz(magic))
        try:
            with np.load(path, allow_pickle=False) as npz:
                arrays = {k: npz[k] for k in npz.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
            raise FileFormatError(
                str(path), "npz", f"unreadable archive, truncated or damaged? ({err})"
            ) from None
        missing = [k for k in ("header", "t", "x", "phase_index") if k not in arrays]
        if missing:
            raise FileFormatError(
                str(path),
                "npz",
                f"not a pinext trajectory: missing array(s) {', '.join(missing)} (found: "
                f"{', '.join(arrays) or 'none'}); write one with Trajectory.save or "
                "pinext simulate ROBOT --out result.npz",
            )
        try:
            header = json.loads(str(arrays["header"]))
        except ValueError as err:
            raise FileFormatError(str(path), "header", f"not JSON ({err})") from None
        if not isinstance(header, dict):
            raise FileFormatError(str(path), "header", "expected a JSON object")
        if header.get("format") != FORMAT:
            raise FileFormatError(
                str(path),
                "header.format",
                f"format {header.get('format')!r}; this pinext reads {FORMAT!r}",
            )
        missing = [k for k in ("layout", "phases", "events", "meta") if k not in header]
        if missing:
            raise FileFormatError(str(path), "header", f"missing key(s) {', '.join(missing)}")
        try:
            trajectory = cls(
                t=arrays["t"],
                x=arrays["x"],
                layout={k: (int(v[0]), int(v[1])) for k, v in header["layout"].items()},
                phase_index=arrays["phase_index"],
                phases=[
                    PhaseRecord(
                        p["t_start"], p["t_end"], p["name"], tuple(tuple(m) for m in p["modes"])
                    )
                    for p in header["phases"]
                ],
                events=[EventRecord(**e) for e in header["events"]],
                outputs={k[4:]: v for k, v in arrays.items() if k.startswith("out:")},
                meta=header["meta"],
            )
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            raise FileFormatError(
                str(path), "header", f"malformed layout, phases or events ({err!r})"
            ) from None
        trajectory._check(str(path))
        return trajectory

    def _check(self, path: str) -> None:
        """Check that the arrays fit together; errors name the file and the array."""
        n = self.t.shape[0] if self.t.ndim == 1 else -1
        if n < 1:
            raise FileFormatError(path, "t", f"expected shape (N,), N >= 1; got {self.t.shape}")
        if self.x.ndim != 2 or self.x.shape[0] != n:
            raise FileFormatError(
                path, "x", f"expected shape ({n}, nx) to match t ({n} samples); got {self.x.shape}"
            )
        if self.phase_index.shape != (n,):
            raise FileFormatError(
                path, "phase_index", f"expected shape ({n},); got {self.phase_index.shape}"
            )
        if not (np.all(np.isfinite(self.t)) and np.all(np.diff(self.t) >= 0)):
            raise FileFormatError(path, "t", "times must be finite and non-decreasing")
        if not np.all(np.isfinite(self.x)):
            row, col = np.argwhere(~np.isfinite(self.x))[0]
            raise FileFormatError(
                path,
                "x",
                f"non-finite value at sample {row} (t = {self.t[row]:.6g} s), entry {col}",
            )
        if self.phase_index.size and (
            self.phase_index.min() < 0 or self.phase_index.max() >= len(self.phases)
        ):
            raise FileFormatError(
                path, "phase_index", f"indices outside the {len(self.phases)} phases"
            )
        nx = self.x.shape[1]
        for name in ("q", "v", "input_work", "dissipated_energy"):
            if name not in self.layout:
                raise FileFormatError(
                    path, "header.layout", f"no '{name}' block; blocks: {', '.join(self.layout)}"
                )
        for name, bounds in self.layout.items():
            if len(bounds) != 2 or not 0 <= bounds[0] <= bounds[1] <= nx:
                raise FileFormatError(
                    path,
                    f"header.layout.{name}",
                    f"{list(bounds)} points outside x, which has {nx} columns",
                )
        for name, value in self.outputs.items():
            if value.shape[:1] != (n,):
                raise FileFormatError(
                    path, f"out:{name}", f"expected {n} samples; got shape {value.shape}"
                )


#: Format tag written by :meth:`Trajectory.save` and required by :meth:`Trajectory.load`.
FORMAT = "pinext-trajectory-1"


def _output_file(path: Any, example: str) -> Path:
    """``path`` as a file to write, its parent folders made; refused when it is not a path
    or names an existing folder."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise InvalidParameter(
            f"path must be a file name (text or a pathlib.Path), e.g. {example!r}; got "
            f"{describe_value(path)}"
        )
    path = Path(path)
    if path.is_dir():
        raise InvalidParameter(
            f"path {str(path)!r} is a folder; give a file name in it, e.g. {str(path / example)!r}"
        )
    blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise InvalidParameter(
            f"path {str(path)!r} cannot be written: {str(blocking)!r} is a file, not a folder"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _not_npz(magic: bytes) -> str:
    """Why a file that does not start like a zip archive is not a trajectory."""
    if magic.startswith(b"\x93NUMPY"):
        kind = "a single .npy array"
    elif magic.lstrip().startswith(b"<"):
        kind = "an XML file (a URDF?)"
    elif not magic:
        kind = "an empty file"
    else:
        kind = "not a .npz archive"
    return (
        f"{kind}, not a pinext trajectory (.npz); write one with "
        "pinext simulate ROBOT --duration T --out result.npz (or Trajectory.save)"
    )
