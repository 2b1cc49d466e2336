"""Drive (actuator + transmission) and the System component that assembles the complete model
of Vukobratović & Potkonjak (20.78)–(20.82) and (20.98)–(20.99) around Pinocchio's mechanism."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter, NameNotFound
from ..simulation.component import (
    Component,
    ConstraintRows,
    Distances,
    Event,
    GearHold,
    GearTorque,
    JointRows,
    RowKind,
    Step,
    SteppedStates,
    Trial,
)
from .backlash import Flank, Play, PlayHooks
from .base import Actuator, TorqueSource
from .modes import GearMode, GearModes
from .motor import DCMotor
from .transmission import Gear, Transmission

if TYPE_CHECKING:
    from ..model import Robot
    from ..simulation.system import System


@dataclass(frozen=True)
class Drive:
    """What moves one joint: an actuator followed by a transmission.

    Args:
        actuator: Any :class:`Actuator`: a :class:`DCMotor` (input: voltage [V]), a
            :class:`LinearActuator` (input: its control u), a registered actuator of your own,
            or None for an ideal torque source (input: the torque at the transmission's input
            [N.m], or at the joint without transmission).
        transmission: A :class:`Gear`, an :class:`ElasticTransmission`, or None (direct drive,
            ratio 1).
    """

    actuator: Actuator | None = None
    transmission: Transmission | None = None

    def __deepcopy__(self, memo: dict) -> Drive:
        """Itself when its parts copy to themselves (frozen values: a motor, a gear), else
        a drive of the parts' copies."""
        actuator = copy.deepcopy(self.actuator, memo)
        transmission = copy.deepcopy(self.transmission, memo)
        if actuator is self.actuator and transmission is self.transmission:
            return self
        return Drive(actuator, transmission)

    def __post_init__(self) -> None:
        if self.actuator is not None and not isinstance(self.actuator, Actuator):
            raise InvalidParameter(
                "actuator must implement pinext.drives.Actuator (DCMotor, LinearActuator, ...) "
                f"or be None, got {self.actuator!r}"
            )
        if self.transmission is not None and not isinstance(self.transmission, Transmission):
            raise InvalidParameter(
                "transmission must be a Gear, an ElasticTransmission or None, "
                f"got {self.transmission!r}"
            )
        if self.elastic and not self.motor_side_inertia > 0:
            raise InvalidParameter(
                "an elastic transmission needs a positive inertia on the motor side "
                "(rotor_inertia, input_inertia or output_inertia)"
            )
        if self.backlash > 0 and not self.motor_side_inertia > 0:
            raise InvalidParameter(
                "a gear with backlash needs a positive inertia on the motor side (the motor "
                "moves on its own inside the play): give rotor_inertia or input_inertia"
            )

    @property
    def backlash(self) -> float:
        """Total free play b of the transmission at the joint [rad] (0: none)."""
        return 0.0 if self.transmission is None else float(self.transmission.backlash)

    @property
    def ratio(self) -> float:
        """Reduction N [-] (1 without transmission)."""
        return 1.0 if self.transmission is None else self.transmission.ratio

    @property
    def elastic(self) -> bool:
        """Whether the transmission is elastic (motor angle and speed become states)."""
        return self.transmission is not None and self.transmission.elastic

    @property
    def actuator_inertia(self) -> float:
        """Rotor (or actuator) inertia J [kg.m^2]."""
        return 0.0 if self.actuator is None else self.actuator.inertia

    @property
    def motor_side_inertia(self) -> float:
        """Inertia moving with the motor shaft θ [kg.m^2]: J + I' (rigid gear) or
        J + I' + I''/N² (elastic transmission, (20.98))."""
        inertia = self.actuator_inertia
        t = self.transmission
        if t is not None:
            inertia += t.input_inertia + (t.output_inertia / t.ratio**2 if t.elastic else 0.0)
        return inertia

    @property
    def input_kind(self) -> str:
        """``"voltage"`` (DC motor), ``"control"`` (linear actuator), ``"torque"`` (ideal
        drive), or what a registered actuator declares."""
        return "torque" if self.actuator is None else self.actuator.input_kind

    @property
    def source(self) -> Actuator:
        """The actuator, an ideal :class:`TorqueSource` when None."""
        return TorqueSource() if self.actuator is None else self.actuator

    def reflected_inertia(self) -> float:
        """Armature added to the joint by a rigid drive: (J + I') N² + I'' [kg.m^2] ((20.73))."""
        if self.elastic:
            return 0.0
        out = self.transmission.output_inertia if self.transmission is not None else 0.0
        return self.motor_side_inertia * self.ratio**2 + out


#: Relative size of a joint acceleration that counts as zero (the joint is held).
_HELD = 1e-9


class DriveQuantities(NamedTuple):
    """What the drives do at one instant (one evaluation of :class:`DriveComponent`)."""

    shaft_velocity: np.ndarray
    """Shape (n_drives,). Motor shaft velocity θ̇ [rad/s]."""
    inputs: np.ndarray
    """Shape (n_drives,). Inputs after saturation (voltage [V], control, torque [N.m])."""
    active_torque: np.ndarray
    """Shape (n_drives,). τ_s, the shaft torque of each actuator at rest [N.m] (20.78)."""
    effort: np.ndarray
    """Shape (nv,). Generalized force of the drives on the mechanism [N.m or N]."""
    spring_torque: np.ndarray
    """Shape (n_elastic,). Torque of the elastic transmissions at the joint [N.m] (20.98)."""
    relative_velocity: np.ndarray
    """Shape (n_elastic,). θ̇/N − q̇ across the elastic transmissions [rad/s]."""
    factor: np.ndarray | None
    """Shape (n_drives,). Efficiency factor e of the gears in a lossy mode, else None."""
    current: np.ndarray | None = None
    """Shape (n_drives,). Armature currents [A] (DC motors on the vectorized path)."""


class DriveComponent(PlayHooks, Component):
    """The drives of a System: states, efforts, inertia, modes, energy and outputs.

    *Inputs* (``u`` of :func:`pinext.simulate`): one per drive, in the order of the ``drives``
    dict (see :attr:`joints`): the voltage [V] of a DC motor, the control of a linear actuator,
    the input torque [N.m] of an ideal drive, or what a registered :class:`Actuator` takes.

    Every actuator is used through the :class:`Actuator` protocol (its inertia, own states,
    active torque τ_s, state derivative, power and signals), Vukobratović & Potkonjak
    (20.74)–(20.82); drives that are all DC motors without inductance take a vectorized path
    with the same equations.

    *Rigid drives* (no transmission or a :class:`Gear`): the motor angle is θ = N q (20.68).
    Rotor and gear inertia are reflected into ``system.model.armature`` in :meth:`bind`
    (H* of (20.73)); the active torque acts as the joint effort ``N τ_s``, which gives
    (20.71)–(20.73) exactly.

    *Elastic transmissions* add the states ``motor_angle`` θ and ``motor_velocity`` θ̇
    ((20.98)–(20.99)); the spring torque acts on the joint and, divided by N, on the motor.

    *Actuator states* (a DC motor's current (20.64)–(20.65), a general linear actuator's
    stored states) live in the blocks the actuators name (``drives.current``,
    ``drives.actuator_states``, ...).

    *Gear efficiency*: a gear with an efficiency below one has a mode, a :class:`GearMode` per
    lossy gear (a :class:`GearModes` in :attr:`lossy_joints` order): driving or backdriven in
    either direction, stuck (θ̇ = 0, the gear holds the joint through a constraint row, like
    dry friction), or held by other constraints. In a moving mode the joint receives
    ``e N M`` with ``e = η'`` or ``1/η''`` and ``M = τ_s - (J + I') θ̈`` the torque entering
    the gear: the rotor inertia appears as ``e (J + I') N²``, an added inertia of the System's
    acceleration step. Events end a mode where ``M`` or θ̇ vanishes, and a stuck gear slips
    when the holding torque (its row's reaction) leaves ``[η' N M, N M / η'']``; the mode in
    each phase is consistent with the sign of the power flow, so the switch neither chatters
    nor creates energy, and the loss ``(1 - e) M θ̇ >= 0`` goes to the dissipated energy.

    *Backlash* (a :class:`Gear` or :class:`ElasticTransmission` with ``backlash`` > 0): a
    :class:`~pinext.drives.backlash.Play` per such gear in the mode (in
    :attr:`backlash_joints` order): in the play, or on one of its flanks. A rigid gear with
    backlash gets the states ``play_angle`` ψ = θ/N − q and ``play_velocity`` ψ̇; its flanks
    meet in impacts with restitution (:mod:`pinext.drives.backlash`).

    Args:
        robot: The robot (its ``model`` gives joint indices).
        drives: Joint name -> :class:`Drive`.

    Raises:
        NameNotFound: A joint name that the model does not have.
        InvalidParameter: A drive on a joint with more than one DOF, an elastic drive on a
            continuous joint, or a value that is not a :class:`Drive`.
    """

    name = "drives"

    def __init__(self, robot: Robot, drives: dict[str, Drive]) -> None:
        super().__init__()
        model = robot.model
        joints = list(model.names)[1:]
        self.joints: list[str] = list(drives)
        self.drives: list[Drive] = []
        iv, iq, continuous = [], [], []
        for joint, drive in drives.items():
            if joint not in joints:
                raise NameNotFound("joint", joint, joints)
            if not isinstance(drive, Drive):
                raise InvalidParameter(f"drive of joint '{joint}' must be a Drive, got {drive!r}")
            jmodel = model.joints[model.getJointId(joint)]
            if jmodel.nv != 1 or jmodel.nq not in (1, 2):
                raise InvalidParameter(
                    f"joint '{joint}' has {jmodel.nv} DOFs; drives need one-DOF joints"
                )
            if jmodel.nq == 2 and drive.elastic:
                raise InvalidParameter(
                    f"joint '{joint}' is continuous (cos/sin configuration); elastic "
                    "transmissions need revolute or prismatic joints"
                )
            self.drives.append(drive)
            iv.append(jmodel.idx_v)
            iq.append(jmodel.idx_q)
            continuous.append(jmodel.nq == 2)
        n = len(self.drives)
        self.n_inputs = n
        self.iv = np.array(iv, dtype=int)
        self.iq = np.array(iq, dtype=int)
        self.continuous = np.array(continuous, dtype=bool)
        d = self.drives
        self.sources: list[Actuator] = [drive.source for drive in d]
        self.ratio = np.array([x.ratio for x in d])
        self.inv_ratio = 1.0 / self.ratio
        self.motor_inertia = np.array([x.motor_side_inertia for x in d])
        self.inv_motor_inertia = 1.0 / np.where(self.motor_inertia > 0, self.motor_inertia, 1.0)
        self.elastic = np.array([i for i in range(n) if d[i].elastic], dtype=int)
        self.rigid = np.array([i for i in range(n) if not d[i].elastic], dtype=int)
        self.stiffness = np.array([d[i].transmission.stiffness for i in self.elastic])  # type: ignore[union-attr]
        self.transmission_damping = np.array(
            [d[i].transmission.damping for i in self.elastic]  # type: ignore[union-attr]
        )
        # the actuators' own states, grouped in named blocks (drive, offset in block, size)
        self.blocks: dict[str, list[tuple[int, int, int]]] = {}
        for i, src in enumerate(self.sources):
            if src.n_states:
                block = self.blocks.setdefault(src.state_block, [])
                offset = sum(size for _, _, size in block)
                block.append((i, offset, src.n_states))
        # gear efficiency
        self.efficiency = np.ones(n)
        self.backdrive_efficiency = np.ones(n)
        for i, x in enumerate(d):
            if isinstance(x.transmission, Gear):
                self.efficiency[i] = x.transmission.efficiency
                self.backdrive_efficiency[i] = x.transmission.backdrive_efficiency
        self.lossy = np.array(
            [
                i
                for i, x in enumerate(d)
                if isinstance(x.transmission, Gear) and x.transmission.lossy
            ],
            dtype=int,
        )
        self.all_elastic = self.elastic.size == n and n > 0
        self._setup_play()
        self._dc_motor_arrays()
        self.model: pin.Model | None = None
        self._cache: tuple | None = None

    def _dc_motor_arrays(self) -> None:
        """The vectorized path: every drive a DC motor without inductance, no lossy gear, all
        elastic or all rigid (the common case, and the hot loop of most simulations)."""
        motors = [m for m in self.sources if isinstance(m, DCMotor)]
        n = len(self.sources)
        self.vectorized = (
            n > 0
            and len(motors) == n
            and all(m.inductance == 0 for m in motors)
            and all(m.current_limit is None for m in motors)
            and not self.lossy.size
            and not self.play_drives.size
            and self.elastic.size in (0, n)
        )
        if not self.vectorized:
            return
        self.resistance = np.array([m.resistance for m in motors])
        self.inv_resistance = 1.0 / self.resistance
        self.torque_constant = np.array([m.torque_constant for m in motors])
        self.back_emf_constant = np.array([m.back_emf_constant for m in motors])
        self.viscous_friction = np.array([m.viscous_friction for m in motors])
        self.voltage_limit = np.array(
            [np.inf if m.voltage_limit is None else m.voltage_limit for m in motors]
        )
        self.saturating = bool(np.isfinite(self.voltage_limit).any())
        self.has_friction = bool(self.viscous_friction.any())
        self.has_conversion = bool((self.back_emf_constant != self.torque_constant).any())
        self.has_transmission_damping = bool(self.transmission_damping.any())
        self.iv_block = _as_slice(self.iv)
        self.iq_block = _as_slice(self.iq)

    # -- names -----------------------------------------------------------------------------
    @property
    def lossy_joints(self) -> list[str]:
        """Joints whose gear has an efficiency below one, in the order of the modes."""
        return [self.joints[i] for i in self.lossy]

    def input_names(self) -> list[str]:
        """``<joint>.<voltage|control|torque>`` for each input, in order."""
        return [f"{j}.{d.input_kind}" for j, d in zip(self.joints, self.drives, strict=True)]

    def input_bounds(self) -> np.ndarray:
        """Each actuator's :attr:`~pinext.drives.base.Actuator.input_bound` (a DC motor's
        ``voltage_limit``)."""
        return np.array([src.input_bound for src in self.sources], dtype=float)

    def states(self) -> list[tuple[str, int]]:
        blocks = []
        if self.elastic.size:
            n = int(self.elastic.size)
            blocks += [("motor_angle", n), ("motor_velocity", n)]
        if self.rigid_play.size:
            n = int(self.rigid_play.size)
            blocks += [("play_angle", n), ("play_velocity", n)]
        for name, members in self.blocks.items():
            blocks.append((name, sum(size for _, _, size in members)))
        return blocks

    def stepped_states(self) -> SteppedStates | None:
        """The rotors' angles, velocities and inertias of the elastic transmissions (without
        backlash) and the currents of DC motors with inductance (P = L): forces linear in
        them; None with other actuator states, a rigid gear's backlash or a lossy gear (whose
        modes change the reflected inertia)."""
        if self.rigid_play.size or self.lossy.size or self.continuous.any():
            return None
        if self.elastic.size and self.elastic_half.any():
            return None
        first, metric = [], []
        for i, block in self.own.items():
            src = self.sources[i]
            if not (isinstance(src, DCMotor) and src.inductance > 0):
                return None
            first.append(block.start)
            metric.append(src.inductance)
        index = np.arange(self.nx)
        rotors = self.elastic.size > 0
        return SteppedStates(
            index[self.s_angle] if rotors else np.zeros(0, dtype=int),
            index[self.s_vel] if rotors else np.zeros(0, dtype=int),
            1.0 / self.inv_motor_inertia[self.elastic],
            np.array(first, dtype=int),
            np.array(metric, dtype=float),
        )

    def bind(self, system: System) -> None:
        """Reflect rigid drives' rotor and gear inertia into ``system.model.armature``."""
        self.model = system.model
        self.nq, self.nv = system.model.nq, system.model.nv
        self.nx, self.n_system_inputs = system.nx, system.n_inputs
        armature = np.array(system.model.armature, dtype=float)
        for i in self.rigid:
            armature[self.iv[i]] += self.drives[i].reflected_inertia()
        system.model.armature = armature
        s = self.layout.slices
        self.s_angle = s.get("motor_angle")
        self.s_vel = s.get("motor_velocity")
        # drive -> slice of its own states in the public state
        self.own: dict[int, slice] = {}
        for name, members in self.blocks.items():
            start = s[name].start
            for i, offset, size in members:
                self.own[i] = slice(start + offset, start + offset + size)

    # -- initial conditions ----------------------------------------------------------------
    def joint_angle(self, q: np.ndarray) -> np.ndarray:
        """Joint angles of the driven joints [rad or m] (atan2 for continuous joints)."""
        angle = q[self.iq].astype(float)
        if self.continuous.any():
            c = self.continuous
            angle[c] = np.arctan2(q[self.iq[c] + 1], q[self.iq[c]])
        return angle

    def initial_state(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Motors at θ = N (q + g/c) (the spring holds gravity; beyond the play on the
        loaded flank with backlash), θ̇ = N q̇; rigid gears with backlash on the flank that
        holds gravity (centred without load); actuator states zero."""
        parts = []
        gravity = np.zeros(len(v))
        if self.model is not None and (self.elastic.size or self.rigid_play.size):
            gravity = pin.computeGeneralizedGravity(self.model, self.model.createData(), q)
        if self.elastic.size:
            el = self.elastic
            load = gravity[self.iv[el]]
            held = q[self.iq[el]] + load / self.stiffness + np.sign(load) * self.elastic_half
            parts += [self.ratio[el] * held, self.ratio[el] * v[self.iv[el]]]
        parts += self._play_initial(q, gravity)
        for members in self.blocks.values():
            parts.append(np.zeros(sum(size for _, _, size in members)))
        return np.concatenate(parts) if parts else np.zeros(0)

    # -- evaluation ------------------------------------------------------------------------
    def _evaluate(self, t, x, q, v, u, mode) -> DriveQuantities:
        """The drives' quantities at (t, x) (cached for the calls of one evaluation)."""
        cache = self._cache
        if (
            cache is not None
            and cache[0] is x
            and cache[1] == t
            and cache[2] is u
            and cache[3] == mode
        ):
            return cache[4]
        if self.vectorized:
            now = self._evaluate_motors(x, q, v, u)
        else:
            now = self._evaluate_actuators(x, q, v, u, mode)
        self._cache = (x, t, u, mode, now)
        return now

    def _springs(self, x, q, v, mode=None) -> tuple[np.ndarray, np.ndarray]:
        """(spring torque, relative velocity) of the elastic transmissions (20.98) (with
        backlash: beyond the play, zero inside it)."""
        el = self.elastic
        if not el.size:
            return np.zeros(0), np.zeros(0)
        relative = x[self.s_vel] * self.inv_ratio[el] - v[self.iv[el]]
        deflection = x[self.s_angle] * self.inv_ratio[el] - q[self.iq[el]]
        deflection, relative = self._dead_zone(deflection, relative, mode)
        return self.stiffness * deflection + self.transmission_damping * relative, relative

    def _evaluate_actuators(self, x, q, v, u, mode) -> DriveQuantities:
        """Every actuator through the :class:`Actuator` protocol."""
        n = len(self.drives)
        u = np.asarray(u, dtype=float)
        theta = self._theta(x, q)
        shaft_velocity = np.empty(n)
        rig, el = self.rigid, self.elastic
        shaft_velocity[rig] = self.ratio[rig] * v[self.iv[rig]]
        if el.size:
            shaft_velocity[el] = x[self.s_vel]
        if self.rigid_play.size:
            bl = self.rigid_play
            shaft_velocity[bl] = self.ratio[bl] * (v[self.iv[bl]] + self._play_state(x)[1])
        spring, relative = self._springs(x, q, v, mode)
        inputs = np.empty(n)
        active = np.empty(n)
        for i, src in enumerate(self.sources):
            inputs[i] = src.saturate(float(u[i]))
            active[i] = src.active_torque(
                self._own_states(x, i), theta[i], shaft_velocity[i], inputs[i]
            )
        factor = self._factors(mode)[0] if mode else None
        effort = np.zeros(v.size)
        gain = self.ratio[rig] if factor is None else factor[rig] * self.ratio[rig]
        if self.rigid_play.size:
            gain = gain * self._engaged(mode)[rig]
        effort[self.iv[rig]] = gain * active[rig]
        if el.size:
            effort[self.iv[el]] += spring
        return DriveQuantities(shaft_velocity, inputs, active, effort, spring, relative, factor)

    def _evaluate_motors(self, x, q, v, u) -> DriveQuantities:
        """:meth:`_evaluate_actuators` for DC motors without inductance, vectorized."""
        u = np.asarray(u, dtype=float)
        limit = self.voltage_limit
        inputs = np.minimum(np.maximum(u, -limit), limit) if self.saturating else u
        effort = np.zeros(v.size)
        if self.all_elastic:
            shaft_velocity = x[self.s_vel]
            spring, relative = self._springs(x, q, v)
            effort[self.iv_block] = spring
        else:
            shaft_velocity = self.ratio * v[self.iv_block]
            spring = relative = np.zeros(0)
        current = (inputs - self.back_emf_constant * shaft_velocity) * self.inv_resistance
        active = self.torque_constant * current - self.viscous_friction * shaft_velocity
        if not self.all_elastic:
            effort[self.iv_block] = self.ratio * active
        return DriveQuantities(
            shaft_velocity, inputs, active, effort, spring, relative, None, current
        )

    def _own_states(self, x: np.ndarray, i: int) -> np.ndarray:
        block = self.own.get(i)
        return _EMPTY if block is None else x[block]

    def _theta(self, x: np.ndarray, q: np.ndarray) -> np.ndarray:
        theta = self.ratio * self.joint_angle(q)
        if self.elastic.size:
            theta[self.elastic] = x[self.s_angle]
        if self.rigid_play.size:
            theta[self.rigid_play] += self.ratio[self.rigid_play] * self._play_state(x)[0]
        return theta

    def _factors(self, mode: GearModes | None) -> tuple[np.ndarray, np.ndarray]:
        """(e per drive, indices of the stuck drives) in a mode."""
        e = np.ones(len(self.drives))
        if not mode:
            return e, np.zeros(0, dtype=int)
        stuck = []
        for i, gear in zip(self.lossy, mode.gears, strict=True):
            if gear is GearMode.STUCK:
                e[i] = 0.0
                stuck.append(i)
            else:
                e[i] = self.efficiency[i] if gear.driving else 1.0 / self.backdrive_efficiency[i]
        return e, np.array(stuck, dtype=int)

    def linear(self, mode):
        """Linear without current limits or continuous joints:
        (20.64)–(20.69), (20.74) and (20.98)–(20.99) are linear in the state and the input
        clipped to :meth:`input_bounds`; a lossy gear moving (or held by other rows) gives
        ``e N τ_s`` with e fixed by its mode, its rotor's ``e J N²`` as added inertia, and
        its loss ``(1 − e) M θ̇`` a quadratic form of the state and the inputs plus the
        work of that inertia (:meth:`inertia_power`); a stuck gear transmits nothing and holds
        its joint through its row (:meth:`compiled_rows`); a gear with backlash transmits
        nothing in its play (its motor's ψ̈ through the joint's acceleration:
        :meth:`acceleration_coupling`) and is rigid on a flank."""
        return all(src.linear for src in self.sources) and not self.continuous.any()

    def linear_terms(self, mode):
        """``[τ; ṡ] = T z`` in closed form (:meth:`Component.linear_terms`), from each
        actuator's ``linear_coefficients`` (τ_s and its own states' derivatives over
        ``(θ, θ̇, states, u)``): a rigid drive acts on its joint with ``N τ_s`` at ``θ = N q``
        (20.68)–(20.69); an elastic transmission with ``τ = c (θ/N − q) + d (θ̇/N − q̇)``
        on the joint and ``(J + I' + I''/N²) θ̈ = τ_s − τ/N`` on the motor (20.98)–(20.99)
        (Vukobratović & Potkonjak). None with lossy gears or backlash (they have modes), a
        continuous joint, a curved model or an actuator without ``linear_coefficients``."""
        rows = [_coefficients(src) for src in self.sources]
        curved = self.continuous.any() or self.nq != self.nv
        if self.lossy.size or self.play_drives.size or curved or any(r is None for r in rows):
            return None
        nv, n_core = self.nv, self.nx - 2
        t = np.zeros((n_core - nv, n_core + self.n_system_inputs + 1))
        iv, iq, ratio, inertia = (
            a.tolist() for a in (self.iv, self.iq, self.ratio, self.motor_inertia)
        )
        motor = {i: k for k, i in enumerate(self.elastic.tolist())}  # drive -> elastic index
        for i, r in enumerate(rows):  # (scalar updates: faster than numpy's on a few entries)
            j, n = iv[i], ratio[i]
            if i in motor:  # θ, θ̇ states; τ = c (θ/N − q) + d (θ̇/N − q̇) on joint and motor
                k = motor[i]
                angle, speed = self.s_angle.start + k, self.s_vel.start + k
                c, d = float(self.stiffness[k]), float(self.transmission_damping[k])
                for column, value in ((angle, c / n), (iq[i], -c), (speed, d / n), (nv + j, -d)):
                    t[j, column] += value
                    t[speed - nv, column] -= value / (n * inertia[i])
                t[angle - nv, speed] = 1.0  # dθ/dt = θ̇
                target, gain, scale = speed - nv, 1.0 / inertia[i], 1.0
            else:  # θ = N q, τ_s on the joint through N
                angle, speed, target, gain, scale = iq[i], nv + j, j, n, n
            own = list(range(n_core)[self.own.get(i, slice(0))])
            columns = [angle, speed, *own, n_core + self.layout.inputs.start + i]
            weights = [scale, scale] + [1.0] * (len(own) + 1)
            rows_of = [target, *(state - nv for state in own)]  # τ_s, then its own states'
            gains = [gain] + [1.0] * len(own)
            for row, g, coefficients in zip(rows_of, gains, r.tolist(), strict=True):
                for column, w, value in zip(columns, weights, coefficients, strict=True):
                    t[row, column] += g * w * value
        return t

    def inertia_power(self, mode):
        """The part ``−(1 − e) J N² q̈ q̇`` of a moving lossy gear's loss ``(1 − e) M θ̇``
        (``M = τ_s − J N q̈``, ``θ̇ = N q̇``) that :meth:`power` leaves out without a step."""
        if not mode or not self.lossy.size:
            return None
        e, _ = self._factors(mode)
        c = np.zeros(self.nv)
        for i in self.lossy:
            if e[i] > 0:
                c[self.iv[i]] -= (1.0 - e[i]) * self.motor_inertia[i] * self.ratio[i] ** 2
        return c

    def effort(self, t, x, q, v, u, mode):
        return self._evaluate(t, x, q, v, u, mode).effort

    def derivative(self, t, x, q, v, u, mode, out, step):
        now = self._evaluate(t, x, q, v, u, mode)
        el = self.elastic
        if el.size:
            out[self.s_angle] = x[self.s_vel]
            out[self.s_vel] = (
                now.active_torque[el] - now.spring_torque * self.inv_ratio[el]
            ) * self.inv_motor_inertia[el]
        self._play_derivative(x, now, step, out, mode)
        if self.own:
            theta = self._theta(x, q)
            for i, block in self.own.items():
                out[block] = self.sources[i].state_derivative(
                    x[block], theta[i], now.shaft_velocity[i], now.inputs[i]
                )

    def _losses(self, t, x, q, v, u, mode, step: Step | None) -> dict[str, np.ndarray]:
        """Per-drive powers [W]: input, copper, friction, efficiency and conversion losses."""
        now = self._evaluate(t, x, q, v, u, mode)
        n = len(self.drives)
        powers = np.zeros((4, n))  # input, copper, friction, conversion
        theta = self._theta(x, q)
        for i, src in enumerate(self.sources):
            powers[:, i] = src.power(
                self._own_states(x, i), theta[i], now.shaft_velocity[i], now.inputs[i]
            )
        friction = powers[2]
        if self.elastic.size:
            friction[self.elastic] += self.transmission_damping * now.relative_velocity**2
        efficiency = np.zeros(n)
        if mode and now.factor is not None:
            e = now.factor
            M = now.active_torque.copy()
            if step is not None:  # (without one: the rotor's part is inertia_power's)
                M -= self.motor_inertia * self.ratio * step.a[self.iv]
            moving = self.lossy[e[self.lossy] > 0]
            efficiency[moving] = (1.0 - e[moving]) * M[moving] * now.shaft_velocity[moving]
        return {
            "input": powers[0],
            "copper": powers[1],
            "friction": friction,
            "efficiency": efficiency,
            "conversion": powers[3],
        }

    def power(self, t, x, q, v, u, mode, step):
        if self.vectorized:  # the DC-motor path: the same powers, vectorized
            now = self._evaluate(t, x, q, v, u, mode)
            i, speed = now.current, now.shaft_velocity
            p_in = float(now.inputs.dot(i))
            p_diss = float(self.resistance.dot(i * i))
            if self.has_friction:
                p_diss += float(self.viscous_friction.dot(speed * speed))
            if self.has_conversion:
                p_diss += float((self.back_emf_constant - self.torque_constant).dot(i * speed))
            if self.has_transmission_damping:
                p_diss += float(self.transmission_damping.dot(now.relative_velocity**2))
            return p_in, p_diss
        p = self._losses(t, x, q, v, u, mode, step)
        dissipated = p["copper"].sum() + p["friction"].sum() + p["efficiency"].sum()
        return float(p["input"].sum()), float(dissipated + p["conversion"].sum())

    def energy(self, x, q, v):
        """Rotor and gear kinetic energy of elastic drives, spring energy, and what the
        actuators store (magnetic energy ½ L i²) [J].

        (The rotors of rigid drives are in the mechanism's kinetic energy via the armature.)"""
        total = self._play_energy(x, q, v)
        el = self.elastic
        if el.size:
            omega = x[self.s_vel]
            deflection = x[self.s_angle] * self.inv_ratio[el] - q[self.iq[el]]
            if self.elastic_half.any():  # beyond the play
                deflection = np.sign(deflection) * np.maximum(
                    np.abs(deflection) - self.elastic_half, 0.0
                )
            total += 0.5 * float(self.motor_inertia[el] @ omega**2)
            total += 0.5 * float(self.stiffness @ deflection**2)
        for i, block in self.own.items():
            src = self.sources[i]
            if isinstance(src, DCMotor):
                total += 0.5 * src.inductance * float(x[block][0]) ** 2
        return total

    # -- gear efficiency modes -------------------------------------------------------------
    def added_inertia(self, mode: GearModes | None) -> np.ndarray | None:
        """A moving lossy gear reflects ``e (J + I') N²`` instead of ``(J + I') N²``; a rigid
        gear in its play reflects nothing."""
        if not mode:
            return None
        e, _ = self._factors(mode)
        added = np.zeros(self.nv)
        for i in self.lossy:
            if e[i] > 0:
                added[self.iv[i]] += (e[i] - 1.0) * self.motor_inertia[i] * self.ratio[i] ** 2
        self._play_added_inertia(mode, added)
        return added

    def is_constrained(self, mode: GearModes | None) -> bool:
        return mode is not None and GearMode.STUCK in mode.gears

    def compiled_rows(self, mode: GearModes | None) -> JointRows | None:
        """The stuck gears' rows ``q̈_i = 0`` (no stabilisation: a gear sticks at rest)."""
        if not mode:
            return None
        _, stuck = self._factors(mode)
        iq, iv = self.iq[stuck], self.iv[stuck]
        rows = [[(int(a), int(b), 1.0)] for a, b in zip(iq, iv, strict=True)]
        return JointRows.build(rows, [0.0] * stuck.size, [0.0] * stuck.size)

    def constraint_rows(self, t, x, q, v, mode, data):
        """A stuck gear holds its joint: the row ``a_i = 0``; its reaction is the joint torque
        the gear supplies."""
        _, stuck = self._factors(mode)
        jacobian = np.zeros((stuck.size, self.nv))
        jacobian[np.arange(stuck.size), self.iv[stuck]] = 1.0
        return ConstraintRows(jacobian, np.zeros(stuck.size), None, RowKind.MODAL)

    def _gear_torque(self, x: np.ndarray, mode: GearModes, step: Step) -> tuple:
        """(M entering each gear [N.m], joint torque each stuck gear supplies [N.m], active
        torques τ_s [N.m]) in a step."""
        q, v = x[: self.nq], x[self.nq : self.nq + self.nv]
        now = self._evaluate(np.nan, x, q, v, step.u, mode)  # NaN time: not cached
        M = now.active_torque - self.motor_inertia * self.ratio * step.a[self.iv]
        held = np.zeros(len(self.drives))
        _, stuck = self._factors(mode)
        if stuck.size:
            held[stuck] = step.force(self.name, stuck.size)
        return M, held, now.active_torque

    def _bounds(self, tau_s: float, i: int) -> tuple[float, float]:
        ends = (
            self.efficiency[i] * self.ratio[i] * tau_s,
            self.ratio[i] * tau_s / self.backdrive_efficiency[i],
        )
        return min(ends), max(ends)

    def _slip(self, x: np.ndarray, mode: GearModes, k: int, low: bool, trial: Trial) -> GearMode:
        """Mode of lossy gear k when its held joint slips past the low / high bound.

        The joint then moves towards ``sign(N)`` (low) or ``-sign(N)`` (high); the mode is
        the one whose torque M entering the gear gives a consistent power flow."""
        i = self.lossy[k]
        sigma = np.sign(self.ratio[i]) * (1 if low else -1)
        for driving in (True, False):
            candidate = mode.replace(k, GearMode.moving(driving, sigma))
            M, _, _ = self._gear_torque(x, candidate, trial(x, candidate))
            if M[i] * sigma * (1 if driving else -1) > 0:
                return candidate[k]
        _, _, tau_s = self._gear_torque(x, mode, trial(x, mode))
        n_tau = self.ratio[i] * tau_s[i]
        driving = (n_tau > 0) if low else (n_tau <= 0)
        return GearMode.moving(driving, sigma)

    def _from_rest(self, x: np.ndarray, mode: GearModes, k: int, trial: Trial) -> GearMode:
        """Mode of lossy gear k when its joint is at rest: carried by the other constraints,
        held by the gear if it can, else slipping."""
        i = self.lossy[k]
        free = mode.replace(k, GearMode.DRIVING)
        step = trial(x, free)
        if abs(step.a[self.iv[i]]) <= _HELD * (1.0 + np.abs(step.a).max()):
            return GearMode.HELD  # the other constraints hold the joint
        held_mode = mode.replace(k, GearMode.STUCK)
        _, held, tau_s = self._gear_torque(x, held_mode, trial(x, held_mode))
        lo, hi = self._bounds(tau_s[i], i)
        slack = 1e-12 * (1.0 + abs(hi) + abs(lo))
        if lo - slack <= held[i] <= hi + slack:
            return GearMode.STUCK
        return self._slip(x, mode, k, held[i] < lo, trial)

    def initial_mode(self, t: float, x: np.ndarray, trial: Trial) -> GearModes | None:
        if not self.lossy.size and not self.play_drives.size:
            return None
        v = x[self.nq : self.nq + self.nv]
        mode = GearModes(
            (GearMode.DRIVING,) * self.lossy.size, (Play(Flank.FREE),) * self.play_drives.size
        )
        if self.play_drives.size:
            mode = self._initial_play(t, x, mode, trial)
        for _ in range(2):
            for k, i in enumerate(self.lossy):
                td = self.ratio[i] * v[self.iv[i]]
                if td == 0:
                    mode = mode.replace(k, self._from_rest(x, mode, k, trial))
                    continue
                M, _, _ = self._gear_torque(x, mode, trial(x, mode))
                mode = mode.replace(k, GearMode.moving(M[i] * td >= 0, td))
        return mode

    def settle_mode(self, t: float, x: np.ndarray, mode: Any, trial: Trial) -> GearModes | None:
        """After another component's event: a gear whose joint is at rest chooses again."""
        if not mode:
            return mode
        v = x[self.nq : self.nq + self.nv]
        for k, i in enumerate(self.lossy):
            if v[self.iv[i]] == 0:
                mode = mode.replace(k, self._from_rest(x, mode, k, trial))
        if self.rigid_play.size:
            mode = self._release_flanks(t, x, mode, trial)
        return mode

    def events(self, mode: GearModes | None) -> list[Event]:
        if not mode:
            return []
        events = self._play_events(mode)
        for k, gear in enumerate(mode.gears):
            i = int(self.lossy[k])
            joint = self.joints[i]
            if gear is GearMode.HELD:
                continue
            if gear is GearMode.STUCK:
                row = mode.gears[:k].count(GearMode.STUCK)  # its row among the stuck gears'
                events += [
                    Event(
                        f"{joint}.gear_slips_{'low' if low else 'high'}",
                        self._slip_function(i, low, mode),
                        -1.0,
                        self._slip_action(k, low),
                        dynamic=True,
                        compiled=self._hold_form(i, row, low),
                    )
                    for low in (True, False)
                ]
                continue
            m = gear.sign if gear.driving else -gear.sign
            events.append(
                Event(
                    f"{joint}.gear_torque_zero",
                    self._torque_function(i, mode),
                    -m,
                    self._flip_action(k),
                    dynamic=True,
                    compiled=self._torque_form(i),
                )
            )
            speed = Distances(np.array([self.nq + self.iv[i]]), self.ratio[[i]], np.zeros(1))
            events.append(
                Event(
                    f"{joint}.motor_stops",
                    self._velocity_function(i),
                    -gear.sign,
                    self._stop_action(k),
                    compiled=speed,  # θ̇ = N q̇
                )
            )
        return events

    def _torque_function(self, i: int, mode: GearModes):
        def g(t: float, x: np.ndarray, step: Step) -> float:
            return float(self._gear_torque(x, mode, step)[0][i])

        return g

    def _torque_form(self, i: int) -> GearTorque | None:
        """M = τ_s − J N q̈ of rigid drive i as a :class:`GearTorque` over the Euclidean
        ``z = [x without the work totals, u, 1]``: its actuator's active torque identified
        through the :class:`Actuator` protocol at unit steps of (θ = N q, θ̇ = N q̇, its own
        states, u within its bound; with backlash θ = N (q + ψ)), exact for a linear
        actuator; None for another or an elastic transmission (its θ is a state)."""
        src = self.sources[i]
        if not src.linear or self.continuous[i] or self.drives[i].elastic:
            return None
        own = np.zeros(src.n_states)
        base = src.active_torque(own, 0.0, 0.0, 0.0)
        step = min(1.0, src.input_bound / 8.0)
        n_core = self.nx - 2
        entry = [self.iq[i], self.nq + self.iv[i], n_core + self.layout.inputs.start + i]
        coefficient = [
            self.ratio[i] * (src.active_torque(own, 1.0, 0.0, 0.0) - base),
            self.ratio[i] * (src.active_torque(own, 0.0, 1.0, 0.0) - base),
            (src.active_torque(own, 0.0, 0.0, step) - base) / step,
        ]
        if i in self.rigid_play:  # θ = N (q + ψ), θ̇ = N (q̇ + ψ̇)
            r = list(self.rigid_play).index(i)
            entry += [
                self.layout.slices[name].start + r for name in ("play_angle", "play_velocity")
            ]
            coefficient += coefficient[:2]
        block = self.own.get(i)
        for j, index in enumerate(range(self.nx)[block] if block is not None else ()):
            unit = np.zeros(src.n_states)
            unit[j] = 1.0
            entry.append(index)
            coefficient.append(src.active_torque(unit, 0.0, 0.0, 0.0) - base)
        entry.append(n_core + self.n_system_inputs)
        coefficient.append(base)
        return GearTorque(
            np.array(entry, dtype=np.int64),
            np.array(coefficient, dtype=float),
            int(self.iv[i]),
            float(self.motor_inertia[i] * self.ratio[i]),
        )

    def _hold_form(self, i: int, row: int, low: bool) -> GearHold | None:
        """The slip test of stuck gear i (its row ``row`` among the stuck gears') as a
        :class:`GearHold` (:meth:`_torque_form`'s τ_s), or None."""
        torque = self._torque_form(i)
        if torque is None:
            return None
        ends = (self.efficiency[i] * self.ratio[i], self.ratio[i] / self.backdrive_efficiency[i])
        return GearHold(row, torque.entry, torque.coefficient, ends, low)

    def _velocity_function(self, i: int):
        index, N = self.nq + int(self.iv[i]), float(self.ratio[i])

        def g(t: float, x: np.ndarray) -> float:
            return N * float(x[index])

        return g

    def _slip_function(self, i: int, low: bool, mode: GearModes):
        def g(t: float, x: np.ndarray, step: Step) -> float:
            _, held, tau_s = self._gear_torque(x, mode, step)
            lo, hi = self._bounds(tau_s[i], i)
            slack = 1e-12 * (1.0 + abs(hi) + abs(lo))
            return float(held[i] - lo + slack) if low else float(hi - held[i] + slack)

        return g

    def _flip_action(self, k: int):
        def action(t, x, mode, trial):
            gear = mode[k]
            mode = mode.replace(k, GearMode.moving(not gear.driving, gear.sign))
            return x, mode, {"joint": self.joints[self.lossy[k]], "mode": str(mode)}

        return action

    def _stop_action(self, k: int):
        def action(t, x, mode, trial):
            x = x.copy()
            i = self.lossy[k]
            x[self.nq + self.iv[i]] = 0.0
            mode = mode.replace(k, self._from_rest(x, mode, k, trial))
            return x, mode, {"joint": self.joints[i], "mode": str(mode)}

        return action

    def _slip_action(self, k: int, low: bool):
        def action(t, x, mode, trial):
            mode = mode.replace(k, self._slip(x, mode, k, low, trial))
            return x, mode, {"joint": self.joints[self.lossy[k]], "mode": str(mode)}

        return action

    # -- outputs ---------------------------------------------------------------------------
    def outputs(self, t, x, q, v, u, mode, step):
        """Per drive (shape (n_drives,)): ``motor_angle`` [rad], ``motor_velocity`` [rad/s],
        ``voltage`` [V] (after saturation; the control of a linear actuator; NaN for a torque
        source), ``current`` [A] (NaN without motor), ``motor_torque`` [N.m] (C_M i, or the
        input/active torque), ``joint_torque`` [N.m] (what the transmission applies to the
        joint), ``spring_torque`` [N.m] (NaN for rigid drives), ``electrical_power`` [W] (u i;
        the input power for other actuators), ``copper_loss``, ``friction_loss`` (motor +
        transmission damping), ``efficiency_loss``, ``conversion_loss`` [W]."""
        now = self._evaluate(t, x, q, v, u, mode)
        n = len(self.drives)
        a = step.a
        losses = self._losses(t, x, q, v, u, mode, step)
        signals = {"voltage": np.full(n, np.nan), "current": np.full(n, np.nan)}
        signals["torque"] = now.active_torque.copy()
        theta = self._theta(x, q)
        for i, src in enumerate(self.sources):
            own = self._own_states(x, i)
            for key, value in src.signals(
                own, theta[i], now.shaft_velocity[i], now.inputs[i]
            ).items():
                signals[key][i] = value
        e = now.factor if now.factor is not None else np.ones(n)
        M = now.active_torque - self.motor_inertia * self.ratio * a[self.iv]
        output_inertia = np.array(
            [
                0.0 if d.elastic or d.transmission is None else d.transmission.output_inertia
                for d in self.drives
            ]
        )
        joint_torque = np.empty(n)
        rig = self.rigid
        e = e * self._engaged(mode)  # a rigid gear in its play transmits nothing
        joint_torque[rig] = (e * self.ratio * M - output_inertia * a[self.iv])[rig]
        _, stuck = self._factors(mode)
        if stuck.size:
            joint_torque[stuck] = step.force(self.name, stuck.size)
        spring = np.full(n, np.nan)
        if self.elastic.size:
            spring[self.elastic] = now.spring_torque
            joint_torque[self.elastic] = now.spring_torque
        play = np.full(n, np.nan)
        for k, i in enumerate(self.play_drives):
            play[i] = self._deflection(x, k)[0]
        return {
            "motor_angle": theta,
            "play": play,
            "motor_velocity": now.shaft_velocity.copy(),
            "voltage": signals["voltage"],
            "current": signals["current"],
            "motor_torque": signals["torque"],
            "joint_torque": joint_torque,
            "spring_torque": spring,
            "electrical_power": losses["input"],
            "copper_loss": losses["copper"],
            "friction_loss": losses["friction"],
            "efficiency_loss": losses["efficiency"],
            "conversion_loss": losses["conversion"],
        }

    def output_info(self) -> dict[str, tuple[str, str]]:
        """Units and descriptions of :meth:`outputs` (one entry per drive, in the order of
        ``meta["drives"]``)."""
        return self.signals(
            {
                "motor_angle": ("rad", "rotor angle"),
                "play": ("rad", "position in the gear's play (NaN without backlash)"),
                "motor_velocity": ("rad/s", "rotor velocity"),
                "voltage": ("V", "armature voltage after saturation (a torque source: NaN)"),
                "current": ("A", "armature current (NaN without a motor)"),
                "motor_torque": ("N.m", "torque of the actuator on its rotor"),
                "joint_torque": ("N.m or N", "effort the transmission applies to the joint"),
                "spring_torque": ("N.m", "torque of the elastic transmission (NaN when rigid)"),
                "electrical_power": ("W", "power the input supplies (u i for a DC motor)"),
                "copper_loss": ("W", "Joule loss R i^2 of the motor"),
                "friction_loss": ("W", "viscous loss of motor and transmission damping"),
                "efficiency_loss": ("W", "loss of the gear's efficiency"),
                "conversion_loss": ("W", "loss of a general linear actuator's conversion"),
            }
        )

    def __repr__(self) -> str:
        return f"DriveComponent({', '.join(self.joints)})"


_EMPTY = np.zeros(0)


def _coefficients(src: Actuator) -> np.ndarray | None:
    """``[τ_s; ṡ]`` of an actuator over ``(θ, θ̇, states, u)`` (its ``linear_coefficients``;
    τ_s = u for a torque source), or None."""
    rows = getattr(src, "linear_coefficients", None)
    if rows is not None:
        return rows()
    return np.array([[0.0, 0.0, 1.0]]) if isinstance(src, TorqueSource) else None


def _as_slice(index: np.ndarray) -> slice | np.ndarray:
    """A contiguous increasing index array as a slice (a view); other arrays unchanged."""
    if index.size and np.array_equal(index, np.arange(index[0], index[0] + index.size)):
        return slice(int(index[0]), int(index[0]) + index.size)
    return index


def drive_component(robot: Robot, drives: dict[str, Drive]) -> DriveComponent:
    """The :class:`DriveComponent` that :class:`pinext.System` assembles for ``drives``."""
    return DriveComponent(robot, drives)


def build_drives(robot: Robot, options: dict[str, Any]) -> DriveComponent | None:
    """The System's drives (its ``drives`` argument, or the robot's)."""
    drives = options.get("drives")
    return drive_component(robot, drives) if drives else None
