"""Flexible-link sections and a payload as design variables of an optimal design
(Vukobratović & Potkonjak, §20.4.1: the link parameters chosen with the drives).

A flexible link (a :class:`~pinext.FlexibleLink` of the robot, Celentano (2008) §5) gets a
round tube (outer diameter :math:`D`, wall :math:`t`) or a rectangular section (``width``
:math:`b`, normal to the first bending axis, ``height`` :math:`h`, along it) of a material of
density :math:`\\rho` and Young's modulus :math:`E`; Euler–Bernoulli beam theory needs of the
section its area and second moments of area:

.. math::

    \\text{tube:}\\quad A = \\frac{\\pi}{4}(D^2 - d^2),\\quad
    I_1 = I_2 = \\frac{\\pi}{64}(D^4 - d^4),\\quad W = \\frac{2I}{D},\\quad J = 2I,
    \\qquad d = D - 2t;

    \\text{rectangle:}\\quad A = bh,\\quad I_1 = \\frac{h b^3}{12},\\quad
    I_2 = \\frac{b h^3}{12},\\quad W_1 = \\frac{h b^2}{6},\\quad W_2 = \\frac{b h^2}{6},

with the torsion constant of a rectangle (long side :math:`a`, short side :math:`c`) after
Roark: :math:`J \\approx a c^3 (1/3 - 0.21\\,(c/a)(1 - c^4/(12 a^4)))`. A candidate section
rebuilds the link's sublinks with :math:`\\mu = \\rho A` and :math:`EI_b` (both bending axes:
the joint's swing axis, then beam × axis; one when the link's ``bending_axes`` names one), and
its section moduli give the root stress :math:`\\sum_b |M_b|/W_b` of the screening. A wall
thicker than the radius is a violated constraint (margin :math:`1 - 2t/D`), computed on the
solid rod.

A payload is a point mass at a frame of the robot (the tool, a flexible link's tip), added to
the inertia of the body that carries the frame.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter, NameNotFound
from ..validation import integer, real
from .optimize_problem import Choice, Continuous, Variable

__all__ = [
    "LINK_KEYS",
    "PAYLOAD_KEYS",
    "SECTION_KEYS",
    "LinkSection",
    "Payload",
    "parse_link",
    "parse_payload",
    "section_properties",
]

#: Section kinds and their dimensions [m].
SECTION_KEYS = {"tube": ("outer_diameter", "wall_thickness"), "rectangle": ("width", "height")}
#: Keys of a ``[variables.LINK]`` table of a flexible link.
LINK_KEYS = (
    "section",
    "density",
    "young_modulus",
    "sublinks",
    "outer_diameter",
    "wall_thickness",
    "width",
    "height",
)
#: Keys of the ``[variables.payload]`` table.
PAYLOAD_KEYS = ("mass", "frame")


def section_properties(kind: str, dims: Mapping[str, float]) -> dict[str, Any]:
    """Area [m^2], second moments (I_1, I_2) [m^4], section moduli (W_1, W_2) [m^3] and torsion
    constant J [m^4] of a section (module docstring); a tube's wall is taken at most its
    radius (a solid rod)."""
    if kind == "tube":
        outer = dims["outer_diameter"]
        inner = max(outer - 2.0 * dims["wall_thickness"], 0.0)
        area = math.pi / 4.0 * (outer**2 - inner**2)
        second = math.pi / 64.0 * (outer**4 - inner**4)
        modulus = 2.0 * second / outer
        return {
            "area": area,
            "second_moments": (second, second),
            "section_moduli": (modulus, modulus),
            "torsion": 2.0 * second,
        }
    width, height = dims["width"], dims["height"]
    long, short = max(width, height), min(width, height)
    torsion = long * short**3 * (1 / 3 - 0.21 * short / long * (1 - short**4 / (12 * long**4)))
    return {
        "area": width * height,
        "second_moments": (height * width**3 / 12.0, width * height**3 / 12.0),
        "section_moduli": (height * width**2 / 6.0, width * height**2 / 6.0),
        "torsion": torsion,
    }


def _range_or_value(
    where: str, name: str, value: Any, *, low: float, strict: bool, unit: str
) -> Any:
    """A ``{low, high}`` table (a Continuous), a list (a Choice) or a number (fixed)."""
    if isinstance(value, Mapping):
        extra = [k for k in value if k not in ("low", "high")]
        if extra or "low" not in value or "high" not in value:
            raise InvalidParameter(f"{where} as a range needs exactly low and high, got {value}")
        variable = Continuous(name, value["low"], value["high"])
        real(f"{where}: low", variable.low, low=low, strict=strict)
        return variable
    if isinstance(value, (list, tuple)):
        choice = Choice(name, tuple(value))
        for x in choice.options:
            real(f"{where}: every value", x, low=low, strict=strict)
        return choice
    return real(where, value, unit=unit, low=low, strict=strict)


def _bounds(value: Any) -> tuple[float, float]:
    if isinstance(value, Continuous):
        return value.low, value.high
    if isinstance(value, Choice):
        return min(value.options), max(value.options)
    return value, value


@dataclass(frozen=True)
class LinkSection:
    """The section of one flexible link as design variables.

    Attributes:
        link: The flexible link's name.
        kind: ``"tube"`` or ``"rectangle"``.
        spec: The robot's :class:`~pinext.FlexibleLink` (sublinks, axes, damping kept).
        density: ρ [kg/m^3].
        young_modulus: E [Pa].
        length: The beam length L [m], as the sublink model builds it.
        fixed: The dimensions that are not varied [m].
    """

    link: str
    kind: str
    spec: Any
    density: float
    young_modulus: float
    length: float
    fixed: dict[str, float]

    def dims(self, design: Mapping[str, Any]) -> dict[str, float]:
        """The section's dimensions [m] in ``design``."""
        return {
            key: float(design.get(f"{self.link}.{key}", self.fixed.get(key, math.nan)))
            for key in SECTION_KEYS[self.kind]
        }

    def properties(self, design: Mapping[str, Any]) -> dict[str, Any]:
        """:func:`section_properties` of the section in ``design``."""
        return section_properties(self.kind, self.dims(design))

    @property
    def axes(self) -> int:
        """Bending axes of the rebuilt link: two, or one when the link's ``bending_axes``
        names one."""
        return 1 if self.spec.bending_axes is not None and len(self.spec.bending_axes) == 1 else 2

    def flexible(self, design: Mapping[str, Any]) -> Any:
        """The :class:`~pinext.FlexibleLink` of the section in ``design``."""
        props = self.properties(design)
        count = self.axes
        second = props["second_moments"][:count]
        changes: dict[str, Any] = {
            "young_modulus": self.young_modulus,
            "second_moment_of_area": second if count == 2 else second[0],
            "mass_per_length": self.density * props["area"],
        }
        if self.spec.polar_moment is not None:
            changes["polar_moment"] = props["torsion"]
        return dataclasses.replace(self.spec, **changes)

    def section_modulus(self, design: Mapping[str, Any]) -> tuple[float, ...]:
        """The section moduli W_b [m^3] of the link's bending axes in ``design``."""
        moduli = self.properties(design)["section_moduli"]
        return tuple(moduli[: self.axes])

    def mass(self, design: Mapping[str, Any]) -> float:
        """ρ A L [kg]."""
        return self.density * self.properties(design)["area"] * self.length

    def margins(self, design: Mapping[str, Any]) -> dict[str, float]:
        """The section's own constraint: a tube's wall at most its radius."""
        if self.kind != "tube":
            return {}
        dims = self.dims(design)
        return {
            f"{self.link}: wall thickness [m]": 1.0
            - 2 * dims["wall_thickness"] / dims["outer_diameter"]
        }


def _beam_length(robot: Any, spec: Any, extensions: Any) -> float:
    """The beam length as the sublink model builds it: the coefficient of μ in the model's
    total mass (two builds with μ = 1 and 2 kg/m)."""
    from ..robot import load_urdf

    others = [s for s in robot.flexible if s.link != spec.link]
    masses = []
    for mu in (1.0, 2.0):
        built = load_urdf(
            robot.path,
            flexible=[*others, dataclasses.replace(spec, mass_per_length=mu)],
            extensions=extensions,
        )
        masses.append(pin.computeTotalMass(built.model))
    return masses[1] - masses[0]


def parse_link(
    robot: Any, link: str, table: Mapping[str, Any], extensions: Any, *, where: str = ""
) -> tuple[LinkSection, list[Variable]]:
    """A ``[variables.LINK]`` table of a flexible link: ``section`` (``"tube"`` or
    ``"rectangle"``), its dimensions (a ``{low, high}`` range, a list or a number [m]),
    ``density`` [kg/m^3], optional ``young_modulus`` [Pa] (default: the link's) and
    ``sublinks``. ``where`` names the table in messages (default ``variables.LINK``; a
    ``pinext design`` specification's ``[links.LINK]`` holds a section of numbers).

    Raises:
        InvalidParameter: Unknown keys, a missing dimension or density, a bound that is not
            a finite positive number, a wall that is thicker than the radius for every design;
            the message names the key.
    """
    spec = next(s for s in robot.flexible if s.link == link)
    where = where or f"variables.{link}"
    if getattr(robot, "path", None) is None:
        raise InvalidParameter(
            f"{where}: a section variable rebuilds the robot from its URDF file; this robot "
            "was not loaded from one (load it with pinext.load_urdf)"
        )
    unknown = [k for k in table if k not in LINK_KEYS]
    if unknown:
        raise InvalidParameter(
            f"{where}: unknown keys {unknown}; valid keys of a flexible link: "
            + ", ".join(LINK_KEYS)
        )
    kind = table.get("section")
    if kind not in SECTION_KEYS:
        raise InvalidParameter(
            f"{where}.section must be one of {', '.join(SECTION_KEYS)}, got {kind!r}"
        )
    dims = SECTION_KEYS[kind]
    wrong = [
        k for k in table if k not in (*dims, "section", "density", "young_modulus", "sublinks")
    ]
    missing = [k for k in (*dims, "density") if k not in table]
    if wrong or missing:
        raise InvalidParameter(
            f"{where}: a {kind} section needs {', '.join(dims)} [m] and density [kg/m^3]"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; not a key of a {kind}: {', '.join(wrong)}" if wrong else "")
        )
    density = real(f"{where}.density", table["density"], unit="[kg/m^3]", low=0.0, strict=True)
    young = real(
        f"{where}.young_modulus",
        table.get("young_modulus", spec.young_modulus),
        unit="[Pa]",
        low=0.0,
        strict=True,
    )
    if "sublinks" in table:
        spec = dataclasses.replace(
            spec, sublinks=integer(f"{where}.sublinks", table["sublinks"], low=1)
        )
    variables: list[Variable] = []
    fixed: dict[str, float] = {}
    for key in dims:
        value = _range_or_value(
            f"{where}.{key}", f"{link}.{key}", table[key], low=0.0, strict=True, unit="[m]"
        )
        if isinstance(value, (Continuous, Choice)):
            variables.append(value)
        else:
            fixed[key] = value
    if kind == "tube":
        thinnest = _bounds(_variable_or(fixed, variables, link, "wall_thickness"))[0]
        widest = _bounds(_variable_or(fixed, variables, link, "outer_diameter"))[1]
        if thinnest > widest / 2:
            raise InvalidParameter(
                f"{where}.wall_thickness: no design has a wall thinner than the radius (smallest "
                f"wall {thinnest:g} m > half the largest outer_diameter {widest:g} m)"
            )
    length = _beam_length(robot, spec, extensions)
    return LinkSection(link, kind, spec, density, young, length, fixed), variables


def _variable_or(fixed: Mapping[str, float], variables: list[Variable], link: str, key: str):
    """The variable named ``LINK.key``, or the fixed value of ``key``."""
    return next((v for v in variables if v.name == f"{link}.{key}"), fixed.get(key))


@dataclass(frozen=True)
class Payload:
    """A point mass at a frame of the robot.

    Attributes:
        frame: The frame's name.
        mass: The mass [kg] when it is not varied (``"payload.mass"`` in the design).
    """

    frame: str
    mass: float | None

    def mass_of(self, design: Mapping[str, Any]) -> float:
        """The payload mass [kg] in ``design``."""
        return float(design.get("payload.mass", self.mass or 0.0))

    def add_to(self, robot: Any, design: Mapping[str, Any]) -> None:
        """Add the payload to the model and the rigid model of ``robot`` (in place)."""
        mass = self.mass_of(design)
        for model in (robot.model, robot.rigid_model):
            frame = model.frames[model.getFrameId(self.frame)]
            joint = frame.parentJoint
            point = pin.Inertia(mass, frame.placement.translation, np.zeros((3, 3)))
            model.inertias[joint] = model.inertias[joint] + point
        robot.data = robot.model.createData()


def parse_payload(robot: Any, table: Mapping[str, Any]) -> tuple[Payload, list[Variable]]:
    """The ``[variables.payload]`` table: ``frame`` (a frame of the robot) and ``mass`` [kg]
    (a number, a list or a ``{low, high}`` range, ≥ 0).

    Raises:
        InvalidParameter: Unknown keys, a missing or unknown frame, a mass that is not a
            finite number ≥ 0, inverted bounds; the message names the key.
        NameNotFound: The frame is not one of the robot's.
    """
    unknown = [k for k in table if k not in PAYLOAD_KEYS]
    if unknown or "mass" not in table or "frame" not in table:
        raise InvalidParameter(
            f"variables.payload needs exactly mass [kg] and frame (a frame of the robot); "
            f"got keys {list(table)}"
        )
    frame = table["frame"]
    names = [f.name for f in robot.model.frames]
    if (
        not isinstance(frame, str)
        or frame not in names
        or frame not in [f.name for f in robot.rigid_model.frames]
    ):
        raise NameNotFound("frame", str(frame), names)
    value = _range_or_value(
        "variables.payload.mass", "payload.mass", table["mass"], low=0.0, strict=False, unit="[kg]"
    )
    if isinstance(value, (Continuous, Choice)):
        return Payload(frame, None), [value]
    return Payload(frame, value), []
