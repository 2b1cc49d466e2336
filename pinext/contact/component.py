"""ContactComponent: the three-phase contact task inside :func:`pinext.simulate`.

Phases (the component's mode, a :class:`ContactModes` with one :class:`ContactState` per
contact, shown joined by ``","``):

* ``"free"`` — approach (or flight after a bounce / lift-off): ``pin.aba``; the event
  ``contact:<name>`` is the downward zero crossing of the approach gap, located by
  solve_ivp's root finder on the dense output;
* the event's map is the impact (:func:`plastic_impact`, with the environment mass for model
  (c)); on rigid surfaces one impulse problem with every engaged row of the System (other
  contacts touching at the same instant, closed contacts, held joint limits; McClamroch (1986)
  (40)–(42), :func:`pinext.contact.impulse.impact_impulse`): no row pulls, none leaves below
  its Newton target. A contact that left its surface on it (bounce, separation, lift-off)
  has :func:`pinext.simulation.events.leaving_distance` as its event, so a flight never ends at
  its own start and an impact needs an approaching tip. A bounce keeps ``"free"``, otherwise
* ``"constrained"`` — (20.88)–(20.89), or the coupled motion (20.92)–(20.94) with a dynamic
  environment of model (c); the event ``lift-off:<name>`` is the reaction crossing zero;
* ``"spring"`` — model (d), or a contact whose tool has its own stiffness (``tool_stiffness``,
  in series with the environment's layer, :mod:`pinext.contact.deformation`): the massless
  compliance pushes, no impact; its force crossing zero ends it.

Recorded outputs (``Trajectory.outputs["contact.<name>"]``): ``force`` (reactions of all
contacts, zero when free) [N or N.m], ``gap`` (approach gaps) [m], ``residual`` (s^c of every
contact; s^c − s_e with an environment of model (c)) [m or rad], ``closed`` (1 for a closed
contact, else 0), and with an environment ``deformation`` (s_e) [m], ``deformation_rate`` [m/s]
and ``layer`` (w, the compression of the massless compliance of model (d) and of the tool) [m];
with a compliant tool also ``tool_deformation`` (w_t) and ``surface_deformation`` (w_c) [m],
``tool_energy`` and ``environment_energy`` (its layer, spring and mass) [J]. Event infos hold
``impulse`` [N.s], ``approach_velocity`` [m/s], ``bounce``, ``force``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..exceptions import ConstraintError, InvalidParameter
from ..simulation.component import (
    FRAME_NORMAL,
    Component,
    ConstraintRows,
    Event,
    FrameRows,
    Gap,
    Layer,
    LayerForce,
    ModeState,
    Reaction,
    RowKind,
    Step,
    Trial,
)
from ..simulation.events import approach
from ..simulation.forms import stabilisation, surface_gap
from .constrained import InconsistentInitialConditionsWarning, baumgarte, project_consistent, stack
from .coordinates import Constraint, ConstraintKinematics, FunctionalCoordinates
from .deformation import SeriesCompliance
from .environment import DynamicEnvironment
from .impact import plastic_impact
from .impulse import solve_impact
from .unilateral import Contact, bounces, pulls

if TYPE_CHECKING:
    from ..simulation.system import System

#: Position tolerance [m] for a contact to count as closed at the start of a run.
GAP_TOLERANCE = 1e-9
#: Velocity tolerance [m/s] for a closed contact at the start of a run.
VELOCITY_TOLERANCE = 1e-9


class ContactState(ModeState):
    """The state of one contact in a phase."""

    FREE = "free"
    """Approach, flight after a bounce, or after lift-off."""
    CLOSED = "constrained"
    """Constrained motion (20.88)–(20.89), or coupled with the environment mass (model c)."""
    SPRING = "spring"
    """Model (d): the massless layer pushes."""


@dataclass(frozen=True)
class ContactModes:
    """The mode of a :class:`ContactComponent`: one :class:`ContactState` per contact.

    Attributes:
        states: One :class:`ContactState` per contact.
        leaving: (index, t0 [s], gap at t0 [m]) of the free contacts that left their surface
            on it (bounce, separation, lift-off): their impact event is
            :func:`pinext.simulation.events.leaving_distance` of the gap (the separation test).
    """

    states: tuple[ContactState, ...]
    leaving: frozenset[tuple[int, float, float]] = frozenset()

    def replace(self, i: int, state: ContactState) -> ContactModes:
        """A copy with contact i in ``state`` (no longer leaving)."""
        states = list(self.states)
        states[i] = state
        return ContactModes(tuple(states), frozenset(e for e in self.leaving if e[0] != i))

    def leave(self, i: int, t0: float, gap: float) -> ContactModes:
        """A copy with contact i free and leaving its surface at time t0 [s] from ``gap`` [m]
        (a bounce, a separation, a lift-off: its next impact event carries the separation
        test, :func:`pinext.simulation.events.leaving_distance`)."""
        free = self.replace(i, ContactState.FREE)
        return ContactModes(free.states, free.leaving | {(i, float(t0), min(float(gap), 0.0))})

    @property
    def structure(self) -> tuple[ContactState, ...]:
        """The states alone: the rows and efforts (``leaving`` is read by the events only)."""
        return self.states

    def __getitem__(self, i: int) -> ContactState:
        return self.states[i]

    def __contains__(self, state: object) -> bool:
        return state in self.states

    def __str__(self) -> str:
        return ",".join(s.value for s in self.states)


FREE, CLOSED, SPRING = ContactState.FREE, ContactState.CLOSED, ContactState.SPRING


def _as_contact(spec: Any) -> Contact:
    if isinstance(spec, Contact):
        return spec
    if isinstance(spec, Constraint):
        return Contact(spec)
    if isinstance(spec, dict):
        return Contact.from_dict(spec)
    raise InvalidParameter(
        f"a contact must be a pinext.contact.Contact, a Constraint or a dict, got {type(spec)}"
    )


class ContactComponent(Component):
    """Contacts of a robot with rigid surfaces or one dynamic environment.

    A closed contact adds its constraint rows (with Baumgarte stabilisation) to the System's
    acceleration step; with a dynamic environment of model (c) its row is coupled to the
    environment mass (compliance ``1/m_e``, Vukobratović & Potkonjak (20.92)–(20.94)). The
    reactions come back in the step and drive the lift-off events and the environment states.

    Args:
        contacts: :class:`Contact` objects (or constraints / dicts, see
            :meth:`Contact.from_dict`).
        environment: None (rigid surfaces) or a :class:`DynamicEnvironment` behind a single
            one-row contact.
        name: Component name (state and output prefix).
    """

    stepped_kind = "contact"

    def __init__(
        self,
        contacts: Sequence[Any],
        environment: DynamicEnvironment | None = None,
        *,
        name: str = "contact",
    ) -> None:
        super().__init__()
        self.name = name
        self.contacts = [_as_contact(c) for c in contacts]
        if not self.contacts:
            raise InvalidParameter("a contact component needs at least one contact")
        names = [c.name for c in self.contacts]
        if len(set(names)) != len(names):
            raise InvalidParameter(f"contact names must be unique, got {names}")
        if isinstance(environment, dict):
            environment = DynamicEnvironment.from_dict(environment)
        self.environment = environment
        single = len(self.contacts) == 1 and self.contacts[0].constraint.m == 1
        if environment is not None and not single:
            raise InvalidParameter(
                "a DynamicEnvironment acts behind exactly one surface-type contact (m = 1)"
            )
        tool = self.contacts[0].tool_stiffness
        if any(c.tool_stiffness is not None for c in self.contacts) and not single:
            raise InvalidParameter(
                "a compliant tool (tool_stiffness) acts on exactly one surface-type contact "
                "(m = 1) per contact component"
            )
        self.immobile = environment is None and tool is not None
        if self.immobile:  # a rigid, immobile surface behind the tool's compliance
            environment = DynamicEnvironment(mass=np.inf, stiffness=0.0, damping=0.0)
            self.environment = environment
        self.layered = environment is not None and (environment.model == "d" or tool is not None)
        self.series: SeriesCompliance | None = None
        if self.layered:
            assert environment is not None
            self.series = SeriesCompliance(
                tool,
                self.contacts[0].tool_damping,
                environment.contact_stiffness,
                environment.contact_damping if environment.contact_stiffness else 0.0,
            )
        self.rows = np.cumsum([0] + [c.constraint.m for c in self.contacts])
        self.moving = any(c.constraint.__dict__.get("law") is not None for c in self.contacts)

    # -- Component interface -----------------------------------------------------------------
    def states(self) -> list[tuple[str, int]]:
        if self.environment is None:
            return []
        if not self.layered:
            return [("environment", 2)]  # s_e, ṡ_e
        # s_e, ṡ_e, w, and the tool's compression w_t when it is a state
        return [("environment", 4 if self.compliance.has_state else 3)]

    def bind(self, system: System) -> None:
        self.model = system.model
        self.data = self.model.createData()
        for c in self.contacts:
            c.constraint.bind(self.model)
        self._blocks: dict[int, FrameRows | None] = {}  # _block's, built at first use

    def __getstate__(self) -> dict[str, Any]:
        """Copied and pickled without the cache of frame rows (rebuilt on demand): a
        trajectory's private copy of the System is taken at the end of each run."""
        return {**super().__getstate__(), "_blocks": {}}

    def initial_state(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        if self.environment is None:
            return np.zeros(0)
        if not self.layered:
            return np.zeros(2)
        gap = self.contacts[0].constraint.gap(self.model, self.data, q)
        w = max(0.0, -gap)
        series = self.compliance
        if not series.has_state:
            return np.array([0.0, 0.0, w])
        k_t, k_c = float(series.tool_stiffness or 0.0), float(series.surface_stiffness or 0.0)
        return np.array([0.0, 0.0, w, k_c * w / (k_t + k_c)])  # at rest: the static split

    def _env(self, x: np.ndarray) -> tuple[float, float, float]:
        s = x[self.layout.slices["environment"]]
        return float(s[0]), float(s[1]), float(s[2]) if self.layered else 0.0

    def _tool(self, x: np.ndarray) -> float:
        """The tool's compression w_t when it is a state (else 0: the split is static)."""
        if self.series is None or not self.series.has_state:
            return 0.0
        return float(x[self.layout.slices["environment"].start + 3])

    @property
    def compliance(self) -> SeriesCompliance:
        """The massless compliance in front of the environment mass: the tool's and the
        environment layer's in series (:mod:`pinext.contact.deformation`)."""
        if self.series is None:
            raise InvalidParameter(f"contact component '{self.name}' has no compliant layer")
        return self.series

    def initial_mode(self, t: float, x: np.ndarray, trial: Trial) -> ContactModes:
        q, v = self._split(x)
        pin.computeAllTerms(self.model, self.data, q, v)
        states = []
        for i, c in enumerate(self.contacts):
            gap = self._gap(i, t, x)
            if gap > GAP_TOLERANCE:
                states.append(FREE)
                continue
            if self.layered:
                states.append(SPRING)
                continue
            kin = c.constraint.evaluate(self.model, self.data, t)
            _refuse_dead_rows(c, kin.jacobian)
            rate = kin.rate(v)
            if self.environment is not None:
                rate = rate - self._env(x)[1]
            residual = kin.residual - (self._env(x)[0] if self.environment is not None else 0.0)
            if c.unilateral and float(rate[0]) > VELOCITY_TOLERANCE and gap > -GAP_TOLERANCE:
                states.append(FREE)  # leaving the surface
            elif (
                np.abs(residual).max() <= GAP_TOLERANCE and np.abs(rate).max() <= VELOCITY_TOLERANCE
            ):
                states.append(CLOSED)
            else:
                raise ConstraintError(
                    f"inconsistent initial conditions for contact '{c.name}': residual "
                    f"{np.abs(residual).max():.3g}, constrained velocity {np.abs(rate).max():.3g} "
                    "(start above the surface, or project with "
                    "pinext.contact.consistent_initial_state)"
                )
        mode = ContactModes(tuple(states))
        return self._release_pulling(t, x, mode, trial)

    def settle_mode(self, t: float, x: np.ndarray, mode: Any, trial: Trial) -> ContactModes:
        """Closed unilateral contacts that separate (after another row's impact) or would
        pull are set free."""
        if CLOSED in mode and not self.layered and self.environment is None:
            q, v = self._split(x)
            pin.computeAllTerms(self.model, self.data, q, v)
            for k, c in enumerate(self.contacts):
                if mode[k] is CLOSED and c.unilateral:
                    if float(self._rate(k, t, v)[0]) > VELOCITY_TOLERANCE:
                        mode = self._leave(mode, k, t, x)
        return self._release_pulling(t, x, mode, trial)

    def _release_pulling(
        self, t: float, x: np.ndarray, mode: ContactModes, trial: Trial
    ) -> ContactModes:
        """The mode with every closed unilateral contact that would pull set free."""
        if CLOSED not in mode:
            return mode
        force = self._forces(t, x, mode, trial(x, mode))
        for i, c in enumerate(self.contacts):
            if mode[i] is CLOSED and pulls(c, force[self.rows[i] : self.rows[i + 1]]):
                mode = self._leave(mode, i, t, x)
        return mode

    def effort(self, t, x, q, v, u, mode):  # noqa: D102
        if not self.layered or mode is None or mode[0] is not SPRING:
            return None
        force, J = self._layer(t, x, q, v)
        return J[0] * force

    def is_constrained(self, mode: ContactModes) -> bool:  # noqa: D102
        return mode is not None and CLOSED in mode

    def constraint_rows(self, t, x, q, v, mode, data):  # noqa: D102
        closed = [i for i, state in enumerate(mode.states) if state is CLOSED]
        kins, drifts = [], []
        for i in closed:
            c = self.contacts[i]
            kin = self._row_kinematics(i, data, t)
            kins.append(kin)
            drifts.append(kin.drift - baumgarte(kin, v, c.stabilization))
        kin = stack(kins)
        drift = drifts[0] if len(drifts) == 1 else np.concatenate(drifts)
        unilateral = all(self.contacts[i].unilateral for i in closed)
        kind = RowKind.UNILATERAL if unilateral else RowKind.BILATERAL
        if self.environment is None:
            return ConstraintRows(kin.jacobian, drift, None, kind)
        # model (c): the tip moves with the mass, s^c(q) = s_e, with m_e s_e'' = -F + spring
        env, c = self.environment, self.contacts[0]
        s_e, sd_e, _ = self._env(x)
        e = self.layout.slices["environment"].start
        gap = surface_gap(kin.residual[0], x, e, -1)
        gap_rate = surface_gap(kin.rate(v)[0], x, e + 1, -1)
        omega = c.stabilization or 0.0
        reference = -stabilisation(omega, gap_rate, gap)
        drift = kin.drift - reference - env.acceleration(s_e, sd_e, 0.0)
        return ConstraintRows(kin.jacobian, drift, np.array([env.inverse_mass]), kind)

    def _row_kinematics(self, i: int, data: pin.Data, t: float) -> ConstraintKinematics:
        """Contact i's rows at the state of data (``computeAllTerms``): its compiled block's
        (:meth:`FrameRows.kinematics`, the rows the compiled path evaluates) when it has one,
        else its constraint's."""
        block = self._block(i)
        if block is None:
            return self.contacts[i].constraint.evaluate(self.model, data, t)
        residual, jacobian, drift = block.kinematics(self.model, data)
        return ConstraintKinematics(residual, jacobian, drift, np.zeros(1))

    def linear(self, mode: ContactModes) -> bool:
        """With a rigid environment that stays still, the contacts add no effort, state or
        power of their own, only rows (:meth:`compiled_rows`); the mass of a model (c)
        environment moves by its linear spring and damper, the reaction of its row being
        the row's (:meth:`derivative` without a step), and so does a layer off contact
        (it relaxes). A pressed layer is not linear (:meth:`compiled_layer`)."""
        return not self.moving and not (self.layered and mode[0] is SPRING)

    def compiled_layer(self, mode: ContactModes) -> Layer | None:
        """The pressed layer of a model (d) environment, or a compliant tool's spring and
        damper (on an immobile surface or in series with the layer without a state of their
        own: :attr:`SeriesCompliance.single`), as compiled data (the tool point's row on the
        plane, the mass's and the compliance's constants)."""
        block = self._block(0) if self.layered and mode[0] is SPRING else None
        if block is None:
            return None
        env = self.environment
        series = self.compliance
        assert env is not None
        # one spring and damper (the tool's, the layer's or their undamped series), or both
        sides = series.single or (series.tool_stiffness, series.tool_damping,
                                  series.surface_stiffness, series.surface_damping)  # fmt: skip
        return Layer(block, np.array([env.inverse_mass, env.stiffness, env.damping, *sides]))

    def compiled_rows(self, mode: ContactModes) -> FrameRows | None:
        """The closed contacts' rows as compiled data when every contact is a point on a
        fixed plane, or on the plane of a model (c) environment's mass (:meth:`_block`);
        None otherwise."""
        blocks = [self._block(i) for i in range(len(self.contacts)) if mode[i] is CLOSED]
        return None if None in blocks else FrameRows.stack(blocks)  # type: ignore[arg-type]

    def _block(self, i: int) -> FrameRows | None:
        """The compiled row of contact i (:data:`FRAME_NORMAL`: its tool point along the
        normal of a plane, the functional coordinate z, on the environment's mass and its
        layer when it has them), or None when it has none (a compliant tool, another surface,
        a moving plane). Built once: it depends on the System only."""
        if i not in self._blocks:
            self._blocks[i] = self._build_block(self.contacts[i])
        return self._blocks[i]

    def _build_block(self, c: Contact) -> FrameRows | None:
        k = c.constraint
        if (
            not isinstance(k, FunctionalCoordinates)
            or k.names != ("z",)
            or k.law is not None
            or not c.unilateral
        ):
            return None
        frame = self.model.frames[k._frame_id(self.model)]
        env = self.environment
        start = -1 if env is None else self.layout.slices["environment"].start
        return FrameRows.block(
            FRAME_NORMAL,
            frame.parentJoint,
            frame.placement * k.tool,
            0,
            k.placement,
            c.stabilization or 0.0,
            env=start,
            inverse_mass=0.0 if env is None else env.inverse_mass,
            layer=start + 2 if self.layered else -1,
        )

    def derivative(self, t, x, q, v, u, mode, out, step):  # noqa: D102
        if self.environment is None:
            return
        env = self.environment
        s_e, sd_e, w = self._env(x)
        sl = self.layout.slices["environment"]
        out[sl.start] = sd_e
        if mode[0] is CLOSED:  # without a step: the mass's own law (the linear form's part)
            force = 0.0 if step is None else float(step.force(self.name)[0])
            out[sl.start + 1] = env.acceleration(s_e, sd_e, force)
            return
        force = 0.0
        if self.layered:
            force, wdot = self._layer_rates(t, x, q, v, mode)
            out[sl.start + 2] = wdot
            if self.compliance.has_state:
                out[sl.start + 3] = self.compliance.rates(
                    w, self._tool(x), wdot, mode[0] is SPRING
                )[0]
        out[sl.start + 1] = env.acceleration(s_e, sd_e, force)

    def energy(self, x, q, v):  # noqa: D102
        if self.environment is None:
            return 0.0
        s_e, sd_e, w = self._env(x)
        if not self.layered:
            return self.environment.energy(s_e, sd_e)
        return self.environment.energy(s_e, sd_e) + sum(self.compliance.energies(w, self._tool(x)))

    def power(self, t, x, q, v, u, mode, step):  # noqa: D102
        p_in = 0.0
        if self.moving:
            force = self._forces(t, x, mode, step)
            pin.computeAllTerms(self.model, self.data, q, v)
            bias = np.concatenate(
                [c.constraint.evaluate(self.model, self.data, t).bias for c in self.contacts]
            )
            p_in = -float(force @ bias)
        if self.environment is None:
            return p_in, 0.0
        _, sd_e, w = self._env(x)
        if not self.layered:
            return p_in, self.environment.dissipation(sd_e)
        wdot = self._layer_rates(t, x, q, v, mode)[1]
        touching = mode[0] is SPRING
        layer = self.compliance.dissipation(w, self._tool(x), wdot, touching)
        return p_in, self.environment.dissipation(sd_e) + layer

    def events(self, mode: ContactModes) -> list[Event]:  # noqa: D102
        events = []
        closed = 0  # the rows of the closed contacts before contact i: its first row
        for i, c in enumerate(self.contacts):
            block = self._block(i)
            if mode[i] is FREE:
                start = next((e[1:] for e in mode.leaving if e[0] == i), None)
                looped = block is not None and self._bounces_compiled(c)
                form: tuple = start or (-np.inf, 0.0)  # the separation test's start, or none
                if looped:  # Newton's e and the Zeno cut: the compiled loop applies bounces
                    form = (*form, c.restitution, c.rest_velocity)
                events.append(
                    Event(
                        f"contact:{c.name}",
                        self._gap_function(i, start),
                        -1.0,
                        self._impact_action(i),
                        compiled=None if block is None else Gap(block, *form),
                        mapped=self._bounced(i) if looped else None,
                    )
                )
            elif mode[i] is CLOSED and c.unilateral:
                lift = Reaction(closed)  # its normal reaction falls through zero
                events.append(
                    Event(
                        f"lift-off:{c.name}",
                        self._force_function(i, mode) if self.layered else lift.function(self.name),
                        -1.0,
                        self._lift_off_action(i),
                        dynamic=True,
                        compiled=None if block is None else lift,
                    )
                )
            closed += c.constraint.m if mode[i] is CLOSED else 0
            if mode[i] is SPRING:
                events.append(
                    Event(
                        f"lift-off:{c.name}",
                        self._layer_function(),
                        -1.0,
                        self._lift_off_action(i),
                        compiled=None if self.compiled_layer(mode) is None else LayerForce(),
                    )
                )
        return events

    def metadata(self) -> dict[str, Any]:
        """Contact names, their numbers of constrained rows (for the residual audit) and the
        scene items a viewer draws (surfaces, the environment mass)."""
        from .scene import scene_metadata

        return {
            "contact_names": [c.name for c in self.contacts],
            "contact_rows": [int(c.constraint.m) for c in self.contacts],
            **scene_metadata(self),
        }

    def output_info(self) -> dict[str, tuple[str, str]]:
        """Units and descriptions of :meth:`outputs` (contacts in the order of
        ``meta["contact_names"]``, their rows ``meta["contact_rows"]``)."""
        table = {
            "force": ("N or N.m", "reaction of each contact row, normal first (0 when open)"),
            "gap": ("m", "approach gap of each contact (negative: penetration)"),
            "residual": ("m or rad", "constraint residual of each contact row"),
            "closed": ("-", "1 per contact while it is closed, else 0"),
        }
        if self.environment is not None:
            table["deformation"] = ("m", "deformation of the dynamic environment")
            table["deformation_rate"] = ("m/s", "rate of the environment's deformation")
            if self.layered:
                table["layer"] = ("m", "deformation of the compliant layer")
                table["tool_deformation"] = ("m", "deformation of the tool's own compliance")
                table["surface_deformation"] = ("m", "deformation of the surface layer")
                table["tool_energy"] = ("J", "energy stored in the tool's compliance")
                table["environment_energy"] = ("J", "energy stored in the environment")
        return self.signals(table)

    def outputs(self, t, x, q, v, u, mode, step):  # noqa: D102
        force = self._forces(t, x, mode, step)
        pin.computeAllTerms(self.model, self.data, q, v)
        residual = np.concatenate(
            [c.constraint.evaluate(self.model, self.data, t).residual for c in self.contacts]
        )
        if self.environment is not None and not self.layered:
            residual = residual - self._env(x)[0]  # model (c): the tip moves with the mass
        out = {
            "force": force,
            "gap": np.array([self._gap(i, t, x) for i in range(len(self.contacts))]),
            "residual": residual,
            "closed": np.array([float(state is CLOSED) for state in mode.states]),
        }
        if self.environment is not None:
            s_e, sd_e, w = self._env(x)
            out["deformation"] = np.array([s_e])
            out["deformation_rate"] = np.array([sd_e])
            if self.layered:
                out["layer"] = np.array([w])
            if self.layered and self.compliance.tool_stiffness is not None:
                tool, surface = self.compliance.split(w, self._tool(x))
                stored_tool, stored_layer = self.compliance.energies(w, self._tool(x))
                out["tool_deformation"] = np.array([tool])
                out["surface_deformation"] = np.array([surface])
                out["tool_energy"] = np.array([stored_tool])
                out["environment_energy"] = np.array(
                    [stored_layer + self.environment.energy(s_e, sd_e)]
                )
        return out

    # -- physics -----------------------------------------------------------------------------
    def _split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        nq, nv = self.model.nq, self.model.nv
        return x[:nq], x[nq : nq + nv]

    def _gap(self, i: int, t: float, x: np.ndarray) -> float:
        """Contact i's approach gap (data must hold the placements): its compiled block's
        residual (:meth:`FrameRows.kinematics`, the gap the compiled path watches) when it
        has one, else its constraint's."""
        block = self._block(i)
        if block is None:
            gap = self.contacts[i].constraint.approach_gap(self.model, self.data, t)
        else:
            gap = float(block.kinematics(self.model, self.data, motion=False)[0][0])
        if self.environment is None:
            return gap
        e = self.layout.slices["environment"].start
        return float(surface_gap(gap, x, e, e + 2 if self.layered else -1))

    def _forces(self, t: float, x: np.ndarray, mode: ContactModes, step: Step) -> np.ndarray:
        """The reactions of every contact (zero when free) from a step."""
        force = np.zeros(self.rows[-1])
        if self.layered:
            if mode[0] is SPRING:
                q, v = self._split(x)
                force[0] = self._layer(t, x, q, v)[0]
            return force
        reactions = step.force(self.name)
        k = 0
        for i, state in enumerate(mode.states):
            if state is CLOSED:
                m = self.contacts[i].constraint.m
                force[self.rows[i] : self.rows[i + 1]] = reactions[k : k + m]
                k += m
        return force

    def _layer(self, t, x, q, v) -> tuple[float, np.ndarray]:
        """Model (d) or a compliant tool: the compliance's force and J (calls
        computeAllTerms)."""
        pin.computeAllTerms(self.model, self.data, q, v)
        kin = self.contacts[0].constraint.evaluate(self.model, self.data, t)
        _, sd_e, w = self._env(x)
        wdot = -(kin.rate(v)[0] - sd_e)
        return self.compliance.force(w, self._tool(x), wdot), kin.jacobian

    def _layer_rates(self, t, x, q, v, mode) -> tuple[float, float]:
        """(force, ẇ): in contact from the kinematics, off contact the relaxation."""
        series = self.compliance
        _, sd_e, w = self._env(x)
        w_t = self._tool(x)
        if mode[0] is SPRING:
            pin.computeAllTerms(self.model, self.data, q, v)
            kin = self.contacts[0].constraint.evaluate(self.model, self.data, t)
            wdot = -(kin.rate(v)[0] - sd_e)
            return series.force(w, w_t, wdot), wdot
        return 0.0, float(sum(series.rates(w, w_t, 0.0, False)))

    # -- events ------------------------------------------------------------------------------
    def _gap_function(self, i: int, start: tuple | None = None):
        t0, d0 = start or (-np.inf, 0.0)

        def g(t: float, x: np.ndarray) -> float:
            pin.framesForwardKinematics(self.model, self.data, self._split(x)[0])
            return float(approach(self._gap(i, t, x), t, t0, d0))

        return g

    def _leave(self, mode: ContactModes, i: int, t: float, x: np.ndarray) -> ContactModes:
        """``mode.leave`` from the state x at time t."""
        pin.framesForwardKinematics(self.model, self.data, self._split(x)[0])
        return mode.leave(i, t, self._gap(i, t, x))

    def _force_function(self, i: int, mode: ContactModes):
        def g(t: float, x: np.ndarray, step: Step) -> float:
            return float(self._forces(t, x, mode, step)[self.rows[i]])

        return g

    def _layer_function(self):
        def g(t: float, x: np.ndarray) -> float:
            q, v = self._split(x)
            return float(self._layer(t, x, q, v)[0])

        return g

    def _impact_action(self, i: int):
        contact = self.contacts[i]

        def action(t: float, x: np.ndarray, mode: ContactModes, trial: Trial):
            x = x.copy()
            q, v = self._split(x)
            if self.layered:  # model (d): no impact, the layer starts to push
                return x, mode.replace(i, SPRING), {"contact": contact.name}
            model, data = self.model, self.data
            pin.computeAllTerms(model, data, q, v)
            if self.environment is None and not self.moving and hasattr(trial, "rows"):
                return self._simultaneous_impact(t, x, mode, trial, i)
            engaged = [k for k, state in enumerate(mode.states) if state is CLOSED] + [i]
            kins = [self.contacts[k].constraint.evaluate(model, data, t) for k in engaged]
            kin = stack(kins)
            rel = kins[-1].rate(v)
            env_velocity = -kin.bias
            env_mass = None
            if self.environment is not None:
                s_e, sd_e, _ = self._env(x)
                rel = rel - sd_e
                env_velocity = env_velocity + sd_e
                env_mass = None if np.isinf(self.environment.mass) else self.environment.mass
            approach = float(rel[0]) if contact.constraint.m == 1 else float(np.min(rel))
            bounce = bounces(contact, approach)
            result = plastic_impact(
                model,
                data,
                q,
                v,
                kin.jacobian,
                environment_mass=env_mass,
                restitution=contact.restitution if bounce else 0.0,
                environment_velocity=env_velocity,
            )
            x[self.model.nq : self.model.nq + self.model.nv] = result.v_plus
            if self.environment is not None:
                sl = self.layout.slices["environment"]
                x[sl.start + 1] = sd_e - float(result.impulse[-1]) * self.environment.inverse_mass
            if not bounce:
                closed = mode.replace(i, CLOSED)
                force = self._forces(t, x, closed, trial(x, closed))
                if not pulls(contact, force[self.rows[i] : self.rows[i + 1]]):
                    mode = closed
            else:
                mode = self._leave(mode, i, t, x)
            info = {
                "contact": contact.name,
                "impulse": np.asarray(result.impulse[-contact.constraint.m :]),
                "approach_velocity": approach,
                "bounce": bounce,
            }
            return x, mode, info

        return action

    def _bounces_compiled(self, c: Contact) -> bool:
        """Whether the compiled loop may apply contact c's bounces itself: the impact of a
        unilateral frictionless point on a fixed plane, which :meth:`_simultaneous_impact`
        solves with the same rule and the same impulse problem when no other row takes part
        (:mod:`pinext.compiled.impacts` hands it back here otherwise)."""
        return bool(
            self.environment is None
            and not self.moving
            and not self.layered
            and c.unilateral
            and c.friction == 0.0
            and c.restitution > 0.0
        )

    def _bounced(self, i: int):
        """The mode and record after a bounce of contact i that the compiled loop applied
        (``values``: approach velocity, impulse, the gap it left from), as
        :meth:`_simultaneous_impact` records one."""
        contact = self.contacts[i]

        def mapped(t: float, x: np.ndarray, mode: ContactModes, values: np.ndarray):
            approach, impulse, gap = (float(v) for v in values)
            info: dict[str, Any] = {
                "contact": contact.name,
                "approach_velocity": approach,
                "impulse": np.array([impulse]),
                "bounce": True,
                "simultaneous": [],
            }
            return mode.leave(i, t, gap), info

        return mapped

    def _simultaneous_impact(
        self, t: float, x: np.ndarray, mode: ContactModes, trial: Trial, i: int
    ) -> tuple[np.ndarray, ContactModes, dict]:
        """The impact of contact i with every engaged row of the System in one impulse
        problem (:func:`pinext.contact.impulse.impact_impulse`, McClamroch (1986) (40)–(42)).

        Engaged: the closed rows of every component, contact i, and this component's free
        unilateral contacts that touch (|gap| ≤ :data:`GAP_TOLERANCE`) while approaching.
        No row pulls and none leaves below its Newton target; a contact whose impulse left
        it separating is free afterwards, one whose rebound exceeds its ``rest_velocity``
        bounces (a flight with the separation test), the others stay closed.
        """
        contact = self.contacts[i]
        q, v = self._split(x)
        model, data = self.model, self.data
        rate = {  # contact i's and those of the free contacts it may take along
            k: self._rate(k, t, v)
            for k, c in enumerate(self.contacts)
            if k == i or (mode[k] is FREE and c.unilateral)
        }
        approach_velocity = float(rate[i][0]) if contact.constraint.m == 1 else 0.0
        info: dict[str, Any] = {"contact": contact.name, "approach_velocity": approach_velocity}
        if contact.unilateral and approach_velocity >= 0.0:  # separation test: no impulse
            zero = np.zeros(contact.constraint.m)
            closed = self._release_pulling(t, x, mode.replace(i, CLOSED), trial)
            mode = closed if closed[i] is CLOSED else self._leave(mode, i, t, x)
            return x, mode, info | {"impulse": zero, "bounce": False}
        candidate = mode.replace(i, CLOSED)
        for k, c in enumerate(self.contacts):
            if mode[k] is FREE and k != i and c.unilateral and float(rate[k][0]) < 0.0:
                if abs(self._gap(k, t, x)) <= GAP_TOLERANCE:
                    candidate = candidate.replace(k, CLOSED)
        hitting = [k for k in range(len(self.contacts)) if candidate[k] is CLOSED]
        hitting = [k for k in hitting if mode[k] is not CLOSED]
        rows = trial.rows(x, candidate, impulse=True)  # type: ignore[attr-defined]
        restitution = np.zeros(sum(r.m for _, r in rows))
        start = 0
        own_rows: dict[int, slice] = {}
        for owner, r in rows:
            if owner == self.name:
                k0 = start
                for k in (k for k, s in enumerate(candidate.states) if s is CLOSED):
                    m = self.contacts[k].constraint.m
                    own_rows[k] = slice(k0, k0 + m)
                    k0 += m
            start += r.m
        bouncing = {k for k in hitting if bounces(self.contacts[k], float(np.min(rate[k])))}
        for k in bouncing:
            restitution[own_rows[k]] = self.contacts[k].restitution
        result = solve_impact(
            model, data, q, v, rows, restitution=restitution, rest_velocity=contact.rest_velocity
        )
        x = x.copy()
        x[model.nq : model.nq + model.nv] = result.v_plus
        for k in bouncing:
            candidate = self._leave(candidate, k, t, x)
        mode = self.settle_mode(t, x, candidate, trial)
        info |= {
            "impulse": np.asarray(result.impulse[own_rows[i]]),
            "bounce": i in bouncing,
            "simultaneous": [self.contacts[k].name for k in hitting if k != i],
        }
        return x, mode, info

    def _rate(self, k: int, t: float, v: np.ndarray) -> np.ndarray:
        """ṡ of contact k (data must hold ``computeAllTerms``)."""
        return self.contacts[k].constraint.evaluate(self.model, self.data, t).rate(v)

    def _lift_off_action(self, i: int):
        contact = self.contacts[i]

        def action(t: float, x: np.ndarray, mode: ContactModes, trial: Trial):
            x = x.copy()
            if self.layered:  # the elements without a damper are at rest length when F = 0
                start = self.layout.slices["environment"].start
                w, w_t = self.compliance.relaxed(float(x[start + 2]), self._tool(x))
                x[start + 2] = w
                if self.compliance.has_state:
                    x[start + 3] = w_t
            return x, self._leave(mode, i, t, x), {"contact": contact.name}

        return action


def contact_component(
    robot: Any, contacts: Sequence[Any], environment: Any = None
) -> ContactComponent:
    """The :class:`ContactComponent` that :class:`pinext.System` assembles.

    Args:
        robot: The robot (unused beyond validation; frames resolve at ``bind``).
        contacts: :class:`Contact`, :class:`Constraint` or dict specifications (the
            ``[[contacts]]`` table / ``<contact/>`` element; keys in
            :meth:`Contact.from_dict`). An empty list with an environment takes the
            robot's file contacts.
        environment: None, a :class:`DynamicEnvironment` or a dict (``[environment]`` table:
            mass, stiffness, damping, contact_stiffness, contact_damping).
    """
    contacts = list(contacts)
    if not contacts:
        contacts = list(getattr(getattr(robot, "extensions", None), "contacts", []) or [])
    if isinstance(environment, dict):
        environment = DynamicEnvironment.from_dict(environment)
    return ContactComponent(contacts, environment)


def build_contacts(robot: Any, options: dict[str, Any]) -> ContactComponent | None:
    """The System's contacts: its ``contacts``/``environment`` arguments or the robot's files."""
    contacts, environment = options.get("contacts"), options.get("environment")
    if contacts is None:
        contacts = robot.extensions.contacts
    if environment is None:
        environment = robot.extensions.environment
    contacts = [c for c in (_as_contact(s) for s in contacts or ()) if c.friction == 0.0]
    if not contacts and not environment:
        return None
    return contact_component(robot, list(contacts), environment or None)


def consistent_initial_state(
    system: System,
    q: np.ndarray,
    v: np.ndarray | None = None,
    *,
    t: float = 0.0,
    engage: float = 1e-6,
) -> np.ndarray:
    """The public initial state with q, v projected onto the contacts that are closed.

    Every rigid contact whose approach gap is at most ``engage`` [m] is taken as closed:
    (q, v) are projected onto its constraint (:func:`project_consistent`), with an
    :class:`InconsistentInitialConditionsWarning` when they moved by more than 1e-12.
    """
    comp = next((c for c in system.components if isinstance(c, ContactComponent)), None)
    q = np.array(q, dtype=float)
    v = np.zeros(system.model.nv) if v is None else np.array(v, dtype=float)
    if comp is None:
        return system.initial_state(q, v)
    closed = [
        c.constraint
        for c in comp.contacts
        if c.constraint.gap(comp.model, comp.data, q, t) <= engage
    ]
    if closed and not comp.layered:
        q_new, v_new = project_consistent(comp.model, comp.data, q, v, closed, t=t)
        moved = max(np.abs(pin.difference(comp.model, q, q_new)).max(), np.abs(v_new - v).max())
        if moved > 1e-12:
            warnings.warn(
                f"initial state projected onto {len(closed)} closed contact(s) "
                f"(moved by {moved:.3g})",
                InconsistentInitialConditionsWarning,
                stacklevel=2,
            )
        q, v = q_new, v_new
    return system.initial_state(q, v)


def _refuse_dead_rows(contact: Any, jacobian: np.ndarray) -> None:
    """Refuse a contact with rows that no joint moves (a 3-D point on a one-DOF slider): they
    hold nothing, and the rows that remain do not describe the contact the user meant."""
    if jacobian.shape[0] < 2:
        return
    norms = np.linalg.norm(jacobian, axis=1)
    dead = np.flatnonzero(norms <= 1e-12 * max(1.0, float(norms.max(initial=0.0))))
    if dead.size:
        names = getattr(contact.constraint, "names", None) or [str(i) for i in range(norms.size)]
        raise ConstraintError(
            f"contact '{contact.name}' has {norms.size} rows but no joint moves its frame along "
            f"{', '.join(names[i] for i in dead)}: those rows hold nothing (the model has "
            f"{jacobian.shape[1]} DOF); use a contact with the rows the joints can move, e.g. "
            "pinext.plane(frame) for a one-row surface contact"
        )
