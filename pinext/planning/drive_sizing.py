"""Drive requirements from a prescribed motion (Vukobratović & Potkonjak, §20.4.1).

"The direct procedure starts from the prescribed motion and calculates torques and control
inputs": from :math:`q(t), \\dot q(t), \\ddot q(t)` Pinocchio's inverse dynamics (``rnea``) gives
the joint torques and, in ``data.f``, the wrench every joint transmits (the joint reactions).
Through each drive (Vukobratović & Potkonjak (20.62)–(20.69), (20.98)–(20.99)):

.. math::

    \\theta = N q, \\quad
    M = \\begin{cases} \\tau / (N\\eta') & \\tau\\dot q \\ge 0 \\text{ (driving)} \\\\
                        \\tau\\,\\eta''/N & \\tau\\dot q < 0 \\text{ (backdriving)}\\end{cases},
    \\quad T_{em} = (J + I')\\ddot\\theta + B\\dot\\theta + M, \\quad i = T_{em}/C_M, \\quad
    u = R i + L \\frac{di}{dt} + C_E\\dot\\theta,

with the gear's output inertia :math:`I''` added to the joint torque; an elastic transmission
has :math:`\\theta = N(q + \\tau/c)` and the motor-side inertia :math:`J + I' + I''/N^2` (20.98)
(its θ̇, θ̈ and di/dt are differentiated along the samples with ``numpy.gradient``). The
copper losses :math:`R i^2` heat the winding, a first-order model

.. math::

    \\tau_{th}\\,\\dot T = R_{th}\\,R\\,i^2 - (T - T_a),

integrated exactly for losses that are linear between samples (first-order hold).

Flexible links (sublinks of Celentano (2008) §5): with the elastic angles at rest (the rigid
motion as prescribed, a quasi-static, kineto-elastostatic view), the bending moment at the
root of the link is the reaction moment of its joint about the bending axes (taken at the
joint origin, the beam root when the beam starts at the link frame; torsion is not included),
the stress
:math:`\\sigma = \\sum_b |M_b| / W_b` with the section moduli :math:`W_b`, and the elastic
angles :math:`\\beta = -K^{-1}\\tau_e` (the sublink joint torques of ``rnea``) deflect the tip by
:math:`\\delta = J_{tip,e}\\,\\beta`. Vibration about that quasi-static shape is not included
(simulate for that).

Powers and energies: joint power :math:`P = \\tau\\dot q`, energy :math:`E(t) = \\int_0^t P`
(cumulative Simpson). When the motion is a known law (a :class:`~pinext.planning.Spline3m`, a
:class:`~pinext.planning.RestToRest`), peak joint torque and power are refined between samples
with Brent's method.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, TypedDict

import numpy as np
import pinocchio as pin
from scipy.integrate import cumulative_simpson, simpson
from scipy.optimize import minimize_scalar

from ..drives import DCMotor, Drive, ElasticTransmission, Gear
from ..exceptions import InvalidParameter, NameNotFound
from ..validation import flag, integer, vector
from .motion import Motion, as_motion

__all__ = [
    "DriveReport",
    "FlexibleLoads",
    "GearChoice",
    "best_gear_ratio",
    "drive_requirements",
    "winding_temperature",
]


def winding_temperature(
    t: np.ndarray,
    copper_loss: np.ndarray,
    thermal_resistance: float,
    time_constant: float,
    ambient: float = 25.0,
    initial: float | None = None,
) -> np.ndarray:
    """Winding temperature of the first-order thermal model, exact for piecewise-linear losses.

    .. math::

        \\tau_{th}\\,\\dot\\vartheta = R_{th} P(t) - \\vartheta, \\quad \\vartheta = T - T_a,
        \\qquad
        \\vartheta_{k+1} = e^{-h/\\tau}\\vartheta_k + (1 - e^{-h/\\tau}) R_{th}P_k
        + \\Big(1 - \\frac{\\tau}{h}(1 - e^{-h/\\tau})\\Big) R_{th}(P_{k+1} - P_k).

    Args:
        t: Shape (N,), increasing times [s].
        copper_loss: Shape (N,) or (N, n), the losses P [W].
        thermal_resistance: R_th [K/W].
        time_constant: τ_th [s].
        ambient: T_a [°C].
        initial: Initial winding temperature [°C]; default ambient.

    Returns:
        Same shape as ``copper_loss`` [°C].
    """
    t = np.asarray(t, dtype=float)
    loss = np.asarray(copper_loss, dtype=float)
    u = thermal_resistance * loss
    theta = np.zeros_like(u)
    theta[0] = (ambient if initial is None else initial) - ambient
    h = np.diff(t)
    decay = np.exp(-h / time_constant)
    ramp = 1.0 - time_constant / h * (1.0 - decay)
    for k in range(h.size):
        theta[k + 1] = decay[k] * theta[k] + (1 - decay[k]) * u[k] + ramp[k] * (u[k + 1] - u[k])
    return theta + ambient


class FlexibleLoads(NamedTuple):
    """Quasi-static loads of one flexible link along the motion."""

    root_moment: np.ndarray
    """Shape (N, b). Bending moment at the root about each bending axis [N.m]."""
    stress: np.ndarray
    """Shape (N,). Bending stress Σ|M_b|/W_b at the root [Pa] (NaN without section modulus)."""
    tip_deflection: np.ndarray
    """Shape (N, 3). Quasi-static deflection of the beam tip, world axes [m]."""

    @property
    def peak_moment(self) -> float:
        """Largest root bending moment (norm over the axes) [N.m]."""
        return float(np.linalg.norm(self.root_moment, axis=1).max())

    @property
    def peak_stress(self) -> float:
        """Largest root stress [Pa]."""
        return float(np.nanmax(self.stress)) if np.isfinite(self.stress).any() else float("nan")

    @property
    def peak_tip_deflection(self) -> float:
        """Largest tip deflection [m]."""
        return float(np.linalg.norm(self.tip_deflection, axis=1).max())


@dataclass
class DriveReport:
    """Drive requirements along a prescribed motion; (N, n) arrays over samples × joints.

    ``joints`` are the one-DOF joints of the robot that are not elastic; motor quantities are
    NaN for joints without a DC motor (and the winding temperature without a thermal model).
    """

    t: np.ndarray
    """Shape (N,). Times [s]."""
    joints: list[str]
    """The joint names (columns)."""
    torque: np.ndarray
    """Joint torque (force) delivered by the transmission [N.m or N]."""
    speed: np.ndarray
    """Joint speed q̇ [rad/s or m/s]."""
    power: np.ndarray
    """Joint mechanical power τ q̇ [W]."""
    energy: np.ndarray
    """Net work done on the joint since t[0], ∫ τ q̇ dt [J]."""
    ratio: np.ndarray
    """Shape (n,). Transmission ratio N (1 without a drive)."""
    motor_speed: np.ndarray
    """Motor speed θ̇ [rad/s]."""
    motor_torque: np.ndarray
    """Electromagnetic motor torque T_em = C_M i (or the input torque of an ideal drive) [N.m]."""
    current: np.ndarray
    """Armature current i [A]."""
    voltage: np.ndarray
    """Armature voltage u [V]."""
    copper_loss: np.ndarray
    """Copper losses R i² [W]."""
    winding_temperature: np.ndarray
    """Winding temperature [°C]."""
    reactions: np.ndarray
    """Shape (N, njoints − 1, 6). Wrench [force, moment] the parent applies through each joint
    of the model, world axes at the joint origin (LOCAL_WORLD_ALIGNED) [N, N.m]."""
    reaction_joints: list[str]
    """The joint names of ``reactions`` (every joint of the model)."""
    flexible: dict[str, FlexibleLoads] = field(default_factory=dict)
    """Flexible link name -> its quasi-static loads."""
    motors: list[DCMotor | None] = field(default_factory=list)
    """The DC motor of each joint (None without)."""
    peak_torque: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Shape (n,). max |τ| [N.m], refined between samples for a known law."""
    peak_power: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Shape (n,). max τ q̇ [W], refined between samples for a known law."""

    @property
    def duration(self) -> float:
        """t[-1] − t[0] [s]."""
        return float(self.t[-1] - self.t[0])

    def _rms(self, x: np.ndarray) -> np.ndarray:
        return np.sqrt(simpson(x**2, x=self.t, axis=0) / self.duration)

    @property
    def rms_torque(self) -> np.ndarray:
        """Shape (n,). sqrt(1/T ∫ τ² dt) [N.m]."""
        return self._rms(self.torque)

    @property
    def rms_motor_torque(self) -> np.ndarray:
        """Shape (n,). RMS electromagnetic torque [N.m] (compare with the rated torque)."""
        return self._rms(self.motor_torque)

    @property
    def peak_motor_torque(self) -> np.ndarray:
        """Shape (n,). max |T_em| [N.m]."""
        return np.abs(self.motor_torque).max(axis=0)

    @property
    def peak_motor_speed(self) -> np.ndarray:
        """Shape (n,). max |θ̇| [rad/s]."""
        return np.abs(self.motor_speed).max(axis=0)

    @property
    def peak_voltage(self) -> np.ndarray:
        """Shape (n,). max |u| [V]."""
        return np.abs(self.voltage).max(axis=0)

    @property
    def peak_current(self) -> np.ndarray:
        """Shape (n,). max |i| [A]."""
        return np.abs(self.current).max(axis=0)

    @property
    def peak_temperature(self) -> np.ndarray:
        """Shape (n,). Peak winding temperature [°C] (NaN without a thermal model)."""
        out = np.full(len(self.joints), np.nan)
        ok = np.isfinite(self.winding_temperature).all(axis=0)
        out[ok] = self.winding_temperature[:, ok].max(axis=0)
        return out

    @property
    def total_energy(self) -> np.ndarray:
        """Shape (n,). Net work over the motion [J]."""
        return self.energy[-1]

    @property
    def positive_energy(self) -> np.ndarray:
        """Shape (n,). Energy delivered to the joints, ∫ max(P, 0) dt [J] (no regeneration)."""
        return simpson(np.maximum(self.power, 0.0), x=self.t, axis=0)

    def joint_index(self, joint: str) -> int:
        """Column of a joint; unknown names list the existing ones."""
        if joint not in self.joints:
            raise NameNotFound("joint", joint, self.joints)
        return self.joints.index(joint)

    def reaction(self, joint: str) -> np.ndarray:
        """Shape (N, 6). The reaction wrench through ``joint`` (see :attr:`reactions`)."""
        if joint not in self.reaction_joints:
            raise NameNotFound("joint", joint, self.reaction_joints)
        return self.reactions[:, self.reaction_joints.index(joint)]

    def summary(self) -> list[list[str]]:
        """One row per joint: peak/RMS torque, peak power, energy, motor peaks."""
        rows = []
        for k, joint in enumerate(self.joints):
            rows.append(
                [
                    joint,
                    f"{self.peak_torque[k]:.4g}",
                    f"{self.rms_torque[k]:.4g}",
                    f"{self.peak_power[k]:.4g}",
                    f"{self.positive_energy[k]:.4g}",
                    f"{self.peak_motor_speed[k]:.4g}",
                    f"{self.rms_motor_torque[k]:.4g}",
                    f"{self.peak_voltage[k]:.4g}",
                    f"{self.peak_temperature[k]:.4g}",
                ]
            )
        return rows

    SUMMARY_HEADER = (
        "joint",
        "peak τ [N.m]",
        "RMS τ [N.m]",
        "peak P [W]",
        "E+ [J]",
        "peak θ̇ [rad/s]",
        "RMS T_em [N.m]",
        "peak u [V]",
        "peak T_w [°C]",
    )


# --------------------------------------------------------------------------------------------
# joint side


@dataclass
class _JointSide:
    """Everything that does not depend on the drives."""

    t: np.ndarray
    joints: list[str]
    iv: np.ndarray
    position: np.ndarray
    torque: np.ndarray
    speed: np.ndarray
    acceleration: np.ndarray
    reactions: np.ndarray
    reaction_joints: list[str]
    flexible: dict[str, FlexibleLoads]
    peak_torque: np.ndarray
    peak_power: np.ndarray


#: Most samples of a motion law (each holds the joint-space terms of one pose).
MAX_SAMPLES = 100_000


def _refuse_free_joints(robot: Any) -> None:
    """Drive requirements are for actuated joints: a floating base (free flyer, planar root,
    a free body) has no drive, and the motion would have to prescribe its quaternion."""
    model = robot.model
    free = [
        model.names[j]
        for j in range(1, model.njoints)
        if model.joints[j].nq != model.joints[j].nv or model.joints[j].nv > 1
    ]
    if free:
        raise InvalidParameter(
            f"drive_requirements needs a fixed-base robot of one-DOF joints; joints "
            f"{', '.join(repr(n) for n in free)} are free (a floating base or a free body): "
            "size the drives of the fixed-base arm (load it with root_joint='fixed')"
        )


def _robot_of(system_or_robot: Any) -> Any:
    robot = getattr(system_or_robot, "robot", system_or_robot)
    if not isinstance(getattr(robot, "model", None), pin.Model):
        raise InvalidParameter("expected a pinext System or Robot (with .model)")
    return robot


def _expander(robot: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q index, v index, rigid joint ids) mapping a rigid-model motion into the full model."""
    model = robot.model
    rigid = getattr(robot, "rigid_model", model)
    iq, iv = [], []
    for j in range(1, rigid.njoints):
        new = model.joints[model.getJointId(rigid.names[j])]
        iq += list(range(new.idx_q, new.idx_q + new.nq))
        iv += list(range(new.idx_v, new.idx_v + new.nv))
    return np.array(iq, dtype=int), np.array(iv, dtype=int), rigid


class _Evaluator:
    """rnea along the motion on the full (possibly flexible) model."""

    def __init__(self, robot: Any, gravity: bool) -> None:
        self.robot = robot
        self.model = robot.model.copy()
        if not gravity:
            self.model.gravity = pin.Motion.Zero()
        self.iq, self.iv, self.rigid = _expander(robot)
        self.data = self.model.createData()

    def full(self, q, v, a):
        model = self.model
        if q.size == model.nq:
            return q, v, a
        if q.size != self.iq.size or v.size != self.iv.size:
            raise InvalidParameter(
                f"the motion has nq = {q.size}, nv = {v.size}; expected the robot's "
                f"({model.nq}, {model.nv}) or its rigid model's ({self.iq.size}, {self.iv.size})"
            )
        qf = pin.neutral(model)
        vf, af = np.zeros(model.nv), np.zeros(model.nv)
        qf[self.iq], vf[self.iv], af[self.iv] = q, v, a
        return qf, vf, af

    def rnea(self, q, v, a) -> np.ndarray:
        return pin.rnea(self.model, self.data, *self.full(q, v, a))


def _flexible_setup(robot: Any, model: pin.Model, section_modulus: Mapping[str, Any]):
    """Per flexible link: (joint id, bending axes in the joint frame, elastic v indices, tip
    frame id in ``model`` (added here), stiffness, section moduli)."""
    setups = {}
    flexible = [spec.link for spec in getattr(robot, "flexible", [])]
    for link in section_modulus:
        if link not in flexible:
            raise NameNotFound("flexible link", link, flexible)
    stiffness = np.asarray(robot.joint_stiffness, dtype=float)
    names = list(model.names)
    for spec in getattr(robot, "flexible", []):
        link = spec.link
        elastic = [j for j, n in enumerate(names) if n.startswith(f"{link}_elastic_")]
        if not elastic:
            continue
        fid = model.getFrameId(link)
        jid = model.frames[fid].parentJoint
        data = model.createData()
        q0 = pin.neutral(model)
        pin.forwardKinematics(model, data, q0)
        first = [
            j
            for j in elastic
            if names[j].split("_elastic_")[1].split("_")[0] == "1"
            and not names[j].endswith("_torsion")
        ]
        axes = []
        for j in first:
            local = np.asarray(data.joints[j].S).reshape(6)[3:]
            if np.linalg.norm(local) == 0:
                continue
            world = data.oMi[j].rotation @ local
            axes.append(data.oMi[jid].rotation.T @ world)
        nodes: dict[int, np.ndarray] = {}
        for j in elastic:
            k = int(names[j].split("_elastic_")[1].split("_")[0])
            nodes[k] = data.oMi[j].translation
        order = sorted(nodes)
        if len(order) >= 2:
            step = nodes[order[-1]] - nodes[order[-2]]
            tip = nodes[order[-1]] + 0.5 * step
        else:
            root = data.oMf[fid].translation
            tip = nodes[order[-1]] + (nodes[order[-1]] - root)
        last = max(elastic)
        placement = data.oMi[last].inverse() * pin.SE3(np.eye(3), tip)
        tip_frame = model.addFrame(
            pin.Frame(f"{link}_design_tip", last, placement, pin.FrameType.OP_FRAME)
        )
        iv = np.array([model.joints[j].idx_v for j in elastic], dtype=int)
        w = section_modulus.get(link)
        w = None if w is None else np.broadcast_to(np.asarray(w, dtype=float), (len(axes),))
        setups[link] = (jid, np.array(axes), iv, tip_frame, stiffness[iv], w)
    return setups


def _joint_side(
    system_or_robot: Any,
    motion: Any,
    *,
    gravity: bool = True,
    section_modulus: Mapping[str, Any] | None = None,
    samples: int = 1001,
) -> _JointSide:
    robot = _robot_of(system_or_robot)
    _refuse_free_joints(robot)
    samples = integer("samples", samples, low=2, high=MAX_SAMPLES)
    gravity = flag("gravity", gravity)
    for link, value in (section_modulus or {}).items():
        values = vector(
            f"section_modulus[{link!r}]", value if np.ndim(value) else [value], None, what="[m^3]"
        )
        if not np.all(values > 0):
            raise InvalidParameter(
                f"section_modulus[{link!r}] must be positive [m^3] (one value, or one per "
                f"bending axis), got {value!r}"
            )
    mo: Motion = as_motion(motion, samples=samples)
    ev = _Evaluator(robot, gravity)
    model = ev.model
    stiffness = np.asarray(robot.joint_stiffness, dtype=float)
    joints, iv_list, iq_list = [], [], []
    for j in range(1, model.njoints):
        jm = model.joints[j]
        if jm.nv == 1 and stiffness[jm.idx_v] == 0.0:
            joints.append(model.names[j])
            iv_list.append(jm.idx_v)
            iq_list.append(jm.idx_q)
    iv = np.array(iv_list, dtype=int)
    position = np.zeros((mo.t.size, iv.size))
    flex = _flexible_setup(robot, model, section_modulus or {})
    data = model.createData()
    n_samples = mo.t.size
    tau_all = np.zeros((n_samples, model.nv))
    speed = np.zeros((n_samples, model.nv))
    acc = np.zeros((n_samples, model.nv))
    reactions = np.zeros((n_samples, model.njoints - 1, 6))
    flex_out = {
        link: (np.zeros((n_samples, len(s[1]))), np.zeros((n_samples, 3)))
        for link, s in flex.items()
    }
    for k in range(n_samples):
        q, v, a = ev.full(mo.q[k], mo.v[k], mo.a[k])
        tau_all[k] = pin.rnea(model, data, q, v, a)
        pin.updateGlobalPlacements(model, data)  # rnea fills liMi; oMi from them
        position[k] = q[iq_list]
        speed[k], acc[k] = v, a
        for j in range(1, model.njoints):
            rotation = data.oMi[j].rotation
            reactions[k, j - 1, :3] = rotation @ data.f[j].linear
            reactions[k, j - 1, 3:] = rotation @ data.f[j].angular
        for link, (jid, axes, fiv, tip, kk, _) in flex.items():
            flex_out[link][0][k] = axes @ data.f[jid].angular
            beta = -tau_all[k, fiv] / kk
            jac = pin.computeFrameJacobian(model, data, q, tip, pin.LOCAL_WORLD_ALIGNED)
            flex_out[link][1][k] = jac[:3, fiv] @ beta
    flexible = {}
    for link, (moment, deflection) in flex_out.items():
        w = flex[link][5]
        stress = np.full(n_samples, np.nan) if w is None else (np.abs(moment) / w).sum(axis=1)
        flexible[link] = FlexibleLoads(moment, stress, deflection)
    torque = tau_all[:, iv]
    power = torque * speed[:, iv]
    peak_torque = np.abs(torque).max(axis=0)
    peak_power = power.max(axis=0)
    if mo.law is not None:
        peak_torque, peak_power = _refine_peaks(ev, mo, iv, torque, power)
    return _JointSide(
        mo.t, joints, iv, position, torque, speed[:, iv], acc[:, iv], reactions,
        list(model.names)[1:], flexible, peak_torque, peak_power,
    )  # fmt: skip


def _refine_peaks(ev: _Evaluator, mo: Motion, iv, torque, power):
    """Brent's method on |τ(t)| and P(t) between the neighbours of the sampled maxima."""
    t, law = mo.t, mo.law
    if law is None:
        raise InvalidParameter("refining the peaks between samples needs a motion with a law")

    def values(time: float) -> tuple[np.ndarray, np.ndarray]:
        q, v, a = (np.asarray(x, dtype=float).reshape(-1) for x in law(time))
        tau = ev.rnea(q, v, a)
        qf, vf, _ = ev.full(q, v, a)
        return tau[iv], tau[iv] * vf[iv]

    peaks = []
    for series, pick in ((np.abs(torque), 0), (power, 1)):
        out = series.max(axis=0).copy()
        for c in range(series.shape[1]):
            k = int(np.argmax(series[:, c]))
            lo, hi = t[max(k - 1, 0)], t[min(k + 1, t.size - 1)]
            if hi <= lo:
                continue

            def objective(time: float, c=c, pick=pick) -> float:
                x = values(time)[pick][c]
                return -abs(x) if pick == 0 else -x

            res = minimize_scalar(
                objective, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12 * max(1, hi)}
            )
            out[c] = max(out[c], -res.fun)
        peaks.append(out)
    return peaks[0], peaks[1]


# --------------------------------------------------------------------------------------------
# motor side


class _MotorColumn(TypedDict):
    """Motor quantities of one column of a :class:`DriveReport` (see :func:`_motor_side`)."""

    ratio: float
    motor_speed: np.ndarray
    motor_torque: np.ndarray
    current: np.ndarray
    voltage: np.ndarray
    copper_loss: np.ndarray
    winding_temperature: np.ndarray
    motor: DCMotor | None


_Stacked = Literal[
    "motor_speed", "motor_torque", "current", "voltage", "copper_loss", "winding_temperature"
]


def _motor_side(side: _JointSide, drive: Drive | None, c: int) -> _MotorColumn:
    """Motor quantities of column ``c`` through ``drive``."""
    n = side.t.size
    nan = np.full(n, np.nan)
    tau, qd, qdd = side.torque[:, c], side.speed[:, c], side.acceleration[:, c]
    if drive is None:
        return _MotorColumn(
            ratio=1.0, motor_speed=qd, motor_torque=tau, current=nan, voltage=nan,
            copper_loss=nan, winding_temperature=nan, motor=None,
        )  # fmt: skip
    ratio = drive.ratio
    transmission = drive.transmission
    if isinstance(transmission, ElasticTransmission):
        theta = ratio * (side.position[:, c] + tau / transmission.stiffness)
        omega = np.gradient(theta, side.t)
        alpha = np.gradient(omega, side.t)
        inertia = drive.motor_side_inertia
        into_gear = tau / ratio
    else:
        out_inertia = transmission.output_inertia if transmission is not None else 0.0
        tau = tau + out_inertia * qdd
        omega, alpha = ratio * qd, ratio * qdd
        inertia = drive.actuator_inertia + (
            transmission.input_inertia if transmission is not None else 0.0
        )
        if isinstance(transmission, Gear):
            driving = tau * qd >= 0
            into_gear = np.where(
                driving,
                tau / (ratio * transmission.efficiency),
                tau * transmission.backdrive_efficiency / ratio,
            )
        else:
            into_gear = tau / ratio
    motor = drive.actuator if isinstance(drive.actuator, DCMotor) else None
    friction = motor.viscous_friction if motor is not None else 0.0
    torque = inertia * alpha + friction * omega + into_gear
    if motor is None:
        return _MotorColumn(
            ratio=ratio, motor_speed=omega, motor_torque=torque, current=nan, voltage=nan,
            copper_loss=nan, winding_temperature=nan, motor=None,
        )  # fmt: skip
    if motor.torque_constant == 0:
        raise InvalidParameter("a DC motor with torque_constant 0 cannot deliver torque")
    current = torque / motor.torque_constant
    didt = np.gradient(current, side.t) if motor.inductance > 0 else 0.0
    voltage = motor.resistance * current + motor.inductance * didt + motor.back_emf_constant * omega
    loss = motor.resistance * current**2
    r_th, tau_th = motor.thermal_resistance, motor.thermal_time_constant
    temperature = (
        winding_temperature(side.t, loss, r_th, tau_th, motor.ambient_temperature)
        if r_th is not None and tau_th is not None
        else nan
    )
    return _MotorColumn(
        ratio=ratio, motor_speed=omega, motor_torque=torque, current=current, voltage=voltage,
        copper_loss=loss, winding_temperature=temperature, motor=motor,
    )  # fmt: skip


def _assemble(side: _JointSide, drives: Mapping[str, Drive]) -> DriveReport:
    for joint in drives:
        if joint not in side.joints:
            raise NameNotFound("joint", joint, side.joints)
    columns = [_motor_side(side, drives.get(j), c) for c, j in enumerate(side.joints)]

    def stack(key: _Stacked) -> np.ndarray:
        return np.column_stack([col[key] for col in columns])

    power = side.torque * side.speed
    energy = cumulative_simpson(power, x=side.t, axis=0, initial=0.0)
    return DriveReport(
        t=side.t,
        joints=list(side.joints),
        torque=side.torque,
        speed=side.speed,
        power=power,
        energy=energy,
        ratio=np.array([col["ratio"] for col in columns]),
        motor_speed=stack("motor_speed"),
        motor_torque=stack("motor_torque"),
        current=stack("current"),
        voltage=stack("voltage"),
        copper_loss=stack("copper_loss"),
        winding_temperature=stack("winding_temperature"),
        reactions=side.reactions,
        reaction_joints=side.reaction_joints,
        flexible=side.flexible,
        motors=[col["motor"] for col in columns],
        peak_torque=side.peak_torque,
        peak_power=side.peak_power,
    )


def _drives_of(system_or_robot: Any, drives: Mapping[str, Drive] | None) -> dict[str, Drive]:
    found = dict(getattr(system_or_robot, "drives", None) or {})
    if drives is not None:
        found.update(drives)
    for joint, drive in found.items():
        if not isinstance(drive, Drive):
            raise InvalidParameter(f"drive of joint '{joint}' must be a Drive, got {drive!r}")
    return found


def drive_requirements(
    system_or_robot: Any,
    motion: Any,
    *,
    drives: Mapping[str, Drive] | None = None,
    gravity: bool = True,
    section_modulus: Mapping[str, float | Sequence[float]] | None = None,
    samples: int = 1001,
) -> DriveReport:
    """Torques, speeds, powers, energies, reactions, motor signals, heating and link loads
    along a prescribed joint motion (Vukobratović & Potkonjak, §20.4.1).

    See the module docstring for the equations.

    Args:
        system_or_robot: A :class:`pinext.System` or :class:`pinext.Robot`; its drives are used.
        motion: The prescribed motion of the robot's joints (or of its rigid model's joints for
            a robot with flexible links): a :class:`~pinext.planning.Spline3m`, a
            :class:`~pinext.planning.RestToRest`, a :class:`~pinext.planning.JointMotion`,
            samples ``(t, q)`` or ``(t, q, v, a)`` — see :func:`~pinext.planning.as_motion`.
        drives: Joint name -> :class:`pinext.Drive`, overriding the system's ones.
        gravity: Include the model's gravity.
        section_modulus: Flexible link name -> W [m^3] (one value, or one per bending axis)
            for the root stress.
        samples: Number of samples of a motion law.

    Returns:
        :class:`DriveReport`.
    """
    side = _joint_side(
        system_or_robot, motion, gravity=gravity, section_modulus=section_modulus, samples=samples
    )
    return _assemble(side, _drives_of(system_or_robot, drives))


class GearChoice(NamedTuple):
    """The result of :func:`best_gear_ratio`."""

    ratio: float
    """The best candidate ratio N."""
    ratios: np.ndarray
    """Shape (k,). The candidates."""
    values: np.ndarray
    """Shape (k,). The criterion for each candidate."""
    criterion: str
    """``"rms_motor_torque"`` [N.m] or ``"peak_temperature"`` [°C]."""


CRITERIA = ("rms_motor_torque", "peak_temperature")


def best_gear_ratio(
    system_or_robot: Any,
    motion: Any,
    joint: str,
    ratios: Sequence[float] | np.ndarray,
    *,
    criterion: str = "rms_motor_torque",
    drives: Mapping[str, Drive] | None = None,
    gravity: bool = True,
    samples: int = 1001,
) -> GearChoice:
    """The gear ratio of one drive that minimises the RMS motor torque or the peak winding
    temperature along a motion (Vukobratović & Potkonjak, §20.4.1, "search over parameters").

    For a pure inertia :math:`J_L` driven through a lossless gear by a rotor :math:`J_m`
    (no gravity, no friction), :math:`T_{em} = (J_m N + J_L/N)\\ddot q` and both criteria are
    smallest at the inertia-matching ratio :math:`N^* = \\sqrt{J_L/J_m}`.

    Args:
        system_or_robot: A System or Robot with a drive on ``joint`` (or give ``drives``).
        motion: The prescribed motion (see :func:`drive_requirements`).
        joint: The joint whose ratio is varied.
        ratios: Candidate ratios N (> 0).
        criterion: ``"rms_motor_torque"`` or ``"peak_temperature"`` (needs a thermal model).
        drives: Drives overriding the system's ones.
        gravity: Include gravity.
        samples: Samples of a motion law.

    Returns:
        :class:`GearChoice`.

    Raises:
        InvalidParameter: Unknown criterion, no drive on the joint, or no thermal model for
            ``"peak_temperature"``.
    """
    if criterion not in CRITERIA:
        raise InvalidParameter(f"criterion must be one of {', '.join(CRITERIA)}, got {criterion!r}")
    all_drives = _drives_of(system_or_robot, drives)
    if joint not in all_drives:
        raise NameNotFound("drive", joint, list(all_drives))
    drive = all_drives[joint]
    ratios = np.asarray(ratios, dtype=float).reshape(-1)
    if ratios.size == 0 or np.any(ratios <= 0):
        raise InvalidParameter("ratios must be a non-empty list of positive numbers")
    if criterion == "peak_temperature" and not (
        isinstance(drive.actuator, DCMotor) and drive.actuator.thermal
    ):
        raise InvalidParameter(
            f"criterion 'peak_temperature' needs a DCMotor with thermal_resistance and "
            f"thermal_time_constant on '{joint}'"
        )
    side = _joint_side(system_or_robot, motion, gravity=gravity, samples=samples)
    c = side.joints.index(joint)
    transmission = drive.transmission if drive.transmission is not None else Gear(1.0)
    if not isinstance(transmission, (Gear, ElasticTransmission)):
        raise InvalidParameter(
            f"drive of '{joint}' must have a Gear, an ElasticTransmission or none, "
            f"got {transmission!r}"
        )
    values = np.zeros(ratios.size)
    for k, ratio in enumerate(ratios):
        candidate = Drive(drive.actuator, dataclasses.replace(transmission, ratio=float(ratio)))
        col = _motor_side(side, candidate, c)
        if criterion == "rms_motor_torque":
            values[k] = np.sqrt(simpson(col["motor_torque"] ** 2, x=side.t) / np.ptp(side.t))
        else:
            values[k] = col["winding_temperature"].max()
    return GearChoice(float(ratios[int(np.argmin(values))]), ratios, values, criterion)
