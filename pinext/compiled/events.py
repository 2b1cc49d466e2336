"""The compiled events: the event kinds evaluated in the compiled loop.

A component gives each event's compiled form as data (:attr:`pinext.simulation.component.
Event.compiled`: :class:`~pinext.simulation.events.Distances`,
:class:`~pinext.simulation.events.Leaving`, :class:`~pinext.simulation.events.Reaction`,
:class:`~pinext.simulation.events.Gap`, :class:`~pinext.simulation.events.LayerForce`,
:class:`~pinext.simulation.events.Breakpoint`); each form says where it sits in the flat
arrays (its :class:`~pinext.simulation.events.Slots`), :func:`compiled_events` stacks them, and
:func:`_value` evaluates event e of them at (t, y) with
:func:`pinext.simulation.events.event_value`, once what its kind reads is evaluated
(:func:`~pinext.simulation.events.event_reads`: the right-hand side for the reactions and a
layer's force, :func:`pinext.compiled.phase.rhs`; the positions for the gaps alone,
:func:`pinext.compiled.phase.gaps`). What each kind of event is, its value and its layout, is
written once, in :mod:`pinext.simulation.events`, which the Python path's event functions call
too; this module and the integrators (:mod:`pinext.compiled.dop853`,
:mod:`pinext.compiled.radau`), which locate the roots, never look inside an event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..simulation.caches import cache as engine_cache
from ..simulation.component import Component, Event, FrameRows, Gap, Phase
from ..simulation.events import (
    DISTANCES,
    GAP,
    LAYER,
    LEAVING,
    REACTION,
    TIME,
    Breakpoint,
    Distances,
    EventForm,
    event_reads,
    event_value,
)
from .notice import announce
from .phase import gaps, rhs
from .rows import row_offsets
from .spatial import helper, kernel

if TYPE_CHECKING:
    from ..simulation.system import System

__all__ = [
    "DISTANCES",
    "GAP",
    "LAYER",
    "LEAVING",
    "REACTION",
    "TIME",
    "compiled_events",
    "events_at",
    "phase_events",
    "values_at",
    "watched_gaps",
]


@helper
def _value(P, e, t, y, evs):
    """Event e at (t, y) (:func:`pinext.simulation.events.event_value`), the phase's
    reactions ``P.lam``, layer force ``P.layer.out``, watched gaps ``P.frames.gap``,
    variables ``P.z`` and accelerations ``P.acc`` already evaluated there."""
    return event_value(
        evs[0][e], t, y, evs[3][e], evs[4], evs[5], evs[6], evs[1][e], evs[2][e], P.lam,
        P.layer.out, P.frames.gap, P.z, P.acc,
    )  # fmt: skip


@helper
def _evaluate(P, t, y, reads, tmp):
    """The right-hand side at (t, y) into tmp (``reads`` 2), or the watched gaps alone (1)."""
    if reads == 2:
        rhs(P, t, y, tmp)
    elif reads == 1:
        gaps(P, y)


@helper
def _event(P, e, t, y, evs, tmp):
    """Event e at (t, y) (:func:`_value`), once what it reads is evaluated
    (:func:`pinext.simulation.events.event_reads`)."""
    _evaluate(P, t, y, event_reads(evs[0][e]), tmp)
    return _value(P, e, t, y, evs)


@kernel
def events_at(P, t, y, evs, out, tmp):
    """Every event at (t, y) into out (:func:`_value`), with one right-hand side for all the
    REACTIONs and LAYERs (a stuck joint's friction cone has two, every held row one) and the
    GAPs with them, or the positions alone for GAPs without them."""
    reads = 0
    for e in range(out.size):
        reads = max(reads, event_reads(evs[0][e]))
    _evaluate(P, t, y, reads, tmp)
    values_at(P, t, y, evs, out)


@kernel
def values_at(P, t, y, evs, out):
    """Every event at (t, y) into out, the right-hand side having just been evaluated at
    (t, y) (its reactions, gaps and layer force are in P): an integrator's own evaluation at
    the end of a step, or at its start, serves the events too."""
    for e in range(out.size):
        out[e] = _value(P, e, t, y, evs)


def compiled_events(
    events: list[Event],
    breakpoint: float | None,
    offsets: list[int] | None = None,
    chart_index: np.ndarray | None = None,
    recentre: Distances | None = None,
) -> tuple | None:
    """The events' compiled forms (:attr:`Event.compiled`, then the chart's re-centring and
    the breakpoint) as the arrays (kind, start, stop, time, index, sign, bound, direction) of
    :mod:`pinext.compiled.dop853`, or None when one has none (the reason said once): event e
    is ``kind[e]`` with ``time[e]`` and the entries ``start[e]:stop[e]`` of (index, sign,
    bound), as its form's :class:`~pinext.simulation.events.Slots` say.
    ``offsets[e]``: the first row of event e's owner among the phase's rows
    (:func:`pinext.compiled.rows.row_offsets`; a :class:`Reaction`'s row is the owner's own).
    ``chart_index``: the chart's map from public to internal state indices (:attr:`Chart.index`;
    None: the same); an event on an entry without an internal coordinate is not compiled.
    ``recentre``: the form of the chart's re-centring (:attr:`Chart.recentring`), on the
    internal state already."""
    forms: list[tuple[str, EventForm | None, float]] = [
        (e.name, e.compiled, float(e.direction)) for e in events
    ]
    if recentre is not None:
        forms.append(("chart", recentre, -1.0))
    if breakpoint is not None:
        forms.append(("breakpoint", Breakpoint(breakpoint), 1.0))
    slots, watched = [], 0
    for e, (name, form, direction) in enumerate(forms):
        if form is None:
            announce(f"event '{name}' has no compiled form")
            return None
        row = offsets[e] if offsets is not None and e < len(offsets) else 0
        chart = chart_index if e < len(events) else None  # the chart's own: internal already
        slot = form.slots(row, watched, chart)
        if slot is None:
            announce(f"event '{name}' on an unbounded angle is not compiled")
            return None
        slots.append((slot, direction))
        watched += slot.kind == GAP
    ends = np.cumsum([0] + [len(s.index) for s, _ in slots], dtype=np.int64)

    def entries(field: str, dtype: type) -> np.ndarray:
        return np.array([x for s, _ in slots for x in np.asarray(getattr(s, field)).tolist()],
                        dtype=dtype)  # fmt: skip

    return (
        np.array([s.kind for s, _ in slots], dtype=np.int64),
        ends[:-1],
        ends[1:],
        np.array([s.time for s, _ in slots], dtype=float),
        entries("index", np.int64),
        entries("sign", float),
        entries("bound", float),
        np.array([d for _, d in slots], dtype=float),
    )


#: The most phases whose compiled events :func:`phase_events` keeps for a System (a run with
#: many impacts makes a new mode at each: the time its contact left).
KEPT_PHASES = 256


def phase_events(
    system: System,
    phase: Phase,
    owned: list[tuple[Component, Event]],
    breakpoint: float | None,
    chart_index: np.ndarray | None = None,
    recentre: Distances | None = None,
) -> tuple | None:
    """:func:`compiled_events` of the phase's events (``owned``: the components' events in
    the phase, with their owners), each owner's rows offset by the rows before it
    (:func:`pinext.compiled.rows.row_offsets`). A component's events follow from its mode
    (:meth:`Component.events`), so the arrays are kept per phase's modes, breakpoint and
    chart in the engine's cache (:data:`KEPT_PHASES` of them); each call gets its own copy,
    which the loop may write (a bounce's time and distance, :mod:`pinext.compiled.impacts`)."""
    cache = engine_cache(system, "compiled_events")
    key = (phase.modes, breakpoint, recentre is None)  # (chart_index: fixed per System)
    if key not in cache:
        if len(cache) >= KEPT_PHASES:
            cache.clear()
        offsets = row_offsets(system, phase)
        cache[key] = compiled_events(
            [e for _, e in owned],
            breakpoint,
            [offsets.get(c.name, 0) for c, _ in owned],
            chart_index,
            recentre,
        )
    forms = cache[key]
    return None if forms is None else tuple(a.copy() for a in forms)


def watched_gaps(events: list[Event]) -> FrameRows:
    """The blocks whose gaps the events watch (:class:`Gap`), in the events' order: the
    ``watch`` of the phase's :class:`pinext.compiled.frames.FrameWork`."""
    return FrameRows.stack([e.compiled.block for e in events if isinstance(e.compiled, Gap)])
