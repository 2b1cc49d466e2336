"""Component catalogues: TOML files of ``[[motor]]`` tables, each a :class:`~pinext.DCMotor`
with its ratings (the limits a design is checked against), its mass and its price; of
``[[harmonic_drive]]`` tables, each an :class:`~pinext.ElasticTransmission` (a harmonic drive's
ratio, torsional stiffness and damping) with its rated torques, mass and price; and the drive
of a joint with a catalogue motor.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..drives import DCMotor, Drive, ElasticTransmission, drive_from_spec
from ..exceptions import FileFormatError, InvalidParameter
from ..validation import real
from .design_check import DriveLimits

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "CatalogueMotor",
    "HarmonicDrive",
    "catalogue_drive",
    "load_catalogue",
    "load_harmonic_drives",
    "missing_prices",
]


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
    price: float | None = None
    """Price (any currency, the same for the whole catalogue); None if not given."""


class HarmonicDrive(NamedTuple):
    """A harmonic-drive size of a catalogue: an elastic transmission with its ratings."""

    name: str
    """Catalogue name."""
    transmission: ElasticTransmission
    """Ratio, torsional stiffness [N.m/rad] and damping [N.m.s/rad] on the joint side (and the
    wave generator's inertia on the motor side, ``input_inertia`` [kg.m^2])."""
    rated_torque: float
    """Rated (continuous) output torque [N.m], compared with the RMS joint torque."""
    peak_torque: float | None
    """Peak output torque [N.m], compared with the peak joint torque; None: not checked."""
    mass: float
    """Mass [kg] (0 if not given)."""
    price: float | None = None
    """Price (the motor catalogue's currency); None if not given."""


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as stream:
            return tomllib.load(stream)
    except FileNotFoundError:
        raise FileFormatError(str(path), "file", "not found") from None
    except tomllib.TOMLDecodeError as err:
        raise FileFormatError(str(path), "TOML", str(err)) from None


def _known_keys(path: Path, where: str, entry: Mapping[str, Any], valid: tuple[str, ...]) -> None:
    """Refuse an entry of a catalogue with keys outside ``valid``, naming them and the valid."""
    unknown = [key for key in entry if key not in valid]
    if unknown:
        raise FileFormatError(
            str(path), where, f"unknown keys {unknown}; valid keys: {', '.join(valid)}"
        )


def load_catalogue(path: str | Path) -> dict[str, CatalogueMotor]:
    """Read a TOML motor catalogue: ``[[motor]]`` tables with ``name``, ``voltage`` [V], the
    :class:`~pinext.DCMotor` parameters, and the ratings ``rated_torque`` [N.m],
    ``peak_torque`` [N.m], ``max_speed`` [rad/s], ``max_winding_temperature`` [°C], optional
    ``mass`` [kg] and ``price`` (the ``"cost"`` criterion of an optimal design needs it).

    Returns:
        Name -> :class:`CatalogueMotor`, in file order.

    Raises:
        FileFormatError: Unreadable file, or an entry with unknown or missing keys.
    """
    path = Path(path)
    entries = _read_toml(path).get("motor", [])
    valid = ("name", "voltage", "mass", "price", *MOTOR_KEYS, *RATING_KEYS)
    out: dict[str, CatalogueMotor] = {}
    for k, entry in enumerate(entries):
        where = f"motor[{k}]"
        _known_keys(path, where, entry, valid)
        try:
            motor = DCMotor(
                **{key: entry[key] for key in MOTOR_KEYS if key in entry},
                voltage_limit=entry["voltage"],
            )
            limits = DriveLimits(
                **{key: entry.get(key) for key in RATING_KEYS}, max_voltage=entry["voltage"]
            )
            mass, price = _mass_and_price(entry)
            out[entry["name"]] = CatalogueMotor(entry["name"], motor, limits, mass, price)
        except (KeyError, TypeError, InvalidParameter) as err:
            raise FileFormatError(str(path), where, f"bad or missing value: {err}") from None
    return out


def _mass_and_price(entry: Mapping[str, Any]) -> tuple[float, float | None]:
    mass = real("mass", entry.get("mass", 0.0), unit="[kg]", low=0.0)
    return mass, real("price", entry.get("price"), low=0.0, none=True)


#: Keys of a ``[[harmonic_drive]]`` table.
HARMONIC_KEYS = (
    "name",
    "ratio",
    "stiffness",
    "damping",
    "input_inertia",
    "rated_torque",
    "peak_torque",
    "mass",
    "price",
)


def load_harmonic_drives(path: str | Path) -> dict[str, HarmonicDrive]:
    """Read a TOML catalogue of harmonic-drive sizes: ``[[harmonic_drive]]`` tables with
    ``name``, ``ratio``, ``stiffness`` [N.m/rad] and ``damping`` [N.m.s/rad] (joint side, as
    :class:`~pinext.ElasticTransmission`), ``rated_torque`` [N.m] (output, continuous), and
    optional ``peak_torque`` [N.m], ``input_inertia`` [kg.m^2] (wave generator), ``mass``
    [kg] and ``price``.

    Returns:
        Name -> :class:`HarmonicDrive`, in file order.

    Raises:
        FileFormatError: Unreadable file, no ``[[harmonic_drive]]`` table, or an entry with
            unknown, missing or invalid keys (not finite, not positive), named by its index.
    """
    path = Path(path)
    entries = _read_toml(path).get("harmonic_drive", [])
    if not entries:
        raise FileFormatError(str(path), "harmonic_drive", "no [[harmonic_drive]] table")
    out: dict[str, HarmonicDrive] = {}
    for k, entry in enumerate(entries):
        where = f"harmonic_drive[{k}]"
        _known_keys(path, where, entry, HARMONIC_KEYS)
        try:
            name = entry["name"]
            if not isinstance(name, str) or not name or name in out:
                raise InvalidParameter(f"name must be a new non-empty text, got {name!r}")
            transmission = ElasticTransmission(
                real("ratio", entry["ratio"], low=0.0, strict=True),
                real("stiffness", entry["stiffness"], unit="[N.m/rad]", low=0.0, strict=True),
                real("damping", entry["damping"], unit="[N.m.s/rad]", low=0.0),
                input_inertia=real("input_inertia", entry.get("input_inertia", 0.0), low=0.0),
            )
            rated = real("rated_torque", entry["rated_torque"], unit="[N.m]", low=0.0, strict=True)
            peak = real("peak_torque", entry.get("peak_torque"), low=0.0, strict=True, none=True)
            mass, price = _mass_and_price(entry)
            out[name] = HarmonicDrive(name, transmission, rated, peak, mass, price)
        except KeyError as err:
            raise FileFormatError(str(path), where, f"missing key {err}") from None
        except (TypeError, InvalidParameter) as err:
            raise FileFormatError(str(path), where, f"bad value: {err}") from None
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


def missing_prices(
    variables: Any,
    drives: Mapping[str, Drive],
    catalogue: Mapping[str, CatalogueMotor],
    harmonic_drives: Mapping[str, HarmonicDrive],
) -> tuple[str, str] | None:
    """The entries without a price that an optimal design may choose (the ``motor`` and
    ``harmonic_drive`` choices among ``variables``, and the catalogue motors of the fixed
    ``drives``): None, or (``"catalogue"`` or ``"harmonic_drives"``, their names)."""
    motors: set[str] = set()
    gears: set[str] = set()
    for v in variables:
        options = getattr(v, "options", None)
        if options is not None and v.name.endswith(".motor"):
            motors.update(options)
        elif options is not None and v.name.endswith(".harmonic_drive"):
            gears.update(options)
    for drive in drives.values():
        motors.update(n for n, e in catalogue.items() if e.motor == drive.actuator)
    for where, names, entries in (
        ("catalogue", motors, catalogue),
        ("harmonic_drives", gears, harmonic_drives),
    ):
        missing = sorted(n for n in names if entries[n].price is None)
        if missing:
            return where, ", ".join(missing)
    return None
