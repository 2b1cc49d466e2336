"""The initial state of a run in a System's layout, from what the user gives.

``x0`` in the full layout, as ``[q, v]`` (Pinocchio's state) or as ``[q, v, component
states]``, or ``q0``/``v0`` (of the model, or of the rigid model of a robot with flexible
links, expanded with zero deflection). Part of the assembly layer, so that every integrator
(:func:`pinext.simulate`, :func:`pinext.contact.simulate_timestepping`) checks a start state
the same way; :mod:`pinext.simulation.arguments` re-exports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..exceptions import InvalidParameter
from ..model import expand_configuration, massless_joints, massless_message, singular_inertia
from ..validation import vector

if TYPE_CHECKING:
    from .system import System

__all__ = ["as_initial_state", "state_sizes"]


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
    if np.all(np.isfinite(q)):  # a massless joint makes M singular: named first when so
        singular = singular_inertia(system.model, q, system.data)
        if singular is not None:
            massless = massless_joints(system.model, q)
            raise InvalidParameter(massless_message(*massless[0]) if massless else singular)
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
