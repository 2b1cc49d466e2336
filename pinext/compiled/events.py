"""The compiled events: the event kinds evaluated in the compiled loop.

A component gives each event's compiled form as data (:attr:`pinext.simulation.component.
Event.compiled`); :func:`compiled_events` lays the forms out as flat arrays, and
:func:`_value` evaluates event e of them at (t, y): the smallest of a group of affine
distances ``min_k s_k (y[i_k] − b_k)`` (DISTANCES: joint stops, the chart's re-centring), the
separation test of a stop just left (LEAVING), the reaction of a held row ``s λ + b``
(REACTION: a lift-off, a friction cone's edge), the gap of a point to a plane (GAP: a
contact's approach, from the kinematics of :mod:`pinext.compiled.frames`), the force of a
compliant layer (LAYER: its lift-off, :mod:`pinext.compiled.layers`; all the reactions and
layer forces of a state come from one right-hand side, :func:`events_at`, and the gaps from the
positions alone when nothing else needs it, :func:`pinext.compiled.phase.gaps`), or a time
``t − t_b`` (TIME: a control breakpoint). What a distance, the separation test and a
reaction's crossing are is written once, in :func:`pinext.simulation.forms.nearest`,
:func:`~pinext.simulation.forms.leaving_distance` and
:func:`~pinext.simulation.forms.reaction`, which the forms' Python functions call too
(:meth:`~pinext.simulation.forms.Distances.value`,
:meth:`~pinext.simulation.forms.Reaction.function`): the Python path evaluates the same
statements. The integrators (:mod:`pinext.compiled.dop853`, :mod:`pinext.compiled.radau`)
locate the roots and never look inside an event.
"""

from __future__ import annotations

import numpy as np

from ..simulation.chart import CHART_RADIUS
from ..simulation.component import (
    Distances,
    Event,
    FrameRows,
    Gap,
    LayerForce,
    Leaving,
    Reaction,
)
from ..simulation.forms import leaving_distance, nearest, reaction
from .notice import announce
from .phase import gaps, rhs
from .spatial import helper, kernel

#: Event kinds.
DISTANCES, TIME, REACTION, LEAVING, GAP, LAYER = 0, 1, 2, 3, 4, 5


@kernel
def _event_value(e, t, y, ev_kind, ev_start, ev_stop, ev_time, ev_index, ev_sign, ev_bound):
    """An event function that reads the state only: DISTANCES (the nearest stop), TIME, or
    LEAVING (the separation test; t0 in ev_time, d0 in the bound of its second entry)."""
    if ev_kind[e] == TIME:
        return t - ev_time[e]
    j0 = ev_start[e]
    if ev_kind[e] == LEAVING:
        d = ev_sign[j0] * (y[ev_index[j0]] - ev_bound[j0])
        rate = ev_sign[j0] * y[ev_index[j0 + 1]]
        return leaving_distance(d, t, ev_time[e], ev_bound[j0 + 1], rate)
    return nearest(y, ev_index, ev_sign, ev_bound, j0, ev_stop[e])


@kernel
def _value(P, e, t, y, evs):
    """Event e at (t, y), the phase's reactions ``P.lam`` and watched gaps ``P.frames.gap``
    already evaluated there: a REACTION is sign · λ + bound; a GAP the gap, or for a contact
    that left its surface at t0 (in ev_time) from d0 (its bound) the separation test of
    :func:`pinext.simulation.forms.leaving_distance`; the others read the state."""
    kind = evs[0][e]
    j = evs[1][e]
    if kind == REACTION:
        return reaction(P.lam, evs[4][j], evs[5][j], evs[6][j])
    if kind == LAYER:
        return P.layer.out[0]
    if kind == GAP:
        gap, t0 = P.frames.gap[evs[4][j]], evs[3][e]
        if t0 == -np.inf:
            return gap
        return leaving_distance(gap, t, t0, evs[6][j], np.nan)
    return _event_value(e, t, y, evs[0], evs[1], evs[2], evs[3], evs[4], evs[5], evs[6])


@helper
def _reads(kind):
    """What an event of this kind reads besides the state: 2 the right-hand side (a REACTION's
    reaction, a LAYER's force), 1 the positions (a GAP's gap), 0 nothing."""
    if kind == REACTION or kind == LAYER:
        return 2
    return 1 if kind == GAP else 0


@helper
def _evaluate(P, t, y, reads, tmp):
    """The right-hand side at (t, y) into tmp (``reads`` 2), or the watched gaps alone (1)."""
    if reads == 2:
        rhs(P, t, y, tmp)
    elif reads == 1:
        gaps(P, y)


@kernel
def _event(P, e, t, y, evs, tmp):
    """Event e at (t, y) (:func:`_value`), once what it reads is evaluated (:func:`_reads`):
    the right-hand side (into tmp) for a REACTION or a LAYER, the positions for a GAP."""
    _evaluate(P, t, y, _reads(evs[0][e]), tmp)
    return _value(P, e, t, y, evs)


@kernel
def events_at(P, t, y, evs, out, tmp):
    """Every event at (t, y) into out (:func:`_value`), with one right-hand side for all the
    REACTIONs and LAYERs (a stuck joint's friction cone has two, every held row one) and the
    GAPs with them, or the positions alone for GAPs without them."""
    reads = 0
    for e in range(out.size):
        reads = max(reads, _reads(evs[0][e]))
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
    recentre: np.ndarray | None = None,
) -> tuple | None:
    """The events' compiled forms (:attr:`Event.compiled`, then the breakpoint) as the arrays
    of :mod:`pinext.compiled.dop853`, or None when one has none (the reason said once).
    ``offsets[e]``: the first row of event e's owner among the phase's rows
    (:func:`pinext.compiled.rows.row_offsets`; added to a :class:`Reaction`'s row, which is
    the owner's own).
    ``chart_index``: the chart's map from public to internal state indices (:attr:`Chart.index`;
    None: the same); an event on an entry without an internal coordinate is not compiled.

    Event e reads entries ``start[e]:stop[e]`` of (index, sign, bound): the stops of a
    DISTANCES event; the stop of a LEAVING event, then (its velocity's index, 0, d0), with t0
    in ``time[e]``; the row of a REACTION in ``index`` (g = sign · λ + bound); the watched
    block of a GAP in ``index`` (:func:`watched_gaps`), d0 in ``bound`` and t0 in ``time[e]``
    (−∞: no separation test), then (1 if the loop may apply its bounce else 0, restitution,
    rest velocity: :mod:`pinext.compiled.impacts`); a TIME event its time in ``time[e]``."""
    kind: list[int] = []
    start: list[int] = []
    stop: list[int] = []
    time: list[float] = []
    index: list[int] = []
    sign: list[float] = []
    bound: list[float] = []
    direction: list[float] = []
    for e, event in enumerate(events):
        form = event.compiled
        start.append(len(index))
        time.append(0.0)
        if isinstance(form, (Distances, Leaving)) and chart_index is not None:
            form = _internal(form, chart_index)
            if form is None:
                announce(f"event '{event.name}' on an unbounded angle is not compiled")
                return None
        if isinstance(form, Distances):
            kind.append(DISTANCES)
            index += np.asarray(form.entry, dtype=np.int64).tolist()
            sign += np.asarray(form.sign, dtype=float).tolist()
            bound += np.asarray(form.bound, dtype=float).tolist()
        elif isinstance(form, Leaving):
            kind.append(LEAVING)
            index += [form.entry, form.rate_entry]
            sign += [form.sign, 0.0]
            bound += [form.bound, form.d0]
            time[-1] = form.t0
        elif isinstance(form, Reaction):
            kind.append(REACTION)
            index.append(form.row + (offsets[e] if offsets is not None else 0))
            sign.append(form.sign)
            bound.append(form.bound)
        elif isinstance(form, LayerForce):
            kind.append(LAYER)
        elif isinstance(form, Gap):  # the watched blocks, in the events' order (watched_gaps)
            kind.append(GAP)
            index += [kind[:-1].count(GAP), int(form.restitution > 0.0)]
            sign += [1.0, form.restitution]
            bound += [form.d0, form.rest_velocity]
            time[-1] = form.t0
        else:
            announce(f"event '{event.name}' has no compiled form")
            return None
        stop.append(len(index))
        direction.append(float(event.direction))
    if recentre is not None and recentre.size:  # the chart's event (after the components')
        kind.append(DISTANCES)
        start.append(len(index))
        time.append(0.0)
        for i in recentre.tolist():  # |φ_i| reaches CHART_RADIUS: R − φ_i or φ_i + R
            index += [i, i]
            sign += [-1.0, 1.0]
            bound += [CHART_RADIUS, -CHART_RADIUS]
        stop.append(len(index))
        direction.append(-1.0)
    if breakpoint is not None:
        kind.append(TIME)
        start.append(len(index))
        stop.append(len(index))
        time.append(breakpoint)
        direction.append(1.0)
    return (
        np.array(kind, dtype=np.int64),
        np.array(start, dtype=np.int64),
        np.array(stop, dtype=np.int64),
        np.array(time, dtype=float),
        np.array(index, dtype=np.int64),
        np.array(sign, dtype=float),
        np.array(bound, dtype=float),
        np.array(direction, dtype=float),
    )


def _internal(form: Distances | Leaving, index: np.ndarray) -> Distances | Leaving | None:
    """The event's form on the internal state (``index``: public -> internal), or None."""
    if isinstance(form, Distances):
        entry = index[np.asarray(form.entry, dtype=np.int64)]
        return None if np.any(entry < 0) else form._replace(entry=entry)
    stop, rate = int(index[form.entry]), int(index[form.rate_entry])
    return None if min(stop, rate) < 0 else form._replace(entry=stop, rate_entry=rate)


def watched_gaps(events: list[Event]) -> FrameRows:
    """The blocks whose gaps the events watch (:class:`Gap`), in the events' order: the
    ``watch`` of the phase's :class:`pinext.compiled.frames.FrameWork`."""
    return FrameRows.stack([e.compiled.block for e in events if isinstance(e.compiled, Gap)])
