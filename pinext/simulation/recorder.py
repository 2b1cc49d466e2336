"""Recorder: the samples, phases and events of a run, segment by segment."""

from __future__ import annotations

import copy
from functools import partial
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..compiled.charts import public_states
from ..compiled.path import enabled, law_inputs
from ..exceptions import IntegrationError
from .chart import Chart
from .component import Phase
from .controls import Schedule
from .outputs import LazyOutputs, sample_outputs
from .trajectory import EventRecord, PhaseRecord, Trajectory

if TYPE_CHECKING:
    from .system import System


class Recorder:
    """The samples, phases and events of a run, segment by segment.

    A segment is what one ``solve_ivp`` call integrated. Its samples are the solver's output
    plus, at a physical event, the state just before the map (the next segment starts with the
    state after it, so an impact shows as two samples at the same time). A restart that does
    not change the state (chart re-centring, control breakpoint) continues the phase without
    duplicating samples.
    """

    def __init__(self, system: System) -> None:
        self.system = system
        self.times: list[np.ndarray] = []
        self.states: list[np.ndarray] = []
        self.phase_ids: list[np.ndarray] = []
        self.phases: list[tuple[float, float, Phase]] = []  # (t_start, t_end, phase)
        self.events: list[EventRecord] = []

    def segment(
        self,
        sol,
        chart: Chart,
        t: float,
        x: np.ndarray,
        phase: Phase,
        fired: int | None,
        *,
        physical: bool,
        continuing: bool,
    ):
        """Record one solve_ivp segment; return (end time, public state at the end)."""
        seg_t = np.atleast_1d(np.asarray(sol.t, dtype=float))
        width = chart.nv + x.size - chart.model.nq  # the internal state's size
        # (samples, internal state); a solver may give a flat empty array for no samples
        seg_y = np.asarray(sol.y, dtype=float).reshape(width, seg_t.size).T
        if fired is not None:
            t_end, y_end = float(sol.t_events[fired][0]), sol.y_events[fired][0]
            if physical and (not seg_t.size or seg_t[-1] < t_end):
                seg_t = np.append(seg_t, t_end)  # the state just before the event's map
                seg_y = np.vstack((seg_y, y_end))
        if continuing:
            if seg_t.size and seg_t[0] == t:
                seg_t, seg_y = seg_t[1:], seg_y[1:]
        elif not seg_t.size or seg_t[0] > t:
            seg_t = np.insert(seg_t, 0, t)  # the state at the start of the phase (after a map)
            seg_y = np.vstack((chart.to_internal(x), seg_y))
        impose = self.system.impose
        converted = None  # the samples' public states, when no component imposes coordinates
        if chart.identity and not self.system.imposing:
            converted = np.array(seg_y, dtype=float)
        elif enabled() and not self.system.imposing:
            converted = public_states(chart, seg_y)
        if converted is not None:
            seg_x = converted.reshape(seg_t.size, x.size)
        else:
            seg_x = np.array(
                [impose(ti, chart.to_public(y)) for ti, y in zip(seg_t, seg_y, strict=True)]
            ).reshape(seg_t.size, x.size)
        if not np.all(np.isfinite(seg_x)):
            bad = int(np.argmax(~np.all(np.isfinite(seg_x), axis=1)))
            raise IntegrationError("non-finite state", seg_t[bad], seg_x[max(bad - 1, 0)])
        if fired is None and not seg_t.size:  # stopped where it started (a restart at once)
            t_end, x_end = t, x.copy()
        elif fired is None:
            t_end, x_end = float(seg_t[-1]), seg_x[-1].copy()
        else:
            x_end = impose(t_end, chart.to_public(y_end)).copy()
        if continuing:
            self.phases[-1] = (self.phases[-1][0], t_end, phase)
        else:
            self.phases.append((float(t), t_end, phase))
        self.times.append(seg_t)
        self.states.append(seg_x)
        self.phase_ids.append(np.full(seg_t.size, len(self.phases) - 1))
        return t_end, x_end

    def event(self, t: float, name: str, info: dict, before, after) -> None:
        """Record an event at t that mapped the state ``before`` to ``after``, with its energy
        loss; an action may name what it handled (``info["name"]``)."""
        energy = self.system.energy
        info = {**info, "energy_loss": energy(before) - energy(after)}
        self.events.append(EventRecord(t, info.pop("name", name), info))

    def mapped(self, sol, chart: Chart, owned: list, phase: Phase, t: float, x, continuing: bool):
        """Record the bounces that the compiled loop applied itself (``sol.maps``,
        :func:`pinext.compiled.path.solve`) as a segment ending at each: the samples up to
        the state before it, then the owner's mode after it (:attr:`Event.mapped`) and the
        event (``continuing``: the first continues the previous segment's phase). Returns the
        time, state and phase after the last, and the rest of ``sol``."""
        done = 0
        for split, e, values in sol.maps:
            part = SimpleNamespace(t=sol.t[done:split], y=sol.y[:, done:split])
            t, x = self.segment(
                part, chart, t, x, phase, None, physical=False, continuing=continuing
            )
            continuing = False
            owner, event = owned[e]
            after = chart.to_public(sol.y[:, split])
            mode, info = event.mapped(t, after, phase.get(owner.name), values)
            phase = phase.replace(owner.name, mode)
            self.event(t, event.name, info, x, after)
            x, done = after, split
        rest = SimpleNamespace(**{**vars(sol), "t": sol.t[done:], "y": sol.y[:, done:]})
        return t, x, phase, rest

    def close(self, t: float, x: np.ndarray) -> None:
        """End the last segment with the state (t, x) just before an event's map, unless it
        ends there already (an event that fires where a segment starts)."""
        if self.times and (not self.times[-1].size or self.times[-1][-1] < t):
            self.times[-1] = np.append(self.times[-1], t)
            self.states[-1] = np.vstack((self.states[-1], x))
            self.phase_ids[-1] = np.append(self.phase_ids[-1], len(self.phases) - 1)

    def point(self, t: float, x: np.ndarray, phase: Phase) -> None:
        """Record a single state as a zero-length phase (a map at the final time)."""
        self.phases.append((t, t, phase))
        self.times.append(np.array([t]))
        self.states.append(x[None, :].copy())
        self.phase_ids.append(np.array([len(self.phases) - 1]))

    def trajectory(self, law) -> Trajectory:
        """The :class:`Trajectory` of everything recorded, as pure data.

        The inputs are evaluated now, once per sample (:func:`applied_inputs`, or in one
        compiled loop for a law the kernels evaluate), while ``law`` is the run's; the other
        outputs are computed at their first reading
        (:class:`~pinext.simulation.outputs.LazyOutputs`) on a private copy of the System
        taken now (:func:`frozen_copy`), so that a System changed after the run (a mass, a
        gain) does not change its trajectory, and the trajectory holds no live System, model
        or law. A System that cannot be copied has its outputs computed now instead.
        """
        t = np.concatenate(self.times)
        x = np.vstack(self.states)
        phase_index = np.concatenate(self.phase_ids)
        inputs = law_inputs(self.system, law, t, x)  # a law the kernels evaluate
        if inputs is None:
            inputs = applied_inputs(law, t, x)
        phases = [PhaseRecord(t0, t1, p.name, p.modes) for t0, t1, p in self.phases]
        modes = [p.modes for p in phases]
        try:
            frozen = frozen_copy(self.system)
        except Exception:  # noqa: BLE001 - an uncopyable component: compute the outputs now
            outputs: dict = sample_outputs(self.system, t, x, inputs, phase_index, modes)
        else:
            outputs = LazyOutputs(partial(sample_outputs, frozen, t, x, inputs, phase_index, modes))
        return Trajectory.from_run(self.system, t, x, phase_index, phases, self.events, outputs)


def applied_inputs(law, t: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The inputs of ``law`` at each sample, shape (N, n_inputs), each row equal to
    ``law(t[k], x[k])``: a :class:`Schedule` in one vectorised evaluation, a constant
    repeated, any other law called once per sample."""
    if isinstance(law, Schedule):
        return law.values_at(t)
    first = np.array(law(t[0], x[0]), dtype=float)
    value = getattr(law, "value", None)
    if value is not None and law(t[-1], x[-1]) is value:  # a constant (as_control)
        return np.tile(first, (t.size, 1))
    rows = [first] + [
        np.array(law(ti, xi), dtype=float) for ti, xi in zip(t[1:], x[1:], strict=True)
    ]
    return np.array(rows, dtype=float).reshape(t.size, -1)


def frozen_copy(system: System) -> System:
    """A private deep copy of ``system`` (model, robot, components and their parameters)
    for computing a trajectory's outputs after the run: none of what they read is shared
    with the user's objects. The engine's caches are not copied (they are kept beside the
    System, :mod:`pinext.simulation.caches`; its own caches and its components' start empty,
    and its Pinocchio Data are made anew: :class:`pinext.model.FreshData`), nor the robot's
    visual geometry (no output reads it: the copy has none);
    the tables the robot was loaded from (its ``<transmission>`` elements and extension
    tables, which only the loader reads) are shared.
    """
    robot = system.robot
    memo: dict[int, Any] = {
        id(robot.visual_model): pin.GeometryModel(),
        id(robot.transmissions): robot.transmissions,
        id(robot.extensions): robot.extensions,
    }
    return copy.deepcopy(system, memo)
