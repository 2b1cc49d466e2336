"""The forms of a component's events: plain data that the compiled path
(:mod:`pinext.compiled.events`) evaluates without calling back into Python, and what each
kind of event is, written once for both paths.

A component gives an event's form beside its Python function
(:attr:`pinext.simulation.component.Event.compiled`): the nearest of several stops
(:class:`Distances`), the separation test of a stop just left (:class:`Leaving`), the
reaction of a held row (:class:`Reaction`), a point's approach gap to a plane (:class:`Gap`),
a compliant layer's force (:class:`LayerForce`), or a control breakpoint
(:class:`Breakpoint`). Each form says what it is (its Python function ``value``, or
:meth:`Reaction.function`) and where it sits in the compiled events' arrays (its
:class:`Slots`); :func:`event_value` is the one dispatch on an event's kind that the kernels
run, on the same statements (:func:`nearest_entry`, :func:`leaving_distance`,
:func:`reaction`), which are plain Python that Numba also compiles where a kernel calls them
(``numba.extending.register_jitable``). A new kind of event is written here and nowhere else.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from numba.extending import register_jitable

from .forms import FrameRows


class Distances(NamedTuple):
    """``g(t, x) = min_k sign[k] (x[entry[k]] − bound[k])``: the nearest of several joint
    stops (``entry``: indices into the public state). :meth:`value` is the event's function
    on the Python path (:func:`nearest_entry`, as the compiled events evaluate it)."""

    entry: np.ndarray
    sign: np.ndarray
    bound: np.ndarray

    def value(self, t: float, x: np.ndarray) -> float:
        """g(t, x)."""
        return float(nearest_entry(x, self.entry, self.sign, self.bound, 0, self.entry.size)[1])

    @classmethod
    def within(cls, entry: np.ndarray, radius: float) -> Distances:
        """``g = radius − max_k |x[entry[k]]|``: the coordinates stay within ±radius (the
        stops ``radius − x_k`` and ``x_k + radius``)."""
        entry = np.repeat(np.asarray(entry, dtype=np.int64), 2)
        sign = np.tile([-1.0, 1.0], entry.size // 2)
        return cls(entry, sign, -sign * radius)

    def nearest(self, x: np.ndarray) -> int:
        """k of the nearest stop at x (the one whose distance is g): the stop an event
        action acts on."""
        return int(nearest_entry(x, self.entry, self.sign, self.bound, 0, self.entry.size)[0])

    def slots(self, row: int, watched: int, chart: np.ndarray | None) -> Slots | None:
        """Its :class:`Slots`: the stops (on the internal state; None where a stop's entry
        has no internal coordinate)."""
        entry = _on_chart(self.entry, chart)
        if entry is None:
            return None
        return Slots(DISTANCES, 0.0, entry, self.sign, self.bound)


#: A row that left its surface and stays within this distance [rad or m] of where it left,
#: at a rate below :data:`REST_SPEED`, rests there, held by other rows (rounding, not motion).
REST_TOLERANCE = 1e-12
#: The rate [rad/s or m/s] below which such a row rests: the velocity a row held by others
#: (a gripper joint coupled by ``<mimic>`` to one on its stop) keeps from their Baumgarte
#: stabilisation, ~1e-12 (the same bound as a joint at rest on its limit at a run's start).
REST_SPEED = 1e-9


class Leaving(NamedTuple):
    """``g(t, x) = (sign (x[entry] − bound) − d0) / (t − t0)²`` (1 at t ≤ t0, and where the
    row rests where it left within :data:`REST_TOLERANCE` and :data:`REST_SPEED`
    ``x[rate_entry]``): the separation test of a row that left its stop at t0
    (:func:`leaving_distance`); :meth:`value` is the event's function on the Python path."""

    entry: int
    sign: float
    bound: float
    t0: float
    d0: float
    rate_entry: int

    def value(self, t: float, x: np.ndarray) -> float:
        """g(t, x)."""
        return left_stop(x, self.entry, self.sign, self.bound, self.rate_entry, self.d0, t, self.t0)

    def slots(self, row: int, watched: int, chart: np.ndarray | None) -> Slots | None:
        """Its :class:`Slots`: (entry, sign, bound), then (rate_entry, 0, d0); t0."""
        entry = _on_chart(np.array([self.entry, self.rate_entry]), chart)
        if entry is None:
            return None
        return Slots(LEAVING, self.t0, entry, (self.sign, 0.0), (self.bound, self.d0))


@register_jitable
def nearest_entry(y, index, sign, bound, start, stop):
    """(k, g): ``g = min_k sign[k] (y[index[k]] − bound[k])`` over k in [start, stop), the
    distance to the nearest of several stops (:class:`Distances`), and its k − start."""
    g, nearest = np.inf, 0
    for k in range(start, stop):
        d = sign[k] * (y[index[k]] - bound[k])
        if d < g:
            g, nearest = d, k - start
    return nearest, g


@register_jitable
def left_stop(y, entry, sign, bound, rate_entry, d0, t, t0):
    """:func:`leaving_distance` of a stop ``sign (y[entry] − bound)`` left at t0 from d0, its
    rate ``sign y[rate_entry]`` (:class:`Leaving`)."""
    distance = sign * (y[entry] - bound)
    return leaving_distance(distance, t, t0, d0, sign * y[rate_entry])


@register_jitable
def leaving_distance(distance, t, t0, d0, rate):
    """The impact event function of a row that left its surface at t0 from the distance d0
    (≤ 0: zero, or the rounding error of the located impact below the surface); ``rate`` its
    φ̇, or NaN when the caller has none.

    .. math::

        g(t) = \\frac{\\phi(t) - d_0}{(t - t_0)^2}, \\qquad g(t_0) = 1

    A row that leaves its surface (bounce, separation after another row's impact, lift-off)
    starts with φ = d0 and φ̇ ≥ 0: ``g = φ`` would start at zero (or a rounding error on
    either side), and the root finder takes ``g(t₀) = 0`` for a root when a short flight
    ends within the first step, or misses the return when ``g(t₀)`` is a hair below zero.
    Divided by ``(t − t₀)²`` (positive), the function has the same roots after t0, starts
    positive (the limit ``φ̇/(t − t₀)`` or ``φ̈/2`` of a leaving row), and its next downward
    zero crossing is the next impact, with φ̇ < 0: the separation test, not a tolerance.
    A row that stays where it left, at rest (``rate`` given; within :data:`REST_TOLERANCE`
    and :data:`REST_SPEED`: held there by other rows, as a joint stopped on its
    limit by a sticking contact, by its stuck joint friction or by the other finger's stop
    through a ``<mimic>`` coupling), has not come back either: ``g = 1`` there too. Within
    that band φ − d0 is rounding (a row that left 1e-11 s ago at 4e-8 m/s has moved 4e-19
    m), so a moving row there is judged by its rate, ``g = φ̇/(t − t₀)``: positive while it
    leaves, negative as soon as it turns back into its surface, where the event fires (an
    impact at the band's speed); a row that turned back unseen inside the band would start
    its next segment below zero and never fire. The one statement of the separation test,
    for the Python path's events and the compiled ones (:mod:`pinext.compiled.events`).
    """
    if t <= t0:
        return 1.0
    if not math.isnan(rate) and abs(distance - d0) <= REST_TOLERANCE:
        if abs(rate) <= REST_SPEED:  # held where it left by other rows
            return 1.0
        return rate / (t - t0)
    return (distance - d0) / (t - t0) ** 2


@register_jitable
def approach(gap, t, t0, d0):
    """A contact's impact event: its approach gap, or for a contact that left its surface at
    t0 from the gap d0 the separation test :func:`leaving_distance` of it (t0 = −∞: none).
    The Python path's gap events and the compiled GAP kind (:func:`event_value`) call it."""
    if t0 == -np.inf:
        return gap
    return leaving_distance(gap, t, t0, d0, np.nan)


class Gap(NamedTuple):
    """``g(t, x) = φ`` with φ the residual of ``block`` (a one-row :class:`FrameRows`: the
    approach gap of a point to a plane), or, for a row that left its surface at ``t0`` from
    the gap ``d0``, :func:`leaving_distance` of it (the separation
    test): the compiled form of a contact's approach event.

    ``restitution`` > 0 lets the compiled loop apply the contact's bounce itself
    (:mod:`pinext.compiled.impacts`: a unilateral frictionless point on a fixed surface, Newton's
    coefficient and the Zeno cut ``rest_velocity`` as the component's impact uses them); 0
    leaves every impact to the component's action."""

    block: FrameRows
    t0: float = -np.inf
    d0: float = 0.0
    restitution: float = 0.0
    rest_velocity: float = 0.0

    def slots(self, row: int, watched: int, chart: np.ndarray | None) -> Slots:
        """Its :class:`Slots`: (its block among the ``watched`` ones, 1, d0), then (1 if the
        loop may apply its bounce else 0, restitution, rest velocity); t0 (−∞: no separation
        test). The events' blocks are watched in the events' order
        (:func:`pinext.compiled.events.watched_gaps`)."""
        bounce = int(self.restitution > 0.0)
        return Slots(
            GAP, self.t0, (watched, bounce), (1.0, self.restitution), (self.d0, self.rest_velocity)
        )


class LayerForce(NamedTuple):
    """``g(t, x) = F``, the force of the phase's compliant layer (:class:`Layer`): the
    compiled form of its lift-off event."""

    def slots(self, row: int, watched: int, chart: np.ndarray | None) -> Slots:
        """Its :class:`Slots`: the kind alone."""
        return Slots(LAYER)


class Reaction(NamedTuple):
    """``g(t, x, step) = sign · λ + bound`` with λ the reaction of the owning component's
    constraint row ``row`` (its rows in the order of :meth:`Component.compiled_rows`): a
    lift-off (λ falls through 0), or a friction cone's edge (``F_c ± λ``). The compiled path
    adds the rows of the components before it in the phase
    (:func:`pinext.compiled.rows.row_offsets`); :meth:`function` is the event's function on
    the Python path."""

    row: int
    sign: float = 1.0
    bound: float = 0.0

    def function(self, owner: str) -> Callable[[float, np.ndarray, Any], float]:
        """``g(t, x, step)`` of the component named ``owner`` (:func:`reaction`)."""

        def g(t: float, x: np.ndarray, step: Any) -> float:
            lam = step.force(owner, self.row + 1)
            return float(reaction(lam, self.row, self.sign, self.bound))

        return g

    def slots(self, row: int, watched: int, chart: np.ndarray | None) -> Slots:
        """Its :class:`Slots`: (its row among the phase's, ``row`` being its owner's first,
        sign, bound)."""
        return Slots(REACTION, 0.0, (row + self.row,), (self.sign,), (self.bound,))


@register_jitable
def reaction(lam, row, sign, bound):
    """``sign · λ[row] + bound``: a lift-off (λ falls through zero) or a friction cone's
    edge (:class:`Reaction`)."""
    return sign * lam[row] + bound


class GearTorque(NamedTuple):
    """``g(t, x, step) = Σ_k c_k z[entry_k] − inertia · a[dof]``: the torque M = τ_s − J N q̈
    entering a lossy gear (Vukobratović & Potkonjak, after (20.69)), its motor's active torque
    τ_s affine in ``z = [x without the work totals, u, 1]`` (a linear actuator, its input
    clipped where its amplifier clips it) and its rotor's inertia through the joint's
    acceleration: the compiled form of a moving gear's power-flow event (on the state of a
    Euclidean model; the drive's own function is the Python path's)."""

    entry: np.ndarray  # int64: indices into z
    coefficient: np.ndarray  # c_k
    dof: int
    inertia: float  # J N [kg.m^2]

    def slots(self, row: int, watched: int, chart: np.ndarray | None) -> Slots | None:
        """Its :class:`Slots`: (entry_k, c_k, 0) for each term, then (dof, inertia, 0); None
        on a chart (z is the Euclidean state's)."""
        if chart is not None:
            return None
        index = np.r_[self.entry, self.dof].astype(np.int64)
        return Slots(GEAR, 0.0, index, np.r_[self.coefficient, self.inertia], np.zeros(index.size))


@register_jitable
def gear_torque(z, acc, index, sign, start, stop):
    """:class:`GearTorque`'s value from the slots ``start:stop`` (the last the acceleration's)."""
    value = 0.0
    for k in range(start, stop - 1):
        value += sign[k] * z[index[k]]
    return value - sign[stop - 1] * acc[index[stop - 1]]


class GearHold(NamedTuple):
    """``g(t, x, step)``: a stuck lossy gear's slip test, its holding torque λ (the reaction of
    its owner's row ``row``) against the bounds ``[lo, hi]`` of the ends ``η' N τ_s`` and
    ``N τ_s / η''`` (Vukobratović & Potkonjak, after (20.69)), τ_s affine in z as in
    :class:`GearTorque`: ``λ − lo`` (``low``) or ``hi − λ``, each with a slack of 1e-12 of
    the bounds (:func:`gear_hold`; the drive's own function is the Python path's)."""

    row: int
    entry: np.ndarray  # int64: indices into z of τ_s's terms
    coefficient: np.ndarray
    ends: tuple[float, float]  # (η' N, N / η'')
    low: bool

    def slots(self, row: int, watched: int, chart: np.ndarray | None) -> Slots | None:
        """Its :class:`Slots`: (its row among the phase's, ±1 low/high, η' N), then
        (entry_k, c_k, N / η'' for the first, 0 after); None on a chart."""
        if chart is not None:
            return None
        index = np.r_[row + self.row, self.entry].astype(np.int64)
        sign = np.r_[1.0 if self.low else -1.0, self.coefficient]
        bound = np.r_[self.ends, np.zeros(self.entry.size - 1)]
        return Slots(GEAR_HOLD, 0.0, index, sign, bound)


@register_jitable
def gear_hold(lam, z, index, sign, bound, start, stop):
    """:class:`GearHold`'s value from the slots ``start:stop``."""
    tau = 0.0
    for k in range(start + 1, stop):
        tau += sign[k] * z[index[k]]
    a, b = bound[start] * tau, bound[start + 1] * tau
    lo, hi = min(a, b), max(a, b)
    slack = 1e-12 * (1.0 + abs(hi) + abs(lo))
    held = lam[index[start]]
    return held - lo + slack if sign[start] > 0.0 else hi - held + slack


class Breakpoint(NamedTuple):
    """``g(t, x) = t − time``: a control breakpoint (a schedule's corner, a sample)."""

    time: float

    def value(self, t: float, x: np.ndarray) -> float:
        """g(t, x)."""
        return t - self.time

    def slots(self, row: int, watched: int, chart: np.ndarray | None) -> Slots:
        """Its :class:`Slots`: the time."""
        return Slots(TIME, self.time)


#: An event's compiled form: what :attr:`pinext.simulation.component.Event.compiled` holds.
EventForm = Distances | Leaving | Reaction | Gap | LayerForce | GearTorque | GearHold | Breakpoint

#: The kinds of compiled event (:attr:`Slots.kind`; :func:`event_value`).
DISTANCES, TIME, REACTION, LEAVING, GAP, LAYER, GEAR, GEAR_HOLD = 0, 1, 2, 3, 4, 5, 6, 7


class Slots(NamedTuple):
    """An event form's entries in the compiled events' arrays
    (:func:`pinext.compiled.events.compiled_events`): its kind, a time, and its entries of
    (index, sign, bound), as :func:`event_value` reads them. Every event form gives its own
    (``form.slots(row, watched, chart)``: ``row`` the first constraint row of its owner
    among the phase's, ``watched`` the number of :class:`Gap` events before it, ``chart``
    the map from public to internal state indices or None; None: not compiled on that
    chart)."""

    kind: int
    time: float = 0.0
    index: Any = ()
    sign: Any = ()
    bound: Any = ()


def _on_chart(entry: np.ndarray, chart: np.ndarray | None) -> np.ndarray | None:
    """The state indices ``entry`` on the internal state (``chart``: public -> internal,
    None: the same), or None where one has no internal coordinate (an unbounded angle)."""
    if chart is None:
        return np.asarray(entry, dtype=np.int64)
    internal = chart[np.asarray(entry, dtype=np.int64)]
    return None if np.any(internal < 0) else internal


@register_jitable
def event_value(kind, t, y, time, index, sign, bound, start, stop, lam, layer, gaps, z, acc):
    """The value at (t, y) of a compiled event of ``kind`` whose entries of (index, sign,
    bound) are ``start:stop`` and whose time is ``time`` (its :class:`Slots`), the phase's
    reactions ``lam``, its layer's force ``layer[0]``, its watched gaps ``gaps``, its
    variables ``z`` and accelerations ``acc`` having been evaluated there
    (:func:`event_reads`): what each kind of compiled event is, said once. DISTANCES
    :func:`nearest_entry`; TIME ``t − time``; REACTION :func:`reaction`; LAYER the force; GAP
    :func:`approach`; LEAVING the separation test of a stop (:func:`left_stop`); GEAR
    :func:`gear_torque`; GEAR_HOLD :func:`gear_hold`."""
    if kind == TIME:
        return t - time
    if kind == GEAR:
        return gear_torque(z, acc, index, sign, start, stop)
    if kind == GEAR_HOLD:
        return gear_hold(lam, z, index, sign, bound, start, stop)
    if kind == REACTION:
        return reaction(lam, index[start], sign[start], bound[start])
    if kind == LAYER:
        return layer[0]
    if kind == GAP:
        return approach(gaps[index[start]], t, time, bound[start])
    if kind == LEAVING:
        return left_stop(
            y, index[start], sign[start], bound[start], index[start + 1], bound[start + 1], t, time
        )
    return nearest_entry(y, index, sign, bound, start, stop)[1]


@register_jitable
def event_reads(kind):
    """What an event of ``kind`` reads besides the state: 2 the right-hand side (a
    REACTION's reaction, a LAYER's force, a GEAR's accelerations, a GEAR_HOLD's reaction),
    1 the positions (a GAP's gap), 0 nothing."""
    if kind == REACTION or kind == LAYER or kind == GEAR or kind == GEAR_HOLD:
        return 2
    return 1 if kind == GAP else 0
