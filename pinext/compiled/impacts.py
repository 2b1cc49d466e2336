"""A contact's bounce applied inside the compiled run, where the integrator stopped at it.

A contact's approach event (:class:`pinext.simulation.events.Gap`) whose ``restitution`` is set
(a unilateral frictionless point on a fixed plane: :class:`pinext.contact.ContactComponent`)
ends its segment at every impact on the Python path: the component's action solves the
impulse problem of every engaged row (McClamroch (1986) (40)–(42)), the component and the
others settle, and a new segment starts. When the contact bounces and nothing else takes part,
that is one row, Newton's restitution, and the same phase structure after it: :func:`bounce`
then applies it where the compiled integrator stopped, with the same rule
(:func:`pinext.contact.unilateral.rebounds`) and the same impulse problem
(:func:`pinext.contact.impulse._frictionless` on the contact's row J and the mass matrix of
the compiled CRBA), and the run goes on: :func:`dop853_bouncing` and :func:`radau_bouncing`
restart the integrator there, as a new segment would, in the same compiled call (a call from
Python unboxes the whole phase kernel, tens of microseconds). Anything else goes back to the
component's action:
an approach that is not one (the separation test), a rebound under the Zeno cut (the contact
comes to rest: a new phase), another watched contact within
:data:`pinext.contact.component.GAP_TOLERANCE` of its surface (a simultaneous impact), any
other event of the phase that the jump would move to zero or past it (a stop reached, a
velocity's sign), or an impulse problem without a solution.
"""

from __future__ import annotations

import numpy as np

from ..contact.component import GAP_TOLERANCE
from ..contact.impulse import _frictionless
from ..contact.unilateral import rebounds
from . import dop853 as _dop
from . import radau as _rad
from .crba import crba_from_transforms
from .events import GAP, values_at
from .frames import normal_row
from .jit import COMPILED_ONLY, cached
from .phase import gaps

#: The numbers :func:`bounce` writes for the record: approach velocity [m/s], impulse [N s],
#: and the gap the contact leaves from [m].
VALUES = 3
#: A row of the bounces' record: the output sample of the state after it, the event, VALUES.
ROW = 2 + VALUES


def may_bounce(events: tuple) -> bool:
    """Whether an event is a contact's approach whose bounce the loop may apply
    (:func:`pinext.compiled.events.compiled_events`' flag; :func:`bounce` decides the rest at
    each)."""
    kinds, start, index = events[0].tolist(), events[1].tolist(), events[4]
    return any(kind == GAP and index[j + 1] for kind, j in zip(kinds, start, strict=True))


@cached(**COMPILED_ONLY)
def bounce(P, e, t, y, evs, values):
    """Apply contact event e's bounce at (t, y) if the compiled loop may (module docstring):
    y's velocities become the velocities after it, event e's separation test starts at t
    (its t0 and d0 in ``evs``), ``values`` receives the record's numbers (:data:`VALUES`);
    returns whether it did. Otherwise y and ``evs`` are unchanged."""
    j = evs[1][e]
    if evs[0][e] != GAP or evs[4][j + 1] == 0 or P.momentum or P.lam.size or P.layer.constants.size:
        return False
    restitution, rest_velocity = evs[5][j + 1], evs[6][j + 1]
    nv, n_events = P.damping.size, evs[0].size
    before = np.empty(n_events)
    gaps(P, y)  # the kinematics at the impact (the joint transforms, the watched gaps)
    values_at(P, t, y, evs, before)  # (no reaction nor layer here: the state and the gaps)
    fw = P.frames
    b = evs[4][j]
    for k in range(fw.gap.size):  # another contact on its surface: a simultaneous impact
        if k != b and abs(fw.gap[k]) <= GAP_TOLERANCE:
            return False
    gap = fw.gap[b]
    jac = np.zeros((1, nv))
    normal_row(P.model, fw, fw.watch, b, jac, 0)
    approach = 0.0
    for c in range(nv):
        approach += jac[0, c] * y[nv + c]
    if approach >= 0.0 or not rebounds(restitution, rest_velocity, approach):
        return False
    mass = np.empty((nv, nv))
    crba_from_transforms(P.model, mass)
    for i in range(P.added.size):  # an impulse meets the rotors' own inertia (the System's M)
        mass[i, i] -= P.added[i]
    v = y[nv : 2 * nv].copy()
    impulse = np.zeros(1)
    status, _ = _frictionless(
        mass,
        jac,
        np.full(1, restitution),
        np.zeros(1, dtype=np.bool_),
        np.zeros(1, dtype=np.bool_),
        rest_velocity,
        v,
        impulse,
        np.zeros(1, dtype=np.bool_),
    )
    if status != 0:
        return False
    after = y.copy()
    after[nv : 2 * nv] = v
    t0, d0 = evs[3][e], evs[6][j]
    evs[3][e], evs[6][j] = t, min(gap, 0.0)
    moved = np.empty(n_events)
    values_at(P, t, after, evs, moved)  # (the gaps read q, which the jump keeps)
    for k in range(n_events):  # the jump moves no other event to zero or past it
        if k != e and (abs(moved[k]) <= GAP_TOLERANCE or moved[k] * before[k] < 0.0):
            evs[3][e], evs[6][j] = t0, d0
            return False
    y[nv : 2 * nv] = v
    values[0], values[1], values[2] = approach, impulse[0], gap
    return True


@cached(**COMPILED_ONLY)
def _bounced(P, y, st, it, t_eval, out_t, out_y, evs, maps, count, index):
    """After the integrator stopped at an event (y the state there): its bounce applied
    (:func:`bounce`) while ``maps`` has room, the states before (with ``t_eval``: the dense
    output's samples hold none there) and after it appended to the output, its row of
    ``maps`` (:data:`ROW`) written, and the run set to start again from the state after it at
    the event's time, as a new segment would; whether it did. ``index``: the integrator's
    (_EVENT, _TROOT, _NOUT, _START, _T)."""
    i_event, i_troot, i_nout, i_start, i_t = index
    e, t = it[i_event], st[i_troot]
    if count[0] >= maps.shape[0]:
        return False
    before = y.copy()
    values = np.empty(VALUES)
    if not bounce(P, e, t, y, evs, values):
        return False
    if t_eval.size:
        _dop.record(t, before, out_t, out_y, it, i_nout)
    _dop.record(t, y, out_t, out_y, it, i_nout)
    row = maps[count[0]]
    row[0], row[1] = it[i_nout] - 1, e
    for i in range(VALUES):
        row[2 + i] = values[i]
    count[0] += 1
    it[i_start] = 1
    st[i_t] = t
    return True


@cached()
def dop853_bouncing(
    P, y, t1, hmax, rtol, atol, k, st, it, t_eval, out_t, out_y, g_last, evs, nfev_pause,
    stop_when_stiff, maps, count,
):  # fmt: skip
    """:func:`pinext.compiled.dop853.advance` across the bounces it may apply
    (:func:`_bounced`): after each, the run starts again from the state after it. ``hmax``:
    [the largest step, 1 when it is the rest of the span (no ``max_step``: it shrinks to the
    new rest, as a new segment's would) else 0]. Returns advance's code when it is not a
    bounce applied."""
    m = out_t.size - 2  # room for the states before and after a bounce
    while True:
        code = _dop.advance(
            P, y, t1, hmax[0], rtol, atol, k, st, it, t_eval, out_t[:m], out_y[:m], g_last, evs,
            nfev_pause, stop_when_stiff,
        )  # fmt: skip
        index = (_dop._EVENT, _dop._TROOT, _dop._NOUT, _dop._START, _dop._T)
        if code != _dop.EVENT or not _bounced(
            P, y, st, it, t_eval, out_t, out_y, evs, maps, count, index
        ):
            return code
        if hmax[1] > 0.0:
            hmax[0] = t1 - st[_dop._T]


@cached()
def radau_bouncing(
    P, y, t1, hmax, rtol, atol, f, J, lu_r, piv_r, lu_c, piv_c, Q, y_old, st, it, t_eval,
    out_t, out_y, g_last, evs, nfev_pause, maps, count,
):  # fmt: skip
    """:func:`pinext.compiled.radau.advance` across the bounces it may apply (see
    :func:`dop853_bouncing`; Radau's largest step is ``hmax``)."""
    m = out_t.size - 2
    while True:
        code = _rad.advance(
            P, y, t1, hmax, rtol, atol, f, J, lu_r, piv_r, lu_c, piv_c, Q, y_old, st, it, t_eval,
            out_t[:m], out_y[:m], g_last, evs, nfev_pause,
        )  # fmt: skip
        index = (_rad._EVENT, _rad._TROOT, _rad._NOUT, _rad._START, _rad._T)
        if code != _rad.EVENT or not _bounced(
            P, y, st, it, t_eval, out_t, out_y, evs, maps, count, index
        ):
            return code
