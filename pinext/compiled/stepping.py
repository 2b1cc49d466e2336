"""The Python side of compiled time stepping: pack a scene, run the loop of
:mod:`pinext.compiled.timestep` in chunks, and hand back the samples.

:func:`stepping_scene` says whether a time-stepping run can run compiled (and why not);
:class:`CompiledStepper` runs it. The caller
(:func:`pinext.simulation.timestepping.simulate_timestepping`)
keeps the arguments, the checks and the Trajectory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numba
import numpy as np
import pinocchio as pin

from ..exceptions import UnsupportedModel
from ..simulation.component import FrameRows
from ..simulation.controls import kernel_form
from . import timestep as _ts
from .frames import work as frame_work
from .linear_steps import flat_dofs, linear_fields, step_matrices
from .model import (
    FREE_FLYER,
    PRISMATIC,
    REVOLUTE,
    REVOLUTE_UNBOUNDED,
    SPHERICAL,
    TRANSLATION,
)
from .struct import view

#: Joint codes whose exponential map :func:`pinext.compiled.timestep.integrate` implements
#: (every packed joint but the planar one).
_STEPPED = frozenset({REVOLUTE, REVOLUTE_UNBOUNDED, PRISMATIC, FREE_FLYER, SPHERICAL, TRANSLATION})
#: What the compiled loop integrates (for error messages).
STEPPED_JOINTS = ("revolute", "continuous", "prismatic", "free-flyer", "spherical", "translation")
#: Steps per call of the compiled loop when no Python law runs between steps.
CHUNK = 2000
#: Calls of the compiled loop through Numba's dispatcher before a run calls its machine code
#: directly: resolving the arguments' types once costs ~1 ms (~120 arrays), the dispatcher
#: ~6 µs a call more.
DIRECT_AFTER = 100
#: Unconverged solves whose times are kept.
UNCONVERGED_KEPT = 20


class StepScene(NamedTuple):
    """What the compiled loop reads (see :func:`pinext.compiled.timestep.run`)."""

    contact_joint: np.ndarray
    contact_local: np.ndarray
    plane_rotation: np.ndarray
    plane_origin: np.ndarray
    friction: np.ndarray
    margin: float
    limit_iq: np.ndarray
    limit_iv: np.ndarray
    limit_lower: np.ndarray
    limit_upper: np.ndarray
    friction_iv: np.ndarray
    friction_torque: np.ndarray
    mimic_iq: np.ndarray  # (follower, leader) configuration indices
    mimic_iv: np.ndarray  # (follower, leader) velocity indices
    mimic_ratio: np.ndarray
    mimic_offset: np.ndarray
    effort_limit: np.ndarray  # (nv,) inputs clipped to ± this (inf: no saturation)
    damping: np.ndarray
    stiffness: np.ndarray
    elastic_iq: np.ndarray
    elastic_iv: np.ndarray
    q_rest: np.ndarray
    pd_on: bool
    pd_iq: np.ndarray
    pd_iv: np.ndarray
    kp: np.ndarray
    kd: np.ndarray
    tolerance: float
    max_iterations: int
    frames: Any  # the closures' rows (a pinext.compiled.frames.FrameWork)
    prescribed_iq: np.ndarray  # the prescribed joints' configuration and velocity indices
    prescribed_iv: np.ndarray
    prescribed_continuous: np.ndarray  # int64: 1 for a continuous joint (q = cos, sin)
    torque_inputs: bool  # the inputs are joint torques (else they drive the own states only)
    armature_shift: np.ndarray  # (nv,) the stepper's armature minus the System's
    # the components' own states z = (p, w, s) (pinext.compiled.linear_steps): rotors' angles
    # and velocities, first-order states; their forces f = f_u + J d in d = (ΔQ, V, s)
    own_dq_iq: np.ndarray  # (nv,) configuration index of each tangent column (−1: none)
    own_q_ref: np.ndarray  # (nq,) ΔQ's origin (also the efforts' Δq)
    own_p_ref: np.ndarray
    own_inertia: np.ndarray
    own_metric: np.ndarray
    own_jac: np.ndarray
    own_f0: np.ndarray  # f at the origin, at rest and under no input
    own_k: np.ndarray
    own_c: np.ndarray
    own_e: np.ndarray
    own_gq: np.ndarray
    own_couple: np.ndarray  # the step's elimination, for its h (linear_steps.step_matrices)
    own_rate: np.ndarray
    own_rate_v: np.ndarray
    own_solve_w: np.ndarray
    own_avw: np.ndarray
    own_awv: np.ndarray
    own_diss: np.ndarray  # p_diss = c(u) + l(u)·d + dᵀ D d: D (c and l: StepWork)
    lin_jac: np.ndarray  # (nv, 2 nv) the stateless components' efforts' J in (Δq, v)


class StepWork(NamedTuple):
    """The compiled loop's workspace and running totals."""

    tau: np.ndarray
    u_applied: np.ndarray
    bias: np.ndarray
    acc: np.ndarray
    v_free: np.ndarray
    v_next: np.ndarray
    q_next: np.ndarray
    springs: np.ndarray  # the joint springs' efforts τ_el
    dv_next: np.ndarray
    rotation: np.ndarray
    position: np.ndarray
    point: np.ndarray
    mass: np.ndarray
    factors: np.ndarray
    jac: np.ndarray
    half: np.ndarray
    delassus: np.ndarray
    g: np.ndarray
    lam: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    mu: np.ndarray
    admm_chol: np.ndarray
    admm_x: np.ndarray
    admm_u: np.ndarray
    admm_w: np.ndarray
    admm_p: np.ndarray
    row_of: np.ndarray
    tip: np.ndarray  # each row's dof whose chain holds its Jacobian (−1: across branches)
    dinv: np.ndarray  # D⁻¹ of the LTDL factors
    active: np.ndarray
    gap: np.ndarray
    closing: np.ndarray
    warm: np.ndarray
    warm_limit: np.ndarray
    engaged: np.ndarray  # (limit, lower/upper side): engaged (False while violated at start)
    warm_friction: np.ndarray
    warm_mimic: np.ndarray
    q_ref: np.ndarray  # (CHUNK, nq): the PD law's reference at each step of a call
    v_ref: np.ndarray  # (CHUNK, nv)
    touching: np.ndarray
    audit: np.ndarray  # numerical dissipation, explicit error [J]
    energy: np.ndarray  # kinetic, gravity, joint-elastic energy at the step's start [J]
    totals: np.ndarray  # input work, dissipated energy [J]
    stats: np.ndarray  # solver iterations, unconverged solves, events, steps with limit rows
    unconverged_at: np.ndarray
    closure_residual: np.ndarray  # Θ of each closure row at the step's start
    warm_closure: np.ndarray
    prescribed_ref: np.ndarray  # (CHUNK, prescribed) each law at the end of each step
    warm_prescribed: np.ndarray
    own_fu: np.ndarray  # the own states' forces at d = 0 under the step's input
    own_d: np.ndarray
    own_f: np.ndarray
    own_rates: np.ndarray
    own_b: np.ndarray
    own_step: np.ndarray
    own_ds: np.ndarray
    own_applied: np.ndarray
    own_vel: np.ndarray
    own_extra: np.ndarray
    own_tmp: np.ndarray
    own_terms: np.ndarray  # numerical dissipation, explicit error, input work, dissipated
    own_diss_l: np.ndarray  # l(u) and (c(u),) of StepScene.own_diss under the step's input
    own_diss_c: np.ndarray
    own_diss_exact: np.ndarray  # (1,): 1 when own_diss_c is the step's p_diss itself
    lin_fu: np.ndarray  # the stateless components' efforts at d = 0 under the step's input
    lin_tau: np.ndarray  # their efforts in the step


class StepOut(NamedTuple):
    """The samples of a run (one row per sample) and its contact events."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    u: np.ndarray
    work: np.ndarray
    lost: np.ndarray
    audit: np.ndarray
    energy: np.ndarray  # kinetic, gravity, joint-elastic [J]
    gap: np.ndarray
    force: np.ndarray
    closed: np.ndarray
    events: np.ndarray  # (time, contact, 1 touchdown / 0 lift-off)
    own: np.ndarray  # the own states z


def _index(values: Iterable[int]) -> np.ndarray:
    return np.asarray(list(values), dtype=np.int64)


def pd_law(controller: Any, model: pin.Model) -> tuple[Any, np.ndarray, np.ndarray] | None:
    """(reference, kp, kd) of a law whose kernel form is a joint PD
    (:meth:`pinext.control.JointPD.kernel_form`), which the loop evaluates itself; None for
    any other law."""
    form = kernel_form(controller, model)
    if form is None or form.kind != "joint_pd" or form.terms is not None:
        return None
    return form.reference, form.kp, form.kd


def stepping_scene(
    model: pin.Model,
    pm: Any,
    contacts: Sequence[Any],
    limits: Sequence[Any],
    friction: Sequence[tuple[int, float]],
    mimics: Sequence[Any],
    effort_limit: np.ndarray,
    damping: np.ndarray,
    stiffness: np.ndarray,
    q_rest: np.ndarray,
    margin: float,
    tolerance: float,
    max_iterations: int,
    pd: tuple[Any, np.ndarray, np.ndarray] | None,
    linear: dict[str, Any] | None = None,
    torque_inputs: bool = True,
    closures: Sequence[Any] = (),
    prescribed: Sequence[Any] = (),
) -> StepScene:
    """The packed scene of a run on ``model`` (``pm``: its :func:`~pinext.compiled.model.pack`),
    with the linear components' fields ``linear``
    (:func:`~pinext.compiled.linear_steps.linear_fields`), the closures' rows
    ``closures`` (:class:`~pinext.simulation.component.FrameRows` of loops) and the
    ``prescribed`` joints (:class:`~pinext.constraints.prescribed.Prescribed`, whose laws
    :class:`CompiledStepper` evaluates).

    Raises:
        UnsupportedModel: A joint the compiled loop does not integrate (planar, helical,
            mimic, ...), joint friction or a spring on a joint that is not a one-degree-of-
            freedom Euclidean joint.
    """
    codes = pm.jtype[1:]
    for i, code in enumerate(codes, start=1):
        if int(code) not in _STEPPED:
            raise UnsupportedModel(model.names[i], model.joints[i].shortname(), STEPPED_JOINTS)
    flat, owner = flat_dofs(model, pm)
    elastic = np.flatnonzero(stiffness)
    for iv in [*elastic, *(model.joints[j].idx_v for j, _ in friction)]:
        if int(iv) not in flat:
            joint = owner[int(iv)]
            raise UnsupportedModel(
                model.names[joint], f"{model.joints[joint].shortname()} with a spring or "
                "Coulomb friction", ("springs and friction on revolute and prismatic joints",)
            )  # fmt: skip
    pd_iv = np.flatnonzero(pd[1]) if pd is not None else np.zeros(0, dtype=np.int64)
    if linear is None:  # (none: the fields' empty forms)
        empty = linear_fields(None, None, model, pm, 0.0, model.armature, pin.neutral(model))
        assert not isinstance(empty, str)
        linear = empty
    n = len(contacts)
    return StepScene(
        contact_joint=_index(c.joint for c in contacts),
        contact_local=np.array([c.local for c in contacts], dtype=float).reshape(n, 3),
        plane_rotation=np.array([c.plane.rotation for c in contacts], dtype=float).reshape(n, 3, 3),
        plane_origin=np.array([c.plane.translation for c in contacts], dtype=float).reshape(n, 3),
        friction=np.array([c.friction for c in contacts], dtype=float),
        margin=float(margin),
        limit_iq=_index(lim.iq for lim in limits),
        limit_iv=_index(lim.iv for lim in limits),
        limit_lower=np.array([lim.lower for lim in limits], dtype=float),
        limit_upper=np.array([lim.upper for lim in limits], dtype=float),
        friction_iv=_index(model.joints[j].idx_v for j, _ in friction),
        friction_torque=np.array([f for _, f in friction], dtype=float),
        mimic_iq=np.array([(c.iq, c.iq_leader) for c in mimics], dtype=np.int64).reshape(-1, 2),
        mimic_iv=np.array([(c.iv, c.iv_leader) for c in mimics], dtype=np.int64).reshape(-1, 2),
        mimic_ratio=np.array([c.multiplier for c in mimics], dtype=float),
        mimic_offset=np.array([c.offset for c in mimics], dtype=float),
        effort_limit=np.asarray(effort_limit, dtype=float).copy(),
        damping=np.asarray(damping, dtype=float).copy(),
        stiffness=np.asarray(stiffness, dtype=float).copy(),
        elastic_iq=_index(flat[int(iv)] for iv in elastic),
        elastic_iv=_index(int(iv) for iv in elastic),
        q_rest=np.asarray(q_rest, dtype=float).copy(),
        pd_on=pd is not None,
        pd_iq=_index(flat[int(iv)] for iv in pd_iv),
        pd_iv=_index(int(iv) for iv in pd_iv),
        kp=np.zeros(model.nv) if pd is None else pd[1].copy(),
        kd=np.zeros(model.nv) if pd is None else pd[2].copy(),
        tolerance=float(tolerance),
        max_iterations=int(max_iterations),
        torque_inputs=bool(torque_inputs),
        frames=frame_work(FrameRows.stack(list(closures)), model.njoints, model.nv),
        prescribed_iq=_index(p.iq for p in prescribed),
        prescribed_iv=_index(p.iv for p in prescribed),
        prescribed_continuous=_index(int(p.continuous) for p in prescribed),
        **linear,
    )


def _work(model: pin.Model, scene: StepScene) -> StepWork:
    nv, nq, nj = model.nv, model.nq, model.njoints
    nc, nl, nf = scene.contact_joint.size, scene.limit_iq.size, scene.friction_iv.size
    nm = scene.mimic_ratio.size
    n_closure, n_prescribed = scene.frames.jac.shape[0], scene.prescribed_iv.size
    rows = max(3 * nc + 2 * nl + nm + n_closure + n_prescribed + nf, 1)
    n_f, ns = scene.own_f0.size, scene.own_metric.size  # (the own states' forces, rates)
    n_q = nv + scene.own_inertia.size
    return StepWork(
        tau=np.zeros(nv),
        u_applied=np.zeros(nv),
        bias=np.zeros(nv),
        acc=np.zeros(nv),
        v_free=np.zeros(nv),
        v_next=np.zeros(nv),
        q_next=np.zeros(nq),
        springs=np.zeros(nv),
        dv_next=np.zeros(nv),
        rotation=np.zeros((nj, 3, 3)),
        position=np.zeros((nj, 3)),
        point=np.zeros(3),
        mass=np.zeros((nv, nv)),
        factors=np.zeros((nv, nv)),
        jac=np.zeros((rows, nv)),
        half=np.zeros((rows, nv)),
        delassus=np.zeros((rows, rows)),
        g=np.zeros(rows),
        lam=np.zeros(rows),
        lower=np.zeros(rows),
        upper=np.zeros(rows),
        mu=np.zeros(max(nc, 1)),
        admm_chol=np.zeros((rows, rows)),
        admm_x=np.zeros(rows),
        admm_u=np.zeros(rows),
        admm_w=np.zeros(rows),
        admm_p=np.zeros(rows),
        row_of=np.zeros(rows, dtype=np.int64),
        tip=np.zeros(rows, dtype=np.int64),
        dinv=np.zeros(nv),
        active=np.zeros(nc, dtype=np.bool_),
        gap=np.zeros(nc),
        closing=np.zeros(nc),
        warm=np.zeros((nc, 3)),
        warm_limit=np.zeros((nl, 2)),
        engaged=np.zeros((nl, 2), dtype=np.bool_),
        warm_friction=np.zeros(nf),
        warm_mimic=np.zeros(nm),
        q_ref=np.zeros((CHUNK, nq)),
        v_ref=np.zeros((CHUNK, nv)),
        touching=np.zeros(nc, dtype=np.bool_),
        audit=np.zeros(2),
        energy=np.zeros(3),
        totals=np.zeros(2),
        stats=np.zeros(4, dtype=np.int64),
        unconverged_at=np.zeros(UNCONVERGED_KEPT),
        closure_residual=np.zeros(n_closure),
        warm_closure=np.zeros(n_closure),
        prescribed_ref=np.zeros((CHUNK, n_prescribed)),
        warm_prescribed=np.zeros(n_prescribed),
        own_fu=np.zeros(n_f),
        own_d=np.zeros(scene.own_jac.shape[1]),
        own_f=np.zeros(n_f),
        own_rates=np.zeros(ns),
        own_b=np.zeros(n_q),
        own_step=np.zeros(n_q),
        own_ds=np.zeros(ns),
        own_applied=np.zeros(n_q),
        own_vel=np.zeros(n_q),
        own_extra=np.zeros(nv),
        own_tmp=np.zeros(n_q + ns),
        own_terms=np.zeros(4),
        own_diss_l=np.zeros(scene.own_jac.shape[1]),
        own_diss_c=np.zeros(1),
        own_diss_exact=np.zeros(1),
        lin_fu=np.zeros(nv),
        lin_tau=np.zeros(nv),
    )


class CompiledStepper:
    """A time-stepping run of a packed scene (see :mod:`pinext.compiled.timestep`).

    Args:
        model: The stepper's model (armature included), and ``pm`` its packed form.
        scene: From :func:`stepping_scene`.
        n_steps: Steps of the run; the samples are every ``every`` steps, plus the end.
    """

    def __init__(
        self,
        model: pin.Model,
        pm: Any,
        scene: StepScene,
        n_steps: int,
        every: int,
        reference: Any = None,
        n_inputs: int | None = None,
        stepped: Any = None,
        efforts: Any = None,
    ) -> None:
        self.model, self.pm, self.scene, self.every = model, pm, scene, int(every)
        #: The JointPD's reference (a JointReference), written into the workspace per call.
        self.reference = reference
        #: The prescribed joints' components (their laws, evaluated per call).
        self.prescribed: Sequence[Any] = ()
        #: The components' own states (a ComponentStates), or None.
        self.stepped = stepped
        #: The stateless components' efforts (a LinearEfforts), or None.
        self.efforts = efforts
        self.n_inputs = model.nv if n_inputs is None else int(n_inputs)
        self.n_own = 2 * scene.own_inertia.size + scene.own_metric.size
        self.work = _work(model, scene)
        self.n_steps = n_steps
        self.h = np.nan  # the step the own states' elimination is for
        #: The inputs of every step when they are constant (else zero or the law's).
        self.constant: np.ndarray | None = None
        #: The System's armature (the stepper's less the scene's shift).
        self.armature = np.asarray(model.armature, dtype=float) - scene.armature_shift
        self._entry: Callable | None = None
        self._calls = 0

    def _samples(self) -> StepOut:
        """The arrays of a run's samples (made when it starts: a run refused as too long
        never holds them)."""
        model, nc = self.model, self.scene.contact_joint.size
        n_samples = (self.n_steps - 1) // self.every + 1
        return StepOut(
            t=np.zeros(n_samples),
            q=np.zeros((n_samples, model.nq)),
            v=np.zeros((n_samples, model.nv)),
            u=np.zeros((n_samples, self.n_inputs)),
            work=np.zeros(n_samples),
            lost=np.zeros(n_samples),
            audit=np.zeros((n_samples, 2)),
            energy=np.zeros((n_samples, 3)),
            gap=np.zeros((n_samples, nc)),
            force=np.zeros((n_samples, nc, 3)),
            closed=np.zeros((n_samples, nc)),
            events=np.zeros((CHUNK * nc + 1, 3)),  # nc events per step at most
            own=np.zeros((n_samples, self.n_own)),
        )

    def advance(
        self, q: np.ndarray, v: np.ndarray, u: np.ndarray, h: float, t: float, k: int, steps: int
    ) -> tuple[int, int, float]:
        """``steps`` steps from (q, v) (updated in place) at time t, global step k, under the
        input u (overwritten by the PD law when the scene has one); returns (status, steps
        done, time). At most :data:`CHUNK` steps per call (the events' buffer); the caller
        drains the events after each call (:meth:`drain`)."""
        pm, scene, work, out = self._views
        if self.stepped is not None and h != self.h:  # (the last step may be shorter)
            for name, value in step_matrices(self.stepped, self.model, h).items():
                getattr(self.scene, name)[:] = value
            self.pm.armature[:] = self.model.armature
            self.scene.armature_shift[:] = self.model.armature - self.armature
            self.h = h
        args = (pm, scene, work, q, v, self.z, u, h, t, k, steps, self.every, out)
        if self._entry is not None:
            return self._entry(*args)  # skips the dispatcher's type resolution
        result = _ts.run(*args)  # (the first call compiles or loads the loop)
        self._calls += 1
        if self._calls == DIRECT_AFTER:  # a run of many calls (a law per step)
            signature = tuple(numba.typeof(a) for a in args)
            self._entry = _ts.run.overloads[signature].entry_point
        return result

    def _inputs(self, t: float, u: np.ndarray, x: np.ndarray | None = None) -> None:
        """The linear components' forces under the input u and the own states' dissipation
        into the workspace: at the public state x of the next step's start when it is given
        (one step), else its form over the held input."""
        stepped, efforts, work = self.stepped, self.efforts, self.work
        u = u.copy()  # (components cache an evaluation by the identity of its arrays)
        if stepped is not None:
            work.own_fu[:] = stepped.forces(t, stepped.rest, u)
            work.own_diss_exact[0] = x is not None
            if x is not None:
                work.own_diss_c[0] = stepped.dissipated(t, x, u)
            else:
                work.own_diss_c[0], work.own_diss_l[:] = stepped.dissipation_affine(u)
        if efforts is not None:
            work.lin_fu[:] = efforts.forces(t, efforts.rest, u)

    def _references(self, t: float, h: float, steps: int) -> None:
        """The JointPD's (q_r, v_r) at the start of each of the next ``steps`` steps, from
        t in steps of h (the loop's own sums), into the workspace: as
        :class:`pinext.control.reference.JointReference` gives them, for all steps at once."""
        ref, work = self.reference, self.work
        if ref.kind == "constant":
            work.q_ref[:steps] = ref.value  # (v_r = 0: the workspace's zeros)
            return
        sched = ref.schedule
        times = np.add.accumulate(np.r_[t, np.full(steps - 1, h)])
        work.q_ref[:steps] = sched.values_at(times)
        work.v_ref[:steps] = 0.0
        if sched.kind == "linear" and sched.times.size >= 2:
            i = np.searchsorted(sched.times, times, side="right") - 1
            inside = (i >= 0) & (i < sched.times.size - 1)
            work.v_ref[:steps][inside] = ref.slopes[i[inside]]

    def drain(self) -> np.ndarray:
        """The contact events recorded since the last drain: rows (time, contact, kind)."""
        count = int(self.work.stats[2])
        events = self.out.events[:count].copy()
        self.work.stats[2] = 0
        return events

    def close(self, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Close the energy audit at the end state; the contacts' gaps and the energies
        (kinetic, gravity, joint-elastic) there."""
        pm, scene, work, _ = self._views
        _ts.close(pm, scene, work, q, v)
        return self.work.gap.copy(), self.work.energy.copy()

    def run(
        self,
        x: np.ndarray,
        order: np.ndarray,
        law: Callable[[float, np.ndarray], np.ndarray] | None,
        dt: float,
        t_final: float,
        n_steps: int,
        tick: Callable[[float], Any],
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """Every step from the public state x.

        Args:
            order: The indices in x of the loop's state (q, v, the own states, input work,
                dissipated energy).
            law: The input law ``u(t, x)`` of the public state, called once per step; None
                when the scene's PD law or a held input drives the run (then the loop runs
                in chunks).
            tick: Called with each chunk's duration (a progress bar).

        Returns:
            (end state (the loop's: x[order]), contact events (time, contact, kind), end
            time).

        Raises:
            IntegrationError: The state became non-finite (its time and state).
        """
        from ..exceptions import IntegrationError

        nq, nv, nz = self.model.nq, self.model.nv, self.n_own
        self.out = self._samples()
        state = np.array(x[order], dtype=float)  # q, v, z, the totals: views below
        public = np.array(x, dtype=float)  # (what the law sees)
        same = order.size == x.size and bool(np.all(order == np.arange(x.size)))
        linear = self.stepped is not None or self.efforts is not None
        q, v, self.z = state[:nq], state[nq : nq + nv], state[nq + nv : nq + nv + nz]
        self.work = self.work._replace(totals=state[nq + nv + nz :])
        self.h = self.stepped.h if self.stepped is not None else np.nan
        # the kernels' data as four pointers (pinext.compiled.struct): the loop's ~100 arrays
        # are not unboxed at each of its calls (one per step under a Python law)
        self._views = tuple(view(data) for data in (self.pm, self.scene, self.work, self.out))
        u = np.zeros(self.n_inputs) if self.constant is None else self.constant.copy()
        self._inputs(0.0, u)  # the linear components' forces under the held input
        events, t, k, undrained, unticked = [], 0.0, 0, 0, 0.0
        # the loop stops at a non-finite state: the law's own check (finite_law) runs only then
        raw: Any = getattr(law, "unchecked", law)
        given = state
        while k < n_steps:
            h = dt if k < n_steps - 1 else min(dt, t_final - t)
            steps = 1 if (law is not None or k == n_steps - 1) else min(CHUNK, n_steps - 1 - k)
            if law is not None:  # (a law may keep the state it was given: a copy)
                if same:
                    given = state.copy()
                else:
                    public[order] = state
                    given = public.copy()
                u[:] = raw(t, given)
                if linear:
                    self._inputs(t, u, given)
            if self.reference is not None:
                self._references(t, h, steps)
            if self.prescribed:  # each law at each step's end (the loop's own sums)
                ends = np.add.accumulate(np.r_[t, np.full(steps, h)])[1:]
                for n, joint in enumerate(self.prescribed):
                    self.work.prescribed_ref[:steps, n] = [joint.law(end)[0] for end in ends]
            start = t
            status, done, t = self.advance(q, v, u, h, t, k, steps)
            k += done
            undrained += done
            unticked += t - start
            if undrained >= CHUNK or k >= n_steps or status != _ts.DONE:
                events.append(self.drain())  # (the buffer holds CHUNK steps' events)
                undrained = 0
                tick(unticked)
                unticked = 0.0
            if status == _ts.NON_FINITE:
                if law is not None and not np.isfinite(u).all():
                    law(start, given)  # raises the law's error: its inputs, time and state
                public[order] = state
                raise IntegrationError("non-finite state", t, public)
        return state.copy(), np.concatenate(events), t
