"""Transmissions between a motor and its joint: rigid gears (20.68)–(20.69) with efficiency,
elastic transmissions (20.98)–(20.99), either with backlash (a dead zone between the flanks,
:mod:`pinext.drives.backlash`)."""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass

from ..exceptions import InvalidParameter
from ..validation import real
from .base import shared_copy


def _number(name: str, value: object, unit: str) -> float:
    """``value`` as a float; what cannot be one (text, None) is refused naming ``name``."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidParameter(f"{name} must be a number {unit}, got {value!r}") from None


def _finite(name: str, value: float, unit: str, *, low: float = 0.0, strict: bool = False) -> float:
    value = _number(name, value, unit)
    if not math.isfinite(value) or value < low or (strict and value == low):
        raise InvalidParameter(
            f"{name} must be {'>' if strict else '>='} {low:g} and finite {unit}, got {value}"
        )
    return value


def _backlash(value: float) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InvalidParameter(f"backlash must be a number [rad], got {value!r}") from None
    if not math.isfinite(value) or value < 0:
        raise InvalidParameter(
            f"backlash must be >= 0 and finite [rad] (the total free play at the joint), "
            f"got {value}"
        )
    return value


class Transmission(abc.ABC):
    """Base of the transmissions: ratio ``N`` (joint angle q = θ / N (20.68)) and gear inertias.

    Attributes:
        ratio: Reduction N [-], non-zero (negative reverses the direction).
        input_inertia: Inertia on the motor side I' [kg.m^2].
        output_inertia: Inertia on the joint side I'' [kg.m^2].
        backlash: Total free play b between the flanks, measured at the joint [rad] (0: none).
    """

    ratio: float
    input_inertia: float
    output_inertia: float
    backlash: float = 0.0

    def _check_common(self) -> None:
        ratio = _number("transmission ratio", self.ratio, "[-] (non-zero, finite)")
        if not math.isfinite(ratio) or ratio == 0:
            raise InvalidParameter(f"transmission ratio must be non-zero and finite, got {ratio}")
        object.__setattr__(self, "ratio", ratio)
        object.__setattr__(
            self, "input_inertia", _finite("input_inertia", self.input_inertia, "[kg.m^2]")
        )
        object.__setattr__(
            self, "output_inertia", _finite("output_inertia", self.output_inertia, "[kg.m^2]")
        )

    @property
    @abc.abstractmethod
    def elastic(self) -> bool:
        """Whether the motor angle is a state of its own."""


@dataclass(frozen=True)
class Gear(Transmission):
    """A rigid gear: q = θ / N (20.68), τ = N M (20.69), with efficiency.

    The efficiency depends on the direction of the power flow through the teeth
    (Vukobratović & Potkonjak, after (20.69)): with motor-side torque M and speed θ̇,

    .. math::

        \\tau = N \\eta' M \\;\\; (M \\dot\\theta > 0,\\ \\text{driving}), \\qquad
        \\tau = N M / \\eta'' \\;\\; (M \\dot\\theta < 0,\\ \\text{backdriving}),

    and when θ̇ = 0 the gear holds any joint torque between the two (it is self-locking like dry
    friction). The loss :math:`(1 - \\eta') M \\dot\\theta` or
    :math:`(1/\\eta'' - 1) |M \\dot\\theta|` is never negative.

    With ``backlash`` b > 0 the flanks have a free play of total width b at the joint: the
    motor angle becomes a state, the motor and the link move independently inside the play,
    the flanks meet in an impact with Newton's restitution e, and engaged the gear is rigid
    (:mod:`pinext.drives.backlash`). A gear with backlash is lossless (efficiency 1).

    Args:
        ratio: Reduction N [-], non-zero.
        efficiency: Driving efficiency η' in (0, 1].
        backdrive_efficiency: Backdriving efficiency η'' in (0, 1]; default η'.
        input_inertia: Gear inertia on the motor side I' [kg.m^2] (reflected as I' N²).
        output_inertia: Gear inertia on the joint side I'' [kg.m^2].
        backlash: Total free play b between the flanks at the joint [rad], >= 0.
        restitution: Newton's coefficient e in [0, 1] of the flanks' impact (0: plastic).
    """

    __deepcopy__ = shared_copy

    ratio: float
    efficiency: float = 1.0
    backdrive_efficiency: float | None = None
    input_inertia: float = 0.0
    output_inertia: float = 0.0
    backlash: float = 0.0
    restitution: float = 0.0

    def __post_init__(self) -> None:
        self._check_common()
        object.__setattr__(self, "backlash", _backlash(self.backlash))
        e = real(
            "restitution",
            self.restitution,
            unit="(Newton's e of the flanks; 0: plastic)",
            low=0.0,
            high=1.0,
        )
        object.__setattr__(self, "restitution", e)
        for name in ("efficiency", "backdrive_efficiency"):
            value = getattr(self, name)
            if value is None:
                continue
            value = real(name, value, unit="[-]", low=0.0, high=1.0, strict=True)
            object.__setattr__(self, name, value)
        if self.backdrive_efficiency is None:
            object.__setattr__(self, "backdrive_efficiency", self.efficiency)
        if self.backlash > 0 and self.lossy:
            raise InvalidParameter(
                "a gear with backlash must be lossless (efficiency and backdrive_efficiency "
                f"1), got efficiency {self.efficiency} and backdrive_efficiency "
                f"{self.backdrive_efficiency}"
            )

    @property
    def elastic(self) -> bool:
        return False

    @property
    def lossy(self) -> bool:
        """Whether an efficiency is below one (the drive then has driving/backdriving modes)."""
        backdrive = (
            self.efficiency if self.backdrive_efficiency is None else self.backdrive_efficiency
        )
        return self.efficiency < 1 or backdrive < 1


@dataclass(frozen=True)
class ElasticTransmission(Transmission):
    """A deformable transmission, e.g. a harmonic drive (20.98)–(20.99):

    .. math::

        (I' + I''/N^2)\\, \\ddot\\theta = M - \\tau / N, \\qquad
        \\tau = c\\,(\\theta/N - q) + d\\,(\\dot\\theta/N - \\dot q),

    where τ is the joint torque through the spring. Both gear inertias sit on the motor side of
    the spring, as in the seed's Fig. 20.17; the motor angle θ and speed θ̇ are states.

    With ``backlash`` b > 0 the spring acts beyond a dead zone: with δ = θ/N − q,
    ``τ = c (δ ∓ b/2) + d δ̇`` on a flank (δ beyond ±b/2) and τ = 0 inside the play
    (:mod:`pinext.drives.backlash`); the flanks meet without impact (the spring is unloaded
    there).

    Args:
        ratio: Reduction N [-], non-zero.
        stiffness: Torsion stiffness c on the joint side [N.m/rad], > 0.
        damping: Torsion damping d [N.m.s/rad], >= 0.
        input_inertia: I' [kg.m^2].
        output_inertia: I'' [kg.m^2].
        backlash: Total free play b at the joint [rad], >= 0.
    """

    __deepcopy__ = shared_copy

    ratio: float
    stiffness: float
    damping: float = 0.0
    input_inertia: float = 0.0
    output_inertia: float = 0.0
    backlash: float = 0.0

    def __post_init__(self) -> None:
        self._check_common()
        object.__setattr__(self, "backlash", _backlash(self.backlash))
        object.__setattr__(
            self, "stiffness", _finite("stiffness", self.stiffness, "[N.m/rad]", strict=True)
        )
        object.__setattr__(self, "damping", _finite("damping", self.damping, "[N.m.s/rad]"))

    @property
    def elastic(self) -> bool:
        return True
