"""Trajectory: what a simulation produces, with its own energy audit."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..exceptions import FileFormatError
from .component import Phase

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
    """Energy audit of a run; every field has shape (N,) [J].

    The balance is ``energy - energy[0] = input_work - dissipated - jump_losses + residual``.
    """

    t: np.ndarray
    energy: np.ndarray
    input_work: np.ndarray
    dissipated: np.ndarray
    jump_losses: np.ndarray
    residual: np.ndarray

    def scale(self) -> float:
        """The energy scale that residuals are relative to [J]."""
        return float(
            max(
                np.abs(self.energy).max(),
                np.abs(self.input_work).max(),
                np.abs(self.dissipated).max(),
                np.abs(self.jump_losses).max(),
                1e-300,
            )
        )

    def max_relative(self) -> float:
        """Largest residual relative to :meth:`scale`."""
        return float(np.abs(self.residual).max() / self.scale())


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
            ``input``, and what the components report (motor currents, contact forces, ...).
        meta: Robot name, URDF path, flexible links, joint names: what a viewer needs.
    """

    t: np.ndarray
    x: np.ndarray
    layout: dict[str, tuple[int, int]]
    phase_index: np.ndarray
    phases: list[PhaseRecord]
    events: list[EventRecord]
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_run(cls, system: System, t, x, phase_index, phases, events, control) -> Trajectory:
        """Build a trajectory and compute its outputs from the System (used by simulate)."""
        model = system.model
        outputs: dict[str, list] = {}
        modes: dict[int, dict[str, Any]] = {}
        steps: dict[int, Any] = {}
        for i, (ti, xi) in enumerate(zip(t, x, strict=True)):
            q, v = system.split(xi)
            for name, value in system.energy_terms(xi).items():
                outputs.setdefault(f"energy.{name}", []).append(value)
            u = np.asarray(control(ti, xi), dtype=float)
            outputs.setdefault("input", []).append(u)
            pid = int(phase_index[i])
            if pid not in modes:
                modes[pid] = {k: m for k, m in phases[pid].modes}
                steps[pid] = system.acceleration_step(Phase(phases[pid].modes))
            if system.components:
                step = steps[pid](ti, xi, u)
            for comp in system.components:
                mode = modes[pid].get(comp.name)
                for name, value in comp.outputs(ti, xi, q, v, u, mode, step).items():
                    outputs.setdefault(f"{comp.name}.{name}", []).append(value)
        robot = system.robot
        sidecar = robot.extensions.sources[-1] if robot.extensions.sources else None
        meta = {
            "robot": model.name,
            "urdf": str(Path(robot.path).resolve()) if robot.path else None,
            "nq": model.nq,
            "nv": model.nv,
            "joint_names": list(model.names)[1:],
            "flexible": [
                dataclasses.asdict(f) for f in robot.flexible if dataclasses.is_dataclass(f)
            ],
            "sidecar": str(Path(sidecar).resolve())
            if sidecar and sidecar.endswith(".toml")
            else None,
            "drives": list(system.drives),
            "reductions": {j: float(getattr(d, "ratio", 1.0)) for j, d in system.drives.items()},
        }
        for comp in system.components:
            meta.update(comp.metadata())
        return cls(
            t=np.asarray(t, dtype=float),
            x=np.asarray(x, dtype=float),
            layout={k: (s.start, s.stop) for k, s in system.layout.items()},
            phase_index=np.asarray(phase_index, dtype=int),
            phases=list(phases),
            events=list(events),
            outputs={k: np.asarray(v, dtype=float) for k, v in outputs.items()},
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

    # -- energy ----------------------------------------------------------------------------
    def energy_terms(self) -> dict[str, np.ndarray]:
        """Stored energies by name (kinetic, gravity, elastic, per component) [J], shape (N,)."""
        return {k[len("energy.") :]: v for k, v in self.outputs.items() if k.startswith("energy.")}

    def energy(self) -> np.ndarray:
        """Total stored energy: kinetic + gravity + elastic + components [J], shape (N,)."""
        return np.sum(list(self.energy_terms().values()), axis=0)

    def energy_balance(self) -> EnergyBalance:
        """Audit: stored energy against input work, dissipation and event (impact) losses."""
        energy = self.energy()
        work = self.state("input_work")[:, 0]
        dissipated = self.state("dissipated_energy")[:, 0]
        jumps = np.zeros_like(energy)
        for event in self.events:
            loss = event.info.get("energy_loss", 0.0)
            after = np.flatnonzero(self.t >= event.t)
            # the sample after the map is the second sample at the event time
            same = after[self.t[after] == event.t]
            first = same[1] if same.size > 1 else (after[0] if after.size else len(energy))
            jumps[first:] += loss
        residual = energy - energy[0] - work + dissipated + jumps
        return EnergyBalance(self.t, energy, work, dissipated, jumps, residual)

    def constraint_residual(self, component: str = "contact") -> np.ndarray:
        """Largest constraint residual |s^c| of the closed contacts at each sample, shape (N,).

        Zero where no contact of ``component`` is closed; read from the recorded
        ``<component>.residual`` and ``<component>.closed`` outputs.
        """
        residual = np.abs(self.outputs[f"{component}.residual"]).reshape(len(self), -1)
        closed = self.outputs[f"{component}.closed"].reshape(len(self), -1)
        rows = np.asarray(self.meta.get("contact_rows", [residual.shape[1]]), dtype=int)
        closed_rows = np.repeat(closed, rows, axis=1) > 0
        return np.where(closed_rows, residual, 0.0).max(axis=1, initial=0.0)

    # -- files -----------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the trajectory to a ``.npz`` file."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        header = {
            "layout": self.layout,
            "phases": [_jsonable(dataclasses.asdict(p)) for p in self.phases],
            "events": [_jsonable(dataclasses.asdict(e)) for e in self.events],
            "meta": _jsonable(self.meta),
            "format": "pinext-trajectory-1",
        }
        arrays = {f"out:{k}": v for k, v in self.outputs.items()}
        np.savez_compressed(
            path,
            t=self.t,
            x=self.x,
            phase_index=self.phase_index,
            header=np.array(json.dumps(header)),
            **arrays,
        )
        return path

    @classmethod
    def load(cls, path: str | Path) -> Trajectory:
        """Read a trajectory written by :meth:`save`."""
        try:
            with np.load(path, allow_pickle=False) as npz:
                header = json.loads(str(npz["header"]))
                arrays = {k: npz[k] for k in npz.files}
        except (OSError, ValueError, KeyError) as err:
            raise FileFormatError(str(path), "npz", f"not a pinext trajectory ({err})") from None
        return cls(
            t=arrays["t"],
            x=arrays["x"],
            layout={k: tuple(v) for k, v in header["layout"].items()},
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
