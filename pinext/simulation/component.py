"""Component: what a System assembles around the mechanism (drives, contacts, environment).

A component says what it *is* and never computes accelerations itself. In each phase it
contributes to the one acceleration step that :class:`pinext.System` solves
(:mod:`pinext.simulation.step`):

* generalized efforts on the mechanism (:meth:`Component.effort`),
* added inertia on the diagonal of the mass matrix (:meth:`Component.added_inertia`),
* constraint rows ``J a + C λ + γ = 0`` with their reactions λ
  (:meth:`Component.constraint_rows`),
* or, at most one component, the mechanism's mass matrix and bias themselves
  (:meth:`Component.mechanism`).

The solved :class:`Step` (accelerations, efforts, inputs and every component's reactions) is
then handed to :meth:`Component.derivative`, :meth:`Component.power`,
:meth:`Component.outputs` and to the functions of dynamic events. Components read no
mutable global state: what they need comes in as arguments, and what they would like to try
(a mode switch) they ask for through a ``trial(x, mode) -> Step`` callable.
"""

from __future__ import annotations

import abc
import enum
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..exceptions import InvalidParameter
from ..model import FreshData
from .events import (
    REST_SPEED,
    REST_TOLERANCE,
    Distances,
    EventForm,
    Gap,
    GearHold,
    GearTorque,
    LayerForce,
    Leaving,
    Reaction,
)
from .forms import (  # the compiled forms, importable from here as the components use them
    FRAME_HINGE,
    FRAME_NORMAL,
    FRAME_POINT,
    FRAME_ROWS,
    FRAME_WELD,
    FrameRows,
    JointRows,
    Layer,
)

if TYPE_CHECKING:
    import pinocchio as pin

    from .system import System

__all__ = [
    "FRAME_HINGE",
    "FRAME_NORMAL",
    "FRAME_POINT",
    "FRAME_ROWS",
    "FRAME_WELD",
    "REST_SPEED",
    "REST_TOLERANCE",
    "Component",
    "ComponentState",
    "ConstraintRows",
    "Distances",
    "Event",
    "FrameRows",
    "Gap",
    "JointRows",
    "Layer",
    "GearHold",
    "GearTorque",
    "LayerForce",
    "Leaving",
    "ModeState",
    "Phase",
    "Reaction",
    "RowKind",
    "Step",
    "Trial",
    "overrides",
]


@dataclass(frozen=True)
class Phase:
    """The discrete mode of a hybrid system: one mode per component that has modes.

    Attributes:
        modes: Pairs (component name, mode), sorted by name. A mode is any hashable value
            whose ``str`` reads well (an enum, a small frozen dataclass).
    """

    modes: tuple[tuple[str, Any], ...] = ()

    def get(self, component: str, default: Any = None) -> Any:
        """The mode of a component."""
        return self._by_name.get(component, default)

    @functools.cached_property
    def _by_name(self) -> dict[str, Any]:
        return dict(self.modes)

    def replace(self, component: str, mode: Any) -> Phase:
        """A copy with one component's mode changed."""
        modes = dict(self.modes)
        modes[component] = mode
        return Phase(tuple(sorted(modes.items(), key=lambda kv: kv[0])))

    @property
    def structure(self) -> tuple[tuple[str, Any], ...]:
        """The part of the modes that decides the phase's rows, efforts and layers: each
        mode's ``structure`` attribute where it has one (a mode that also carries what only
        its events read, such as the time a contact left its surface), else the mode. Phases
        of one structure share their compiled kernel (:func:`pinext.compiled.phase_kernel`)."""
        return tuple((name, getattr(mode, "structure", mode)) for name, mode in self.modes)

    @functools.cached_property
    def name(self) -> str:
        """A readable name: the modes joined with ``+``, or ``"free"``."""
        named = [text for _, m in self.modes if m is not None and (text := str(m))]
        return "+".join(named) if named else "free"


class ModeState(enum.Enum):
    """Base of the small enums that make up components' modes: ``str`` is the value, so a
    phase reads ``constrained+D``; modes are compared as enums, never parsed back."""

    __hash__ = object.__hash__  # a member is its own singleton: hashed in C, not by name

    def __str__(self) -> str:
        return str(self.value)


class RowKind(enum.Enum):
    """How a constraint row acts (McClamroch (1986) §6; Vukobratović & Potkonjak §20.5)."""

    BILATERAL = "bilateral"
    """An equality in both directions: a closed point or loop, a prescribed joint."""
    UNILATERAL = "unilateral"
    """Closed contact of a surface: the reaction may only push; the component lifts off."""
    MODAL = "modal"
    """A row that exists in one mode of a mode-dependent law (a gear that holds its joint)."""


@dataclass(frozen=True)
class ConstraintRows:
    """Constraint rows a component adds to the acceleration step.

    The rows read ``J a + C λ + γ = 0`` with the reactions λ acting on the mechanism as the
    generalized force ``Jᵀ λ``; a nonzero compliance ``C`` couples a row to a body outside
    the mechanism (the environment mass of model (c), Vukobratović & Potkonjak (20.94)).

    Attributes:
        jacobian: Shape (m, nv).
        drift: Shape (m,). γ [m/s^2 or rad/s^2] (including any stabilisation).
        compliance: Shape (m,) or None. Diagonal of C [1/kg or 1/(kg.m^2)].
        kind: The :class:`RowKind` (one for all the rows).
        force_map: Shape (m, nv) or None. W when the reactions act as ``Wᵀ λ`` instead of
            ``Jᵀ λ`` (a sliding contact: the normal row with its Coulomb friction,
            ``W = J_n − μ t̂ᵀ J_t``); None: W = J.
        friction: Coulomb's μ of a frictional contact in an impulse problem
            (:meth:`Component.impulse_rows`): row 0 is the normal (unilateral), the others
            its tangential rows, whose impulse stays in the cone ``|P_t| ≤ μ P_n``; 0: none.
        slow_only: In an impulse problem: rows that hold through an impact slower than the
            impact's rest velocity only, and take no part in a faster one (the joints that
            Coulomb friction holds: :mod:`pinext.contact.joint_friction`).
    """

    jacobian: np.ndarray
    drift: np.ndarray
    compliance: np.ndarray | None = None
    kind: RowKind = RowKind.BILATERAL
    force_map: np.ndarray | None = None
    friction: float = 0.0
    slow_only: bool = False

    @property
    def m(self) -> int:
        """Number of rows."""
        return int(self.jacobian.shape[0])


@dataclass(frozen=True)
class Step:
    """The solution of one acceleration step at (t, x) in a phase.

    Attributes:
        a: Shape (nv,). Accelerations [rad/s^2 or m/s^2].
        tau: Shape (nv,). Every generalized force except the reactions [N.m or N].
        u: The inputs used (after the control law).
        forces: Component name -> reactions λ of its constraint rows, in row order.
    """

    a: np.ndarray
    tau: np.ndarray
    u: np.ndarray
    forces: dict[str, np.ndarray] = field(default_factory=dict)

    def force(self, component: str, size: int = 0) -> np.ndarray:
        """The reactions of a component (zeros of ``size`` when it has no rows)."""
        return self.forces.get(component, np.zeros(size))


#: ``trial(x, mode) -> Step``: the step at state x with the asking component's mode replaced.
Trial = Callable[[np.ndarray, Any], Step]


@dataclass(frozen=True)
class Event:
    """A zero crossing that ends a phase.

    Attributes:
        name: Recorded in :attr:`Trajectory.events`.
        function: ``g(t, x) -> float`` on the public state x, or ``g(t, x, step)`` when
            ``dynamic`` (the function needs the accelerations or reactions of the step).
        direction: As in :func:`scipy.integrate.solve_ivp` (+1 rising, -1 falling, 0 both).
        action: ``(t, x, mode, trial) -> (x_new, mode_new, info)``: the map applied at the
            event to the state and the owning component's mode; ``trial`` evaluates the step
            for a candidate (state, mode); ``info`` is a dict recorded with the event (its
            optional ``"name"`` replaces the event's name in the record: one event function
            may watch several limits and name the one it met).
        dynamic: Whether ``function`` takes the step as third argument.
        compiled: Optional compiled form of ``function`` (:class:`Distances`,
            :class:`Leaving`, :class:`Reaction`, :class:`Gap`, :class:`LayerForce`,
            :class:`GearTorque` or :class:`GearHold`); it lets
            :mod:`pinext.compiled` evaluate the event in its own loop.
        bound: Whether ``function`` is a bound that the physics never leaves past zero (the
            distances of joints inside their ranges to their stops): when a segment starts
            with it past zero in its direction (a tie with another event within rounding),
            the event fires at once instead of never being seen crossing.
        mapped: ``(t, x, mode, values) -> (mode_new, info)``: the owner's mode and the record
            after a map that the compiled loop applied itself (a contact's bounce,
            :mod:`pinext.compiled.impacts`; ``values`` what it computed: approach velocity,
            impulse, gap), x the state after it; needed with a :class:`Gap` whose
            ``restitution`` is set.
    """

    name: str
    function: Callable[..., float]
    direction: float = 0.0
    action: Callable[[float, np.ndarray, Any, Trial], tuple[np.ndarray, Any, dict]] | None = None
    dynamic: bool = False
    compiled: EventForm | None = None
    bound: bool = False
    mapped: Callable[[float, np.ndarray, Any, np.ndarray], tuple[Any, dict]] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.compiled, Gap) and self.compiled.restitution > 0.0 and not self.mapped:
            raise InvalidParameter(
                f"event '{self.name}': a Gap with a restitution (a bounce that the compiled "
                "loop applies) needs `mapped`, the owner's mode and record after the bounce"
            )


@dataclass
class ComponentState:
    """Where a component's states sit in the public state vector x (filled by System)."""

    slices: dict[str, slice] = field(default_factory=dict)
    inputs: slice = field(default_factory=lambda: slice(0, 0))


class SteppedStates(NamedTuple):
    """A component's states as time stepping integrates them (:meth:`Component.
    stepped_states`): indices into the public state and their constants."""

    #: Angles p of bodies of constant inertia (rotors behind elastic transmissions).
    positions: np.ndarray
    #: Their velocities w = ṗ, in the same order.
    velocities: np.ndarray
    #: J per velocity [kg.m² or kg].
    inertias: np.ndarray
    #: First-order states s (an inductance's current).
    first: np.ndarray
    #: P per first-order state: they store ½ sᵀ diag(P) s (½ L i²).
    metric: np.ndarray


#: The kinds of :attr:`Component.stepped_kind`, and what a time step reads of each: the
#: contacts of its point-contact problem (the component's ``contacts``), the joint limits
#: (``limits``), joint dry friction (``joints`` and their Coulomb ``torque``), the inputs'
#: saturation (``limit`` while ``active``), and rows the step holds: closures (a loop; its
#: ``kinematics``), ``<mimic>`` couplings (closures the compiled loop also holds) and
#: prescribed joints (their law).
STEPPED_KINDS = ("contact", "limits", "friction", "saturation", "closure", "mimic", "prescribed")


def stepped_components(system: System, *kinds: str) -> list[Any]:
    """The System's components of those :attr:`Component.stepped_kind` kinds, in order (each
    read through its kind's attributes, :data:`STEPPED_KINDS`)."""
    return [comp for comp in system.components if comp.stepped_kind in kinds]


class Component(FreshData, abc.ABC):  # noqa: B024 - every hook is optional
    """Something that adds states, efforts, inertia, constraints, inputs and events to a System.

    A component sees the public state ``x = [q, v, extra states..., work accumulators]`` and
    the slices of its own states in ``self.layout``. Every method has a neutral default, so a
    component overrides only what it models (as a Task in pink).
    """

    #: Unique name; used for its states, outputs, reactions and phase mode.
    name: str = "component"
    #: Number of control inputs it takes (voltages, torques, ...).
    n_inputs: int = 0
    #: What time stepping (:mod:`pinext.contact.timestepping`) holds in place of the
    #: component's event-driven law, one of :data:`STEPPED_KINDS`; None (default) for a
    #: component whose efforts and inertia join each step's free velocity (its states then
    #: integrated as :meth:`stepped_states` declares them, or the run refused).
    stepped_kind: str | None = None

    def __init__(self) -> None:
        self.layout = ComponentState()

    def states(self) -> list[tuple[str, int]]:
        """Named blocks of extra states: ``[(name, size), ...]``."""
        return []

    def stepped_states(self) -> SteppedStates | None:
        """How time stepping integrates the component's states (:class:`SteppedStates`:
        rotors' angles and velocities, currents), or None (default) when it cannot. Time
        stepping (:class:`pinext.contact.stepped_states.ComponentStates`) reads the component's
        efforts and derivatives (linear in the positions, velocities and first-order states)
        at zero velocities, first-order states and inputs as its potential's forces (its
        springs), its :meth:`energy` as ``½ wᵀ J w + ½ sᵀ P s`` plus that potential, and its
        :meth:`power` ``p_in − p_diss`` as the power of its other forces and of its
        first-order states."""
        return None

    def bind(self, system: System) -> None:  # noqa: B027 - optional hook
        """Called once by System after the layout is known; may change ``system.model``."""

    def start_configuration(self, q: np.ndarray) -> np.ndarray:
        """The configuration a run starts from when none is given, from the previous
        component's (the first sees the model's neutral pose); default: unchanged."""
        return q

    def initial_state(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Initial values of the extra states (concatenated in :meth:`states` order)."""
        return np.zeros(sum(n for _, n in self.states()))

    def initial_mode(self, t: float, x: np.ndarray, trial: Trial) -> Any:
        """Initial phase mode (None when the component has no modes).

        ``trial(x, mode)`` gives the step with this component in ``mode`` and the others in
        the modes chosen so far."""
        return None

    def settle_mode(self, t: float, x: np.ndarray, mode: Any, trial: Trial) -> Any:
        """The mode after another component's event changed the state or the phase
        (default: unchanged). A mode that depends on the other constraints re-checks here."""
        return mode

    def effort(
        self, t: float, x: np.ndarray, q: np.ndarray, v: np.ndarray, u: np.ndarray, mode: Any
    ) -> np.ndarray | None:
        """Generalized force on the mechanism [N.m or N], shape (nv,), or None."""
        return None

    def added_inertia(self, mode: Any) -> np.ndarray | None:
        """Inertia added to the diagonal of the mass matrix in this mode, shape (nv,), or None
        (beyond ``model.armature``, which :meth:`bind` may set once) [kg.m^2 or kg]."""
        return None

    def is_constrained(self, mode: Any) -> bool:
        """Whether :meth:`constraint_rows` has rows in this mode."""
        return False

    def constraint_rows(
        self, t: float, x: np.ndarray, q: np.ndarray, v: np.ndarray, mode: Any, data: pin.Data
    ) -> ConstraintRows | None:
        """The constraint rows in this mode; ``data`` holds ``computeAllTerms(q, v)`` of the
        System's model (placements, Jacobians, mass matrix)."""
        return None

    def compiled_rows(self, mode: Any) -> JointRows | FrameRows | None:
        """The compiled form of :meth:`constraint_rows` in this mode: :class:`JointRows` when
        its rows are linear in q and v with constant coefficients (joints held on their stops,
        mimic couplings), :class:`FrameRows` for rows between two frames (loop closures);
        None: the rows have no compiled form."""
        return None

    def compiled_layer(self, mode: Any) -> Layer | None:
        """The compliant contact layer this component presses in this mode, as compiled data
        (:class:`Layer`): it then stands for the component's whole effort, state derivatives
        and power in the mode on the compiled path; None: no layer."""
        return None

    def impulse_rows(
        self, t: float, x: np.ndarray, q: np.ndarray, v: np.ndarray, mode: Any, data: pin.Data
    ) -> ConstraintRows | None:
        """The rows this component adds to an impulse problem (a simultaneous impact) in this
        mode; default :meth:`constraint_rows`. A frictional contact gives its normal and
        tangential rows with ``friction`` = μ whatever its stick/slip state, and so does a free
        one that touches its surface while approaching (it closes in the same impulse)."""
        if not self.is_constrained(mode):
            return None
        return self.constraint_rows(t, x, q, v, mode, data)

    def mechanism(self, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Replace the mechanism's ``(M, h)`` (mass matrix with armature, nonlinear effects
        with gravity), or None. At most one component of a System may do so."""
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
        step: Step | None,
    ) -> None:
        """Write the time derivatives of the extra states into ``out`` (public layout).

        ``step`` is None only in a linear phase (:meth:`linear`), where the derivatives may
        not depend on the accelerations."""

    def linear(self, mode: Any) -> bool:
        """Whether, in this mode, :meth:`effort` and :meth:`derivative` are affine and
        :meth:`power` is quadratic in ``(q, v, states, u)`` (u clipped to
        :meth:`input_bounds`), independent of t and, given no step, of the accelerations (the
        work of an added inertia apart: :meth:`inertia_power`), and without rows unless they
        have a compiled form (:meth:`compiled_rows`, solved apart). :func:`simulate` then
        evaluates the phase through matrices identified once (:mod:`pinext.simulation.
        linear`; with added inertia on the compiled path only, its ABA on the armature)."""
        return False

    def linear_terms(self, mode: Any) -> np.ndarray | None:
        """In a :meth:`linear` mode on a Euclidean model (nq = nv), its efforts and its own
        states' derivatives in closed form: T with ``[τ; ṡ] = T z``, ``z = [q, v, s, u, 1]``
        (s every component's states, u every input within its bounds; zero rows for the
        others' states), the rows and columns of the A of
        :func:`pinext.simulation.linear.identify`. None (the default): identified from
        :meth:`effort` and :meth:`derivative` instead."""
        return None

    def inertia_power(self, mode: Any) -> np.ndarray | None:
        """In a linear phase whose power also holds the work of an added inertia (a lossy
        gear's loss ``(1 − e) J N² q̈ q̇`` through its rotor's acceleration): c (nv,) with
        that part of the dissipated power ``Σ_j c_j q̈_j q̇_j``, which :meth:`power`
        leaves out when it is given no step (the linear form is identified without one);
        None: none."""
        return None

    def acceleration_coupling(self, mode: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """In a linear phase whose state derivatives also hold the joints' accelerations (a
        motor in its gear's backlash: ψ̈ = τ_s / (N J) − q̈_j): (public state indices k, dofs
        j, c) with ``ẋ_k += c q̈_j``, which :meth:`derivative` leaves out when it is given no
        step; None: none."""
        return None

    def input_bounds(self) -> np.ndarray:
        """The bound u_max of each of its inputs' saturation ±u_max (inf: none): where the
        component clips its inputs; :meth:`linear` speaks of the clipped inputs, which the
        fused and compiled right-hand sides clip there."""
        return np.full(self.n_inputs, np.inf)

    def energy(self, x: np.ndarray, q: np.ndarray, v: np.ndarray) -> float:
        """Energy stored in the component (rotor kinetic, spring, ...) [J]."""
        return 0.0

    def power(
        self,
        t: float,
        x: np.ndarray,
        q: np.ndarray,
        v: np.ndarray,
        u: np.ndarray,
        mode: Any,
        step: Step | None,
    ) -> tuple[float, float]:
        """(power supplied by the inputs, power dissipated) [W]."""
        return 0.0, 0.0

    def events(self, mode: Any) -> list[Event]:
        """Events that end the current phase."""
        return []

    def impose(self, t: float, x: np.ndarray) -> None:  # noqa: B027 - optional hook
        """Overwrite, in place, states that are known functions of time (prescribed joints)."""

    def prescribed_joints(self) -> list[str]:
        """Names of the joints whose motion this component prescribes (their limits and other
        free-motion rows do not apply)."""
        return []

    def outputs(
        self,
        t: float,
        x: np.ndarray,
        q: np.ndarray,
        v: np.ndarray,
        u: np.ndarray,
        mode: Any,
        step: Step,
    ) -> dict[str, np.ndarray]:
        """Named signals recorded in :attr:`Trajectory.outputs` at every sample."""
        return {}

    def output_info(self) -> dict[str, tuple[str, str]]:
        """Unit and one-line description of each output, ``{name: (unit, description)}``,
        by its name in :attr:`Trajectory.outputs`: ``"<name>.<signal>"`` for the signals of
        :meth:`outputs` (see :meth:`signals`), ``"energy.<name>"`` for :meth:`energy`.
        Listed by :meth:`pinext.Trajectory.describe_outputs`; default: none (unit "-")."""
        return {}

    def signals(self, table: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
        """``table`` of signal -> (unit, description) under this component's output names
        (``"<name>.<signal>"``): the usual body of :meth:`output_info`."""
        return {f"{self.name}.{signal}": info for signal, info in table.items()}

    def report(self, trajectory: Any) -> None:  # noqa: B027 - optional hook
        """Called once at the end of a run with its :class:`~pinext.Trajectory`: warnings
        about the whole run (a velocity limit exceeded)."""

    def metadata(self) -> dict[str, Any]:
        """JSON-serialisable entries for :attr:`Trajectory.meta` (what a viewer needs)."""
        return {}


def overrides(comp: Component, hook: str) -> bool:
    """Whether a component overrides one of :class:`Component`'s hooks."""
    return getattr(type(comp), hook) is not getattr(Component, hook)
