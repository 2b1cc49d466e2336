"""The time-stepping run: Moreau–Jean steps over a whole trajectory.

The scheme, its contact problem and its energy audit are :mod:`pinext.contact.timestepping`'s.
This module runs it: on the compiled loop (:mod:`pinext.compiled.timestep`, the default when
the scene allows it) or step by step with Pinocchio's conic solvers (``solver="admm"`` or
``"pgs"``, and the scenes the compiled loop does not cover), and returns the Trajectory.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin

from ..contact.scene import SCENE_KEY, contact_scene_items
from ..contact.stepped_states import ComponentStates
from ..contact.timestepping import (
    SOLVERS,
    PointContact,
    TimeStepper,
    _effort_law,
    contact_specs,
    step_audit,
)
from ..exceptions import IntegrationError, InvalidParameter
from ..model import Robot
from ..validation import real, refuse_long_run, thousands
from .arguments import warn_free_fall
from .component import Component, stepped_components
from .controls import checked_control
from .initial_state import as_initial_state
from .progress import bar as progress_bar
from .stepped_scene import compiled_order, compiled_stepper
from .system import System
from .trajectory import (
    AUDIT_EXPLICIT,
    AUDIT_NUMERICAL,
    EventRecord,
    PhaseRecord,
    Trajectory,
    run_metadata,
)


def simulate_timestepping(
    system_or_robot: System | Robot,
    t_final: float,
    *,
    dt: float | None = None,
    x0: np.ndarray | None = None,
    q0: np.ndarray | None = None,
    v0: np.ndarray | None = None,
    control: Any = None,
    output_dt: float | None = None,
    progress: bool | None = None,
    contacts: Sequence[Any] | None = None,
    solver: str = "auto",
    tolerance: float = 1e-10,
    max_iterations: int = 500,
    margin: float = 1e-3,
    force: bool = False,
) -> Trajectory:
    """Simulate with Moreau–Jean time stepping (``simulate(..., method="timestepping")``).

    Each step is :meth:`TimeStepper.step`: the free velocity from Pinocchio's ``aba`` under
    the System's efforts (inputs, joint springs and dampers, effort components), then the
    frictional contact and joint-limit impulses from Pinocchio's Delassus operator and conic
    solver, then ``q⁺ = q ⊕ h v⁺``. The System's joint limits (``joint_limits=True``) are
    enforced. Drives' rotors and currents join the step, their forces linearly implicit
    (:class:`pinext.contact.stepped_states.ComponentStates`, on the compiled loop too).
    Closures (loops, ``<mimic>`` couplings) are held by their own rows at each step's end
    (:class:`pinext.contact.timestepping.HeldRows`; on the compiled loop, free rows of its
    problem), prescribed joints by their law there; components with modes (lossy gears,
    backlash) and other component states are not integrated by this method (an error names
    them).

    Args:
        system_or_robot: The :class:`System`, or a :class:`Robot` (its ``[[contacts]]``, e.g.
            ``surface = "ground"`` at the feet, become the point contacts; the System is
            built without event-driven contact components).
        t_final: End time [s].
        dt: Step ``h`` [s] (required).
        x0: Initial public state (see :func:`pinext.simulate`).
        q0: Initial configuration (default: neutral).
        v0: Initial velocity (default: zero).
        control: Inputs: None, a constant vector, a :class:`pinext.Schedule` or ``u(t, x)``,
            held constant over each step.
        output_dt: Sample period [s] (rounded to a multiple of ``dt``); None: every step.
        progress: Show a tqdm progress bar: True from the start, False never, None
            (default) once the run has lasted 2 s.
        contacts: The point contacts (Contact objects, constraints or dicts); default: the
            System's planar contacts, else the robot's ``[[contacts]]``.
        solver: ``"admm"`` or ``"pgs"`` (Pinocchio's conic solvers).
        tolerance: Solver tolerance (absolute feasibility and complementarity).
        max_iterations: Solver iteration limit.
        margin: Activation distance of the contacts [m].
        force: Run even when the first steps' timing estimates more than
            :data:`pinext.validation.LONG_RUN` seconds for the whole run.

    Returns:
        The :class:`Trajectory`. Besides the energies and inputs, its outputs hold, per
        contact, ``contact.force`` (shape (N, n, 3), mean force over the step that starts at
        the sample — at the end, over the step that ends there —, world axes [N]),
        ``contact.residual`` (gap where negative [m]), ``contact.closed`` (in that step's
        contact problem) and ``contact.gap`` [m];
        ``meta["stats"]`` counts steps, solver iterations and unconverged solves (with the
        times of the first 20).
        ``state("dissipated_energy")`` accumulates the contact dissipation plus joint damping;
        the outputs ``audit.numerical_dissipation`` and ``audit.explicit_error`` accumulate
        the scheme's own energy terms (:func:`step_audit`), which
        :meth:`pinext.Trajectory.energy_balance` books, so that its residual is round-off.

    Raises:
        InvalidParameter: Missing or bad ``dt``, unknown solver, or a component that time
            stepping cannot integrate (own states, constraint rows other than contacts).
        IntegrationError: The state became non-finite.
    """
    if dt is None:
        raise InvalidParameter("method='timestepping' needs a step dt [s], e.g. dt=1e-3")
    t_final = real("t_final", t_final, unit="[s]", low=0.0, strict=True)
    dt = real("dt", dt, unit="[s]", low=0.0, strict=True)
    if t_final / dt < MIN_STEPS - 1e-9:
        raise InvalidParameter(
            f"dt = {dt:g} s gives {t_final / dt:.3g} steps for t_final = {t_final:g} s; time "
            f"stepping is first order and needs at least {MIN_STEPS} steps (dt <= "
            f"{t_final / MIN_STEPS:g} s); a typical step is 1e-3 s"
        )
    if isinstance(system_or_robot, System):
        system = system_or_robot
    else:
        system = System(system_or_robot, contacts=())
    specs = contact_specs(system, contacts)
    found = [PointContact.from_contact(system.model, c) for c in specs]
    warn_free_fall(system, bool(found), stacklevel=4)
    x = as_initial_state(system, x0, q0, v0)
    if not np.all(np.isfinite(x)):
        raise IntegrationError("non-finite initial state", 0.0, x)
    law = checked_control(control, system, x)
    phase = system.initial_phase(0.0, x, law)
    step, efforts, integrated = _effort_law(system, phase)
    closures = stepped_components(system, "closure", "mimic")
    prescribed = stepped_components(system, "prescribed")
    if solver not in (*SOLVERS, "auto", "compiled"):
        raise InvalidParameter(
            f"unknown solver {solver!r}; valid solvers: auto, compiled, {', '.join(SOLVERS)}"
        )
    limits = [lim for c in stepped_components(system, "limits") for lim in c.limits]
    friction = [
        (system.model.getJointId(name), float(torque))
        for c in stepped_components(system, "friction")
        for name, torque in zip(c.joints, c.torque, strict=True)
    ]
    model, stepped = step.model, None
    if integrated:  # the components' states: their implicit forces in a copy's armature
        model = pin.Model(step.model)
        stepped = ComponentStates(system, integrated, model, x)
        stepped.stepper_model(model, dt)
    stepper = TimeStepper(
        model,
        found,
        dt,
        solver=solver if solver in SOLVERS else "admm",
        tolerance=tolerance,
        max_iterations=max_iterations,
        margin=margin,
        limits=limits,
        friction=friction,
        closures=closures,
        prescribed=prescribed,
    )
    n_steps = int(np.ceil(t_final / dt - 1e-9))
    _refuse_penetration(stepper, found, x[system.layout["q"]], x[system.layout["v"]])
    every = 1 if output_dt is None else max(1, int(round(float(output_dt) / dt)))
    compiled: Any = f"solver={solver!r} asks for Pinocchio's solver"
    if solver in ("auto", "compiled"):
        compiled = compiled_stepper(system, step, stepper, control, law, n_steps, every, stepped, x)
    if isinstance(compiled, str) and solver == "compiled":
        raise InvalidParameter(
            f"solver='compiled', and this scene does not run on it: {compiled}; valid: "
            "solver='auto' (Pinocchio's solvers where the compiled loop does not reach), a "
            "scene of the compiled loop (point contacts on planes, joint limits, <mimic>, joint "
            "friction, springs, dampers, torque inputs, drives without modes), or the "
            "event-driven simulate"
        )
    if not force and n_steps > TIMED_ABOVE:

        def every_effort(t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
            tau = efforts(t, x, u)
            return tau if stepped is None else tau + stepped.efforts(x, stepped.forces(t, x, u), dt)

        _refuse_long(stepper, every_effort, law, system, x, dt, t_final, n_steps, compiled)
    bar = progress_bar(progress, t_final, "timestepping")
    started = time.perf_counter()
    try:
        if not isinstance(compiled, str):
            run = _compiled_run(compiled[0], compiled[1], law, system, x, dt, t_final, n_steps, bar)
        else:
            run = _pinocchio_run(
                stepper, system, efforts, stepped, law, x, dt, t_final, n_steps, every, bar,
                progress,
            )  # fmt: skip
    finally:
        bar.close()
    wall = time.perf_counter() - started
    n = len(found)
    events = [
        EventRecord(
            float(t), f"{'touchdown' if kind else 'lift-off'}:{found[int(c)].name}",
            {"contact": found[int(c)].name},
        )
        for t, c, kind in run.events
    ]  # fmt: skip
    traj = _trajectory(system, run, events, t_final)
    traj.outputs["contact.force"] = run.force.reshape(run.t.size, n, 3)
    traj.outputs["contact.gap"] = run.gap.reshape(run.t.size, n)
    traj.outputs["contact.residual"] = np.minimum(traj.outputs["contact.gap"], 0.0)
    traj.outputs["contact.closed"] = run.closed.reshape(run.t.size, n)
    traj.outputs[AUDIT_NUMERICAL] = run.audit[:, 0]
    traj.outputs[AUDIT_EXPLICIT] = run.audit[:, 1]
    traj.meta["contact_rows"] = [1] * n
    traj.meta["contact_names"] = [c.name for c in found]
    described = {name: {"unit": u, "description": d} for name, (u, d) in CONTACT_OUTPUTS.items()}
    traj.meta.setdefault("outputs", {}).update(described)
    if specs:
        traj.meta[f"{SCENE_KEY}.contact"] = contact_scene_items(specs, None, component="contact")
    unconverged_at = run.unconverged_at
    traj.meta["stats"] = {
        "steps": n_steps,
        "dt": dt,
        "solver": stepper.solver_name if isinstance(compiled, str) else "compiled",
        "solver_iterations": run.iterations,
        "unconverged": run.unconverged,
        "unconverged_at": unconverged_at,
        "limit_steps": run.limit_steps,
        "wall_time": wall,
        "method": "timestepping",
        # the law evaluated inside the compiled loop (a JointPD), with no Python per step
        "control_in_loop": not isinstance(compiled, str) and compiled[0].reference is not None,
    }
    if run.unconverged:
        warnings.warn(
            f"the contact solver did not converge in {run.unconverged} of {n_steps} steps "
            f"(tolerance {tolerance:g}, {max_iterations} iterations; first at t = "
            f"{', '.join(f'{t:.4g}' for t in unconverged_at[:3])} s): those steps use its last "
            "iterate; more iterations or a looser tolerance let it converge: "
            "pinext.simulation.timestepping.simulate_timestepping(system, t_final, dt=..., "
            "max_iterations=..., tolerance=...) takes them (simulate does not)",
            RuntimeWarning,
            stacklevel=2,
        )
    return traj


#: The contact outputs of a time-stepping run (unit, description), as describe_outputs shows.
CONTACT_OUTPUTS = {
    "contact.force": (
        "N",
        "mean force of each contact over the step from the sample (at the end: the step that "
        "ends there), world axes; shape (N, contacts, 3)",
    ),
    "contact.gap": ("m", "signed distance of each contact point to its surface"),
    "contact.residual": ("m", "penetration: the gap where negative, else 0"),
    "contact.closed": ("1", "1 where the contact is in that step's contact problem, else 0"),
}


class _Run(NamedTuple):
    """The samples of a time-stepping run (rows: sample times, then the end)."""

    t: np.ndarray
    x: np.ndarray
    inputs: np.ndarray  # held over the step from each sample (at the end: the law there)
    force: np.ndarray  # mean contact force over the step from the sample, world axes [N]
    gap: np.ndarray
    closed: np.ndarray
    audit: np.ndarray  # (numerical dissipation, explicit error) accumulated [J]
    events: list[tuple[float, int, int]]  # (time, contact, 1 touchdown / 0 lift-off)
    iterations: int
    unconverged: int
    unconverged_at: list[float]
    limit_steps: int
    energy: np.ndarray | None = None  # kinetic, gravity, joint-elastic [J]; None: from x


def _compiled_run(compiled, law, law_end, system, x, dt, t_final, n_steps, bar) -> _Run:
    """Every step on the compiled loop (:mod:`pinext.compiled.timestep`)."""
    layout = system.layout
    order = compiled_order(system, compiled.stepped)
    end, events, t = compiled.run(x, order, law, dt, t_final, n_steps, bar.update)
    nq, nv = system.model.nq, system.model.nv
    gap_end, energy_end = compiled.close(end[:nq], end[nq : nq + nv])
    out, work = compiled.out, compiled.work
    states = np.empty((out.t.size + 1, system.nx))
    states[:-1, layout["q"]], states[:-1, layout["v"]] = out.q, out.v
    states[:-1, order[nq + nv : -2]] = out.own
    states[:-1, layout["input_work"].start] = out.work
    states[:-1, layout["dissipated_energy"].start] = out.lost
    states[-1, order] = end
    u_end = np.asarray(law_end(t, states[-1]), dtype=float)
    # the end: the last step's impulses (its warm start, in the contact frames) over its length
    h_end = min(dt, t_final - (n_steps - 1) * dt)
    force_end = np.einsum("crk,ck->cr", compiled.scene.plane_rotation, work.warm) / h_end
    return _Run(
        t=np.r_[out.t, t],
        x=states,
        inputs=np.concatenate((out.u, u_end[None, :])),
        force=np.concatenate((out.force, force_end[None])),
        gap=np.concatenate((out.gap, gap_end[None, :])),
        closed=np.concatenate((out.closed, work.active[None, :].astype(float))),
        audit=np.concatenate((out.audit, work.audit[None, :])),
        events=[(float(e[0]), int(e[1]), int(e[2])) for e in events],
        iterations=int(work.stats[0]),
        unconverged=int(work.stats[1]),
        unconverged_at=[float(t) for t in work.unconverged_at[: min(work.stats[1], 20)]],
        limit_steps=int(work.stats[3]),
        energy=np.concatenate((out.energy, energy_end[None, :])),
    )


def _pinocchio_run(
    stepper, system, efforts, stepped, law, x, dt, t_final, n_steps, every, bar, progress
) -> _Run:
    """Every step with :meth:`TimeStepper.step` (Pinocchio's Delassus operator and solver),
    the components' states with :meth:`ComponentStates.advance` (``stepped``, or None)."""
    q_block, v_block = system.layout["q"], system.layout["v"]
    work_at = system.layout["input_work"].start
    lost_at = system.layout["dissipated_energy"].start
    n = len(stepper.contacts)
    times, states, inputs, forces, gaps, closed = [], [], [], [], [], []
    numerical = explicit = 0.0  # the scheme's own energy terms, accumulated [J]
    audit: list[tuple[float, float]] = []
    audit_data = stepper.model.createData()
    events: list[tuple[float, int, int]] = []
    iterations = unconverged = 0
    unconverged_at: list[float] = []
    was_closed = np.zeros(n, dtype=bool)
    t = 0.0
    for k in range(n_steps):
        h = min(dt, t_final - t) if k == n_steps - 1 else dt
        if h != stepper.dt:
            stepper.dt = h
        u = np.asarray(law(t, x), dtype=float)
        q, v = x[q_block], x[v_block]
        tau = efforts(t, x, u)  # the System's: their work beyond its joints' is the input's
        if stepped is None:
            result = stepper.step(q, v, tau, t)
        else:
            stepped.stepper_model(stepper.model, h)
            pulls = stepped.forces(t, x, u)
            result = stepper.step(q, v, tau + stepped.efforts(x, pulls, h), t)
        if k % every == 0:
            times.append(t)
            states.append(x.copy())
            inputs.append(u)
            forces.append(result.impulses / h)
            gaps.append(result.gaps.copy())
            closed.append(result.active.copy())
            audit.append((numerical, explicit))
        iterations += result.iterations
        if not result.converged:
            unconverged += 1
            if len(unconverged_at) < 20:
                unconverged_at.append(t)
        touching = np.linalg.norm(result.impulses, axis=1) > 0.0 if n else was_closed
        for i in np.flatnonzero(touching != was_closed):
            events.append((t, int(i), int(touching[i])))
        was_closed = touching
        x_next = x.copy()
        x_next[q_block], x_next[v_block] = result.q, result.v
        x_next[work_at] += float((tau - system.joint_effort(q, v)) @ result.v) * h
        x_next[work_at] += result.driven  # the prescribed joints' impulses
        x_next[lost_at] += result.dissipated + float(system.damping * v @ result.v) * h
        if stepped is not None:
            applied, moved = stepped.advance(t, x, u, pulls, x_next, h)
            tau = tau + applied  # the forces on the mechanism's own M over the step
            x_next[work_at] += moved.work
            x_next[lost_at] += moved.lost
            numerical += moved.numerical
            explicit += moved.explicit
        terms = step_audit(system, stepper.model, audit_data, q, v, tau, result, h)
        numerical += terms.numerical_dissipation
        explicit += terms.explicit_error
        t = t + h
        x = x_next
        if not np.all(np.isfinite(x)):
            raise IntegrationError("non-finite state", t, states[-1] if states else x)
        if progress is not False:
            bar.update(h)
    times.append(t)
    states.append(x.copy())
    inputs.append(np.asarray(law(t, x), dtype=float))
    forces.append(result.impulses / h)  # the end: the step that ended there
    gaps.append(stepper.points(_placements(stepper, x[q_block], x[v_block]))[1])
    closed.append(result.active.copy())
    audit.append((numerical, explicit))
    return _Run(
        t=np.array(times),
        x=np.array(states),
        inputs=np.array(inputs),
        force=np.array(forces).reshape(len(times), n, 3),
        gap=np.array(gaps).reshape(len(times), n),
        closed=np.array(closed, dtype=float).reshape(len(times), n),
        audit=np.array(audit).reshape(len(times), 2),
        events=events,
        iterations=iterations,
        unconverged=unconverged,
        unconverged_at=unconverged_at,
        limit_steps=stepper.limit_steps,
    )


#: Fewest steps of a time-stepping run (first order: fewer give an answer off by O(1)).
MIN_STEPS = 10
#: Deepest start below a contact surface accepted [m] (contacts start closed or open, never
#: buried).
START_PENETRATION = 1e-2
#: Steps timed at the start to estimate a long run's wall time, and the number of steps of a
#: run above which they are timed (shorter runs start at once).
TIMED_STEPS = 5
TIMED_ABOVE = 100_000


def _refuse_penetration(stepper: TimeStepper, found, q: np.ndarray, v: np.ndarray) -> None:
    """Refuse a start with a contact point buried below its surface."""
    if not found:
        return
    gaps = stepper.points(_placements(stepper, q, v))[1]
    deepest = int(np.argmin(gaps))
    if gaps[deepest] < -START_PENETRATION:
        raise InvalidParameter(
            f"contact '{found[deepest].name}' starts {-gaps[deepest]:.3g} m below its surface "
            f"(gap {gaps[deepest]:.3g} m; at most {START_PENETRATION:g} m is accepted): start "
            "the robot on or above the surface (q0)"
        )


def _refuse_long(stepper, efforts, law, system, x, dt, t_final, n_steps, compiled) -> None:
    """Refuse a run whose first steps, timed on the loop that will run them (``compiled``:
    the compiled stepper and its law, or the reason it is not used), give an estimate above
    ``LONG_RUN``."""
    q_block, v_block = system.layout["q"], system.layout["v"]
    steps = min(TIMED_STEPS, n_steps)
    started = time.perf_counter()
    if isinstance(compiled, str):
        for _ in range(steps):
            u = np.asarray(law(0.0, x), dtype=float)
            stepper.step(x[q_block], x[v_block], efforts(0.0, x, u))
    else:  # throwaway runs of the compiled loop; the second, its kernels loaded, is timed
        loop, compiled_law = compiled
        order = compiled_order(system, loop.stepped)
        for _ in range(2):
            started = time.perf_counter()
            trial = type(loop)(
                loop.model, loop.pm, loop.scene, steps, 1, loop.reference, loop.n_inputs,
                loop.stepped, loop.efforts,
            )  # fmt: skip
            trial.constant, trial.prescribed = loop.constant, loop.prescribed
            trial.run(x, order, compiled_law, dt, steps * dt, steps, lambda _: None)
    per_step = (time.perf_counter() - started) / steps
    refuse_long_run(
        f"dt = {dt:g} s for {t_final:g} s is {thousands(n_steps)} steps",
        n_steps * per_step,
        force=False,
        hint="take a larger dt (1e-3 s is typical)",
    )


def _placements(stepper: TimeStepper, q: np.ndarray, v: np.ndarray) -> pin.Data:
    pin.aba(stepper.model, stepper.data, q, v, np.zeros(stepper.model.nv), pin.Convention.WORLD)
    return stepper.data


def _trajectory(system: System, run: _Run, events: list, t_final: float) -> Trajectory:
    """The :class:`Trajectory` of the samples: energies (the mechanism's from the run when it
    has them, as :meth:`System.energy_terms` names them), the inputs applied over the step
    from each sample, and the viewer's metadata."""
    t, x = run.t, run.x
    names = ("kinetic", "gravity", "elastic")
    mechanism = run.energy
    if mechanism is None:
        terms = [system.mechanism_energy(*system.split(xi)) for xi in x]
        mechanism = np.array([[term[name] for name in names] for term in terms])
    outputs: dict[str, Any] = {"input": run.inputs}
    for column, name in enumerate(names):
        outputs[f"energy.{name}"] = mechanism[:, column]
    for comp in system.components:
        if type(comp).energy is Component.energy:  # (stores none: the base class's zero)
            outputs[f"energy.{comp.name}"] = np.zeros(t.size)
        else:
            outputs[f"energy.{comp.name}"] = [comp.energy(xi, *system.split(xi)) for xi in x]
    meta = run_metadata(system)
    return Trajectory(
        t=t,
        x=x,
        layout={k: (s.start, s.stop) for k, s in system.layout.items()},
        phase_index=np.zeros(t.size, dtype=int),
        phases=[PhaseRecord(0.0, float(t_final), "timestepping", ())],
        events=events,
        outputs={k: np.asarray(v, dtype=float) for k, v in outputs.items()},
        meta=meta,
    )
