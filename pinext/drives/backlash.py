"""Backlash: a dead zone between a gear's flanks (the transmission problems of Vukobratović &
Potkonjak's survey, §20.5.4), as a mode of the gear.

A :class:`~pinext.drives.Gear` or :class:`~pinext.drives.ElasticTransmission` with
``backlash`` b > 0 has a free play of total width b at the joint. Its motor gets states of its
own, and with ψ = θ/N − q the position of the motor (reflected to the joint) inside the play,
each flank s = ±1 is a unilateral constraint with the gap

.. math::

    g_s = b/2 - s\\,\\psi \\;\\ge 0, \\qquad \\dot g_s = -s\\,\\dot\\psi .

*Rigid gear.* The states are ψ and ψ̇ (``drives.play_angle``, ``drives.play_velocity``
[rad, rad/s]), so the motor's angle and speed are θ = N (q + ψ), θ̇ = N (q̇ + ψ̇). With the
motor's inertia reflected to the joint, :math:`I_m = (J + I') N^2`:

* **in the play** (:attr:`Flank.FREE`) the motor and the link move independently,
  :math:`I_m (\\ddot q + \\ddot\\psi) = N \\tau_s` and the joint receives no torque from the
  drive (its armature loses I_m in this mode);
* **at a flank** s the motor meets the link in an impact with Newton's restitution e: the
  motor is one more body of the System's impulse problem (velocity :math:`\\dot\\phi =
  \\dot q_j + \\dot\\psi`, inertia I_m; every other engaged row of the System takes part,
  :func:`engagement_impulse`). For one rotating link of inertia J_l it is the two-body impact

  .. math::

      P = (1 + e)\\,\\frac{I_m J_l}{I_m + J_l}\\,|\\dot g_s^-|, \\qquad
      \\Delta E = \\tfrac12 (1 - e^2)\\,\\frac{I_m J_l}{I_m + J_l}\\,(\\dot g_s^-)^2 ,

  booked by the energy audit as the event's ``energy_loss``;
* **engaged** (:attr:`Flank.FORWARD` / :attr:`Flank.BACKWARD`, after a plastic impact or once
  the rebound is below the rest velocity) the gear is rigid, ψ = s b/2 and ψ̇ = 0; the joint
  receives the torque through the flank :math:`\\lambda = N\\tau_s - I_m \\ddot q_j`, and the
  flank separates when :math:`s\\lambda` crosses zero (it would pull).

*Elastic transmission.* The motor states are those of the elastic transmission; the spring
acts beyond the play, :math:`\\tau = c\\,(\\delta - s b/2) + d\\,\\dot\\delta` on flank s with
δ = θ/N − q, and τ = 0 inside; the flanks meet without impact (the spring is unloaded there).

The lost motion of a reversal, the motor's travel while the link stays, is b.

Impacts of the other rows of the System (a joint limit, a contact) see the gear as engaged (the
motor's inertia moves with the link through the impact): exact for an engaged gear whose flank
stays loaded, an approximation for a gear in its play at that instant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..simulation.component import ModeState

#: A gap [rad] within this of a flank counts as on the flank.
GAP_TOLERANCE = 1e-12
#: A gap rate [rad/s] within this of zero counts as at rest on the flank.
VELOCITY_TOLERANCE = 1e-9


class Flank(ModeState):
    """Where a gear with backlash is: in its play or on one of its flanks."""

    FREE = "~"
    """Inside the play: motor and link move independently."""
    FORWARD = ">"
    """On the flank at ψ = +b/2: the motor pushes the link forward (λ ≥ 0)."""
    BACKWARD = "<"
    """On the flank at ψ = −b/2: the motor pushes the link backward (λ ≤ 0)."""

    @property
    def sign(self) -> float:
        """s = +1 (forward), −1 (backward), 0 (free)."""
        return {Flank.FREE: 0.0, Flank.FORWARD: 1.0, Flank.BACKWARD: -1.0}[self]

    @classmethod
    def of(cls, sign: float) -> Flank:
        """The flank of sign s."""
        return cls.FORWARD if sign > 0 else cls.BACKWARD


@dataclass(frozen=True)
class Play:
    """The mode of one gear with backlash.

    Attributes:
        flank: Where it is.
        left: ``(s, t0, d0)`` when it left flank s at t0 with the gap d0 (the separation test
            of its next impact on that flank, :func:`pinext.simulation.events.leaving_distance`),
            or None.
    """

    flank: Flank = Flank.FREE
    left: tuple[float, float, float] | None = None

    def __str__(self) -> str:
        return str(self.flank)


def gap(half: float, sign: float, psi: float) -> float:
    """g_s = b/2 − s ψ [rad]: the distance to flank s."""
    return half - sign * psi


def engagement_impulse(
    mass: np.ndarray,
    v: np.ndarray,
    joint: int,
    sign: float,
    motor_inertia: float,
    play_velocity: float,
    restitution: float,
    rows: list[tuple[str, Any]],
    rest_velocity: float = 0.0,
) -> tuple[np.ndarray, float, float]:
    """The impact of a motor on flank s of its gear, with every other engaged row of the System.

    The motor is one more body of the impulse problem: with the augmented velocity
    :math:`[\\dot q;\\ \\dot\\phi]`, :math:`\\dot\\phi = \\dot q_j + \\dot\\psi`, the mass
    matrix :math:`\\mathrm{diag}(M, I_m)` (M without the motor) and the flank's row
    :math:`s\\,(e_j - e_\\phi)` (its velocity is the gap rate), the impulses solve the
    complementarity problem of :func:`pinext.contact.impulse.impact_impulse` (frictional
    rows: :func:`pinext.contact.impulse.frictional_impulse`), Newton's e on the flank's row.

    Args:
        mass: M of the mechanism without the motor, shape (nv, nv) [kg.m^2 or kg].
        v: Velocity before the impact, shape (nv,).
        joint: Index of the joint in v.
        sign: The flank s = ±1.
        motor_inertia: I_m = (J + I') N² [kg.m^2].
        play_velocity: ψ̇⁻ [rad/s].
        restitution: e on the flank.
        rows: ``(name, ConstraintRows)`` of the other engaged rows (``trial.rows(x,
            impulse=True)``; the ``slow_only`` ones take part in an engagement slower than
            ``rest_velocity`` only: :func:`pinext.contact.impulse.taking_part`).
        rest_velocity: Rebounds below this [rad/s or m/s] end at rest (other rows).

    Returns:
        (v⁺, ψ̇⁺, the flank's impulse P ≥ 0 [N.m.s]; the joint receives s P).
    """
    from ..contact.impulse import (
        bilateral_rows,
        frictional_impulse,
        impact_speed,
        solve_lcp,
        taking_part,
    )

    # the flank closes at s ψ̇⁻ (its row's rate is −s ψ̇⁻)
    rows = taking_part(rows, max(impact_speed(rows, v), sign * play_velocity), rest_velocity)
    nv = v.size
    augmented = np.zeros((nv + 1, nv + 1))
    augmented[:nv, :nv] = mass
    augmented[nv, nv] = motor_inertia
    speed = np.append(v, v[joint] + play_velocity)
    flank = np.zeros(nv + 1)
    flank[joint], flank[nv] = sign, -sign
    blocks = [np.hstack([r.jacobian, np.zeros((r.m, 1))]) for _, r in rows]
    jacobian = np.vstack([*blocks, flank[None, :]])
    bilateral = np.append(bilateral_rows(rows), False)
    e = np.zeros(jacobian.shape[0])
    e[-1] = restitution
    cones, start = [], 0
    for _, r in rows:
        if r.friction > 0.0:
            cones.append((start, list(range(start + 1, start + r.m)), float(r.friction)))
            bilateral[start : start + r.m] = False
        start += r.m
    if cones:
        result = frictional_impulse(
            augmented,
            speed,
            jacobian,
            cones=cones,
            restitution=e,
            bilateral=bilateral,
            rest_velocity=rest_velocity,
        )
        after, impulse = result.v_plus, result.impulse
    else:
        minv_jt = np.linalg.solve(augmented, jacobian.T)
        rate = jacobian @ speed
        b = np.where(bilateral, 0.0, rate + e * np.minimum(rate, 0.0))
        impulse, _ = solve_lcp(jacobian @ minv_jt, b, bilateral)
        after = speed + minv_jt @ impulse
    return after[:nv], float(after[nv] - after[joint]), float(impulse[-1])


class PlayHooks:
    """The backlash part of :class:`pinext.drives.DriveComponent` (its hooks call these).

    Attributes set by :meth:`_setup_play`: ``play_drives`` (drive indices, in mode order),
    ``play_half`` (b/2 per gear [rad]), ``play_elastic`` (whether each is an elastic
    transmission), ``play_restitution``, ``rigid_play`` (drive indices of the rigid gears with
    backlash, in the order of their states) and ``elastic_half`` (b/2 per elastic drive).
    """

    # provided by DriveComponent
    name: str
    drives: list
    joints: list[str]
    ratio: np.ndarray
    inv_ratio: np.ndarray
    motor_inertia: np.ndarray
    elastic: np.ndarray
    iv: np.ndarray
    iq: np.ndarray
    nq: int
    nv: int
    layout: Any

    def _setup_play(self) -> None:
        n = len(self.drives)
        play = [i for i in range(n) if self._backlash_of(i) > 0]
        self.play_drives = np.array(play, dtype=int)
        self.play_half = np.array([0.5 * self._backlash_of(i) for i in play])
        self.play_elastic = np.array([bool(self.drives[i].elastic) for i in play], dtype=bool)
        self.play_restitution = np.array(
            [getattr(self.drives[i].transmission, "restitution", 0.0) for i in play]
        )
        self.rigid_play = np.array([i for i in play if not self.drives[i].elastic], dtype=int)
        self.elastic_half = np.array([0.5 * self._backlash_of(i) for i in self.elastic])
        #: position among the play gears (mode order) of each rigid one (state order)
        self._rigid_k = [play.index(int(i)) for i in self.rigid_play]
        self._elastic_pos = {int(i): p for p, i in enumerate(self.elastic)}

    def _backlash_of(self, i: int) -> float:
        t = self.drives[i].transmission
        return 0.0 if t is None else float(getattr(t, "backlash", 0.0))

    @property
    def backlash_joints(self) -> list[str]:
        """Joints whose transmission has backlash, in the order of the modes."""
        return [self.joints[i] for i in self.play_drives]

    # -- states ----------------------------------------------------------------------------
    def _play_state(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ψ, ψ̇) of the rigid gears with backlash [rad, rad/s]."""
        s = self.layout.slices
        return x[s["play_angle"]], x[s["play_velocity"]]

    def _flanks(self, mode: Any) -> np.ndarray:
        """s per play gear (0 in the play; +1 for every gear when there is no mode)."""
        if not mode or not mode.play:
            return np.ones(self.play_drives.size)
        return np.array([p.flank.sign for p in mode.play])

    def _engaged(self, mode: Any) -> np.ndarray:
        """Per drive: 1, or 0 for a rigid gear in its play (it transmits no torque)."""
        on = np.ones(len(self.drives))
        if self.rigid_play.size:
            flanks = self._flanks(mode)
            for i, k in zip(self.rigid_play, self._rigid_k, strict=True):
                on[i] = abs(flanks[k])
        return on

    def _dead_zone(self, deflection: np.ndarray, relative: np.ndarray, mode: Any):
        """(deflection beyond the play, relative velocity on a flank) of the elastic drives:
        on flank s, ``δ − s b/2`` and δ̇; in the play 0 and 0 (the mode's flank; without a mode
        the flank δ is on)."""
        if not self.elastic_half.any():
            return deflection, relative
        sign = np.ones(self.elastic.size)
        flanks = self._flanks(mode) if mode else None
        for k, i in enumerate(self.play_drives):
            if self.play_elastic[k]:
                p = self._elastic_pos[int(i)]
                if flanks is None:
                    half = self.play_half[k]
                    sign[p] = np.sign(deflection[p]) if abs(deflection[p]) > half else 0.0
                else:
                    sign[p] = flanks[k]
        on = np.where(self.elastic_half > 0, np.abs(sign), 1.0)
        return (deflection - sign * self.elastic_half) * on, relative * on

    def _play_initial(self, q: np.ndarray, gravity: np.ndarray) -> list[np.ndarray]:
        """Initial ψ, ψ̇ of the rigid gears: on the flank that holds the joint against gravity
        (its torque g_j: flank sign(g_j)), centred in the play where g_j = 0; at rest."""
        if not self.rigid_play.size:
            return []
        k = self._rigid_k
        psi = np.sign(gravity[self.iv[self.rigid_play]]) * self.play_half[k]
        return [psi, np.zeros(psi.size)]

    # -- the engaged torque ----------------------------------------------------------------
    def _flank_torque(self, x: np.ndarray, mode: Any, step: Any) -> np.ndarray:
        """λ = N τ_s − I_m q̈_j per rigid gear with backlash (state order): the torque the
        gear applies to its joint [N.m] when engaged."""
        q, v = x[: self.nq], x[self.nq : self.nq + self.nv]
        now = self._evaluate(np.nan, x, q, v, step.u, mode)  # type: ignore[attr-defined]
        i = self.rigid_play
        inertia = self.motor_inertia[i] * self.ratio[i] ** 2
        return self.ratio[i] * now.active_torque[i] - inertia * step.a[self.iv[i]]

    def _play_derivative(self, x, now, step, out: np.ndarray, mode: Any) -> None:
        s = self.layout.slices
        if not self.rigid_play.size:
            return
        i = self.rigid_play
        _, rate = self._play_state(x)
        out[s["play_angle"]] = rate
        free = self._engaged(mode)[i] == 0
        accel = np.zeros(i.size)
        if free.any():
            f = i[free]
            accel[free] = now.active_torque[f] * self.inv_ratio[f] / self.motor_inertia[f]
            if step is not None:  # (without one: acceleration_coupling's part)
                accel[free] -= step.a[self.iv[f]]
        out[s["play_velocity"]] = accel

    def acceleration_coupling(self, mode: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """A rigid gear in its play: ``ψ̈ = τ_s / (N J) − q̈_j``, the part ``−q̈_j``."""
        if not self.rigid_play.size:
            return None
        free = self._engaged(mode)[self.rigid_play] == 0
        if not free.any():
            return None
        rows = self.layout.slices["play_velocity"].start + np.flatnonzero(free)
        return rows, self.iv[self.rigid_play[free]], -np.ones(int(free.sum()))

    def _play_energy(self, x: np.ndarray, q: np.ndarray, v: np.ndarray) -> float:
        """The motors' kinetic energy beyond what the armature counts,
        ``½ I_m ((q̇ + ψ̇)² − q̇²)``, and the elastic transmissions' springs beyond their play
        (added to the spring energy by the caller's deflections)."""
        if not self.rigid_play.size:
            return 0.0
        i = self.rigid_play
        _, rate = self._play_state(x)
        vj = v[self.iv[i]]
        inertia = self.motor_inertia[i] * self.ratio[i] ** 2
        return 0.5 * float(inertia @ ((vj + rate) ** 2 - vj**2))

    def _play_added_inertia(self, mode: Any, added: np.ndarray) -> None:
        """A rigid gear in its play takes its motor out of the joint's armature."""
        on = self._engaged(mode)
        for i in self.rigid_play:
            if on[i] == 0:
                added[self.iv[i]] -= self.motor_inertia[i] * self.ratio[i] ** 2

    # -- modes -----------------------------------------------------------------------------
    def _deflection(self, x: np.ndarray, k: int) -> tuple[float, float]:
        """(ψ or δ, its rate) of play gear k [rad, rad/s]."""
        i = int(self.play_drives[k])
        if self.play_elastic[k]:
            s = self.layout.slices
            p = self._elastic_pos[i]
            n = self.ratio[i]
            delta = x[s["motor_angle"]][p] / n - x[self.iq[i]]
            rate = x[s["motor_velocity"]][p] / n - x[self.nq + self.iv[i]]
            return float(delta), float(rate)
        r = list(self.rigid_play).index(i)
        psi, rate = self._play_state(x)
        return float(psi[r]), float(rate[r])

    def _initial_play(self, t: float, x: np.ndarray, mode: Any, trial: Any) -> Any:
        """The mode of each gear with backlash at the start (on a flank when at it and at rest
        or pressed into it, in the play otherwise), then the release of pulling flanks."""
        from ..exceptions import ConstraintError

        for k in range(self.play_drives.size):
            psi, rate = self._deflection(x, k)
            half = self.play_half[k]
            joint = self.joints[int(self.play_drives[k])]
            flank = Play()
            for sign in (1.0, -1.0):
                g, g_rate = gap(half, sign, psi), -sign * rate
                if self.play_elastic[k]:
                    if g < -GAP_TOLERANCE or (abs(g) <= GAP_TOLERANCE and g_rate < 0):
                        flank = Play(Flank.of(sign))
                    continue
                if g < -GAP_TOLERANCE * (1 + half):
                    raise ConstraintError(
                        f"the gear of joint '{joint}' starts beyond its backlash: play angle "
                        f"{psi:.6g} rad outside ±{half:.6g} rad (drives.play_angle)"
                    )
                if g <= GAP_TOLERANCE * (1 + half):
                    if g_rate < -VELOCITY_TOLERANCE:
                        raise ConstraintError(
                            f"the gear of joint '{joint}' starts closing on its flank at "
                            f"{-g_rate:.3g} rad/s: start at rest on the flank or inside the play"
                        )
                    if g_rate <= VELOCITY_TOLERANCE:
                        flank = Play(Flank.of(sign))
                    else:
                        flank = Play(Flank.FREE, (sign, t, g))
            mode = mode.replace_play(k, flank)
        return self._release_flanks(t, x, mode, trial)

    def _release_flanks(self, t: float, x: np.ndarray, mode: Any, trial: Any) -> Any:
        """Every rigid gear whose flank would pull goes into its play (the most pulling first,
        one at a time)."""
        while True:
            engaged = [
                (r, k) for r, k in enumerate(self._rigid_k) if mode.play[k].flank is not Flank.FREE
            ]
            if not engaged:
                return mode
            torque = self._flank_torque(x, mode, trial(x, mode))
            pulls = [
                (mode.play[k].flank.sign * torque[r], r, k)
                for r, k in engaged
                if mode.play[k].flank.sign * torque[r] < 0.0
            ]
            if not pulls:
                return mode
            _, r, k = min(pulls)
            mode = self._leave_flank(mode, k, t, x)

    def _leave_flank(self, mode: Any, k: int, t: float, x: np.ndarray) -> Any:
        sign = mode.play[k].flank.sign
        psi, _ = self._deflection(x, k)
        return mode.replace_play(k, Play(Flank.FREE, (sign, t, gap(self.play_half[k], sign, psi))))

    def _play_events(self, mode: Any) -> list:
        from ..simulation.component import Event
        from ..simulation.events import leaving_distance

        events = []
        for k, play in enumerate(mode.play):
            joint = self.joints[int(self.play_drives[k])]
            half = float(self.play_half[k])
            if play.flank is Flank.FREE:
                for sign in (1.0, -1.0):
                    start = play.left[1:] if play.left and play.left[0] == sign else None

                    def g(t, x, k=k, sign=sign, start=start, half=half):
                        psi, rate = self._deflection(x, k)
                        distance = gap(half, sign, psi)
                        if start is None:
                            return distance
                        return leaving_distance(distance, t, start[0], start[1], -sign * rate)

                    form = self._engage_form(k, sign, half, start)
                    events.append(
                        Event(
                            f"{joint}.backlash_engages",
                            g,
                            -1.0,
                            self._engage_action(k, sign),
                            compiled=form,
                        )
                    )
                continue
            sign = play.flank.sign
            if self.play_elastic[k]:

                def beyond(t, x, k=k, sign=sign, half=half):
                    return -gap(half, sign, self._deflection(x, k)[0])

                events.append(
                    Event(f"{joint}.backlash_separates", beyond, -1.0, self._part_action(k))
                )
                continue
            r = list(self._rigid_k).index(k)

            def torque(t, x, step, r=r, sign=sign, mode=mode):
                return float(sign * self._flank_torque(x, mode, step)[r])

            events.append(
                Event(
                    f"{joint}.backlash_separates",
                    torque,
                    -1.0,
                    self._part_action(k),
                    dynamic=True,
                    compiled=self._flank_form(int(self.play_drives[k]), sign),
                )
            )
        return events

    def _engage_form(self, k: int, sign: float, half: float, start: Any) -> Any:
        """Play gear k's flank ``sign`` approached from the play: the gap ``b/2 − s ψ`` as
        :class:`Distances` on ψ, or just after it left that flank its separation test
        (:class:`Leaving`, ψ̇ its rate); None for an elastic transmission (its δ = θ/N − q
        spans two states)."""
        from ..simulation.events import Distances, Leaving

        if self.play_elastic[k]:
            return None
        r = list(self._rigid_k).index(k)
        psi = self.layout.slices["play_angle"].start + r
        rate = self.layout.slices["play_velocity"].start + r
        if start is None:
            return Distances(np.array([psi]), np.array([-sign]), np.array([sign * half]))
        return Leaving(psi, -sign, sign * half, float(start[0]), float(start[1]), rate)

    def _flank_form(self, i: int, sign: float) -> Any:
        """The engaged flank's torque ``s (N τ_s − I_m q̈_j)`` as a :class:`GearTorque`."""
        from ..simulation.events import GearTorque

        torque = self._torque_form(i)  # type: ignore[attr-defined]
        if torque is None:
            return None
        inertia = self.motor_inertia[i] * self.ratio[i] ** 2
        scale = sign * self.ratio[i]
        return GearTorque(torque.entry, scale * torque.coefficient, torque.dof, sign * inertia)

    def _part_action(self, k: int):
        def action(t, x, mode, trial):
            mode = self._leave_flank(mode, k, t, x)
            return x.copy(), mode, {"joint": self.joints[int(self.play_drives[k])]}

        return action

    def _engage_action(self, k: int, sign: float):
        from ..contact.unilateral import REST_VELOCITY

        i = int(self.play_drives[k])
        joint = self.joints[i]

        def action(t, x, mode, trial):
            x = x.copy()
            psi, rate = self._deflection(x, k)
            approach = -sign * rate  # the gap rate
            info: dict[str, Any] = {"joint": joint, "flank": str(Flank.of(sign))}
            info["approach_velocity"] = approach
            if self.play_elastic[k]:
                mode = mode.replace_play(k, Play(Flank.of(sign)))
                return x, mode, info
            if approach >= 0.0:  # separation test: no impulse on a flank that does not close
                info |= {"impulse": 0.0, "bounce": False}
                d0 = gap(self.play_half[k], sign, psi)
                return x, mode.replace_play(k, Play(Flank.FREE, (sign, t, d0))), info
            e = float(self.play_restitution[k])
            bounce = e > 0.0 and e * abs(approach) > REST_VELOCITY
            rows = trial.rows(x, mode, impulse=True)
            _, mass, _, _ = trial.dynamics(x, mode)
            j = int(self.iv[i])
            v = x[self.nq : self.nq + self.nv]
            v_plus, rate_plus, impulse = engagement_impulse(
                mass,
                v,
                j,
                sign,
                float(self.motor_inertia[i] * self.ratio[i] ** 2),
                rate,
                e if bounce else 0.0,
                rows,
                REST_VELOCITY,
            )
            x[self.nq : self.nq + self.nv] = v_plus
            s = self.layout.slices
            r = list(self.rigid_play).index(i)
            if bounce:
                x[s["play_velocity"].start + r] = rate_plus
                d0 = gap(self.play_half[k], sign, psi)
                mode = mode.replace_play(k, Play(Flank.FREE, (sign, t, d0)))
            else:  # on the flank: exactly there, at rest relative to the link
                x[s["play_angle"].start + r] = sign * self.play_half[k]
                x[s["play_velocity"].start + r] = 0.0
                mode = mode.replace_play(k, Play(Flank.of(sign)))
                mode = self._release_flanks(t, x, mode, trial)
            info |= {"impulse": impulse, "bounce": bounce, "rebound_velocity": -sign * rate_plus}
            return x, mode, info

        return action
