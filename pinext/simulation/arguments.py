"""Checks and conversions of :func:`pinext.simulate`'s arguments.

Kept apart from the integration loop so that every argument error is raised before anything
runs, names the argument and says what is valid:

- :func:`check_options`: ``t_final``, ``rtol``, ``atol``, ``max_step``, ``output_dt``;
- :func:`output_times`: the sample times of a phase for ``output_dt`` (the last sample is
  ``t_final`` itself, even when ``output_dt`` does not divide it);
- :func:`as_initial_state`: ``x0`` in the full layout, as ``[q, v]`` (Pinocchio's state) or as
  ``[q, v, component states]``, or ``q0``/``v0``;
- :func:`checked_control`: the control law called once at the initial state, its signature and
  the shape of what it returns checked;
- :func:`control_period_of`: the sample period of the control law (None: continuous).
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..control.base import Controller, as_state_law
from ..exceptions import InconsistentInitialConditions, InvalidParameter
from ..model import massless_joints, massless_message, singular_inertia
from ..validation import describe, real, vector
from .controls import ControlLaw, Schedule, as_control

if TYPE_CHECKING:
    from .system import System

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
    if output_dt is not None:
        output_dt = _real("output_dt", output_dt, "[s]", "None or a finite positive period")
        if not (math.isfinite(output_dt) and output_dt > 0):
            raise InvalidParameter(
                f"output_dt must be None (the solver's steps) or a finite positive sample "
                f"period [s], got {output_dt}"
            )
    return t_final


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


def _vector(name: str, value: Any, size: int, what: str) -> np.ndarray:
    """A float vector of the given size; the error names the argument."""
    return vector(name, value, size, what=what, finite=False)


def _rigid(system: System) -> Any:
    """The rigid model of a System whose robot has flexible links (more DOFs), else None."""
    rigid = getattr(system.robot, "rigid_model", None)
    if rigid is None or (rigid.nq, rigid.nv) == (system.model.nq, system.model.nv):
        return None
    return rigid


def _velocity_map(system: System, rigid: Any) -> np.ndarray:
    """Index in the flexible model's v of each entry of the rigid model's v (joints matched
    by name)."""
    model = system.model
    index = np.empty(rigid.nv, dtype=int)
    for j in range(1, rigid.njoints):
        old = rigid.joints[j]
        new = model.joints[model.getJointId(rigid.names[j])]
        index[old.idx_v : old.idx_v + old.nv] = np.arange(new.idx_v, new.idx_v + new.nv)
    return index


def _full_size(system: System, name: str, value: Any, which: str) -> np.ndarray:
    """``q0``/``v0`` of the model's size, or of the rigid model's size for a robot with
    flexible links: then expanded with zero deflection (the elastic joints at rest)."""
    from ..flexible.sublinks import expand_configuration

    model, rigid = system.model, _rigid(system)
    size = model.nq if which == "q" else model.nv
    what = "the configuration" if which == "q" else "the generalized velocity"
    if rigid is None:
        return _vector(name, value, size, what)
    small = rigid.nq if which == "q" else rigid.nv
    array = vector(name, value, None, what=what, finite=False) if np.ndim(value) else None
    if array is not None and array.size == small:
        if which == "q":
            return expand_configuration(rigid, model, array)
        full = np.zeros(model.nv)
        full[_velocity_map(system, rigid)] = array
        return full
    if array is not None and array.size == size:
        return array
    shape = "()" if array is None else str(array.shape)
    raise InvalidParameter(
        f"{name} must have shape ({size},) ({what} with the flexible links' elastic joints) or "
        f"({small},) (the rigid model's, expanded with zero deflection), got {shape}"
    )


def state_sizes(system: System) -> dict[str, int]:
    """The sizes of the initial states :func:`as_initial_state` accepts, by layout."""
    nq, nv, nx = system.model.nq, system.model.nv, system.nx
    sizes = {"[q, v]": nq + nv}
    rigid = _rigid(system)
    if rigid is not None:
        sizes["[q, v] of the rigid model (zero deflection)"] = rigid.nq + rigid.nv
    if nx - 2 != nq + nv:
        sizes["[q, v, component states]"] = nx - 2
    sizes["[q, v, component states, input_work, dissipated_energy]"] = nx
    return sizes


def as_initial_state(system: System, x0: Any = None, q0: Any = None, v0: Any = None) -> np.ndarray:
    """The public initial state of a run from ``x0`` or from ``q0`` and ``v0``.

    ``x0`` may be given in three layouts: Pinocchio's ``[q, v]`` (component states, e.g. motor
    angles, start from the components' rest state for that q, v), ``[q, v, component
    states]``, or the full public state, which also has the energy-bookkeeping entries
    ``input_work`` and ``dissipated_energy`` [J]; they are zero-filled when omitted.

    Args:
        system: The system.
        x0: Initial state, or None.
        q0: Initial configuration (default: neutral); only without x0.
        v0: Initial velocity (default: zero); only without x0.

    Returns:
        Shape (nx,), the full public state.

    Raises:
        InvalidParameter: Non-numeric values, wrong sizes (the message lists the accepted
            ones), x0 given together with q0 or v0, a joint that moves no mass (see
            :func:`pinext.model.massless_joints`) or joints whose links have mass but no
            rotational inertia (:func:`pinext.model.singular_inertia`): an acceleration
            would be undefined.
    """
    x = _initial_state(system, x0, q0, v0)
    q = x[: system.model.nq]
    if np.all(np.isfinite(q)):
        massless = massless_joints(system.model, q)
        if massless:
            raise InvalidParameter(massless_message(*massless[0]))
        singular = singular_inertia(system.model, q)
        if singular is not None:
            raise InvalidParameter(singular)
    return x


def _initial_state(system: System, x0: Any, q0: Any, v0: Any) -> np.ndarray:
    nq, nv, nx = system.model.nq, system.model.nv, system.nx
    if x0 is None:
        q = None if q0 is None else _full_size(system, "q0", q0, "q")
        v = None if v0 is None else _full_size(system, "v0", v0, "v")
        return system.initial_state(q, v)
    if q0 is not None or v0 is not None:
        raise InvalidParameter("give either x0 or q0/v0, not both")
    try:
        x = np.array(x0, dtype=float)
    except (TypeError, ValueError) as err:
        raise InvalidParameter(f"x0 must be numbers, got {x0!r} ({err})") from None
    sizes = state_sizes(system)
    if x.ndim != 1 or x.size not in sizes.values():
        accepted = ", ".join(f"{size} {name}" for name, size in sizes.items())
        raise InvalidParameter(f"x0 has shape {x.shape}; accepted sizes: {accepted}")
    rigid = _rigid(system)
    if rigid is not None and x.size == rigid.nq + rigid.nv and x.size not in (nq + nv, nx - 2):
        q = _full_size(system, "x0[:nq]", x[: rigid.nq], "q")
        v = _full_size(system, "x0[nq:]", x[rigid.nq :], "v")
        return system.initial_state(q, v)
    if x.size == nq + nv:
        full = system.initial_state(x[:nq], x[nq:])
        if not np.all(np.isfinite(x)):  # initial_state may mix NaN; keep the given entries
            full[: nq + nv] = x
        return full
    if x.size == nx - 2:
        return np.concatenate([x, np.zeros(2)])
    return x


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


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    if np.isscalar(value):
        return f"a scalar ({type(value).__name__} {value!r})"
    return (
        f"a {type(value).__name__} of length {len(value)}"
        if hasattr(value, "__len__")
        else (f"a {type(value).__name__}")
    )


def _inputs_text(system: System) -> str:
    if system.torque_inputs:
        return f"joint torques/forces [N.m or N], one per DOF (nv = {system.model.nv})"
    return f"the drives' inputs ({', '.join(system.drives)}; voltages [V] for DC motors)"


def checked_control(control: Any, system: System, x0: np.ndarray, t0: float = 0.0) -> ControlLaw:
    """The control law of a run, checked once at the initial state.

    A callable must accept ``(t, x)`` and return an array of shape ``(n_inputs,)``. A list or
    tuple of the right length, or a scalar for a single input, is converted (the law is then
    wrapped with ``np.asarray``); anything else is an error before the run starts.

    Args:
        control: None, a constant vector, a :class:`pinext.Schedule` or a function ``u(t, x)``.
        system: The system (gives the number and meaning of the inputs).
        x0: The initial public state, passed to the law once.
        t0: The initial time [s].

    Returns:
        The control law (see :func:`pinext.simulation.controls.as_control`).

    Raises:
        InvalidParameter: The signature does not take (t, x), or the returned value has the
            wrong shape or non-finite entries.
    """
    n = system.n_inputs
    rigid = _rigid(system) if system.torque_inputs else None
    index = None if rigid is None else _velocity_map(system, rigid)

    def expanded(value: np.ndarray) -> np.ndarray:  # rigid-size torques, zero on elastic joints
        full = np.zeros(n)
        full[index] = value
        return full

    if index is not None and control is not None and not callable(control):
        try:
            value = np.asarray(control, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            value = None
        if value is not None and value.size == index.size and index.size != n:
            control = expanded(value)
    if control is not None and not callable(control):
        try:
            value = np.asarray(control, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise InvalidParameter(
                f"control must be None, a vector of {n} numbers, a Schedule or a function "
                f"u(t, x); got {control!r}"
            ) from None
        if value.size != n:
            raise InvalidParameter(
                f"control has {value.size} entries, expected {n}: {_inputs_text(system)}"
            )
    if isinstance(control, Controller):
        control = as_state_law(control, system.layout)
    law = as_control(control, n)
    if control is None or not callable(control):
        return law
    try:
        signature = inspect.signature(law)
    except (TypeError, ValueError):  # builtins without a signature: judged by the call below
        signature = None
    if signature is not None:
        try:
            signature.bind(t0, x0)
        except TypeError:
            raise InvalidParameter(
                f"control must be a function u(t, x) of the time [s] and the public state; "
                f"got a callable with signature {signature}; for a function of time only, "
                "pass lambda t, x: f(t)"
            ) from None
    u = law(t0, x0.copy())
    if isinstance(u, np.ndarray) and u.dtype == float and u.shape == (n,):
        converted = False
    else:
        try:
            array = np.asarray(u, dtype=float)
        except (TypeError, ValueError):
            array = None
        if index is not None and array is not None and array.shape == (index.size,):
            rigid_law = law

            def expanded_law(t: float, x: np.ndarray) -> np.ndarray:
                return expanded(np.asarray(rigid_law(t, x), dtype=float).reshape(index.size))

            if hasattr(law, "breakpoints"):
                expanded_law.breakpoints = law.breakpoints  # type: ignore[attr-defined]
            if not np.all(np.isfinite(array)):
                raise InvalidParameter(
                    f"control(t, x) returned non-finite inputs at t = {t0} s: {array}"
                )
            return expanded_law
        if array is None or not (array.shape == (n,) or (n == 1 and array.size == 1)):
            raise InvalidParameter(
                f"control(t, x) returned {_describe(u)} at t = {t0} s; expected an array of "
                f"shape ({n},): {_inputs_text(system)}"
            )
        converted = True
        u = array.reshape(n)
    if not np.all(np.isfinite(u)):
        raise InvalidParameter(f"control(t, x) returned non-finite inputs at t = {t0} s: {u}")
    if not converted:
        return law

    def as_array(t: float, x: np.ndarray) -> np.ndarray:
        return np.asarray(law(t, x), dtype=float).reshape(n)

    if hasattr(law, "breakpoints"):
        as_array.breakpoints = law.breakpoints  # type: ignore[attr-defined]
        as_array.schedule = law  # type: ignore[attr-defined] # its compiled form
    return as_array


def control_period_of(control: Any, control_period: Any) -> float | None:
    """The sample period of a run's control law [s], or None for a continuous law.

    The rule: a :class:`pinext.control.Controller` (what a robot's controller computes) is
    sampled every :data:`CONTROL_PERIOD` unless ``control_period`` says otherwise; a function
    ``u(t, x)`` stays continuous unless a period is given; ``control_period=0`` makes any law
    continuous (reference runs). A constant or a :class:`Schedule` is a function of time only
    and takes no period.

    Args:
        control: The ``control`` argument of :func:`pinext.simulate`.
        control_period: None (the default of the law's kind), 0 (continuous), or a finite
            positive period [s].

    Raises:
        InvalidParameter: A period that is not a finite number >= 0, or a period given with a
            constant, None or a Schedule.
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
        return period if period > 0 else None
    if isinstance(control, Controller):
        return CONTROL_PERIOD
    return None
