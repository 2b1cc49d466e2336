"""Drives: DC motors, gears with efficiency, elastic transmissions and general linear actuators
(Vukobratović & Potkonjak, §20.3, (20.62)–(20.82); §20.5.4, (20.98)–(20.99)), gears with
backlash (:mod:`pinext.drives.backlash`) and the amplifier's voltage and current limits.

A :class:`Drive` is an actuator (:class:`DCMotor`, :class:`LinearActuator` or None for an ideal
torque source) followed by a transmission (:class:`Gear`, :class:`ElasticTransmission` or None).
:class:`pinext.System` turns a dict ``{joint: Drive}`` into a :class:`DriveComponent` through
:func:`drive_component`; :func:`pinext.load_urdf` builds drives from the URDF's
``<transmission>`` reductions and the ``<pinext><drive>`` / sidecar tables with
:func:`drive_from_spec`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..exceptions import InvalidParameter
from .actuator import LinearActuator
from .backlash import Flank, Play, engagement_impulse
from .base import Actuator, ActuatorPower, TorqueSource
from .drive import Drive, DriveComponent, DriveQuantities, drive_component
from .feedforward import Feedforward, elastic_drive_feedforward
from .modes import GearMode, GearModes
from .motor import DCMotor
from .presets import HARMONIC_DRIVE_MOTOR, harmonic_drives
from .registry import ACTUATORS, register_actuator
from .transmission import ElasticTransmission, Gear, Transmission

__all__ = [
    "ACTUATORS",
    "Actuator",
    "ActuatorPower",
    "DCMotor",
    "Drive",
    "DriveComponent",
    "DriveQuantities",
    "ElasticTransmission",
    "Feedforward",
    "Flank",
    "Gear",
    "GearMode",
    "GearModes",
    "HARMONIC_DRIVE_MOTOR",
    "LinearActuator",
    "Play",
    "TorqueSource",
    "Transmission",
    "drive_component",
    "drive_from_spec",
    "elastic_drive_feedforward",
    "engagement_impulse",
    "harmonic_drives",
    "register_actuator",
    "spec_keys",
]

#: Parameters of the transmission parts of a drive specification (the actuator parts take
#: their classes' parameters, :data:`ACTUATORS`).
TRANSMISSIONS: dict[str, tuple[type, tuple[str, ...]]] = {
    "gear": (
        Gear,
        (
            "ratio",
            "efficiency",
            "backdrive_efficiency",
            "input_inertia",
            "output_inertia",
            "backlash",
            "restitution",
        ),
    ),
    "elastic_transmission": (
        ElasticTransmission,
        ("ratio", "stiffness", "damping", "input_inertia", "output_inertia", "backlash"),
    ),
}


def spec_keys() -> dict[str, tuple[str, ...]]:
    """Part -> accepted parameters, for every registered actuator and transmission."""
    keys = {part: cls.parameters() for part, cls in ACTUATORS.items()}
    keys.update({part: params for part, (_, params) in TRANSMISSIONS.items()})
    return keys


#: Units of the scalar parameters, for messages.
SPEC_UNITS = {
    "resistance": "[Ohm]",
    "torque_constant": "[N.m/A]",
    "back_emf_constant": "[V.s/rad]",
    "rotor_inertia": "[kg.m^2]",
    "inductance": "[H]",
    "viscous_friction": "[N.m.s/rad]",
    "voltage_limit": "[V]",
    "current_limit": "[A]",
    "backlash": "[rad]",
    "restitution": "[-]",
    "ratio": "[-]",
    "efficiency": "[-]",
    "backdrive_efficiency": "[-]",
    "input_inertia": "[kg.m^2]",
    "output_inertia": "[kg.m^2]",
    "stiffness": "[N.m/rad]",
    "damping": "[N.m.s/rad]",
}


def _kwargs(joint: str, part: str, params: Mapping[str, Any]) -> dict[str, Any]:
    valid = spec_keys()[part]
    for key, value in params.items():
        if key not in valid:
            raise InvalidParameter(
                f"drive of joint '{joint}': unknown {part} parameter '{key}'; "
                f"valid parameters: {', '.join(valid)}"
            )
        if isinstance(value, (str, bool)):  # the file's numbers are already numbers
            unit = SPEC_UNITS.get(key, "")
            raise InvalidParameter(
                f"drive of joint '{joint}': {part} parameter '{key}' must be a number "
                f"{unit} without units in the text, got {value!r}".replace("  ", " ")
            )
    return dict(params)


def drive_from_spec(
    joint: str, parts: Mapping[str, Mapping[str, Any]], transmission: Any = None
) -> Drive:
    """Build a :class:`Drive` from the tables of a ``<pinext><drive>`` element or sidecar.

    Args:
        joint: The joint's name (for messages).
        parts: Part -> parameters; parts among ``motor``, ``gear``, ``elastic_transmission``,
            ``actuator``, ``torque_source`` or any registered actuator (:data:`ACTUATORS`;
            :func:`spec_keys` gives each part's parameters).
        transmission: The URDF ``<transmission>`` of the joint (a
            :class:`pinext.urdf_extensions.TransmissionSpec`), or None. Its reduction is the
            default ``ratio`` of the gear or elastic transmission, and without either part it
            becomes a lossless :class:`Gear`.

    Returns:
        The drive.

    Raises:
        InvalidParameter: An unknown part or parameter (the message lists the valid ones), a
            missing parameter, both ``motor`` and ``actuator``, or both ``gear`` and
            ``elastic_transmission``.
    """
    valid = spec_keys()
    for part in parts:
        if part not in valid:
            raise InvalidParameter(
                f"drive of joint '{joint}': unknown part '{part}'; valid parts: {', '.join(valid)}"
            )
    sources = [part for part in parts if part in ACTUATORS]
    if len(sources) > 1:
        raise InvalidParameter(
            f"drive of joint '{joint}': give one actuator, got {', '.join(sources)}"
        )
    if "gear" in parts and "elastic_transmission" in parts:
        raise InvalidParameter(
            f"drive of joint '{joint}': give either 'gear' or 'elastic_transmission'"
        )
    reduction = getattr(transmission, "reduction", None)
    try:
        actuator = None
        if sources:
            part = sources[0]
            actuator = ACTUATORS[part].from_spec(_kwargs(joint, part, parts[part]))
        trans = None
        for part, (cls, _) in TRANSMISSIONS.items():
            if part in parts:
                spec = _kwargs(joint, part, parts[part])
                if "ratio" not in spec:
                    if reduction is None:
                        raise InvalidParameter(
                            f"drive of joint '{joint}': {part} needs a 'ratio' (no URDF "
                            "<transmission> gives one)"
                        )
                    spec["ratio"] = reduction
                trans = cls(**spec)
        if trans is None and reduction is not None:
            trans = Gear(reduction)
    except TypeError as err:  # a missing required parameter
        raise InvalidParameter(f"drive of joint '{joint}': {err}") from None
    except InvalidParameter as err:
        if str(err).startswith("drive of joint"):
            raise
        raise InvalidParameter(f"drive of joint '{joint}': {err}") from None
    return Drive(actuator, trans)
