"""Control inputs: a function of (t, x), a constant, a sampled schedule, or a
:class:`Controller` ``u = law(t, q, v, sensors)``; :func:`checked_control` checks a run's law
once at its start (:mod:`pinext.simulation.arguments` re-exports it)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..exceptions import IntegrationError, InvalidParameter
from ..model import FreshData
from ..validation import describe
from .initial_state import _rigid, _velocity_map

if TYPE_CHECKING:
    from .system import System

ControlLaw = Callable[[float, np.ndarray], np.ndarray]


class Schedule:
    """Inputs sampled in time, held (``"zoh"``) or linearly interpolated (``"linear"``).

    Args:
        times: Shape (N,), increasing [s].
        values: Shape (N, n_inputs).
        kind: ``"zoh"`` (zero-order hold) or ``"linear"``.
    """

    def __init__(self, times: Any, values: Any, kind: str = "linear") -> None:
        for name, given in (("times", times), ("values", values)):
            if isinstance(given, (str, bytes)):
                raise InvalidParameter(f"Schedule {name} must be numbers, got {describe(given)}")
        try:
            self.times = np.asarray(times, dtype=float)
            self.values = np.atleast_2d(np.asarray(values, dtype=float))
        except (TypeError, ValueError) as err:
            raise InvalidParameter(
                f"Schedule times (N,) and values (N, n_inputs) must be numbers ({err})"
            ) from None
        if self.values.shape[0] != self.times.size:
            self.values = self.values.T
        if (
            self.times.ndim != 1
            or self.values.ndim != 2
            or self.values.shape[0] != self.times.size
            or np.any(np.diff(self.times) <= 0)
        ):
            raise InvalidParameter(
                "a schedule needs increasing times (N,) and values (N, n_inputs); got "
                f"times {self.times.shape}, values {np.shape(values)}"
            )
        for name, array in (("times", self.times), ("values", self.values)):
            if not np.all(np.isfinite(array)):
                bad = np.flatnonzero(~np.isfinite(array.reshape(self.times.size, -1)).all(axis=1))
                raise InvalidParameter(
                    f"Schedule {name} must be finite; sample {int(bad[0])} (t = "
                    f"{self.times[bad[0]]:g} s) holds {array[bad[0]]}"
                )
        if kind not in ("zoh", "linear"):
            raise InvalidParameter(f"unknown schedule kind '{kind}'; valid kinds: zoh, linear")
        self.kind = kind

    @property
    def breakpoints(self) -> np.ndarray:
        """Times where the input or its slope jumps; :func:`simulate` restarts there [s]."""
        return self.times

    def __call__(self, t: float, x: np.ndarray | None = None) -> np.ndarray:
        if self.kind == "zoh":
            i = max(int(np.searchsorted(self.times, t, side="right")) - 1, 0)
            return self.values[i]
        return np.array([np.interp(t, self.times, col) for col in self.values.T])

    def values_at(self, times: Any) -> np.ndarray:
        """The inputs at each of ``times`` [s], shape (len(times), n_inputs): row k equals
        ``self(times[k])`` bit for bit, in one vectorised evaluation."""
        times = np.asarray(times, dtype=float).reshape(-1)
        if self.kind == "zoh":
            index = np.maximum(np.searchsorted(self.times, times, side="right") - 1, 0)
            return self.values[index]
        columns = [np.interp(times, self.times, col) for col in self.values.T]
        return np.array(columns).T.reshape(times.size, self.values.shape[1])


def as_control(control: Any, n_inputs: int) -> ControlLaw:
    """Turn None, a constant vector, a :class:`Schedule` or a callable into a control law."""
    if control is None:
        zero = np.zeros(n_inputs)

        def law(t: float, x: np.ndarray) -> np.ndarray:
            return zero

        law.zero = True  # type: ignore[attr-defined]
        law.value = zero  # type: ignore[attr-defined]
        return law
    if callable(control):
        return control
    value = np.asarray(control, dtype=float).reshape(-1)
    if value.size != n_inputs:
        raise InvalidParameter(f"constant control has {value.size} entries, expected {n_inputs}")

    def constant(t: float, x: np.ndarray) -> np.ndarray:
        return value

    constant.value = value  # type: ignore[attr-defined]
    return constant


class KernelForm(NamedTuple):
    """A law as the compiled engine evaluates it (:meth:`Controller.kernel_form`).

    Kinds:

    * ``"joint_pd"``: ``u = K_p (q_r − q) + K_d (q̇_r − q̇)`` on one-DOF joints (``kp``, ``kd``
      per DOF, zero elsewhere), ``reference`` a :class:`pinext.control.reference.
      JointReference` to a constant or a :class:`pinext.Schedule`; with ``terms`` (rows K, D,
      q_rest, shape (3, nv)) the PD terms are a commanded acceleration a and
      ``u = rnea(q, q̇, a) + K (q − q_rest) + D q̇`` (computed torque, on a Euclidean model);
    * ``"cartesian_pd"``: ``law`` a :class:`pinext.control.cartesian.CartesianPD` (its
      frame, path, orientation and gains).
    """

    kind: str
    reference: Any = None
    kp: Any = None
    kd: Any = None
    terms: np.ndarray | None = None
    law: Any = None


class Controller(FreshData):
    """Base class of control laws ``u = law(t, q, v, sensors)``.

    Subclasses implement :meth:`__call__`. ``q`` and ``v`` are the System's generalized
    positions [m, rad] and velocities [m/s, rad/s]; ``sensors`` maps each component state's
    name (the System's layout keys other than ``q`` and ``v``, e.g.
    ``"drive:shoulder.motor_angle"``) to its current value. The result is the input vector
    of the System (shape ``(n_inputs,)``).
    """

    def __call__(
        self, t: float, q: np.ndarray, v: np.ndarray, sensors: dict[str, np.ndarray]
    ) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} does not implement __call__")

    def kernel_form(self, model: Any) -> KernelForm | None:
        """The law as the compiled engine evaluates it without calling Python (a
        :class:`KernelForm`) on the Pinocchio ``model``, or None (default): the engine then
        calls :meth:`__call__`, continuously or at each sample. A built-in law gives its
        form only as its own class (:func:`own_law`): a subclass's ``__call__`` is its own."""
        return None


def own_law(controller: Controller, cls: type) -> bool:
    """Whether ``controller`` evaluates ``cls``'s law: its ``__call__`` is ``cls``'s (a
    subclass that overrides it has a law of its own, which no kernel form describes)."""
    return type(controller).__call__ is cls.__call__  # type: ignore[comparison-overlap]


def kernel_form(controller: Any, model: Any) -> KernelForm | None:
    """:meth:`Controller.kernel_form` of ``controller`` on ``model``; None for anything else
    (a plain function, None)."""
    return controller.kernel_form(model) if isinstance(controller, Controller) else None


#: Layout entries that are bookkeeping, not sensors.
_BOOKKEEPING = ("q", "v", "input_work", "dissipated_energy")


def as_state_law(controller: Any, layout: dict[str, slice]) -> Any:
    """The law ``u(t, x)`` on the public state that calls ``controller(t, q, v, sensors)``.

    Args:
        controller: A :class:`Controller` (or any callable with that signature).
        layout: The System's layout (name -> slice of the public state).
    """
    sq, sv = layout["q"], layout["v"]
    sensed = {k: s for k, s in layout.items() if k not in _BOOKKEEPING}

    def law(t: float, x: np.ndarray) -> np.ndarray:
        sensors = {k: x[s] for k, s in sensed.items()}
        return controller(t, x[sq], x[sv], sensors)

    law.controller = controller  # type: ignore[attr-defined]
    law.breakpoints = getattr(controller, "breakpoints", ())  # type: ignore[attr-defined]
    return law


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
    ours = isinstance(control, Controller)  # its (t, x) wrapper is built here
    if ours:
        control = as_state_law(control, system.layout)
    law = as_control(control, n)
    if control is None or not callable(control):
        return law
    try:
        signature = None if ours else inspect.signature(law)
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
            return finite_law(expanded_law, _law_name(control))
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
        return law if isinstance(law, Schedule) else finite_law(law, _law_name(control))

    def as_array(t: float, x: np.ndarray) -> np.ndarray:
        return np.asarray(law(t, x), dtype=float).reshape(n)

    if hasattr(law, "breakpoints"):
        as_array.breakpoints = law.breakpoints  # type: ignore[attr-defined]
        as_array.schedule = law  # type: ignore[attr-defined] # its compiled form
    if isinstance(law, Schedule):
        return as_array
    return finite_law(as_array, _law_name(control))


#: Attributes of a control law that the engine reads (its compiled forms, its breakpoints).
_LAW_ATTRIBUTES = ("controller", "breakpoints", "schedule", "value", "zero")


def _law_name(control: Any) -> str:
    """How an error names a control law: its class (a Controller) or its function name."""
    controller = getattr(control, "controller", control)
    if isinstance(controller, Controller):
        return f"the control law ({type(controller).__name__})"
    name = getattr(controller, "__qualname__", None) or type(controller).__name__
    return f"control(t, x) ({name})"


def finite_law(law: ControlLaw, name: str) -> ControlLaw:
    """``law`` with each of its values checked finite: a law that returns NaN or ±inf during
    a run stops it with an :class:`~pinext.exceptions.IntegrationError` that names the law,
    with the time and the state it was given, instead of a non-finite acceleration of the
    integrator. The attributes the engine reads are kept; ``unchecked`` is ``law`` itself, for
    a loop that checks its own state at every step and calls the checked law only to name a
    non-finite input (:meth:`pinext.compiled.stepping.CompiledStepper.run`)."""

    def checked(t: float, x: np.ndarray) -> np.ndarray:
        u = law(t, x)
        if not np.isfinite(u).all():
            raise IntegrationError(
                f"{name} returned non-finite inputs {u} (a control law must return finite "
                "inputs: check its gains, its reference or target, and the state it was "
                "given)",
                t,
                x,
            )
        return u

    for attribute in _LAW_ATTRIBUTES:
        if hasattr(law, attribute):
            setattr(checked, attribute, getattr(law, attribute))
    checked.unchecked = law  # type: ignore[attr-defined] # for a loop that checks its state
    return checked
