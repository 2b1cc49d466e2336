"""Component: what a System assembles around the mechanism (drives, contacts, environment)."""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .system import System


@dataclass(frozen=True)
class Phase:
    """The discrete mode of a hybrid system: one mode per component that has modes.

    Attributes:
        modes: Pairs (component name, mode), e.g. ``(("contact", "constrained"),)``.
    """

    modes: tuple[tuple[str, Any], ...] = ()

    def get(self, component: str, default: Any = None) -> Any:
        """The mode of a component."""
        return dict(self.modes).get(component, default)

    def replace(self, component: str, mode: Any) -> Phase:
        """A copy with one component's mode changed."""
        modes = dict(self.modes)
        modes[component] = mode
        return Phase(tuple(sorted(modes.items(), key=lambda kv: kv[0])))

    @property
    def name(self) -> str:
        """A readable name: the modes joined, or ``"free"``."""
        named = [str(m) for _, m in self.modes if m not in (None, "")]
        return "+".join(named) if named else "free"


@dataclass(frozen=True)
class Event:
    """A zero crossing that ends a phase.

    Attributes:
        name: Recorded in :attr:`Trajectory.events`.
        function: ``g(t, x) -> float`` on the public state x; the event is where g crosses 0.
        direction: As in :func:`scipy.integrate.solve_ivp` (+1 rising, -1 falling, 0 both).
        action: ``(t, x, phase) -> (x_new, phase_new, info)``: the map applied at the event;
            ``info`` is a dict recorded with the event (impulse, ...).
    """

    name: str
    function: Callable[[float, np.ndarray], float]
    direction: float = 0.0
    action: Callable[[float, np.ndarray, Phase], tuple[np.ndarray, Phase, dict]] | None = None


@dataclass
class ComponentState:
    """Where a component's states sit in the public state vector x (filled by System)."""

    slices: dict[str, slice] = field(default_factory=dict)
    inputs: slice = field(default_factory=lambda: slice(0, 0))


class Component(abc.ABC):  # noqa: B024 - every hook is optional
    """Something that adds states, efforts, energy, inputs and events to a System.

    A component sees the public state ``x = [q, v, extra states..., work accumulators]`` and
    the slices of its own states in ``self.layout``. Every method has a neutral default, so a
    component overrides only what it models.
    """

    #: Unique name; used for its states and phase mode.
    name: str = "component"
    #: Number of control inputs it takes (voltages, torques, ...).
    n_inputs: int = 0

    def __init__(self) -> None:
        self.layout = ComponentState()

    def states(self) -> list[tuple[str, int]]:
        """Named blocks of extra states: ``[(name, size), ...]``."""
        return []

    def bind(self, system: System) -> None:  # noqa: B027 - optional hook
        """Called once by System after the layout is known; may change ``system.model``."""

    def initial_state(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Initial values of the extra states (concatenated in :meth:`states` order)."""
        return np.zeros(sum(n for _, n in self.states()))

    def initial_mode(self, t: float, x: np.ndarray) -> Any:
        """Initial phase mode (None when the component has no modes)."""
        return None

    def effort(
        self, t: float, x: np.ndarray, q: np.ndarray, v: np.ndarray, u: np.ndarray, mode: Any
    ) -> np.ndarray | None:
        """Generalized force on the mechanism [N.m or N], shape (nv,), or None."""
        return None

    def derivative(  # noqa: B027 - optional hook
        self,
        t: float,
        x: np.ndarray,
        q: np.ndarray,
        v: np.ndarray,
        u: np.ndarray,
        mode: Any,
        out: np.ndarray,
    ) -> None:
        """Write the time derivatives of the extra states into ``out`` (public layout)."""

    def linear(self, mode: Any) -> bool:
        """Whether, in this mode, :meth:`effort` and :meth:`derivative` are affine and
        :meth:`power` is quadratic in ``(q, v, states, u)``, independent of t and of the
        accelerations, on a Euclidean model. :func:`simulate` then evaluates the phase through
        matrices identified once (:mod:`pinext.simulation.linear`)."""
        return False

    def constrained_acceleration(
        self, t: float, x: np.ndarray, q: np.ndarray, v: np.ndarray, tau: np.ndarray, mode: Any
    ) -> np.ndarray | None:
        """Accelerations under this component's constraints in this mode, or None if free."""
        return None

    def energy(self, x: np.ndarray, q: np.ndarray, v: np.ndarray) -> float:
        """Energy stored in the component (rotor kinetic, spring, ...) [J]."""
        return 0.0

    def power(
        self, t: float, x: np.ndarray, q: np.ndarray, v: np.ndarray, u: np.ndarray, mode: Any
    ) -> tuple[float, float]:
        """(power supplied by the inputs, power dissipated) [W]."""
        return 0.0, 0.0

    def events(self, mode: Any) -> list[Event]:
        """Events that end the current phase."""
        return []

    def outputs(
        self, t: float, x: np.ndarray, q: np.ndarray, v: np.ndarray, u: np.ndarray, mode: Any
    ) -> dict[str, np.ndarray]:
        """Named signals recorded in :attr:`Trajectory.outputs` at every sample."""
        return {}

    def metadata(self) -> dict[str, Any]:
        """JSON-serialisable entries for :attr:`Trajectory.meta` (what a viewer needs)."""
        return {}
