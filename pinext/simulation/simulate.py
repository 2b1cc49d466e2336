"""simulate: event-driven, phase-aware integration of a System (the run: :mod:`.run`)."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import numpy as np

from ..exceptions import IntegrationError, InvalidParameter
from ..model import Robot
from .arguments import (
    as_controller,
    as_initial_state,
    check_finite_start,
    check_options,
    check_output_dt,
    checked_control,
    control_period_of,
    explained_start,
    joint_space_only,
    warn_free_fall,
)
from .controls import Controller, as_state_law
from .cost import stiff_element
from .held_loop import check_held_loop, diverging
from .run import STIFF_STEPS, Run
from .sampling import HeldControl
from .stiffness import (
    DOP853_STABILITY_BOUND,
    decaying_fast_modes,
    eigenvalues_of,
    report_vibration,
    start_matrix,
)
from .system import System
from .trajectory import Trajectory

#: The automatic choices of the integration method are INFO records of this logger.
_LOG = logging.getLogger("pinext")
#: Tightest rtol at which the default starts with Radau when the fast modes die out
#: (:func:`pinext.simulation.stiffness.decaying_fast_modes`): tighter, DOP853's eighth order
#: takes fewer evaluations than Radau IIA's fifth (measured on the Panda's elastic drives:
#: Radau 0.7 × DOP853's time at rtol 1e-8, 1.2 × at 1e-9, 3 × at 1e-10).
RADAU_RTOL = 1e-8
#: Integration methods of :func:`scipy.integrate.solve_ivp` accepted by :func:`simulate`.
METHODS = ("DOP853", "RK45", "RK23", "Radau", "BDF", "LSODA")


def simulate(
    system_or_robot: System | Robot,
    t_final: float,
    *,
    x0: np.ndarray | None = None,
    q0: np.ndarray | None = None,
    v0: np.ndarray | None = None,
    control: Any = None,
    method: str | None = None,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    max_step: float | None = None,
    output_dt: float | None = None,
    progress: bool | None = None,
    max_events: int = 10_000,
    dt: float | None = None,
    force: bool = False,
    control_period: float | None = None,
) -> Trajectory:
    """Simulate a System from t = 0 to ``t_final``, phase by phase.

    Each phase is integrated with scipy: the default DOP853 runs Hairer's compiled code
    (:mod:`pinext.simulation.dop853`, through ``scipy.integrate.ode``), the other methods run
    :func:`scipy.integrate.solve_ivp`. Phases that compile (:func:`pinext.compiled.
    phase_kernel`) run DOP853 and Radau in compiled code instead (:mod:`pinext.compiled.
    dop853`, :mod:`pinext.compiled.radau`, the same algorithms). The events of the
    components (contact, lift-off, gear efficiency switch, ...) end a phase, their map changes
    the state (impact) and the phase, and integration restarts. Configurations are integrated
    on the manifold (``pin.integrate`` on a local chart), never as ``q + v dt``. Without
    constraints the accelerations are Pinocchio's ``aba`` of

    .. math::

        M(q) \\dot v + h(q, v) = u - K (q - q_0) - D v + \\tau_{components}

    Args:
        system_or_robot: The :class:`System`, or a :class:`Robot` (wrapped in a System).
        t_final: End time [s].
        x0: Initial state: ``[q, v]``, ``[q, v, component states]`` or the full public
            state (see :func:`pinext.simulation.arguments.as_initial_state`); default from
            ``q0``, ``v0``.
        q0: Initial configuration (default: neutral).
        v0: Initial velocity (default: zero).
        control: Inputs: None (zero), a constant vector, a :class:`Schedule`, a
            controller ``law(t, q, v, sensors)`` (a :class:`pinext.control.Controller` or a
            plain function of those four arguments), or a function ``u(t, x)`` of the
            public state. Joint torques [N.m] for a robot without drives, else the drives'
            inputs (voltages [V], ...).
        method: A solve_ivp method among :data:`METHODS`, or ``"momentum"`` for the Celentano
            (2008) scheme of Theorem 1 (state (q, p = M v)). None (default): DOP853, unless
            the linearised system at the start is so stiff that DOP853's stability would need
            more than :data:`STIFF_STEPS` steps (:func:`pinext.simulation.stiffness.
            dop853_steps`), or its fast modes all die out early in the run and ``rtol`` is at
            least :data:`RADAU_RTOL` (:func:`pinext.simulation.stiffness.
            decaying_fast_modes`): then ``"Radau"``, announced by a warning. With a sampled
            control law whose period is within DOP853's stability limit (``T_s ρ`` below
            :data:`pinext.simulation.stiffness.DOP853_STABILITY_BOUND`), DOP853: the
            period bounds the steps anyway. For stiff damped models
            (finely split flexible links with ``damping_ratio``, very stiff transmissions)
            Radau gets, in linear phases, the analytic Jacobian (Pinocchio's
            ``computeABADerivatives``; in compiled phases forward differences) and its steps
            no longer shrink with the stiffness. When DOP853's own stiffness test fires
            during a run with ``method=None``, the rest of the run continues with Radau.
            A vibration that does not die out and forces more than
            :data:`~pinext.simulation.stiffness.VIBRATION_STEPS` steps is reported at the
            start (its frequency, the steps and evaluations it costs, and what removes it),
            whatever the method.
        rtol: Relative tolerance.
        atol: Absolute tolerance.
        max_step: Largest step [s] (compiled DOP853 may stretch its last step by 1 %).
        output_dt: Sample period of the output [s]; None keeps the solver's steps. The last
            sample is at ``t_final`` even when ``output_dt`` does not divide it.
        progress: Show a tqdm progress bar with an estimate of the time left: True from the
            start, False never, None (default) once the run has lasted
            :data:`pinext.simulation.progress.PROGRESS_DELAY` seconds (never inside
            :func:`pinext.simulation.progress.without_bars`: a sweep's workers).
        max_events: Stop with :class:`IntegrationError` after this many events (Zeno guard).
        dt: Step [s] of ``method="timestepping"`` (Moreau–Jean time stepping for many
            contacts, :func:`pinext.simulation.timestepping.simulate_timestepping`; rtol, atol,
            max_step and max_events do not apply to it).
        force: Run even when the start estimates a wall time above
            :data:`pinext.validation.LONG_RUN` (a lasting vibration that forces tens of
            millions of steps, a time step far too small, a stiff element whose steps the
            run's first :data:`pinext.simulation.cost.PROBE_SECONDS` of integration measure
            too short: :class:`pinext.simulation.cost.CostProbe`): without it such a run is
            refused at the start, with the estimate, the stiff element and what shortens it.
        control_period: Sample period ``T_s`` [s] of the control law: the law is called at
            ``t_k = k T_s`` and its result held until ``t_{k+1}`` (zero-order hold, as a real
            controller and MuJoCo's ``ctrl``), and the dynamics between samples run on the
            compiled path when the phase compiles. None (default): a controller
            ``law(t, q, v, sensors)`` is sampled every
            :data:`pinext.simulation.arguments.CONTROL_PERIOD` (1 ms); a function ``u(t, x)``
            stays continuous (called at every evaluation of the right-hand side, on the
            Python path). ``0``: continuous for any law (reference runs of a Controller).
            A constant or a :class:`Schedule` is already a function of time only: a
            ``control_period`` with one is an error.

    Returns:
        The :class:`Trajectory`. ``meta["stats"]`` holds ``nfev``, ``wall_time``, ``method``
        (the one that finished the run), ``switched_to_radau_at`` (the time DOP853's stiffness
        test handed over, or None), ``spectral_radius`` (ρ of the linearised system at the
        start [1/s], when the default or DOP853 read it), ``segments`` and
        ``compiled_segments`` (how many ran on the compiled path), ``loop_events`` (the
        events a compiled loop applied itself: contact bounces, :mod:`pinext.compiled.
        impacts`), ``compiled_time`` (the
        part of ``wall_time`` [s] in compiled loops), ``control_period`` (None when
        continuous) and ``control_samples`` (calls of a sampled law).

    Raises:
        IntegrationError: The solver failed, a state became NaN or infinite, or too many events.
    """
    control = as_controller(control)
    check_finite_start(x0=x0, q0=q0, v0=v0)
    if method == "timestepping":
        from .timestepping import simulate_timestepping

        check_output_dt(output_dt)
        period = control_period_of(control, control_period, t_final)
        if period is not None:  # sampled at the first step of each period
            if isinstance(control, Controller):
                if isinstance(system_or_robot, System):
                    layout = system_or_robot.layout
                else:  # time stepping integrates no component states: q and v are the state
                    nq, nv = system_or_robot.model.nq, system_or_robot.model.nv
                    layout = {"q": slice(0, nq), "v": slice(nq, nq + nv)}
                control = as_state_law(control, layout)
            control = HeldControl(control, period, None, lazy=True)
        return simulate_timestepping(
            system_or_robot,
            t_final,
            dt=dt,
            x0=x0,
            q0=q0,
            v0=v0,
            control=control,
            output_dt=output_dt,
            progress=progress,
            force=force,
        )
    if dt is not None:
        raise InvalidParameter("dt is the step of method='timestepping' only")
    system = system_or_robot if isinstance(system_or_robot, System) else System(system_or_robot)
    chosen = method
    method = "DOP853" if method is None else method
    momentum = method == "momentum"
    if momentum:
        method = "DOP853"
    elif method not in METHODS:
        raise InvalidParameter(
            f"unknown method '{method}'; valid methods: {', '.join(METHODS)}, momentum, "
            "timestepping"
        )
    t_final = check_options(
        t_final, rtol=rtol, atol=atol, max_step=max_step, output_dt=output_dt, method=method
    )
    x = given = as_initial_state(system, x0, q0, v0)
    if not np.all(np.isfinite(x)):
        raise IntegrationError("non-finite initial state", 0.0, x)
    warn_free_fall(system, not joint_space_only(system))
    period = control_period_of(control, control_period, t_final)
    law: Any = checked_control(control, system, x)
    if period is not None:
        with explained_start(system, given):
            check_held_loop(system, x, law, period, force, t_final)
        law = HeldControl(diverging(system, law), period, system.n_inputs)
    rho = element = None
    if not momentum:  # the start's spectrum, with a continuous Controller's gains in it
        closed = law if period is None and getattr(law, "controller", None) else None
        with explained_start(system, given):
            matrix = start_matrix(system, x, closed)
            held = None if closed is None else start_matrix(system, x)
        element = stiff_element(system, matrix, held)
    if method == "DOP853" and not momentum:
        eigenvalues = eigenvalues_of(matrix)
        rho = float(np.abs(eigenvalues).max()) if eigenvalues.size else 0.0
        report_vibration(eigenvalues, t_final, rtol, force, element)
        steps = t_final * rho / DOP853_STABILITY_BOUND
        if period is not None and steps <= t_final / period:
            pass  # a sampled law cuts the steps at its period, within DOP853's stability
        elif steps > STIFF_STEPS:
            advice = (
                f"the run is stiff from the start: DOP853's stability needs at least "
                f"{steps:.2g} steps for {t_final:g} s"
            )
            if chosen is None:
                method = "Radau"
                _LOG.info("%s; integrating with method='Radau'", advice)
            else:
                warnings.warn(f"{advice}; method='Radau' would not", RuntimeWarning, 2)
        elif chosen is None and rtol >= RADAU_RTOL and decaying_fast_modes(eigenvalues, t_final):
            method = "Radau"
            _LOG.info(
                "the run is stiff from the start: its fast modes die out early; integrating "
                "with method='Radau'"
            )
    options: dict[str, Any] = {"rtol": rtol, "atol": atol}
    if max_step is not None:
        options["max_step"] = max_step
    if method != "DOP853":  # DOP853: Hairer's, stepped in compiled code (dop853.solve)
        options["method"] = method
    traj = Run(
        system,
        x,
        given,
        law,
        t_final,
        method,
        options,
        momentum=momentum,
        chosen=chosen,
        rho=rho,
        output_dt=output_dt,
        progress=progress,
        max_events=max_events,
        probe=None if force else element,
    ).go()
    for comp in system.components:  # their warnings (stacklevel 3) name simulate's caller
        comp.report(traj)
    return traj
