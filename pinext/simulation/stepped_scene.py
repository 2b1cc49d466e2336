"""Which time-stepped scenes the compiled loop runs, and the loop for one.

:func:`compiled_stepper` packs a time-stepping run's scene for the compiled Moreau–Jean loop
(:mod:`pinext.compiled.stepping`): its contacts, limits, ``<mimic>`` couplings, loops,
prescribed joints and joint friction as rows, the drives' own states and the stateless
components' efforts as linear forms (:mod:`pinext.contact.stepped_states`), a ``JointPD`` as
the loop's own law; or says why not (a user's effort that is not linear in q and v). The run
itself is :func:`pinext.simulation.timestepping.simulate_timestepping`'s.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ..contact.stepped_states import ComponentStates, LinearEfforts
from ..exceptions import UnsupportedModel
from .component import FrameRows, stepped_components
from .system import System

log = logging.getLogger("pinext.simulation.timestepping")


def compiled_stepper(system, step, stepper, control, law, n_steps, every, stepped, x):
    """(the compiled stepper, the law it calls per step or None) for a scene the compiled
    loop covers (``stepped``: the components' own states, a :class:`ComponentStates` or
    None; x: the start); otherwise the reason why not (also logged at INFO level)."""
    from .. import compiled
    from ..compiled.model import pack
    from ..compiled.stepping import CompiledStepper, linear_fields, pd_law, stepping_scene

    own = {id(c) for c, _ in stepped.items} if stepped is not None else set()
    acting = [(c, m) for c, m in step.acting if c.stepped_kind is None and id(c) not in own]
    efforts = LinearEfforts(system, acting, stepper.model, x) if acting else None
    loops = stepped_components(system, "closure")
    rows = [c.compiled_rows(None) for c in loops]
    reason = None
    if not compiled.enabled():
        reason = "the compiled path is off (PINEXT_NO_COMPILED)"
    elif not system.torque_inputs and stepped is None and efforts is None:
        reason = "the inputs are not joint torques"
    elif not stepper.model.nq == system.model.nq:
        reason = "the stepper's model differs from the System's"
    elif not all(isinstance(r, FrameRows) for r in rows):
        reason = f"closures {[c.name for c in loops]} have no compiled rows"
    if reason is None:
        pd = pd_law(_controller(control, stepper.dt), system.model)
        pd = pd if system.torque_inputs else None
        try:
            pm = pack(stepper.model)
            q_start = x[system.layout["q"]]
            linear = linear_fields(
                stepped, efforts, stepper.model, pm, stepper.dt, system.model.armature, q_start
            )
            if isinstance(linear, str):
                named = [c for c, _ in (*(stepped.items if stepped else ()), *acting)]
                reason = f"{', '.join(c.name for c in named)}: {linear}"
            else:
                scene = stepping_scene(
                    stepper.model,
                    pm,
                    stepper.contacts,
                    stepper.limits,
                    stepper.friction,
                    stepped_components(system, "mimic"),
                    _effort_limit(system),
                    system.damping,
                    system.stiffness,
                    system.q_rest,
                    stepper.margin,
                    stepper.settings.absolute_feasibility_tol,
                    stepper.settings.max_iterations,
                    pd,
                    linear,
                    system.torque_inputs,
                    rows,
                    stepped_components(system, "prescribed"),
                )
        except UnsupportedModel as err:
            reason = str(err)
    if reason is not None:
        log.info("time stepping runs with Pinocchio's solver: %s", reason)
        return reason
    constant = control is not None and not callable(control)
    reference = None if pd is None else pd[0]
    stepping = CompiledStepper(
        stepper.model, pm, scene, n_steps, every, reference, system.n_inputs, stepped, efforts
    )
    stepping.prescribed = stepped_components(system, "prescribed")
    if constant:  # the inputs of every step, given once
        stepping.constant = np.asarray(law(0.0, None), dtype=float)
    return stepping, (None if pd is not None or control is None or constant else law)


def _effort_limit(system: System) -> np.ndarray:
    """The inputs' saturation of the compiled loop: the System's effort limits where it
    saturates its joint-torque inputs (``saturate_efforts=True``), else none."""
    limit = np.full(system.model.nv, np.inf)
    for comp in stepped_components(system, "saturation"):
        if comp.active:
            limit = np.minimum(limit, comp.limit)
    return limit


def _controller(control: Any, dt: float) -> Any:
    """The controller object a run's law evaluates at every step (None when it is held
    over several steps)."""
    period = getattr(control, "period", None)  # a HeldControl
    if period is not None:
        if period > dt * (1.0 + 1e-9):
            return None
        control = control.law
    return getattr(control, "controller", control)


def compiled_order(system: System, stepped: ComponentStates | None = None) -> np.ndarray:
    """The public state's indices of the compiled loop's state (q, v, the own states
    (p, w, s) of ``stepped``, input work, dissipated energy)."""
    layout = system.layout
    own = [] if stepped is None else [stepped.p, stepped.w, stepped.s]
    return np.concatenate(
        [
            np.arange(layout["q"].start, layout["q"].stop),
            np.arange(layout["v"].start, layout["v"].stop),
            *own,
            [layout["input_work"].start, layout["dissipated_energy"].start],
        ]
    ).astype(int)
