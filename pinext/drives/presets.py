"""Example drive parameters: DC motors behind harmonic-drive-like elastic transmissions."""

from __future__ import annotations

from collections.abc import Sequence

from .drive import Drive
from .motor import DCMotor
from .transmission import ElasticTransmission

#: A 48 V DC motor of the size that drives a 5-10 kg arm joint through a 1:80-1:100 gear.
HARMONIC_DRIVE_MOTOR = DCMotor(
    resistance=0.6,
    torque_constant=0.06,
    back_emf_constant=0.06,
    rotor_inertia=3e-5,
    viscous_friction=2e-6,
    voltage_limit=48.0,
)

#: (ratio, stiffness [N.m/rad], damping [N.m.s/rad]) of the transmissions of a 6-DOF arm:
#: three large shoulder/elbow drives and three wrist drives.
HARMONIC_DRIVE_TRANSMISSIONS = (
    (100.0, 2.0e4, 10.0),
    (100.0, 2.0e4, 10.0),
    (100.0, 1.5e4, 8.0),
    (80.0, 4.0e3, 2.0),
    (80.0, 4.0e3, 2.0),
    (80.0, 4.0e3, 2.0),
)


def harmonic_drives(joints: Sequence[str]) -> dict[str, Drive]:
    """:data:`HARMONIC_DRIVE_MOTOR` behind :data:`HARMONIC_DRIVE_TRANSMISSIONS` on six joints.

    Args:
        joints: The six joint names, base to wrist.

    Returns:
        Joint name -> :class:`Drive`, in the order given.
    """
    return {
        joint: Drive(HARMONIC_DRIVE_MOTOR, ElasticTransmission(*params))
        for joint, params in zip(joints, HARMONIC_DRIVE_TRANSMISSIONS, strict=True)
    }
