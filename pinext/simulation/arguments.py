"""Checks and conversions of :func:`pinext.simulate`'s arguments.

Kept apart from the integration loop so that every argument error is raised before anything
runs, names the argument and says what is valid:

- :func:`check_options`: ``t_final``, ``rtol``, ``atol``, ``max_step``, ``output_dt``;
- :func:`output_times`: the sample times of a phase for ``output_dt`` (the last sample is
  ``t_final`` itself, even when ``output_dt`` does not divide it);
- :func:`as_initial_state`: ``x0`` in the full layout, as ``[q, v]`` (Pinocchio's state) or as
  ``[q, v, component states]``, or ``q0``/``v0`` (defined in
  :mod:`pinext.simulation.initial_state`, with :func:`state_sizes`);
- :func:`check_finite_start`: no NaN or infinity in ``x0``, ``q0``, ``v0``;
- :func:`checked_control`: the control law called once at the initial state, its signature and
  the shape of what it returns checked (defined in :mod:`pinext.simulation.controls`);
- :func:`control_period_of`: the sample period of the control law (None: continuous).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exceptions import InconsistentInitialConditions, InvalidParameter
from ..validation import describe, real, thousands
from .controls import Controller, Schedule, checked_control
from .initial_state import as_initial_state, state_sizes

if TYPE_CHECKING:
    from .system import System

__all__ = [
    "CONTROL_PERIOD",
    "IMPLICIT_RTOL",
    "IMPOSED_STEP",
    "MAX_CONTROL_SAMPLES",
    "MAX_TOLERANCE",
    "MIN_CONTROL_PERIOD",
    "as_initial_state",
    "check_finite_start",
    "check_options",
    "check_output_dt",
    "checked_control",
    "control_period_of",
    "explained_start",
    "imposed_start",
    "output_times",
    "state_sizes",
]

#: Relative tolerance under which two sample times are the same sample.
_SAME_TIME = 1e-9
#: Default sample period [s] of a :class:`pinext.control.Controller` (a 1 kHz controller).
CONTROL_PERIOD = 1e-3


#: Largest rtol and atol accepted: beyond them the error control no longer controls anything
#: (with rtol = atol = 1 a step may be 100 % wrong) and an event cascade can stall the run.
MAX_TOLERANCE = 0.1
#: Smallest rtol of the implicit methods (SciPy divides by it in its Newton iteration).
IMPLICIT_RTOL = 100 * np.finfo(float).eps


def _real(name: str, value: Any, unit: str, expected: str) -> float:
    """``value`` as a float; anything else (text, arrays, None, bool) names the argument."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidParameter(f"{name} must be {expected} {unit}, got {describe(value)}")
    return float(value)


def check_options(
    t_final: Any,
    *,
    rtol: Any = 1e-10,
    atol: Any = 1e-12,
    max_step: Any = None,
    output_dt: Any = None,
    method: str | None = None,
) -> float:
    """Check the numerical options of :func:`pinext.simulate`.

    Args:
        t_final: End time [s]: finite and positive.
        rtol: Relative tolerance [-]: finite, >= 0.
        atol: Absolute tolerance: a finite number >= 0, or an array of them (per state entry).
        max_step: Largest step [s]: None or > 0 (``inf`` is unbounded).
        output_dt: Sample period [s]: None or finite and positive.
        method: The integration method; the implicit ones (Radau, BDF, LSODA) need
            ``rtol >= 100 eps``.

    Returns:
        ``t_final`` as a float [s].

    Raises:
        InvalidParameter: The first argument out of its range; the message names it, gives the
            value and the valid range.
    """
    t_final = _real("t_final", t_final, "[s]", "a finite positive time")
    if not (math.isfinite(t_final) and t_final > 0):
        raise InvalidParameter(f"t_final must be a finite positive time [s], got {t_final}")
    rtol = real("rtol", rtol, unit="[-]", low=0.0, high=MAX_TOLERANCE)
    if method in ("Radau", "BDF", "LSODA") and rtol < IMPLICIT_RTOL:
        raise InvalidParameter(
            f"rtol = {rtol:g} with method='{method}': the implicit methods need rtol >= "
            f"{IMPLICIT_RTOL:.3g} (100 machine epsilons); use e.g. rtol=1e-10"
        )
    try:
        atol_array = np.asarray(atol, dtype=float)
    except (TypeError, ValueError):
        raise InvalidParameter(
            f"atol must be a finite number >= 0 or an array of them, got {atol!r}"
        ) from None
    if atol_array.size == 0 or not np.all(
        np.isfinite(atol_array) & (atol_array >= 0) & (atol_array <= MAX_TOLERANCE)
    ):
        raise InvalidParameter(
            f"atol must be a finite number in [0, {MAX_TOLERANCE:g}] or an array of them, "
            f"got {atol!r}"
        )
    if rtol == 0 and not atol_array.any():
        raise InvalidParameter("rtol and atol are both 0: at least one must be positive")
    if max_step is not None:
        max_step = _real("max_step", max_step, "[s]", "None or a positive step")
        if not max_step > 0:  # also rejects NaN
            raise InvalidParameter(
                f"max_step must be None or a positive step [s] (inf: unbounded), got {max_step}"
            )
    check_output_dt(output_dt)
    return t_final


def check_output_dt(output_dt: Any) -> float | None:
    """``output_dt`` [s]: None (every step) or a finite positive sample period; every method
    (the integrators and time stepping) checks it here.

    Raises:
        InvalidParameter: Text, NaN, ±inf, zero or a negative period.
    """
    if output_dt is None:
        return None
    output_dt = _real("output_dt", output_dt, "[s]", "None or a finite positive period")
    if not (math.isfinite(output_dt) and output_dt > 0):
        raise InvalidParameter(
            f"output_dt must be None (the solver's steps) or a finite positive sample "
            f"period [s], got {output_dt}"
        )
    return output_dt


def check_finite_start(**given: Any) -> None:
    """``x0``, ``q0``, ``v0`` as given: a NaN or an infinity is named with its argument and
    entries (the state built from them was only reported as a "non-finite initial state").
    What is not numbers is left to :func:`as_initial_state`, which names its shape and type.

    Raises:
        InvalidParameter: An argument with a non-finite entry.
    """
    for name, value in given.items():
        if value is None:
            continue
        try:
            entries = np.asarray(value, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            continue
        bad = np.flatnonzero(~np.isfinite(entries))
        if bad.size:
            raise InvalidParameter(
                f"{name} must be finite, got {entries} (entries {bad.tolist()} are not)"
            )


def output_times(t_start: float, t_final: float, output_dt: float) -> np.ndarray:
    """The sample times in ``[t_start, t_final]`` for a sample period ``output_dt``.

    The grid is ``k * output_dt`` (the same grid in every phase), computed by multiplication so
    that it does not drift, and it always ends with ``t_final``: ``output_dt = 0.3`` and
    ``t_final = 1`` give 0, 0.3, 0.6, 0.9, 1.

    Args:
        t_start: Start of the phase [s].
        t_final: End of the run [s].
        output_dt: Sample period [s], > 0.

    Returns:
        Shape (k,), increasing times [s].
    """
    first = math.ceil(t_start / output_dt - _SAME_TIME)
    last = math.floor(t_final / output_dt + _SAME_TIME)
    times = np.arange(first, last + 1) * output_dt
    times = times[(times >= t_start) & (times <= t_final)]
    if times.size and t_final - times[-1] <= _SAME_TIME * output_dt:
        times[-1] = t_final  # k * output_dt within rounding of t_final: t_final exactly
    else:
        times = np.append(times, t_final)
    return times


#: A state entry that an imposed law moves by more than this [rad, m, rad/s or m/s] at the
#: start of a run is a step of the start state.
IMPOSED_STEP = 1e-8


def imposed_start(
    system: System, x: np.ndarray, error: InconsistentInitialConditions
) -> InconsistentInitialConditions:
    """``error`` (a closure open at the start), told of the components whose imposed states
    (prescribed joints) move the given start state: the closures were closed for another
    position of those joints, a step the loops cannot follow."""
    moved = []
    for comp in system.imposing:
        y = np.array(x, dtype=float)
        comp.impose(0.0, y)
        step = float(np.abs(y - x).max(initial=0.0))
        if step > IMPOSED_STEP:
            joints = ", ".join(comp.prescribed_joints()) or "its states"
            moved.append(f"'{comp.name}' sets {joints} {step:.4g} away from the start state")
    if not moved:
        return error
    return InconsistentInitialConditions(
        f"{error}. The cause: at t = 0 s {'; '.join(moved)} (a position step at the start); "
        "start from the law's values: x0 = pinext.close_loops(system, q0) on the System that "
        "holds the prescribed motion imposes the law at t = 0 before it closes the loops",
        error.residuals,
        error.quantity,
    )


@contextlib.contextmanager
def explained_start(system: System, x: np.ndarray) -> Iterator[None]:
    """Re-raise a closure open at the start with :func:`imposed_start`'s explanation."""
    try:
        yield
    except InconsistentInitialConditions as err:
        raise imposed_start(system, x, err) from None


#: Shortest control period [s] accepted: a 1 MHz loop, beyond the rates of robot controllers
#: (0.1–10 kHz); below it the samples alone would fill the memory.
MIN_CONTROL_PERIOD = 1e-6
#: Most samples of a sampled control law in one run (each holds the System's inputs).
MAX_CONTROL_SAMPLES = 10_000_000


class _FunctionController(Controller):
    """A plain function ``law(t, q, v, sensors)`` as the :class:`Controller` it spells."""

    def __init__(self, law: Callable[..., Any]) -> None:
        self.law = law
        self.breakpoints = getattr(law, "breakpoints", ())

    def __call__(self, t, q, v, sensors):  # noqa: D102
        return self.law(t, q, v, sensors)


def as_controller(control: Any) -> Any:
    """``control`` as given, or a plain function of the controller's four arguments
    ``law(t, q, v, sensors)`` (and not of the state law's two, ``u(t, x)``) as a
    :class:`Controller`: sampled at a control period by default, as any controller."""
    if isinstance(control, Controller | Schedule) or not callable(control):
        return control
    try:
        signature = inspect.signature(control)
    except (TypeError, ValueError):  # builtins without a signature: a state law
        return control
    for arguments, controller in (((0.0, None), False), ((0.0, None, None, None), True)):
        try:
            signature.bind(*arguments)
        except TypeError:
            continue
        return _FunctionController(control) if controller else control
    return control


def control_period_of(
    control: Any, control_period: Any, t_final: float | None = None
) -> float | None:
    """The sample period of a run's control law [s], or None for a continuous law.

    The rule: a :class:`pinext.control.Controller` (what a robot's controller computes; a
    plain function ``law(t, q, v, sensors)`` is one, :func:`as_controller`) is
    sampled every :data:`CONTROL_PERIOD` unless ``control_period`` says otherwise; a function
    ``u(t, x)`` stays continuous unless a period is given; ``control_period=0`` makes any law
    continuous (reference runs). A constant or a :class:`Schedule` is a function of time only
    and takes no period.

    Args:
        control: The ``control`` argument of :func:`pinext.simulate`.
        control_period: None (the default of the law's kind), 0 (continuous), or a finite
            period of at least :data:`MIN_CONTROL_PERIOD` [s] that gives at most
            :data:`MAX_CONTROL_SAMPLES` samples over ``t_final``.
        t_final: The run's end time [s] (None: the number of samples is not checked).

    Raises:
        InvalidParameter: A period that is not a finite number >= 0, a period too short (the
            message gives the shortest sensible one), or a period given with a constant,
            None or a Schedule; all before the run allocates anything.
    """
    if control_period is not None:
        period = _real(
            "control_period", control_period, "[s]", "None, 0 (continuous) or a positive period"
        )
        if not (math.isfinite(period) and period >= 0):
            raise InvalidParameter(
                "control_period must be None (the default: 1 ms for a Controller, continuous "
                f"for u(t, x)), 0 (continuous) or a finite positive period [s], got {period}"
            )
        if period > 0 and (not callable(control) or isinstance(control, Schedule)):
            raise InvalidParameter(
                f"control_period={period:g} applies to a control law (a Controller or u(t, x)); "
                f"the control given ({type(control).__name__}) is already a function of time "
                "only: drop control_period, or sample it with a Schedule of kind 'zoh'"
            )
        if period > 0:
            shortest = MIN_CONTROL_PERIOD
            if (
                isinstance(t_final, (int, float, np.integer, np.floating))
                and math.isfinite(t_final)
                and t_final > 0
            ):
                shortest = max(shortest, float(t_final) / MAX_CONTROL_SAMPLES)
            if period < shortest:
                samples = (
                    ""
                    if shortest == MIN_CONTROL_PERIOD
                    else (
                        f" ({float(t_final) / period:.3g} samples over {float(t_final):g} s)"  # type: ignore[arg-type]
                    )
                )
                raise InvalidParameter(
                    f"control_period={period:g} s is too short{samples}: the shortest sensible "
                    f"period here is {shortest:g} s (a loop of at most "
                    f"{1e-6 / MIN_CONTROL_PERIOD:g} MHz, at most {thousands(MAX_CONTROL_SAMPLES)} "
                    "samples a run; robot controllers run at 0.1-10 kHz); for a law evaluated "
                    "continuously pass control_period=0"
                )
        return period if period > 0 else None
    if isinstance(control, Controller):
        return CONTROL_PERIOD
    return None


def warn_free_fall(system: System, held: bool, stacklevel: int = 3) -> None:
    """Warn that a robot on a free flyer falls freely under gravity when nothing can hold it
    (``held``: it has contacts, or a component that is not one of the joint-space ones of
    :func:`joint_space_only`), naming the ways to give it contacts; ``stacklevel`` points
    at the caller of :func:`pinext.simulate`."""
    model = system.model
    root = model.joints[1].shortname() if model.njoints > 1 else ""
    if held or root != "JointModelFreeFlyer" or not np.any(model.gravity.linear):
        return
    warnings.warn(
        f"'{model.name}' floats on a free flyer with no contact: it falls freely. Give it "
        "contacts: contacts=[...] of simulate or System, the robot's [[contacts]] extensions "
        "(load_robot gives them for the robots pinext ships them for, e.g. Solo12's feet)",
        UserWarning,
        stacklevel=stacklevel,
    )


def joint_space_only(system: System) -> bool:
    """Whether every component of the System acts on one-DOF joints only (limits, friction,
    couplings, drives, effort saturation): none of them can hold a floating base."""
    from ..constraints.mimic import Mimic
    from ..contact.joint_friction import JointFriction
    from ..contact.limits import EffortSaturation, JointLimits
    from ..drives.drive import DriveComponent

    kinds = (JointLimits, JointFriction, Mimic, DriveComponent, EffortSaturation)
    return all(isinstance(c, kinds) for c in system.components)
