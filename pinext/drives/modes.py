"""The modes of a drive component: the state of each gear with losses, and of each gear with
backlash (:mod:`pinext.drives.backlash`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..simulation.component import ModeState
from .backlash import Play


class GearMode(ModeState):
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


@dataclass(frozen=True)
class GearModes:
    """The mode of a :class:`DriveComponent`: one :class:`GearMode` per lossy gear, in
    :attr:`DriveComponent.lossy_joints` order, and one :class:`~pinext.drives.backlash.Play`
    per gear with backlash, in :attr:`DriveComponent.backlash_joints` order."""

    gears: tuple[GearMode, ...]
    play: tuple[Play, ...] = ()

    def replace(self, k: int, gear: GearMode) -> GearModes:
        """A copy with lossy gear k in mode ``gear``."""
        gears = list(self.gears)
        gears[k] = gear
        return GearModes(tuple(gears), self.play)

    def replace_play(self, k: int, play: Play) -> GearModes:
        """A copy with backlash gear k in mode ``play``."""
        plays = list(self.play)
        plays[k] = play
        return GearModes(self.gears, tuple(plays))

    def __getitem__(self, k: int) -> GearMode:
        return self.gears[k]

    def __len__(self) -> int:
        return len(self.gears)

    def __bool__(self) -> bool:
        return bool(self.gears) or bool(self.play)

    def __str__(self) -> str:
        return "".join(g.value for g in self.gears) + "".join(str(p) for p in self.play)
