"""Motor catalogues: TOML files of ``[[motor]]`` tables, each a :class:`~pinext.DCMotor`
with its ratings (the limits a design is checked against) and its mass; and the drive of a
joint with a catalogue motor.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..drives import DCMotor, Drive, drive_from_spec
from ..exceptions import FileFormatError, InvalidParameter
from .design_check import DriveLimits

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["CatalogueMotor", "catalogue_drive", "load_catalogue"]


MOTOR_KEYS = (
    "resistance",
    "torque_constant",
    "back_emf_constant",
    "rotor_inertia",
    "inductance",
    "viscous_friction",
    "thermal_resistance",
    "thermal_time_constant",
    "ambient_temperature",
)
RATING_KEYS = ("rated_torque", "peak_torque", "max_speed", "max_winding_temperature")


class CatalogueMotor(NamedTuple):
    """A motor of a catalogue with its ratings."""

    name: str
    """Catalogue name."""
    motor: DCMotor
    """The motor (``voltage_limit`` = nominal voltage)."""
    limits: DriveLimits
    """Its ratings as limits (max_voltage = nominal voltage)."""
    mass: float
    """Mass [kg] (0 if not given)."""


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as stream:
            return tomllib.load(stream)
    except FileNotFoundError:
        raise FileFormatError(str(path), "file", "not found") from None
    except tomllib.TOMLDecodeError as err:
        raise FileFormatError(str(path), "TOML", str(err)) from None


def load_catalogue(path: str | Path) -> dict[str, CatalogueMotor]:
    """Read a TOML motor catalogue: ``[[motor]]`` tables with ``name``, ``voltage`` [V], the
    :class:`~pinext.DCMotor` parameters, and the ratings ``rated_torque`` [N.m],
    ``peak_torque`` [N.m], ``max_speed`` [rad/s], ``max_winding_temperature`` [°C], optional
    ``mass`` [kg].

    Returns:
        Name -> :class:`CatalogueMotor`, in file order.

    Raises:
        FileFormatError: Unreadable file, or an entry with unknown or missing keys.
    """
    path = Path(path)
    entries = _read_toml(path).get("motor", [])
    valid = ("name", "voltage", "mass", *MOTOR_KEYS, *RATING_KEYS)
    out: dict[str, CatalogueMotor] = {}
    for k, entry in enumerate(entries):
        where = f"motor[{k}]"
        unknown = [key for key in entry if key not in valid]
        if unknown:
            raise FileFormatError(
                str(path), where, f"unknown keys {unknown}; valid keys: {', '.join(valid)}"
            )
        try:
            motor = DCMotor(
                **{key: entry[key] for key in MOTOR_KEYS if key in entry},
                voltage_limit=entry["voltage"],
            )
            limits = DriveLimits(
                **{key: entry.get(key) for key in RATING_KEYS}, max_voltage=entry["voltage"]
            )
            out[entry["name"]] = CatalogueMotor(
                entry["name"], motor, limits, float(entry.get("mass", 0.0))
            )
        except (KeyError, TypeError, InvalidParameter) as err:
            raise FileFormatError(str(path), where, f"bad or missing value: {err}") from None
    return out


def catalogue_drive(
    joint: str, entry: CatalogueMotor, parts: Mapping[str, Any], transmission: Any = None
) -> Drive:
    """The drive of ``joint`` with the catalogue motor ``entry`` and the transmission table
    ``parts`` (``gear = {...}`` or ``elastic_transmission = {...}``, as in ``[drives.JOINT]``).
    """
    motor = {
        **{key: getattr(entry.motor, key) for key in MOTOR_KEYS},
        "voltage_limit": entry.motor.voltage_limit,
    }
    return drive_from_spec(joint, {**parts, "motor": motor}, transmission)
