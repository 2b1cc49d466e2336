"""When a phase runs compiled, and the Python-side driver of the compiled integrators.

:func:`phase_kernel` decides, phase by phase, whether :func:`pinext.simulate` may hand the
phase to compiled code: every joint of the model is among :data:`pinext.compiled.model.
JOINT_CODES`, its integrators' chart is global or anchored with rotation vectors
(:class:`pinext.simulation.chart.Angles`; the state indices of rows and events are mapped to
it), the phase is linear (:func:`pinext.simulation.linear.identify`) or has no component terms
at all, its rows (if any) have a compiled form (:meth:`Component.compiled_rows`:
:class:`JointRows` with constant coefficients — joints on their stops, mimic couplings — or
:class:`FrameRows` — loop closures, contacts with fixed planes; several components may give
rows, :mod:`pinext.compiled.rows`), the inputs are a constant or a
:class:`~pinext.simulation.controls.Schedule`, a :class:`pinext.control.JointPD` or
:class:`pinext.control.ComputedTorque` (joint torques on one-DOF joints), or a law
sampled at a control period (:class:`~pinext.simulation.sampling.HeldControl`: a constant
between samples, see :mod:`pinext.compiled.sampled`), and every event of the phase has a
compiled form (:attr:`Event.compiled`). Otherwise the phase runs on the Python path, and
pinext says once per process why (which joint, component or event); a continuous control law
written in Python silently takes the Python path, which calls it at every evaluation.
``PINEXT_NO_COMPILED=1`` forces the Python path.

:func:`solve` runs the compiled DOP853 (:mod:`pinext.compiled.dop853`) or Radau
(:mod:`pinext.compiled.radau`) with the interface of :func:`pinext.simulation.dop853.solve`
and the same kind of result, the phase handed over as one pointer (:mod:`.struct`).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exceptions import InvalidParameter, UnsupportedModel
from ..simulation.caches import cache as engine_cache
from ..simulation.chart import angles
from ..simulation.component import Event, FrameRows, JointRows, Phase, overrides
from ..simulation.controls import Schedule, kernel_form
from ..simulation.linear import LinearForm, _own_part, identify
from . import dop853 as _dop
from . import frames as _frames
from . import layers as _layers
from . import radau as _rad
from . import sampled as _sampled
from .events import compiled_events, watched_gaps
from .laws import cartesian_law, sample_torques
from .model import pack
from .notice import announce, compiling_notice
from .phase import CONSTANT, HOLD, LINEAR, PhaseKernel
from .rows import fold, hybrid_fields, inertia_fields, phase_rows
from .struct import view

if TYPE_CHECKING:
    from ..simulation.chart import Chart
    from ..simulation.system import System

#: The methods :func:`solve` runs in compiled code.
METHODS = ("DOP853", "Radau")
#: Seconds a first (compiling) call may take before pinext says what it is compiling.
NOTICE_AFTER = 1.0
_warm: set[str] = set()  # the methods whose compiled kernels have run in this process
_MESSAGES = {
    _dop.FAILED_SMALL: "step size becomes too small",
    _dop.FAILED_NAN: "non-finite state or derivative",
}


def enabled() -> bool:
    """Whether the compiled path may run (``PINEXT_NO_COMPILED`` unset or 0)."""
    return os.environ.get("PINEXT_NO_COMPILED", "0") in ("", "0")


#: Wall time [s] between two pauses of the compiled loop for the progress bar, below which
#: the evaluations between pauses grow (a short run returns to Python a few times only).
BAR_INTERVAL = 0.05

OUTPUT_CAPACITY = 4096  # samples of the loop's output buffer (a step's rest comes next)

#: Evaluations before the compiled loop's first pause for the progress bar (a few
#: milliseconds), and the fewest between two pauses.
FIRST_PAUSE, FEWEST_PAUSE = 2000, 250


def _packed(system: System):
    """The System's packed model (in the engine's cache), or None with the reason announced."""
    cache = engine_cache(system, "compiled")
    if "model" not in cache:
        try:
            chart = angles(system)  # with rotation vectors the kernels read the public q
            flat = chart is not None and not chart.rotations
            cache["model"] = pack(system.model, angles=not system.euclidean and flat)
        except UnsupportedModel as exc:
            cache["model"] = None
            announce(str(exc))
    return cache["model"]


def _form(
    system: System, phase: Phase, rows: frozenset[str], replaced: frozenset[str] = frozenset()
) -> LinearForm | None:
    """The components' linear form in the phase (a zero form when they add nothing), the
    components ``rows`` (whose rows run compiled) and ``replaced`` (a compiled layer) apart
    (:func:`pinext.simulation.linear.identify`)."""
    hooks = ("effort", "derivative", "power", "mechanism")
    if system.nx == 2 * system.model.nv + 2 and not any(
        overrides(c, h) for c in system.components for h in hooks
    ):
        m = system.nx - 2 + system.n_inputs + 1
        return LinearForm(np.zeros((system.model.nv, m)), np.array([m - 1]), np.zeros((2, 1, 1)))
    cache = engine_cache(system, "linear_forms")
    key = (phase.structure, rows, replaced) if rows or replaced else phase.structure
    if key not in cache:
        cache[key] = identify(system, phase, rows, replaced)
    return cache[key]


#: Each run's compiled Cartesian law, by the run's own law object (the ``(t, x)`` wrapper
#: :func:`~pinext.simulation.controls.checked_control` makes): built once a run, for each
#: segment's kernel and the recorder, and gone with the run.
_CARTESIAN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _cartesian(law: Any, model: Any) -> Any:
    """:func:`cartesian_law` of the law's controller on ``model``, once per law object."""
    try:
        built_on, form = _CARTESIAN[law]
    except (KeyError, TypeError):  # (an object without weak references: built each time)
        built_on = None
    if built_on is not model:
        form = cartesian_law(getattr(law, "controller", None), model)
        try:
            _CARTESIAN[law] = (model, form)
        except TypeError:
            pass
    return form


def law_inputs(system: System, law: Any, t: np.ndarray, x: np.ndarray) -> np.ndarray | None:
    """The inputs of a built-in law that the kernels evaluate (a
    :class:`pinext.control.cartesian.CartesianPD`) at each recorded sample, (N, n_inputs),
    in one compiled loop; None for any other law (the recorder then calls it)."""
    if not enabled() or not system.euclidean or not system.torque_inputs:
        return None
    form = _cartesian(law, system.model)
    packed = None if form is None else _packed(system)
    if form is None or packed is None:
        return None
    out = np.empty((t.size, system.model.nv))
    sample_torques(packed, form, np.ascontiguousarray(t), np.ascontiguousarray(x), out)
    return out


def _inputs(law: Any, system: System, chart: Chart) -> dict[str, Any] | None:
    """The compiled form of the control law as :class:`PhaseKernel` fields, or None: a
    :class:`pinext.control.JointPD` to a constant or a Schedule on one-DOF joints (joint
    torques, no gravity compensation: its ``kernel_form``) or a
    :class:`pinext.control.ComputedTorque` likewise on a Euclidean model (its PD terms the
    commanded acceleration of a compiled RNEA: its ``kernel_form``), evaluated in
    the right-hand side or, held at a control period, at each sample inside the compiled loop;
    a constant or a :class:`Schedule` of the inputs (a law held at a period is a constant
    that the loop's samples overwrite)."""
    n, model = system.n_inputs, system.model
    period = getattr(law, "period", None)  # a HeldControl: its law is the controller's
    pd = terms = None
    if system.torque_inputs and n == model.nv and not chart.momentum:
        controller = getattr(law.law if period else law, "controller", None)
        form = kernel_form(controller, model)
        if form is not None and form.kind == "joint_pd":
            if form.terms is None or system.euclidean:  # (computed torque: an RNEA on q)
                pd, terms = (form.reference, form.kp, form.kd), form.terms
    cartesian = None
    if system.torque_inputs and n == model.nv and system.euclidean and not period:
        cartesian = _cartesian(law, model)
    if cartesian is not None:
        return dict(
            u_kind=CONSTANT, u_times=np.zeros(1), u_values=np.zeros((1, n)), cartesian=cartesian
        )
    if pd is None:
        schedule = law if isinstance(law, Schedule) else getattr(law, "schedule", None)
        if isinstance(schedule, Schedule):
            kind = HOLD if schedule.kind == "zoh" else LINEAR
            values = np.asarray(schedule.values, dtype=float).reshape(schedule.times.size, n)
            return dict(u_kind=kind, u_times=schedule.times, u_values=values)
        value = getattr(law, "value", None)
        if value is not None:
            values = np.asarray(value, dtype=float).reshape(1, n)
            return dict(u_kind=CONSTANT, u_times=np.zeros(1), u_values=values)
        return None
    reference, kp, kd = pd
    if reference.kind == "constant":
        kind, times, values = CONSTANT, np.zeros(1), reference.value.reshape(1, model.nq)
    else:
        ref = reference.schedule
        kind, times, values = HOLD if ref.kind == "zoh" else LINEAR, ref.times, ref.values
    pd_q = np.full(model.nv, -1, dtype=np.int64)
    for joint in model.joints[1:]:
        if joint.nq == 1 and joint.nv == 1 and (kp[joint.idx_v] or kd[joint.idx_v]):
            pd_q[joint.idx_v] = joint.idx_q
    fields = dict(
        u_kind=kind,
        u_times=times,
        u_values=np.asarray(values, dtype=float).reshape(times.size, model.nq),
        pd_q=pd_q,
        pd_kp=np.ascontiguousarray(kp, dtype=float),
        pd_kd=np.ascontiguousarray(kd, dtype=float),
        pd_ref=np.zeros((2, model.nq)),
    )
    if terms is not None:
        fields.update(pd_terms=terms, pd_accel=np.zeros(model.nv))
    if period:  # held: the torques of the last sample (taken in Python at the segment's start)
        fields.update(pd_held=True, pd_u=np.array(law.value, dtype=float), pd_period=period)
    return fields


def phase_kernel(
    system: System, phase: Phase, chart: Chart, law: Any, events: list[Event] | None = None
) -> PhaseKernel | None:
    """The compiled right-hand side of the phase, or None (the reason said once). The state
    is the chart's internal one: the public state of a Euclidean model, the angle chart's of a
    flat one (:class:`pinext.simulation.chart.Angles`); anchored charts are not compiled.

    The phase's part is built once per structure of its modes (:attr:`Phase.structure`) and
    kept in the engine's cache; each segment adds the law's inputs and the chart's anchor.
    ``events``: the components' events in the phase, when the caller has them already."""
    if not enabled() or (chart.angles is None and not system.euclidean) or system.imposing:
        return None  # (Pinocchio's tangent chart, for planar joints, is not compiled)
    rotating = chart.angles is not None and chart.angles.rotations
    if rotating and chart.momentum:
        announce("the momentum form on a model with quaternions is not compiled")
        return None
    cache = engine_cache(system, "phase_kernels")
    key = (phase.structure, chart.momentum)
    if key not in cache:
        if events is None:
            events = [e for c in system.components for e in c.events(phase.get(c.name))]
        cache[key] = _phase_part(system, phase, chart, events)
    kernel = cache[key]
    inputs = None if kernel is None else _inputs(law, system, chart)
    if kernel is None or inputs is None:  # a control law written in Python: the Python path
        return None
    return kernel._replace(
        u_kind=inputs.pop("u_kind"),
        u_times=np.ascontiguousarray(inputs.pop("u_times"), dtype=float),
        u_values=np.array(inputs.pop("u_values"), dtype=float),  # a copy: a sampled law writes it
        u_bound=bounds if np.isfinite(bounds := system.input_bounds).any() else np.zeros(0),
        **_rotation_chart(chart if rotating else None),
        **inputs,  # a joint PD law's fields
    )


def _phase_part(
    system: System, phase: Phase, chart: Chart, events: list[Event]
) -> PhaseKernel | None:
    """The :class:`PhaseKernel` of the phase without the law's inputs (a constant zero) and
    the chart's anchor, or None (the reason said once)."""
    packed = _packed(system)
    if packed is None:
        return None
    found = phase_rows(system, phase)
    watch = watched_gaps(events)
    if watch.kind.size and chart.momentum:
        announce("gap events in the momentum form are not compiled")
        return None
    layers = {
        c.name: layer
        for c in system.components
        if (layer := c.compiled_layer(phase.get(c.name))) is not None
    }
    if len(layers) > 1 or (layers and chart.momentum):
        announce("more than one compliant layer, or one in the momentum form, is not compiled")
        return None
    if (added := inertia_fields(system, phase, packed, events, chart.momentum)) is None:
        return None
    packed, inertia = added
    form = None if found is None else _form(system, phase, found[0], frozenset(layers))
    if found is None or form is None or (found[1:] != (None, None) and chart.momentum):
        busy = [c.name for c in system.components if not c.linear(phase.get(c.name))]
        announce(
            "phase with constraint rows or nonlinear components "
            f"({', '.join(busy) or 'constraints'}) is not compiled"
        )
        return None
    a_mat = form.a + _own_part(system, form.a.shape[1])
    rows, cols = np.nonzero(a_mat)
    pairs = np.argwhere(np.abs(form.q).sum(axis=0) > 0)
    held = found[1]
    nv = system.model.nv
    if held is None:
        held = JointRows.build([], [], [])
    elif chart.angles is not None:  # the rows' coordinates in the angle chart
        iq = chart.angles.internal[held.iq]
        # a row without stabilisation (ω = 0: a joint stuck by friction) never reads q; on
        # an unbounded revolute joint it points at the joint's angle, its velocity index
        unread = (held.omega == 0.0)[np.repeat(np.arange(held.m), np.diff(held.ptr))]
        iq = np.where(unread & (iq < 0), held.iv, iq)
        if np.any(iq < 0):
            announce("a row on the angle of an unbounded revolute joint is not compiled")
            return None
        held = held._replace(iq=iq)
    frames = found[2] if found[2] is not None else FrameRows.stack([])
    index = chart.index  # the environments' states in the internal state
    assert index is not None
    frames, watch = (
        f._replace(
            env=np.where(f.env < 0, -1, index[f.env]),
            layer=np.where(f.layer < 0, -1, index[f.layer]),
        )
        for f in (frames, watch)
    )
    basis, folded, spread = fold(held.jacobian(nv), frames.m)
    m, r = held.m + frames.m, basis.size
    return PhaseKernel(
        packed,
        np.searchsorted(rows, np.arange(a_mat.shape[0] + 1)).astype(np.int64),
        cols.astype(np.int64),
        np.ascontiguousarray(a_mat[rows, cols]),
        np.ascontiguousarray(form.active[pairs[:, 0]], dtype=np.int64),
        np.ascontiguousarray(form.active[pairs[:, 1]], dtype=np.int64),
        np.ascontiguousarray(form.q[:, pairs[:, 0], pairs[:, 1]]).reshape(2, len(pairs)),
        np.ascontiguousarray(system.damping, dtype=float),
        bool(system.torque_inputs),
        CONSTANT,
        np.zeros(1),
        np.zeros((1, system.n_inputs)),
        np.zeros(a_mat.shape[1]),
        np.zeros(a_mat.shape[0]),
        chart.momentum,
        np.zeros(nv),
        held.ptr,
        held.iq,
        held.iv,
        held.coef,
        held.offset,
        held.omega,
        basis,
        np.ascontiguousarray(folded.reshape(r, m)),
        np.ascontiguousarray(spread.reshape(m, r)),
        np.zeros(m),
        np.zeros(r),
        np.zeros((r, nv)),
        np.zeros((r, r)),
        **hybrid_fields(packed, held, frames.m, chart.momentum),
        frames=_frames.work(frames, packed.parent.size, nv, watch),
        layer=_layers.layer_work(next(iter(layers.values()), None), packed.parent.size, nv, index),
        **inertia,
    )


def _rotation_chart(chart: Chart | None) -> dict[str, Any]:
    """The :class:`PhaseKernel` fields of a chart with rotation vectors (``rotating`` to
    ``q``); the defaults without one."""
    if chart is None:
        return {}
    a = chart.angles
    assert a is not None
    return dict(
        rotating=True, linear_q=a.linear_q, linear_v=a.linear_v, cos_q=a.cos_q,
        angle_v=a.angle_v, quat_q=a.quat_q, rot_v=a.rot_v, fly_v=a.fly_v, fly_quat=a.fly_quat,
        anchor=np.array(chart.anchor, dtype=float), q=np.zeros(chart.anchor.size),
    )  # fmt: skip


def solve(
    kernel: PhaseKernel,
    t_span: tuple[float, float],
    y0: np.ndarray,
    *,
    events: tuple | None = None,
    t_eval: np.ndarray | None = None,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    max_step: float | None = None,
    progress: Any = None,
    stop_when_stiff: bool = False,
    method: str = "DOP853",
    sampler: Any = None,
    to_public: Any = None,
    bounces: int = 0,
) -> SimpleNamespace:
    """Integrate the phase with the compiled DOP853 or Radau IIA (see
    :func:`pinext.simulation.dop853.solve` for the arguments and the result; ``status`` 2
    means stopped by DOP853's stiffness test when ``stop_when_stiff``, the result then ends at
    the last accepted step).

    With a ``sampler`` (:class:`pinext.simulation.sampling.HeldControl`) the kernel's inputs
    are a constant held between the sampler's times: the integrator lands on each sample time
    ``t_k`` (its step cut there, never stepped over), the sampler computes the next input from
    the state there (one Python call per period, made from compiled code:
    :mod:`pinext.compiled.sampled`), the kernel's input is overwritten in place, and the same
    compiled run continues (:func:`pinext.compiled.dop853.resume`,
    :func:`pinext.compiled.radau.resume`: no restart, no recompilation, the step size kept).
    Events inside a period end the call as without a sampler; ``samples`` in the result
    counts the samples taken.

    Args:
        method: ``"DOP853"`` (:mod:`pinext.compiled.dop853`) or ``"Radau"``
            (:mod:`pinext.compiled.radau`, scipy's Radau with a finite-difference Jacobian;
            ``stop_when_stiff`` does not apply). The other arguments as
            :func:`pinext.simulation.dop853.solve`.
        sampler: None, or an object with ``next_time(t)`` (the next sample time after t [s])
            and ``sample(t, x)`` (the input held from t, for the public state x).
        to_public: The chart's map from the internal to the public state (with a sampler).
        bounces: How many contact bounces the loop may apply itself
            (:func:`pinext.compiled.impacts.bounce`; not with a ``sampler``): at each, the
            run goes on from the state after it, which the output holds after the state
            before it (two samples at the event's time); ``maps`` in the result lists them
            as (index of the sample after, event, the values of :data:`impacts.VALUES`).
    """
    if method not in METHODS:
        raise InvalidParameter(f"unknown compiled method '{method}'; valid: DOP853, Radau")
    radau = method == "Radau"
    t0, t1 = float(t_span[0]), float(t_span[1])
    y = np.array(y0, dtype=float)
    n = y.size
    if radau:
        hmax = float(max_step) if max_step else np.inf
    else:
        hmax = float(max_step) if max_step else t1 - t0
    if events is None:
        events = compiled_events([], None)
    assert events is not None
    n_events = events[0].size
    t_eval = np.asarray([] if t_eval is None else t_eval, dtype=float)
    sampled = t_eval.size > 0
    if radau:
        work = _rad.workspace(n)
        st = np.zeros(_rad.N_FLOAT)
        it = np.zeros(_rad.N_INT, dtype=np.int64)
        i_nout, i_event, i_nfev, i_t, i_troot = (
            _rad._NOUT, _rad._EVENT, _rad._NFEV, _rad._T, _rad._TROOT
        )  # fmt: skip
    else:
        k = np.zeros((_dop.K_ROWS, n))
        st = np.zeros(_dop.N_FLOAT)
        it = np.zeros(_dop.N_INT, dtype=np.int64)
        it[_dop._NSTIFF] = 1 if stop_when_stiff else _dop.NSTIFF
        i_nout, i_event, i_nfev, i_t, i_troot = (
            _dop._NOUT, _dop._EVENT, _dop._NFEV, _dop._T, _dop._TROOT
        )  # fmt: skip
    capacity = OUTPUT_CAPACITY
    ts: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    if sampled:
        keep = t_eval[(t_eval > t0) & (t_eval <= t1)]
        if t_eval.size and t_eval[0] == t0:
            ts.append(np.array([t0]))
            ys.append(y[None, :].copy())
        t_eval = np.ascontiguousarray(keep)
    else:
        ts.append(np.array([t0]))
        ys.append(y[None, :].copy())
    g_last = np.empty(n_events)  # the event functions' values, from the start
    clock = np.array([t1 if sampler is None else min(sampler.next_time(t0), t1), 0.0])
    if kernel.pd_held:  # the record of the samples the loop takes itself
        room = int(np.ceil((t1 - t0) / kernel.pd_period)) + 2
        kernel = kernel._replace(
            pd_times=np.empty(room), pd_values=np.empty((room, kernel.pd_u.size))
        )
        kernel.pd_count[0] = 0
    P = view(kernel)
    if sampler is not None:
        assert to_public is not None

        def next_input(t: float, y_now: np.ndarray) -> tuple[np.ndarray, float]:
            return sampler.sample(t, to_public(y_now)), sampler.next_time(t)

        _sampled.callback.function = next_input
    # the notice thread only until the method's kernels have run once in this process
    timer: threading.Timer | None = None
    if method not in _warm:
        timer = threading.Timer(NOTICE_AFTER, compiling_notice, (method,))
        timer.daemon = True
        timer.start()
    out_t = np.empty(capacity)
    out_y = np.empty((capacity, n))
    maps: list[tuple[int, int, np.ndarray]] = []  # the bounces the loop applied
    bouncing = bounces > 0 and sampler is None
    if bouncing:
        from . import impacts as _impacts  # (it imports pinext.contact, which imports us)

        bouncing = _impacts.may_bounce(events)
        rows = np.empty((min(bounces, 256), _impacts.ROW))  # (drained at each return)
        n_rows = np.zeros(1, dtype=np.int64)
        limit = np.array([hmax, 0.0 if radau or max_step else 1.0])
    recorded = sum(a.size for a in ts)  # samples in ts so far
    st[i_t] = t0  # the first call into the loop starts the run there (one call, not two)
    it[_rad._START if radau else _dop._START] = 1
    try:
        # the pauses' spacing carries over from the run's previous segment
        stride = getattr(progress, "stride", FIRST_PAUSE) if progress is not None else np.inf
        last = began = time.perf_counter()
        while True:  # pauses for the bar, in evaluations: fewer while they come faster than
            pause = float(it[i_nfev]) + stride  # BAR_INTERVAL apart (inf without a bar)
            if radau and sampler is not None:
                code = _sampled.radau_sampled(
                    P, y, clock, t1, hmax, rtol, atol, work[0], work[1], work[2],
                    work[3], work[4], work[5], work[6], work[7], st, it, t_eval, out_t, out_y,
                    g_last, events, pause,
                )  # fmt: skip
            elif radau and bouncing:
                code = _impacts.radau_bouncing(
                    P, y, t1, hmax, rtol, atol, work[0], work[1], work[2], work[3],
                    work[4], work[5], work[6], work[7], st, it, t_eval, out_t, out_y, g_last,
                    events, pause, rows[: bounces - len(maps)], n_rows,
                )  # fmt: skip
            elif radau:
                code = _rad.advance(
                    P, y, t1, hmax, rtol, atol, work[0], work[1], work[2], work[3],
                    work[4], work[5], work[6], work[7], st, it, t_eval, out_t, out_y, g_last,
                    events, pause,
                )  # fmt: skip
            elif sampler is not None:
                code = _sampled.dop853_sampled(
                    P, y, clock, t1, hmax, rtol, atol, k, st, it, t_eval, out_t, out_y,
                    g_last, events, pause, stop_when_stiff,
                )  # fmt: skip
            elif bouncing:
                code = _impacts.dop853_bouncing(
                    P, y, t1, limit, rtol, atol, k, st, it, t_eval, out_t, out_y, g_last,
                    events, pause, stop_when_stiff, rows[: bounces - len(maps)], n_rows,
                )  # fmt: skip
            else:
                code = _dop.advance(
                    P, y, t1, hmax, rtol, atol, k, st, it, t_eval, out_t, out_y, g_last,
                    events, pause, stop_when_stiff,
                )  # fmt: skip
            if timer is not None:
                timer.cancel()
                timer = None
                _warm.add(method)
            m = int(it[i_nout])
            ts.append(out_t[:m].copy())
            ys.append(out_y[:m].copy())
            if bouncing:
                maps += [(recorded + int(r[0]), int(r[1]), r[2:].copy()) for r in rows[: n_rows[0]]]
                n_rows[0] = 0
            recorded += m
            it[i_nout] = 0
            if progress is not None and st[i_t] > progress.n:
                progress.update(min(st[i_t], progress.total) - progress.n)
                now = time.perf_counter()
                if now - last < BAR_INTERVAL:
                    stride *= 4.0
                elif now - last > 20.0 * BAR_INTERVAL:  # a slower stretch: finer again
                    stride = max(stride / 4.0, FEWEST_PAUSE)
                last = now
            if code != _dop.PAUSE:
                break
        if progress is not None:
            progress.stride = stride
        loop_time = time.perf_counter() - began
    finally:
        if timer is not None:
            timer.cancel()
        if sampler is not None:
            _sampled.callback.function = None
        if kernel.pd_held:  # the law's samples taken in the loop join the run's record
            count = int(kernel.pd_count[0])
            sampler.record(kernel.pd_times[:count], kernel.pd_values[:count])
    t_all = np.concatenate(ts)
    y_all = np.vstack(ys).T if ts else np.empty((n, 0))
    t_events = [np.empty(0) for _ in range(n_events)]
    y_events = [np.empty((0, n)) for _ in range(n_events)]
    status = 0
    if code == _dop.EVENT:
        status = 1
        e = int(it[i_event])
        t_events[e] = np.array([st[i_troot]])
        y_events[e] = y[None, :].copy()
    elif code == _dop.STIFF:
        status = 2
    elif code < 0:
        status = -1
        if sampled and (t_all.size == 0 or t_all[-1] < st[i_t]):
            t_all = np.append(t_all, st[i_t])
            y_all = np.hstack((y_all, y[:, None]))
    return SimpleNamespace(
        t=t_all,
        y=y_all,
        t_events=t_events if n_events else None,
        y_events=y_events if n_events else None,
        status=status,
        message=_MESSAGES.get(code, "success"),
        nfev=int(it[i_nfev]),
        njev=int(it[_rad._NJEV]) if radau else 0,
        nlu=int(it[_rad._NLU]) if radau else 0,
        nstep=int(it[_rad._NSTEP] if radau else it[_dop._NSTEP]),
        stiff=False if radau else bool(it[_dop._STIFF]),
        t_stop=float(st[i_t]),
        y_stop=y.copy(),
        samples=int(clock[1]),
        loop_time=loop_time,
        maps=maps,
    )
