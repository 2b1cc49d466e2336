"""Drives: DC motors, gears with efficiency, elastic transmissions and general linear actuators
(Vukobratović & Potkonjak, §20.3, (20.62)–(20.82); §20.5.4, (20.98)–(20.99)).

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
from .drive import Drive, DriveComponent, drive_component
from .motor import DCMotor
from .presets import HARMONIC_DRIVE_MOTOR, harmonic_drives
from .transmission import ElasticTransmission, Gear, Transmission

__all__ = [
    "DCMotor",
    "Drive",
    "DriveComponent",
    "ElasticTransmission",
    "Gear",
    "HARMONIC_DRIVE_MOTOR",
    "LinearActuator",
    "Transmission",
    "drive_component",
    "drive_from_spec",
    "harmonic_drives",
]

#: Parameters accepted in each part of a drive specification.
SPEC_KEYS: dict[str, tuple[str, ...]] = {
    "motor": (
        "resistance",
        "torque_constant",
        "back_emf_constant",
        "rotor_inertia",
        "inductance",
        "viscous_friction",
        "voltage_limit",
        "thermal_resistance",
        "thermal_time_constant",
        "ambient_temperature",
    ),
    "gear": ("ratio", "efficiency", "backdrive_efficiency", "input_inertia", "output_inertia"),
    "elastic_transmission": ("ratio", "stiffness", "damping", "input_inertia", "output_inertia"),
    "actuator": ("C", "f", "d", "T", "input_limit"),
}


#: Units of the scalar parameters, for messages.
SPEC_UNITS = {
    "resistance": "[Ohm]",
    "torque_constant": "[N.m/A]",
    "back_emf_constant": "[V.s/rad]",
    "rotor_inertia": "[kg.m^2]",
    "inductance": "[H]",
    "viscous_friction": "[N.m.s/rad]",
    "voltage_limit": "[V]",
    "ratio": "[-]",
    "efficiency": "[-]",
    "backdrive_efficiency": "[-]",
    "input_inertia": "[kg.m^2]",
    "output_inertia": "[kg.m^2]",
    "stiffness": "[N.m/rad]",
    "damping": "[N.m.s/rad]",
}


def _kwargs(joint: str, part: str, params: Mapping[str, Any]) -> dict[str, Any]:
    valid = SPEC_KEYS[part]
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
            ``actuator`` (see :data:`SPEC_KEYS` for each part's parameters).
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
    for part in parts:
        if part not in SPEC_KEYS:
            raise InvalidParameter(
                f"drive of joint '{joint}': unknown part '{part}'; valid parts: "
                f"{', '.join(SPEC_KEYS)}"
            )
    if "motor" in parts and "actuator" in parts:
        raise InvalidParameter(f"drive of joint '{joint}': give either 'motor' or 'actuator'")
    if "gear" in parts and "elastic_transmission" in parts:
        raise InvalidParameter(
            f"drive of joint '{joint}': give either 'gear' or 'elastic_transmission'"
        )
    reduction = getattr(transmission, "reduction", None)
    try:
        actuator = None
        if "motor" in parts:
            actuator = DCMotor(**_kwargs(joint, "motor", parts["motor"]))
        elif "actuator" in parts:
            spec = _kwargs(joint, "actuator", parts["actuator"])
            limit = spec.pop("input_limit", None)
            actuator = LinearActuator(**spec, input_limit=limit)
        trans = None
        for part, cls in (("gear", Gear), ("elastic_transmission", ElasticTransmission)):
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
