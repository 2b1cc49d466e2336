"""Drive (actuator + transmission) and the System component that assembles the complete model
of Vukobratović & Potkonjak (20.78)–(20.82) and (20.98)–(20.99) around Pinocchio's mechanism."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter, NameNotFound
from ..simulation.component import Component, ConstraintRows, Event, RowKind, Step, Trial
from ..simulation.system import register_builder
from .actuator import LinearActuator
from .motor import DCMotor
from .transmission import Gear, Transmission

if TYPE_CHECKING:
    from ..robot import Robot
    from ..simulation.system import System


@dataclass(frozen=True)
class Drive:
    """What moves one joint: an actuator followed by a transmission.

    Args:
        actuator: A :class:`DCMotor` (input: voltage [V]), a :class:`LinearActuator` (input: its
            control u), or None for an ideal torque source (input: the torque at the
            transmission's input [N.m], or at the joint without transmission).
        transmission: A :class:`Gear`, an :class:`ElasticTransmission`, or None (direct drive,
            ratio 1).
    """

    actuator: DCMotor | LinearActuator | None = None
    transmission: Transmission | None = None

    def __post_init__(self) -> None:
        if self.actuator is not None and not isinstance(self.actuator, (DCMotor, LinearActuator)):
            raise InvalidParameter(
                f"actuator must be a DCMotor, a LinearActuator or None, got {self.actuator!r}"
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
        if isinstance(self.actuator, DCMotor):
            return self.actuator.rotor_inertia
        if isinstance(self.actuator, LinearActuator):
            return self.actuator.inertia
        return 0.0

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
        """``"voltage"``, ``"control"`` (linear actuator) or ``"torque"`` (ideal drive)."""
        if isinstance(self.actuator, DCMotor):
            return "voltage"
        return "control" if self.actuator is not None else "torque"

    def reflected_inertia(self) -> float:
        """Armature added to the joint by a rigid drive: (J + I') N² + I'' [kg.m^2] ((20.73))."""
        if self.elastic:
            return 0.0
        out = self.transmission.output_inertia if self.transmission is not None else 0.0
        return self.motor_side_inertia * self.ratio**2 + out


class GearMode(enum.Enum):
    """The state of one gear with an efficiency below one (Vukobratović & Potkonjak, after
    (20.69)): which side drives, and the direction of the motor shaft."""

    DRIVING = "D"
    """The motor drives the joint, θ̇ > 0: the joint receives η' N M."""
    DRIVING_BACK = "d"
    """The motor drives the joint, θ̇ < 0."""
    BACKDRIVEN = "B"
    """The load drives the motor, θ̇ > 0: the joint receives N M / η''."""
    BACKDRIVEN_BACK = "b"
    """The load drives the motor, θ̇ < 0."""
    STUCK = "S"
    """θ̇ = 0: the gear holds the joint (a constraint row), like dry friction."""
    HELD = "H"
    """θ̇ = 0, the joint held by other constraints (a closed contact): the gear transmits
    η' N M, no power flows; it chooses again when those constraints change."""

    @property
    def driving(self) -> bool:
        """Whether the motor side drives."""
        return self in (GearMode.DRIVING, GearMode.DRIVING_BACK, GearMode.HELD)

    @property
    def sign(self) -> float:
        """+1 or -1: the sign of θ̇ in a moving mode (0 when stuck)."""
        if self in (GearMode.STUCK, GearMode.HELD):
            return 0.0
        return 1.0 if self in (GearMode.DRIVING, GearMode.BACKDRIVEN) else -1.0

    @classmethod
    def moving(cls, driving: bool, sign: float) -> GearMode:
        """The moving mode with this power flow and direction."""
        if driving:
            return cls.DRIVING if sign > 0 else cls.DRIVING_BACK
        return cls.BACKDRIVEN if sign > 0 else cls.BACKDRIVEN_BACK

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class GearModes:
    """The mode of a :class:`DriveComponent`: one :class:`GearMode` per lossy gear, in
    :attr:`DriveComponent.lossy_joints` order."""

    gears: tuple[GearMode, ...]

    def replace(self, k: int, gear: GearMode) -> GearModes:
        """A copy with lossy gear k in mode ``gear``."""
        gears = list(self.gears)
        gears[k] = gear
        return GearModes(tuple(gears))

    def __getitem__(self, k: int) -> GearMode:
        return self.gears[k]

    def __len__(self) -> int:
        return len(self.gears)

    def __str__(self) -> str:
        return "".join(g.value for g in self.gears)


#: Relative size of a joint acceleration that counts as zero (the joint is held).
_HELD = 1e-9


class DriveComponent(Component):
    """The drives of a System: states, efforts, energy, events and outputs.

    *Inputs* (``u`` of :func:`pinext.simulate`): one per drive, in the order of the ``drives``
    dict (see :attr:`joints`): the voltage [V] of a DC motor, the control of a linear actuator,
    or the input torque [N.m] of an ideal drive. Voltages saturate at ±``voltage_limit``.

    *Rigid drives* (no transmission or a :class:`Gear`): the motor angle is θ = N q (20.68).
    Rotor and gear inertia are reflected into ``system.model.armature`` in :meth:`bind`
    (H* of (20.73)); the motor torque, back-EMF and friction act as the joint effort
    ``N (C_M i - B θ̇)``, with ``i = (u - C_E θ̇)/R`` for a second-order motor, which gives
    (20.71)–(20.73) exactly.

    *Elastic transmissions* add the states ``motor_angle`` θ and ``motor_velocity`` θ̇
    ((20.98)–(20.99)); the spring torque acts on the joint and, divided by N, on the motor.

    *Inductance* adds the state ``current`` (20.64)–(20.65); general linear actuators add
    ``actuator_states`` (see :class:`LinearActuator`).

    *Gear efficiency*: a gear with an efficiency below one has a phase mode, one character per
    lossy gear in :attr:`lossy_joints` order: ``D``/``d`` driving with θ̇ > 0 / θ̇ < 0,
    ``B``/``b`` backdriving, ``S`` stuck (θ̇ = 0, the gear holds the joint, like dry
    friction). In a moving mode the joint receives ``e N M`` with ``e = η'`` or ``1/η''`` and
    ``M = C_M i - B θ̇ - (J + I') θ̈`` the torque entering the gear; the rotor inertia thus
    appears as ``e (J + I') N²`` and the accelerations are Pinocchio's ``aba`` on a copy of the
    model with that armature (the System's own model keeps the true inertia for the kinetic
    energy). Events end a mode where ``M`` or θ̇ vanishes, and a stuck gear slips when the
    holding torque leaves ``[η' N M, N M / η'']``; the mode in each phase is consistent with the
    sign of the power flow, so the switch neither chatters nor creates energy, and the loss
    ``(1 - e) M θ̇ >= 0`` goes to the dissipated energy.

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
        self.N = np.array([x.ratio for x in d])
        self.Jm = np.array([x.motor_side_inertia for x in d])
        self.el = np.array([i for i in range(n) if d[i].elastic], dtype=int)
        self.rig = np.array([i for i in range(n) if not d[i].elastic], dtype=int)
        self.mot = np.array([i for i in range(n) if isinstance(d[i].actuator, DCMotor)], dtype=int)
        self.ideal = np.array([i for i in range(n) if d[i].actuator is None], dtype=int)
        self.gen = [i for i in range(n) if isinstance(d[i].actuator, LinearActuator)]
        motors: list[DCMotor] = [d[i].actuator for i in self.mot]  # type: ignore[misc]
        self.R = np.array([m.resistance for m in motors])
        self.KT = np.array([m.torque_constant for m in motors])
        self.KE = np.array([m.back_emf_constant for m in motors])
        self.B = np.array([m.viscous_friction for m in motors])
        self.umax = np.array(
            [np.inf if m.voltage_limit is None else m.voltage_limit for m in motors]
        )
        self.saturating = bool(np.isfinite(self.umax).any())
        ind = [k for k, m in enumerate(motors) if m.inductance > 0]
        self.ind_k = np.array(ind, dtype=int)  # positions within the motor arrays
        self.ind = self.mot[self.ind_k] if ind else np.array([], dtype=int)
        self.L = np.array([motors[k].inductance for k in ind])
        self.res_k = np.array([k for k, m in enumerate(motors) if m.inductance == 0], dtype=int)
        self.c = np.array([d[i].transmission.stiffness for i in self.el])  # type: ignore[union-attr]
        self.dd = np.array([d[i].transmission.damping for i in self.el])  # type: ignore[union-attr]
        self.Nel = self.N[self.el]
        self.iv_el = self.iv[self.el]
        self.iq_el = self.iq[self.el]
        self.iv_rig = self.iv[self.rig]
        self.Nrig = self.N[self.rig]
        self.theta_dot_mot = np.zeros(len(motors))
        gen_sizes = [d[i].actuator.n_states for i in self.gen]  # type: ignore[union-attr]
        self.gen_offsets = np.concatenate([[0], np.cumsum(gen_sizes)]).astype(int)
        self.has_friction = bool(self.B.any())
        self.has_conversion = bool((self.KE != self.KT).any())
        self.has_tdamping = bool(self.dd.any())
        # gear efficiency
        self.eta_d = np.ones(n)
        self.eta_b = np.ones(n)
        for i, x in enumerate(d):
            if isinstance(x.transmission, Gear):
                self.eta_d[i] = x.transmission.efficiency
                self.eta_b[i] = x.transmission.backdrive_efficiency
        self.lossy = np.array(
            [
                i
                for i in range(n)
                if isinstance(d[i].transmission, Gear) and d[i].transmission.lossy
            ],
            dtype=int,
        )
        # fast path: every drive a DC motor without inductance, all elastic or all rigid
        self.fast = (
            self.mot.size == n
            and not self.ind.size
            and not self.lossy.size
            and (self.el.size in (0, n))
        )
        self.all_elastic = self.el.size == n and n > 0
        self.invN = 1.0 / self.N
        # index arrays that are contiguous ranges become slices (views, not gathers)
        self.iv_fast = _as_slice(self.iv)
        self.iq_fast = _as_slice(self.iq)
        self.invR = 1.0 / self.R if self.R.size == n else None
        self.invJm = 1.0 / np.where(self.Jm > 0, self.Jm, 1.0)
        self.model: pin.Model | None = None
        self._cache: tuple | None = None

    # -- names -----------------------------------------------------------------------------
    @property
    def lossy_joints(self) -> list[str]:
        """Joints whose gear has an efficiency below one, in the order of the mode string."""
        return [self.joints[i] for i in self.lossy]

    def input_names(self) -> list[str]:
        """``<joint>.<voltage|control|torque>`` for each input, in order."""
        return [f"{j}.{d.input_kind}" for j, d in zip(self.joints, self.drives, strict=True)]

    def states(self) -> list[tuple[str, int]]:
        blocks = []
        if self.el.size:
            blocks += [("motor_angle", int(self.el.size)), ("motor_velocity", int(self.el.size))]
        if self.ind.size:
            blocks.append(("current", int(self.ind.size)))
        if self.gen_offsets[-1]:
            blocks.append(("actuator_states", int(self.gen_offsets[-1])))
        return blocks

    def bind(self, system: System) -> None:
        """Reflect rigid drives' rotor and gear inertia into ``system.model.armature``."""
        self.model = system.model
        self.nq = system.model.nq
        armature = np.array(system.model.armature, dtype=float)
        for i in self.rig:
            armature[self.iv[i]] += self.drives[i].reflected_inertia()
        system.model.armature = armature
        self._base_armature = armature.copy()
        s = self.layout.slices
        self.s_angle = s.get("motor_angle")
        self.s_vel = s.get("motor_velocity")
        self.s_cur = s.get("current")
        self.s_gen = s.get("actuator_states")

    # -- initial conditions ----------------------------------------------------------------
    def joint_angle(self, q: np.ndarray) -> np.ndarray:
        """Joint angles of the driven joints [rad or m] (atan2 for continuous joints)."""
        angle = q[self.iq].astype(float)
        if self.continuous.any():
            c = self.continuous
            angle[c] = np.arctan2(q[self.iq[c] + 1], q[self.iq[c]])
        return angle

    def initial_state(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Motors at θ = N (q + g/c) (the spring holds gravity), θ̇ = N q̇; currents zero."""
        parts = []
        if self.el.size:
            model = self.model
            gravity = np.zeros(len(v))
            if model is not None:
                gravity = pin.computeGeneralizedGravity(model, model.createData(), q)
            qe = q[self.iq_el] + gravity[self.iv_el] / self.c
            parts += [self.Nel * qe, self.Nel * v[self.iv_el]]
        if self.ind.size:
            parts.append(np.zeros(self.ind.size))
        if self.gen_offsets[-1]:
            parts.append(np.zeros(self.gen_offsets[-1]))
        return np.concatenate(parts) if parts else np.zeros(0)

    # -- evaluation ------------------------------------------------------------------------
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
                e[i] = self.eta_d[i] if gear.driving else 1.0 / self.eta_b[i]
        return e, np.array(stuck, dtype=int)

    def _evaluate(self, t, x, q, v, u, mode):
        """Motor speeds, currents, active torques and the joint effort (cached per call)."""
        cache = self._cache
        if (
            cache is not None
            and cache[0] is x
            and cache[1] == t
            and cache[2] is u
            and cache[3] == mode
        ):
            return cache[4]
        if self.fast and not mode:
            r = self._evaluate_fast(x, q, v, u)
            self._cache = (x, t, u, mode, r)
            return r
        n = len(self.drives)
        u = np.asarray(u, dtype=float)
        theta_dot = np.empty(n)
        theta_dot[self.rig] = self.Nrig * v[self.iv_rig]
        eff = np.zeros(v.size)
        tau_s = np.empty(n)
        r: dict[str, Any] = {"theta_dot": theta_dot, "u": u}
        if self.el.size:
            omega = x[self.s_vel]
            theta = x[self.s_angle]
            theta_dot[self.el] = omega
            rel_v = omega / self.Nel - v[self.iv_el]
            spring = self.c * (theta / self.Nel - q[self.iq_el]) + self.dd * rel_v
            r["spring"], r["rel_v"] = spring, rel_v
        if self.mot.size:
            us = u[self.mot]
            if self.saturating:
                us = np.clip(us, -self.umax, self.umax)
            td = theta_dot[self.mot]
            if self.ind.size:
                i = np.empty(self.mot.size)
                i[self.ind_k] = x[self.s_cur]
                i[self.res_k] = (us[self.res_k] - self.KE[self.res_k] * td[self.res_k]) / self.R[
                    self.res_k
                ]
            else:
                i = (us - self.KE * td) / self.R
            tau_s[self.mot] = self.KT * i - self.B * td
            r["us"], r["i"], r["td_mot"] = us, i, td
        if self.ideal.size:
            tau_s[self.ideal] = u[self.ideal]
        if self.gen:
            r["gen_x"] = {}
            theta_all = None
            for k, j in enumerate(self.gen):
                act: LinearActuator = self.drives[j].actuator  # type: ignore[assignment]
                if theta_all is None:
                    theta_all = self._theta(x, q)
                z = (
                    x[self.s_gen][self.gen_offsets[k] : self.gen_offsets[k + 1]]
                    if self.s_gen is not None
                    else np.zeros(0)
                )
                uj = act.saturate(float(u[j]))
                xa = act.full_state(theta_all[j], theta_dot[j], z)
                r["gen_x"][j] = (xa, uj)
                tau_s[j] = act.active_torque(xa, uj)
        r["tau_s"] = tau_s
        if mode:
            e, stuck = self._factors(mode)
            r["e"] = e
            eff[self.iv_rig] = e[self.rig] * self.Nrig * tau_s[self.rig]
        else:
            eff[self.iv_rig] = self.Nrig * tau_s[self.rig]
        if self.el.size:
            eff[self.iv_el] += r["spring"]
        r["effort"] = eff
        self._cache = (x, t, u, mode, r)
        return r

    def _evaluate_fast(self, x, q, v, u):
        """:meth:`_evaluate` for DC motors without inductance on all drives (the common case)."""
        u = np.asarray(u, dtype=float)
        us = np.minimum(np.maximum(u, -self.umax), self.umax) if self.saturating else u
        eff = np.zeros(v.size)
        iv = self.iv_fast
        if self.all_elastic:
            omega = x[self.s_vel]
            rel_v = omega * self.invN - v[iv]
            spring = self.c * (x[self.s_angle] * self.invN - q[self.iq_fast]) + self.dd * rel_v
            i = (us - self.KE * omega) * self.invR
            tau_s = self.KT * i - self.B * omega
            eff[iv] = spring
            return {
                "theta_dot": omega,
                "u": u,
                "us": us,
                "i": i,
                "td_mot": omega,
                "tau_s": tau_s,
                "spring": spring,
                "rel_v": rel_v,
                "effort": eff,
            }
        td = self.N * v[iv]
        i = (us - self.KE * td) * self.invR
        tau_s = self.KT * i - self.B * td
        eff[iv] = self.N * tau_s
        return {
            "theta_dot": td,
            "u": u,
            "us": us,
            "i": i,
            "td_mot": td,
            "tau_s": tau_s,
            "effort": eff,
        }

    def _theta(self, x: np.ndarray, q: np.ndarray) -> np.ndarray:
        theta = self.N * self.joint_angle(q)
        if self.el.size:
            theta[self.el] = x[self.s_angle]
        return theta

    def linear(self, mode):
        """Linear without efficiency modes, voltage limits, general actuators or continuous
        joints: (20.64)–(20.69) and (20.98)–(20.99) are linear in the state and the voltage."""
        return not mode and not self.saturating and not self.gen and not self.continuous.any()

    def effort(self, t, x, q, v, u, mode):
        return self._evaluate(t, x, q, v, u, mode)["effort"]

    def derivative(self, t, x, q, v, u, mode, out, step):
        r = self._evaluate(t, x, q, v, u, mode)
        if self.all_elastic and self.fast:
            out[self.s_angle] = r["theta_dot"]
            out[self.s_vel] = (r["tau_s"] - r["spring"] * self.invN) * self.invJm
        elif self.el.size:
            out[self.s_angle] = x[self.s_vel]
            out[self.s_vel] = (r["tau_s"][self.el] - r["spring"] / self.Nel) / self.Jm[self.el]
        if self.ind.size:
            k = self.ind_k
            out[self.s_cur] = (
                r["us"][k] - self.R[k] * r["i"][k] - self.KE[k] * r["td_mot"][k]
            ) / self.L
        if self.s_gen is not None:
            block = np.empty(self.gen_offsets[-1])
            for k, j in enumerate(self.gen):
                act: LinearActuator = self.drives[j].actuator  # type: ignore[assignment]
                xa, uj = r["gen_x"][j]
                block[self.gen_offsets[k] : self.gen_offsets[k + 1]] = act.z_derivative(xa, uj)
            out[self.s_gen] = block

    def _losses(self, t, x, q, v, u, mode, step: Step | None) -> dict[str, np.ndarray]:
        """Per-drive powers [W]: input, copper, friction, efficiency and conversion losses."""
        r = self._evaluate(t, x, q, v, u, mode)
        n = len(self.drives)
        td = r["theta_dot"]
        p_in = np.zeros(n)
        copper = np.zeros(n)
        friction = np.zeros(n)
        conversion = np.zeros(n)
        efficiency = np.zeros(n)
        if self.mot.size:
            i = r["i"]
            p_in[self.mot] = r["us"] * i
            copper[self.mot] = self.R * i * i
            friction[self.mot] = self.B * r["td_mot"] ** 2
            conversion[self.mot] = (self.KE - self.KT) * i * r["td_mot"]
        others = np.concatenate([self.ideal, np.array(self.gen, dtype=int)])
        if others.size:
            p_in[others] = r["tau_s"][others] * td[others]
        if self.el.size:
            friction[self.el] += self.dd * r["rel_v"] ** 2
        if mode:
            e = r["e"]
            M = r["tau_s"] - self.Jm * self.N * step.a[self.iv]
            moving = self.lossy[e[self.lossy] > 0]
            efficiency[moving] = (1.0 - e[moving]) * M[moving] * td[moving]
        return {
            "input": p_in,
            "copper": copper,
            "friction": friction,
            "efficiency": efficiency,
            "conversion": conversion,
        }

    def power(self, t, x, q, v, u, mode, step):
        if not mode and not self.gen and not self.ideal.size:  # fast path: DC motors only
            r = self._evaluate(t, x, q, v, u, mode)
            p_diss = 0.0
            if self.mot.size:
                i, td = r["i"], r["td_mot"]
                p_in = float(np.dot(r["us"], i))
                p_diss = float(np.dot(self.R, i * i))
                if self.has_friction:
                    p_diss += float(np.dot(self.B, td * td))
                if self.has_conversion:
                    p_diss += float(np.dot(self.KE - self.KT, i * td))
            else:
                p_in = 0.0
            if self.has_tdamping:
                p_diss += float(np.dot(self.dd, r["rel_v"] ** 2))
            return p_in, p_diss
        p = self._losses(t, x, q, v, u, mode, step)
        return (
            float(p["input"].sum()),
            float(
                p["copper"].sum()
                + p["friction"].sum()
                + p["efficiency"].sum()
                + p["conversion"].sum()
            ),
        )

    def energy(self, x, q, v):
        """Rotor and gear kinetic energy of elastic drives, spring energy, magnetic energy [J].

        (The rotors of rigid drives are in the mechanism's kinetic energy via the armature.)"""
        total = 0.0
        if self.el.size:
            omega = x[self.s_vel]
            defl = x[self.s_angle] / self.Nel - q[self.iq_el]
            total += 0.5 * float(self.Jm[self.el] @ omega**2) + 0.5 * float(self.c @ defl**2)
        if self.ind.size:
            total += 0.5 * float(self.L @ x[self.s_cur] ** 2)
        return total

    # -- gear efficiency modes -------------------------------------------------------------
    def added_inertia(self, mode: GearModes | None) -> np.ndarray | None:
        """A moving lossy gear reflects ``e (J + I') N²`` instead of ``(J + I') N²``."""
        if not mode:
            return None
        e, _ = self._factors(mode)
        added = np.zeros(self.model.nv)
        for i in self.lossy:
            if e[i] > 0:
                added[self.iv[i]] += (e[i] - 1.0) * self.Jm[i] * self.N[i] ** 2
        return added

    def is_constrained(self, mode: GearModes | None) -> bool:
        return bool(mode) and GearMode.STUCK in mode.gears

    def constraint_rows(self, t, x, q, v, mode, data):
        """A stuck gear holds its joint: the row ``a_i = 0``; its reaction is the joint torque
        the gear supplies."""
        _, stuck = self._factors(mode)
        jacobian = np.zeros((stuck.size, self.model.nv))
        jacobian[np.arange(stuck.size), self.iv[stuck]] = 1.0
        return ConstraintRows(jacobian, np.zeros(stuck.size), None, RowKind.MODAL)

    def _gear_torque(self, x: np.ndarray, mode: GearModes, step: Step) -> tuple:
        """(M entering each gear [N.m], joint torque each stuck gear supplies [N.m], active
        torques τ_s [N.m]) in a step."""
        q, v = x[: self.nq], x[self.nq : self.nq + self.model.nv]
        r = self._evaluate(np.nan, x, q, v, step.u, mode)  # NaN time: not cached
        M = r["tau_s"] - self.Jm * self.N * step.a[self.iv]
        held = np.zeros(len(self.drives))
        _, stuck = self._factors(mode)
        if stuck.size:
            held[stuck] = step.force(self.name, stuck.size)
        return M, held, r["tau_s"]

    def _bounds(self, tau_s: float, i: int) -> tuple[float, float]:
        ends = (self.eta_d[i] * self.N[i] * tau_s, self.N[i] * tau_s / self.eta_b[i])
        return min(ends), max(ends)

    def _slip(self, x: np.ndarray, mode: GearModes, k: int, low: bool, trial: Trial) -> GearMode:
        """Mode of lossy gear k when its held joint slips past the low / high bound.

        The joint then moves towards ``sign(N)`` (low) or ``-sign(N)`` (high); the mode is
        the one whose torque M entering the gear gives a consistent power flow."""
        i = self.lossy[k]
        sigma = np.sign(self.N[i]) * (1 if low else -1)
        for driving in (True, False):
            candidate = mode.replace(k, GearMode.moving(driving, sigma))
            M, _, _ = self._gear_torque(x, candidate, trial(x, candidate))
            if M[i] * sigma * (1 if driving else -1) > 0:
                return candidate[k]
        _, _, tau_s = self._gear_torque(x, mode, trial(x, mode))
        n_tau = self.N[i] * tau_s[i]
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
        if not self.lossy.size:
            return None
        v = x[self.nq : self.nq + self.model.nv]
        mode = GearModes((GearMode.DRIVING,) * self.lossy.size)
        for _ in range(2):
            for k, i in enumerate(self.lossy):
                td = self.N[i] * v[self.iv[i]]
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
        v = x[self.nq : self.nq + self.model.nv]
        for k, i in enumerate(self.lossy):
            if v[self.iv[i]] == 0:
                mode = mode.replace(k, self._from_rest(x, mode, k, trial))
        return mode

    def events(self, mode: GearModes | None) -> list[Event]:
        if not mode:
            return []
        events = []
        for k, gear in enumerate(mode.gears):
            i = int(self.lossy[k])
            joint = self.joints[i]
            if gear is GearMode.HELD:
                continue
            if gear is GearMode.STUCK:
                events += [
                    Event(
                        f"{joint}.gear_slips_{'low' if low else 'high'}",
                        self._slip_function(i, low, mode),
                        -1.0,
                        self._slip_action(k, low),
                        dynamic=True,
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
                )
            )
            events.append(
                Event(
                    f"{joint}.motor_stops",
                    self._velocity_function(i),
                    -gear.sign,
                    self._stop_action(k),
                )
            )
        return events

    def _torque_function(self, i: int, mode: GearModes):
        def g(t: float, x: np.ndarray, step: Step) -> float:
            return float(self._gear_torque(x, mode, step)[0][i])

        return g

    def _velocity_function(self, i: int):
        index, N = self.nq + int(self.iv[i]), float(self.N[i])

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
        ``voltage`` [V] (after saturation; NaN without motor), ``current`` [A] (NaN without
        motor), ``motor_torque`` [N.m] (C_M i, or the input/active torque), ``joint_torque``
        [N.m] (what the transmission applies to the joint), ``spring_torque`` [N.m] (NaN for
        rigid drives), ``electrical_power`` [W] (u i; the input power for other actuators),
        ``copper_loss``, ``friction_loss`` (motor + transmission damping),
        ``efficiency_loss``, ``conversion_loss`` [W]."""
        r = self._evaluate(t, x, q, v, u, mode)
        n = len(self.drives)
        nan = np.full(n, np.nan)
        a = step.a
        losses = self._losses(t, x, q, v, u, mode, step)
        voltage, current, torque = nan.copy(), nan.copy(), r["tau_s"].copy()
        if self.mot.size:
            voltage[self.mot] = r["us"]
            current[self.mot] = r["i"]
            torque[self.mot] = self.KT * r["i"]
        for j in self.gen:
            voltage[j] = r["gen_x"][j][1]
        e = r.get("e", np.ones(n))
        M = r["tau_s"] - self.Jm * self.N * a[self.iv]
        joint_torque = np.empty(n)
        out_inertia = np.array(
            [
                0.0 if d.elastic or d.transmission is None else d.transmission.output_inertia
                for d in self.drives
            ]
        )
        joint_torque[self.rig] = (e * self.N * M - out_inertia * a[self.iv])[self.rig]
        _, stuck = self._factors(mode)
        if stuck.size:
            joint_torque[stuck] = step.force(self.name, stuck.size)
        spring = nan.copy()
        if self.el.size:
            spring[self.el] = r["spring"]
            joint_torque[self.el] = r["spring"]
        return {
            "motor_angle": self._theta(x, q),
            "motor_velocity": r["theta_dot"].copy(),
            "voltage": voltage,
            "current": current,
            "motor_torque": torque,
            "joint_torque": joint_torque,
            "spring_torque": spring,
            "electrical_power": losses["input"],
            "copper_loss": losses["copper"],
            "friction_loss": losses["friction"],
            "efficiency_loss": losses["efficiency"],
            "conversion_loss": losses["conversion"],
        }

    def __repr__(self) -> str:
        return f"DriveComponent({', '.join(self.joints)})"


def _as_slice(index: np.ndarray) -> slice | np.ndarray:
    """A contiguous increasing index array as a slice (a view); other arrays unchanged."""
    if index.size and np.array_equal(index, np.arange(index[0], index[0] + index.size)):
        return slice(int(index[0]), int(index[0]) + index.size)
    return index


def drive_component(robot: Robot, drives: dict[str, Drive]) -> DriveComponent:
    """The :class:`DriveComponent` that :class:`pinext.System` assembles for ``drives``."""
    return DriveComponent(robot, drives)


@register_builder(rank=10)
def _build(robot: Robot, options: dict[str, Any]) -> DriveComponent | None:
    """The System's drives (its ``drives`` argument, or the robot's)."""
    drives = options.get("drives")
    return drive_component(robot, drives) if drives else None
