"""Recorder: the samples, phases and events of a run, segment by segment."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..exceptions import IntegrationError
from .chart import Chart
from .component import Phase
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
        self.phases: list[PhaseRecord] = []
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
        start = chart.to_internal(x)
        # (samples, internal state); a solver may give a flat empty array for no samples
        seg_y = np.asarray(sol.y, dtype=float).reshape(start.size, seg_t.size).T
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
            seg_y = np.vstack((start, seg_y))
        impose = self.system.impose
        if chart.identity and not self.system.imposing:
            seg_x = np.array(seg_y, dtype=float).reshape(seg_t.size, x.size)
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
            self.phases[-1] = PhaseRecord(self.phases[-1].t_start, t_end, phase.name, phase.modes)
        else:
            self.phases.append(PhaseRecord(float(t), t_end, phase.name, phase.modes))
        self.times.append(seg_t)
        self.states.append(seg_x)
        self.phase_ids.append(np.full(seg_t.size, len(self.phases) - 1))
        return t_end, x_end

    def point(self, t: float, x: np.ndarray, phase: Phase) -> None:
        """Record a single state as a zero-length phase (a map at the final time)."""
        self.phases.append(PhaseRecord(t, t, phase.name, phase.modes))
        self.times.append(np.array([t]))
        self.states.append(x[None, :].copy())
        self.phase_ids.append(np.array([len(self.phases) - 1]))

    def trajectory(self, law) -> Trajectory:
        """The :class:`Trajectory` of everything recorded."""
        return Trajectory.from_run(
            self.system,
            np.concatenate(self.times),
            np.vstack(self.states),
            np.concatenate(self.phase_ids),
            self.phases,
            self.events,
            law,
        )
