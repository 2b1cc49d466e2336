"""System: robots with the components around them, the state layout and the acceleration step."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter
from ..model import FreshData, Robot
from .chart import Chart
from .component import Component, Phase, Step, overrides
from .controls import as_control
from .rhs import make_rhs
from .step import AccelerationStep, _mechanism

#: A plug-in factory ``factory(robot, options) -> Component | list[Component] | None``: the
#: components one physical effect adds for the System's keyword arguments (``options``) and the
#: robot's extension tables (see :mod:`pinext.plugins`).
Plugin = Callable[[Robot, dict[str, Any]], Any]


def _per_dof(robot: Robot, name: str, unit: str) -> np.ndarray:
    """``robot.<name>`` checked: one finite, non-negative value per DOF; a bad entry is named
    with its DOF."""
    value = getattr(robot, name)
    nv = robot.model.nv
    try:
        values = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidParameter(
            f"robot.{name} must be {nv} numbers >= 0 {unit} (one per DOF), got {value!r}"
        ) from None
    if values.shape != (nv,):
        raise InvalidParameter(
            f"robot.{name} must be {nv} numbers >= 0 {unit} (one per DOF), got shape {values.shape}"
        )
    bad = np.flatnonzero(~(np.isfinite(values) & (values >= 0)))
    if bad.size:
        model = robot.model
        names = [
            str(model.names[j])
            for k in bad
            for j in range(1, model.njoints)
            if model.joints[j].idx_v <= k < model.joints[j].idx_v + model.joints[j].nv
        ]
        raise InvalidParameter(
            f"robot.{name} must be finite and non-negative {unit} (a negative one creates "
            f"energy), got {values[bad].tolist()} on {names}"
        )
    return values


class System(FreshData):
    """A robot and the components around it, owning the state layout.

    The public state is ``x = [q, v, extra states..., input_work, dissipated_energy]``; the
    last two entries accumulate the work of the inputs and the dissipated energy [J] so that
    :meth:`pinext.Trajectory.energy_balance` is exact up to the integration tolerance.

    Args:
        robot: The :class:`pinext.Robot` (or a bare ``pin.Model``).
        drives: Joint name -> drive; defaults to ``robot.drives``.
        contacts: Contact tasks (``pinext.contact``); None takes the ``[[contacts]]`` of the
            robot's extension files, ``()`` none.
        environment: A dynamic environment for the contacts; None takes the robot's
            ``[environment]``, False none.
        components: Further :class:`Component` objects (prescribed joints, custom effects, a
            contact law of your own), after the plug-ins' components.
        loops: Loop closures (:class:`pinext.Loop`), McClamroch (1986); None takes the
            ``[[loops]]`` / ``<loop/>`` of the robot's extension files, ``()`` none.
        mimic: Couple the joints of the URDF's ``<mimic>`` elements (:class:`pinext.Mimic`).
        joint_limits: Enforce the URDF's position limits as unilateral rows with impacts
            (:class:`pinext.contact.JointLimits`); False leaves every joint free.
        saturate_efforts: Clip joint-torque inputs to the URDF's effort limits.
        joint_friction: Coulomb friction in the joints with stick/slip modes
            (:class:`pinext.contact.JointFriction`): True takes the URDF's
            ``<dynamics friction>`` and the extension format's ``[joint_friction]``; a mapping
            joint name -> F_c [N.m or N] replaces them; False ignores them.
        plugins: The plug-in factories that turn the keywords above and the robot's extension
            tables into components, in layout order; default :attr:`default_plugins` (the list
            :data:`pinext.plugins.PLUGINS`); ``()`` assembles ``components`` alone.

    The keywords are sugar read by the plug-ins: ``System(robot, components=[...],
    plugins=())`` is the whole constructor, and the System names no plug-in.

    Attributes:
        model: The model used for simulation (a copy of ``robot.model``; drives may set its
            ``armature``).
        layout: Name -> slice of the public state.
        components: The assembled components, in layout order.
        plugins: The plug-in factories that built them.
    """

    #: The plug-in factories of a System built without ``plugins=``: :data:`pinext.plugins.PLUGINS`,
    #: handed over by ``pinext/__init__.py`` (this layer cannot import the plug-ins it assembles).
    default_plugins: ClassVar[tuple[Plugin, ...]] = ()

    def __init__(
        self,
        robot: Robot | pin.Model,
        *,
        drives: dict[str, Any] | None = None,
        contacts: Sequence[Any] | None = None,
        environment: Any = None,
        components: Sequence[Component] = (),
        loops: Sequence[Any] | None = None,
        mimic: bool = True,
        joint_limits: bool = True,
        saturate_efforts: bool = False,
        joint_friction: bool | dict[str, float] = True,
        plugins: Sequence[Plugin] | None = None,
    ) -> None:
        if not isinstance(robot, Robot):  # a pin.Model or pin.RobotWrapper
            robot = Robot.from_model(robot)
        self.robot = robot
        self.model = robot.model.copy()
        self.stiffness = _per_dof(robot, "joint_stiffness", "[N.m/rad or N/m]")
        self.damping = _per_dof(robot, "joint_damping", "[N.m.s/rad or N.s/m]")
        self.drives = dict(robot.drives if drives is None else drives)
        options = {
            "drives": self.drives,
            "contacts": contacts,
            "environment": environment,
            "loops": loops,
            "mimic": mimic,
            "joint_limits": joint_limits,
            "saturate_efforts": saturate_efforts,
            "joint_friction": joint_friction,
        }
        self.plugins = tuple(type(self).default_plugins if plugins is None else plugins)
        self.components: list[Component] = []
        for build in self.plugins:
            comp = build(robot, options)
            if comp is not None:  # a component, or a list of them
                self.components.extend(comp if isinstance(comp, list) else [comp])
        self.components.extend(components)
        names = [c.name for c in self.components]
        if len(set(names)) != len(names):
            raise InvalidParameter(f"component names must be unique, got {names}")
        driven: dict[str, str] = {}
        for comp in self.components:
            for joint in comp.prescribed_joints():
                if joint in driven:
                    raise InvalidParameter(
                        f"joint '{joint}' is prescribed twice ({driven[joint]} and "
                        f"{comp.name}): a joint follows one law; combine the laws in one "
                        "Prescribed"
                    )
                driven[joint] = comp.name

        nq, nv = self.model.nq, self.model.nv
        self.layout: dict[str, slice] = {"q": slice(0, nq), "v": slice(nq, nq + nv)}
        start = nq + nv
        for comp in self.components:
            for name, size in comp.states():
                key = f"{comp.name}.{name}"
                comp.layout.slices[name] = self.layout[key] = slice(start, start + size)
                start += size
        self.layout["input_work"] = slice(start, start + 1)
        self.layout["dissipated_energy"] = slice(start + 1, start + 2)
        self.nx = start + 2
        self.n_inputs = sum(c.n_inputs for c in self.components)
        offset = 0
        for comp in self.components:
            comp.layout.inputs = slice(offset, offset + comp.n_inputs)
            offset += comp.n_inputs
        if self.n_inputs == 0:
            self.n_inputs = nv  # ideal actuation: the inputs are joint torques
        self.torque_inputs = offset == 0
        #: Each input's saturation bound (inf: none), where the linear forms clip it.
        bounds = [c.input_bounds() for c in self.components]
        self.input_bounds = np.full(nv, np.inf) if self.torque_inputs else np.concatenate(bounds)
        for comp in self.components:
            comp.bind(self)
        self.data = self.model.createData()
        self.q_rest = pin.neutral(self.model)
        self.euclidean = nq == nv
        self.elastic = np.flatnonzero(self.stiffness)
        self.imposing = [c for c in self.components if overrides(c, "impose")]
        self._steps: dict[Phase, AccelerationStep] = {}
        self._inertia_models: dict[bytes, tuple[pin.Model, pin.Data]] = {}

    def __getstate__(self) -> dict[str, Any]:
        """Pickled and copied without its caches of acceleration steps and inertia models
        (rebuilt on demand) and without Pinocchio Data (:class:`pinext.model.FreshData`)."""
        return {**super().__getstate__(), "_steps": {}, "_inertia_models": {}}

    # -- state -----------------------------------------------------------------------------
    def initial_state(self, q: np.ndarray | None = None, v: np.ndarray | None = None) -> np.ndarray:
        """The public state for configuration q and velocity v (defaults: the start
        configuration, zero velocity).

        The start configuration is the model's neutral pose as the components adjust it
        (:meth:`Component.start_configuration`): with joint limits, the nearest pose inside
        the joints' ranges."""
        if q is None:
            q = self.q_rest.copy()
            for comp in self.components:
                q = comp.start_configuration(q)
        q = np.asarray(q, dtype=float)
        v = np.zeros(self.model.nv) if v is None else np.asarray(v, dtype=float)
        if q.shape != (self.model.nq,) or v.shape != (self.model.nv,):
            raise InvalidParameter(
                f"expected q of shape ({self.model.nq},) and v of shape ({self.model.nv},), "
                f"got {q.shape} and {v.shape}"
            )
        x = np.zeros(self.nx)
        x[self.layout["q"]] = q
        x[self.layout["v"]] = v
        for comp in self.components:
            blocks = comp.states()
            if blocks:
                first = comp.layout.slices[blocks[0][0]].start
                last = comp.layout.slices[blocks[-1][0]].stop
                x[first:last] = comp.initial_state(q, v)
        return x

    def initial_phase(self, t: float, x: np.ndarray, control: Any = None) -> Phase:
        """The phase in which a run from (t, x) under ``control`` starts.

        Each component chooses its mode seeing the modes chosen before it (through trial
        steps); then every component settles its mode once with all the others known."""
        law = as_control(control, self.n_inputs)
        phase = Phase()
        for comp in self.components:
            mode = comp.initial_mode(t, x, self.trial(t, phase, comp, law))
            if mode is not None:
                phase = phase.replace(comp.name, mode)
        return self.settle(t, x, phase, law)

    def settle(self, t: float, x: np.ndarray, phase: Phase, control: Any, skip: Any = None):
        """The phase after the state or another mode changed: every component but ``skip``
        re-checks its mode (:meth:`Component.settle_mode`)."""
        for comp in self.components:
            if comp is skip or comp.name not in dict(phase.modes):
                continue
            mode = comp.settle_mode(t, x, phase.get(comp.name), self.trial(t, phase, comp, control))
            phase = phase.replace(comp.name, mode)
        return phase

    def trial(self, t: float, phase: Phase, comp: Component, control: Any):
        """``trial(x, mode) -> Step``: the step at time t with ``comp`` in ``mode``."""

        def trial(x: np.ndarray, mode: Any) -> Step:
            candidate = phase if mode is None else phase.replace(comp.name, mode)
            return self.step(t, x, control, candidate)

        def rows(x: np.ndarray, mode: Any = None, impulse: bool = False) -> list[tuple[str, Any]]:
            """(component name, ConstraintRows) of every constrained component in the
            candidate phase; with ``impulse`` their :meth:`Component.impulse_rows` (the
            impulse problem of a simultaneous impact)."""
            candidate = phase if mode is None else phase.replace(comp.name, mode)
            q, v = self.split(x)
            pin.computeAllTerms(self.model, self.data, q, v)
            found = []
            for other in self.components:
                other_mode = candidate.get(other.name)
                if impulse:
                    r = other.impulse_rows(t, x, q, v, other_mode, self.data)
                elif other.is_constrained(other_mode):
                    r = other.constraint_rows(t, x, q, v, other_mode, self.data)
                else:
                    continue
                if r is not None and r.m:
                    found.append((other.name, r))
            return found

        def dynamics(x: np.ndarray, mode: Any = None) -> tuple[list, np.ndarray, np.ndarray, Any]:
            """(rows, M, h, τ) of the candidate phase: its constraint rows, the mass matrix
            with added inertia [kg.m^2 or kg], the nonlinear effects and every effort but the
            reactions [N.m or N] (the contact problem of McClamroch (1986) (40)–(42))."""
            candidate = phase if mode is None else phase.replace(comp.name, mode)
            step = self.acceleration_step(candidate)
            found = rows(x, mode)
            q, v = self.split(x)
            law = as_control(control, self.n_inputs)
            tau = step.efforts(t, x, np.asarray(law(t, x), dtype=float))
            if step.mechanism is not None:
                mass, bias = _mechanism(step.mechanism, q, v)
                if step.added is not None:
                    mass[np.diag_indices_from(mass)] += step.added
            else:
                pin.computeAllTerms(step.model, step.data, q, v)
                mass = np.triu(step.data.M) + np.triu(step.data.M, 1).T
                bias = np.array(step.data.nle)
            return found, mass, bias, tau

        trial.rows = rows  # type: ignore[attr-defined]
        trial.dynamics = dynamics  # type: ignore[attr-defined]
        return trial

    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(q, v) views of a public state."""
        return x[self.layout["q"]], x[self.layout["v"]]

    # -- physics ---------------------------------------------------------------------------
    def deflection(self, q: np.ndarray) -> np.ndarray:
        """Displacement from the rest configuration in the tangent space, shape (nv,)."""
        if self.euclidean:
            return q - self.q_rest
        return pin.difference(self.model, self.q_rest, q)

    def joint_effort(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Joint elasticity and damping: ``-K (q - q_rest) - D v``."""
        tau = -self.damping * v
        if self.elastic.size:
            tau -= self.stiffness * self.deflection(q)
        return tau

    def mechanism_energy(self, q: np.ndarray, v: np.ndarray) -> dict[str, float]:
        """Kinetic (with armature), gravity and joint-elastic energy [J]."""
        kinetic = pin.computeKineticEnergy(self.model, self.data, q, v)
        gravity = pin.computePotentialEnergy(self.model, self.data, q)
        elastic = (
            0.5 * float(self.stiffness @ self.deflection(q) ** 2) if self.elastic.size else 0.0
        )
        return {"kinetic": kinetic, "gravity": gravity, "elastic": elastic}

    def energy_terms(self, x: np.ndarray) -> dict[str, float]:
        """Every stored energy of the system at state x [J], by name."""
        q, v = self.split(x)
        terms = self.mechanism_energy(q, v)
        for comp in self.components:
            terms[comp.name] = comp.energy(x, q, v)
        return terms

    def energy(self, x: np.ndarray) -> float:
        """Total stored energy at state x [J]."""
        return float(sum(self.energy_terms(x).values()))

    # -- the acceleration step -------------------------------------------------------------
    def acceleration_step(self, phase: Phase) -> AccelerationStep:
        """The :class:`AccelerationStep` of a phase (built once per phase, then cached)."""
        step = self._steps.get(phase)
        if step is None:
            step = self._steps[phase] = AccelerationStep(self, phase)
        return step

    def model_with_inertia(self, added: np.ndarray) -> tuple[pin.Model, pin.Data]:
        """A copy of the model whose armature carries ``added`` more (cached per value)."""
        key = added.tobytes()
        if key not in self._inertia_models:
            model = self.model.copy()
            model.armature = np.asarray(self.model.armature) + added
            self._inertia_models[key] = (model, model.createData())
        return self._inertia_models[key]

    def impose(self, t: float, x: np.ndarray) -> np.ndarray:
        """x with the states that are known functions of time set (a copy when any is)."""
        if not self.imposing:
            return x
        x = np.array(x, dtype=float)
        for comp in self.imposing:
            comp.impose(t, x)
        return x

    def step(
        self, t: float, x: np.ndarray, control: Any = None, phase: Phase | None = None
    ) -> Step:
        """Accelerations and every reaction at (t, x) (:mod:`pinext.simulation.step`).

        Args:
            t: Time [s].
            x: Public state.
            control: Inputs (None, a constant vector, a :class:`Schedule` or ``u(t, x)``).
            phase: The phase (default: the one a run from (t, x) starts in).
        """
        law = as_control(control, self.n_inputs)
        x = self.impose(t, np.asarray(x, dtype=float))
        phase = self.initial_phase(t, x, law) if phase is None else phase
        return self.acceleration_step(phase)(t, x, np.asarray(law(t, x), dtype=float))

    def derivative(
        self, t: float, x: np.ndarray, u: Any = None, phase: Phase | None = None
    ) -> np.ndarray:
        """The right-hand side that :func:`simulate` integrates, at (t, x); no side effects.

        Args:
            t: Time [s].
            x: Public state.
            u: Inputs (constant vector, :class:`Schedule` or function of (t, x)); None is zero.
            phase: The phase (default: the one a run from (t, x) starts in).

        Returns:
            ``dx/dt`` in the public layout, except that the configuration block is replaced by
            the generalized velocity v (shape ``nx - nq + nv``): for Euclidean models exactly
            ``dx/dt``.
        """
        x = np.array(x, dtype=float)
        law = as_control(u, self.n_inputs)
        phase = self.initial_phase(t, x, law) if phase is None else phase
        chart = Chart(self, x)
        out = make_rhs(self, phase, chart, law, None)(t, chart.to_internal(x))
        if not self.euclidean:
            out[: self.model.nv] = self.impose(t, x)[self.layout["v"]]
        return out

    def independent_dofs(self, q: np.ndarray | None = None) -> int:
        """Degrees of freedom left by the rows that hold in every phase (loops, mimic
        couplings, prescribed joints): ``nv`` minus their rank at q (default neutral),
        McClamroch (1986) (24)."""
        q = self.q_rest if q is None else np.asarray(q, dtype=float)
        v = np.zeros(self.model.nv)
        x = self.initial_state(q, v)
        data = self.model.createData()
        pin.computeAllTerms(self.model, data, q, v)
        found = [
            c.constraint_rows(0.0, x, q, v, None, data)
            for c in self.components
            if c.is_constrained(None)
        ]
        rows = [r.jacobian for r in found if r is not None and r.m]
        rank = int(np.linalg.matrix_rank(np.vstack(rows))) if rows else 0
        return self.model.nv - rank

    def describe(self) -> list[tuple[str, str]]:
        """Rows (name, value) that summarize the system, used by ``pinext info``."""
        from ..summary import state_size_text

        rows = [
            ("robot", self.model.name),
            ("joints", str(self.model.njoints - 1)),
            ("nq / nv", f"{self.model.nq} / {self.model.nv}"),
            ("independent DOF", str(self.independent_dofs())),
            ("elastic DOFs", str(self.elastic.size)),
            ("state size", state_size_text(self)),
            ("inputs", f"{self.n_inputs} ({'joint torques' if self.torque_inputs else 'drives'})"),
        ]
        rows += [(f"state {k}", f"[{s.start}:{s.stop}]") for k, s in self.layout.items()]
        return rows

    def __repr__(self) -> str:
        from ..summary import system_repr

        return system_repr(self)
